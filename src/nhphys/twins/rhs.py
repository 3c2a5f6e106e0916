"""Continuous right-hand sides as callables ``field(t, y) -> dy/dt``, with the projection back
onto the state's manifold: the twin of ``nhphys_ext.rhs`` (same names, arguments, results).

These are what :class:`nhphys.integrators.Adaptive` hands to an adaptive Runge-Kutta solver:
the kernel's copy is compiled (one C call per evaluation), this one is the readable
specification, checked against the kernel and against the system's own ``reference_rhs``.

Suslov (:class:`SuslovField`)
-----------------------------
State ``y`` (12,): ``R.ravel()`` (row-major, body to space) then ``Omega`` (and the work
``W`` with force elements, below: (13,)). With the inertia
``I``, the unit axis ``a``, ``Ia = I^-1 a`` and ``g = I^-1 ((I Omega) x Omega)``::

    dR/dt = R hat(Omega)                        (row r of R: r x Omega)
    dOmega/dt = g - (a . g) / (a . Ia) Ia       (I dOmega/dt = (I Omega) x Omega + lambda a)

which is ``Suslov.reference_rhs`` without force elements (and without its work entry).

Force elements (``SuslovField(..., forces, pivot)``, built-in elements only): the torque about
the fixed point ``tau = tau_0 + tau_a(t) - D Omega`` (springs and applied torques, moments of
forces at body points, damping; ``Suslov.torques``) joins ``(I Omega) x Omega`` in ``g``, and
the state gains the work ``W``, ``dW/dt = (tau_a - D Omega) . Omega`` (13,): the equations of
``Suslov.reference_rhs`` with forces.

The projection (:meth:`SuslovField.project`, in place) puts a state back on the constraint
manifold ``SO(3) x {Omega : a . Omega = 0}``:

* ``R`` to the closest rotation in the Frobenius norm, the orthogonal factor ``U`` of its
  polar decomposition ``R = U P`` (``P`` symmetric positive definite; ``U = W V^T`` from the
  SVD ``R = W S V^T``), computed by Newton's iteration ``X <- (X + X^-T) / 2`` from ``X = R``
  (Higham, Functions of Matrices, 8.3; quadratic, two or three iterations near ``SO(3)``); for
  a state near ``SO(3)`` the determinant is +1;
* ``Omega`` to the constraint plane along ``I^-1 a``:
  ``Omega <- Omega - (a . Omega) / (a . Ia) Ia``, the orthogonal projection in the
  kinetic-energy metric ``<u, v>_I = u . I v`` (``I^-1 a`` is ``I``-orthogonal to the plane
  ``a . v = 0``). It is the closest allowed velocity in that metric, so it changes the kinetic
  energy by second order in the violation only.

Both move the state by the size of its distance from the manifold, which for a solution of
the ODE computed to a tolerance is itself of the size of the global error: projecting does not
lower the order (Hairer, Lubich & Wanner, Geometric Numerical Integration, 2nd ed., IV.4,
Theorem 4.2).

Holding the energy
------------------
With a finite ``energy_level`` (``Adaptive(conserve_energy=True)`` sets it to the start's),
the projection then moves the velocities onto that level of a first integral ``E`` that is
quadratic in them: the energy less the work ``E - W`` (kinetic energy, springs' energy, and
gravity's for a rolling body; ``W`` the work of the other elements and of a moving ground)
(:class:`nhphys.twins.rolling.RollingField`). It steps along the gradient of ``E`` in the
kinetic-energy metric, ``d = M^-1 g`` (``g`` the Euclidean gradient in the velocities, ``M``
the metric): ``E(v + mu d) = E + a (mu + mu^2 / 2)`` with ``a = g . d`` exactly, since ``E`` is
quadratic with Hessian ``M``, so the level is reached in one step, at the root of
:func:`energy_correction`. For Suslov ``d = Omega``: the correction scales ``Omega``, which
keeps ``a . Omega = 0``. Like the other projections it moves the state by the distance to the
level set, which the exact flow keeps, so of the size of the global error: the order is kept
(Hairer, Lubich & Wanner, IV.4, projection onto first integrals), and the energy error no
longer grows with the run's length. Where the velocities cannot reach the level (at rest, or
where the least ``E`` over the velocities, ``E - a/2``, is above it) they are left alone for
that step and the field's ``energy_misses`` counts it; ``Adaptive`` warns.
"""

import numpy as np

from nhphys.twins import dop853
from nhphys.twins.so3 import polar_factor

SUSLOV_STATE = 12  # R (9, row-major) and Omega (3)


class SuslovField:
    """The Suslov right-hand side ``field(t, y)`` and its projection.

    Parameters
    ----------
    inertia : array_like, shape (3, 3)
        Symmetric positive definite inertia about the fixed point (body axes).
    axis : array_like, shape (3,)
        The constraint axis ``a`` (normalised here).
    forces : nhphys.twins.forces.ForceSet, optional
        Built-in force elements (no Python callables) about the fixed point (module
        docstring, "Force elements"); the state then carries their work ``W``: ``y`` (13,).
    pivot : array_like, shape (3,)
        The fixed point in space (where the springs' and forces' moments are taken).

    Attributes
    ----------
    size : int
        The state's length: 12, or 13 with force elements.
    evaluations : int
        Calls of the field so far.
    energy_level : float
        The level of ``E - W`` (:meth:`energy`) :meth:`project` holds (module docstring,
        "Holding the energy"), or NaN (the default): the energy is not projected.
    energy_misses : int
        Projections that could not reach the level (the top at rest).
    """

    def __init__(self, inertia, axis, forces=None, pivot=(0.0, 0.0, 0.0)):
        self.inertia = np.array(inertia, dtype=float).reshape(3, 3)
        self.inertia_inv = np.linalg.inv(self.inertia)
        a = np.array(axis, dtype=float).reshape(3)
        self.axis = a / np.linalg.norm(a)
        self.inertia_inv_axis = self.inertia_inv @ self.axis
        self.denominator = float(self.axis @ self.inertia_inv_axis)
        if forces is not None and forces.callables:
            raise ValueError("Expected built-in force elements: a Python callable needs "
                             "Reference().")
        self.forces = None if forces is None or forces.empty else forces
        self.pivot = np.array(pivot, dtype=float).reshape(3)
        self.size = SUSLOV_STATE + (self.forces is not None)
        self.evaluations = 0
        self.energy_level = float("nan")
        self.energy_misses = 0

    def __call__(self, t, y):
        """``dy/dt`` (12,) or (13,) at the state ``y`` and time ``t`` (scheduled forces; else
        unused)."""
        y = np.asarray(y, dtype=float)
        if y.shape != (self.size,):
            raise ValueError(f"Expected a state of shape ({self.size},), got {y.shape}.")
        self.evaluations += 1
        R = y[:9].reshape(3, 3)
        omega = y[9:12]
        torque = np.cross(self.inertia @ omega, omega)
        if self.forces is not None:
            tau_0, tau_a, D = self.torques(t, R)
            damped = D @ omega
            torque = torque + tau_0 - damped
        g = self.inertia_inv @ torque
        omega_dot = g - (self.axis @ g) / self.denominator * self.inertia_inv_axis
        rates = [np.cross(R, omega).ravel(), omega_dot]
        if self.forces is not None:
            rates.append([(tau_a - damped) @ omega])
        return np.concatenate(rates)

    def torques(self, t, R):
        """``(tau_0, tau_a, D)``: the force elements' torque about the fixed point (body frame)
        but the damping's (springs and applied), the applied part alone, and the damping
        matrix (the torque ``-D Omega``), as ``Suslov.torques`` makes them."""
        f, tau = np.zeros(3), np.zeros(3)
        self.forces.potential_wrench(R, self.pivot, f, tau)
        fa, tau_a = np.zeros(3), np.zeros(3)
        self.forces.applied_wrench(t, R, self.pivot, fa, tau_a)
        D = np.zeros((3, 3))
        self.forces.damping(R, np.array([0.0, 0.0, 1.0]), D)
        return tau + tau_a, tau_a, D

    def energy(self, y, t=0.0):
        """``E - W`` of the state ``y``: the kinetic energy ``Omega . I Omega / 2``, plus the
        springs' energy and less the work ``y[12]`` with force elements; the first integral
        :meth:`project` holds at :attr:`energy_level` (``t`` is unused)."""
        y = np.asarray(y, dtype=float)
        omega = y[9:12]
        energy = 0.5 * float(omega @ self.inertia @ omega)
        if self.forces is not None:
            energy += self.forces.potential(y[:9].reshape(3, 3), self.pivot) - y[12]
        return energy

    def project(self, y, t=0.0):
        """Put the state ``y`` back on the manifold, in place (module docstring), and, with a
        finite :attr:`energy_level`, onto that level of ``E - W`` (:func:`energy_correction`);
        ``t`` is unused.

        ``y`` must be a writable C-contiguous float64 array of shape ``(size,)`` (a
        ``ValueError`` otherwise), as for the kernel.
        """
        dop853.check_state(y, self.size)
        y[:9] = polar_factor(y[:9].reshape(3, 3)).ravel()  # the closest rotation
        omega = y[9:12]
        y[9:12] = omega - (self.axis @ omega) / self.denominator * self.inertia_inv_axis
        if self.energy_level == self.energy_level:  # not NaN: hold the energy
            # the gradient of the energy in the kinetic metric is Omega itself, and scaling
            # Omega keeps a . Omega = 0
            omega = y[9:12]
            kinetic = 0.5 * float(omega @ self.inertia @ omega)
            mu = energy_correction(self.energy(y) - self.energy_level, 2.0 * kinetic)
            if mu == 0.0 and self.energy(y) != self.energy_level:
                self.energy_misses += 1  # at rest: no scaling reaches the level
            y[9:12] += mu * y[9:12]

    def integrate(self, y, t0, t1, rtol, atol, h_abs, max_steps, project=True):
        """Advance ``y`` in place from ``t0`` to ``t1`` by DOP853, projecting every accepted
        step (:meth:`project`) unless ``project`` is False; see
        :func:`nhphys.twins.dop853.integrate` for the algorithm, the arguments and the returned
        ``(status, solver_code, h_next, steps)`` (status is always 0 here)."""
        dop853.check_state(y, self.size)
        return dop853.integrate(lambda t, state: (0, self(t, state)), y, t0, t1, rtol, atol,
                                h_abs, max_steps, _projection(self) if project else None)


class CoordinateField:
    """The right-hand side of a coordinate model (the knife edge, the vertical disk, the
    contact oscillator, the rotor sleigh) and its projection.

    State ``y`` (2 n + 1,): the coordinates ``q`` (n,), the velocities ``v`` (n,) and the
    work ``W`` of the force elements. With the model's mass matrix ``M``, constraint matrix
    ``mu(q)`` (r, n), its derivative ``Dmu`` and potential ``V``, and the force elements'
    generalized forces ``Q = Q_c + Q_a(t) - C(q) v`` (:class:`nhphys.twins.models.BodyForces`)::

        dq/dt = v
        M dv/dt = -grad V + Q + mu^T lambda,   mu dv/dt + (Dmu[v]) v = 0
        dW/dt = (Q_a - C v) . v

    the second line being the derivative of the constraint ``mu(q) v = 0`` along the motion,
    which fixes ``lambda = (mu M^-1 mu^T)^-1 (mu M^-1 (grad V - Q) - (Dmu[v]) v)``. This is
    ``reference_rhs`` of :class:`nhphys.systems.constrained.CoordinateSystem`; the gauge
    function ``S`` of the Lagrangian is a total derivative and does not enter.

    The projection (:meth:`project`, in place) moves ``v`` onto the constraint space at the
    state's own ``q``, along ``M^-1 mu^T``::

        v <- v - M^-1 mu^T (mu M^-1 mu^T)^-1 mu v

    the orthogonal projection in the kinetic-energy metric ``<u, w>_M = u . M w`` (the
    closest allowed velocity in that metric). The coordinates ``q`` are not projected: a
    nonholonomic constraint restricts velocities only. As for Suslov, the projection moves
    the state by its distance from the invariant manifold ``mu(q) v = 0``, which is of the
    size of the global error, so the order is kept.

    Parameters
    ----------
    model : nhphys.twins.models.CoordinateModel
    forces : nhphys.twins.models.BodyForces or None
        Built-in elements only (a Python callable element needs ``Reference``).

    Attributes
    ----------
    evaluations : int
        Calls of the field so far.
    """

    def __init__(self, model, forces=None):
        if forces is not None and (forces.body.callables or forces.motors.callables):
            raise ValueError("Expected built-in force elements: a Python callable needs "
                             "Reference().")
        self.model = model
        self.forces = None if forces is None or forces.empty else forces
        self.size = 2 * model.n + 1
        self.evaluations = 0

    def integrate(self, y, t0, t1, rtol, atol, h_abs, max_steps, project=True):
        """Advance ``y`` (2 n + 1,) in place from ``t0`` to ``t1`` by DOP853, projecting every
        accepted step (:meth:`project`) unless ``project`` is False; see
        :func:`nhphys.twins.dop853.integrate` for the algorithm, the arguments and the returned
        ``(status, solver_code, h_next, steps)``. A singular constraint matrix raises
        ``ValueError`` (the state is left at the last accepted step)."""
        dop853.check_state(y, self.size)
        try:
            return dop853.integrate(lambda t, state: (0, self(t, state)), y, t0, t1, rtol,
                                    atol, h_abs, max_steps,
                                    _projection(self) if project else None)
        except np.linalg.LinAlgError:
            raise ValueError("The constraint matrix is singular at this state "
                             "(mu M^-1 mu^T cannot be inverted).") from None

    def __call__(self, t, y):
        """``dy/dt`` (2 n + 1,) at time ``t`` and state ``y`` (2 n + 1,)."""
        y = np.asarray(y, dtype=float)
        if y.shape != (self.size,):
            raise ValueError(f"Expected a state of shape ({self.size},), got {y.shape}.")
        self.evaluations += 1
        n = self.model.n
        q, v = y[:n], y[n:2 * n]
        if self.forces is None:
            return np.concatenate([v, self.model.acceleration(q, v), [0.0]])
        Qc, Qa, C = self.forces.terms(t, q)
        Cv = C @ v
        return np.concatenate([v, self.model.acceleration(q, v, Qc + Qa - Cv),
                               [(Qa - Cv) @ v]])

    def project(self, y, t=0.0):
        """Put the velocities of ``y`` (2 n + 1,) onto the constraint space, in place (``t`` is
        unused)."""
        dop853.check_state(y, self.size)
        n = self.model.n
        q, v = y[:n], y[n:2 * n]
        mu = np.asarray(self.model.constraint_matrix(q), dtype=float)
        Minv_muT = self.model.mass_inv @ mu.T
        v -= Minv_muT @ np.linalg.solve(mu @ Minv_muT, mu @ v)


def _projection(field):
    """``field.project`` as the loop's ``project(t, state) -> status`` (it never fails but by
    raising)."""
    def project(t, state):
        field.project(state, t)
        return 0
    return project


def energy_correction(excess, metric_square):
    r"""The step ``mu`` along ``d`` that puts a state's energy back on its level (module
    docstring, "Holding the energy"), or 0 where no step along ``d`` reaches it.

    The energy along ``Omega + mu d`` is the quadratic ``E + a (mu + mu^2 / 2)`` when ``d`` is
    the energy's gradient in the kinetic metric (``a = g . d``, ``g`` the Euclidean gradient,
    ``metric_square``); it equals the level, ``E - excess``, at
    ``mu = -1 + sqrt(1 - 2 excess / a)``, the root nearest 0, computed as
    ``-2 excess / (a (1 + sqrt(1 - 2 excess / a)))`` so that a small excess loses no digits.

    Parameters
    ----------
    excess : float
        The energy less its level.
    metric_square : float
        ``a = g . d >= 0`` (twice the kinetic energy relative to the ground on a ground at
        rest).

    Returns
    -------
    float
        ``mu``; 0 if ``a`` is 0 (at rest) or the level is below the least energy over the
        velocities, ``E - a / 2`` (``1 - 2 excess / a < 0``).
    """
    if not metric_square > 0.0:
        return 0.0
    discriminant = 1.0 - 2.0 * excess / metric_square
    if discriminant < 0.0:
        return 0.0
    return -2.0 * excess / (metric_square * (1.0 + np.sqrt(discriminant)))
