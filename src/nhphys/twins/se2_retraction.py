r"""Python twin of ``nhphys_ext.se2_retraction``: the variational retraction integrator on
``G = SE(2) x R^k`` for a left-invariant Lagrangian under a left-invariant constraint
``xi in d`` (the Chaplygin sleigh, k = 0; the vertical rolling disk, k = 1).

Derivation
----------
The configuration is ``g = (x, y, theta)`` in SE(2) (layout and conventions of
:mod:`nhphys.lie.se2`) together with ``k`` abelian angles ``phi``; the body velocity is
``xi = (v_x, v_y, omega, phi_dot)`` and the reduced Lagrangian is ``l(xi) = 1/2 xi . I xi`` with a
constant symmetric positive-definite ``I`` (d x d, d = 3 + k). The constraint keeps ``xi`` in a
subspace ``d`` spanned by the columns of ``B`` (d x m). The pattern is the one of
:mod:`nhphys.twins.suslov`; only the group changes.

*Discrete Lagrangian.* A step moves ``g_{k+1} = g_k tau(xi_k[:3])``, ``phi_{k+1} = phi_k +
xi_k[3:]``, with ``tau`` = exp or cay on SE(2), and ``L_d = h l(xi_k / h)``. Varying
``g_k -> g_k exp(eps eta_k)`` gives, exactly as on SO(3),

    delta xi_k = J_r(xi_k)^-1 (eta_{k+1} - Ad_{tau(xi_k)^-1} eta_k),

and with ``M_k = I xi_k / h`` the two discrete Legendre transforms

    Pi_k^- = J_l(xi_k)^-T M_k   (momentum at the start of the step),
    Pi_k^+ = J_r(xi_k)^-T M_k   (momentum at its end),

where on the abelian factor both Jacobians are the identity (``Pi = M`` there).

*Discrete Lagrange-d'Alembert.* With ``eta_k in d`` the coefficient of ``eta_k`` must
annihilate ``d``: ``B^T (Pi_{k-1}^+ - Pi_k^-) = 0``, ``xi_k = B y_k``. The carried state is
``p_k = B^T Pi`` (m numbers). One step, given ``p``:

1. solve ``F(y) = B^T Pi^-(B y) - p = 0`` for ``y`` by Newton;
2. ``g <- g tau(xi[:3])``, ``phi <- phi + xi[3:]``;
3. ``p <- B^T Pi^+(xi)``.

*The momenta in closed form.* Write ``M = (M_v, M_w, M_phi)`` (M_v in R^2) and
``v x u = v_x u_y - v_y u_x``. From ``ad_xi^T M = (-omega J M_v, -v x M_v)`` (``J^T = -J``) and
the inverse Jacobians of :mod:`nhphys.lie.se2`, with ``s = +1`` for ``Pi^-`` and ``s = -1`` for
``Pi^+``::

    Pi_v   = M_v + omega (s J/2 - ev(omega) I) M_v
    Pi_w   = M_w + s (v x M_v)/2 + f(omega) (v . M_v) + g(omega) M_w
    Pi_phi = M_phi

* exp:    ``f = ev = e(omega) = (1 - (omega/2) cot(omega/2))/omega``, ``g = 0``
  (``e`` is ``omega c(omega)`` with the SO(3) series coefficient ``c``);
* cayley: ``f = omega/4``, ``g = omega^2/4``, ``ev = 0`` (from ``J_l^-1 = I - ad/2 - K/4``).

So ``Pi^- - Pi^+ = -ad_xi^T M``, the discrete form of the Euler-Poincare equation
``dPi/dt = ad_xi^T Pi``.

*Newton Jacobian.* With ``dM = I/h`` (rows ``dM_v``, ``dM_w``, ``dM_phi``) and ``e_w`` the
row selecting ``omega``::

    dPi_v   = dM_v + omega (J/2 - ev I) dM_v + ((J/2 - ev I) M_v - omega ev' M_v) e_w
    dPi_w   = dM_w + (M_y e_vx - M_x e_vy + v_x dM_y - v_y dM_x)/2
              + f' (v . M_v) e_w + f (M_x e_vx + M_y e_vy + v_x dM_x + v_y dM_y)
              + g' M_w e_w + g dM_w
    dPi_phi = dM_phi

and ``dF/dy = B^T dPi B``.

*The Newton problem.* ``F(y) = B^T Pi^-(B y) - p`` goes through the shared solver
:func:`nhphys.twins.newton.newton_solve` (the kernel through ``newton_solve`` of
``nhphys_ext/newton.pxd``, same residual, Jacobian, sizes and rule). The first guess is the
last step's ``y``; ``x_floor`` is the largest ``|y_a|`` of that guess for every component (the
size of the step: a component passing through zero, such as the sleigh's turning step as it
straightens out, is judged against the whole step, as the former rule ``|dy| <= newton_tol
|y|`` did); ``F_scale_a = |p_a| + sum_i |B_ia Pi^-_i|``, the size of the momenta that make
up ``F_a`` (where ``Pi^-`` is a difference of larger terms this underestimates its round-off,
which can only delay the residual test: the correction test still ends the solve). ``correction_tol = newton_tol`` and ``residual_tol =
RESIDUAL_TOL`` (4 units of round-off): a step whose warm start already solves the equations to
round-off (the vertical disk's, whose ``y`` never changes) ends after one residual, without a
Jacobian.

*Forces.* With the force elements of the body (:class:`nhphys.twins.models.BodyForces`),
the discrete Lagrange-d'Alembert principle adds the discrete forces ``f^-_k . eta_k +
f^+_k . eta_{k+1}`` (``eta`` the left-trivialised variations, so the forces are covectors of
the body velocity ``xi``): ``B^T (Pi_{k-1}^+ + f^+_{k-1} - Pi_k^- + f^-_k) = 0``, with the
symmetric pair ``f^- = h/2 F(t_k, g_k, xi_k)``, ``f^+ = h/2 F(t_{k+1}, g_{k+1}, xi_{k+1})``
(:mod:`nhphys.twins.forces`) at the node velocities ``xi_k = B (B^T I B)^-1 p_k``. The group
force is the generalized force pulled back through ``dq/dt = T(g) xi``
(:meth:`~nhphys.twins.models.CoordinateModel.group_coordinates`): ``F = T^T (Q_c + Q_a) -
C_g xi``, ``C_g = T^T C T``. The carried momentum becomes ``p_k = B^T (Pi_{k-1}^+ +
f^+_{k-1})``, and a step

1'. solves ``F(y) = B^T Pi^-(B y) - (p + h/2 B^T F_k) = 0`` (the same Newton problem with a
    shifted ``p``: the Jacobian is unchanged);
3'. ends with ``p_{k+1} = B^T (Pi^+ + h/2 (F_0 - C_g xi_{k+1}))``, ``F_0 = T^T (Q_c + Q_a)``
    at ``(t_{k+1}, g_{k+1})``: with ``z = (B^T I B)^-1 p_{k+1}`` (``xi_{k+1} = B z``) this is
    the m x m linear solve ``(B^T I B + h/2 B^T C_g B) z = B^T Pi^+ + h/2 B^T F_0``, then
    ``p_{k+1} = B^T I B z`` (without damping ``p_{k+1}`` is the right-hand side). The node
    velocity ``xi_{k+1}`` (for the power) is then computed from ``p_{k+1}`` as the next step's
    start computes it, so that the kernel can reuse it, and the end's forces, as that start.

The kernel computes the same step with shortcuts that change only round-off: it applies
``(B^T I B)^-1``, formed once per run, where the twin solves at each node; it reuses a node's
kick ``B^T (F_0 - C_g xi)`` and power as the next step's start; and for a body whose Jacobians
are constant (the sleighs) it forms the generalized forces without forming ``T`` and the
Jacobians, takes ``C``, a constant, once, and, where ``T^T C T`` is the same at every heading
(``C``'s ``(x, y)`` block a multiple of the identity and uncoupled from the other coordinates,
as for drag, angular damping, spin friction and motors), forms ``C_g`` and the end kick's map
``B^T I B (B^T I B + h/2 B^T C_g B)^-1`` once per run. Where one of ``Q_c``, ``Q_a`` is zero
(no potential element, or none applied), it pulls back the other without the addition: the
same numbers, up to the sign of a zero.

Potentials (springs, fields) enter through the same pair: it is the trapezoidal quadrature
``h/2 (V(g_k) + V(g_{k+1}))`` inside the discrete Lagrangian, so a system made non-invariant by
a potential is still integrated variationally. Swapping the ends with ``h -> -h`` maps the pair
to itself, so the step stays symmetric (reversible for conservative and time-reversible
elements); the work ``W_{k+1} = W_k + h/2 (P_k + P_{k+1})``, ``P = (T^T Q_a - C_g xi) . xi`` at
the two ends, makes ``E + V - W`` conserved to second order. A Python callable element sees the
start's velocity at both ends.

*Properties.* The scheme is symmetric (``h -> -h`` with ``xi -> -xi`` swaps ``Pi^-`` and
``Pi^+``), hence second order; the velocity ``B (B^T I B)^-1 p`` lies in ``d`` to round-off.
For the vertical disk ``B^T ad_xi^T M = 0``, so ``p`` and ``xi`` are the same at every step and
the discrete contact point moves on an exact circle (``g_k = g_0 tau(xi)^k``).
"""

import numpy as np

from nhphys.lie import se2
from nhphys.twins import se2 as se2_twin
from nhphys.twins.newmark import solve_small
from nhphys.twins.newton import (
    INFO_COMMITTED,
    NOT_FINITE,
    OK,
    SINGULAR_JACOBIAN,
    NewtonRule,
    newton_solve,
)

EXP, CAYLEY = 0, 1
RESIDUAL_TOL = 4.0 * np.finfo(float).eps  # residuals at round-off end a solve (see above)


def _coefficients(w, map_code):
    """``(f, f', g, g', ev, ev')`` of the closed-form momenta at angle step ``w``."""
    if map_code == EXP:
        e = float(se2.e_coeff(w))
        de = float(se2.e_coeff_derivative(w))
        return e, de, 0.0, 0.0, e, de
    return 0.25 * w, 0.25, 0.25 * w * w, 0.5 * w, 0.0, 0.0


def momentum(xi, inertia, h, map_code, sign):
    """``Pi^-`` (``sign = +1``) or ``Pi^+`` (``sign = -1``) of a step ``xi`` (d,)."""
    M = inertia @ xi / h
    v, w = xi[:2], xi[2]
    Mv = M[:2]
    f, _, g, _, ev, _ = _coefficients(w, map_code)
    out = M.copy()
    out[:2] = Mv + w * (0.5 * sign * (se2.J2 @ Mv) - ev * Mv)
    out[2] = (M[2] + 0.5 * sign * (v[0] * Mv[1] - v[1] * Mv[0]) + f * (v @ Mv) + g * M[2])
    return out


def momentum_pair(xi, inertia, h, map_code):
    """Discrete Legendre transforms ``(Pi^-, Pi^+)`` of one step ``xi`` (d,)."""
    return momentum(xi, inertia, h, map_code, 1.0), momentum(xi, inertia, h, map_code, -1.0)


def momentum_minus_jacobian(xi, inertia, h, map_code):
    """``dPi^-/dxi``, shape (d, d)."""
    d = xi.size
    M = inertia @ xi / h
    dM = inertia / h
    v, w = xi[:2], xi[2]
    Mv = M[:2]
    f, df, g, dg, ev, dev = _coefficients(w, map_code)
    A = 0.5 * se2.J2 - ev * np.eye(2)
    e_w = np.zeros(d)
    e_w[2] = 1.0
    e_vx = np.zeros(d)
    e_vx[0] = 1.0
    e_vy = np.zeros(d)
    e_vy[1] = 1.0
    D = dM.copy()
    D[:2] = dM[:2] + w * (A @ dM[:2]) + np.outer(A @ Mv - w * dev * Mv, e_w)
    D[2] = (dM[2]
            + 0.5 * (Mv[1] * e_vx - Mv[0] * e_vy + v[0] * dM[1] - v[1] * dM[0])
            + df * (v @ Mv) * e_w
            + f * (Mv[0] * e_vx + Mv[1] * e_vy + v[0] * dM[0] + v[1] * dM[1])
            + dg * M[2] * e_w + g * dM[2])
    return D


class RetractionProblem:
    """The Newton problem of one step: ``F(y) = B^T Pi^-(B y) - p`` (see "The Newton
    problem"); counts its residual evaluations."""

    def __init__(self, inertia, basis, p, h, map_code):
        self.inertia, self.basis, self.p, self.h, self.map_code = inertia, basis, p, h, map_code
        self.evaluations = 0

    def residual(self, y):
        self.evaluations += 1
        B, h = self.basis, self.h
        self.xi = B @ y
        G = momentum(self.xi, self.inertia, h, self.map_code, 1.0)
        F = B.T @ G - self.p
        F_scale = np.abs(self.p) + np.abs(B * G[:, None]).sum(axis=0)
        return OK, F, F_scale

    def jacobian(self, y):
        B = self.basis
        return OK, B.T @ momentum_minus_jacobian(self.xi, self.inertia, self.h,
                                                 self.map_code) @ B


def retraction_step(inertia, basis, p, y, h, map_code, rule, info=None):
    """One step: solve for ``y`` (Newton), return ``(status, xi, p_new, y)``.

    Shapes: ``inertia`` (d, d), ``basis`` (d, m), ``p`` (m,), ``y`` (m,) initial guess (not
    changed); ``rule`` a :class:`~nhphys.twins.newton.NewtonRule`; ``info[1]``, when given,
    counts the residual evaluations.
    """
    y = y.copy()
    prob = RetractionProblem(inertia, basis, p, h, map_code)
    floor = np.full(y.size, np.max(np.abs(y)))
    status = newton_solve(prob.residual, prob.jacobian, y, floor, rule)
    if info is not None:
        info[1] += prob.evaluations
    xi = basis @ y
    if status != OK:
        return status, xi, p, y
    p_new = basis.T @ momentum(xi, inertia, h, map_code, -1.0)
    return OK, xi, p_new, y


def group_terms(forces, t, g, xi_call):
    """``(F_0 (d,), F_a (d,), C_g (d, d))``: the force elements' generalized forces at ``(t,
    g)`` pulled back to the group (``F_0 = T^T (Q_c + Q_a)``, ``F_a = T^T Q_a``, ``C_g = T^T C
    T``); a Python callable sees the body velocity ``xi_call``."""
    q, T = forces.model.group_coordinates(g)
    Qc, Qa, C = forces.terms(t, q, T @ xi_call)
    return T.T @ (Qc + Qa), T.T @ Qa, T.T @ (C @ T)


def node_velocity(reduced, basis, p):
    """``(z, xi)``: ``z = (B^T I B)^-1 p`` and the node velocity ``xi = B z``, or None."""
    z = solve_small(reduced, p)
    return (None, None) if z is None else (z, basis @ z)


def forced_step(inertia, basis, reduced, forces, g, p, y, h, t, map_code, rule, info):
    """One step with the force elements (module docstring, "Forces"): ``(status, xi, p_new,
    y_new, power_start, power_end)``."""
    z, xi0 = node_velocity(reduced, basis, p)
    if z is None:
        return SINGULAR_JACOBIAN, None, p, y, 0.0, 0.0
    F0, Fa, Cg = group_terms(forces, t, g, xi0)
    Cxi = Cg @ xi0
    F_start = F0 - Cxi
    power_start = (Fa - Cxi) @ xi0
    p_eff = p + 0.5 * h * (basis.T @ F_start)
    status, xi, p_plus, y_new = retraction_step(inertia, basis, p_eff, y, h, map_code, rule,
                                                info)
    if status != OK:
        return status, xi, p, y, 0.0, 0.0
    g1 = advance(g, xi, map_code)
    F0, Fa, Cg = group_terms(forces, t + h, g1, xi0)
    rhs = p_plus + 0.5 * h * (basis.T @ F0)
    if np.any(Cg):
        z1 = solve_small(reduced + 0.5 * h * (basis.T @ (Cg @ basis)), rhs)
        if z1 is None:
            return SINGULAR_JACOBIAN, xi, p, y, 0.0, 0.0
        p_new = reduced @ z1
    else:
        p_new = rhs
    # the node velocity of p_new (what the next step starts from: the same numbers)
    z1, xi1 = node_velocity(reduced, basis, p_new)
    if z1 is None:
        return SINGULAR_JACOBIAN, xi, p, y, 0.0, 0.0
    power_end = (Fa - Cg @ xi1) @ xi1
    if not np.all(np.isfinite(p_new)):
        return NOT_FINITE, xi, p, y, 0.0, 0.0
    return OK, xi, p_new, y_new, power_start, power_end


def advance(g, xi, map_code):
    """``g tau(xi[:3])`` and ``phi + xi[3:]``: the new group element (d,)."""
    retract = se2_twin.exp if map_code == EXP else se2_twin.cay  # the twins: (n, 3) -> (n, 3)
    step = retract(xi[None, :3])[0]
    g1 = np.array(g, dtype=float)
    c, s = np.cos(g[2]), np.sin(g[2])
    g1[0] += c * step[0] - s * step[1]
    g1[1] += s * step[0] + c * step[1]
    g1[2] += step[2]
    g1[3:] += xi[3:]
    return g1


def retraction_run(inertia, basis, g, p, y, h, n_steps, save_every, map_code, newton_tol,
                   max_newton, out_g, out_p, info, forces=None, clock=None, out_work=None):
    """Advance ``n_steps`` steps, saving every ``save_every``-th state.

    Parameters
    ----------
    inertia : ndarray, shape (d, d)                 # IN, d = 3 + k
    basis : ndarray, shape (d, m)                   # IN, basis of the constraint space d
    g : ndarray, shape (d,)                         # IN/OUT (x, y, theta, phi...)
    p : ndarray, shape (m,)                         # IN/OUT d* momentum
    y : ndarray, shape (m,)                         # IN/OUT last step in d-coordinates
    h : float                                       # step (negative steps go backwards)
    n_steps, save_every : int
    map_code : int                                  # 0 exp, 1 Cayley
    newton_tol : float                              # the rule's correction_tol
    max_newton : int                                # the rule's max_iter
    out_g : ndarray, shape (n_steps // save_every, d)   # OUT
    out_p : ndarray, shape (n_steps // save_every, m)   # OUT
    info : ndarray of intp, shape (3,)              # OUT: [status of the failed step,
                                                    #       residual evaluations,
                                                    #       steps committed]
    forces : nhphys.twins.models.BodyForces or None # IN, the force elements ("Forces")
    clock : ndarray, shape (2,) or None             # IN/OUT [time, work of the forces]
    out_work : ndarray, shape (n_steps // save_every,) or None   # OUT the work at the saves

    Returns
    -------
    int
        0 on success; ``k + 1`` if step ``k`` (0-based, counted from the start of this call)
        failed, with its status in ``info[0]`` and the state (``g``, ``p``, ``y``, ``clock``)
        left at the start of that step.
    """
    rule = NewtonRule(newton_tol, RESIDUAL_TOL, max_newton)
    info[0] = OK
    info[1] = 0
    info[INFO_COMMITTED] = 0
    pushed = forces is not None and not forces.empty
    reduced = basis.T @ inertia @ basis
    t, work = (float(clock[0]), float(clock[1])) if clock is not None else (0.0, 0.0)
    for k in range(n_steps):
        if pushed:
            status, xi, p_new, y_new, P0, P1 = forced_step(inertia, basis, reduced, forces, g, p,
                                                           y, h, t, map_code, rule, info)
        else:
            status, xi, p_new, y_new = retraction_step(inertia, basis, p, y, h, map_code, rule,
                                                       info)
        if status != OK:
            info[0] = status
            return k + 1
        g[:] = advance(g, xi, map_code)
        p[:] = p_new
        y[:] = y_new
        if pushed:
            work = work + 0.5 * h * (P0 + P1)
        t = t + h
        if clock is not None:
            clock[0], clock[1] = t, work
        if (k + 1) % save_every == 0:
            j = (k + 1) // save_every - 1
            out_g[j] = g
            out_p[j] = p
            if out_work is not None:
                out_work[j] = work
        info[INFO_COMMITTED] = k + 1  # last: the step and its frame are complete
    return 0
