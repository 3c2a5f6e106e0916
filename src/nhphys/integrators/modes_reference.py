"""The reference of a body with a unilateral contact: scipy's DOP853 on each mode's continuous
equations, with every mode change located by its event function.

For cross-checks of :class:`nhphys.integrators.modes.ModesRun` (the structure-preserving run):
independent of its discretisation, sharing with it only the models, which are the same
continuous physics (:mod:`nhphys.twins.modes`):

* rolling: eq. (29) of :class:`nhphys.twins.rolling.RollingField` on ``(A, z, Omega, W)``;
  its event, the rolling guard (``N``, or ``mu N - |F_t|`` with friction);
* flight: the free rigid body, ``dA/dt = A hat(Omega)``, ``da/dt = v``,
  ``I dOmega/dt = I Omega x Omega``, ``dv/dt = -g k``, on ``(A, a, Omega, v, W)``; its event, the
  gap of the closest-approach pair;
* sliding: the same state, under the contact force ``N (n - mu t)`` with ``N`` the continuous
  sliding normal force (:func:`nhphys.twins.modes.sliding_normal_force`) and ``t`` the slip's
  direction, ``dW/dt`` its power at the material contact point; its events, ``N`` and the slip
  velocity along the segment's starting direction (if the slip turns by 90 degrees without
  stopping, the segment restarts with the new direction and no event);
* lying flat (a thin disk that has fallen flat): the face's centre moves at ``v`` and the disk
  turns at ``w`` about the plane's normal under the face friction of
  :mod:`nhphys.twins.face`, ``m dv/dt = F + m g_t``, ``I_a dw/dt = T``, on the full state; its
  event, the progress of the velocities from the segment's starting ones
  (:func:`nhphys.twins.modes.face_progress`: the face stops; if the motion has not stopped
  there, the segment restarts, as for a slip).
  Rolling and sliding have the fall as a further event: the disk's axis within its flat angle
  of the normal, ``cos(flat_angle) - |A e_3 . n|``;
* on its side (a cylinder that has fallen onto it): rolling, ``phi''`` about the fixed axis
  (:func:`nhphys.twins.modes.side_roll_rate`), its event the rolling guard
  (:func:`nhphys.twins.modes.side_margin`); sliding, the line's friction
  (:mod:`nhphys.twins.side`) in ``m dv/dt = F_t + F``, ``I_a dphi'/dt = tau_u + R F . w``,
  ``I_d dpsi'/dt = tau_n + M``, its event the slip's size down to ``STOP_SLIP`` of the
  segment's start (the slip dies out in finite time; past its stop the friction has no
  direction). Rolling and sliding on the rim have the fall onto the side as an event, the axis
  within its side angle of the plane, ``FALL_MARGIN`` before the support map stops there.

Force elements (:mod:`nhphys.forces`) join every mode's equations with the wrench of
:func:`nhphys.twins.rolling.total_wrench` (rolling: :class:`nhphys.twins.rolling.RollingField`
with the forces; in flight with no contact normal, so no spin friction; sliding with rolling
resistance ``N rolling_row``; lying flat as :func:`nhphys.twins.modes.face_state` says), and
their non-potential power joins ``dW/dt``.

At an event the run applies the same laws as the structure-preserving run (the rough impact
with the rest-speed rule, the stick impulse, the slip direction ``-F_t / |F_t|``), then goes on
in the new mode. The frames have the layout of ``ModesRun``'s, so the two trajectories have the
same fields.
"""

import numpy as np

from nhphys.errors import NewtonError
from nhphys.twins import modes as spec
from nhphys.twins import rolling as rolling_spec
from nhphys.twins.newton import OK
from nhphys.twins.rolling import total_wrench
from nhphys.twins.suslov import cross

STOP_SLIP = 1e-9  # a slip this small (relative to the body's speeds) at its event has stopped
ONSET_SLIP = 1e-7  # below this (relative) a slip takes the segment's direction
FALL_MARGIN = 1e-9  # a side fall's event this much (relative) before the side angle
MAX_SEGMENTS = 10_000  # per call of advance: more is a cascade, reported as a failure


class ModesReferenceRun:
    """Integrates mode by mode (see the module docstring); ``initial`` and ``advance`` give
    the fields of :class:`nhphys.integrators.modes.ModesRun`."""

    def __init__(self, run, rtol, atol):
        self.mirror = run  # the ModesRun started the same way: its initial state and fields
        system = run.system
        self.system = system
        shape, ground = system._twins()
        from nhphys.forces import build_force_set
        from nhphys.twins import forces as forces_twin

        forces = build_force_set(system.forces, forces_twin)
        self.model = spec.Model(shape, ground, None, forces, system.mass, system.inertia,
                                system.inertia_inv, system.gravity, system.up,
                                system.support_shape, system.restitution, system.mu, 0,
                                1e-14, 50, 0, spec.IMPACT_LAWS[system.impact], run.face,
                                side=run.side)
        self.face_ref = (np.zeros(3), 0.0)  # a face's velocities at its segment's start
        self.side_ref = np.zeros(3)  # a side's slip at its segment's start
        self.dt, self.rtol, self.atol = run.dt, rtol, atol
        self.steps_done = 0
        self.events = np.empty((0, spec.EVENT_SIZE))
        self.mode = int(run.mode[0])
        self.t = 0.0
        self.chart, self.z = int(run.chart[0]), np.array(run.z, dtype=float)
        self.slip = np.array(run.slip, dtype=float)
        self.y = self._full(run.A, run.a, run.system.inertia_inv @ run.Pi, run.p / system.mass,
                            0.0)
        self.backend = "python"
        if self.mode == spec.FACE:  # a start lying flat: its first segment's velocities
            v, w, _ = spec.face_state(self.model, self._state(self.y)[0])
            self.face_ref = (v, w)
        if self.mode == spec.SIDE_SLIDING:  # a start sliding on its side: its slip
            self.side_ref = spec.side_state_slip(self.model, self._state(self.y)[0])

    # -- states ---------------------------------------------------------------------------
    @staticmethod
    def _full(A, a, omega, v, W):
        return np.concatenate([np.ravel(A), a, omega, v, [W]])

    def _state(self, y, t=0.0):
        """The twin's state dict of a full state ``y`` (19,), its contact solved."""
        m = self.model
        A = y[:9].reshape(3, 3)
        if self.mode == spec.FACE:  # lying flat: no contact point to solve for
            n = self._normal()
            state = {"A": A, "a": y[9:12], "Pi": self.system.inertia @ y[12:15],
                     "p": self.system.mass * y[15:18], "s": spec.face_centre(m, A, n), "n": n,
                     "chart": self.chart, "z": self.z, "t": t, "work": y[18],
                     "slip": self.slip}
            return state, spec.face_contact(m, state)
        if self.mode in (spec.SIDE, spec.SIDE_SLIDING):  # on its side: the line's midpoint
            n = self._normal()
            state = {"A": A, "a": y[9:12], "Pi": self.system.inertia @ y[12:15],
                     "p": self.system.mass * y[15:18], "s": -m.side_radius * (A.T @ n),
                     "n": n, "chart": self.chart, "z": self.z, "t": t, "work": y[18],
                     "slip": self.slip}
            return state, spec.side_contact(m, state)
        st, c = rolling_spec.contact(m.shape, m.ground, A, y[9:12], self.chart, self.z, 1e-14,
                                     50)
        if st:
            raise NewtonError(self.steps_done, t, f"the reference's contact solve failed "
                              f"(status {st})")
        self.chart, self.z = c.chart, c.z
        state = {"A": A, "a": y[9:12], "Pi": self.system.inertia @ y[12:15],
                 "p": self.system.mass * y[15:18], "s": c.s, "n": c.n, "chart": c.chart,
                 "z": c.z, "t": t, "work": y[18], "slip": self.slip, "slip_ref": self.slip}
        return state, c

    def _rolling_y(self, state):
        return np.concatenate([state["A"].ravel(), state["z"],
                               self.system.inertia_inv @ state["Pi"], [state["work"]]])

    def _from_rolling(self, y15):
        field = self.model.field
        field.chart = self.chart
        _, _, (s, x, *_) = field._rates(0.0, y15, extras=True)
        A, omega = y15[:9].reshape(3, 3), y15[11:14]
        return self._full(A, x - A @ s, omega, -A @ cross(omega, s), y15[14])

    # -- the modes' equations -------------------------------------------------------------
    def _flight_rhs(self, t, y):
        A, omega = y[:9].reshape(3, 3), y[12:15]
        I, Iinv = self.system.inertia, self.system.inertia_inv
        f, tau, power = np.zeros(3), np.zeros(3), 0.0
        if self.model.forced:
            f, tau, _, power = total_wrench(self.model.forces, t, A, y[9:12],
                                            spec.NO_CONTACT, y[15:18], omega)
        return np.concatenate([np.cross(A, omega).ravel(), y[15:18],
                               Iinv @ (cross(I @ omega, omega) + tau),
                               f / self.system.mass - self.system.gravity * self.system.up,
                               [power]])

    def _sliding_rhs(self, t, y):
        m, I, Iinv = self.system.mass, self.system.inertia, self.system.inertia_inv
        try:
            state, c = self._state(y, t)
        except NewtonError:  # a stage past a disk's fall: the solver rejects the step on NaN
            return np.full(y.size, np.nan)
        st, N = spec.sliding_normal_force(self.model, state)
        if st:  # a contact event or a singular contact: the solver stops on the NaN
            return np.full(y.size, np.nan)
        A, omega = state["A"], y[12:15]
        u = spec.contact_velocity(self.model, state)
        F = N * (c.n - self.system.mu * self._direction(state, u))
        f, tau, power = np.zeros(3), np.zeros(3), 0.0
        if self.model.forced:
            f, tau, rolling_row, power = total_wrench(self.model.forces, t, A, y[9:12], c.n,
                                                      y[15:18], omega)
            tau = tau + N * rolling_row  # rolling resistance, at the sliding normal force
            power += N * (rolling_row @ omega)
        return np.concatenate([np.cross(A, omega).ravel(), y[15:18],
                               Iinv @ (cross(I @ omega, omega) + cross(c.s, A.T @ F) + tau),
                               (F + f) / m - self.system.gravity * self.system.up,
                               [F @ u + power]])

    def _fall_state(self, y_mode, t):
        """The twin's state of a disk (or wheel) at its flat angle: its lowest point
        (:func:`nhphys.twins.modes.lowest_point`), without the support map's test."""
        n = self._normal()
        A = y_mode[:9].reshape(3, 3)
        s = spec.lowest_point(self.model, A, n)  # the rim of the lower end, or a tube's
        if self.mode == spec.ROLLING:
            x = rolling_spec.ground_geometry(self.model.ground, self.chart, y_mode[9:11])[0]
            omega, work = y_mode[11:14], y_mode[14]
            a, v, z = x - A @ s, -A @ cross(omega, s), y_mode[9:11]
        else:
            a, omega, v, work, z = y_mode[9:12], y_mode[12:15], y_mode[15:18], y_mode[18], self.z
        return {"A": A, "a": a, "Pi": self.system.inertia @ omega, "p": self.system.mass * v,
                "s": s, "n": n, "chart": self.chart, "z": np.array(z, float), "t": t,
                "work": work, "slip": self.slip}

    def _normal(self):
        return rolling_spec.ground_geometry(self.model.ground, self.chart, self.z)[3]

    def _face_rhs(self, t, y):
        state, _ = self._state(y, t)
        v, w, load = spec.face_state(self.model, state)
        if not np.any(v) and w == 0.0 and spec.face_holds(self.model, state):
            return np.zeros(y.size)
        dv, dw, F, T = spec.face_rates(self.model, v, w, state["n"], load)
        A, axis = state["A"], state["A"].T @ state["n"]
        return np.concatenate([np.cross(A, w * axis).ravel(), v, dw * axis, dv,
                               [F @ v + T * w + load.f_np @ v + load.tau_np * w]])

    def _side_rhs(self, t, y):
        """A cylinder on its side (:mod:`nhphys.twins.modes`, "Lying on its side"): rolling,
        ``phi''`` of :func:`~nhphys.twins.modes.side_roll_rate` about the fixed axis ``u``;
        sliding, the line's friction and the rates of ``v``, ``phi'`` and ``psi'``, with
        ``d Omega / dt = psi'' n + phi'' u + phi' psi' w`` (the axis turns at ``psi' w``)."""
        m = self.model
        state, _ = self._state(y, t)
        A, n, R = state["A"], state["n"], m.side_radius
        u, w = spec.side_axes(A, n)
        v, psi, phi = spec.side_velocities(m, state)
        if self.mode == spec.SIDE:
            load = spec.side_load(m, t, A, state["a"], n, -R * phi * w, 0.0, phi)
            acc = spec.side_roll_rate(m, load, w)
            dv, domega, power = -R * acc * w, acc * u, load.power(-R * phi * w, phi * u)
        else:
            v = spec.tangential(v, n)
            load = spec.side_load(m, t, A, state["a"], n, v, psi, phi)
            slip = spec.side_slip(m, v, psi, phi, u, w)
            F, M = spec.side_friction(m, slip, spec.side_speed(m, v, psi, phi), u, w, load)
            dv = (load.F_t + F) / m.mass
            dphi = (load.tau_u + R * float(F @ w)) / m.face_inertia
            dpsi = (load.tau_n + M) / m.side_inertia
            domega = dpsi * n + dphi * u + (phi * psi) * w
            power = (float(F @ v) + R * float(F @ w) * phi + M * psi
                     + load.power(v, psi * n + phi * u))
        omega_b = y[12:15]
        return np.concatenate([np.cross(A, omega_b).ravel(), v, A.T @ domega, dv, [power]])

    def _side_fall_state(self, y_mode, t):
        """The twin's state of a cylinder at its side angle: its lowest rim point, without the
        support map's test (:func:`nhphys.twins.modes.flat_flight_contact`)."""
        A = y_mode[:9].reshape(3, 3)
        n = self._normal()
        if self.mode == spec.ROLLING:
            z = y_mode[9:11]
            c = spec.flat_flight_contact(self.model, A, np.zeros(3), self.chart, z)
            x = rolling_spec.ground_geometry(self.model.ground, self.chart, z)[0]
            omega, work = y_mode[11:14], y_mode[14]
            a, v = x - A @ c.s, -A @ cross(omega, c.s)
        else:
            a, omega, v, work, z = y_mode[9:12], y_mode[12:15], y_mode[15:18], y_mode[18], self.z
            c = spec.flat_flight_contact(self.model, A, a, self.chart, z)
        return {"A": A, "a": a, "Pi": self.system.inertia @ omega, "p": self.system.mass * v,
                "s": c.s, "n": n, "chart": self.chart, "z": np.array(z, float), "t": t,
                "work": work, "slip": self.slip}

    def _direction(self, state, u):
        """The slip direction: the slip's own, once it is above ``ONSET_SLIP`` of the speeds,
        else the segment's (a slip just started grows from zero along it; below that size its
        own direction is round-off, and the right-hand side would jump with it)."""
        u_t = spec.tangential(u, state["n"])
        size = np.linalg.norm(u_t)
        speed = (np.linalg.norm(state["p"]) / self.system.mass
                 + np.linalg.norm(self.system.inertia_inv @ state["Pi"])
                 * np.linalg.norm(state["s"]))
        return u_t / size if size > ONSET_SLIP * speed else self.slip

    def _rolling_rhs(self, t, y):
        field = self.model.field
        field.chart = self.chart
        st, out = field._rates(t, y)
        return out if st == OK else np.full(15, np.nan)

    # -- events ---------------------------------------------------------------------------
    def _events(self):
        """The event functions of the current mode; ``self._kinds`` names them (``"guard"``,
        ``"fall flat"``, ``"fall on side"``)."""
        events = self._mode_events()
        self._kinds = ["guard"] * len(events)
        model = self.model
        if self.mode in (spec.ROLLING, spec.SLIDING) and model.face_radius > 0.0:
            self._kinds[-1] = "fall flat"
        if self.mode in (spec.ROLLING, spec.SLIDING) and model.side_radius > 0.0:
            def side_fall(t, y):  # just before the support map stops (its rates with it)
                return abs(y[:9].reshape(3, 3)[:, 2] @ self._normal()) - np.sin(
                    model.side_angle) * (1.0 + FALL_MARGIN)
            events.append(side_fall)
            self._kinds.append("fall on side")
        return events

    def _mode_events(self):
        model = self.model
        if self.mode == spec.SIDE:
            return [lambda t, y: spec.side_margin(model, self._state(y, t)[0])]
        if self.mode == spec.SIDE_SLIDING:
            ref = self.side_ref

            scale = abs(ref[0]) + abs(ref[1]) + model.side_length * abs(ref[2])

            def side_stop(t, y):  # the slip is down to STOP_SLIP of the segment's start
                slip = spec.side_state_slip(model, self._state(y, t)[0])
                return (abs(slip[0]) + abs(slip[1]) + model.side_length * abs(slip[2])
                        - STOP_SLIP * scale)
            return [side_stop] if np.any(ref) else []
        if self.mode == spec.FACE:
            v0, w0 = self.face_ref

            def stop(t, y):
                state, _ = self._state(y, t)
                v, w, _ = spec.face_state(model, state)
                return spec.face_progress(model, v, w, v0, w0)
            return [stop] if (np.any(v0) or w0 != 0.0) else []
        falls = []
        if model.face_radius > 0.0:
            def fall(t, y):
                return np.cos(model.flat_angle) - abs(y[:9].reshape(3, 3)[:, 2] @ self._normal())
            falls = [fall]
        if self.mode == spec.ROLLING:
            def rolling(t, y):
                state = {"A": y[:9].reshape(3, 3), "z": y[9:11], "chart": self.chart,
                         "Pi": self.system.inertia @ y[11:14], "t": t,
                         "n": rolling_spec.ground_geometry(model.ground, self.chart,
                                                           y[9:11])[3]}
                return spec.friction_margin(model, state)[1]
            return [rolling] + falls
        if self.mode == spec.FLIGHT:
            def gap(t, y):
                return self._state(y, t)[1].gap
            return [gap]

        def normal(t, y):
            return spec.sliding_normal_force(model, self._state(y, t)[0])[1]

        def slip(t, y):
            state, _ = self._state(y, t)
            u_t = spec.tangential(spec.contact_velocity(model, state), state["n"])
            return u_t @ self.slip
        return [normal, slip] + falls

    def _rhs(self):
        return {spec.ROLLING: self._rolling_rhs, spec.FLIGHT: self._flight_rhs,
                spec.SLIDING: self._sliding_rhs, spec.FACE: self._face_rhs,
                spec.SIDE: self._side_rhs, spec.SIDE_SLIDING: self._side_rhs}[self.mode]

    def _y_of_mode(self):
        return self._rolling_y(self._state(self.y, self.t)[0]) if self.mode == spec.ROLLING \
            else self.y

    # -- the transitions ------------------------------------------------------------------
    def _switch(self, which, t, y_mode):
        """Apply the law of the event ``which`` of the current mode at time ``t``."""
        model = self.model
        before, impulse, change = self.mode, 0.0, 0.0
        kinds = list(self._kinds)
        if kinds[which] == "fall on side":  # at the side angle: the rim point by hand
            state, self.mode, impulse, change = spec.land_side(
                model, self._side_fall_state(y_mode, t))
            self.side_ref = spec.side_state_slip(model, state) if \
                self.mode == spec.SIDE_SLIDING else np.zeros(3)
            self._record(state, t, spec.FALL_SIDE, before, impulse, change)
            return
        falls = kinds[which] == "fall flat"
        if falls:  # at the flat angle, where the support map stops: the rim point by hand
            state, impulse, change = spec.land_flat(model, self._fall_state(y_mode, t))
            self.mode = spec.FACE
            self.face_ref = (state["p"] / self.system.mass, float(
                state["n"] @ (state["A"] @ (self.system.inertia_inv @ state["Pi"]))))
            self._record(state, t, spec.FALL_FLAT, before, impulse, change)
            return
        y = self._from_rolling(y_mode) if self.mode == spec.ROLLING else y_mode
        state, c = self._state(y, t)
        if self.mode == spec.SIDE:  # the needed friction left the line's limits
            self.mode, kind = spec.SIDE_SLIDING, spec.SLIP
            self.side_ref = np.zeros(3)
        elif self.mode == spec.SIDE_SLIDING:  # the slip has stopped
            state, self.mode, change = spec.side_stick(model, state)
            self.side_ref = np.zeros(3)
            kind = spec.STICK
        elif self.mode == spec.FACE:
            v, w, _ = spec.face_state(model, state)
            speed = np.linalg.norm(v) + self.model.face_radius * abs(w)
            v0, w0 = self.face_ref
            if speed > STOP_SLIP * (np.linalg.norm(v0) + self.model.face_radius * abs(w0)):
                self.face_ref = (v, w)  # the motion turned: a new segment
                self.y, self.t = y, t
                return
            change = -spec.kinetic_energy(model, state)
            state = dict(state, p=np.zeros(3), Pi=np.zeros(3), work=state["work"] + change)
            self.face_ref = (np.zeros(3), 0.0)
            kind = spec.STICK
        elif self.mode == spec.ROLLING:
            st, N = spec.normal_force(model, state)
            if st:
                raise NewtonError(self.steps_done, t, f"the reference's contact failed at a "
                                  f"mode change (status {st})")
            _, _, direction = spec.friction_margin(model, state)
            if N <= 0.0 or direction is None:
                self.mode, kind = spec.FLIGHT, spec.LIFT_OFF
            else:
                self.slip = direction
                self.mode, kind = spec.SLIDING, spec.SLIP
        elif self.mode == spec.FLIGHT:
            state, self.mode, impulse, change = spec.impact(model, dict(state, F=np.zeros(3)),
                                                            c, self.dt)
            kind = spec.TOUCHDOWN
        elif which == 0:
            self.mode, kind = spec.FLIGHT, spec.LIFT_OFF
        else:
            u_t = spec.tangential(spec.contact_velocity(model, state), state["n"])
            speed = (np.linalg.norm(y[15:18]) + np.linalg.norm(y[12:15])
                     * np.linalg.norm(state["s"]))
            if np.linalg.norm(u_t) > STOP_SLIP * speed:  # the slip turned: a new segment
                self.slip = u_t / np.linalg.norm(u_t)
                self.y, self.t = y, t
                return
            state, P, change = spec.impulse_to(model, state, c, np.zeros(3))
            impulse, kind = c.n @ P, spec.STICK
            self.mode = spec.settle(model, state)
        if self.mode == spec.SLIDING and before != spec.SLIDING and kind != spec.SLIP:
            self.slip = state["slip"]
        self._record(state, t, kind, before, impulse, change)

    def _record(self, state, t, kind, before, impulse, change):
        """Go on from ``state`` at ``t`` in the new mode, and list the event."""
        self.y = self._full(state["A"], state["a"], self.system.inertia_inv @ state["Pi"],
                            state["p"] / self.system.mass, state["work"])
        self.t = t
        self.events = np.vstack([self.events, [t, kind, before, self.mode, impulse, change]])

    # -- frames ---------------------------------------------------------------------------
    def _frame(self, y_mode, t, mode):
        if mode == spec.ROLLING:
            field = self.model.field
            field.chart = self.chart
            return np.concatenate([field.frame(y_mode, t), [mode]])
        state, c = self._state(y_mode, t)
        N = spec.sliding_normal_force(self.model, state)[1] if mode == spec.SLIDING else 0.0
        if mode == spec.FACE:
            N = spec.face_state(self.model, state)[2].N
        if mode in (spec.SIDE, spec.SIDE_SLIDING):
            _, psi, phi = spec.side_velocities(self.model, state)
            N = spec.side_load(self.model, t, state["A"], state["a"], state["n"],
                               state["p"] / self.system.mass, psi, phi).N
        state.update(normal_force=N, t=t)
        return np.concatenate([rolling_spec.frame(state, c), [mode]])

    def initial(self):
        return self.mirror._observables(self._frame(self._y_of_mode(), 0.0, self.mode)[None])

    def advance(self, n_steps, save_every):
        from scipy.integrate import solve_ivp

        t1 = (self.steps_done + n_steps) * self.dt
        saved = (self.steps_done * self.dt
                 + self.dt * save_every * np.arange(1, n_steps // save_every + 1))
        frames = []
        segments = 0
        while self.t < t1:
            segments += 1
            if segments > MAX_SEGMENTS:
                raise NewtonError(self.steps_done, self.t, "the reference met more than "
                                  f"{MAX_SEGMENTS} mode changes in one call (a cascade)")
            y0 = self._y_of_mode()
            events = self._events()
            if self.mode == spec.SIDE and events[0](self.t, y0) < 0.0:
                # a line that cannot hold from the start: it slips there (the solver sees only
                # the guard's sign changes)
                self._switch(0, self.t, y0)
                continue
            for event in events:
                event.terminal, event.direction = True, -1
            # a flight's gap is checked at the solver's steps only, and on a flight's smooth
            # equations those can be longer than a whole short flight (both ends below the
            # ground: the touchdown missed); a flight lasts more than dt (shorter bounces are
            # plastic), so steps of at most dt/2 sample the gap inside every flight
            max_step = 0.5 * self.dt if self.mode == spec.FLIGHT else np.inf
            # a line that starts to slide from rest has no slip to stop yet: its first
            # segment lasts a step, and its slip there is the next segment's reference
            from_rest = self.mode == spec.SIDE_SLIDING and not np.any(self.side_ref)
            t_stop = min(t1, self.t + self.dt) if from_rest else t1
            sol = solve_ivp(self._rhs(), (self.t, t_stop), y0, method="DOP853", rtol=self.rtol,
                            atol=self.atol, dense_output=True, events=events,
                            max_step=max_step)
            if sol.status == -1:
                raise NewtonError(self.steps_done, self.t, f"the reference integration "
                                  f"failed: {sol.message}")
            t_end = sol.t[-1]
            inside = saved[(saved > self.t) & (saved <= t_end)]
            frames.extend(self._frame(sol.sol(ts), ts, self.mode) for ts in inside)
            if sol.status == 1:  # an event
                which = next(i for i, te in enumerate(sol.t_events) if te.size)
                self._switch(which, t_end, sol.y[:, -1])
            else:
                y = sol.y[:, -1]
                if self.mode == spec.ROLLING:
                    y = self._from_rolling(y)
                self.y, self.t = y, t_end
                if from_rest:
                    self.side_ref = spec.side_state_slip(self.model, self._state(y, t_end)[0])
        self.steps_done += n_steps
        out = np.array(frames).reshape(-1, spec.MODES_FRAME_SIZE)
        return self.mirror._observables(out)

    def event_list(self):
        return [{"t": float(t), "kind": spec.EVENT_NAMES[int(kind)],
                 "before": spec.MODE_NAMES[int(before)], "after": spec.MODE_NAMES[int(after)],
                 "impulse": float(impulse), "energy_change": float(change)}
                for t, kind, before, after, impulse, change in self.events]
