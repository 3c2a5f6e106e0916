# Variational retraction integrator for a rigid body with a fixed point under a left-invariant
# constraint Omega in d (Suslov, m = 2) or none (free body, m = 3): the whole time loop.
#
# Design: the step's Newton problem is a residual and a Jacobian over a `StepProblem` struct,
# solved by the shared newton_solve (nhphys_ext/newton.pxd); retraction_step() adds the far-branch
# check and the momentum update, retraction_run() is the loop, which commits a step only when all
# its sub-steps succeeded. The derivation, the Newton floors and scales, and the specification are
# in nhphys/twins/suslov.py (same names, same results). Torques of force elements (a ForceSet of
# nhphys_ext/forces.pxd) enter as the twin's symmetric pair, in forced_step().

cimport cython
from libc.math cimport fabs, sqrt, M_PI

from libc.math cimport isfinite

from nhphys_ext.so3 cimport cross3, norm3, exp3, cay3
from nhphys_ext.dense cimport invert_small, matmul3, solve_small
from nhphys_ext.forcing cimport end_kick, node_kick, node_velocity
from nhphys_ext.forces cimport ForceSet
from nhphys_ext.rigid cimport momentum_minus, momentum_minus_jacobian, reorthonormalize
from nhphys_ext.newton cimport (newton_solve, NewtonRule, OK, FAR_BRANCH, SINGULAR_JACOBIAN,
                                NOT_FINITE)
from nhphys_ext.newton cimport INFO_COMMITTED, INFO_SIZE

DEF RESIDUAL_TOL = 8 * 2.220446049250313e-16  # RESIDUAL_TOL of the twin


cdef struct StepProblem:
    const double* I   # (3, 3) inertia
    const double* B   # (3, m) orthonormal basis of d
    const double* p   # (m,) d* momentum at the start of the step
    double h
    int m
    int map_code
    double xi[3]      # B y of the last residual call (for the Jacobian)


cdef int step_residual(void* problem, double* y, double* F, double* F_scale) noexcept nogil:
    # F = B^T Pi^-(B y) - p; F_scale = |B^T| |Pi^-| + |p|
    cdef StepProblem* P = <StepProblem*>problem
    cdef const double* B = P.B
    cdef double M[3]
    cdef double G[3]
    cdef int i, a, m = P.m
    for i in range(3):
        P.xi[i] = 0.0
        for a in range(m):
            P.xi[i] += B[m * i + a] * y[a]
    momentum_minus(P.xi, P.I, P.h, P.map_code, M, G)
    for a in range(m):
        F[a] = B[a] * G[0] + B[m + a] * G[1] + B[2 * m + a] * G[2] - P.p[a]
        F_scale[a] = (fabs(B[a] * G[0]) + fabs(B[m + a] * G[1]) + fabs(B[2 * m + a] * G[2])
                      + fabs(P.p[a]))
    return OK


cdef int step_jacobian(void* problem, const double* y, double* J) noexcept nogil:
    # dF/dy = B^T (dPi^-/dxi) B at the xi of the residual call
    cdef StepProblem* P = <StepProblem*>problem
    cdef const double* B = P.B
    cdef double D[9]
    cdef double DB[9]
    cdef int i, a, b, m = P.m
    momentum_minus_jacobian(P.xi, P.I, P.h, P.map_code, D)
    for i in range(3):           # DB = D B (3 x m)
        for b in range(m):
            DB[m * i + b] = D[3 * i] * B[b] + D[3 * i + 1] * B[m + b] + D[3 * i + 2] * B[2 * m + b]
    for a in range(m):
        for b in range(m):
            J[m * a + b] = B[a] * DB[b] + B[m + a] * DB[m + b] + B[2 * m + a] * DB[2 * m + b]
    return OK


cdef inline int retraction_step(const double* I, const double* B, int m, const double* p,
                                double* y, double h, int map_code, NewtonRule rule,
                                double* xi, double* p_new) noexcept nogil:
    # y: IN first guess / OUT solution; then p_new = p - B^T (xi x I xi) / h
    cdef StepProblem P
    cdef double floor[3]
    cdef double M[3]
    cdef double xIx[3]
    cdef double s
    cdef int i, a, st
    P.I = I
    P.B = B
    P.p = p
    P.h = h
    P.m = m
    P.map_code = map_code
    s = 0.0
    for a in range(m):
        s += y[a] * y[a]
    s = sqrt(s)
    for a in range(m):
        floor[a] = s
    st = newton_solve(step_residual, step_jacobian, &P, m, y, floor, rule)
    if st != OK:
        return st
    for i in range(3):
        xi[i] = 0.0
        for a in range(m):
            xi[i] += B[m * i + a] * y[a]
    if map_code == 0 and norm3(xi) >= M_PI:
        return FAR_BRANCH  # a turn of pi or more per step: a spurious root of a far branch
    for i in range(3):
        M[i] = I[3 * i] * xi[0] + I[3 * i + 1] * xi[1] + I[3 * i + 2] * xi[2]
    cross3(xi, M, xIx)
    for a in range(m):
        s = B[a] * xIx[0] + B[m + a] * xIx[1] + B[2 * m + a] * xIx[2]
        p_new[a] = p[a] - s / h
    return OK


cdef inline void torques(ForceSet forces, const double* pivot, double t, const double* R,
                         double* tau_0, double* tau_a, double* D) noexcept nogil:
    # the twin's torques (without callables): every torque but the damping, the applied ones,
    # and the damping matrix, about the fixed point at pivot; D only when the set damps
    # (otherwise it is zero and left unset). The parts that cannot be nonzero are skipped: the
    # same numbers.
    cdef double f[3]
    cdef double tau[3]
    cdef double n[3]
    cdef int i
    for i in range(3):
        f[i] = 0.0
        tau[i] = 0.0
        tau_a[i] = 0.0
    if forces.has_potential:
        forces.potential_wrench(R, pivot, f, tau)
    if forces.has_applied:
        for i in range(3):
            f[i] = 0.0
        forces.applied_wrench(t, R, pivot, f, tau_a)
    for i in range(3):
        tau_0[i] = tau[i] + tau_a[i]
    if forces.has_damping:
        n[0] = 0.0
        n[1] = 0.0
        n[2] = 1.0
        for i in range(9):
            D[i] = 0.0
        forces.damping(R, n, D)


cdef struct Torques:
    # torques and the node velocity at one (t, R, p): the end's of a step are the next step's
    # start's
    bint ok
    double tau_0[3]
    double tau_a[3]
    double D[9]
    double omega[3]     # the node velocity where it is evaluated afresh (not kept)
    double kick[3]      # B^T (tau_0 - D omega): the start kick's torque (node_kick)
    double power        # (tau_a - D omega) . omega


cdef int forced_step(ForceSet forces, const double* pivot, const double* I, const double* B,
                     const double* reduced, const double* reduced_inv, int m, const double* R,
                     const double* p, double* y,
                     double h, double t, int map_code, NewtonRule rule, double* R1,
                     double* p_new, double* powers, Torques* kept) noexcept nogil:
    # one step with the torques of forces (the twin's forced_step); y IN guess / OUT solution;
    # kept IN the start's torques when kept.ok (the last step's end: the same numbers the twin
    # evaluates afresh) / OUT the end's. The kicks are forcing.pxd's (shared with the SE(2)
    # kernel, d = 3): the node velocities are computed only when something has power.
    cdef double z[3]
    cdef double p_eff[3]
    cdef double p_plus[3]
    cdef double xi[3]
    cdef double Q[9]
    cdef bint damps = forces.has_damping
    cdef bint powered = damps or forces.has_applied
    cdef int a, st
    if not kept.ok:
        if powered and not node_velocity(reduced_inv, B, 3, m, p, NULL, z, kept.omega, NULL):
            return SINGULAR_JACOBIAN
        torques(forces, pivot, t, R, kept.tau_0, kept.tau_a, kept.D)
        kept.power = node_kick(3, m, B, kept.D, damps, powered, kept.tau_a, kept.tau_0,
                               kept.omega, kept.kick)
    kept.ok = False
    powers[0] = kept.power
    for a in range(m):
        p_eff[a] = p[a] + 0.5 * h * kept.kick[a]
    st = retraction_step(I, B, m, p_eff, y, h, map_code, rule, xi, p_plus)
    if st != OK:
        return st
    if map_code == 0:
        exp3(xi, Q)
    else:
        cay3(xi, Q)
    matmul3(R, Q, R1)
    reorthonormalize(R1)
    torques(forces, pivot, t + h, R1, kept.tau_0, kept.tau_a, kept.D)
    if m == 2:  # the Suslov constraint: constant sizes, which the compiler unrolls
        st = end_kick(3, 2, B, reduced, reduced_inv, NULL, h, kept.D, damps, powered,
                      kept.tau_a, kept.tau_0, p_plus, p_new, kept.kick, &kept.power)
    else:
        st = end_kick(3, m, B, reduced, reduced_inv, NULL, h, kept.D, damps, powered,
                      kept.tau_a, kept.tau_0, p_plus, p_new, kept.kick, &kept.power)
    if st != OK:
        return st
    powers[1] = kept.power
    kept.ok = True
    return OK


@cython.boundscheck(False)
@cython.wraparound(False)
def retraction_run(const double[:, ::1] inertia, const double[:, ::1] basis,
                   double[:, ::1] R, double[::1] p, double[::1] y, double h,
                   const double[::1] substeps, Py_ssize_t n_steps, Py_ssize_t save_every,
                   int map_code, double newton_tol, int max_newton,
                   double[:, :, ::1] out_R, double[:, ::1] out_p, Py_ssize_t[::1] info,
                   ForceSet forces=None, pivot=None, double[::1] clock=None,
                   double[::1] out_work=None):
    """Advance ``n_steps`` steps, saving every ``save_every``-th state (see the twin).

    Parameters
    ----------
    inertia : (3, 3) IN; basis : (3, m) IN; R : (3, 3) IN/OUT; p : (m,) IN/OUT;
    y : (m,) IN/OUT; h : float; substeps : (k,) fractions of h; n_steps, save_every : int;
    map_code : 0 exp, 1 Cayley;
    newton_tol : float; max_newton : int; out_R : (n_steps // save_every, 3, 3) OUT;
    out_p : (n_steps // save_every, m) OUT; info : (3,) OUT [the status of a failure, -,
    steps committed];
    info : (1,) OUT the status of a failure;
    forces : ForceSet or None IN, torques about the fixed point; pivot : (3,) or None IN, the
    fixed point in space; clock : (2,) or None IN/OUT [time, work]; out_work :
    (n_steps // save_every,) or None OUT, the work at the saves.

    Returns
    -------
    int
        0 on success, ``k + 1`` if step ``k`` failed (``info[0]`` says why; ``R, p, y`` hold
        the state at the start of that step: a step is committed only when all its sub-steps
        succeeded).
    """
    cdef int m = basis.shape[1]
    cdef double xi[3]
    cdef double Q[9]
    cdef double Rk[9]      # the state of the step being taken (committed when it succeeded)
    cdef double Rn[9]
    cdef double pk[3]
    cdef double pn[3]
    cdef double yk[3]
    cdef double R0[9]      # the committed state
    cdef double p0[3]
    cdef double y0[3]
    cdef Py_ssize_t k, j, n_sub = substeps.shape[0]
    cdef int i, a, st = OK
    cdef int status = 0
    cdef double h_last = h * substeps[n_sub - 1], hj
    cdef NewtonRule rule
    cdef bint pushed = forces is not None and not forces.empty
    cdef bint keep_work = out_work is not None
    cdef double piv[3]
    cdef double reduced[9]
    cdef double reduced_inv_buf[9]
    cdef const double* reduced_inv = NULL
    cdef double powers[2]
    cdef Torques kept
    cdef double t = 0.0, work = 0.0, tk, wk
    cdef int b
    piv[0] = piv[1] = piv[2] = 0.0
    if pivot is not None:
        for i in range(3):
            piv[i] = float(pivot[i])
    if clock is not None:
        t = clock[0]
        work = clock[1]
    kept.ok = False
    for a in range(m):  # B^T I B, as the twin (numpy) forms it: (B^T I) B
        for b in range(m):
            reduced[m * a + b] = 0.0
            for i in range(3):
                reduced[m * a + b] += (basis[0, a] * inertia[0, i] + basis[1, a] * inertia[1, i]
                                       + basis[2, a] * inertia[2, i]) * basis[i, b]
    if invert_small(m, reduced, reduced_inv_buf):
        reduced_inv = reduced_inv_buf
    rule.correction_tol = newton_tol
    rule.residual_tol = RESIDUAL_TOL
    rule.max_iter = max_newton
    if info.shape[0] < INFO_SIZE:
        raise ValueError(f"Expected `info` of shape ({INFO_SIZE},), got ({info.shape[0]},).")
    info[0] = OK
    for i in range(9):
        R0[i] = R[i // 3, i % 3]
    for a in range(m):
        p0[a] = p[a]
        y0[a] = y[a]
    with nogil:
        for k in range(n_steps):
            for i in range(9):
                Rk[i] = R0[i]
            for a in range(m):
                pk[a] = p0[a]
                yk[a] = y0[a]
            tk = t
            wk = work
            for j in range(n_sub):
                hj = h * substeps[j]
                for a in range(m):
                    yk[a] *= hj / h_last  # the warm start belongs to the last sub-step
                h_last = hj
                if pushed:
                    st = forced_step(forces, piv, &inertia[0, 0], &basis[0, 0], reduced,
                                     reduced_inv, m, Rk, pk, yk, hj, tk, map_code, rule, Rn,
                                     pn, powers, &kept)
                    if st != OK:
                        break
                    wk = wk + 0.5 * hj * (powers[0] + powers[1])
                else:
                    st = retraction_step(&inertia[0, 0], &basis[0, 0], m, pk, yk, hj, map_code,
                                         rule, xi, pn)
                    if st != OK:
                        break
                    if map_code == 0:
                        exp3(xi, Q)
                    else:
                        cay3(xi, Q)
                    matmul3(Rk, Q, Rn)
                    reorthonormalize(Rn)
                tk = tk + hj
                for i in range(9):
                    Rk[i] = Rn[i]
                for a in range(m):
                    pk[a] = pn[a]
            if st != OK:
                info[0] = st
                status = <int>(k + 1)
                break
            for i in range(9):
                R0[i] = Rk[i]
            for a in range(m):
                p0[a] = pk[a]
                y0[a] = yk[a]
            t = tk
            work = wk
            if (k + 1) % save_every == 0:
                j = (k + 1) // save_every - 1
                for i in range(9):
                    out_R[j, i // 3, i % 3] = R0[i]
                for a in range(m):
                    out_p[j, a] = p0[a]
                if keep_work:
                    out_work[j] = work
    for i in range(9):
        R[i // 3, i % 3] = R0[i]
    for a in range(m):
        p[a] = p0[a]
        y[a] = y0[a]
    if clock is not None:
        clock[0] = t
        clock[1] = work
    info[INFO_COMMITTED] = status - 1 if status else n_steps
    return status
