"""The run of a rolling body whose contact is unilateral: ``Retraction`` on a
:class:`nhphys.systems.RollingBody` with ``lift_off=True``.

The modes (rolling, flight), their guards, the located mode changes and the impact law are
specified in :mod:`nhphys.twins.modes`; the kernel is ``modes_run`` of ``nhphys_ext.rolling``.
"""

import numpy as np

from nhphys import _backend
from nhphys._validation import as_float_array, as_rotation, as_vector3
from nhphys.forces import build_force_set, uses_callables
from nhphys.integrators.coefficients import SLIDING_COMPOSITIONS
from nhphys.integrators.run import Run
from nhphys.systems.rolling import event_message
from nhphys.twins import modes as spec
from nhphys.twins import rolling as rolling_spec
from nhphys.twins.newton import OK


def start_modes(integrator, system, dt, backend, R0=None, omega0=None,
                ground_point=(0.0, 0.0, 0.0), height=0.0,
                velocity0=None):
    """The :class:`ModesRun` of ``Retraction`` ``integrator`` on ``system`` (validated).

    The body is placed touching the ground near ``ground_point`` with orientation ``R0`` and
    body angular velocity ``omega0``; with ``height > 0`` it is then raised by ``height``
    along the ground's normal there and starts in flight, its centre moving at ``velocity0``
    (default at rest). At ``height = 0`` it starts on the ground: rolling (no slip), or, with
    a ``velocity0`` (only with a finite ``mu``) whose contact point slips, sliding; and from
    there in the mode the contact force allows (sliding where rolling needs more friction than
    ``mu`` gives, flight where the ground would have to pull).
    """
    height = float(as_float_array(height, "height"))
    if not np.isfinite(height) or height < 0:
        raise ValueError(f"Expected `height` >= 0 (the body starts on or above the ground), "
                         f"got {height}.")
    if velocity0 is not None and height == 0 and not np.isfinite(system.mu):
        raise ValueError("Expected `velocity0` only with `height` > 0 or a finite `mu`: a body "
                         "that starts on the ground without sliding rolls, so its centre's "
                         "velocity follows from `omega0`.")
    R0 = np.eye(3) if R0 is None else R0
    omega0 = np.zeros(3) if omega0 is None else omega0
    flat = start_flat(system, R0, omega0, ground_point, height, velocity0)
    if flat is not None:
        return ModesRun(system, flat, dt, integrator, backend,
                        spec.FLIGHT if height > 0 else spec.FACE)
    side = start_side(system, R0, omega0, ground_point, height, velocity0)
    if side is not None:
        state, mode = side
        return ModesRun(system, state, dt, integrator, backend, mode)
    state = system.place(R0, omega0, ground_point)  # (a pulling ground is not refused here)
    state["slip"] = np.zeros(3)
    n = state["contact"].n
    velocity = None if velocity0 is None else as_vector3(velocity0, "velocity0")
    if velocity is not None:
        state["p"] = system.mass * velocity
    if height > 0:
        state["a"] = state["a"] + height * n
        if velocity is None:
            state["p"] = np.zeros(3)
        return ModesRun(system, state, dt, integrator, backend, spec.FLIGHT)
    shape, ground = system._twins()
    model = spec.Model(shape, ground, None, None, system.mass, system.inertia,
                       system.inertia_inv, system.gravity, system.up, system.support_shape,
                       system.restitution, system.mu, 0, 1e-14, 50, 0)
    probe = {"A": state["A"], "Pi": state["Pi"], "p": state["p"], "s": state["s"], "n": n,
             "chart": state["chart"], "z": state["z"], "t": 0.0, "slip": np.zeros(3)}
    u = spec.contact_velocity(model, probe)
    u_t = spec.tangential(u, n)
    scale = np.linalg.norm(state["p"]) / system.mass + np.linalg.norm(omega0) * np.linalg.norm(
        state["s"])
    if abs(u @ n) > 1e-12 * max(scale, 1.0):
        raise ValueError(f"Expected `velocity0` to keep the contact point on the ground, but "
                         f"its velocity along the ground's normal is {u @ n:.4g} m/s (give a "
                         "height to start in flight).")
    if np.linalg.norm(u_t) > spec.SLIP_FLOOR * max(scale, 1e-300):
        state["slip"] = u_t / np.linalg.norm(u_t)
        return ModesRun(system, state, dt, integrator, backend, spec.SLIDING)
    mode = spec.settle(model, probe)
    state["slip"] = probe["slip"]
    return ModesRun(system, state, dt, integrator, backend, mode)


def start_flat(system, R0, omega0, ground_point, height, velocity0):
    """The placed state of a disk that starts lying flat on its face (``R0`` puts its axis
    within its flat angle of the ground's normal; it is turned exactly flat), or ``None`` for
    any other start. Its centre is put on the ground point nearest ``ground_point``; it may
    spin about its axis (``omega0``) and slide (``velocity0``, in the ground's plane) where the
    friction is finite. With ``height > 0`` it starts in flight instead, its lowest point that
    far above the ground, with ``R0``, ``omega0`` and ``velocity0`` as given (where the support
    map cannot place a disk this flat)."""
    face = face_of(system)
    R0 = as_rotation(R0, "R0")
    if face[0] <= 0.0:
        return None
    chart, z, x, n = ground_below(system, ground_point)
    if abs(R0[:, 2] @ n) < np.cos(face[1]):
        return None
    omega0 = as_vector3(omega0, "omega0")
    velocity = np.zeros(3) if velocity0 is None else as_vector3(velocity0, "velocity0")
    if height > 0:  # the lowest rim point `height` above the ground
        below = x + height * n
        tilt = R0[:, 2] @ n
        lowest = system.body.shape.radius * np.sqrt(max(0.0, 1.0 - tilt**2)) + face[2] * (
            1.0 if face[3] else abs(tilt))  # a wheel's tube, a cylinder's end
        return {"A": R0.copy(), "a": below + lowest * n, "Pi": system.inertia @ omega0,
                "p": system.mass * velocity, "s": np.zeros(3), "chart": chart, "z": z,
                "n": n, "slip": np.zeros(3)}
    spin = omega0[2]
    if np.any(omega0[:2]) or abs(velocity @ n) > 1e-12 * max(np.linalg.norm(velocity), 1.0):
        raise ValueError(
            "Expected a disk that starts lying flat to move in the ground's plane only: "
            f"`omega0` about its axis (body z) and `velocity0` along the ground, got omega0 = "
            f"{omega0.tolist()} and a velocity {velocity @ n:.4g} m/s along the normal.")
    if not np.isfinite(system.mu) and (spin != 0.0 or np.any(velocity)):
        raise ValueError("Expected a disk that starts lying flat with `mu=inf` to be at rest: "
                         "a rough face cannot slide or spin; give a finite `mu`.")
    A = spec.reorthonormalize(spec.flattening(R0, n) @ R0)
    velocity = velocity - (velocity @ n) * n
    Pi = system.inertia @ (spin * np.sign(R0[:, 2] @ n) * (A.T @ n))
    return {"A": A, "a": x + face[2] * n, "Pi": Pi, "p": system.mass * velocity,
            "s": np.array([0.0, 0.0, face[2] * np.sign(-(A.T @ n)[2])]), "chart": chart,
            "z": z, "n": n, "slip": np.zeros(3)}


def start_side(system, R0, omega0, ground_point, height, velocity0):
    """``(state, mode)`` of a cylinder that starts lying on its side (``R0`` puts its axis
    within its side angle of the ground's plane; it is turned exactly onto its side), or
    ``None`` for any other start. Its line's midpoint is put on the ground point nearest
    ``ground_point``. Its angular velocity ``omega0`` (body) may turn it about the normal and
    roll it about its axis, not tilt it; its centre moves at ``velocity0`` (in the ground's
    plane; by default at the rolling speed of its roll). With ``mu = inf`` it must roll. With
    ``height > 0`` it starts in flight instead, its lowest point that far above the ground."""
    side = side_of(system)
    R0 = as_rotation(R0, "R0")
    if side[0] <= 0.0:
        return None
    chart, z, x, n = ground_below(system, ground_point)
    if abs(R0[:, 2] @ n) > np.sin(side[2]):
        return None
    omega0 = R0 @ as_vector3(omega0, "omega0")
    velocity = None if velocity0 is None else as_vector3(velocity0, "velocity0")
    radius, half = side[0], side[1]
    if height > 0:  # the lowest point `height` above the ground
        lowest = radius * np.sqrt(max(0.0, 1.0 - (R0[:, 2] @ n) ** 2)) + half * abs(
            R0[:, 2] @ n)
        state = {"A": R0.copy(), "a": x + (height + lowest) * n, "Pi": system.inertia @ (
            R0.T @ omega0), "p": system.mass * (np.zeros(3) if velocity is None else velocity),
            "s": np.zeros(3), "chart": chart, "z": z, "n": n, "slip": np.zeros(3)}
        return state, spec.FLIGHT
    A = spec.reorthonormalize(spec.smallest_rotation(R0[:, 2], spec.tangential(R0[:, 2], n))
                              @ R0)
    u = A[:, 2]
    w = np.cross(n, u)
    scale = max(np.linalg.norm(omega0), 1e-300)
    if abs(omega0 @ w) > 1e-12 * scale or (
            velocity is not None and abs(velocity @ n) > 1e-12 * max(np.linalg.norm(velocity),
                                                                    1.0)):
        raise ValueError(
            "Expected a cylinder that starts on its side to move in the ground's plane only: "
            f"`omega0` about the normal and its axis (not tilting it: {omega0 @ w:.4g} rad/s) "
            f"and `velocity0` along the ground ({0.0 if velocity is None else velocity @ n:.4g}"
            " m/s along the normal).")
    psi, phi = float(omega0 @ n), float(omega0 @ u)
    v = -radius * phi * w if velocity is None else velocity - (velocity @ n) * n
    slip = np.array([v @ u, v @ w + radius * phi, psi])
    speed = np.linalg.norm(v) + radius * abs(phi) + half * abs(psi)
    slips = np.abs(slip[:2]).sum() + half * abs(slip[2]) > spec.SLIP_FLOOR * speed
    if slips and not np.isfinite(system.mu):
        raise ValueError("Expected a cylinder that starts on its side with `mu=inf` to roll "
                         "(no turn about the normal, and `velocity0` the rolling speed, or "
                         "none): a rough line cannot slide; give a finite `mu`.")
    state = {"A": A, "a": x + radius * n, "Pi": system.inertia @ (A.T @ (psi * n + phi * u)),
             "p": system.mass * v, "s": -radius * (A.T @ n), "chart": chart, "z": z, "n": n,
             "slip": np.zeros(3)}
    mode = spec.SIDE_SLIDING if slips else spec.SIDE
    return state, mode


def side_of(system):
    """``(radius, half_length, side_angle)`` (3,) of a cylinder that goes on lying on its side
    when it falls onto it (:mod:`nhphys.twins.modes`, "Lying on its side"): centred, its inertia
    ``diag(I_d, I_d, I_a)`` in its axes, on a plane; zeros for any other body, whose fall onto
    its side ends the run with a contact event."""
    from nhphys.shapes import Cylinder
    from nhphys.surfaces import Plane

    body = system.body
    I = np.asarray(system.inertia, dtype=float)
    if (isinstance(body.shape, Cylinder) and isinstance(system.ground, Plane)
            and not np.any(body.com) and I[0, 0] == I[1, 1]
            and not np.any(I - np.diag(np.diag(I)))):
        return np.array([body.shape.radius, body.shape.half_length, body.shape.side_angle])
    return np.zeros(3)


def ground_below(system, ground_point):
    """``(chart, z, x (3,), n (3,))``: the ground's point nearest ``ground_point``, its chart
    coordinates and its normal."""
    loc = system.ground.project(as_vector3(ground_point, "ground_point"))
    chart, z = int(loc.chart), np.array(loc.uv, dtype=float)
    x, _, _, n, _ = rolling_spec.ground_geometry(system._twins()[1], chart, z)
    return chart, z, x, n


def face_of(system):
    """``(radius, flat_angle, offset, ring)`` (4,) of a body that goes on lying flat when it
    falls flat (:mod:`nhphys.twins.modes`, "Lying flat"): a thin disk, a cylinder on an end
    face, or a wheel on its tube (``ring`` 1: it touches the plane along a circle), whose
    centre of mass is its centre and whose axis is a principal axis of inertia, on a plane
    (``offset`` the height of the centre of mass over the plane: 0 for a disk, the half length
    for a cylinder, the tube's radius for a wheel); zeros for any other body, whose fall ends
    the run with a contact event."""
    from nhphys.shapes import Cylinder, Disk, Wheel
    from nhphys.surfaces import Plane

    body = system.body
    I = np.asarray(system.inertia, dtype=float)
    if (isinstance(body.shape, (Disk, Cylinder, Wheel)) and isinstance(system.ground, Plane)
            and not np.any(body.com) and I[0, 2] == 0.0 and I[1, 2] == 0.0):
        if isinstance(body.shape, Wheel):
            return np.array([body.shape.radius, body.shape.flat_angle,
                             body.shape.tube_radius, 1.0])
        offset = body.shape.half_length if isinstance(body.shape, Cylinder) else 0.0
        return np.array([body.shape.radius, body.shape.flat_angle, offset, 0.0])
    return np.zeros(4)


class ModesRun(Run):
    """Stepping state of a body with a unilateral contact (see :mod:`nhphys.twins.modes`).

    Parameters
    ----------
    system : RollingBody
        With ``lift_off=True``.
    state : dict
        The placed initial state (:meth:`RollingBody.place`), possibly raised into flight.
    dt : float
    integrator : Retraction
        Its map, order (``substeps``), Newton options and ``globalize``.
    backend : {"auto", "cython", "python"}
    mode : int
        The mode at the start (:data:`nhphys.twins.modes.MODE_NAMES`).

    Attributes
    ----------
    A (3, 3), a (3,), Pi (3,), p (3,), s (3,), n (3,), F (3,), chart, z, clock
        As for :class:`nhphys.integrators.rolling.RollingRun`.
    mode : ndarray, shape (1,), intp
        The body's mode.
    events : ndarray, shape (k, EVENT_SIZE)
        The mode changes so far (:data:`nhphys.twins.modes.EVENT_FIELDS`).
    """

    state_names = ("A", "a", "Pi", "p", "s", "n", "F", "slip", "chart", "z", "clock", "mode",
                   "events")
    holds_gil = True  # its kernel loop evaluates the normal force through the GIL

    def __init__(self, system, state, dt, integrator, backend, mode):
        from nhphys.lie.retraction import get_retraction

        self.system = system
        if uses_callables(system.forces):  # a Python callable steps on the twin only
            backend = "python"
            self.backend_note = "a force element is a Python callable"
        self.kernel, self.backend = _backend.choose("rolling", backend)
        # the kernel's loop is in nhphys_ext.rolling, beside the rolling step it calls; its twin
        # is nhphys.twins.modes
        self.modes_run = spec.modes_run if self.backend == "python" else self.kernel.modes_run
        self.forces = build_force_set(system.forces, _backend.choose("forces", self.backend)[0])
        self.motion = self.kernel.GroundMotion()
        self.ground = system.ground.with_backend(self.backend).kernel
        self.shape = system.contact_shape(self.kernel, self.backend)
        self.inertia = np.ascontiguousarray(system.inertia, dtype=float)
        self.inertia_inv = np.linalg.inv(self.inertia)
        self.face = face_of(system)
        self.side = side_of(system)
        self.up = np.ascontiguousarray(system.up, dtype=float)
        self.dt = dt
        self.map_code = get_retraction(integrator.map).code
        self.substeps = np.array(integrator.substeps, dtype=float)
        self.slide_substeps = np.array(SLIDING_COMPOSITIONS[integrator.order], dtype=float)
        self.options = rolling_spec.GLOBALIZE if integrator.globalize else 0
        self.newton_tol = integrator.newton_tol
        self.max_newton = integrator.max_newton
        self.A = np.array(state["A"], dtype=float, order="C")
        self.a = np.array(state["a"], dtype=float)
        self.Pi = np.array(state["Pi"], dtype=float)
        self.p = np.array(state["p"], dtype=float)
        self.s = np.array(state["s"], dtype=float)
        self.n = np.array(state["n"] if "n" in state else state["contact"].n, dtype=float)
        self.F = system.mass * system.gravity * self.up
        self.slip = np.array(state["slip"], dtype=float)
        self.chart = np.array([state["chart"]], dtype=np.intp)
        self.z = np.array(state["z"], dtype=float)
        self.clock = np.zeros(4)  # the time, the work, the gap (flight's guard), a graze's depth
        self.mode = np.array([mode], dtype=np.intp)
        self.events = np.empty((0, spec.EVENT_SIZE))
        shape, ground = system._twins()
        st, c = OK, None
        model = spec.Model(shape, ground, None, None, system.mass, system.inertia,
                           system.inertia_inv, system.gravity, system.up, system.support_shape,
                           system.restitution, system.mu, 0, 1e-14, 50, 0, face=self.face,
                           side=self.side)
        if mode == spec.FACE:
            c = spec.face_contact(model, {"A": self.A, "a": self.a, "n": self.n,
                                          "chart": int(self.chart[0]), "z": self.z})
        elif mode in (spec.SIDE, spec.SIDE_SLIDING):
            c = spec.side_contact(model, {"A": self.A, "a": self.a, "n": self.n,
                                          "chart": int(self.chart[0]), "z": self.z})
        else:
            st, c = rolling_spec.contact(shape, ground, self.A, self.a, int(self.chart[0]),
                                         self.z, 1e-14, 50)
            if st == model.flat_status and self.face[0] > 0.0:  # a disk or wheel flat in the air
                st, c = OK, spec.flat_flight_contact(model, self.A, self.a,
                                                     int(self.chart[0]), self.z)
            elif st == spec.RIM_TO_SIDE and self.side[0] > 0.0:  # a cylinder level in the air
                st, c = OK, spec.flat_flight_contact(model, self.A, self.a,
                                                     int(self.chart[0]), self.z)
        if st:
            raise ValueError("Could not find the body's closest point to the ground at the "
                             "start.")
        self.clock[2] = c.gap if mode == spec.FLIGHT else 0.0
        first = rolling_spec.frame({"A": self.A, "a": self.a, "Pi": self.Pi, "p": self.p}, c)
        self._first = np.concatenate([first, [mode]])

    # -- the Run hooks --------------------------------------------------------------------
    def _initial_frame(self):
        return self._observables(self._first[None])

    def _allocate(self, n_saved):
        return np.empty((n_saved, spec.MODES_FRAME_SIZE))

    def _loop(self, n_steps, save_every, out, info):
        system = self.system
        events = np.empty((spec.MAX_EVENTS_PER_STEP * n_steps, spec.EVENT_SIZE))
        n_events = np.zeros(1, dtype=np.intp)
        try:
            return self.modes_run(
                self.shape, self.ground, self.motion, self.forces, system.mass, self.inertia,
                self.inertia_inv, system.gravity, self.up, system.support_shape,
                system.restitution, system.mu, spec.IMPACT_LAWS[system.impact], self.face,
                self.dt,
                self.substeps, self.slide_substeps, n_steps, save_every,
                self.map_code, self.newton_tol, self.max_newton, self.options, self.A, self.a,
                self.Pi, self.p, self.s, self.n, self.F, self.slip, self.chart, self.z,
                self.clock, self.mode, out, events, n_events, info, side=self.side)
        finally:  # the events of the committed steps, however the loop ended
            self.events = np.concatenate([self.events, events[:int(n_events[0])]])

    def _frames(self, saved, count):
        return self._observables(saved[:count])

    def _observables(self, saved):
        fields = self.system.observables(rolling_spec.unpack_frames(saved[:, :-1]))
        mode = saved[:, -1].astype(np.int8)
        flying = mode == spec.FLIGHT
        # a face slides too, and a side's line
        sliding = (mode == spec.SLIDING) | (mode == spec.FACE) | (mode == spec.SIDE_SLIDING)
        # in flight the contact and no-slip conditions do not apply, sliding the no-slip one:
        # their residuals there are 0 (the slip is its own field)
        slip = fields["slip_residual"]
        fields["slip_speed"] = np.where(sliding, slip, 0.0)
        fields["slip_residual"] = np.where(flying | sliding, 0.0, slip)
        fields["contact_residual"] = np.where(flying, 0.0, fields["contact_residual"])
        fields["constraint_residual"] = np.maximum(fields["contact_residual"],
                                                   fields["slip_residual"])
        fields["gap"] = saved[:, rolling_spec.FRAME_FIELDS[8][1]].copy()
        fields["mode"] = mode
        return fields

    def _event(self, reason):
        return event_message(reason, self.system.body.shape)

    def _pending_error(self):
        take = getattr(self.ground, "take_error", None)
        return take() if take is not None else None

    # -- the events travel in the checkpoint, whatever their number -----------------------
    def restore(self, checkpoint):
        checkpoint = dict(checkpoint)
        events = np.asarray(checkpoint.pop("events", np.empty((0, spec.EVENT_SIZE))),
                            dtype=float)
        if events.ndim != 2 or events.shape[1] != spec.EVENT_SIZE:
            raise ValueError(f"Checkpoint array 'events' has shape {events.shape}; expected "
                             f"(k, {spec.EVENT_SIZE}).")
        checkpoint["events"] = self.events = np.empty((0, spec.EVENT_SIZE))
        super().restore(checkpoint)
        self.events = events.copy()

    def event_list(self):
        """The mode changes so far as a list of dicts (JSON-ready): ``t``, ``kind``
        (``"lift-off"``, ``"touchdown"``, ``"slip"``, ``"stick"``, ``"fall flat"``, ``"fall on
        side"``), ``before``,
        ``after`` (mode names), ``impulse`` (the normal impulse, N s) and ``energy_change`` (J;
        for a fall flat or on the side also the potential energy of the last ``flat_angle`` or
        ``side_angle`` of the fall)."""
        return [{"t": float(t), "kind": spec.EVENT_NAMES[int(kind)],
                 "before": spec.MODE_NAMES[int(before)], "after": spec.MODE_NAMES[int(after)],
                 "impulse": float(impulse), "energy_change": float(change)}
                for t, kind, before, after, impulse, change in self.events]
