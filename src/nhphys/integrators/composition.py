"""Composition of Newmark / DLA steps into one integrator (one kernel loop).

``Composition([(A, w_1), (B, w_2), ...])`` advances a step ``h`` by ``A`` over ``w_1 h``, then
``B`` over ``w_2 h``, ... (weights sum to 1). ``Composition.symmetric(F)`` is
``F*_{h/2} o F_{h/2}`` (``F`` first), e.g. ``F^{0,0,1}_{h/2} o F^{0,0,0}_{h/2}`` for
``F = Newmark(0, 0, 0)``: symmetric, hence of even order, because ``(A o B)* = B* o A*``
gives ``(F*_{h/2} o F_{h/2})* = F*_{h/2} o F**_{h/2} = F*_{h/2} o F_{h/2}``.
"""

import numbers

import numpy as np

from nhphys.integrators.newmark import _Stepper
from nhphys.integrators.run import check_newton_options


class Composition(_Stepper):
    """A step made of weighted sub-steps of Newmark / DLA methods.

    Parameters
    ----------
    stages : sequence of (integrator, weight)
        Applied in order; each integrator a :class:`~nhphys.integrators.Newmark`,
        :class:`~nhphys.integrators.DLA` or :class:`Composition`; weights (any sign) sum to 1.
    newton_tol, max_newton :
        Newton settings for every sub-step.

    Examples
    --------
    >>> import nhphys
    >>> from nhphys.integrators import Composition, Newmark
    >>> F = Composition.symmetric(Newmark(0.0, 0.0, 0.0))   # F^{0,0,1}_{h/2} o F^{0,0,0}_{h/2}
    >>> [(s.alpha, w) for s, w in F.stages]
    [(0.0, 0.5), (1.0, 0.5)]
    """

    def __init__(self, stages, newton_tol=1e-12, max_newton=30):
        stages = list(stages)
        if not stages:
            raise ValueError("Expected `stages` to contain at least one (integrator, weight).")
        checked = []
        for i, item in enumerate(stages):
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(f"Expected `stages[{i}]` to be an (integrator, weight) pair, "
                                f"got {item!r}.")
            method, weight = item
            if not hasattr(method, "stage_rows"):
                raise TypeError(f"Expected `stages[{i}]` to hold a Newmark, DLA or "
                                f"Composition, got {method!r}.")
            if isinstance(weight, bool) or not isinstance(weight, numbers.Real) \
                    or not np.isfinite(weight) or weight == 0:
                raise ValueError(f"Expected the weight of `stages[{i}]` to be a nonzero finite "
                                 f"number, got {weight!r}.")
            checked.append((method, float(weight)))
        total = sum(w for _, w in checked)
        if abs(total - 1.0) > 1e-12:
            raise ValueError(f"Expected the weights of `stages` to sum to 1, got {total!r}.")
        self.newton_tol, self.max_newton = check_newton_options(newton_tol, max_newton)
        self.stages = tuple(checked)

    @classmethod
    def symmetric(cls, method, newton_tol=1e-12, max_newton=30):
        """``method*_{h/2} o method_{h/2}`` (``method`` first)."""
        return cls([(method, 0.5), (method.adjoint(), 0.5)], newton_tol, max_newton)

    def adjoint(self):
        """``(A_{a h} o B_{b h})* = B*_{b h} o A*_{a h}``: reversed order, adjoint stages."""
        return Composition([(m.adjoint(), w) for m, w in reversed(self.stages)],
                           self.newton_tol, self.max_newton)

    def stage_rows(self):
        rows = []
        for method, weight in self.stages:
            for row in method.stage_rows():
                row = np.array(row, dtype=float)
                row[5] *= weight
                rows.append(row)
        return np.array(rows)

    def __repr__(self):
        inner = ", ".join(f"({m!r}, {w:g})" for m, w in self.stages)
        return f"Composition([{inner}])"
