r"""Mechanical systems on ``R^n`` with linear nonholonomic constraints.

The Lagrangian is ``L(q, v) = 1/2 v . M v - V(q)`` with a constant symmetric positive-definite
mass matrix ``M``, and the constraints are ``mu(q) v = 0`` with ``mu(q)`` an ``r x n`` matrix of
full rank ``r < n``. The Lagrange-d'Alembert principle gives the nonholonomic equations::

    M dv/dt = -grad V(q) + mu(q)^T lambda,     mu(q) v = 0,     dq/dt = v.

Differentiating the constraint, ``mu dv/dt + (Dmu[v]) v = 0`` with
``(Dmu[v])_{ai} = sum_j d mu_{ai}/dq_j v_j``, fixes the multipliers::

    lambda = C^-1 (mu M^-1 grad V - (Dmu[v]) v),     C = mu M^-1 mu^T,

(``C`` is invertible exactly when ``mu`` has full rank: the system is regular). The constraint
forces do no work, so the energy ``E = 1/2 v . M v + V(q)`` is conserved.

Every system of :mod:`nhphys.systems` that the Newmark and DLA integrators accept exposes such a
description in coordinates, a *coordinate model* (:class:`nhphys.twins.models.CoordinateModel`),
as its ``coordinates`` attribute; the built-in systems share :class:`CoordinateSystem`. A
:class:`ConstrainedMechanicalSystem` is a coordinate model made of a user's Python functions
(and its own ``coordinates``): it steps on the Python twins, and its runs say so
(``backend == "python"``).
"""

import numpy as np

from nhphys._validation import as_float_array
from nhphys.twins.models import CoordinateModel

# Relative size of |mu v| accepted in an initial velocity (the integrators keep it at round-off).
CONSTRAINT_TOL = 1e-12


def check_mass_matrix(value, name="mass_matrix"):
    """A symmetric positive-definite (n, n) matrix, with a message naming what is wrong."""
    M = as_float_array(value, name)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"Expected `{name}` to be a square (n, n) matrix, got shape {M.shape}.")
    scale = max(1.0, float(np.max(np.abs(M))))
    asym = float(np.max(np.abs(M - M.T)))
    if asym > 1e-12 * scale:
        raise ValueError(f"Expected `{name}` to be symmetric, got asymmetry {asym:.3g}.")
    M = 0.5 * (M + M.T)
    eig = np.linalg.eigvalsh(M)
    if eig[0] <= 1e-14 * max(abs(eig[-1]), 1e-300):
        kind = "singular" if abs(eig[0]) <= 1e-14 * max(abs(eig[-1]), 1e-300) else "indefinite"
        raise ValueError(
            f"Expected `{name}` to be positive definite, got a {kind} matrix with eigenvalues "
            f"{np.array2string(eig, precision=6)}."
        )
    return M


def _check_callable(f, name):
    if not callable(f):
        raise TypeError(f"Expected `{name}` to be callable, got {f!r}.")
    return f


def initial_coordinates(model, q0=None, v0=None, check_functions=None):
    """Validated ``(q0, v0)`` (each (n,)) of a coordinate ``model``: finite, of the model's
    shape, and ``v0`` on the constraint, ``mu(q0) v0 = 0`` (to 1e-12 relative; the message
    says by how much it is not). ``check_functions(q0)``, when given, runs before the
    constraint is evaluated."""
    if q0 is None or v0 is None:
        raise ValueError("Expected the initial conditions `q0` and `v0`.")
    q0 = as_float_array(q0, "q0")
    v0 = as_float_array(v0, "v0")
    for arr, nm in ((q0, "q0"), (v0, "v0")):
        if arr.shape != (model.n,):
            raise ValueError(f"Expected `{nm}` to have shape ({model.n},), got {arr.shape}.")
    if check_functions is not None:
        check_functions(q0)
    mu = np.asarray(model.constraint_matrix(q0), dtype=float)
    residual = mu @ v0
    scale = max(1.0, float(np.linalg.norm(v0))) * max(1.0, float(np.max(np.abs(mu))))
    if np.max(np.abs(residual)) > CONSTRAINT_TOL * scale:
        raise ValueError(
            f"Expected `v0` to satisfy the constraint mu(q0) v0 = 0, got mu(q0) v0 = "
            f"{np.array2string(residual, precision=3)}."
        )
    return q0, v0


class CoordinateSystem:
    """What the systems described by a coordinate model share.

    A subclass sets ``coordinates`` (a :class:`~nhphys.twins.models.CoordinateModel`) and
    implements ``coordinates_from_conditions(**initial_conditions) -> (q0, v0)`` and
    ``observables(saved)``. It gets the continuous equations for
    :class:`~nhphys.integrators.Reference` and the run of
    :class:`~nhphys.integrators.Retraction` when its model has a description on a Lie group.

    A system of one rigid body (its model has a ``body_frame``) takes force elements
    (:meth:`_set_forces`): ``forces`` is then their validated tuple, the runs apply them as
    generalized forces (:class:`nhphys.twins.models.BodyForces`), ``energy`` includes the
    potentials of springs and fields and the trajectory's ``work`` the work of the others.
    """

    group = "R^n"  # the configuration group the retraction integrator would step on
    forces = ()  # force elements (nhphys.forces), validated
    reference_times = True  # reference_unpack takes the states' times (scheduled forces)
    _placement = (np.eye(3), np.zeros(3))  # the plane's axes and origin in space
    _normal_force = 0.0  # N of rolling resistance

    # -- force elements ----------------------------------------------------------------------
    def _set_forces(self, forces, normal_force, placement=None, rolls=True, motor_axis=None):
        """Validate and keep the force elements of the body.

        ``normal_force``: ``N`` of rolling resistance; ``placement``: ``(frame (3, 3),
        origin (3,))`` of the plane in space (default: the plane's coordinates are space's);
        ``rolls=False`` refuses rolling resistance (a body whose angular velocity is along the
        plane's normal: it would do nothing); ``motor_axis`` (3,), when given, the only axis a
        motor may have (up to sign).
        """
        from nhphys.forces import Motor, RollingResistance, check_forces

        forces = check_forces(forces)
        name = type(self).__name__
        for element in forces:
            if isinstance(element, RollingResistance) and not rolls:
                raise ValueError(
                    f"RollingResistance: a {name} does not roll (it turns about the plane's "
                    "normal only), so rolling resistance would do nothing; use LinearDrag or "
                    "AngularDamping."
                )
            if isinstance(element, Motor) and motor_axis is not None and not np.allclose(
                    np.abs(element.axis @ motor_axis), 1.0, rtol=0, atol=1e-12):
                raise ValueError(
                    f"Motor: on a {name} a motor drives about the axis "
                    f"{np.asarray(motor_axis).tolist()}, got axis {element.axis.tolist()}."
                )
        if placement is not None:
            frame, origin = placement
            frame = np.array(frame, dtype=float)
            origin = np.array(origin, dtype=float)
            if frame.shape != (3, 3) or origin.shape != (3,) or not np.allclose(
                    frame.T @ frame, np.eye(3), atol=1e-12) or np.linalg.det(frame) < 0:
                raise ValueError("Expected `placement` to be (frame (3, 3) rotation, origin (3,)).")
            self._placement = (frame, origin)
        self.forces = forces
        self._normal_force = float(normal_force)
        self._twin_forces = None

    def body_forces(self, model, backend):
        """The :class:`~nhphys.twins.models.BodyForces` of the force elements for ``model``
        (the twin or the compiled model) on ``backend`` (``"python"`` or ``"cython"``), or
        None without force elements."""
        if not self.forces:
            return None
        from nhphys import _backend
        from nhphys.forces import Motor, build_force_set

        elements = _backend.choose("forces", backend)[0]
        models = _backend.choose("models", backend)[0]
        body = build_force_set([e for e in self.forces if not isinstance(e, Motor)], elements)
        motors = build_force_set([e for e in self.forces if isinstance(e, Motor)], elements)
        frame, origin = self._placement
        return models.BodyForces(model, body, motors, frame, origin, self._normal_force)

    def force_potential(self, q):
        """The potential energy of the springs and fields at coordinates (k, n) -> (k,)."""
        q = np.atleast_2d(q)
        if not any(element.potential for element in self.forces):
            return np.zeros(len(q))
        if getattr(self, "_twin_forces", None) is None:
            self._twin_forces = self.body_forces(self.coordinates, "python")
        return np.array([self._twin_forces.potential(qi) for qi in q])

    def _energy_and_work(self, q, v, saved):
        """``energy`` (kinetic, the model's and the elements' potentials) and ``work``."""
        energy = self.coordinates.energy(q, v) + self.force_potential(q)
        work = saved.get("work")
        work = np.zeros(len(q)) if work is None else np.asarray(work, dtype=float)
        return energy, work

    def start_retraction(self, integrator, dt, backend, **initial_conditions):
        """The run of :class:`~nhphys.integrators.Retraction` on ``SE(2) x R^k`` (models with
        ``group_inertia``); a ``TypeError`` for systems on ``R^n`` only."""
        from nhphys.integrators.se2 import SE2RetractionRun

        model = self.coordinates
        if model.group_inertia is None:
            raise TypeError(
                f"Expected a system on a Lie group for the Retraction integrator, got {self!r}; "
                "use nhphys.integrators.Newmark, DLA or Reference."
            )
        q0, v0 = self.coordinates_from_conditions(**initial_conditions)
        return SE2RetractionRun(self, model, q0, v0, dt, integrator, backend)

    # -- the continuous flow as a first-order ODE, for `Reference` ---------------------------
    def reference_state(self, **initial_conditions):
        """``(q0, v0, W)`` as one flat state (2 n + 1,): ``W`` the work of the force elements,
        0 at the start."""
        q0, v0 = self.coordinates_from_conditions(**initial_conditions)
        self._reference_forces = self.body_forces(self.coordinates, "python")
        return np.concatenate([q0, v0, [0.0]])

    def reference_rhs(self, t, state):
        """``d(q, v, W)/dt`` of the continuous equations: ``M dv/dt = -grad V + Q + mu^T
        lambda`` with the generalized force ``Q = Q_c + Q_a(t) - C v`` of the force elements,
        and ``dW/dt = (Q_a - C v) . v`` (the power of the elements that are not potentials)."""
        cs = self.coordinates
        n = cs.n
        q, v = state[:n], state[n:2 * n]
        forces = getattr(self, "_reference_forces", None)
        if forces is None or forces.empty:
            return np.concatenate([v, cs.acceleration(q, v), [0.0]])
        Qc, Qa, C = forces.terms(t, q, v)
        Cv = C @ v
        return np.concatenate([v, cs.acceleration(q, v, Qc + Qa - Cv), [(Qa - Cv) @ v]])

    def reference_unpack(self, states, times=None):
        """The argument of ``observables`` for flat states (k, 2 n + 1): ``{"q", "v",
        "work"}`` (``times`` are not needed)."""
        n = self.coordinates.n
        return {"q": states[:, :n], "v": states[:, n:2 * n], "work": states[:, 2 * n]}


class ConstrainedMechanicalSystem(CoordinateModel, CoordinateSystem):
    """``L = 1/2 v.Mv - V(q)`` on ``R^n`` with constraints ``mu(q) v = 0``.

    Parameters
    ----------
    mass_matrix : array_like, shape (n, n)
        Constant, symmetric positive definite.
    potential : callable
        ``V(q)``: (n,) -> float.
    grad_potential : callable
        ``grad V(q)``: (n,) -> (n,).
    constraint_matrix : callable
        ``mu(q)``: (n,) -> (r, n), full rank ``r < n``.
    constraint_matrix_derivative : callable
        ``q -> D`` with ``D[a, i, j] = d mu_{ai} / d q_j``, shape (r, n, n).
    hessian_potential : callable, optional
        ``q -> Hess V(q)``, (n, n). Only the Newton iterations of the implicit integrators use
        it; without it they use central differences of ``grad_potential`` (this changes the
        convergence rate of Newton, not its solution).
    name : str, optional
        Shown in ``repr``.

    Notes
    -----
    Shapes and rank are checked when a simulation starts (at the initial ``q``), before any
    step. It is a coordinate model (:class:`nhphys.twins.models.CoordinateModel`) of Python
    callables, so it steps on the Python twins whatever the backend, and its runs say so.

    Examples
    --------
    The nonholonomic particle ``dz = y dx`` in a harmonic well:

    >>> import numpy as np, nhphys
    >>> sys = nhphys.systems.ConstrainedMechanicalSystem(
    ...     np.eye(3), lambda q: 0.5 * q @ q, lambda q: q,
    ...     lambda q: np.array([[-q[1], 0.0, 1.0]]),
    ...     lambda q: np.array([[[0, -1.0, 0], [0, 0, 0], [0, 0, 0]]]))
    >>> traj = nhphys.simulate(sys, 1.0, 0.01, integrator=nhphys.integrators.Newmark(),
    ...                        q0=[1.0, 0.5, 0.0], v0=[0.0, 1.0, 0.0])
    >>> bool(traj.constraint_residual.max() < 1e-13)
    True
    """

    def __init__(self, mass_matrix, potential, grad_potential, constraint_matrix,
                 constraint_matrix_derivative, hessian_potential=None, name=None):
        # r, the number of constraints, is known after check_functions()
        super().__init__(check_mass_matrix(mass_matrix), None)
        self._potential = _check_callable(potential, "potential")
        self._grad = _check_callable(grad_potential, "grad_potential")
        self._mu = _check_callable(constraint_matrix, "constraint_matrix")
        self._dmu = _check_callable(constraint_matrix_derivative,
                                    "constraint_matrix_derivative")
        self._hessian = None if hessian_potential is None else _check_callable(
            hessian_potential, "hessian_potential"
        )
        self.name = name or "ConstrainedMechanicalSystem"

    def __repr__(self):
        return f"{self.name}(n={self.n})"

    # -- the model's functions: the user's ---------------------------------------------------
    def potential(self, q):
        return self._potential(q)

    def grad_potential(self, q):
        return np.asarray(self._grad(q), dtype=float)

    def constraint_matrix(self, q):
        return np.asarray(self._mu(q), dtype=float)

    def constraint_matrix_derivative(self, q):
        return np.asarray(self._dmu(q), dtype=float)

    # -- checks ------------------------------------------------------------------------------
    def check_functions(self, q):
        """Evaluate every function at ``q`` and check shapes, finiteness and rank."""
        n = self.n
        g = as_float_array(self._grad(q), "grad_potential(q0)")
        if g.shape != (n,):
            raise ValueError(f"Expected `grad_potential(q0)` to have shape ({n},), got {g.shape}.")
        V = np.asarray(self._potential(q), dtype=float)
        if V.shape != () or not np.isfinite(V):
            raise ValueError(f"Expected `potential(q0)` to be a finite number, got {V!r}.")
        mu = as_float_array(self._mu(q), "constraint_matrix(q0)")
        if mu.ndim != 2 or mu.shape[1] != n or not 1 <= mu.shape[0] < n:
            raise ValueError(
                f"Expected `constraint_matrix(q0)` to have shape (r, {n}) with 1 <= r < {n}, "
                f"got {mu.shape}."
            )
        r = mu.shape[0]
        sv = np.linalg.svd(mu, compute_uv=False)
        if sv[-1] <= 1e-10 * sv[0]:
            raise ValueError(
                f"Expected `constraint_matrix(q0)` to have full rank {r}, got singular values "
                f"{np.array2string(sv, precision=6)}."
            )
        dmu = as_float_array(self._dmu(q),
                             "constraint_matrix_derivative(q0)")
        if dmu.shape != (r, n, n):
            raise ValueError(
                f"Expected `constraint_matrix_derivative(q0)` to have shape ({r}, {n}, {n}), "
                f"got {dmu.shape}."
            )
        if self._hessian is not None:
            H = as_float_array(self._hessian(q), "hessian_potential(q0)")
            if H.shape != (n, n):
                raise ValueError(
                    f"Expected `hessian_potential(q0)` to have shape ({n}, {n}), got {H.shape}."
                )
        self.r = r
        return r

    # -- the continuous model ----------------------------------------------------------------
    def hessian_potential(self, q):
        """``Hess V(q)`` (n, n): the given function or central differences of the gradient."""
        if self._hessian is not None:
            return np.asarray(self._hessian(q), dtype=float)
        q = np.asarray(q, dtype=float)
        H = np.empty((self.n, self.n))
        for j in range(self.n):
            d = np.zeros(self.n)
            d[j] = 1e-6 * max(1.0, abs(q[j]))
            H[:, j] = (np.asarray(self.grad_potential(q + d)) - np.asarray(
                self.grad_potential(q - d))) / (2 * d[j])
        return 0.5 * (H + H.T)

    # -- initial conditions ------------------------------------------------------------------
    def initial_coordinates(self, q0=None, v0=None):
        """Validated ``(q0, v0)``; ``v0`` must satisfy ``mu(q0) v0 = 0`` (to 1e-12 relative)."""
        return initial_coordinates(self, q0, v0, self.check_functions)

    # -- the same system, as its own coordinate description ------------------------------------
    @property
    def coordinates(self):
        return self

    def coordinates_from_conditions(self, **initial_conditions):
        """``(q0, v0)`` from a system's own initial-condition keywords."""
        return self.initial_coordinates(**initial_conditions)
