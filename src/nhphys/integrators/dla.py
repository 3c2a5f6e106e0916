"""The discrete Lagrange-d'Alembert (DLA) integrator on ``R^n``, for comparison with Newmark.

The derivation, its one-step form on the constraint distribution, and the proof that the
Newmark members ``F^{0,0,alpha}`` coincide with the trapezoidal DLA (and with the midpoint DLA
when the potential is affine) are in :mod:`nhphys.twins.newmark`.
"""

from dataclasses import dataclass

import numpy as np

from nhphys._validation import as_choice
from nhphys.integrators.newmark import DISCRETIZATIONS, KINDS, _Stepper, check_unit_interval
from nhphys.integrators.run import check_newton_options

DISCRETE_LAGRANGIANS = ("midpoint", "trapezoidal")


@dataclass(frozen=True)
class DLA(_Stepper):
    """Discrete Lagrange-d'Alembert integrator.

    Parameters
    ----------
    discrete_lagrangian : {"midpoint", "trapezoidal"}
        ``h L((q0 + q1)/2, (q1 - q0)/h)`` or the average of ``h L`` at both ends.
    alpha : float
        In [0, 1], as for :class:`~nhphys.integrators.Newmark`; 1/2 makes the method symmetric.
    constraint_discretization : {"point", "average"}
    newton_tol, max_newton :
        Newton stopping rule and iteration limit (as for :class:`~nhphys.integrators.Newmark`).
    """

    discrete_lagrangian: str = "midpoint"
    alpha: float = 0.5
    constraint_discretization: str = "point"
    newton_tol: float = 1e-12
    max_newton: int = 30

    def __post_init__(self):
        as_choice(self.discrete_lagrangian, "discrete_lagrangian", DISCRETE_LAGRANGIANS)
        object.__setattr__(self, "alpha", check_unit_interval(self.alpha, "alpha", 1.0))
        as_choice(self.constraint_discretization, "constraint_discretization", DISCRETIZATIONS)
        tol, iters = check_newton_options(self.newton_tol, self.max_newton)
        object.__setattr__(self, "newton_tol", tol)
        object.__setattr__(self, "max_newton", iters)

    def adjoint(self):
        """The same discrete Lagrangian with ``1 - alpha`` (both rules are symmetric)."""
        return DLA(self.discrete_lagrangian, 1.0 - self.alpha, self.constraint_discretization,
                   self.newton_tol, self.max_newton)

    def stage_rows(self):
        kind = KINDS["dla_" + self.discrete_lagrangian]
        disc = DISCRETIZATIONS.index(self.constraint_discretization)
        return np.array([[kind, disc, 0.0, 0.0, self.alpha, 1.0]])
