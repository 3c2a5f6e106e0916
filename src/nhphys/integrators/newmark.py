"""The nonholonomic Newmark family ``F_h^{beta, beta', alpha}`` on ``R^n``.

``Newmark(beta, beta_prime, alpha, constraint_discretization)`` steps any system exposing a
:class:`~nhphys.systems.ConstrainedMechanicalSystem` as its ``coordinates`` (the knife edge, the
vertical disk, the contact oscillators, or a user's own). The derivation, including the
equations the seed paper leaves out (the explicit member in closed form, the adjoint, the DLA
coincidence), is in :mod:`nhphys.twins.newmark`.

* ``beta = beta'`` and ``alpha = 1/2``: symmetric, second order.
* ``beta = beta' = 0``, ``alpha = 0``: explicit (closed form), first order.
* ``Newmark(...).adjoint()`` is ``F^{beta', beta, 1 - alpha}``; ``Composition`` composes.
"""

import numbers
from dataclasses import dataclass

import numpy as np

from nhphys import _backend
from nhphys._validation import as_choice
from nhphys.integrators.run import Run, check_newton_options
from nhphys.twins.models import compiled_counterpart
from nhphys.twins.newton import INFO_EVALUATIONS

DISCRETIZATIONS = ("point", "average")
KINDS = {"newmark": 0, "dla_midpoint": 1, "dla_trapezoidal": 2}


def check_unit_interval(value, name, upper):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"Expected `{name}` to be a real number, got {value!r}.")
    if not (0.0 <= float(value) <= upper):
        raise ValueError(f"Expected `{name}` to be in [0, {upper:g}], got {value!r}.")
    return float(value)


class NonholonomicRun(Run):
    """State and stepping of the Newmark / DLA family (any composition of their steps).

    Parameters
    ----------
    system : object
        Has ``coordinates`` (a coordinate model: :class:`nhphys.twins.models.CoordinateModel`,
        a built-in one or a :class:`~nhphys.systems.ConstrainedMechanicalSystem`),
        ``coordinates_from_conditions(**initial_conditions) -> (q0, v0)`` and
        ``observables({"q": (k, n), "v": (k, n)})``.
    stages : ndarray, shape (s, 6)
        Rows ``(kind, discretisation, beta, beta', alpha, weight)``.
    dt : float
    backend : {"auto", "cython", "python"}
    newton_tol : float
    max_newton : int
    initial_conditions : dict
        The system's keywords (``q0``, ``v0``, or ``pose0``, ``velocity0``, ...).

    Attributes
    ----------
    q, v : ndarray, shape (n,)
        The state.
    lam : ndarray, shape (r,)
        The last step's multiplier (the next Newton guess).
    backend : {"cython", "python"}
        What steps: a built-in model runs in the compiled kernel (``nhphys_ext.newmark`` with
        the model's compiled class of ``nhphys_ext.models``) when it is built; any other model
        (Python callables) on the twin whatever was asked.
    newton_evaluations : int
        Residual evaluations of every Newton solve so far (the cost of the implicit steps).
    forces : BodyForces or None
        The system's force elements (:mod:`nhphys.twins.newmark`, "Forces").
    clock : ndarray, shape (2,)
        The time and the work of the force elements.
    """

    state_names = ("q", "v", "lam", "clock", "newton_evaluations")

    def __init__(self, system, stages, dt, backend, newton_tol, max_newton, initial_conditions):
        self.system = system
        model = system.coordinates
        q0, v0 = system.coordinates_from_conditions(**initial_conditions)
        self.q = np.array(q0, dtype=float)
        self.v = np.array(v0, dtype=float)
        self.lam = np.array(model.multiplier(self.q, self.v), dtype=float)
        backend = _callables_step_on_twin(self, system, backend)
        self.kernel, self.backend = _backend.choose("newmark", backend)
        self.model = model
        if self.backend == "cython":
            self.model = compiled_counterpart(model, _backend.kernel_module("models"))
            if self.model is None:  # a model of Python callables steps on the twin
                self.kernel, self.backend = _backend.choose("newmark", "python")
                self.model = model
        self.forces = _body_forces(system, self.model, self.backend)
        self.clock = np.zeros(2)  # the time and the work of the force elements
        self.stages = np.ascontiguousarray(stages, dtype=float)
        self.dt = dt
        self.newton_tol, self.max_newton = check_newton_options(newton_tol, max_newton)
        self.newton_evaluations = 0

    def _saved(self, q, v, work):
        return self.system.observables({"q": q, "v": v, "work": work})

    def _initial_frame(self):
        return self._saved(self.q[None].copy(), self.v[None].copy(), self.clock[1:].copy())

    def _allocate(self, n_saved):
        return (np.empty((n_saved, self.q.size)), np.empty((n_saved, self.q.size)),
                np.empty(n_saved))

    def _loop(self, n_steps, save_every, saved, info):
        out_q, out_v, out_work = saved
        # a user model's exception (or Ctrl-C) in the twin loop goes up as itself; Run.advance
        # then stops the run
        try:
            return self.kernel.nonholonomic_run(
                self.model, self.stages, self.q, self.v, self.lam, self.dt, n_steps,
                save_every, self.newton_tol, self.max_newton, out_q, out_v, info,
                forces=self.forces, clock=self.clock, out_work=out_work,
            )
        finally:
            self.newton_evaluations += int(info[INFO_EVALUATIONS])

    def _frames(self, saved, count):
        out_q, out_v, out_work = saved
        return self._saved(out_q[:count], out_v[:count], out_work[:count])


def _callables_step_on_twin(run, system, backend):
    """The backend of a run whose system may carry Python-callable force elements: those step
    on the twin whatever was asked (as a rolling body's do), and ``run.backend_note`` says so
    in ``meta["backend"]``."""
    from nhphys.forces import uses_callables

    if not uses_callables(getattr(system, "forces", ())):
        return backend
    run.backend_note = "a force element is a Python callable"
    return "python"


def _body_forces(system, model, backend):
    """The system's force elements for ``model`` on ``backend``, or None."""
    make = getattr(system, "body_forces", None)
    return None if make is None else make(model, backend)


class _Stepper:
    """What Newmark, DLA and Composition share: start a run from their stage rows."""

    def stage_rows(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def start(self, system, dt, backend, **initial_conditions):
        if hasattr(system, "joint_tree"):  # an articulated system: the tree's own run
            from nhphys.integrators.multibody import TreeRun

            return TreeRun(system, self.stage_rows(), dt, backend, self.newton_tol,
                           self.max_newton, initial_conditions)
        if not hasattr(system, "coordinates"):
            raise TypeError(
                f"Expected a system with a `coordinates` description on R^n (KnifeEdge, "
                f"VerticalDisk, ContactOscillator, RotorSleigh, ConstrainedMechanicalSystem), "
                f"got {system!r}."
            )
        return NonholonomicRun(system, self.stage_rows(), dt, backend, self.newton_tol,
                               self.max_newton, initial_conditions)

    def discrete_constraint(self, system, q0, q1, dt):
        """``Phi(q0, q1)`` of this method's constraint discretisation (single-stage methods).

        Shapes: ``q0``, ``q1`` (n,) or stacked (k, n) -> (k, r).
        """
        from nhphys.twins.newmark import discrete_constraint

        rows = self.stage_rows()
        if len(rows) != 1:
            raise ValueError("Expected a single-stage method: a composition has several.")
        _, disc, _, _, alpha, _ = rows[0]
        model = system.coordinates
        q0, q1 = np.atleast_2d(q0), np.atleast_2d(q1)
        return np.array([discrete_constraint(model, a, b, alpha, int(disc))
                         for a, b in zip(q0, q1)])


@dataclass(frozen=True)
class Newmark(_Stepper):
    """Nonholonomic Newmark method ``F_h^{beta, beta', alpha}``.

    Parameters
    ----------
    beta, beta_prime : float
        In [0, 1/2]: the weight of the end-point acceleration in the forward and the backward
        discrete exponential map (classical Newmark ``gamma = 1/2 + beta - beta'``).
    alpha : float
        In [0, 1]: where the discrete constraint is evaluated between ``q_k`` and ``q_{k+1}``.
    constraint_discretization : {"point", "average"}
        ``mu(q_alpha) (q_{k+1} - q_k) = 0`` or ``((1 - alpha) mu_k + alpha mu_{k+1})
        (q_{k+1} - q_k) = 0``.
    newton_tol, max_newton :
        The Newton rule's relative size of a last correction (``newton_tol`` in (0, 1e-3);
        see :mod:`nhphys.twins.newmark`, "The Newton problems") and its corrections before a
        step fails (any integer type).

    Examples
    --------
    >>> import nhphys
    >>> explicit = nhphys.integrators.Newmark(0.0, 0.0, 0.0)        # order 1, closed form
    >>> adjoint = explicit.adjoint()                                 # F^{0,0,1}
    >>> (adjoint.beta, adjoint.beta_prime, adjoint.alpha)
    (0.0, 0.0, 1.0)
    """

    beta: float = 0.0
    beta_prime: float = 0.0
    alpha: float = 0.5
    constraint_discretization: str = "point"
    newton_tol: float = 1e-12
    max_newton: int = 30

    def __post_init__(self):
        object.__setattr__(self, "beta", check_unit_interval(self.beta, "beta", 0.5))
        object.__setattr__(self, "beta_prime",
                           check_unit_interval(self.beta_prime, "beta_prime", 0.5))
        object.__setattr__(self, "alpha", check_unit_interval(self.alpha, "alpha", 1.0))
        as_choice(self.constraint_discretization, "constraint_discretization", DISCRETIZATIONS)
        tol, iters = check_newton_options(self.newton_tol, self.max_newton)
        object.__setattr__(self, "newton_tol", tol)
        object.__setattr__(self, "max_newton", iters)

    @property
    def explicit(self):
        """True for ``beta = beta' = alpha = 0``, stepped in closed form."""
        return self.beta == 0.0 and self.beta_prime == 0.0 and self.alpha == 0.0

    @property
    def symmetric(self):
        """True when the method is its own adjoint (``beta = beta'``, ``alpha = 1/2``)."""
        return self.beta == self.beta_prime and self.alpha == 0.5

    @property
    def gamma(self):
        """The classical Newmark ``gamma = (1 + 2 beta - 2 beta')/2`` of this member."""
        return 0.5 + self.beta - self.beta_prime

    def adjoint(self):
        """``(F_h^{beta, beta', alpha})* = F_h^{beta', beta, 1 - alpha}``."""
        return Newmark(self.beta_prime, self.beta, 1.0 - self.alpha,
                       self.constraint_discretization, self.newton_tol, self.max_newton)

    def stage_rows(self):
        disc = DISCRETIZATIONS.index(self.constraint_discretization)
        return np.array([[KINDS["newmark"], disc, self.beta, self.beta_prime, self.alpha, 1.0]])
