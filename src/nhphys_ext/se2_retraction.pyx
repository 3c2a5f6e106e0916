# Variational retraction integrator on SE(2) x R^k for a left-invariant Lagrangian under a
# left-invariant constraint xi in d (Chaplygin sleigh, k = 0; vertical rolling disk, k = 1):
# the whole time loop.
#
# Design: the per-step arithmetic (closed-form discrete Legendre transforms and their Jacobian)
# is in `cdef inline ... noexcept nogil` functions; each step's Newton problem goes through the
# shared newton_solve of newton.pxd (residual and Jacobian callbacks over a problem struct);
# retraction_run() is the loop. The derivation, the Newton problem (sizes and rule) and the
# specification are in nhphys/twins/se2_retraction.py (same names, same results).
# Forces (the twin's "Forces"): the symmetric discrete Lagrange-d'Alembert pair of a BodyForces
# (nhphys_ext/models.pxd) pulled back to the group, in forced_step().
# Sizes: d = 3 + k <= 6, m <= 6.

cimport cython
from libc.math cimport sin, cos, atan, fabs, isfinite

from nhphys_ext.dense cimport congruence, invert_small, solve_small
from nhphys_ext.forcing cimport damping_map, end_kick, node_kick, node_velocity
from nhphys_ext.models cimport BodyForces, NMAX, closed_group_forces, total_force
from nhphys_ext.newton cimport newton_solve, NewtonRule, OK, SINGULAR_JACOBIAN, NOT_FINITE
from nhphys_ext.newton cimport INFO_COMMITTED, INFO_SIZE
from nhphys_ext.so3 cimport coeff_c, coeff_dc, coeff_sinc, coeff_a

DEF DMAX = 6
DEF EXP = 0
DEF RESIDUAL_TOL = 8.881784197001252e-16  # 4 units of round-off, as the twin


cdef inline void coefficients(double w, int map_code, double* co) noexcept nogil:
    # co = (f, f', g, g', ev, ev') of the closed-form momenta
    cdef double t = fabs(w)
    cdef double e
    if map_code == EXP:
        e = w * coeff_c(t)
        co[0] = e
        co[1] = coeff_c(t) + w * w * coeff_dc(t)
        co[2] = 0.0
        co[3] = 0.0
        co[4] = e
        co[5] = co[1]
    else:
        co[0] = 0.25 * w
        co[1] = 0.25
        co[2] = 0.25 * w * w
        co[3] = 0.5 * w
        co[4] = 0.0
        co[5] = 0.0


cdef inline void body_momentum(const double* xi, const double* I, int d, double h,
                               double* M) noexcept nogil:
    # M = I xi / h
    cdef int i, j
    for i in range(d):
        M[i] = 0.0
        for j in range(d):
            M[i] += I[d * i + j] * xi[j]
        M[i] /= h


cdef inline void momentum_of(const double* xi, const double* M, int d, int map_code,
                             double sign, double* out) noexcept nogil:
    # Pi^- (sign = +1) or Pi^+ (sign = -1) of the step xi with M = I xi / h
    cdef double co[6]
    cdef int i
    cdef double w = xi[2]
    coefficients(w, map_code, co)
    for i in range(3, d):
        out[i] = M[i]
    # J M_v = (-M_y, M_x)
    out[0] = M[0] + w * (0.5 * sign * (-M[1]) - co[4] * M[0])
    out[1] = M[1] + w * (0.5 * sign * M[0] - co[4] * M[1])
    out[2] = (M[2] + 0.5 * sign * (xi[0] * M[1] - xi[1] * M[0])
              + co[0] * (xi[0] * M[0] + xi[1] * M[1]) + co[2] * M[2])


cdef inline void momentum(const double* xi, const double* I, int d, double h, int map_code,
                          double sign, double* out) noexcept nogil:
    # Pi^- (sign = +1) or Pi^+ (sign = -1); I row-major d x d
    cdef double M[DMAX]
    body_momentum(xi, I, d, h, M)
    momentum_of(xi, M, d, map_code, sign, out)


cdef inline void momentum_minus_jacobian(const double* xi, const double* M, const double* I,
                                         int d, double h, int map_code,
                                         double* D) noexcept nogil:
    # D = dPi^-/dxi, row-major d x d (see the twin), given M = I xi / h. (It only steers
    # Newton, so 1/h is taken once: the solution does not depend on its last bits.)
    cdef double co[6]
    cdef double A00, A01, A10, A11, r0, r1
    cdef int i, j
    cdef double w = xi[2]
    cdef double ih = 1.0 / h
    cdef double vM
    coefficients(w, map_code, co)
    # A = J/2 - ev I = [[-ev, -1/2], [1/2, -ev]]
    A00 = -co[4]
    A01 = -0.5
    A10 = 0.5
    A11 = -co[4]
    for j in range(d):
        D[j] = (I[j] + w * (A00 * I[j] + A01 * I[d + j])) * ih
        D[d + j] = (I[d + j] + w * (A10 * I[j] + A11 * I[d + j])) * ih
    r0 = A00 * M[0] + A01 * M[1] - w * co[5] * M[0]
    r1 = A10 * M[0] + A11 * M[1] - w * co[5] * M[1]
    D[2] += r0
    D[d + 2] += r1
    vM = xi[0] * M[0] + xi[1] * M[1]
    for j in range(d):
        D[2 * d + j] = (I[2 * d + j] + 0.5 * (xi[0] * I[d + j] - xi[1] * I[j])
                        + co[0] * (xi[0] * I[j] + xi[1] * I[d + j]) + co[2] * I[2 * d + j]) * ih
    D[2 * d + 0] += 0.5 * M[1] + co[0] * M[0]
    D[2 * d + 1] += -0.5 * M[0] + co[0] * M[1]
    D[2 * d + 2] += co[1] * vM + co[3] * M[2]
    for i in range(3, d):
        for j in range(d):
            D[d * i + j] = I[d * i + j] * ih


cdef struct RetractionProblem:
    # F(y) = B^T Pi^-(B y) - p (see the twin)
    const double* I        # (d, d)
    const double* B        # (d, m)
    const double* p        # (m,)
    int d, m, map_code
    double h
    double xi[DMAX]        # B y of the last residual, for the Jacobian
    double M[DMAX]         # and its I xi / h
    Py_ssize_t evaluations


cdef int retraction_residual(void* problem, double* y, double* F,
                             double* F_scale) noexcept nogil:
    cdef RetractionProblem* pr = <RetractionProblem*>problem
    cdef int d = pr.d, m = pr.m
    cdef double G[DMAX]
    cdef int i, a
    pr.evaluations += 1
    for i in range(d):
        pr.xi[i] = 0.0
        for a in range(m):
            pr.xi[i] += pr.B[m * i + a] * y[a]
    body_momentum(pr.xi, pr.I, d, pr.h, pr.M)
    momentum_of(pr.xi, pr.M, d, pr.map_code, 1.0, G)
    for a in range(m):
        F[a] = -pr.p[a]
        F_scale[a] = fabs(pr.p[a])
        for i in range(d):
            F[a] += pr.B[m * i + a] * G[i]
            F_scale[a] += fabs(pr.B[m * i + a] * G[i])
    return OK


cdef int retraction_jacobian(void* problem, const double* y, double* Jm) noexcept nogil:
    # dF/dy = B^T (dPi^-/dxi) B at the xi of the last residual
    cdef RetractionProblem* pr = <RetractionProblem*>problem
    cdef int d = pr.d, m = pr.m
    cdef double D[DMAX * DMAX]
    cdef double DB[DMAX * DMAX]
    cdef int i, j, a, b
    momentum_minus_jacobian(pr.xi, pr.M, pr.I, d, pr.h, pr.map_code, D)
    for i in range(d):
        for b in range(m):
            DB[m * i + b] = 0.0
            for j in range(d):
                DB[m * i + b] += D[d * i + j] * pr.B[m * j + b]
    for a in range(m):
        for b in range(m):
            Jm[m * a + b] = 0.0
            for i in range(d):
                Jm[m * a + b] += pr.B[m * i + a] * DB[m * i + b]
    return OK


cdef inline int retraction_step(const double* I, const double* B, int d, int m,
                                const double* p, double* y, double h, int map_code,
                                NewtonRule rule, double* xi, double* p_new,
                                Py_ssize_t* evaluations) noexcept nogil:
    # Newton on F(y) = B^T Pi^-(B y) - p (y IN guess / OUT solution); then p_new = B^T Pi^+(xi)
    cdef RetractionProblem pr
    cdef double G[DMAX]
    cdef double floor[DMAX]
    cdef double size = 0.0
    cdef int i, a, st
    pr.I = I
    pr.B = B
    pr.p = p
    pr.d = d
    pr.m = m
    pr.map_code = map_code
    pr.h = h
    pr.evaluations = 0
    for a in range(m):
        if fabs(y[a]) > size:
            size = fabs(y[a])
    for a in range(m):
        floor[a] = size
    st = newton_solve(retraction_residual, retraction_jacobian, &pr, m, y, floor, rule)
    evaluations[0] += pr.evaluations
    for i in range(d):
        xi[i] = 0.0
        for a in range(m):
            xi[i] += B[m * i + a] * y[a]
    if st != OK:
        return st
    momentum(xi, I, d, h, map_code, -1.0, G)
    for a in range(m):
        p_new[a] = 0.0
        for i in range(d):
            p_new[a] += B[m * i + a] * G[i]
    return OK


cdef inline void retract(const double* xi, int map_code, double* step) noexcept nogil:
    # exp or Cayley of (v_x, v_y, omega) as a pose (x, y, theta)
    cdef double w = xi[2]
    cdef double s, c, den
    if map_code == EXP:
        s = coeff_sinc(fabs(w))
        c = w * coeff_a(fabs(w))          # (1 - cos w)/w
        step[0] = s * xi[0] - c * xi[1]
        step[1] = c * xi[0] + s * xi[1]
        step[2] = w
    else:
        den = 1.0 + 0.25 * w * w
        step[0] = (xi[0] - 0.5 * w * xi[1]) / den
        step[1] = (xi[1] + 0.5 * w * xi[0]) / den
        step[2] = 2.0 * atan(0.5 * w)


cdef inline void advance(double* g, const double* xi, int d, int map_code, double c,
                         double s) noexcept nogil:
    # g <- g tau(xi[:3]), phi <- phi + xi[3:] (the twin's advance); c, s = cos g[2], sin g[2]
    cdef double step[3]
    cdef int i
    retract(xi, map_code, step)
    g[0] += c * step[0] - s * step[1]
    g[1] += s * step[0] + c * step[1]
    g[2] += step[2]
    for i in range(3, d):
        g[i] += xi[i]


cdef inline const double* group_terms(BodyForces forces, double t, const double* g, double c,
                                      double s, int d, double* F0, double* Fa,
                                      double* Cg) noexcept nogil:
    # F_0 = T^T (Q_c + Q_a), F_a = T^T Q_a, C_g = T^T C T at (t, g) (the twin's group_terms);
    # returns C_g: Cg, or the run's own where it is the same at every heading
    # (`forces.heading_invariant`: the twin's T^T C T to round-off), which is then not copied.
    # Only when the forces damp (`forces.damps`; otherwise C_g is zero and not read). c, s =
    # cos g[2], sin g[2]. A sleigh's closed forms give F_0 and F_a without forming T and the
    # Jacobians (`forces.closed`: the same numbers), inline in the step.
    if forces.damps and not forces.heading_invariant:  # C_g at every step
        jacobian_group_terms(forces, t, g, d, F0, Fa, Cg)
        return Cg
    if forces.closed:
        closed_group_forces(forces, t, g, c, s, F0, Fa)
    else:
        jacobian_group_terms(forces, t, g, d, F0, Fa, NULL)
    return forces.Cg_const


cdef void jacobian_group_terms(BodyForces forces, double t, const double* g, int d, double* F0,
                               double* Fa, double* Cg) noexcept nogil:
    # group_terms through the model's T and Jacobians; C_g when Cg is not NULL
    cdef double q[NMAX]
    cdef double T[NMAX * NMAX]
    cdef double Qc[NMAX]
    cdef double Qa[NMAX]
    cdef double Q0[NMAX]
    cdef double C[NMAX * NMAX]
    cdef int n = forces.model.n
    cdef int i, a
    forces.group_terms(t, g, q, T, Qc, Qa, C if Cg != NULL else NULL)
    total_force(forces, n, Qc, Qa, Q0)
    for a in range(d):
        F0[a] = 0.0
        Fa[a] = 0.0
        for i in range(n):
            F0[a] += T[d * i + a] * Q0[i]
            Fa[a] += T[d * i + a] * Qa[i]
    if Cg != NULL:
        congruence(n, d, C, T, Cg)


cdef struct GroupTerms:
    # what a step's end leaves for the next step's start: the heading's cosine and sine and
    # node_kick's kick and power at the node (the same numbers the twin evaluates afresh)
    bint ok
    double c, s
    double kick[DMAX]      # B^T (F_0 - C_g xi): the start kick's force (node_kick)
    double power           # (F_a - C_g xi) . xi


cdef int forced_step(BodyForces forces, const double* I, const double* B, const double* reduced,
                     const double* reduced_inv, const double* damp_map, int d, int m,
                     const double* g, const double* p, double* y, double h, double t,
                     int map_code, NewtonRule rule, double* xi, double* g1, double* p_new,
                     double* powers, Py_ssize_t* evaluations, GroupTerms* kept) noexcept nogil:
    # one step with the forces (the twin's forced_step); y IN guess / OUT solution, g1 OUT the
    # new pose; powers = (power at the start, at the end); kept IN the start's heading, kick
    # and power when kept.ok (the last step's end) / OUT the end's. The kicks are
    # forcing.pxd's (shared with the SO(3) kernel); the node velocities are computed only when
    # something has power (an applied element or damping), the damping terms only when the
    # forces damp. The group terms are locals of the step: only the heading, kick and power
    # are kept for the next.
    cdef double z[DMAX]
    cdef double p_eff[DMAX]
    cdef double p_plus[DMAX]
    cdef double F0[DMAX]
    cdef double Fa[DMAX]
    cdef double Cg_buf[DMAX * DMAX]
    cdef const double* Cg
    cdef double node_xi[DMAX]
    cdef double heading
    cdef bint damps = forces.damps
    cdef bint powered = damps or forces.applies
    cdef int i, a, st
    if not kept.ok:
        heading = g[2]
        kept.c = cos(heading)
        kept.s = sin(heading)
        if powered and not node_velocity(reduced_inv, B, d, m, p, NULL, z, node_xi, NULL):
            return SINGULAR_JACOBIAN
        Cg = group_terms(forces, t, g, kept.c, kept.s, d, F0, Fa, Cg_buf)
        kept.power = node_kick(d, m, B, Cg, damps, powered, Fa, F0, node_xi, kept.kick)
    kept.ok = False
    powers[0] = kept.power
    for a in range(m):
        p_eff[a] = p[a] + 0.5 * h * kept.kick[a]
    st = retraction_step(I, B, d, m, p_eff, y, h, map_code, rule, xi, p_plus, evaluations)
    if st != OK:
        return st
    for i in range(d):
        g1[i] = g[i]
    advance(g1, xi, d, map_code, kept.c, kept.s)
    heading = g1[2]  # a local: cos and sin of one value become one sincos
    kept.c = cos(heading)
    kept.s = sin(heading)
    Cg = group_terms(forces, t + h, g1, kept.c, kept.s, d, F0, Fa, Cg_buf)
    if d == 3 and m == 2:  # the sleigh: constant sizes, which the compiler unrolls
        st = end_kick(3, 2, B, reduced, reduced_inv, damp_map, h, Cg, damps, powered, Fa, F0,
                      p_plus, p_new, kept.kick, &kept.power)
    else:
        st = end_kick(d, m, B, reduced, reduced_inv, damp_map, h, Cg, damps, powered, Fa, F0,
                      p_plus, p_new, kept.kick, &kept.power)
    if st != OK:
        return st
    powers[1] = kept.power
    kept.ok = True
    return OK


@cython.boundscheck(False)
@cython.wraparound(False)
def retraction_run(const double[:, ::1] inertia, const double[:, ::1] basis, double[::1] g,
                   double[::1] p, double[::1] y, double h, Py_ssize_t n_steps,
                   Py_ssize_t save_every, int map_code, double newton_tol, int max_newton,
                   double[:, ::1] out_g, double[:, ::1] out_p, Py_ssize_t[::1] info,
                   BodyForces forces=None, double[::1] clock=None, double[::1] out_work=None):
    """Advance ``n_steps`` steps, saving every ``save_every``-th state (see the twin).

    Parameters
    ----------
    inertia : (d, d) IN; basis : (d, m) IN; g : (d,) IN/OUT (x, y, theta, phi...);
    p : (m,) IN/OUT; y : (m,) IN/OUT; h : float; n_steps, save_every : int;
    map_code : 0 exp, 1 Cayley; newton_tol : float; max_newton : int;
    out_g : (n_steps // save_every, d) OUT; out_p : (n_steps // save_every, m) OUT;
    info : (3,) OUT, [status of the failed step, residual evaluations, steps committed];
    forces : BodyForces or None IN (its model has d coordinates); clock : (2,) or None IN/OUT
    [time, work]; out_work : (n_steps // save_every,) or None OUT, the work at the saves.

    Returns
    -------
    int
        0 on success, ``k + 1`` if step ``k`` failed (its status in ``info[0]``; the state
        left at the start of that step).
    """
    cdef int d = inertia.shape[0]
    cdef int m = basis.shape[1]
    cdef double xi[DMAX]
    cdef double p_new[DMAX]
    cdef double y_try[DMAX]
    cdef double g_new[DMAX]
    cdef double step[3]
    cdef double c, s
    cdef Py_ssize_t k, j
    cdef Py_ssize_t evaluations = 0
    cdef int i, a
    cdef int status = OK
    cdef int failed = 0
    cdef NewtonRule rule
    cdef bint pushed = forces is not None and not forces.empty
    cdef bint keep_work = out_work is not None
    cdef double reduced[DMAX * DMAX]
    cdef double reduced_inv_buf[DMAX * DMAX]
    cdef const double* reduced_inv = NULL
    cdef double damp_map_buf[DMAX * DMAX]
    cdef const double* damp_map = NULL
    cdef double powers[2]
    cdef GroupTerms kept
    cdef double t = 0.0, work = 0.0
    cdef int b
    if d > DMAX or m > DMAX or d < 3 or info.shape[0] < INFO_SIZE:
        raise ValueError(f"Expected 3 <= d <= {DMAX}, m <= {DMAX} and info of shape "
                         f"({INFO_SIZE},), got d={d}, m={m}, info ({info.shape[0]},).")
    if pushed and forces.model.n != d:
        raise ValueError(f"Expected the force elements of a model of {d} coordinates.")
    if clock is not None:
        t = clock[0]
        work = clock[1]
    kept.ok = False
    powers[0] = 0.0
    powers[1] = 0.0
    for a in range(m):  # B^T I B, as the twin (numpy) forms it: (B^T I) B
        for b in range(m):
            reduced[m * a + b] = 0.0
            for i in range(d):
                c = 0.0
                for j in range(d):
                    c += basis[j, a] * inertia[j, i]
                reduced[m * a + b] += c * basis[i, b]
    if invert_small(m, reduced, reduced_inv_buf):
        reduced_inv = reduced_inv_buf
    if pushed and forces.heading_invariant and forces.damps:
        for i in range(d * d):
            if forces.Cg_const[i] != 0.0:  # else undamped: no map (the end kick's rule)
                if damping_map(d, m, &basis[0, 0], reduced, forces.Cg_const, h, damp_map_buf):
                    damp_map = damp_map_buf
                break
    rule.correction_tol = newton_tol
    rule.residual_tol = RESIDUAL_TOL
    rule.max_iter = max_newton
    with nogil:
        for k in range(n_steps):
            for a in range(m):
                y_try[a] = y[a]
            if pushed:
                status = forced_step(forces, &inertia[0, 0], &basis[0, 0], reduced,
                                     reduced_inv, damp_map, d, m, &g[0],
                                     &p[0], y_try, h, t, map_code, rule, xi, g_new, p_new,
                                     powers, &evaluations, &kept)
            else:
                status = retraction_step(&inertia[0, 0], &basis[0, 0], d, m, &p[0], y_try, h,
                                         map_code, rule, xi, p_new, &evaluations)
            if status != OK:
                failed = <int>(k + 1)
                break
            if pushed:  # the forced step advanced the pose already (its end's forces need it)
                for i in range(d):
                    g[i] = g_new[i]
            else:
                retract(xi, map_code, step)
                c = cos(g[2])
                s = sin(g[2])
                g[0] += c * step[0] - s * step[1]
                g[1] += s * step[0] + c * step[1]
                g[2] += step[2]
                for i in range(3, d):
                    g[i] += xi[i]
            for a in range(m):
                p[a] = p_new[a]
                y[a] = y_try[a]
            if pushed:
                work = work + 0.5 * h * (powers[0] + powers[1])
            t = t + h
            if (k + 1) % save_every == 0:
                j = (k + 1) // save_every - 1
                for i in range(d):
                    out_g[j, i] = g[i]
                for a in range(m):
                    out_p[j, a] = p[a]
                if keep_work:
                    out_work[j] = work
    if clock is not None:
        clock[0] = t
        clock[1] = work
    info[0] = status
    info[1] = evaluations
    info[INFO_COMMITTED] = failed - 1 if failed else n_steps
    return failed
