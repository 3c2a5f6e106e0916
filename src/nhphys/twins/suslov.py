r"""Python twin of ``nhphys_ext.suslov``: the variational retraction integrator for a rigid body
with a fixed point under a left-invariant constraint ``Omega in d`` (the Suslov problem).

Derivation
----------
The body has orientation ``R`` (body to space), body angular velocity ``Omega``
(``dR/dt = R hat(Omega)``) and reduced Lagrangian ``l(Omega) = 1/2 Omega . I Omega``. The
constraint keeps ``Omega`` in a subspace ``d`` of the Lie algebra, spanned by the orthonormal
columns of ``B`` (3 x m); for Suslov ``d = a^perp`` and m = 2. With ``B`` the identity (m = 3)
there is no constraint and the scheme is the Lie-Poisson variational integrator of the free
rigid body.

*Discrete Lagrangian.* A step moves ``R_{k+1} = R_k tau(xi_k)``, ``xi_k = h Omega_k``, with
``tau`` = exp or cay, and ``L_d = h l(xi_k / h)``. Vary ``R_k -> R_k exp(eps eta_k)``. Then
``tau(xi_k) -> exp(-eps eta_k) tau(xi_k) exp(eps eta_{k+1})`` and, from the definition of the
right Jacobian (``tau(xi + d) = tau(xi) exp(hat(J_r(xi) d))``),

    delta xi_k = J_r(xi_k)^-1 (eta_{k+1} - tau(xi_k)^T eta_k).

With ``M_k = I xi_k / h = dl/dOmega``, the variation of the action is
``sum_k M_k . delta xi_k = sum_k (Pi_k^+ . eta_{k+1} - Pi_k^- . eta_k)`` where

    Pi_k^- = J_l(xi_k)^-T M_k   (momentum at the start of the step),
    Pi_k^+ = J_r(xi_k)^-T M_k = tau(xi_k)^T Pi_k^-   (momentum at its end),

using ``J_l = tau J_r``. These are the two discrete Legendre transforms.

*Discrete Lagrange-d'Alembert.* Variations are restricted to the constraint space,
``eta_k in d``, so the coefficient of ``eta_k`` must annihilate ``d``:

    B^T (Pi_{k-1}^+ - Pi_k^-) = 0,   xi_k = B y_k.

The state carried between steps is therefore the ``d*`` part of the momentum, ``p_k = B^T Pi``
(m numbers); the component along the constraint force is a multiplier and is never needed.
One step, given ``p``:

1. solve ``F(y) = B^T J_l(B y)^-T I B y / h - p = 0`` for ``y`` (m unknowns) by Newton;
2. ``R <- R tau(B y)``;
3. ``p <- B^T Pi^+ = p - B^T (xi x I xi) / h``, because ``Pi^- - Pi^+ = xi x M`` for both maps
   (below). This is the discrete form of ``dPi/dt = Pi x Omega``.

The node velocity is the constrained velocity with momentum ``p``:
``Omega_k = B (B^T I B)^-1 p_k``; it lies in ``d`` to round-off at every step.

*The two maps.* ``J_l^-T = J_r^-1`` and ``J_r^-T = J_l^-1``:

* exp:    ``Pi^(-/+) = M +/- xi x M / 2 + c(t) xi x (xi x M)``, ``c = 1/t^2 - (1+cos t)/(2 t sin t)``;
* cayley: ``Pi^(-/+) = M +/- xi x M / 2 + xi (xi . M) / 4``.

*Newton Jacobian.* With ``G(xi) = Pi^-(xi)`` and ``dM = I dxi / h``:
``dG = I/h + (hat(xi) I/h - hat(M))/2 + E`` with

* exp:    ``E = c (hat(xi)^2 I/h - hat(xi x M) - hat(xi) hat(M)) + (c'(t)/t) (xi x (xi x M)) xi^T``;
* cayley: ``E = ((xi . M) I + xi M^T + xi xi^T I / h) / 4``;

and ``dF/dy = B^T dG B``.

*The Newton solve* goes through the shared solver (:mod:`nhphys.twins.newton`), with

* ``x_floor_a = |y_0|`` for every unknown: the size of the warm start ``y_0`` (the last step's
  ``y``, scaled to this sub-step), i.e. the turn of this step. A component of ``y`` passing
  through zero is then judged against the step's size, as the old rule
  ``|dy| <= newton_tol |y|`` (2-norms) did; the componentwise rule is implied by that one, so it
  never takes more iterations;
* ``F_scale_a = sum_i |B_ia| |Pi^-_i| + |p_a|``: the size of the terms of ``F_a``, whose rounding
  is a few units of ``eps`` of it;
* the rule ``NewtonRule(newton_tol, RESIDUAL_TOL, max_newton)`` with ``RESIDUAL_TOL = 8 eps``:
  a residual at the level of its own rounding ends the solve before one more Jacobian. From the
  warm start a typical step takes two Jacobians (the correction test alone took three: the third
  only confirmed that the second had reached round-off). Either way the iterate is exact to
  round-off: Newton converges quadratically, so when the correction test stops on a correction
  of ``newton_tol`` relative, the iterate it returns is accurate far below that.

For exp, a root with ``|xi| >= pi`` (a turn of half a
revolution or more in one step) lies on a far branch of the Legendre transform and is reported as
a failure (``FAR_BRANCH``): the step is too large for the motion.

*Rounding.* In exact arithmetic ``R tau(xi)`` is a rotation. In floating point, the rounding of
``tau(xi)`` is the same at every step when ``xi`` is (steady rotations), so the orthogonality
error of ``R`` grows coherently, like ``n eps``. After each step ``R`` is therefore moved back
onto SO(3) by one Newton-Schulz step towards its polar factor, ``R <- R (3 I - R^T R) / 2``,
which squares the (round-off sized) error; the correction is O(eps) and changes nothing else.

*Fourth order.* The triple jump ``Phi_{g1 h} Phi_{g0 h} Phi_{g1 h}``, ``g1 = 1/(2 - 2^(1/3))``,
``g0 = 1 - 2 g1``, composes the symmetric step into a symmetric fourth-order one that keeps the
constraint exactly (``substeps``). Orders six and eight compose it likewise, by the symmetric
sets of :mod:`nhphys.integrators.coefficients` (9 and 17 sub-steps). A step is committed only
when all its sub-steps succeeded:
after a failure the state is the one at the start of the failed step.

*Forces.* A torque ``tau(t, R, Omega)`` (body frame, about the fixed point: the force
elements of :mod:`nhphys.forces`, evaluated by a :class:`nhphys.twins.forces.ForceSet` at the
pose ``(R, pivot)``) adds the discrete forces ``f^-_k . eta_k + f^+_k . eta_{k+1}`` to the
varied action. With the symmetric pair ``f^- = h/2 tau(t_k, R_k, Omega_k)``,
``f^+ = h/2 tau(t_{k+1}, R_{k+1}, Omega_{k+1})`` (:mod:`nhphys.twins.forces`) at the node
velocities ``Omega_k = B (B^T I B)^-1 p_k``, the principle reads
``B^T (Pi_{k-1}^+ + f^+_{k-1} - Pi_k^- + f^-_k) = 0``: the carried momentum is
``p_k = B^T (Pi_{k-1}^+ + f^+_{k-1})`` and a step

1'. solves ``B^T Pi^-(B y) = p + h/2 B^T tau_k`` (a shifted ``p``; the same Jacobian);
3'. ends with ``p_{k+1} = B^T (Pi^+ + h/2 (tau_0 - D Omega_{k+1}))``, ``tau_0`` every torque but
    the damping at ``(t_{k+1}, R_{k+1})`` and ``D`` the damping matrix there (angular damping,
    a motor's speed control): with ``z = (B^T I B)^-1 p_{k+1}``, ``Omega_{k+1} = B z``, the
    m x m solve ``(B^T I B + h/2 B^T D B) z = B^T Pi^+ + h/2 B^T tau_0``, then
    ``p_{k+1} = B^T I B z``.

Only ``B^T tau`` enters: the torque's component along the constraint force is taken up by the
multiplier, as ``lambda = -a . I^-1 ((I Omega) x Omega + tau) / (a . I^-1 a)`` does in the
continuous equations. A spring's torque is ``-dV`` of its potential, so its pair is the
trapezoidal quadrature ``h/2 (V(R_k) + V(R_{k+1}))`` inside the discrete Lagrangian: the scheme
stays variational and reversible, and ``E + V`` stays bounded. The work ``W_{k+1} = W_k +
h/2 (P_k + P_{k+1})``, ``P = (tau_a - D Omega) . Omega`` at each end, makes ``E + V - W``
conserved to the method's order. The triple jump composes the forced step as it does the free
one (each sub-step takes the forces at its own times), and is of order four for forces smooth in
time; a kink of a schedule (a break of a linear one, or its ends, where it starts holding its
value) inside a sub-step is integrated to ``O(h^2)`` there, and the middle sub-step steps back
past the start of its step, so a kink on the step grid does not escape it either. The node
velocity at the end is computed from ``p_{k+1}`` as at the start of the next step (the kernel
reuses it, and the end's torques, as that start). A Python callable torque sees the start's
``Omega`` at both ends.

*Properties.* Replacing ``h`` by ``-h`` and starting from ``-xi_k`` inverts a step exactly (the
scheme is symmetric, hence of even order: second). In the principal-axis Suslov case
(``I`` diagonal, ``a = e3``) ``B^T (xi x I xi) = 0``, so ``p`` (and the energy) are constant to
the last bit and ``Omega`` is constant, like the continuous flow.

Why not the formulas printed in the seed paper: see ``docs/suslov.md``.
"""

import numpy as np

from nhphys.twins import so3
from nhphys.twins.newmark import solve_small  # the kernels' dense.solve_small
from nhphys.twins.newton import (
    FAR_BRANCH,
    INFO_COMMITTED,
    NOT_FINITE,
    OK,
    SINGULAR_JACOBIAN,
    NewtonRule,
    newton_solve,
)

EXP, CAYLEY = 0, 1  # the retraction tau (nhphys.lie.retraction: ExponentialRetraction.code, ...)
RESIDUAL_TOL = 8 * np.finfo(float).eps  # residuals this small (relative to their terms) are solved


def cross(u, v):
    """``u x v`` of two 3-vectors (3,) (``numpy.cross`` costs twenty times more per call)."""
    return np.array([u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                     u[0] * v[1] - u[1] * v[0]])


def momentum_pair(xi, inertia, h, map_code):
    """Discrete Legendre transforms of one step.

    Parameters
    ----------
    xi : ndarray, shape (3,)
        Step in the Lie algebra, ``h Omega``.
    inertia : ndarray, shape (3, 3)
    h : float
    map_code : int
        0 for exp, 1 for Cayley.

    Returns
    -------
    pi_minus, pi_plus : ndarray, shape (3,)
        Momentum at the start and at the end of the step.
    """
    M = inertia @ xi / h
    half = 0.5 * cross(xi, M)
    if map_code == EXP:
        extra = so3.exp_coeff_c(np.linalg.norm(xi)) * cross(xi, cross(xi, M))
    else:
        extra = 0.25 * xi * (xi @ M)
    return M + half + extra, M - half + extra


def momentum_minus_jacobian(xi, inertia, h, map_code):
    """Derivative of ``Pi^-`` (see :func:`momentum_pair`) with respect to ``xi``: (3, 3)."""
    M = inertia @ xi / h
    K = so3.hat(xi[None])[0]
    dM = inertia / h
    d = dM + 0.5 * (K @ dM - so3.hat(M[None])[0])
    if map_code == EXP:
        t = np.linalg.norm(xi)
        xxM = cross(xi, cross(xi, M))
        d += so3.exp_coeff_c(t) * (
            K @ K @ dM - so3.hat(cross(xi, M)[None])[0] - K @ so3.hat(M[None])[0]
        )
        d += so3.exp_coeff_dc(t) * np.outer(xxM, xi)
    else:
        d += 0.25 * ((xi @ M) * np.eye(3) + np.outer(xi, M) + np.outer(xi, xi) @ dM)
    return d


def reorthonormalize(R):
    """One Newton-Schulz step towards the polar factor: ``R (3 I - R^T R) / 2``, (3, 3)."""
    return R @ (3 * np.eye(3) - R.T @ R) / 2


def retraction_step(inertia, basis, p, y, h, map_code, newton_tol, max_newton):
    """One step: solve ``F(y) = B^T Pi^-(B y) - p = 0`` for ``y`` and advance the momentum.

    Parameters
    ----------
    inertia : ndarray, shape (3, 3)
    basis : ndarray, shape (3, m)
    p : ndarray, shape (m,)
        The ``d*`` momentum at the start of the step.
    y : ndarray, shape (m,)
        Newton's first guess (not changed).
    h : float
    map_code : int
    newton_tol : float
    max_newton : int

    Returns
    -------
    status : int
        ``OK``, a status of the Newton solve, or ``FAR_BRANCH``.
    xi : ndarray, shape (3,)
        The step ``B y`` in the Lie algebra.
    p_new : ndarray, shape (m,)
        The momentum at the end of the step.
    y : ndarray, shape (m,)
        The solution.
    """
    y = np.array(y, dtype=float)

    def residual(y):
        pi_minus, _ = momentum_pair(basis @ y, inertia, h, map_code)
        return OK, basis.T @ pi_minus - p, np.abs(basis.T) @ np.abs(pi_minus) + np.abs(p)

    def jacobian(y):
        return OK, basis.T @ momentum_minus_jacobian(basis @ y, inertia, h, map_code) @ basis

    floor = np.full(y.shape, np.linalg.norm(y))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is a NOT_FINITE status
        status = newton_solve(residual, jacobian, y, floor,
                              NewtonRule(newton_tol, RESIDUAL_TOL, max_newton))
    xi = basis @ y
    if status == OK and map_code == EXP and np.linalg.norm(xi) >= np.pi:
        status = FAR_BRANCH  # a turn of pi or more per step: a spurious root of a far branch
    if status != OK:
        return status, xi, p, y
    return OK, xi, p - basis.T @ cross(xi, inertia @ xi) / h, y


def torques(forces, pivot, t, R, omega_call):
    """``(tau_0, tau_a, D)`` of ``forces`` at ``(t, R)`` about the fixed point at ``pivot``:
    every torque but the damping (3,), the applied ones (3,) (a callable sees
    ``omega_call``) and the damping matrix (3, 3)."""
    f, tau = np.zeros(3), np.zeros(3)
    forces.potential_wrench(R, pivot, f, tau)
    f, tau_a = np.zeros(3), np.zeros(3)
    forces.applied_wrench(t, R, pivot, f, tau_a)
    if forces.callables:
        forces.callable_wrench(t, R, pivot, np.zeros(3), omega_call, f, tau_a)
    D = np.zeros((3, 3))
    forces.damping(R, np.array([0.0, 0.0, 1.0]), D)
    return tau + tau_a, tau_a, D


def forced_step(inertia, basis, reduced, forces, pivot, R, p, y, h, t, map_code, newton_tol,
                max_newton):
    """One step with the torques of ``forces`` (module docstring, "Forces"):
    ``(status, R_new, p_new, y_new, power_start, power_end)``."""
    retract = so3.exp if map_code == EXP else so3.cay
    z = solve_small(reduced, p)
    if z is None:
        return SINGULAR_JACOBIAN, R, p, y, 0.0, 0.0
    omega0 = basis @ z
    tau_0, tau_a, D = torques(forces, pivot, t, R, omega0)
    Dw = D @ omega0
    power_start = (tau_a - Dw) @ omega0
    p_eff = p + 0.5 * h * (basis.T @ (tau_0 - Dw))
    status, xi, p_plus, y_new = retraction_step(inertia, basis, p_eff, y, h, map_code,
                                                newton_tol, max_newton)
    if status != OK:
        return status, R, p, y, 0.0, 0.0
    R1 = reorthonormalize(R @ retract(xi[None])[0])
    tau_0, tau_a, D = torques(forces, pivot, t + h, R1, omega0)
    rhs = p_plus + 0.5 * h * (basis.T @ tau_0)
    if np.any(D):
        z1 = solve_small(reduced + 0.5 * h * (basis.T @ (D @ basis)), rhs)
        if z1 is None:
            return SINGULAR_JACOBIAN, R, p, y, 0.0, 0.0
        p_new = reduced @ z1
    else:
        p_new = rhs
    # the node velocity of p_new (what the next step starts from: the same numbers)
    z1 = solve_small(reduced, p_new)
    if z1 is None:
        return SINGULAR_JACOBIAN, R, p, y, 0.0, 0.0
    omega1 = basis @ z1
    power_end = (tau_a - D @ omega1) @ omega1
    if not np.all(np.isfinite(p_new)):
        return NOT_FINITE, R, p, y, 0.0, 0.0
    return OK, R1, p_new, y_new, power_start, power_end


def retraction_run(inertia, basis, R, p, y, h, substeps, n_steps, save_every, map_code,
                   newton_tol, max_newton, out_R, out_p, info, forces=None, pivot=None,
                   clock=None, out_work=None):
    """Advance ``n_steps`` steps, saving every ``save_every``-th state.

    Parameters
    ----------
    inertia : ndarray, shape (3, 3)                 # IN
    basis : ndarray, shape (3, m)                   # IN, orthonormal basis of d
    R : ndarray, shape (3, 3)                       # IN/OUT orientation
    p : ndarray, shape (m,)                         # IN/OUT d* momentum
    y : ndarray, shape (m,)                         # IN/OUT last step in d-coordinates
    h : float                                       # step (negative steps go backwards)
    substeps : ndarray, shape (k,)                  # a step is k sub-steps of h * substeps[j]:
                                                    # [1.0], or a symmetric composition
    n_steps, save_every : int
    map_code : int                                  # 0 exp, 1 Cayley
    newton_tol : float
    max_newton : int
    out_R : ndarray, shape (n_steps // save_every, 3, 3)   # OUT
    out_p : ndarray, shape (n_steps // save_every, m)      # OUT
    info : ndarray, shape (3,), intp                # OUT [status of a failure (0 on success), -,
                                                    #      steps committed] (see INFO_* of newton)
    forces : nhphys.twins.forces.ForceSet or None   # IN, torques about the fixed point
                                                    # ("Forces")
    pivot : ndarray, shape (3,) or None             # IN, the fixed point in space
    clock : ndarray, shape (2,) or None             # IN/OUT [time, work of the forces]
    out_work : ndarray, shape (n_steps // save_every,) or None   # OUT the work at the saves

    Returns
    -------
    int
        0 on success; ``k + 1`` if step ``k`` (0-based, counted from the start of this call)
        failed, ``info[0]`` saying why (a status of :mod:`nhphys.twins.newton`). A step is
        committed to ``R, p, y`` (and ``clock``) only when all its sub-steps succeeded, so
        after a failure they hold the state at the start of the failed step.
    """
    retract = so3.exp if map_code == EXP else so3.cay
    info[0] = OK
    info[INFO_COMMITTED] = 0
    h_last = h * substeps[-1]  # the warm start y belongs to the last sub-step taken
    pushed = forces is not None and not forces.empty
    reduced = basis.T @ inertia @ basis
    pivot = np.zeros(3) if pivot is None else np.asarray(pivot, dtype=float)
    t, work = (float(clock[0]), float(clock[1])) if clock is not None else (0.0, 0.0)
    for k in range(n_steps):
        R_k, p_k, y_k, t_k, w_k = R.copy(), p.copy(), y.copy(), t, work
        for frac in substeps:
            y_k = y_k * (h * frac / h_last)
            h_last = h * frac
            if pushed:
                status, R_k, p_k, y_k, P0, P1 = forced_step(
                    inertia, basis, reduced, forces, pivot, R_k, p_k, y_k, h * frac, t_k,
                    map_code, newton_tol, max_newton)
            else:
                status, xi, p_k, y_k = retraction_step(
                    inertia, basis, p_k, y_k, h * frac, map_code, newton_tol, max_newton
                )
            if status != OK:
                info[0] = status
                return k + 1
            if pushed:
                w_k = w_k + 0.5 * (h * frac) * (P0 + P1)
            else:
                R_k = reorthonormalize(R_k @ retract(xi[None])[0])
            t_k = t_k + h * frac
        R[:], p[:], y[:] = R_k, p_k, y_k
        t, work = t_k, w_k
        if clock is not None:
            clock[0], clock[1] = t, work
        if (k + 1) % save_every == 0:
            j = (k + 1) // save_every - 1
            out_R[j] = R
            out_p[j] = p
            if out_work is not None:
                out_work[j] = work
        info[INFO_COMMITTED] = k + 1  # last: the step and its frame are complete
    return 0
