"""Retraction (Lie-group variational) integrators.

``Retraction(map="exp" | "cayley")`` is the constraint-adapted discrete Lagrange-d'Alembert
integrator: ``R_{k+1} = R_k tau(h Omega_k)`` with ``Omega_k`` in the constraint space, the
momentum carried between steps restricted to its dual. Second order, symmetric, constraint exact
at every step. ``LiePoisson(map=...)`` is the same construction without the constraint (the
variational integrator of the free rigid body), the contrast of the seed paper's Fig. 2.
The derivation is in :mod:`nhphys.twins.suslov`.

Which run a system gets is decided by its configuration group (``system.group``):
``"SO(3)"`` (a body about a fixed point, :class:`FixedPointRun`) or
``"SO(3) x R^3"`` (a rolling body, :class:`nhphys.integrators.rolling.RollingRun`); a system on
another group may build its own run (``system.start_retraction``).
"""

from dataclasses import dataclass, field

import numpy as np

from nhphys import _backend
from nhphys._validation import as_rotation, as_vector3
from nhphys.integrators.coefficients import ORDERS, composition
from nhphys.integrators.run import Run, check_newton_options
from nhphys.lie.retraction import get_retraction

FIXED_POINT = "SO(3)"  # the configuration group of a rigid body about a fixed point
ROLLING = "SO(3) x R^3"  # of a free rigid body (orientation, centre of mass) in rolling contact


class FixedPointRun(Run):
    """State and stepping of a rigid body about a fixed point (see :mod:`nhphys.twins.suslov`).

    Parameters
    ----------
    system : object
        The model: ``inertia`` (3, 3) and ``observables(saved)`` (see
        :class:`nhphys.systems.Suslov`).
    basis : ndarray, shape (3, m)
        Orthonormal basis of the allowed velocities (m = 2 constrained, 3 free).
    R0 : ndarray, shape (3, 3)
    omega0 : ndarray, shape (3,)
        Initial velocity, in the span of ``basis``.
    dt : float
    map_code : int
        The retraction's code (``get_retraction(name).code``: 0 exp, 1 Cayley).
    backend : {"auto", "cython", "python"}
    newton_tol : float
    max_newton : int
    substeps : sequence of float
        Fractions of ``dt`` taken by the sub-steps of one step (see ``Retraction.substeps``).

    Attributes
    ----------
    R : ndarray, shape (3, 3)
    p : ndarray, shape (m,)
        The ``d*`` momentum ``basis^T I Omega``.
    y : ndarray, shape (m,)
        The last step in ``basis`` coordinates (Newton's warm start).
    backend : {"cython", "python"}
        What steps.
    forces : ForceSet or None
        The torques of the system's force elements (:mod:`nhphys.twins.suslov`, "Forces").
    clock : ndarray, shape (2,)
        The time and the work of the force elements.
    """

    state_names = ("R", "p", "y", "clock")

    def __init__(self, system, basis, R0, omega0, dt, map_code, backend, newton_tol,
                 max_newton, substeps=(1.0,)):
        from nhphys.integrators.newmark import _callables_step_on_twin

        self.system = system
        backend = _callables_step_on_twin(self, system, backend)
        self.kernel, self.backend = _backend.choose("suslov", backend)
        make = getattr(system, "force_set", None)
        self.forces = None if make is None else make(self.backend)
        self.pivot = np.array(getattr(system, "pivot", np.zeros(3)), dtype=float)
        self.clock = np.zeros(2)  # the time and the work of the force elements
        self.inertia = np.ascontiguousarray(system.inertia, dtype=float)
        self.basis = np.ascontiguousarray(basis, dtype=float)
        self.reduced_inertia = self.basis.T @ self.inertia @ self.basis
        self.R = np.array(R0, dtype=float, order="C")
        self.p = self.basis.T @ self.inertia @ omega0
        self.y = dt * np.linalg.solve(self.reduced_inertia, self.p)  # Newton's first guess
        self.dt = dt
        self.map_code = map_code
        self.substeps = np.array(substeps, dtype=float)
        self.newton_tol = newton_tol
        self.max_newton = max_newton

    def _saved(self, R, p, work):
        omega = np.linalg.solve(self.reduced_inertia, p.T).T @ self.basis.T
        return self.system.observables({"R": R, "omega": omega, "work": work})

    def _initial_frame(self):
        return self._saved(self.R[None].copy(), self.p[None].copy(), self.clock[1:].copy())

    def _allocate(self, n_saved):
        return (np.empty((n_saved, 3, 3)), np.empty((n_saved, self.basis.shape[1])),
                np.empty(n_saved))

    def _loop(self, n_steps, save_every, saved, info):
        out_R, out_p, out_work = saved
        return self.kernel.retraction_run(
            self.inertia, self.basis, self.R, self.p, self.y, self.dt, self.substeps,
            n_steps, save_every, self.map_code, self.newton_tol, self.max_newton, out_R,
            out_p, info, forces=self.forces, pivot=self.pivot, clock=self.clock,
            out_work=out_work,
        )

    def _frames(self, saved, count):
        out_R, out_p, out_work = saved
        return self._saved(out_R[:count], out_p[:count], out_work[:count])


def check_initial_conditions(system, initial_conditions):
    """Refuse initial conditions ``system`` does not know (a ``TypeError`` listing its own)."""
    known = getattr(system, "start_keywords", None)
    unknown = sorted(set(initial_conditions) - set(known or initial_conditions))
    if unknown:
        raise TypeError(
            f"Unexpected initial condition(s) {', '.join(map(repr, unknown))} for "
            f"{type(system).__name__}; expected some of {', '.join(known)}."
        )


@dataclass(frozen=True)
class Retraction:
    """Constraint-adapted retraction integrator.

    Parameters
    ----------
    map : {"exp", "cayley"}
        The retraction ``tau`` that advances the orientation.
    newton_tol : float
        In (0, 1e-3): a step's Newton solve ends when its last correction is below
        ``newton_tol`` relative (or its residuals are at round-off; see
        :mod:`nhphys.twins.newton` and, for each system's floors, its twin).
    max_newton : int
        Newton corrections before a step is declared failed (any integer type, >= 1).
    order : {2, 4, 6, 8}
        2: the symmetric second-order scheme. 4, 6, 8: its symmetric composition of that order
        from :mod:`nhphys.integrators.coefficients`: the triple jump (3 sub-steps,
        ``g1 h, (1 - 2 g1) h, g1 h``, ``g1 = 1/(2 - 2^(1/3))``; Yoshida, Phys. Lett. A 150
        (1990) 262), and Kahan and Li's ``s9odr6a`` (9 sub-steps) and ``s17odr8a`` (17
        sub-steps; W. Kahan and R.-C. Li, Math. Comp. 66 (1997) 1089), at 3, 9 and 17 times the
        cost of a step. For ``Suslov`` (and ``LiePoisson``) and ``RollingBody``. Every sub-step
        is a step of the second-order scheme, so the constraints hold and the rotation is
        orthogonal after each one; a step is committed only when all its sub-steps succeeded.
        A sliding contact (``RollingBody(lift_off=True, mu=...)``) takes Suzuki's five-stage
        table of order 4 in place of the triple jump (5 sub-steps;
        :data:`nhphys.integrators.coefficients.SLIDING_COMPOSITIONS`).
    extrapolate, globalize : bool
        ``RollingBody`` only (other systems ignore them): start each step's Newton solve from
        the solutions of the last steps extrapolated, and if the solve from the warm start
        fails, solve again with step halving. They change how the step is found, not the step
        (:mod:`nhphys.twins.rolling`, "Finding the step"); both ``False`` is the former
        iteration, bit for bit. Shown in the repr only when not the default.
    """

    map: str = "exp"
    newton_tol: float = 1e-12
    max_newton: int = 30
    order: int = 2
    extrapolate: bool = field(default=True, repr=False)
    globalize: bool = field(default=True, repr=False)

    def __repr__(self):
        text = (f"{type(self).__name__}(map={self.map!r}, newton_tol={self.newton_tol!r}, "
                f"max_newton={self.max_newton!r}, order={self.order!r}")
        for name in ("extrapolate", "globalize"):  # the names' defaults keep their repr
            if getattr(self, name) is not True:
                text += f", {name}={getattr(self, name)!r}"
        return text + ")"

    def __post_init__(self):
        get_retraction(self.map)
        newton_tol, max_newton = check_newton_options(self.newton_tol, self.max_newton)
        object.__setattr__(self, "newton_tol", newton_tol)  # plain float and int from here on
        object.__setattr__(self, "max_newton", max_newton)
        composition(self.order)  # a ValueError listing the orders for any other
        if type(self.order) is not int:  # e.g. numpy.int64(6) or 6.0: a plain int from here on
            object.__setattr__(self, "order", int(self.order))
        for name in ("extrapolate", "globalize"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"Expected `{name}` to be True or False, got "
                                f"{getattr(self, name)!r}.")
            object.__setattr__(self, name, bool(getattr(self, name)))

    @property
    def substeps(self):
        """Fractions of the step taken by each sub-step: (1,), or the composition's 3, 9 or 17
        (:data:`nhphys.integrators.coefficients.COMPOSITIONS`)."""
        return composition(self.order)

    def start(self, system, dt, backend, **initial_conditions):
        """The run of ``system`` from its initial conditions (chosen by ``system.group``)."""
        group = getattr(system, "group", None)
        if group == FIXED_POINT:
            check_initial_conditions(system, initial_conditions)
            return self._start_fixed_point(system, dt, backend, **initial_conditions)
        if group == ROLLING:
            from nhphys.integrators.rolling import start_rolling

            check_initial_conditions(system, initial_conditions)
            return start_rolling(self, system, dt, backend, **initial_conditions)
        if not hasattr(system, "start_retraction"):
            raise TypeError(f"Retraction does not apply to {type(system).__name__}.")
        if self.order != 2 and not getattr(system, "composable_retraction", False):
            raise ValueError(
                f"Retraction(order={self.order}) is not available for {type(system).__name__}; "
                f"use order=2 (orders {', '.join(map(str, ORDERS))} are available for Suslov, "
                "LiePoisson and RollingBody)."
            )
        return system.start_retraction(self, dt, backend, **initial_conditions)

    def _start_fixed_point(self, system, dt, backend, R0=None, omega0=None, momentum0=None):
        R0 = np.eye(3) if R0 is None else as_rotation(R0, "R0")
        omega = system.initial_omega(omega0=omega0, momentum0=momentum0)
        return FixedPointRun(
            system, system.constraint_basis, R0, omega, dt, get_retraction(self.map).code,
            backend, self.newton_tol, self.max_newton, self.substeps,
        )


@dataclass(frozen=True)
class LiePoisson(Retraction):
    """The same variational retraction integrator for the unconstrained rigid body.

    Applied to a constrained system about a fixed point it ignores the constraint (its residual
    is reported but not enforced): the initial velocity is ``I^-1 momentum0`` or ``omega0`` as
    given.
    """

    def start(self, system, dt, backend, **initial_conditions):
        if getattr(system, "group", None) != FIXED_POINT:
            raise TypeError(
                f"LiePoisson applies to a rigid body about a fixed point, not to "
                f"{type(system).__name__}."
            )
        check_initial_conditions(system, initial_conditions)
        return self._start_free(system, dt, backend, **initial_conditions)

    def _start_free(self, system, dt, backend, R0=None, omega0=None, momentum0=None):
        R0 = np.eye(3) if R0 is None else as_rotation(R0, "R0")
        if (omega0 is None) == (momentum0 is None):
            raise ValueError("Expected exactly one of `omega0` and `momentum0`.")
        if omega0 is not None:
            omega = as_vector3(omega0, "omega0")
        else:
            omega = np.linalg.inv(system.inertia) @ as_vector3(momentum0, "momentum0")
        return FixedPointRun(
            system, np.eye(3), R0, omega, dt, get_retraction(self.map).code, backend,
            self.newton_tol, self.max_newton, self.substeps,
        )
