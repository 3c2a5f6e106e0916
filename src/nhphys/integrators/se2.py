"""The retraction integrator on ``SE(2) x R^k``: the run that :class:`Retraction` starts for the
knife edge (Chaplygin sleigh), the vertical rolling disk and the rotor sleigh. The derivation
is in :mod:`nhphys.twins.se2_retraction`.
"""

import numpy as np

from nhphys import _backend
from nhphys.errors import RoundingError
from nhphys.integrators.run import Run, check_newton_options
from nhphys.twins.newton import INFO_EVALUATIONS


class SE2RetractionRun(Run):
    """State and stepping of a left-invariant system on ``SE(2) x R^k`` under ``xi in d``.

    Parameters
    ----------
    system : object
        Has ``observables({"q": (k, n), "v": (k, n)})``.
    model : CoordinateModel
        The system's coordinate model (:mod:`nhphys.twins.models`) with its description on the
        group: ``group_inertia`` (d, d), ``group_basis`` (d, m), ``to_group`` and
        ``from_group``; its Lagrangian must be left-invariant (the system checks it).
    q0, v0 : ndarray, shape (n,)
        Validated initial coordinates and velocity (``v0`` on the constraint).
    dt : float
    integrator : Retraction
        Provides ``map``, ``newton_tol``, ``max_newton``.
    backend : {"auto", "cython", "python"}

    Attributes
    ----------
    g : ndarray, shape (d,)
        ``(x, y, theta, phi...)``.
    p : ndarray, shape (m,)
        The ``d*`` momentum ``basis^T I xi``.
    y : ndarray, shape (m,)
        The last step in ``basis`` coordinates (Newton's warm start).
    backend : {"cython", "python"}
        What steps.
    newton_evaluations : int
        Residual evaluations of every Newton solve so far.
    forces : BodyForces or None
        The system's force elements (:mod:`nhphys.twins.se2_retraction`, "Forces").
    clock : ndarray, shape (2,)
        The time and the work of the force elements.
    """

    state_names = ("g", "p", "y", "clock", "newton_evaluations")

    def __init__(self, system, model, q0, v0, dt, integrator, backend):
        from nhphys.integrators.newmark import _body_forces, _callables_step_on_twin
        from nhphys.lie.retraction import get_retraction
        from nhphys.twins.models import compiled_counterpart

        self.system = system
        self.model = model
        backend = _callables_step_on_twin(self, system, backend)
        self.kernel, self.backend = _backend.choose("se2_retraction", backend)
        force_model = model
        if self.backend == "cython" and getattr(system, "forces", ()):
            force_model = compiled_counterpart(model, _backend.kernel_module("models"))
            if force_model is None:  # a model in Python: its forces step on the twin
                self.kernel, self.backend = _backend.choose("se2_retraction", "python")
                force_model = model
        self.forces = _body_forces(system, force_model, self.backend)
        self.clock = np.zeros(2)  # the time and the work of the force elements
        self.inertia = np.ascontiguousarray(model.group_inertia, dtype=float)
        self.basis = np.ascontiguousarray(model.group_basis, dtype=float)
        self.reduced_inertia = self.basis.T @ self.inertia @ self.basis
        g0, xi0 = model.to_group(q0, v0)
        self.g = np.array(g0[0], dtype=float)
        self.p = self.basis.T @ self.inertia @ xi0[0]
        self.y = dt * np.linalg.solve(self.reduced_inertia, self.p)  # Newton's first guess
        self.dt = dt
        self.map_code = get_retraction(integrator.map).code
        self.newton_tol, self.max_newton = check_newton_options(integrator.newton_tol,
                                                                integrator.max_newton)
        self.newton_evaluations = 0
        # rates the scheme keeps exactly without forces (the vertical disk's turning rate and
        # spin), to tell when rounding no longer does (see advance)
        names = () if getattr(system, "forces", ()) else getattr(system, "conserved_rates", ())
        first = self._initial_frame() if names else {}
        self.conserved = {name: float(first[name][0]) for name in names}

    def advance(self, n_steps, save_every):
        """:meth:`Run.advance`, then a check that the conserved rates held.

        The scheme keeps the vertical disk's turning rate and spin exactly; rounding keeps them
        to about 1e-14 until a step turns the disk by some 1e8 rad or more (a spin of 1e10 rad/s
        at h = 0.01), where the step's angles swamp its increments. A drift beyond 1e-9
        (relative) stops the run with a :class:`~nhphys.errors.RoundingError` naming the rate,
        the frames of the chunk attached.
        """
        frames = super().advance(n_steps, save_every)
        for name, value in self.conserved.items():
            drift = float(np.abs(frames[name] - value).max(initial=0.0))
            if drift > 1e-9 * max(abs(value), 1.0):
                frames = dict(frames, t=self.dt * (self.steps_done - n_steps + save_every
                                                   * np.arange(1, len(frames[name]) + 1)))
                error = RoundingError(
                    self.steps_done, self.steps_done * self.dt,
                    f"the step's rounding lost the conserved {name.replace('_', ' ')}: it "
                    f"drifted by {drift / max(abs(value), 1.0):.2g} (relative) from {value:.6g}; "
                    f"a step turns the disk by up to {self._largest_turn(frames):.3g} rad, "
                    "take a smaller dt", frames)
                self.failure = error
                raise error
        return frames

    def _largest_turn(self, frames):
        rates = [np.abs(frames[name]).max(initial=0.0) for name in self.conserved]
        return self.dt * max(rates, default=0.0)

    def velocity(self, p):
        """Body velocities (k, d) of ``d*`` momenta (k, m)."""
        return np.linalg.solve(self.reduced_inertia, np.atleast_2d(p).T).T @ self.basis.T

    def _saved(self, g, p, work):
        q, v = self.model.from_group(g, self.velocity(p))
        return self.system.observables({"q": q, "v": v, "work": work})

    def _initial_frame(self):
        return self._saved(self.g[None].copy(), self.p[None].copy(), self.clock[1:].copy())

    def _allocate(self, n_saved):
        return (np.empty((n_saved, self.g.size)), np.empty((n_saved, self.basis.shape[1])),
                np.empty(n_saved))

    def _loop(self, n_steps, save_every, saved, info):
        out_g, out_p, out_work = saved
        try:
            return self.kernel.retraction_run(
                self.inertia, self.basis, self.g, self.p, self.y, self.dt, n_steps,
                save_every, self.map_code, self.newton_tol, self.max_newton, out_g, out_p, info,
                forces=self.forces, clock=self.clock, out_work=out_work,
            )
        finally:
            self.newton_evaluations += int(info[INFO_EVALUATIONS])

    def _frames(self, saved, count):
        out_g, out_p, out_work = saved
        return self._saved(out_g[:count], out_p[:count], out_work[:count])
