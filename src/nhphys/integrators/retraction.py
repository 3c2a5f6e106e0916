"""Retraction (Lie-group variational) integrators.

``Retraction(map="exp" | "cayley")`` is the constraint-adapted discrete Lagrange-d'Alembert
integrator: ``R_{k+1} = R_k tau(h Omega_k)`` with ``Omega_k`` in the constraint space, the
momentum carried between steps restricted to its dual. Second order, symmetric, constraint exact
at every step. ``LiePoisson(map=...)`` is the same construction without the constraint (the
variational integrator of the free rigid body), the contrast of the seed paper's Fig. 2.
The derivation is in :mod:`nhphys.twins.suslov`.
"""

from dataclasses import dataclass

import numpy as np

from nhphys import _backend
from nhphys._validation import as_rotation, as_vector3
from nhphys.errors import NewtonError
from nhphys.lie.retraction import get_retraction


def _check_newton(newton_tol, max_newton):
    if not (isinstance(newton_tol, float) and 0 < newton_tol < 1e-3):
        raise ValueError(f"Expected `newton_tol` to be a float in (0, 1e-3), got {newton_tol!r}.")
    if not (isinstance(max_newton, int) and max_newton >= 1):
        raise ValueError(f"Expected `max_newton` to be an integer >= 1, got {max_newton!r}.")


class FixedPointRun:
    """State and stepping of a rigid body about a fixed point (see :mod:`nhphys.twins.suslov`).

    Parameters
    ----------
    system : Suslov
        Provides ``inertia`` and ``observables``.
    basis : ndarray, shape (3, m)
        Orthonormal basis of the allowed velocities (m = 2 constrained, 3 free).
    R0 : ndarray, shape (3, 3)
    omega0 : ndarray, shape (3,)
        Initial velocity, in the span of ``basis``.
    dt : float
    map_code : int
    backend : str
    newton_tol : float
    max_newton : int
    substeps : sequence of float
        Fractions of ``dt`` taken by the sub-steps of one step (see ``Retraction.substeps``).
    """

    def __init__(self, system, basis, R0, omega0, dt, map_code, backend, newton_tol,
                 max_newton, substeps=(1.0,)):
        self.system = system
        self.kernel = _backend.implementation("suslov", backend)
        self.inertia = np.ascontiguousarray(system.inertia)
        self.basis = np.ascontiguousarray(basis)
        self.reduced_inertia = self.basis.T @ self.inertia @ self.basis
        self.R = np.array(R0, dtype=float, order="C")
        self.p = self.basis.T @ self.inertia @ omega0
        self.y = dt * np.linalg.solve(self.reduced_inertia, self.p)  # Newton's first guess
        self.dt = dt
        self.map_code = map_code
        self.substeps = np.array(substeps, dtype=float)
        self.newton_tol = newton_tol
        self.max_newton = max_newton
        self.steps_done = 0

    def _frames(self, R, p):
        omega = np.linalg.solve(self.reduced_inertia, p.T).T @ self.basis.T
        return self.system.observables(R, omega)

    def initial(self):
        return self._frames(self.R[None].copy(), self.p[None].copy())

    def advance(self, n_steps, save_every):
        n_saved = n_steps // save_every
        out_R = np.empty((n_saved, 3, 3))
        out_p = np.empty((n_saved, self.basis.shape[1]))
        status = self.kernel.retraction_run(
            self.inertia, self.basis, self.R, self.p, self.y, self.dt, self.substeps, n_steps,
            save_every,
            self.map_code, self.newton_tol, self.max_newton, out_R, out_p,
        )
        if status:
            failed = self.steps_done + status - 1
            self.steps_done = failed
            raise NewtonError(failed, failed * self.dt, "the step may be too large")
        self.steps_done += n_steps
        return self._frames(out_R, out_p)


@dataclass(frozen=True)
class Retraction:
    """Constraint-adapted retraction integrator.

    Parameters
    ----------
    map : {"exp", "cayley"}
        The retraction ``tau`` that advances the orientation.
    newton_tol : float
        Newton stops when the correction is below ``newton_tol`` relative.
    max_newton : int
        Iterations before a step is declared failed.
    order : {2, 4}
        2: the symmetric second-order scheme. 4: its symmetric triple-jump composition
        (three sub-steps of ``g1 h, (1 - 2 g1) h, g1 h``, ``g1 = 1/(2 - 2^(1/3))``), fourth
        order at three times the cost; for ``Suslov`` (and ``LiePoisson``) and ``RollingBody``.
    """

    map: str = "exp"
    newton_tol: float = 1e-12
    max_newton: int = 30
    order: int = 2

    def __post_init__(self):
        get_retraction(self.map)
        _check_newton(self.newton_tol, self.max_newton)
        if self.order not in (2, 4):
            raise ValueError(f"Expected `order` to be 2 or 4, got {self.order!r}.")

    @property
    def substeps(self):
        """Fractions of the step taken by each sub-step: (1,) or the triple jump (3,)."""
        if self.order == 2:
            return (1.0,)
        g1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
        return (g1, 1.0 - 2.0 * g1, g1)

    def start(self, system, dt, backend, **initial_conditions):
        if self.order != 2 and not (getattr(system, "composable_retraction", False)
                                    or not hasattr(system, "start_retraction")):
            raise ValueError(
                f"Retraction(order={self.order}) is not available for {type(system).__name__}; "
                "use order=2."
            )
        if hasattr(system, "start_retraction"):  # systems on other groups build their own run
            return system.start_retraction(self, dt, backend, **initial_conditions)
        return self._start_fixed_point(system, dt, backend, **initial_conditions)

    def _start_fixed_point(self, system, dt, backend, R0=None, omega0=None, momentum0=None):
        R0 = np.eye(3) if R0 is None else as_rotation(R0, "R0")
        omega = system.initial_omega(omega0=omega0, momentum0=momentum0)
        return FixedPointRun(
            system, system.basis, R0, omega, dt, get_retraction(self.map).code, backend,
            self.newton_tol, self.max_newton, self.substeps,
        )


@dataclass(frozen=True)
class LiePoisson(Retraction):
    """The same variational retraction integrator for the unconstrained rigid body.

    Applied to a constrained system it ignores the constraint (its residual is reported but not
    enforced): the initial velocity is ``I^-1 momentum0`` or ``omega0`` as given.
    """

    def start(self, system, dt, backend, R0=None, omega0=None, momentum0=None):
        R0 = np.eye(3) if R0 is None else as_rotation(R0, "R0")
        if (omega0 is None) == (momentum0 is None):
            raise ValueError("Expected exactly one of `omega0` and `momentum0`.")
        if omega0 is not None:
            omega = as_vector3(omega0, "omega0")
        else:
            omega = system.inertia_inv @ as_vector3(momentum0, "momentum0")
        return FixedPointRun(
            system, np.eye(3), R0, omega, dt, get_retraction(self.map).code, backend,
            self.newton_tol, self.max_newton, self.substeps,
        )
