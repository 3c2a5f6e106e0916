"""The run of the discrete Lagrange-d'Alembert integrator on joint trees (``nhphys.systems.Bicycle``).

:class:`~nhphys.integrators.DLA` (midpoint rule, ``alpha = 1/2``) steps a joint tree by the
symmetric RATTLE-type step of :func:`nhphys.twins.multibody.tree_step`, and a
:class:`~nhphys.integrators.Composition` of that step with the fractions of
:mod:`nhphys.integrators.coefficients` composes it to order 4, 6 or 8. The time loop is
``tree_run`` of the kernel ``nhphys_ext.multibody`` or of its twin.
"""

import numpy as np

from nhphys import _backend
from nhphys.integrators.newmark import KINDS
from nhphys.integrators.run import Run


def tree_fractions(stage_rows):
    """The sub-step fractions (s,) of stage rows that are all the symmetric midpoint DLA step.

    Raises
    ------
    TypeError
        Another method among the stages (a Newmark step, the trapezoidal rule, ``alpha`` other
        than 1/2, the averaged constraint): joint trees step by the midpoint DLA only.
    """
    rows = np.atleast_2d(stage_rows)
    for row in rows:
        if int(row[0]) != KINDS["dla_midpoint"] or row[4] != 0.5 or int(row[1]) != 0:
            raise TypeError(
                "Expected DLA() (the midpoint rule with alpha = 1/2 and the point constraint) "
                "or a Composition of it for a joint tree such as Bicycle; got another method "
                "among the stages."
            )
    return np.ascontiguousarray(rows[:, 5], dtype=float)


class TreeRun(Run):
    """Steps a joint-tree system (``system.joint_tree(module)``, ``system.state(**ic)``)."""

    state_names = ("q", "v", "lam", "clock")

    def __init__(self, system, stage_rows, dt, backend, newton_tol, max_newton,
                 initial_conditions):
        self.fractions = tree_fractions(stage_rows)
        self.system = system
        self.dt = float(dt)
        self.newton_tol = float(newton_tol)
        self.max_newton = int(max_newton)
        q, v = system.state(**initial_conditions)
        self.kernel, self.backend = _backend.choose("multibody", backend)
        self.tree = system.joint_tree(self.kernel)
        self.drives = system.joint_drives(self.kernel)
        self.clock = np.zeros(2)  # (t, the motors' work)
        self.q = np.array(q, dtype=float)
        self.v = np.array(v, dtype=float)
        self.lam = np.zeros(system.tree.m)

    def _initial_frame(self):
        return self.system.observables({"q": self.q[None].copy(), "v": self.v[None].copy(),
                                         "work": self.clock[1:2].copy()})

    def _allocate(self, n_saved):
        n = self.q.size
        return {"q": np.empty((n_saved, n)), "v": np.empty((n_saved, n)),
                "work": np.empty(n_saved)}

    def _loop(self, n_steps, save_every, saved, info):
        return self.kernel.tree_run(self.tree, self.q, self.v, self.lam, self.fractions,
                                    self.dt, n_steps, save_every, saved["q"], saved["v"], info,
                                    self.newton_tol, self.max_newton, self.drives, self.clock,
                                    saved["work"])

    def _frames(self, saved, count):
        return self.system.observables({"q": saved["q"][:count], "v": saved["v"][:count],
                                         "work": saved["work"][:count]})
