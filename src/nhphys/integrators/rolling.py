"""The run of a rolling body: ``Retraction`` on the model :class:`nhphys.systems.RollingBody`.

The scheme (a RATTLE-type Lie-group step with the contact force as unknown) and its Newton
solves are specified in :mod:`nhphys.twins.rolling`; the kernel is ``nhphys_ext.rolling``.
"""

import warnings

import numpy as np

from nhphys import _backend
from nhphys.forces import build_force_set, uses_callables
from nhphys.integrators.run import Run
from nhphys.lie.retraction import get_retraction
from nhphys.systems.rolling import event_message
from nhphys.twins import rolling as spec


def start_rolling(integrator, system, dt, backend, R0=None, omega0=None,
                  ground_point=(0.0, 0.0, 0.0), **modes_keywords):
    """The :class:`RollingRun` of ``Retraction`` ``integrator`` on ``system`` (validated); with
    ``system.lift_off`` the :class:`nhphys.integrators.modes.ModesRun`, which also takes
    ``height`` and ``velocity0`` (``modes_keywords``)."""
    if system.lift_off:
        from nhphys.integrators.modes import start_modes

        return start_modes(integrator, system, dt, backend, R0, omega0, ground_point,
                           **modes_keywords)
    R0 = np.eye(3) if R0 is None else R0
    omega0 = np.zeros(3) if omega0 is None else omega0
    state = system.place(R0, omega0, ground_point)
    options = ((spec.EXTRAPOLATE if integrator.extrapolate else 0)
               | (spec.GLOBALIZE if integrator.globalize else 0))
    return RollingRun(system, state, dt, get_retraction(integrator.map).code, backend,
                      integrator.newton_tol, integrator.max_newton, integrator.substeps,
                      options)


class RollingRun(Run):
    """Stepping state of a rolling body (see :mod:`nhphys.twins.rolling`).

    Parameters
    ----------
    system : RollingBody
        The model: ``mass``, ``inertia``, ``gravity``, ``up``, ``ground``,
        ``contact_shape(module, backend)`` and ``observables(saved)``.
    state : dict
        The placed initial state (:meth:`RollingBody.place`).
    dt : float
    map_code : int
        The retraction's code (0 exp, 1 Cayley).
    backend : {"auto", "cython", "python"}
    newton_tol : float
    max_newton : int
    substeps : sequence of float
        Fractions of ``dt`` of the sub-steps of one step.
    options : int
        The bits ``EXTRAPOLATE | GLOBALIZE`` of :mod:`nhphys.twins.rolling` (0: the plain
        Newton solve from the warm start).

    Attributes
    ----------
    A (3, 3), a (3,), Pi (3,), p (3,), s (3,) : ndarray
        The state (orientation, centre of mass, body angular and linear momenta, body contact
        point from the centre of mass).
    F, xi : ndarray, shape (3,)
        The warm starts of the step's Newton solve.
    chart : ndarray, shape (1,), intp
    z : ndarray, shape (2,)
        The ground chart coordinates of the contact.
    n : ndarray, shape (3,)
        The ground's normal at the contact.
    clock : ndarray, shape (2,)
        The time and the work of the applied forces.
    history : ndarray, shape (len(substeps), 6 HISTORY)
    filled : ndarray, shape (1,), intp
        The last solutions of each sub-step, for the extrapolated start, and how many.
    backend : {"cython", "python"}
        What steps.
    """

    state_names = ("A", "a", "Pi", "p", "s", "n", "F", "xi", "chart", "z", "clock", "history",
                   "filled", "warned_lift_off")

    def __init__(self, system, state, dt, map_code, backend, newton_tol, max_newton,
                 substeps=(1.0,), options=0):
        self.system = system
        if uses_callables(system.forces):  # a Python callable steps on the twin only
            backend = "python"
            self.backend_note = "a force element is a Python callable"
        if system.motion is not None and system.motion.uses_callable:
            backend = "python"
            self.backend_note = "the ground's motion is a Python callable"
        self.kernel, self.backend = _backend.choose("rolling", backend)
        self.forces = build_force_set(system.forces,
                                      _backend.choose("forces", self.backend)[0])
        self.motion = (self.kernel.GroundMotion() if system.motion is None
                       else system.motion.build(self.kernel))
        self.ground = system.ground.with_backend(self.backend).kernel
        self.shape = system.contact_shape(self.kernel, self.backend)
        self.inertia = np.ascontiguousarray(system.inertia, dtype=float)
        self.inertia_inv = np.linalg.inv(self.inertia)
        self.up = np.ascontiguousarray(system.up, dtype=float)
        self.dt = dt
        self.map_code = map_code
        self.substeps = np.array(substeps, dtype=float)
        self.options = int(options)
        self.history = np.zeros((len(self.substeps), 6 * spec.HISTORY))
        self.filled = np.zeros(1, dtype=np.intp)
        self.newton_tol = newton_tol
        self.max_newton = max_newton
        self.A = np.array(state["A"], dtype=float, order="C")
        self.a = np.array(state["a"], dtype=float)
        self.Pi = np.array(state["Pi"], dtype=float)
        self.p = np.array(state["p"], dtype=float)
        self.s = np.array(state["s"], dtype=float)
        self.n = np.array(state["contact"].n, dtype=float)
        self.clock = np.zeros(2)  # the time and the work of the applied forces
        self.F = system.mass * system.gravity * self.up
        self.xi = dt * (self.inertia_inv @ self.Pi)
        self.chart = np.array([state["chart"]], dtype=np.intp)
        self.z = np.array(state["z"], dtype=float)
        self._first = spec.frame({"A": self.A, "a": self.a, "Pi": self.Pi, "p": self.p},
                                 state["contact"])
        self.warned_lift_off = False

    # -- the Run hooks --------------------------------------------------------------------
    def _initial_frame(self):
        return self.system.observables(spec.unpack_frames(self._first[None]))

    def _allocate(self, n_saved):
        return np.empty((n_saved, spec.FRAME_SIZE))

    def _loop(self, n_steps, save_every, out, info):
        system = self.system
        return self.kernel.rolling_run(
            self.shape, self.ground, self.motion, self.forces, system.mass, self.inertia,
            self.inertia_inv, system.gravity, self.up, self.dt, self.substeps, n_steps,
            save_every, self.map_code, self.newton_tol, self.max_newton, self.A, self.a,
            self.Pi, self.p, self.s, self.n, self.F, self.xi, self.chart, self.z, self.clock,
            out, info, self.options, self.history, self.filled,
        )

    def _frames(self, saved, count):
        return self.system.observables(spec.unpack_frames(saved[:count]))

    def _detail(self, reason):
        """Where the contact was, when it had left the ground's chart domain (or data)."""
        domain = self.system.ground.chart_domain(int(self.chart[0]))
        outside = [
            f"{name} = {value:.6g} outside [{lo:.6g}, {hi:.6g}]"
            for name, value, (lo, hi), periodic in zip(("u", "v"), self.z, domain[:2], domain[2])
            if not periodic and not lo <= value <= hi
        ]
        if not outside:
            return ""
        return ("the contact point had left the ground's data (chart coordinates "
                + ", ".join(outside) + ")")

    def _event(self, reason):
        return event_message(reason, self.system.body.shape)

    def _pending_error(self):
        """What a Python ground callback raised inside the kernel (it stopped the step)."""
        take = getattr(self.ground, "take_error", None)  # compiled grounds only
        return take() if take is not None else None

    # -- the lift-off warning -------------------------------------------------------------
    def advance(self, n_steps, save_every):
        frames = super().advance(n_steps, save_every)
        pulled = np.flatnonzero(frames["normal_force"] < 0)
        if pulled.size and not self.warned_lift_off:
            self.warned_lift_off = True
            t = (self.steps_done - n_steps + save_every * (pulled[0] + 1)) * self.dt
            warnings.warn(
                f"The normal contact force is negative at t = {t:.6g}: a real body would lift "
                "off the ground there, but the rolling model keeps it in contact.",
                RuntimeWarning, stacklevel=4,
            )
        return frames
