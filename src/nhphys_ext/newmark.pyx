# Nonholonomic Newmark family, DLA, and their compositions on R^n, for the built-in models of
# nhphys_ext/models.pxd: the whole time loop.
#
# Design: the system is a CoordinateModel (its functions are virtual `noexcept nogil` methods,
# so this file knows no system); the steps (explicit Newmark in closed form, the implicit
# members and DLA as Newton problems for the shared newton_solve of newton.pxd, with their
# residual and Jacobian callbacks over a problem struct) are `cdef` functions on raw row-major
# arrays; and nonholonomic_run() is the loop. The derivation, the Newton problems (sizes and
# rule) and the specification are in nhphys/twins/newmark.py (same names, same results).
# Sizes: n <= NMAX (8), r <= RMAX (4).

cimport cython
from libc.math cimport NAN, fabs, isfinite

from nhphys_ext.dense cimport invert_small, max_abs, solve_columns, solve_small
from nhphys_ext.models cimport BodyForces, CoordinateModel, NMAX, RMAX, total_force
from nhphys_ext.newton cimport INFO_COMMITTED, INFO_SIZE
from nhphys_ext.newton cimport (newton_solve, NewtonRule, OK, SINGULAR_JACOBIAN,
                                NOT_FINITE)

DEF ZMAX = 12  # n + r
DEF NEWMARK = 0
DEF DLA_MIDPOINT = 1
DEF POINT = 0
DEF RESIDUAL_TOL = 8.881784197001252e-16  # 4 units of round-off, as nhphys/twins/newmark.py


# -- small dense linear algebra ---------------------------------------------------------------
cdef inline void matvec(const double* A, const double* x, int rows, int cols,
                        double* out) noexcept nogil:
    cdef int i, j
    for i in range(rows):
        out[i] = 0.0
        for j in range(cols):
            out[i] += A[cols * i + j] * x[j]


cdef inline void n_matrix(const double* Minv, const double* mu, int n, int r,
                          double* N) noexcept nogil:
    # N = M^-1 mu^T, row-major (n, r)
    cdef int i, j, a
    for i in range(n):
        for a in range(r):
            N[r * i + a] = 0.0
            for j in range(n):
                N[r * i + a] += Minv[n * i + j] * mu[n * a + j]


cdef inline void mu_times(const double* mu, const double* N, int n, int r,
                          double* C) noexcept nogil:
    # C = mu N, (r, r)
    cdef int a, b, i
    for a in range(r):
        for b in range(r):
            C[r * a + b] = 0.0
            for i in range(n):
                C[r * a + b] += mu[n * a + i] * N[r * i + b]


cdef inline bint solve_r(int r, double* C, double* rhs) noexcept nogil:
    # solve_small on the r x r systems of the constraints, with the one-constraint case (most
    # systems) inline: the same division solve_small does, without the call
    if r == 1:
        if C[0] == 0.0:
            return False
        rhs[0] /= C[0]
        return True
    return solve_small(r, C, rhs)


cdef inline bint all_finite(const double* x, int k) noexcept nogil:
    cdef int i
    for i in range(k):
        if not isfinite(x[i]):
            return False
    return True


# -- the model at the last points --------------------------------------------------------------
cdef struct PointCache:
    # mu and grad V at the last point each was evaluated at. A step starts where the last one
    # ended, so its first evaluations are the last step's final ones: the same values, without
    # calling the model again.
    bint mu_ok
    bint g_ok
    double q_mu[NMAX]
    double q_g[NMAX]
    double mu[RMAX * NMAX]
    double g[NMAX]


cdef inline bint same_point(const double* a, const double* b, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef inline void mu_at(CoordinateModel model, PointCache* c, const double* q,
                       double* out) noexcept nogil:
    # out = mu(q), (r, n)
    cdef int i, n = model.n, k = model.r * model.n
    if c.mu_ok and same_point(c.q_mu, q, n):
        for i in range(k):
            out[i] = c.mu[i]
        return
    model.constraint_matrix(q, out)
    for i in range(k):
        c.mu[i] = out[i]
    for i in range(n):
        c.q_mu[i] = q[i]
    c.mu_ok = True


cdef inline void grad_at(CoordinateModel model, PointCache* c, const double* q,
                         double* out) noexcept nogil:
    # out = grad V(q), (n,)
    cdef int i, n = model.n
    if c.g_ok and same_point(c.q_g, q, n):
        for i in range(n):
            out[i] = c.g[i]
        return
    model.grad_potential(q, out)
    for i in range(n):
        c.g[i] = out[i]
        c.q_g[i] = q[i]
    c.g_ok = True


# -- forces: the discrete Lagrange-d'Alembert pair (the twin's "Forces" and ForcePair) ----------
cdef struct ForceStep:
    # the discrete forces of one (sub-)step: Q at its start (known) and, after force_end, the
    # end's Q_0 - C v1 and power, which are the next (sub-)step's start
    void* forces            # BodyForces, borrowed
    double t1               # the end's time
    double Q_start[NMAX]    # Q(t_k, q_k, v_k)
    double power_start
    double Q_next[NMAX]     # Q(t_{k+1}, q_{k+1}, v_{k+1})
    double power_end
    double K_h              # the step of Kinv and KinvM below (NaN: not formed)
    double Kinv[NMAX * NMAX]    # (M + h/2 C)^-1 where C is a constant (forces.constant_C)
    double KinvM[NMAX * NMAX]   # and (M + h/2 C)^-1 M


cdef bint constant_kick(int n, const double* M, const double* C, double h,
                        ForceStep* fs) noexcept nogil:
    # fs.Kinv, fs.KinvM for the constant C and the step h; False if K = M + h/2 C is singular
    cdef double K[NMAX * NMAX]
    cdef int i, j, k
    for i in range(n * n):
        K[i] = M[i] + 0.5 * h * C[i]
    if not invert_small(n, K, fs.Kinv):
        return False
    for i in range(n):
        for j in range(n):
            fs.KinvM[n * i + j] = fs.Kinv[n * i] * M[j]
            for k in range(1, n):
                fs.KinvM[n * i + j] += fs.Kinv[n * i + k] * M[n * k + j]
    fs.K_h = h
    return True


cdef inline void force_start(BodyForces forces, ForceStep* fs, double t, const double* q0,
                             const double* v0) noexcept nogil:
    # Q_start = (Q_c + Q_a) - C v0 and its power (Q_a - C v0) . v0 at (t, q0, v0) (without
    # damping C v0 is zero and skipped: the same numbers)
    cdef int n = forces.model.n
    cdef double Qc[NMAX]
    cdef double Qa[NMAX]
    cdef double Q0[NMAX]
    cdef double C[NMAX * NMAX]
    cdef double Cv
    cdef int i, j
    if not forces.damps:
        forces.terms(t, q0, Qc, Qa, NULL)
        total_force(forces, n, Qc, Qa, fs.Q_start)
        fs.power_start = 0.0
        for i in range(n):
            fs.power_start += Qa[i] * v0[i]
        return
    forces.terms(t, q0, Qc, Qa, C)
    total_force(forces, n, Qc, Qa, Q0)
    fs.power_start = 0.0
    for i in range(n):
        Cv = 0.0
        for j in range(n):
            Cv += C[n * i + j] * v0[j]
        fs.Q_start[i] = Q0[i] - Cv
        fs.power_start += (Qa[i] - Cv) * v0[i]


cdef inline int force_end(ForceStep* fs, CoordinateModel model, const double* M,
                          const double* Minv, const double* q1, double h, const double* u,
                          const double* X, const double* mu1, double* v1) noexcept nogil:
    # v1 of the end kick (the twin's ForcePair.end): K v1 = M u + h/2 Q_0 + h/2 M X lambda',
    # K = M + h/2 C, with mu1 v1 = 0; X (n, r) row-major
    # constant sizes for the sleigh and the vertical disk, whose loops the compiler unrolls
    if model.n == 3 and model.r == 1:
        return force_end_of(<BodyForces>fs.forces, fs, 3, 1, M, Minv, q1, h, u, X, mu1, v1)
    if model.n == 4 and model.r == 2:
        return force_end_of(<BodyForces>fs.forces, fs, 4, 2, M, Minv, q1, h, u, X, mu1, v1)
    return force_end_of(<BodyForces>fs.forces, fs, model.n, model.r, M, Minv, q1, h, u, X, mu1,
                        v1)


cdef inline int force_end_of(BodyForces forces, ForceStep* fs, int n, int r, const double* M,
                             const double* Minv, const double* q1, double h, const double* u,
                             const double* X, const double* mu1, double* v1) noexcept nogil:
    # Without damping (`forces.damps` False, C = 0) K = M: the solves are M^-1 products, and
    # the C v1 terms are zeros, skipped. With damping, K x = M u + h/2 Q_0 and K XK = M X are
    # solved with one elimination of K (each column the numbers of its own solve); where C is
    # a constant (`forces.constant_C`), through K^-1 and K^-1 M formed once per step size (the
    # twin's solves to round-off).
    cdef int k = r + 1
    cdef double Qc[NMAX]
    cdef double Qa[NMAX]
    cdef double Q0[NMAX]
    cdef double C[NMAX * NMAX]
    cdef double K[NMAX * NMAX]
    cdef double x[NMAX]
    cdef double XK[NMAX * RMAX]
    cdef double RHS[NMAX * (RMAX + 1)]   # (n, r + 1): x, then the columns of XK
    cdef double Cm[RMAX * RMAX]
    cdef double rhs[RMAX]
    cdef double s, Cv
    cdef double power
    cdef bint damped = False
    cdef int i, j, a
    if forces.damps:
        forces.terms(fs.t1, q1, Qc, Qa, C)
        for i in range(n * n):
            if C[i] != 0.0:
                damped = True
    else:
        forces.terms(fs.t1, q1, Qc, Qa, NULL)
    total_force(forces, n, Qc, Qa, Q0)
    if damped and forces.constant_C:
        if fs.K_h != h and not constant_kick(n, M, C, h, fs):  # (NaN != h: not formed yet)
            return SINGULAR_JACOBIAN
        for i in range(n):
            s = fs.KinvM[n * i] * u[0]
            Cv = fs.Kinv[n * i] * Q0[0]
            for j in range(1, n):
                s += fs.KinvM[n * i + j] * u[j]
                Cv += fs.Kinv[n * i + j] * Q0[j]
            x[i] = s + 0.5 * h * Cv
            for a in range(r):
                s = fs.KinvM[n * i] * X[a]
                for j in range(1, n):
                    s += fs.KinvM[n * i + j] * X[r * j + a]
                XK[r * i + a] = s
    elif damped:
        for i in range(n * n):
            K[i] = M[i] + 0.5 * h * C[i]
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += M[n * i + j] * u[j]
            RHS[k * i] = s + 0.5 * h * Q0[i]
            for a in range(r):
                s = 0.0
                for j in range(n):
                    s += M[n * i + j] * X[r * j + a]
                RHS[k * i + 1 + a] = s
        if not solve_columns(n, K, RHS, k):
            return SINGULAR_JACOBIAN
        for i in range(n):
            x[i] = RHS[k * i]
            for a in range(r):
                XK[r * i + a] = RHS[k * i + 1 + a]
    else:
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += Minv[n * i + j] * Q0[j]
            x[i] = u[i] + 0.5 * h * s
        for i in range(n * r):
            XK[i] = X[i]
    mu_times(mu1, XK, n, r, Cm)
    matvec(mu1, x, r, n, rhs)
    if not solve_r(r, Cm, rhs):
        return SINGULAR_JACOBIAN
    power = 0.0
    for i in range(n):
        v1[i] = x[i]
        for a in range(r):
            v1[i] -= XK[r * i + a] * rhs[a]
    if forces.damps:
        for i in range(n):
            Cv = 0.0
            for j in range(n):
                Cv += C[n * i + j] * v1[j]
            fs.Q_next[i] = Q0[i] - Cv
            power += (Qa[i] - Cv) * v1[i]
    else:
        for i in range(n):
            fs.Q_next[i] = Q0[i]
            power += Qa[i] * v1[i]
    fs.power_end = power  # (summed in a local: fs may alias the arrays for the compiler)
    if not all_finite(v1, n):
        return NOT_FINITE
    return OK


# -- discrete constraints -------------------------------------------------------------------
cdef inline void constraint_matrix_alpha(CoordinateModel model, const double* q0,
                                         const double* q1, double alpha, int disc,
                                         const double* mu0, const double* mu1,
                                         double* out) noexcept nogil:
    # mu(q_alpha) ("point") or (1 - alpha) mu0 + alpha mu1 ("average"), (r, n); mu0 and mu1
    # at q0 and q1 (the ends of "point" reuse them: q_0 = q0 and q_1 = q1 exactly)
    cdef double qa[NMAX]
    cdef int i, n = model.n, r = model.r
    if disc == POINT:
        if alpha == 0.0:
            for i in range(r * n):
                out[i] = mu0[i]
        elif alpha == 1.0:
            for i in range(r * n):
                out[i] = mu1[i]
        else:
            for i in range(n):
                qa[i] = (1.0 - alpha) * q0[i] + alpha * q1[i]
            model.constraint_matrix(qa, out)
    else:
        for i in range(r * n):
            out[i] = (1.0 - alpha) * mu0[i] + alpha * mu1[i]


cdef inline void constraint_value(const double* mu_alpha, const double* q0, const double* q1,
                                  int n, int r, double* F, double* F_scale) noexcept nogil:
    # Phi = mu_alpha (q1 - q0) and its F_scale sum_i |mu_ai| (|q1_i| + |q0_i|)
    cdef int a, i
    for a in range(r):
        F[a] = 0.0
        F_scale[a] = 0.0
        for i in range(n):
            F[a] += mu_alpha[n * a + i] * (q1[i] - q0[i])
            F_scale[a] += fabs(mu_alpha[n * a + i]) * (fabs(q1[i]) + fabs(q0[i]))


cdef inline void constraint_jacobian(CoordinateModel model, const double* q0,
                                     const double* q1, double alpha, int disc,
                                     const double* mu_alpha, double* J, int z) noexcept nogil:
    # dPhi/dq1 = alpha Dmu(q_d)[q1 - q0] + mu_alpha into rows n.. of J (row stride z)
    cdef double qd[NMAX]
    cdef double dmu[RMAX * NMAX * NMAX]
    cdef double s
    cdef int a, i, j, n = model.n, r = model.r
    if alpha == 0.0:
        for a in range(r):
            for j in range(n):
                J[z * (n + a) + j] = mu_alpha[n * a + j]
        return
    if disc == POINT:
        for i in range(n):
            qd[i] = (1.0 - alpha) * q0[i] + alpha * q1[i]
        model.constraint_matrix_derivative(qd, dmu)
    else:
        model.constraint_matrix_derivative(q1, dmu)
    for a in range(r):
        for j in range(n):
            s = 0.0
            for i in range(n):
                s += dmu[a * n * n + i * n + j] * (q1[i] - q0[i])
            J[z * (n + a) + j] = alpha * s + mu_alpha[n * a + j]


# -- Newmark --------------------------------------------------------------------------------
cdef int newmark_explicit_step(CoordinateModel model, const double* M, const double* Minv,
                               const double* q0, const double* v0, double h, double* q1,
                               double* v1, double* lam, ForceStep* fs) noexcept nogil:
    # F_h^{0,0,0} in closed form (see the twin); fs the step's forces or NULL
    cdef int n = model.n, r = model.r
    cdef double mu[RMAX * NMAX]
    cdef double N[NMAX * RMAX]
    cdef double C[RMAX * RMAX]
    cdef double g[NMAX]
    cdef double Mg[NMAX]
    cdef double a0[NMAX]
    cdef double w[NMAX]
    cdef double rhs[RMAX]
    cdef double tmp[RMAX]
    cdef int i, a
    cdef double u[NMAX]
    # (no PointCache here: for the cheapest step its bookkeeping costs what it saves)
    model.constraint_matrix(q0, mu)
    model.grad_potential(q0, g)
    if fs != NULL:
        for i in range(n):
            g[i] = g[i] - fs.Q_start[i]  # the force at the start enters as -grad V does
    n_matrix(Minv, mu, n, r, N)
    mu_times(mu, N, n, r, C)
    matvec(Minv, g, n, n, Mg)
    matvec(mu, Mg, r, n, rhs)
    matvec(mu, v0, r, n, tmp)
    for a in range(r):
        rhs[a] -= (2.0 / h) * tmp[a]
    if not solve_r(r, C, rhs):
        return SINGULAR_JACOBIAN
    for a in range(r):
        lam[a] = rhs[a]
    for i in range(n):
        a0[i] = -Mg[i]
        for a in range(r):
            a0[i] += N[r * i + a] * lam[a]
        q1[i] = q0[i] + h * v0[i] + 0.5 * h * h * a0[i]
        w[i] = v0[i] + 0.5 * h * a0[i]
    model.constraint_matrix(q1, mu)
    model.grad_potential(q1, g)
    n_matrix(Minv, mu, n, r, N)
    if fs != NULL:
        matvec(Minv, g, n, n, Mg)
        for i in range(n):
            u[i] = w[i] - 0.5 * h * Mg[i]
        return force_end(fs, model, M, Minv, q1, h, u, N, mu, v1)
    mu_times(mu, N, n, r, C)
    matvec(Minv, g, n, n, Mg)
    matvec(mu, Mg, r, n, rhs)
    matvec(mu, w, r, n, tmp)
    for a in range(r):
        rhs[a] -= (2.0 / h) * tmp[a]
    if not solve_r(r, C, rhs):
        return SINGULAR_JACOBIAN
    for i in range(n):
        v1[i] = w[i] - 0.5 * h * Mg[i]
        for a in range(r):
            v1[i] += 0.5 * h * N[r * i + a] * rhs[a]
    if not (all_finite(q1, n) and all_finite(v1, n)):
        return NOT_FINITE
    return OK


cdef struct NewmarkProblem:
    # the Newton problem of an implicit Newmark step, x = (q1, lambda) (see the twin)
    void* model            # CoordinateModel, borrowed
    const double* Minv     # its inverse mass matrix (the loop's copy)
    PointCache* cache
    const double* q0
    const double* v0
    double h, beta, alpha
    int disc
    double mu0[RMAX * NMAX]
    double N0[NMAX * RMAX]
    double b0[NMAX]        # -M^-1 grad V(q0)
    double f0[NMAX]        # M^-1 Q^-: the force at the start (forward map, weight one)
    # stored by the residual at the q1 it evaluated (q_eval), for the Jacobian and the update
    double q_eval[NMAX]
    double mu1[RMAX * NMAX]
    double N1[NMAX * RMAX]
    double b1[NMAX]
    double P[NMAX * RMAX]  # (1 - 2 beta) N0 + 2 beta N1
    double mu_alpha[RMAX * NMAX]
    Py_ssize_t evaluations


cdef inline void newmark_evaluate_at(NewmarkProblem* pr, CoordinateModel model,
                                     const double* q1) noexcept nogil:
    # mu1, N1, b1, P at q1
    cdef int i, n = model.n, r = model.r
    cdef double g[NMAX]
    mu_at(model, pr.cache, q1, pr.mu1)
    n_matrix(pr.Minv, pr.mu1, n, r, pr.N1)
    grad_at(model, pr.cache, q1, g)
    matvec(pr.Minv, g, n, n, pr.b1)
    for i in range(n):
        pr.b1[i] = -pr.b1[i]
        pr.q_eval[i] = q1[i]
    for i in range(n * r):
        pr.P[i] = (1.0 - 2.0 * pr.beta) * pr.N0[i] + 2.0 * pr.beta * pr.N1[i]


cdef int newmark_residual(void* problem, double* x, double* F,
                          double* F_scale) noexcept nogil:
    cdef NewmarkProblem* pr = <NewmarkProblem*>problem
    return newmark_residual_of(pr, <CoordinateModel>pr.model, x, F, F_scale)


cdef inline int newmark_residual_of(NewmarkProblem* pr, CoordinateModel model, double* x,
                                    double* F, double* F_scale) noexcept nogil:
    cdef int n = model.n, r = model.r
    cdef double h = pr.h, beta = pr.beta
    cdef double Pl[NMAX]
    cdef int i
    pr.evaluations += 1
    newmark_evaluate_at(pr, model, x)
    matvec(pr.P, &x[n], n, r, Pl)
    for i in range(n):
        F[i] = (x[i] - pr.q0[i] - h * pr.v0[i]
                - 0.5 * h * h * ((1.0 - 2.0 * beta) * pr.b0[i] + 2.0 * beta * pr.b1[i] + Pl[i]
                                 + pr.f0[i]))
        F_scale[i] = (fabs(x[i]) + fabs(pr.q0[i]) + fabs(h * pr.v0[i])
                      + 0.5 * h * h * (fabs((1.0 - 2.0 * beta) * pr.b0[i])
                                       + fabs(2.0 * beta * pr.b1[i]) + fabs(Pl[i])
                                       + fabs(pr.f0[i])))
    constraint_matrix_alpha(model, pr.q0, x, pr.alpha, pr.disc, pr.mu0, pr.mu1, pr.mu_alpha)
    constraint_value(pr.mu_alpha, pr.q0, x, n, r, &F[n], &F_scale[n])
    return OK


cdef int newmark_jacobian(void* problem, const double* x, double* J) noexcept nogil:
    cdef NewmarkProblem* pr = <NewmarkProblem*>problem
    return newmark_jacobian_of(pr, <CoordinateModel>pr.model, x, J)


cdef inline int newmark_jacobian_of(NewmarkProblem* pr, CoordinateModel model, const double* x,
                                    double* J) noexcept nogil:
    cdef int n = model.n, r = model.r
    cdef int z = n + r
    cdef double h = pr.h
    cdef double H[NMAX * NMAX]
    cdef double T[NMAX * NMAX]
    cdef double dmu[RMAX * NMAX * NMAX]
    cdef double s
    cdef int i, j, k, a
    for i in range(n):
        for j in range(n):
            J[z * i + j] = 1.0 if i == j else 0.0
        for a in range(r):
            J[z * i + n + a] = -0.5 * h * h * pr.P[r * i + a]
    if pr.beta != 0.0:
        # - h^2 beta G1, G1 = M^-1 (-Hess V + sum_a lambda_a Dmu^a) at q1
        model.hessian_potential(x, H)
        model.constraint_matrix_derivative(x, dmu)
        for i in range(n):
            for j in range(n):
                T[n * i + j] = -H[n * i + j]
                for a in range(r):
                    T[n * i + j] += x[n + a] * dmu[a * n * n + i * n + j]
        for i in range(n):
            for j in range(n):
                s = 0.0
                for k in range(n):
                    s += pr.Minv[n * i + k] * T[n * k + j]
                J[z * i + j] -= h * h * pr.beta * s
    constraint_jacobian(model, pr.q0, x, pr.alpha, pr.disc, pr.mu_alpha, J, z)
    for a in range(r):
        for k in range(r):
            J[z * (n + a) + n + k] = 0.0
    return OK


cdef int newmark_step(CoordinateModel model, const double* M, const double* Minv,
                      PointCache* cache, const double* q0, const double* v0, double* lam,
                      double h, double beta, double beta_p, double alpha, int disc,
                      NewtonRule rule, double* q1, double* v1,
                      Py_ssize_t* evaluations, ForceStep* fs) noexcept nogil:
    # One step of F_h^{beta, beta', alpha}; lam is IN (guess) / OUT (forward multiplier); fs the
    # step's forces or NULL
    cdef int n = model.n, r = model.r
    cdef NewmarkProblem pr
    cdef double x[ZMAX]
    cdef double floor[ZMAX]
    cdef double g[NMAX]
    cdef double Q[NMAX * RMAX]
    cdef double Pl[NMAX]
    cdef double u[NMAX]
    cdef double C[RMAX * RMAX]
    cdef double rhs[RMAX]
    cdef double s, col
    cdef int i, a, st
    cdef bint fresh
    pr.model = <void*>model
    pr.Minv = Minv
    pr.cache = cache
    pr.q0 = q0
    pr.v0 = v0
    pr.h = h
    pr.beta = beta
    pr.alpha = alpha
    pr.disc = disc
    pr.evaluations = 0
    mu_at(model, cache, q0, pr.mu0)
    n_matrix(Minv, pr.mu0, n, r, pr.N0)
    grad_at(model, cache, q0, g)
    matvec(Minv, g, n, n, pr.b0)
    if fs != NULL:
        matvec(Minv, fs.Q_start, n, n, pr.f0)
    else:
        for i in range(n):
            pr.f0[i] = 0.0
    for i in range(n):
        pr.b0[i] = -pr.b0[i]
        x[i] = q0[i] + h * v0[i]
    for a in range(r):
        x[n + a] = lam[a]
    s = (max_abs(x, n) + fabs(h) * max_abs(v0, n) + h * h * max_abs(pr.b0, n)
         + h * h * max_abs(pr.f0, n) + 1e-300)
    for i in range(n):
        floor[i] = s
    for a in range(r):
        col = 0.0
        for i in range(n):
            if fabs(pr.N0[r * i + a]) > col:
                col = fabs(pr.N0[r * i + a])
        floor[n + a] = s / (0.5 * h * h * col + 1e-300)
    st = newton_solve(newmark_residual, newmark_jacobian, &pr, n + r, x, floor, rule)
    evaluations[0] += pr.evaluations
    if st != OK:
        return st
    fresh = True
    for i in range(n):
        q1[i] = x[i]
        if pr.q_eval[i] != x[i]:
            fresh = False
    for a in range(r):
        lam[a] = x[n + a]
    if not fresh:  # the last residual was evaluated before a correction
        newmark_evaluate_at(&pr, model, q1)
    for i in range(n * r):
        Q[i] = (1.0 - 2.0 * beta_p) * pr.N1[i] + 2.0 * beta_p * pr.N0[i]
    matvec(pr.P, lam, n, r, Pl)
    for i in range(n):
        u[i] = v0[i] + 0.5 * h * ((1.0 - 2.0 * beta) * pr.b0[i] + 2.0 * beta * pr.b1[i] + Pl[i]
                                  + (1.0 - 2.0 * beta_p) * pr.b1[i] + 2.0 * beta_p * pr.b0[i]
                                  + pr.f0[i])
    if fs != NULL:
        return force_end(fs, model, M, Minv, q1, h, u, Q, pr.mu1, v1)
    mu_times(pr.mu1, Q, n, r, C)
    matvec(pr.mu1, u, r, n, rhs)
    if not solve_r(r, C, rhs):
        return SINGULAR_JACOBIAN
    for i in range(n):
        v1[i] = u[i]
        for a in range(r):
            v1[i] -= Q[r * i + a] * rhs[a]
    if not all_finite(v1, n):
        return NOT_FINITE
    return OK


# -- DLA ------------------------------------------------------------------------------------
cdef struct DLAProblem:
    # the Newton problem of a DLA step, x = (q1, nu) (see the twin)
    void* model            # CoordinateModel, borrowed
    const double* M        # its mass matrix (the loop's copy)
    PointCache* cache
    const double* q0
    double h, alpha
    int kind, disc
    double mu0[RMAX * NMAX]
    double gs0[NMAX]       # grad S(q0)
    double p0[NMAX]        # M v0 - grad S(q0)
    double fq[NMAX]        # f^- = h/2 Q^-: the discrete force at the start
    double mu_alpha[RMAX * NMAX]
    Py_ssize_t evaluations


cdef int dla_residual(void* problem, double* x, double* F, double* F_scale) noexcept nogil:
    cdef DLAProblem* pr = <DLAProblem*>problem
    return dla_residual_of(pr, <CoordinateModel>pr.model, x, F, F_scale)


cdef inline int dla_residual_of(DLAProblem* pr, CoordinateModel model, double* x, double* F,
                                double* F_scale) noexcept nogil:
    cdef int n = model.n, r = model.r
    cdef double h = pr.h
    cdef double delta[NMAX]
    cdef double mid[NMAX]
    cdef double g[NMAX]
    cdef double gs[NMAX]
    cdef double gs1[NMAX]
    cdef double Hs[NMAX * NMAX]
    cdef double d1, sc, hd, md, mn
    cdef int i, j, a
    pr.evaluations += 1
    for i in range(n):
        delta[i] = x[i] - pr.q0[i]
    if pr.kind == DLA_MIDPOINT:
        for i in range(n):
            mid[i] = 0.5 * (pr.q0[i] + x[i])
        model.grad_potential(mid, g)
        if model.has_gauge:
            model.gauge_gradient(mid, gs)
            model.gauge_hessian(mid, Hs)
    else:
        grad_at(model, pr.cache, pr.q0, g)
        if model.has_gauge:
            model.gauge_gradient(x, gs1)
            for i in range(n):
                gs[i] = 0.5 * (pr.gs0[i] + gs1[i])
            model.gauge_hessian(pr.q0, Hs)
    if not model.has_gauge:
        for i in range(n):
            gs[i] = 0.0
        for i in range(n * n):
            Hs[i] = 0.0
    for i in range(n):
        # F = -D_1 L_d - p0 - mu0^T nu, D_1 L_d = -M delta/h - h/2 g + gs - 1/2 Hs delta,
        # evaluated in the twin's order
        md = 0.0
        sc = 0.0
        for j in range(n):
            md += pr.M[n * i + j] * delta[j]
            sc += fabs(pr.M[n * i + j]) * (fabs(x[j]) + fabs(pr.q0[j]))
        hd = 0.0
        if model.has_gauge:
            for j in range(n):
                hd += Hs[n * i + j] * delta[j]
        d1 = (-md) / h - 0.5 * h * g[i] + gs[i] - 0.5 * hd
        mn = 0.0
        for a in range(r):
            mn += pr.mu0[n * a + i] * x[n + a]
        F[i] = -d1 - pr.p0[i] - pr.fq[i] - mn
        F_scale[i] = (sc / fabs(h) + fabs(pr.p0[i]) + 0.5 * fabs(h) * fabs(g[i]) + fabs(gs[i])
                      + 0.5 * fabs(hd) + fabs(mn) + fabs(pr.fq[i]))
    if pr.disc == POINT and pr.alpha != 1.0:  # mu(q_alpha) without mu(q1)
        constraint_matrix_alpha(model, pr.q0, x, pr.alpha, pr.disc, pr.mu0, pr.mu0,
                                pr.mu_alpha)
    else:
        dla_mu_alpha(pr, model, x)
    constraint_value(pr.mu_alpha, pr.q0, x, n, r, &F[n], &F_scale[n])
    return OK


cdef inline void dla_mu_alpha(DLAProblem* pr, CoordinateModel model,
                              const double* q1) noexcept nogil:
    # mu_alpha when it needs mu(q1): "average", or "point" with alpha = 1
    cdef double mu1[RMAX * NMAX]
    mu_at(model, pr.cache, q1, mu1)
    constraint_matrix_alpha(model, pr.q0, q1, pr.alpha, pr.disc, pr.mu0, mu1, pr.mu_alpha)


cdef int dla_jacobian(void* problem, const double* x, double* J) noexcept nogil:
    cdef DLAProblem* pr = <DLAProblem*>problem
    return dla_jacobian_of(pr, <CoordinateModel>pr.model, x, J)


cdef inline int dla_jacobian_of(DLAProblem* pr, CoordinateModel model, const double* x,
                                double* J) noexcept nogil:
    cdef int n = model.n, r = model.r
    cdef int z = n + r
    cdef double h = pr.h
    cdef double delta[NMAX]
    cdef double mid[NMAX]
    cdef double H[NMAX * NMAX]
    cdef double T[NMAX * NMAX]
    cdef double Hs0[NMAX * NMAX]
    cdef int i, j, a
    for i in range(n):
        delta[i] = x[i] - pr.q0[i]
    # -dd1, dd1 = d D_1 L_d / dq1
    if pr.kind == DLA_MIDPOINT:
        for i in range(n):
            mid[i] = 0.5 * (pr.q0[i] + x[i])
        model.hessian_potential(mid, H)
        for i in range(n * n):
            J[z * (i // n) + i % n] = pr.M[i] / h + 0.25 * h * H[i]
        if model.has_gauge:
            model.gauge_third(mid, delta, T)
            for i in range(n * n):
                J[z * (i // n) + i % n] += 0.25 * T[i]
    else:
        for i in range(n * n):
            J[z * (i // n) + i % n] = pr.M[i] / h
        if model.has_gauge:
            model.gauge_hessian(x, H)
            model.gauge_hessian(pr.q0, Hs0)
            for i in range(n * n):
                J[z * (i // n) + i % n] -= 0.5 * (H[i] - Hs0[i])
    for i in range(n):
        for a in range(r):
            J[z * i + n + a] = -pr.mu0[n * a + i]
    constraint_jacobian(model, pr.q0, x, pr.alpha, pr.disc, pr.mu_alpha, J, z)
    for a in range(r):
        for j in range(r):
            J[z * (n + a) + n + j] = 0.0
    return OK


cdef inline void dla_d2(CoordinateModel model, const double* M, PointCache* cache,
                        const double* q0, const double* q1, double h, int kind,
                        double* d2) noexcept nogil:
    # D_2 L_d(q0, q1), (n,)
    cdef int n = model.n
    cdef double delta[NMAX]
    cdef double m[NMAX]
    cdef double g[NMAX]
    cdef double gs[NMAX]
    cdef double gs0[NMAX]
    cdef double Hs[NMAX * NMAX]
    cdef double md, hd
    cdef int i, j
    for i in range(n):
        delta[i] = q1[i] - q0[i]
    if kind == DLA_MIDPOINT:
        for i in range(n):
            m[i] = 0.5 * (q0[i] + q1[i])
        model.grad_potential(m, g)
        for i in range(n):
            d2[i] = -0.5 * h * g[i]
        if model.has_gauge:
            model.gauge_gradient(m, gs)
            model.gauge_hessian(m, Hs)
    else:
        grad_at(model, cache, q1, g)
        for i in range(n):
            d2[i] = -0.5 * h * g[i]
        if model.has_gauge:
            model.gauge_gradient(q0, gs0)
            model.gauge_gradient(q1, gs)
            for i in range(n):
                gs[i] = 0.5 * (gs0[i] + gs[i])
            model.gauge_hessian(q1, Hs)
    for i in range(n):  # M delta/h - h/2 g (- gs - 1/2 Hs delta), in the twin's order
        md = 0.0
        for j in range(n):
            md += M[n * i + j] * delta[j]
        d2[i] = md / h + d2[i]
        if model.has_gauge:
            hd = 0.0
            for j in range(n):
                hd += Hs[n * i + j] * delta[j]
            d2[i] = d2[i] - gs[i] - 0.5 * hd


cdef int dla_step(CoordinateModel model, const double* M, const double* Minv,
                  PointCache* cache, const double* q0, const double* v0, double* lam,
                  double h, int kind, double alpha, int disc, NewtonRule rule, double* q1,
                  double* v1, Py_ssize_t* evaluations, ForceStep* fs) noexcept nogil:
    # One DLA step in its one-step form (see the twin); lam IN/OUT as 2 nu / h; fs the step's
    # forces or NULL
    cdef int n = model.n, r = model.r
    cdef DLAProblem pr
    cdef double x[ZMAX]
    cdef double floor[ZMAX]
    cdef double p1[NMAX]
    cdef double gs[NMAX]
    cdef double mu1[RMAX * NMAX]
    cdef double N1[NMAX * RMAX]
    cdef double N0[NMAX * RMAX]
    cdef double w[NMAX]
    cdef double C[RMAX * RMAX]
    cdef double rhs[RMAX]
    cdef double s, col
    cdef int i, a, st
    pr.model = <void*>model
    pr.M = M
    pr.cache = cache
    pr.q0 = q0
    pr.h = h
    pr.alpha = alpha
    pr.kind = kind
    pr.disc = disc
    pr.evaluations = 0
    mu_at(model, cache, q0, pr.mu0)
    n_matrix(Minv, pr.mu0, n, r, N0)
    if model.has_gauge:
        model.gauge_gradient(q0, pr.gs0)
    else:
        for i in range(n):
            pr.gs0[i] = 0.0
    matvec(M, v0, n, n, pr.p0)
    for i in range(n):
        pr.p0[i] -= pr.gs0[i]
        pr.fq[i] = 0.5 * h * fs.Q_start[i] if fs != NULL else 0.0
        x[i] = q0[i] + h * v0[i]
    for a in range(r):
        x[n + a] = 0.5 * h * lam[a]
    s = max_abs(x, n) + fabs(h) * max_abs(v0, n) + 1e-300
    for i in range(n):
        floor[i] = s
    for a in range(r):
        col = 0.0
        for i in range(n):
            if fabs(N0[r * i + a]) > col:
                col = fabs(N0[r * i + a])
        floor[n + a] = s / (fabs(h) * col + 1e-300)
    st = newton_solve(dla_residual, dla_jacobian, &pr, n + r, x, floor, rule)
    evaluations[0] += pr.evaluations
    if st != OK:
        return st
    for i in range(n):
        q1[i] = x[i]
    for a in range(r):
        lam[a] = 2.0 * x[n + a] / h
    dla_d2(model, M, cache, q0, q1, h, kind, p1)  # M v1 before projection, with the gauge term:
    if model.has_gauge:
        model.gauge_gradient(q1, gs)
        for i in range(n):
            p1[i] += gs[i]
    mu_at(model, cache, q1, mu1)
    n_matrix(Minv, mu1, n, r, N1)
    matvec(Minv, p1, n, n, w)
    if fs != NULL:
        return force_end(fs, model, M, Minv, q1, h, w, N1, mu1, v1)
    mu_times(mu1, N1, n, r, C)
    matvec(mu1, w, r, n, rhs)
    if not solve_r(r, C, rhs):
        return SINGULAR_JACOBIAN
    for i in range(n):
        v1[i] = w[i]
        for a in range(r):
            v1[i] -= N1[r * i + a] * rhs[a]
    if not all_finite(v1, n):
        return NOT_FINITE
    return OK


# -- the loop -------------------------------------------------------------------------------
@cython.boundscheck(False)
@cython.wraparound(False)
def nonholonomic_run(CoordinateModel model, const double[:, ::1] stages, double[::1] q,
                     double[::1] v, double[::1] lam, double h, Py_ssize_t n_steps,
                     Py_ssize_t save_every, double newton_tol, int max_newton,
                     double[:, ::1] out_q, double[:, ::1] out_v, Py_ssize_t[::1] info,
                     BodyForces forces=None, double[::1] clock=None,
                     double[::1] out_work=None):
    """Advance ``n_steps`` steps of the composition ``stages`` (see the twin).

    Parameters
    ----------
    model : CoordinateModel IN; stages : (s, 6) IN, rows (kind, disc, beta, beta', alpha,
    weight); q, v : (n,) IN/OUT; lam : (r,) IN/OUT; h : float; n_steps, save_every : int;
    newton_tol : float; max_newton : int; out_q, out_v : (n_steps // save_every, n) OUT;
    info : (3,) OUT, [status of the failed step, residual evaluations, steps committed];
    forces : BodyForces or None IN (of ``model``); clock : (2,) or None IN/OUT [time, work];
    out_work : (n_steps // save_every,) or None OUT, the work at the saves.

    Returns
    -------
    int
        0 on success, ``k + 1`` if step ``k`` failed (its status in ``info[0]``; the state
        left at the start of that step).
    """
    cdef int n = model.n
    cdef int r = model.r
    cdef int n_stages = stages.shape[0]
    cdef double qa[NMAX]
    cdef double va[NMAX]
    cdef double qb[NMAX]
    cdef double vb[NMAX]
    cdef double la[RMAX]
    cdef double M[NMAX * NMAX]     # local copies: the steps read them without aliasing worries
    cdef double Minv[NMAX * NMAX]
    cdef PointCache cache
    cdef double hs, beta, beta_p, alpha
    cdef int kind, disc, st, i, a
    cdef Py_ssize_t k, jj
    cdef Py_ssize_t evaluations = 0
    cdef int status = OK
    cdef int failed = 0
    cdef NewtonRule rule
    cdef ForceStep fstep
    cdef ForceStep* fs = NULL
    cdef bint pushed = forces is not None and not forces.empty
    cdef bint fresh = True     # the start's force must be evaluated (not the last end's)
    cdef double t = 0.0, work = 0.0, tn, wn
    cdef double Qkeep[NMAX]    # the committed state's force, and its power
    cdef double Pkeep = 0.0
    cdef bint keep_work = out_work is not None
    if q.shape[0] != n or v.shape[0] != n or lam.shape[0] != r or info.shape[0] < INFO_SIZE:
        raise ValueError(f"Expected q, v of shape ({n},), lam of shape ({r},) and info of "
                         f"shape ({INFO_SIZE},) for {model!r}.")
    if pushed and forces.model is not model:
        raise ValueError("Expected the force elements of the stepped model.")
    if clock is not None:
        t = clock[0]
        work = clock[1]
    if pushed:
        fs = &fstep
        fstep.forces = <void*>forces
        fstep.K_h = NAN
    rule.correction_tol = newton_tol
    rule.residual_tol = RESIDUAL_TOL
    rule.max_iter = max_newton
    for i in range(n * n):
        M[i] = model.M[i]
        Minv[i] = model.Minv[i]
    cache.mu_ok = False
    cache.g_ok = False
    with nogil:
        for k in range(n_steps):
            for i in range(n):
                qa[i] = q[i]
                va[i] = v[i]
            for a in range(r):
                la[a] = lam[a]
            tn = t
            wn = work
            for st in range(n_stages):
                kind = <int>stages[st, 0]
                disc = <int>stages[st, 1]
                beta = stages[st, 2]
                beta_p = stages[st, 3]
                alpha = stages[st, 4]
                hs = stages[st, 5] * h
                if pushed:
                    # the start's force is the last end's (same t, q, v: the same numbers the
                    # twin evaluates afresh), except at the first step of a call
                    if fresh:
                        force_start(forces, fs, tn, qa, va)
                        fresh = False
                    elif st == 0:
                        for i in range(n):
                            fs.Q_start[i] = Qkeep[i]
                        fs.power_start = Pkeep
                    else:
                        for i in range(n):
                            fs.Q_start[i] = fs.Q_next[i]
                        fs.power_start = fs.power_end
                    fs.t1 = tn + hs
                if kind == NEWMARK:
                    if beta == 0.0 and beta_p == 0.0 and alpha == 0.0:
                        status = newmark_explicit_step(model, M, Minv, qa, va, hs, qb, vb, la,
                                                       fs)
                    else:
                        status = newmark_step(model, M, Minv, &cache, qa, va, la, hs, beta,
                                              beta_p, alpha, disc, rule, qb, vb, &evaluations,
                                              fs)
                else:
                    status = dla_step(model, M, Minv, &cache, qa, va, la, hs, kind, alpha, disc,
                                      rule, qb, vb, &evaluations, fs)
                if status != OK:
                    break
                if pushed:
                    wn = wn + 0.5 * hs * (fs.power_start + fs.power_end)
                tn = tn + hs
                for i in range(n):
                    qa[i] = qb[i]
                    va[i] = vb[i]
            if status != OK:
                failed = <int>(k + 1)
                break
            for i in range(n):
                q[i] = qa[i]
                v[i] = va[i]
            for a in range(r):
                lam[a] = la[a]
            t = tn
            work = wn
            if pushed:
                for i in range(n):
                    Qkeep[i] = fs.Q_next[i]
                Pkeep = fs.power_end
            if (k + 1) % save_every == 0:
                jj = (k + 1) // save_every - 1
                for i in range(n):
                    out_q[jj, i] = q[i]
                    out_v[jj, i] = v[i]
                if keep_work:
                    out_work[jj] = work
    if clock is not None:
        clock[0] = t
        clock[1] = work
    info[0] = status
    info[1] = evaluations
    info[INFO_COMMITTED] = failed - 1 if failed else n_steps
    return failed
