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
and the last step's multiplier. (With ``beta = 0``, ``dR_A/dq = I``: neither ``Hess V`` nor
``Dmu_1`` is needed.) The stopping rule is in "The Newton problems" below.

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

Forces: the discrete Lagrange-d'Alembert pair
---------------------------------------------
With the force elements of a rigid body (:class:`nhphys.twins.models.BodyForces`) the
equations are ``M dv/dt = -grad V + Q(t, q, v) + mu^T lambda`` with the generalized force
``Q = Q_c(q) + Q_a(t, q) - C(q) v`` (potential elements, applied elements, damping). The
discrete principle adds the discrete forces ``f^-_k . dq_k + f^+_k . dq_{k+1}`` to the
variation of the action, with the symmetric pair (:mod:`nhphys.twins.forces`)

    f^- = h/2 Q(t_k, q_k, v_k),      f^+ = h/2 Q(t_{k+1}, q_{k+1}, v_{k+1}):

each end of the step takes the force at its own end. The two discrete Legendre transforms
become ``p_k = -D_1 L_d(q_k, q_{k+1}) - f^-_k - mu_k^T nu`` and ``p_{k+1} = D_2 L_d(q_k,
q_{k+1}) + f^+_k + mu_{k+1}^T nu'``. For the potential elements (``Q_c = -grad V_c``) the pair
is the trapezoidal quadrature ``h/2 (V_c(q_k) + V_c(q_{k+1}))`` of their potential inside the
discrete Lagrangian, whatever rule the model's own ``V`` takes: the scheme stays variational
and needs no Hessian of ``V_c``. What changes:

* **DLA**, first equation: ``R_A = -D_1 L_d - p_k - h/2 Q^-_k - mu_k^T nu`` with
  ``Q^-_k = Q(t_k, q_k, v_k)`` known (``F_scale`` gains ``h/2 |Q^-_k|``); the Jacobian is
  unchanged.
* **Newmark**: each discrete exponential map takes the force at its own base point, whatever
  ``beta``: the forward map gains ``h^2/2 M^-1 Q^-_k`` (weight one), i.e. ``R_A`` gains
  ``-h^2/2 f_k`` with ``f_k = M^-1 Q^-_k`` (``F_scale`` gains ``h^2/2 |f_k|``, the position
  size ``s`` of ``x_floor`` gains ``h^2 |f_k|``); the Jacobian is unchanged. Exchanging the ends
  with ``h -> -h`` maps the pair to itself, so ``F^{beta, beta, 1/2}`` stays symmetric, and
  ``F^{0,0,alpha}`` stays the trapezoidal DLA with the same forces. The explicit member uses
  ``grad V_k - Q^-_k`` in place of ``grad V_k`` and stays in closed form.
* **The end**: ``f^+`` depends on ``v_{k+1}``, linearly. With ``Q_0 = Q_c + Q_a`` at
  ``(t_{k+1}, q_{k+1})``, ``C = C(q_{k+1})`` and ``K = M + h/2 C``, the last equation of every
  member reads ``K v_{k+1} = M u + h/2 Q_0 + h/2 M X lambda'`` (``u`` and ``X`` the step's own:
  ``u = w - h/2 M^-1 grad V_{k+1}``, ``X = N_{k+1}`` for the explicit member; ``u`` and ``Q``
  above for Newmark; ``u = M^-1 D_2 L_d``, ``X = N_{k+1}`` for DLA), so with
  ``x = K^-1 (M u + h/2 Q_0)``, ``X_K = K^-1 M X`` (``x = u + h/2 M^-1 Q_0``, ``X_K = X``
  without damping) the constraint ``mu_{k+1} v_{k+1} = 0`` is the r x r solve
  ``(mu_{k+1} X_K) l = mu_{k+1} x`` and ``v_{k+1} = x - X_K l``: still no iteration beyond the
  step's own Newton. (The twin solves with ``K`` at every step. Where ``C`` is a constant, as
  for a body whose Jacobians are (the sleighs), the kernel forms ``K^-1`` and ``K^-1 M`` once
  per step size instead: the same numbers to round-off. Where one of ``Q_c``, ``Q_a`` is zero
  (no potential element, or none applied), the kernel takes the other as ``Q_0`` without the
  addition: the same numbers, up to the sign of a zero.)

The work of the applied and damping forces is accumulated by the trapezoidal rule on their
power, ``W_{k+1} = W_k + h/2 (P_k + P_{k+1})``, ``P = (Q_a - C v) . v`` at each end (the very
forces the pair applied); the potentials are part of the energy. ``E + V_c - W`` is then
conserved to second order (for the second-order members). A Python callable force sees the
velocities of the start of the (sub-)step at both ends (:mod:`nhphys.twins.forces`).

Composition
-----------
``stages`` lists the sub-steps applied in order, one row each:
``(kind, discretisation, beta, beta', alpha, weight)`` with ``kind`` 0 Newmark, 1 DLA midpoint,
2 DLA trapezoidal, ``discretisation`` 0 "point", 1 "average", and the sub-step ``weight * h``.

The Newton problems
-------------------
Both implicit solves go through the shared solver :func:`nhphys.twins.newton.newton_solve`
(the kernel through ``newton_solve`` of ``nhphys_ext/newton.pxd``, with the same residuals,
Jacobians, sizes and rule, so that the two take the same iterations). Each states the size of
its unknowns (``x_floor``) and of its equations' terms (``F_scale``):

* **Newmark**, unknowns ``x = (q_{k+1}, lambda)``. With ``s = |q_{k+1}^(0)|_inf + |h| |v_k|_inf
  + h^2 |M^-1 grad V_k|_inf`` (first guess, velocity and force displacements: the size of the
  step's positions), ``x_floor = s`` for each position and ``s / (h^2/2 |N_0[:, a]|_inf)`` for
  ``lambda_a``: the multiplier change that would move a position by ``s`` through
  ``h^2/2 P lambda``. The correction test then accepts a last correction that moves the
  positions, directly or through the multipliers, by at most ``newton_tol`` of their size,
  which is the rule this integrator always had (per component instead of for the largest).
  ``F_scale`` is the sum of the absolute values of each equation's terms:
  ``|q_{k+1}| + |q_k| + |h v_k| + h^2/2 (|(1 - 2 beta) b_0| + |2 beta b_1| + |P lambda|)``
  (``b = -M^-1 grad V``) for ``R_A`` and ``sum_i |mu_alpha,ai| (|q_{k+1,i}| + |q_{k,i}|)`` for
  ``R_Phi``: the residual that a position known to round-off leaves.
* **DLA**, unknowns ``x = (q_{k+1}, nu)``. ``s = |q_{k+1}^(0)|_inf + |h| |v_k|_inf``;
  ``x_floor = s`` for the positions and ``s / (|h| |N_0[:, a]|_inf)`` for ``nu_a`` (its
  displacement ``h N_0 nu``). ``F_scale`` of ``-D_1 L_d - p_k - mu_k^T nu`` is
  ``sum_j |M_ij| (|q_{k+1,j}| + |q_{k,j}|)/|h| + |p_k,i| + |h|/2 |grad V_i| + |grad S|
  + 1/2 |Hess S Delta|_i + |mu_k^T nu|_i``, and that of ``Phi`` as for Newmark.

Both use ``correction_tol = newton_tol`` and ``residual_tol = RESIDUAL_TOL`` (4 units of
round-off): a typical step ends when the residual evaluated after the second correction is at
round-off, without the third Jacobian that the correction test alone would have needed
(quadratic convergence makes that correction far below ``newton_tol``).

Statuses: a failed Newton solve passes up its status; a singular ``r x r`` matrix of the
explicit step or of the velocity projection is ``SINGULAR_JACOBIAN``; non-finite positions or
velocities are ``NOT_FINITE``. The loop commits a step (every sub-step of a composition) only
when all its sub-steps succeeded.
"""


import numpy as np

from nhphys.twins.newton import (
    INFO_COMMITTED,
    NOT_FINITE,
    OK,
    SINGULAR_JACOBIAN,
    NewtonRule,
    newton_solve,
)

NEWMARK, DLA_MIDPOINT, DLA_TRAPEZOIDAL = 0, 1, 2
POINT, AVERAGE = 0, 1
RESIDUAL_TOL = 4.0 * np.finfo(float).eps  # residuals at round-off end a solve (see above)


def solve_small(A, b):
    """Solve ``A x = b`` (k <= 16) by Gaussian elimination with partial pivoting, as the
    kernels' ``dense.solve_small`` does (for the ``r x r`` solves outside Newton).

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


class ForcePair:
    """The discrete forces of one (sub-)step of size ``h`` from ``(t, q0, v0)`` (module
    docstring, "Forces"): ``Q_start`` (n,), the force at the start, and :meth:`end`, the end's
    velocity solve. ``power_start`` and (after :meth:`end`) ``power_end`` are the powers of the
    applied and damping forces at the two ends."""

    def __init__(self, forces, t, h, q0, v0):
        self.forces, self.t1, self.v_call = forces, t + h, v0
        Qc, Qa, C = forces.terms(t, q0, v0)
        Cv = C @ v0
        self.Q_start = (Qc + Qa) - Cv
        self.power_start = (Qa - Cv) @ v0
        self.power_end = 0.0

    def end(self, model, q1, h, u, X, mu1):
        """``(status, v1)`` of the end kick: ``u`` (n,) and ``X`` (n, r) of the step."""
        Qc, Qa, C = self.forces.terms(self.t1, q1, self.v_call)
        Q0 = Qc + Qa
        if np.any(C):
            K = model.mass_matrix + 0.5 * h * C
            M = model.mass_matrix
            x = solve_small(K, M @ u + 0.5 * h * Q0)
            MX = M @ X
            XK = np.empty_like(X)
            for a in range(X.shape[1]):
                col = solve_small(K, MX[:, a])
                if col is None:
                    return SINGULAR_JACOBIAN, None
                XK[:, a] = col
            if x is None:
                return SINGULAR_JACOBIAN, None
        else:
            x = u + 0.5 * h * (model.mass_inv @ Q0)
            XK = X
        lam_p = solve_small(mu1 @ XK, mu1 @ x)
        if lam_p is None:
            return SINGULAR_JACOBIAN, None
        v1 = x - XK @ lam_p
        self.power_end = (Qa - C @ v1) @ v1
        return (OK if _finite(v1) else NOT_FINITE), v1


def _finite(*arrays):
    return all(bool(np.all(np.isfinite(a))) for a in arrays)


# -- discrete constraints ---------------------------------------------------------------------
def discrete_constraint(model, q0, q1, alpha, disc):
    """``Phi(q0, q1)`` (r,), in units of displacement, of the ``"point"`` (0) or ``"average"``
    (1) discretisation."""
    return _constraint_matrix_alpha(model, q0, q1, alpha, disc) @ (q1 - q0)


def _constraint_matrix_alpha(model, q0, q1, alpha, disc, mu0=None, mu1=None):
    """``mu(q_alpha)`` ("point") or ``(1 - alpha) mu_0 + alpha mu_1`` ("average"), (r, n)."""
    if disc == POINT:
        return model.constraint_matrix((1 - alpha) * q0 + alpha * q1)
    mu0 = model.constraint_matrix(q0) if mu0 is None else mu0
    mu1 = model.constraint_matrix(q1) if mu1 is None else mu1
    return (1 - alpha) * mu0 + alpha * mu1


def _discrete_constraint_jacobian(model, q0, q1, alpha, disc, mu_alpha):
    """``dPhi/dq1`` (r, n), given ``mu_alpha`` of :func:`_constraint_matrix_alpha`."""
    if alpha == 0.0:
        return mu_alpha
    qd = (1 - alpha) * q0 + alpha * q1 if disc == POINT else q1
    return alpha * np.einsum("aij,i->aj", model.constraint_matrix_derivative(qd),
                             q1 - q0) + mu_alpha


def _constraint_scale(mu_alpha, q0, q1):
    """``F_scale`` of ``Phi``: ``sum_i |mu_ai| (|q1_i| + |q0_i|)``, (r,)."""
    return np.abs(mu_alpha) @ (np.abs(q1) + np.abs(q0))


# -- Newmark ----------------------------------------------------------------------------------
def newmark_explicit_step(model, q0, v0, h, force=None):
    """``F_h^{0,0,0}`` in closed form: returns ``(status, q1, v1, lambda)``.

    ``v1`` is computed as ``v0 + h/2 (a0 + a1)`` (the difference of the two Newmark equations)
    rather than from ``(q1 - q0)/h``, which would carry the round-off of ``q`` divided by ``h``.
    ``force``: the step's :class:`ForcePair`, or None.
    """
    Minv = model.mass_inv
    mu0 = model.constraint_matrix(q0)
    g0 = model.grad_potential(q0)
    if force is not None:
        g0 = g0 - force.Q_start  # the force at the start enters as -grad V does
    N0 = Minv @ mu0.T
    lam = solve_small(mu0 @ N0, mu0 @ (Minv @ g0) - (2.0 / h) * (mu0 @ v0))
    if lam is None:
        return SINGULAR_JACOBIAN, q0, v0, np.zeros(model.r)
    a0 = Minv @ (-g0) + N0 @ lam
    q1 = q0 + h * v0 + 0.5 * h * h * a0
    mu1 = model.constraint_matrix(q1)
    g1 = model.grad_potential(q1)
    N1 = Minv @ mu1.T
    w = v0 + 0.5 * h * a0  # = (q1 - q0)/h
    if force is not None:
        status, v1 = force.end(model, q1, h, w - 0.5 * h * (Minv @ g1), N1, mu1)
        return status, q1, (v0 if v1 is None else v1), lam
    lam1 = solve_small(mu1 @ N1, mu1 @ (Minv @ g1) - (2.0 / h) * (mu1 @ w))
    if lam1 is None:
        return SINGULAR_JACOBIAN, q0, v0, lam
    v1 = w + 0.5 * h * (Minv @ (-g1) + N1 @ lam1)
    return (OK if _finite(q1, v1) else NOT_FINITE), q1, v1, lam


class NewmarkProblem:
    """The Newton problem of an implicit Newmark step: residual and Jacobian of
    ``(R_A, R_Phi)`` in ``x = (q_{k+1}, lambda)`` (see "The Newton problems").

    The residual stores what the Jacobian and the velocity update reuse (``mu_1``, ``N_1``,
    ``b_1``, ``P`` at the ``q_{k+1}`` it was evaluated at).
    """

    def __init__(self, model, q0, v0, h, beta, alpha, disc, force=None):
        self.model, self.q0, self.v0, self.h = model, q0, v0, h
        self.beta, self.alpha, self.disc = beta, alpha, disc
        Minv = model.mass_inv
        self.mu0 = model.constraint_matrix(q0)
        self.N0 = Minv @ self.mu0.T
        self.b0 = -(Minv @ model.grad_potential(q0))
        # M^-1 Q^-: the force at the start, in the forward map with weight one
        self.f0 = np.zeros(model.n) if force is None else Minv @ force.Q_start
        self.evaluations = 0
        self.q_eval = None

    def x_floor(self, q_guess):
        """Sizes below which each unknown counts as zero, (n + r,)."""
        h = self.h
        s = (np.max(np.abs(q_guess)) + abs(h) * np.max(np.abs(self.v0))
             + h * h * np.max(np.abs(self.b0)) + h * h * np.max(np.abs(self.f0)) + 1e-300)
        per_lambda = 0.5 * h * h * np.max(np.abs(self.N0), axis=0) + 1e-300
        return np.concatenate([np.full(self.model.n, s), s / per_lambda])

    def evaluate_at(self, q1):
        """``mu_1``, ``N_1``, ``b_1`` and ``P`` at ``q1`` (stored)."""
        m = self.model
        self.mu1 = m.constraint_matrix(q1)
        self.N1 = m.mass_inv @ self.mu1.T
        self.b1 = -(m.mass_inv @ m.grad_potential(q1))
        self.P = (1 - 2 * self.beta) * self.N0 + 2 * self.beta * self.N1
        self.q_eval = q1.copy()

    def residual(self, x):
        n, h, beta, q0 = self.model.n, self.h, self.beta, self.q0
        self.evaluations += 1
        q1, lam = x[:n], x[n:]
        self.evaluate_at(q1)
        Pl = self.P @ lam
        acc = (1 - 2 * beta) * self.b0 + 2 * beta * self.b1 + Pl + self.f0
        F_A = q1 - q0 - h * self.v0 - 0.5 * h * h * acc
        scale_A = (np.abs(q1) + np.abs(q0) + np.abs(h * self.v0) + 0.5 * h * h * (
            np.abs((1 - 2 * beta) * self.b0) + np.abs(2 * beta * self.b1) + np.abs(Pl)
            + np.abs(self.f0)))
        self.mu_alpha = _constraint_matrix_alpha(self.model, q0, q1, self.alpha, self.disc,
                                                 self.mu0, self.mu1)
        F_Phi = self.mu_alpha @ (q1 - q0)
        return OK, np.concatenate([F_A, F_Phi]), np.concatenate(
            [scale_A, _constraint_scale(self.mu_alpha, q0, q1)])

    def jacobian(self, x):
        m, h, n = self.model, self.h, self.model.n
        q1, lam = x[:n], x[n:]
        J = np.zeros((n + m.r, n + m.r))
        J[:n, :n] = np.eye(n)
        if self.beta != 0.0:
            G1 = m.mass_inv @ (-m.hessian_potential(q1) + np.einsum(
                "a,aij->ij", lam, m.constraint_matrix_derivative(q1)))
            J[:n, :n] -= h * h * self.beta * G1
        J[:n, n:] = -0.5 * h * h * self.P
        J[n:, :n] = _discrete_constraint_jacobian(m, self.q0, q1, self.alpha, self.disc,
                                                  self.mu_alpha)
        return OK, J


def newmark_step(model, q0, v0, lam_guess, h, beta, beta_p, alpha, disc, rule, info=None,
                 explicit=True, force=None):
    """One step of ``F_h^{beta, beta', alpha}``: returns ``(status, q1, v1, lambda)``.

    ``lambda`` is the multiplier of the forward map (the next step's first guess); ``rule`` the
    :class:`~nhphys.twins.newton.NewtonRule`; ``info[1]``, when given, counts the residual
    evaluations. The explicit member is taken in closed form unless ``explicit=False`` (then by
    the Newton path, which the tests use to check the closed form). ``force``: the step's
    :class:`ForcePair`, or None.
    """
    if explicit and beta == 0.0 and beta_p == 0.0 and alpha == 0.0:
        return newmark_explicit_step(model, q0, v0, h, force)
    n = model.n
    prob = NewmarkProblem(model, q0, v0, h, beta, alpha, disc, force)
    x = np.concatenate([q0 + h * v0, lam_guess])
    status = newton_solve(prob.residual, prob.jacobian, x, prob.x_floor(x[:n]), rule)
    if info is not None:
        info[1] += prob.evaluations
    if status != OK:
        return status, q0, v0, lam_guess
    q1, lam = x[:n], x[n:]
    if not np.array_equal(prob.q_eval, q1):  # the last residual was before a correction
        prob.evaluate_at(q1)
    Q = (1 - 2 * beta_p) * prob.N1 + 2 * beta_p * prob.N0
    u = v0 + 0.5 * h * ((1 - 2 * beta) * prob.b0 + 2 * beta * prob.b1 + prob.P @ lam
                        + (1 - 2 * beta_p) * prob.b1 + 2 * beta_p * prob.b0 + prob.f0)
    if force is not None:
        status, v1 = force.end(model, q1, h, u, Q, prob.mu1)
        if status != OK:
            return status, q0, v0, lam_guess
        return OK, q1.copy(), v1, lam.copy()
    lam_p = solve_small(prob.mu1 @ Q, prob.mu1 @ u)
    if lam_p is None:
        return SINGULAR_JACOBIAN, q0, v0, lam_guess
    v1 = u - Q @ lam_p  # = u + h/2 Q lambda' with lambda' = -(2/h) lam_p
    return (OK if _finite(v1) else NOT_FINITE), q1.copy(), v1, lam.copy()


# -- DLA --------------------------------------------------------------------------------------
class DLAProblem:
    """The Newton problem of a DLA step: residual and Jacobian of
    ``(-D_1 L_d(q_k, q_{k+1}) - p_k - mu_k^T nu, Phi)`` in ``x = (q_{k+1}, nu)``."""

    def __init__(self, model, q0, v0, h, kind, alpha, disc, force=None):
        self.model, self.q0, self.h, self.kind = model, q0, h, kind
        self.alpha, self.disc = alpha, disc
        self.v0 = v0
        # f^- = h/2 Q^-: the discrete force at the start
        self.fq = np.zeros(model.n) if force is None else 0.5 * h * force.Q_start
        self.mu0 = model.constraint_matrix(q0)
        self.N0 = model.mass_inv @ self.mu0.T
        self.gs0 = model.gauge_gradient(q0) if model.has_gauge else np.zeros(model.n)
        self.p0 = model.mass_matrix @ v0 - self.gs0
        self.evaluations = 0

    def x_floor(self, q_guess):
        s = np.max(np.abs(q_guess)) + abs(self.h) * np.max(np.abs(self.v0)) + 1e-300
        per_nu = abs(self.h) * np.max(np.abs(self.N0), axis=0) + 1e-300
        return np.concatenate([np.full(self.model.n, s), s / per_nu])

    def residual(self, x):
        m, h, q0, n = self.model, self.h, self.q0, self.model.n
        self.evaluations += 1
        q1, nu = x[:n], x[n:]
        delta = q1 - q0
        M = m.mass_matrix
        if self.kind == DLA_MIDPOINT:
            mid = 0.5 * (q0 + q1)
            g = m.grad_potential(mid)
            gs = m.gauge_gradient(mid) if m.has_gauge else np.zeros(n)
            Hs = m.gauge_hessian(mid) if m.has_gauge else np.zeros((n, n))
        else:
            g = m.grad_potential(q0)
            gs = 0.5 * (self.gs0 + m.gauge_gradient(q1)) if m.has_gauge else np.zeros(n)
            Hs = m.gauge_hessian(q0) if m.has_gauge else np.zeros((n, n))
        d1 = -M @ delta / h - 0.5 * h * g + gs - 0.5 * Hs @ delta
        munu = self.mu0.T @ nu
        F_A = -d1 - self.p0 - self.fq - munu
        scale_A = (np.abs(M) @ (np.abs(q1) + np.abs(q0)) / abs(h) + np.abs(self.p0)
                   + 0.5 * abs(h) * np.abs(g) + np.abs(gs) + 0.5 * np.abs(Hs @ delta)
                   + np.abs(munu) + np.abs(self.fq))
        self.mu_alpha = _constraint_matrix_alpha(m, q0, q1, self.alpha, self.disc, self.mu0)
        F_Phi = self.mu_alpha @ delta
        return OK, np.concatenate([F_A, F_Phi]), np.concatenate(
            [scale_A, _constraint_scale(self.mu_alpha, q0, q1)])

    def jacobian(self, x):
        m, h, q0, n = self.model, self.h, self.q0, self.model.n
        q1 = x[:n]
        delta = q1 - q0
        if self.kind == DLA_MIDPOINT:
            mid = 0.5 * (q0 + q1)
            dd1 = -m.mass_matrix / h - 0.25 * h * m.hessian_potential(mid)
            if m.has_gauge:
                dd1 = dd1 - 0.25 * m.gauge_third(mid, delta)
        else:
            dd1 = -m.mass_matrix / h
            if m.has_gauge:
                dd1 = dd1 + 0.5 * (m.gauge_hessian(q1) - m.gauge_hessian(q0))
        J = np.zeros((n + m.r, n + m.r))
        J[:n, :n] = -dd1
        J[:n, n:] = -self.mu0.T
        J[n:, :n] = _discrete_constraint_jacobian(m, q0, q1, self.alpha, self.disc,
                                                  self.mu_alpha)
        return OK, J


def _dla_d2(model, q0, q1, h, kind):
    """``D_2 L_d(q0, q1)``, (n,)."""
    delta = q1 - q0
    M = model.mass_matrix
    if kind == DLA_MIDPOINT:
        mid = 0.5 * (q0 + q1)
        d2 = M @ delta / h - 0.5 * h * model.grad_potential(mid)
        if model.has_gauge:
            d2 = d2 - model.gauge_gradient(mid) - 0.5 * model.gauge_hessian(mid) @ delta
        return d2
    d2 = M @ delta / h - 0.5 * h * model.grad_potential(q1)
    if model.has_gauge:
        d2 = (d2 - 0.5 * (model.gauge_gradient(q0) + model.gauge_gradient(q1))
              - 0.5 * model.gauge_hessian(q1) @ delta)
    return d2


def dla_step(model, q0, v0, lam_guess, h, kind, alpha, disc, rule, info=None, force=None):
    """One DLA step in its one-step form on ``D``: returns ``(status, q1, v1, lambda)``.

    ``lambda = 2 nu / h`` is carried as the next first guess (the scale of a Newmark
    multiplier); ``info[1]``, when given, counts the residual evaluations; ``force``: the
    step's :class:`ForcePair`, or None.
    """
    n = model.n
    prob = DLAProblem(model, q0, v0, h, kind, alpha, disc, force)
    x = np.concatenate([q0 + h * v0, 0.5 * h * lam_guess])
    status = newton_solve(prob.residual, prob.jacobian, x, prob.x_floor(x[:n]), rule)
    if info is not None:
        info[1] += prob.evaluations
    if status != OK:
        return status, q0, v0, lam_guess
    q1, nu = x[:n], x[n:]
    p1 = _dla_d2(model, q0, q1, h, kind)  # M v1 before projection, with the gauge term:
    if model.has_gauge:
        p1 = p1 + model.gauge_gradient(q1)
    mu1 = model.constraint_matrix(q1)
    N1 = model.mass_inv @ mu1.T
    w = model.mass_inv @ p1
    if force is not None:
        status, v1 = force.end(model, q1, h, w, N1, mu1)
        if status != OK:
            return status, q0, v0, lam_guess
        return OK, q1.copy(), v1, 2.0 * nu / h
    nu1 = solve_small(mu1 @ N1, mu1 @ w)
    if nu1 is None:
        return SINGULAR_JACOBIAN, q0, v0, lam_guess
    v1 = w - N1 @ nu1
    return (OK if _finite(v1) else NOT_FINITE), q1.copy(), v1, 2.0 * nu / h


# -- the loop ---------------------------------------------------------------------------------
def nonholonomic_run(model, stages, q, v, lam, h, n_steps, save_every, newton_tol, max_newton,
                     out_q, out_v, info, forces=None, clock=None, out_work=None):
    """Advance ``n_steps`` steps of the composition ``stages``, saving every ``save_every``-th.

    Parameters
    ----------
    model : CoordinateModel                         # IN, the system (nhphys.twins.models)
    stages : ndarray, shape (s, 6)                  # IN, rows (kind, disc, beta, beta',
                                                    #     alpha, weight)
    q, v : ndarray, shape (n,)                      # IN/OUT state
    lam : ndarray, shape (r,)                       # IN/OUT last multiplier (Newton's guess)
    h : float                                       # step (negative steps go backwards)
    n_steps, save_every : int
    newton_tol : float                              # the rule's correction_tol
    max_newton : int                                # the rule's max_iter
    out_q, out_v : ndarray, shape (n_steps // save_every, n)   # OUT
    info : ndarray of intp, shape (3,)              # OUT: [status of the failed step,
                                                    #       residual evaluations,
                                                    #       steps committed]
    forces : nhphys.twins.models.BodyForces or None # IN, the force elements (module
                                                    #     docstring, "Forces")
    clock : ndarray, shape (2,) or None             # IN/OUT [time, work of the forces]
    out_work : ndarray, shape (n_steps // save_every,) or None   # OUT the work at the saves

    Returns
    -------
    int
        0 on success; ``k + 1`` if step ``k`` (0-based, counted from the start of this call)
        failed, with its status in ``info[0]`` and the state (``q``, ``v``, ``lam``, ``clock``)
        left at the start of that step.
    """
    rule = NewtonRule(newton_tol, RESIDUAL_TOL, max_newton)
    info[0] = OK
    info[1] = 0
    info[INFO_COMMITTED] = 0
    pushed = forces is not None and not forces.empty
    t, work = (float(clock[0]), float(clock[1])) if clock is not None else (0.0, 0.0)
    for k in range(n_steps):
        qn, vn, ln, tn, wn = q.copy(), v.copy(), lam.copy(), t, work
        status = OK
        for kind, disc, beta, beta_p, alpha, weight in stages:
            hs = weight * h
            force = ForcePair(forces, tn, hs, qn, vn) if pushed else None
            if int(kind) == NEWMARK:
                status, qn, vn, ln = newmark_step(model, qn, vn, ln, hs, beta, beta_p, alpha,
                                                  int(disc), rule, info, force=force)
            else:
                status, qn, vn, ln = dla_step(model, qn, vn, ln, hs, int(kind), alpha,
                                              int(disc), rule, info, force=force)
            if status != OK:
                break
            if pushed:
                wn = wn + 0.5 * hs * (force.power_start + force.power_end)
            tn = tn + hs
        if status != OK:
            info[0] = status
            return k + 1
        q[:], v[:], lam[:] = qn, vn, ln
        t, work = tn, wn
        if clock is not None:
            clock[0], clock[1] = t, work
        if (k + 1) % save_every == 0:
            j = (k + 1) // save_every - 1
            out_q[j] = q
            out_v[j] = v
            if out_work is not None:
                out_work[j] = work
        info[INFO_COMMITTED] = k + 1  # last: the step and its frame are complete
    return 0
