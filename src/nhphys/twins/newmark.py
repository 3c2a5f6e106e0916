r"""Python twin of ``nhphys_ext.newmark``: the nonholonomic Newmark family, the discrete
Lagrange-d'Alembert (DLA) integrator and their compositions, on ``Q = R^n``.

The system is ``L = 1/2 v.Mv - V(q)`` (constant ``M``) with constraints ``mu(q) v = 0``
(``mu`` is r x n); its equations are ``M dv/dt = -grad V + mu^T lambda`` (see
:mod:`nhphys.systems.constrained`). Write ``Gamma(q, lambda) = M^-1 (-grad V(q) + mu(q)^T lambda)``
for the acceleration with a given multiplier.

Derivation of the Newmark family
--------------------------------
*Classical Newmark.* For ``d^2q/dt^2 = a(q)`` with parameters ``(beta, gamma)``::

    q_{k+1} = q_k + h v_k + h^2/2 ((1 - 2 beta) a_k + 2 beta a_{k+1})
    v_{k+1} = v_k + h ((1 - gamma) a_k + gamma a_{k+1}).                          (1)

*Discrete exponential maps.* The exponential map of the equation, ``exp_{q,h}(v)`` = position at
time ``h`` of the solution through ``(q, v)``, satisfies ``exp_{q,h}(v) = q + h v + h^2/2
a(q) + O(h^3)``. The family of discretisations indexed by ``0 <= beta <= 1/2``::

    exp^beta_{q,h}(v) = q + h v + h^2/2 ((1 - 2 beta) a(q) + 2 beta a(q~)),

``q~`` the end point, weights the acceleration at the two ends. Requiring that the step join
``(q_k, v_k)`` to ``(q_{k+1}, v_{k+1})`` forward with one parameter and backward with another,

    q_{k+1} = exp^beta_{q_k, h}(v_k),       q_k = exp^beta'_{q_{k+1}, -h}(v_{k+1}),       (10)

i.e. ``q_k = q_{k+1} - h v_{k+1} + h^2/2 ((1 - 2 beta') a_{k+1} + 2 beta' a_k)``, and
subtracting the two equations gives

    v_{k+1} = v_k + h/2 ((1 - 2 beta + 2 beta') a_k + (1 + 2 beta - 2 beta') a_{k+1}),

which is (1) with ``gamma = (1 + 2 beta - 2 beta')/2``. (The seed writes
``(1 + 2 beta' - 2 beta)/2``, the same family with the two labels exchanged; every claim
below uses ``beta = beta'`` or ``beta = beta' = 0``, where the labelling does not matter.)

*Nonholonomic Newmark* ``F_h^{beta, beta', alpha}``. The exact flow maps ``(q, v)`` with ``v`` in
``D_q`` to a point of the ``m = n - r`` dimensional set reached by nonholonomic trajectories in
time ``h``, with final velocity in ``D``. The discrete step imitates both facts. Each discrete
exponential map carries its own multiplier: ``lambda`` in the forward map, chosen so that
``q_{k+1}`` lies on a discrete constraint set, and ``lambda'`` in the backward map, chosen so that
``v_{k+1}`` lies in ``D``::

    q_{k+1} = q_k + h v_k + h^2/2 ((1 - 2 beta) Gamma(q_k, lambda) + 2 beta Gamma(q_{k+1}, lambda))
    q_k = q_{k+1} - h v_{k+1}
          + h^2/2 ((1 - 2 beta') Gamma(q_{k+1}, lambda') + 2 beta' Gamma(q_k, lambda'))
    Phi(q_k, q_{k+1}) = 0                                    (r equations)
    mu(q_{k+1}) v_{k+1} = 0                                  (r equations)

``2n + 2r`` equations for ``q_{k+1}, v_{k+1}, lambda, lambda'``. The two discrete constraints
(``constraint_discretization``):

* ``"point"`` (14):   ``Phi = mu((1 - alpha) q_k + alpha q_{k+1}) (q_{k+1} - q_k)``;
* ``"average"`` (15): ``Phi = ((1 - alpha) mu(q_k) + alpha mu(q_{k+1})) (q_{k+1} - q_k)``.

(The seed divides by ``h``; ``Phi`` is kept here in units of displacement, which is how its
residual is reported and tested.)

*Adjoint and symmetry.* Exchanging ``(q_k, v_k) <-> (q_{k+1}, v_{k+1})`` and ``h -> -h``
turns the first equation into the second with ``beta`` in place of ``beta'`` and vice versa,
and ``Phi`` with ``alpha`` into ``Phi`` with ``1 - alpha`` (both discretisations). Hence

    (F_h^{beta, beta', alpha})* = (F_{-h}^{beta, beta', alpha})^-1 = F_h^{beta', beta, 1 - alpha},

so ``(F_h^{0,0,0})* = F_h^{0,0,1}``, ``F^{beta, beta, 1/2}`` is symmetric (the discrete
constraint set then satisfies ``Phi_h(q_0, q_1) = 0 <=> Phi_{-h}(q_1, q_0) = 0``) and therefore
of order 2, and ``F^{0,0,1}_{h/2} o F^{0,0,0}_{h/2} = Phi*_{h/2} o Phi_{h/2}`` is symmetric and
of order 2 although each factor is of order 1.

*The explicit member* ``F_h^{0,0,0}`` (the equations missing from the seed). With
``beta = beta' = 0`` and ``alpha = 0`` both discretisations read ``mu(q_k)(q_{k+1} - q_k) = 0``.
Apply ``mu(q_k)`` to the first equation; with ``mu_k v_k = 0`` and ``C = mu M^-1 mu^T``::

    lambda_k = C_k^-1 (mu_k M^-1 grad V_k - (2/h) mu_k v_k)
    q_{k+1} = q_k + h v_k + h^2/2 M^-1 (-grad V_k + mu_k^T lambda_k).

(The term ``(2/h) mu_k v_k`` vanishes on ``D``; keeping it makes the discrete constraint hold to
round-off even when ``v_k`` carries round-off.) The second equation gives
``v_{k+1} = (q_{k+1} - q_k)/h + h/2 M^-1 (-grad V_{k+1} + mu_{k+1}^T lambda'_k)``; applying
``mu(q_{k+1})`` and imposing ``mu_{k+1} v_{k+1} = 0``::

    lambda'_k = C_{k+1}^-1 (mu_{k+1} M^-1 grad V_{k+1} - (2/h^2) mu_{k+1} (q_{k+1} - q_k)),

and ``v_{k+1}`` follows. Two r x r solves per step, no iteration. The code evaluates
``(q_{k+1} - q_k)/h`` as ``w = v_k + h/2 M^-1 (-grad V_k + mu_k^T lambda_k)`` (equal by the
first equation) so that no position difference is divided by ``h``.

*Implicit members: Newton.* The first equation and ``Phi = 0`` involve only
``(q_{k+1}, lambda)``; Newton solves them (n + r unknowns)::

    R_A = q_{k+1} - q_k - h v_k - h^2/2 ((1 - 2 beta) Gamma_0(lambda) + 2 beta Gamma_1(lambda)),
    R_Phi = Phi(q_k, q_{k+1}),

with the Jacobian (``G_1(lambda) = dGamma_1/dq_{k+1} = M^-1 (-Hess V_1 + sum_a lambda_a
Dmu^a_1)``, ``(Dmu^a)_{ij} = d mu_{ai}/dq_j``, ``N_i = M^-1 mu_i^T``,
``P = (1 - 2 beta) N_0 + 2 beta N_1``, ``Delta = q_{k+1} - q_k``)::

    dR_A/dq = I - h^2 beta G_1(lambda),       dR_A/dlambda = -h^2/2 P,
    dR_Phi/dq = alpha Dmu(q_alpha)[Delta] + mu(q_alpha)                  ("point")
              = alpha Dmu_1[Delta] + (1 - alpha) mu_0 + alpha mu_1      ("average")

(``(Dmu[w])_{aj} = sum_i d mu_{ai}/dq_j w_i``), from the first guess ``q_{k+1} = q_k + h v_k``
and the last step's multiplier. Newton stops when a correction moves ``q_{k+1}`` (directly or
through ``h^2/2 P dlambda``) by less than
``newton_tol (|q_{k+1}| + |h v_k| + h^2 |M^-1 grad V_k|)``.

Then ``lambda'`` is linear: subtracting the second equation from the first gives

    v_{k+1} = u + h/2 Q lambda',
    u = v_k + h/2 ((1 - 2 beta) Gamma_0(lambda) + 2 beta Gamma_1(lambda)
                   - M^-1 ((1 - 2 beta') grad V_1 + 2 beta' grad V_0)),
    Q = (1 - 2 beta') N_1 + 2 beta' N_0,

and ``mu_1 v_{k+1} = 0`` gives ``lambda' = -(2/h) (mu_1 Q)^-1 mu_1 u``. Evaluating ``v_{k+1}``
this way, rather than from ``(q_{k+1} - q_k)/h``, keeps ``mu v`` at round-off (the difference
quotient would carry ``|q| eps / h``).

(Were both maps to use ``lambda`` at ``q_k`` and ``lambda'`` at ``q_{k+1}`` instead, the
members with ``beta = beta' = 1/4`` would see the multipliers only through one combination to
leading order and fix the other from ``O(h^2)`` mismatches: the step stays solvable but is not
consistent (the sleigh's error then stays ~0.3 as ``h -> 0``). One multiplier per map avoids it.)

Derivation of the DLA integrator, and when it coincides with Newmark
-------------------------------------------------------------------
The DLA integrator (Cortes & Martinez) with a discrete Lagrangian ``L_d(q_0, q_1)`` and the
discrete constraint ``Phi`` is ``D_1 L_d(q_k, q_{k+1}) + D_2 L_d(q_{k-1}, q_k) = mu_k^T nu_k``,
``Phi(q_k, q_{k+1}) = 0``. It is run here as a one-step map on ``D``: with ``p = dL/dv`` at the
nodes,

    -D_1 L_d(q_k, q_{k+1}) = p_k + mu_k^T nu,     Phi(q_k, q_{k+1}) = 0          (n + r unknowns)
    p_{k+1} = D_2 L_d(q_k, q_{k+1}) + mu_{k+1}^T nu',   v_{k+1} in D         (a linear r x r solve)

which produces the positions of the two-step scheme started from the same ``(q_0, q_1)`` and
reads off the node velocity in ``D``. Discrete Lagrangians:

* ``"midpoint"``:    ``L_d = h L((q_0 + q_1)/2, (q_1 - q_0)/h)``;
* ``"trapezoidal"``: ``L_d = h/2 (L(q_0, (q_1 - q_0)/h) + L(q_1, (q_1 - q_0)/h))``.

For ``L = 1/2 v.Mv - V`` and the trapezoidal rule, ``-D_1 L_d = M Delta/h + h/2 grad V_k`` and
``D_2 L_d = M Delta/h - h/2 grad V_{k+1}``, while the two Newmark equations with
``beta = beta' = 0`` read ``M Delta/h + h/2 grad V_k = M v_k + h/2 mu_k^T lambda`` and
``M Delta/h - h/2 grad V_{k+1} = M v_{k+1} - h/2 mu_{k+1}^T lambda'``. They are the same
equations (``nu = h lambda/2``, ``nu' = -h lambda'/2``): **F^{0,0,alpha} is the DLA integrator
with the trapezoidal discrete Lagrangian and the same discrete constraint**, and, since the
midpoint and trapezoidal rules agree when ``grad V`` is affine (gravity, or no potential: the
knife edge on an inclined plane, the sleigh, the disk), also the midpoint DLA for those systems.

With the gauge term of the non-reversible contact oscillator, ``L = 1/2 v.Mv - v.grad S - V``
and ``p = Mv - grad S``; the midpoint rule gives ``L_d = Delta.M Delta/(2h) - grad S(m).Delta -
h V(m)`` (``m`` the midpoint), so::

    D_1 L_d = -M Delta/h - h/2 grad V(m) + grad S(m) - 1/2 Hess S(m) Delta,
    D_2 L_d =  M Delta/h - h/2 grad V(m) - grad S(m) - 1/2 Hess S(m) Delta,

and the trapezoidal rule uses ``-(grad S_0 + grad S_1).Delta/2`` in place of the gauge term.
Neither is the exact difference ``S(q_1) - S(q_0)``, which is how DLA sees the perturbation
(Newmark, built on the second-order equation, never does).

Composition
-----------
``stages`` lists the sub-steps applied in order, one row each:
``(kind, discretisation, beta, beta', alpha, weight)`` with ``kind`` 0 Newmark, 1 DLA midpoint,
2 DLA trapezoidal, ``discretisation`` 0 "point", 1 "average", and the sub-step ``weight * h``.
"""

import numpy as np

NEWMARK, DLA_MIDPOINT, DLA_TRAPEZOIDAL = 0, 1, 2
POINT, AVERAGE = 0, 1
KNIFE_EDGE, VERTICAL_DISK, CONTACT_OSCILLATOR = 0, 1, 2


class Model:
    """The built-in systems of the kernels, by number and parameters (numpy, one point).

    ``code`` 0 knife edge ``(a, f)``, 1 vertical disk ``(R,)``, 2 contact oscillator
    ``(epsilon, strength)``; see :mod:`nhphys.systems`.
    """

    def __init__(self, code, params):
        self.code = int(code)
        self.params = np.asarray(params, dtype=float)
        self.n, self.r = {KNIFE_EDGE: (3, 1), VERTICAL_DISK: (4, 2),
                          CONTACT_OSCILLATOR: (3, 1)}[self.code]

    def grad_potential(self, q):
        if self.code == KNIFE_EDGE:
            return np.array([-self.params[1], 0.0, 0.0])
        if self.code == VERTICAL_DISK:
            return np.zeros(4)
        eps = self.params[0]
        x, y, z = q
        return np.array([x + eps * x * z * z, y, z + eps * x * x * z])

    def hessian_potential(self, q):
        if self.code != CONTACT_OSCILLATOR:
            return np.zeros((self.n, self.n))
        eps = self.params[0]
        x, _, z = q
        return np.array([[1 + eps * z * z, 0, 2 * eps * x * z], [0, 1, 0],
                         [2 * eps * x * z, 0, 1 + eps * x * x]], dtype=float)

    def constraint_matrix(self, q):
        if self.code == KNIFE_EDGE:
            return np.array([[-np.sin(q[2]), np.cos(q[2]), -self.params[0]]])
        if self.code == VERTICAL_DISK:
            R = self.params[0]
            return np.array([[1, 0, 0, -R * np.cos(q[2])], [0, 1, 0, -R * np.sin(q[2])]])
        return np.array([[1.0, 0.0, q[1]]])

    def constraint_matrix_derivative(self, q):
        D = np.zeros((self.r, self.n, self.n))
        if self.code == KNIFE_EDGE:
            D[0, 0, 2] = -np.cos(q[2])
            D[0, 1, 2] = -np.sin(q[2])
        elif self.code == VERTICAL_DISK:
            R = self.params[0]
            D[0, 3, 2] = R * np.sin(q[2])
            D[1, 3, 2] = -R * np.cos(q[2])
        else:
            D[0, 2, 1] = 1.0
        return D

    @property
    def has_gauge(self):
        return self.code == CONTACT_OSCILLATOR and self.params[1] != 0.0

    def gauge_gradient(self, q):
        g = np.zeros(self.n)
        if self.has_gauge:
            g[2] = -self.params[1] * np.sin(q[2])
        return g

    def gauge_hessian(self, q):
        H = np.zeros((self.n, self.n))
        if self.has_gauge:
            H[2, 2] = -self.params[1] * np.cos(q[2])
        return H

    def gauge_third(self, q, d):
        T = np.zeros((self.n, self.n))
        if self.has_gauge:
            T[2, 2] = self.params[1] * np.sin(q[2]) * d[2]
        return T


class CallbackModel:
    """A :class:`~nhphys.systems.ConstrainedMechanicalSystem` seen through the model interface."""

    def __init__(self, system):
        self.system = system
        self.n = system.n
        self.r = system.r
        gauge = getattr(system, "gauge", None)
        self.has_gauge = gauge is not None
        self._gauge = gauge

    def grad_potential(self, q):
        return np.asarray(self.system.grad_potential(q), dtype=float)

    def hessian_potential(self, q):
        return self.system.hessian_potential(q)

    def constraint_matrix(self, q):
        return np.asarray(self.system.constraint_matrix(q), dtype=float)

    def constraint_matrix_derivative(self, q):
        return np.asarray(self.system.constraint_matrix_derivative(q), dtype=float)

    def gauge_gradient(self, q):
        return self._gauge[0](q) if self.has_gauge else np.zeros(self.n)

    def gauge_hessian(self, q):
        return self._gauge[1](q) if self.has_gauge else np.zeros((self.n, self.n))

    def gauge_third(self, q, d):
        return self._gauge[2](q, d) if self.has_gauge else np.zeros((self.n, self.n))


# -- discrete constraints ---------------------------------------------------------------------
def discrete_constraint(model, q0, q1, h, alpha, disc):
    """``Phi(q0, q1)`` (r,), in units of displacement, of the ``"point"`` (0) or ``"average"``
    (1) discretisation."""
    delta = q1 - q0
    if disc == POINT:
        return model.constraint_matrix((1 - alpha) * q0 + alpha * q1) @ delta
    mu = (1 - alpha) * model.constraint_matrix(q0) + alpha * model.constraint_matrix(q1)
    return mu @ delta


def _discrete_constraint_jacobian(model, q0, q1, h, alpha, disc):
    delta = q1 - q0
    if disc == POINT:
        qa = (1 - alpha) * q0 + alpha * q1
        Dmu = model.constraint_matrix_derivative(qa)
        return alpha * np.einsum("aij,i->aj", Dmu, delta) + model.constraint_matrix(qa)
    Dmu1 = model.constraint_matrix_derivative(q1)
    mu = (1 - alpha) * model.constraint_matrix(q0) + alpha * model.constraint_matrix(q1)
    return alpha * np.einsum("aij,i->aj", Dmu1, delta) + mu


def solve_small(A, b):
    """Solve ``A x = b`` (k <= 16) by Gaussian elimination with partial pivoting.

    Returns a new array, or None when a pivot is exactly zero (a singular matrix).
    """
    A = np.array(A, dtype=float)
    x = np.array(b, dtype=float)
    k = x.size
    for col in range(k):
        piv = col + int(np.argmax(np.abs(A[col:, col])))
        if A[piv, col] == 0.0:
            return None
        if piv != col:
            A[[col, piv]] = A[[piv, col]]
            x[[col, piv]] = x[[piv, col]]
        for row in range(col + 1, k):
            f = A[row, col] / A[col, col]
            A[row, col:] -= f * A[col, col:]
            x[row] -= f * x[col]
    for row in range(k - 1, -1, -1):
        x[row] = (x[row] - A[row, row + 1:] @ x[row + 1:]) / A[row, row]
    return x


# -- Newmark ----------------------------------------------------------------------------------
def newmark_explicit_step(model, Minv, q0, v0, h):
    """``F_h^{0,0,0}`` in closed form: returns ``(q1, v1, lambda)``.

    ``v1`` is computed as ``v0 + h/2 (a0 + a1)`` (the difference of the two Newmark equations)
    rather than from ``(q1 - q0)/h``, which would carry the round-off of ``q`` divided by ``h``.
    """
    mu0 = model.constraint_matrix(q0)
    g0 = model.grad_potential(q0)
    N0 = Minv @ mu0.T
    lam = solve_small(mu0 @ N0, mu0 @ (Minv @ g0) - (2.0 / h) * (mu0 @ v0))
    if lam is None:
        return np.full_like(q0, np.nan), np.full_like(v0, np.nan), np.zeros(model.r)
    a0 = Minv @ (-g0) + N0 @ lam
    q1 = q0 + h * v0 + 0.5 * h * h * a0
    mu1 = model.constraint_matrix(q1)
    g1 = model.grad_potential(q1)
    N1 = Minv @ mu1.T
    w = v0 + 0.5 * h * a0  # = (q1 - q0)/h
    lam1 = solve_small(mu1 @ N1, mu1 @ (Minv @ g1) - (2.0 / h) * (mu1 @ w))
    if lam1 is None:
        return q1, np.full_like(v0, np.nan), lam
    v1 = w + 0.5 * h * (Minv @ (-g1) + N1 @ lam1)
    return q1, v1, lam


def newmark_step(model, Minv, q0, v0, lam_guess, h, beta, beta_p, alpha, disc, newton_tol,
                 max_newton, explicit=True):
    """One step of ``F_h^{beta, beta', alpha}``: returns ``(q1, v1, lambda, converged)``.

    ``lambda`` is the multiplier of the forward map (the next step's first guess). The explicit
    member is taken in closed form unless ``explicit=False`` (then by the Newton path, which
    the tests use to check the closed form).
    """
    if explicit and beta == 0.0 and beta_p == 0.0 and alpha == 0.0:
        q1, v1, lam = newmark_explicit_step(model, Minv, q0, v0, h)
        return q1, v1, lam, bool(np.all(np.isfinite(q1)) and np.all(np.isfinite(v1)))
    n = model.n
    mu0 = model.constraint_matrix(q0)
    b0 = -(Minv @ model.grad_potential(q0))
    N0 = Minv @ mu0.T
    q1 = q0 + h * v0
    lam = lam_guess.copy()
    # displacement scale (position, velocity and force terms) for the stopping rule
    scale = (np.max(np.abs(q1)) + abs(h) * np.max(np.abs(v0)) + h * h * np.max(np.abs(b0))
             + 1e-300)
    converged = False
    for _ in range(max_newton):
        mu1 = model.constraint_matrix(q1)
        Dmu1 = model.constraint_matrix_derivative(q1)
        N1 = Minv @ mu1.T
        b1 = -(Minv @ model.grad_potential(q1))
        P = (1 - 2 * beta) * N0 + 2 * beta * N1
        G1 = Minv @ (-model.hessian_potential(q1) + np.einsum("a,aij->ij", lam, Dmu1))
        R = np.concatenate([
            q1 - q0 - h * v0 - 0.5 * h * h * ((1 - 2 * beta) * b0 + 2 * beta * b1 + P @ lam),
            discrete_constraint(model, q0, q1, h, alpha, disc),
        ])
        J = np.zeros((R.size, R.size))
        J[:n, :n] = np.eye(n) - h * h * beta * G1
        J[:n, n:] = -0.5 * h * h * P
        J[n:, :n] = _discrete_constraint_jacobian(model, q0, q1, h, alpha, disc)
        dz = solve_small(J, R)
        if dz is None:
            break
        q1 = q1 - dz[:n]
        lam = lam - dz[n:]
        if not (np.all(np.isfinite(q1)) and np.all(np.isfinite(lam))):
            break
        moved = max(np.max(np.abs(dz[:n])), 0.5 * h * h * np.max(np.abs(P @ dz[n:])))
        if moved <= newton_tol * scale:
            converged = True
            break
    mu1 = model.constraint_matrix(q1)
    N1 = Minv @ mu1.T
    b1 = -(Minv @ model.grad_potential(q1))
    P = (1 - 2 * beta) * N0 + 2 * beta * N1
    Q = (1 - 2 * beta_p) * N1 + 2 * beta_p * N0
    u = v0 + 0.5 * h * ((1 - 2 * beta) * b0 + 2 * beta * b1 + P @ lam
                        + (1 - 2 * beta_p) * b1 + 2 * beta_p * b0)
    lam_p = solve_small(mu1 @ Q, mu1 @ u)
    if lam_p is None:
        return q1, v0, lam, False
    v1 = u - Q @ lam_p  # = u + h/2 Q lambda' with lambda' = -(2/h) lam_p
    return q1, v1, lam, converged and bool(np.all(np.isfinite(v1)))


# -- DLA --------------------------------------------------------------------------------------
def _dla_d1(model, M, q0, q1, h, kind):
    """``D_1 L_d(q0, q1)`` and its derivative with respect to ``q1``."""
    delta = q1 - q0
    if kind == DLA_MIDPOINT:
        m = 0.5 * (q0 + q1)
        Hs = model.gauge_hessian(m)
        d1 = (-M @ delta / h - 0.5 * h * model.grad_potential(m) + model.gauge_gradient(m)
              - 0.5 * Hs @ delta)
        dd1 = -M / h - 0.25 * h * model.hessian_potential(m) - 0.25 * model.gauge_third(m, delta)
        return d1, dd1
    Hs0, Hs1 = model.gauge_hessian(q0), model.gauge_hessian(q1)
    d1 = (-M @ delta / h - 0.5 * h * model.grad_potential(q0)
          + 0.5 * (model.gauge_gradient(q0) + model.gauge_gradient(q1)) - 0.5 * Hs0 @ delta)
    dd1 = -M / h + 0.5 * (Hs1 - Hs0)
    return d1, dd1


def _dla_d2(model, M, q0, q1, h, kind):
    """``D_2 L_d(q0, q1)``."""
    delta = q1 - q0
    if kind == DLA_MIDPOINT:
        m = 0.5 * (q0 + q1)
        return (M @ delta / h - 0.5 * h * model.grad_potential(m) - model.gauge_gradient(m)
                - 0.5 * model.gauge_hessian(m) @ delta)
    return (M @ delta / h - 0.5 * h * model.grad_potential(q1)
            - 0.5 * (model.gauge_gradient(q0) + model.gauge_gradient(q1))
            - 0.5 * model.gauge_hessian(q1) @ delta)


def dla_step(model, M, Minv, q0, v0, lam_guess, h, kind, alpha, disc, newton_tol, max_newton):
    """One DLA step in its one-step form on ``D``: returns ``(q1, v1, lambda, converged)``.

    ``lambda = 2 nu / h`` is carried as the next first guess (the scale of a Newmark multiplier).
    """
    n, r = model.n, model.r
    mu0 = model.constraint_matrix(q0)
    p0 = M @ v0 - model.gauge_gradient(q0)
    q1 = q0 + h * v0
    nu = 0.5 * h * lam_guess
    N0 = Minv @ mu0.T
    scale = np.max(np.abs(q1)) + abs(h) * np.max(np.abs(v0)) + 1e-300
    converged = False
    for _ in range(max_newton):
        d1, dd1 = _dla_d1(model, M, q0, q1, h, kind)
        R = np.concatenate([-d1 - p0 - mu0.T @ nu,
                            discrete_constraint(model, q0, q1, h, alpha, disc)])
        J = np.zeros((n + r, n + r))
        J[:n, :n] = -dd1
        J[:n, n:] = -mu0.T
        J[n:, :n] = _discrete_constraint_jacobian(model, q0, q1, h, alpha, disc)
        dz = solve_small(J, R)
        if dz is None:
            break
        q1 = q1 - dz[:n]
        nu = nu - dz[n:]
        if not (np.all(np.isfinite(q1)) and np.all(np.isfinite(nu))):
            break
        moved = max(np.max(np.abs(dz[:n])), abs(h) * np.max(np.abs(N0 @ dz[n:])))
        if moved <= newton_tol * scale:
            converged = True
            break
    p1 = _dla_d2(model, M, q0, q1, h, kind) + model.gauge_gradient(q1)  # M v1 before projection
    mu1 = model.constraint_matrix(q1)
    N1 = Minv @ mu1.T
    nu1 = solve_small(mu1 @ N1, mu1 @ (Minv @ p1))
    if nu1 is None:
        return q1, v0, 2.0 * nu / h, False
    v1 = Minv @ p1 - N1 @ nu1
    return q1, v1, 2.0 * nu / h, converged


# -- the loop ---------------------------------------------------------------------------------
def nonholonomic_run(model, mass, stages, q, v, lam, h, n_steps, save_every, newton_tol,
                     max_newton, out_q, out_v):
    """Advance ``n_steps`` steps of the composition ``stages``, saving every ``save_every``-th.

    Parameters
    ----------
    model : Model or CallbackModel                  # IN, the system
    mass : ndarray, shape (n, n)                    # IN
    stages : ndarray, shape (s, 6)                  # IN, rows (kind, disc, beta, beta',
                                                    #     alpha, weight)
    q, v : ndarray, shape (n,)                      # IN/OUT state
    lam : ndarray, shape (r,)                       # IN/OUT last multiplier (Newton's guess)
    h : float                                       # step (negative steps go backwards)
    n_steps, save_every : int
    newton_tol : float
    max_newton : int
    out_q, out_v : ndarray, shape (n_steps // save_every, n)   # OUT

    Returns
    -------
    int
        0 on success; ``k + 1`` if a Newton solve of step ``k`` (0-based, counted from the start
        of this call) did not converge, with the state left at the start of that step.
    """
    Minv = np.linalg.inv(mass)
    for k in range(n_steps):
        qn, vn, ln = q.copy(), v.copy(), lam.copy()
        ok = True
        for kind, disc, beta, beta_p, alpha, weight in stages:
            hs = weight * h
            if int(kind) == NEWMARK:
                qn, vn, ln, ok = newmark_step(model, Minv, qn, vn, ln, hs, beta, beta_p, alpha,
                                              int(disc), newton_tol, max_newton)
            else:
                qn, vn, ln, ok = dla_step(model, mass, Minv, qn, vn, ln, hs, int(kind), alpha,
                                          int(disc), newton_tol, max_newton)
            if not ok:
                break
        if not ok:
            return k + 1
        q[:], v[:], lam[:] = qn, vn, ln
        if (k + 1) % save_every == 0:
            j = (k + 1) // save_every - 1
            out_q[j] = q
            out_v[j] = v
    return 0
