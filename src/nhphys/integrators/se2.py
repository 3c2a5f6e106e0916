"""The retraction integrator on ``SE(2) x R^k``: the run that :class:`Retraction` starts for the
knife edge (Chaplygin sleigh) and the vertical rolling disk. The derivation is in
:mod:`nhphys.twins.se2_retraction`.
"""

import numpy as np

from nhphys import _backend
from nhphys.errors import NewtonError


class SE2RetractionRun:
    """State and stepping of a left-invariant system on ``SE(2) x R^k`` under ``xi in d``.

    Parameters
    ----------
    inertia : ndarray, shape (d, d)
        Locked inertia of the reduced Lagrangian, d = 3 + k.
    basis : ndarray, shape (d, m)
        Basis of the constraint space.
    g0 : ndarray, shape (3 + k,)
        Initial ``(x, y, theta, phi...)``.
    xi0 : ndarray, shape (d,)
        Initial body velocity; must lie in the span of ``basis`` (the system checks it).
    dt : float
    integrator : Retraction
        Provides ``map``, ``newton_tol``, ``max_newton``.
    backend : str
    frames : callable
        ``frames(g (n, d), xi (n, d)) -> dict`` of trajectory fields.
    """

    def __init__(self, inertia, basis, g0, xi0, dt, integrator, backend, frames):
        from nhphys.lie.retraction import get_retraction

        self.kernel = _backend.implementation("se2_retraction", backend)
        self.inertia = np.ascontiguousarray(inertia, dtype=float)
        self.basis = np.ascontiguousarray(basis, dtype=float)
        self.reduced_inertia = self.basis.T @ self.inertia @ self.basis
        self.g = np.array(g0, dtype=float)
        self.p = self.basis.T @ self.inertia @ np.asarray(xi0, dtype=float)
        self.y = dt * np.linalg.solve(self.reduced_inertia, self.p)
        self.dt = dt
        self.map_code = get_retraction(integrator.map).code
        self.newton_tol = integrator.newton_tol
        self.max_newton = integrator.max_newton
        self.frames = frames
        self.steps_done = 0

    def velocity(self, p):
        """Body velocities (n, d) of d* momenta (n, m)."""
        return np.linalg.solve(self.reduced_inertia, np.atleast_2d(p).T).T @ self.basis.T

    def initial(self):
        return self.frames(self.g[None].copy(), self.velocity(self.p))

    def advance(self, n_steps, save_every):
        n_saved = n_steps // save_every
        out_g = np.empty((n_saved, self.g.size))
        out_p = np.empty((n_saved, self.basis.shape[1]))
        status = self.kernel.retraction_run(
            self.inertia, self.basis, self.g, self.p, self.y, self.dt, n_steps, save_every,
            self.map_code, self.newton_tol, self.max_newton, out_g, out_p,
        )
        if status:
            failed = self.steps_done + status - 1
            self.steps_done = failed
            raise NewtonError(failed, failed * self.dt, "the step may be too large")
        self.steps_done += n_steps
        return self.frames(out_g, self.velocity(out_p))
