# Nonholonomic Newmark family, DLA, and their compositions on R^n, for the built-in systems
# (knife edge, vertical disk, contact oscillators): the whole time loop.
#
# Design: the systems' functions (grad V, Hess V, mu, Dmu, the gauge term) are `cdef inline
# noexcept nogil` functions selected by a model number; the steps (explicit Newmark, Newton
# for the implicit members, DLA) are `cdef inline` functions on raw row-major arrays; and
# nonholonomic_run() is the loop. The derivation and the specification are in
# nhphys/twins/newmark.py (same names, same results). Sizes: n <= 8, r <= 4.

cimport cython
from libc.math cimport sin, cos, fabs, isfinite

from nhphys_ext.dense cimport solve_small

DEF NMAX = 8
DEF RMAX = 4
DEF ZMAX = 12  # n + r

DEF KNIFE_EDGE = 0
DEF VERTICAL_DISK = 1
DEF CONTACT_OSCILLATOR = 2
DEF NEWMARK = 0
DEF DLA_MIDPOINT = 1
DEF POINT = 0

_SIZES = {KNIFE_EDGE: (3, 1), VERTICAL_DISK: (4, 2), CONTACT_OSCILLATOR: (3, 1)}


cdef class Model:
    """A built-in system by number and parameters (see the twin's ``Model``)."""

    cdef public int code
    cdef public int n
    cdef public int r
    cdef double par[4]

    def __init__(self, code, params):
        code = int(code)
        if code not in _SIZES:
            raise ValueError(f"Expected `code` to be one of {tuple(_SIZES)}, got {code}.")
        self.code = code
        self.n, self.r = _SIZES[code]
        for i in range(4):
            self.par[i] = 0.0
        for i, value in enumerate(params):
            self.par[i] = float(value)

    @property
    def params(self):
        return [self.par[i] for i in range(4)]


# -- the systems ----------------------------------------------------------------------------
cdef inline void model_grad(int code, const double* par, const double* q,
                            double* out) noexcept nogil:
    if code == KNIFE_EDGE:
        out[0] = -par[1]
        out[1] = 0.0
        out[2] = 0.0
    elif code == VERTICAL_DISK:
        out[0] = 0.0
        out[1] = 0.0
        out[2] = 0.0
        out[3] = 0.0
    else:
        out[0] = q[0] + par[0] * q[0] * q[2] * q[2]
        out[1] = q[1]
        out[2] = q[2] + par[0] * q[0] * q[0] * q[2]


cdef inline void model_hess(int code, const double* par, int n, const double* q,
                            double* out) noexcept nogil:
    cdef int i
    for i in range(n * n):
        out[i] = 0.0
    if code == CONTACT_OSCILLATOR:
        out[0] = 1.0 + par[0] * q[2] * q[2]
        out[2] = 2.0 * par[0] * q[0] * q[2]
        out[4] = 1.0
        out[6] = out[2]
        out[8] = 1.0 + par[0] * q[0] * q[0]


cdef inline void model_mu(int code, const double* par, const double* q,
                          double* out) noexcept nogil:
    # row-major (r, n)
    if code == KNIFE_EDGE:
        out[0] = -sin(q[2])
        out[1] = cos(q[2])
        out[2] = -par[0]
    elif code == VERTICAL_DISK:
        out[0] = 1.0
        out[1] = 0.0
        out[2] = 0.0
        out[3] = -par[0] * cos(q[2])
        out[4] = 0.0
        out[5] = 1.0
        out[6] = 0.0
        out[7] = -par[0] * sin(q[2])
    else:
        out[0] = 1.0
        out[1] = 0.0
        out[2] = q[1]


cdef inline void model_dmu(int code, const double* par, int n, int r, const double* q,
                           double* out) noexcept nogil:
    # out[a n n + i n + j] = d mu_{ai} / d q_j
    cdef int i
    for i in range(r * n * n):
        out[i] = 0.0
    if code == KNIFE_EDGE:
        out[0 * 3 + 2] = -cos(q[2])
        out[1 * 3 + 2] = -sin(q[2])
    elif code == VERTICAL_DISK:
        out[3 * 4 + 2] = par[0] * sin(q[2])
        out[16 + 3 * 4 + 2] = -par[0] * cos(q[2])
    else:
        out[2 * 3 + 1] = 1.0


cdef inline void gauge_grad(int code, const double* par, int n, const double* q,
                            double* out) noexcept nogil:
    cdef int i
    for i in range(n):
        out[i] = 0.0
    if code == CONTACT_OSCILLATOR:
        out[2] = -par[1] * sin(q[2])


cdef inline void gauge_hess(int code, const double* par, int n, const double* q,
                            double* out) noexcept nogil:
    cdef int i
    for i in range(n * n):
        out[i] = 0.0
    if code == CONTACT_OSCILLATOR:
        out[8] = -par[1] * cos(q[2])


cdef inline void gauge_third(int code, const double* par, int n, const double* q,
                             const double* d, double* out) noexcept nogil:
    cdef int i
    for i in range(n * n):
        out[i] = 0.0
    if code == CONTACT_OSCILLATOR:
        out[8] = par[1] * sin(q[2]) * d[2]


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


cdef inline void dmu_contract(const double* dmu, const double* w, int n, int r,
                              double* out) noexcept nogil:
    # out[a, j] = sum_i dmu[a, i, j] w_i, (r, n)
    cdef int a, i, j
    for a in range(r):
        for j in range(n):
            out[n * a + j] = 0.0
            for i in range(n):
                out[n * a + j] += dmu[a * n * n + i * n + j] * w[i]


cdef inline bint all_finite(const double* x, int k) noexcept nogil:
    cdef int i
    for i in range(k):
        if not isfinite(x[i]):
            return False
    return True


cdef inline double max_abs(const double* x, int k) noexcept nogil:
    cdef double out = 0.0
    cdef int i
    for i in range(k):
        if fabs(x[i]) > out:
            out = fabs(x[i])
    return out


# -- discrete constraints -------------------------------------------------------------------
cdef inline void discrete_constraint(int code, const double* par, int n, int r,
                                     const double* q0, const double* q1, double alpha, int disc,
                                     double* out, double* jac) noexcept nogil:
    # Phi(q0, q1) (r,) in displacement units and dPhi/dq1 (r, n)
    cdef double qa[NMAX]
    cdef double delta[NMAX]
    cdef double mu[RMAX * NMAX]
    cdef double mu1[RMAX * NMAX]
    cdef double dmu[RMAX * NMAX * NMAX]
    cdef double contr[RMAX * NMAX]
    cdef int i, a
    for i in range(n):
        delta[i] = q1[i] - q0[i]
    if disc == POINT:
        for i in range(n):
            qa[i] = (1.0 - alpha) * q0[i] + alpha * q1[i]
        model_mu(code, par, qa, mu)
        model_dmu(code, par, n, r, qa, dmu)
    else:
        model_mu(code, par, q0, mu)
        model_mu(code, par, q1, mu1)
        for i in range(r * n):
            mu[i] = (1.0 - alpha) * mu[i] + alpha * mu1[i]
        model_dmu(code, par, n, r, q1, dmu)
    matvec(mu, delta, r, n, out)
    dmu_contract(dmu, delta, n, r, contr)
    for i in range(r * n):
        jac[i] = alpha * contr[i] + mu[i]


# -- Newmark --------------------------------------------------------------------------------
cdef inline bint newmark_explicit_step(int code, const double* par, int n, int r,
                                       const double* Minv, const double* q0, const double* v0,
                                       double h, double* q1, double* v1,
                                       double* lam) noexcept nogil:
    # F_h^{0,0,0} in closed form (see the twin)
    cdef double mu[RMAX * NMAX]
    cdef double N[NMAX * RMAX]
    cdef double C[RMAX * RMAX]
    cdef double g[NMAX]
    cdef double Mg[NMAX]
    cdef double a0[NMAX]
    cdef double w[NMAX]
    cdef double rhs[RMAX]
    cdef double lam1[RMAX]
    cdef double tmp[RMAX]
    cdef int i, a
    model_mu(code, par, q0, mu)
    model_grad(code, par, q0, g)
    n_matrix(Minv, mu, n, r, N)
    mu_times(mu, N, n, r, C)
    matvec(Minv, g, n, n, Mg)
    matvec(mu, Mg, r, n, rhs)
    matvec(mu, v0, r, n, tmp)
    for a in range(r):
        rhs[a] -= (2.0 / h) * tmp[a]
    if not solve_small(r, C, rhs):
        return False
    for a in range(r):
        lam[a] = rhs[a]
    for i in range(n):
        a0[i] = -Mg[i]
        for a in range(r):
            a0[i] += N[r * i + a] * lam[a]
        q1[i] = q0[i] + h * v0[i] + 0.5 * h * h * a0[i]
        w[i] = v0[i] + 0.5 * h * a0[i]
    model_mu(code, par, q1, mu)
    model_grad(code, par, q1, g)
    n_matrix(Minv, mu, n, r, N)
    mu_times(mu, N, n, r, C)
    matvec(Minv, g, n, n, Mg)
    matvec(mu, Mg, r, n, rhs)
    matvec(mu, w, r, n, tmp)
    for a in range(r):
        rhs[a] -= (2.0 / h) * tmp[a]
    if not solve_small(r, C, rhs):
        return False
    for a in range(r):
        lam1[a] = rhs[a]
    for i in range(n):
        v1[i] = w[i] - 0.5 * h * Mg[i]
        for a in range(r):
            v1[i] += 0.5 * h * N[r * i + a] * lam1[a]
    return all_finite(q1, n) and all_finite(v1, n)


cdef inline bint newmark_step(int code, const double* par, int n, int r, const double* Minv,
                              const double* q0, const double* v0, double* lam, double h,
                              double beta, double beta_p, double alpha, int disc,
                              double newton_tol, int max_newton, double* q1,
                              double* v1) noexcept nogil:
    # One step of F_h^{beta, beta', alpha}; lam is IN (guess) / OUT (forward multiplier)
    cdef double mu0[RMAX * NMAX]
    cdef double mu1[RMAX * NMAX]
    cdef double dmu1[RMAX * NMAX * NMAX]
    cdef double N0[NMAX * RMAX]
    cdef double N1[NMAX * RMAX]
    cdef double P[NMAX * RMAX]
    cdef double Q[NMAX * RMAX]
    cdef double b0[NMAX]
    cdef double b1[NMAX]
    cdef double g[NMAX]
    cdef double H[NMAX * NMAX]
    cdef double T[NMAX * NMAX]
    cdef double G1[NMAX * NMAX]
    cdef double Jc[RMAX * NMAX]
    cdef double J[ZMAX * ZMAX]
    cdef double R[ZMAX]
    cdef double Pl[NMAX]
    cdef double u[NMAX]
    cdef double C[RMAX * RMAX]
    cdef double rhs[RMAX]
    cdef double scale, moved, s
    cdef int it, i, j, k, a
    cdef int z = n + r
    cdef bint converged = False
    model_mu(code, par, q0, mu0)
    model_grad(code, par, q0, g)
    matvec(Minv, g, n, n, b0)
    for i in range(n):
        b0[i] = -b0[i]
    n_matrix(Minv, mu0, n, r, N0)
    for i in range(n):
        q1[i] = q0[i] + h * v0[i]
    scale = max_abs(q1, n) + fabs(h) * max_abs(v0, n) + h * h * max_abs(b0, n) + 1e-300
    for it in range(max_newton):
        model_mu(code, par, q1, mu1)
        model_dmu(code, par, n, r, q1, dmu1)
        n_matrix(Minv, mu1, n, r, N1)
        model_grad(code, par, q1, g)
        matvec(Minv, g, n, n, b1)
        for i in range(n):
            b1[i] = -b1[i]
        for i in range(n * r):
            P[i] = (1.0 - 2.0 * beta) * N0[i] + 2.0 * beta * N1[i]
        # G1 = M^-1 (-Hess V + sum_a lam_a Dmu^a)
        model_hess(code, par, n, q1, H)
        for i in range(n):
            for j in range(n):
                T[n * i + j] = -H[n * i + j]
                for a in range(r):
                    T[n * i + j] += lam[a] * dmu1[a * n * n + i * n + j]
        for i in range(n):
            for j in range(n):
                G1[n * i + j] = 0.0
                for k in range(n):
                    G1[n * i + j] += Minv[n * i + k] * T[n * k + j]
        matvec(P, lam, n, r, Pl)
        for i in range(n):
            R[i] = (q1[i] - q0[i] - h * v0[i]
                    - 0.5 * h * h * ((1.0 - 2.0 * beta) * b0[i] + 2.0 * beta * b1[i] + Pl[i]))
        discrete_constraint(code, par, n, r, q0, q1, alpha, disc, &R[n], Jc)
        for i in range(n):
            for j in range(n):
                J[z * i + j] = -h * h * beta * G1[n * i + j]
            J[z * i + i] += 1.0
            for a in range(r):
                J[z * i + n + a] = -0.5 * h * h * P[r * i + a]
        for a in range(r):
            for j in range(n):
                J[z * (n + a) + j] = Jc[n * a + j]
            for k in range(r):
                J[z * (n + a) + n + k] = 0.0
        if not solve_small(z, J, R):
            break
        for i in range(n):
            q1[i] -= R[i]
        for a in range(r):
            lam[a] -= R[n + a]
        if not (all_finite(q1, n) and all_finite(lam, r)):
            break
        moved = max_abs(R, n)
        for i in range(n):
            s = 0.0
            for a in range(r):
                s += P[r * i + a] * R[n + a]
            s = 0.5 * h * h * fabs(s)
            if s > moved:
                moved = s
        if moved <= newton_tol * scale:
            converged = True
            break
    model_mu(code, par, q1, mu1)
    n_matrix(Minv, mu1, n, r, N1)
    model_grad(code, par, q1, g)
    matvec(Minv, g, n, n, b1)
    for i in range(n):
        b1[i] = -b1[i]
    for i in range(n * r):
        P[i] = (1.0 - 2.0 * beta) * N0[i] + 2.0 * beta * N1[i]
        Q[i] = (1.0 - 2.0 * beta_p) * N1[i] + 2.0 * beta_p * N0[i]
    matvec(P, lam, n, r, Pl)
    for i in range(n):
        u[i] = v0[i] + 0.5 * h * ((1.0 - 2.0 * beta) * b0[i] + 2.0 * beta * b1[i] + Pl[i]
                                  + (1.0 - 2.0 * beta_p) * b1[i] + 2.0 * beta_p * b0[i])
    mu_times(mu1, Q, n, r, C)
    matvec(mu1, u, r, n, rhs)
    if not solve_small(r, C, rhs):
        return False
    for i in range(n):
        v1[i] = u[i]
        for a in range(r):
            v1[i] -= Q[r * i + a] * rhs[a]
    return converged and all_finite(v1, n)


# -- DLA ------------------------------------------------------------------------------------
cdef inline void dla_d1(int code, const double* par, int n, const double* M,
                        const double* q0, const double* q1, double h, int kind, double* d1,
                        double* dd1) noexcept nogil:
    # D_1 L_d(q0, q1) (n,) and d/dq1 of it (n, n)
    cdef double delta[NMAX]
    cdef double m[NMAX]
    cdef double g[NMAX]
    cdef double gs[NMAX]
    cdef double gs1[NMAX]
    cdef double Hs[NMAX * NMAX]
    cdef double Hs1[NMAX * NMAX]
    cdef double H[NMAX * NMAX]
    cdef double T[NMAX * NMAX]
    cdef int i, j
    for i in range(n):
        delta[i] = q1[i] - q0[i]
    if kind == DLA_MIDPOINT:
        for i in range(n):
            m[i] = 0.5 * (q0[i] + q1[i])
        model_grad(code, par, m, g)
        gauge_grad(code, par, n, m, gs)
        gauge_hess(code, par, n, m, Hs)
        model_hess(code, par, n, m, H)
        gauge_third(code, par, n, m, delta, T)
        for i in range(n):
            d1[i] = -0.5 * h * g[i] + gs[i]
            for j in range(n):
                d1[i] += -M[n * i + j] * delta[j] / h - 0.5 * Hs[n * i + j] * delta[j]
                dd1[n * i + j] = -M[n * i + j] / h - 0.25 * h * H[n * i + j] - 0.25 * T[n * i + j]
    else:
        model_grad(code, par, q0, g)
        gauge_grad(code, par, n, q0, gs)
        gauge_grad(code, par, n, q1, gs1)
        gauge_hess(code, par, n, q0, Hs)
        gauge_hess(code, par, n, q1, Hs1)
        for i in range(n):
            d1[i] = -0.5 * h * g[i] + 0.5 * (gs[i] + gs1[i])
            for j in range(n):
                d1[i] += -M[n * i + j] * delta[j] / h - 0.5 * Hs[n * i + j] * delta[j]
                dd1[n * i + j] = -M[n * i + j] / h + 0.5 * (Hs1[n * i + j] - Hs[n * i + j])


cdef inline void dla_d2(int code, const double* par, int n, const double* M,
                        const double* q0, const double* q1, double h, int kind,
                        double* d2) noexcept nogil:
    cdef double delta[NMAX]
    cdef double m[NMAX]
    cdef double g[NMAX]
    cdef double gs[NMAX]
    cdef double gs0[NMAX]
    cdef double Hs[NMAX * NMAX]
    cdef int i, j
    for i in range(n):
        delta[i] = q1[i] - q0[i]
    if kind == DLA_MIDPOINT:
        for i in range(n):
            m[i] = 0.5 * (q0[i] + q1[i])
        model_grad(code, par, m, g)
        gauge_grad(code, par, n, m, gs)
        gauge_hess(code, par, n, m, Hs)
        for i in range(n):
            d2[i] = -0.5 * h * g[i] - gs[i]
    else:
        model_grad(code, par, q1, g)
        gauge_grad(code, par, n, q0, gs0)
        gauge_grad(code, par, n, q1, gs)
        gauge_hess(code, par, n, q1, Hs)
        for i in range(n):
            d2[i] = -0.5 * h * g[i] - 0.5 * (gs0[i] + gs[i])
    for i in range(n):
        for j in range(n):
            d2[i] += M[n * i + j] * delta[j] / h - 0.5 * Hs[n * i + j] * delta[j]


cdef inline bint dla_step(int code, const double* par, int n, int r, const double* M,
                          const double* Minv, const double* q0, const double* v0, double* lam,
                          double h, int kind, double alpha, int disc, double newton_tol,
                          int max_newton, double* q1, double* v1) noexcept nogil:
    # One DLA step in its one-step form (see the twin); lam IN/OUT as 2 nu / h
    cdef double mu0[RMAX * NMAX]
    cdef double mu1[RMAX * NMAX]
    cdef double N0[NMAX * RMAX]
    cdef double N1[NMAX * RMAX]
    cdef double p0[NMAX]
    cdef double p1[NMAX]
    cdef double gs[NMAX]
    cdef double d1[NMAX]
    cdef double dd1[NMAX * NMAX]
    cdef double Jc[RMAX * NMAX]
    cdef double J[ZMAX * ZMAX]
    cdef double R[ZMAX]
    cdef double nu[RMAX]
    cdef double w[NMAX]
    cdef double C[RMAX * RMAX]
    cdef double rhs[RMAX]
    cdef double scale, moved, s
    cdef int it, i, j, a
    cdef int z = n + r
    cdef bint converged = False
    model_mu(code, par, q0, mu0)
    n_matrix(Minv, mu0, n, r, N0)
    gauge_grad(code, par, n, q0, gs)
    matvec(M, v0, n, n, p0)
    for i in range(n):
        p0[i] -= gs[i]
        q1[i] = q0[i] + h * v0[i]
    for a in range(r):
        nu[a] = 0.5 * h * lam[a]
    scale = max_abs(q1, n) + fabs(h) * max_abs(v0, n) + 1e-300
    for it in range(max_newton):
        dla_d1(code, par, n, M, q0, q1, h, kind, d1, dd1)
        for i in range(n):
            R[i] = -d1[i] - p0[i]
            for a in range(r):
                R[i] -= mu0[n * a + i] * nu[a]
            for j in range(n):
                J[z * i + j] = -dd1[n * i + j]
            for a in range(r):
                J[z * i + n + a] = -mu0[n * a + i]
        discrete_constraint(code, par, n, r, q0, q1, alpha, disc, &R[n], Jc)
        for a in range(r):
            for j in range(n):
                J[z * (n + a) + j] = Jc[n * a + j]
            for j in range(r):
                J[z * (n + a) + n + j] = 0.0
        if not solve_small(z, J, R):
            break
        for i in range(n):
            q1[i] -= R[i]
        for a in range(r):
            nu[a] -= R[n + a]
        if not (all_finite(q1, n) and all_finite(nu, r)):
            break
        moved = max_abs(R, n)
        for i in range(n):
            s = 0.0
            for a in range(r):
                s += N0[r * i + a] * R[n + a]
            s = fabs(h) * fabs(s)
            if s > moved:
                moved = s
        if moved <= newton_tol * scale:
            converged = True
            break
    for a in range(r):
        lam[a] = 2.0 * nu[a] / h
    dla_d2(code, par, n, M, q0, q1, h, kind, p1)
    gauge_grad(code, par, n, q1, gs)
    for i in range(n):
        p1[i] += gs[i]
    model_mu(code, par, q1, mu1)
    n_matrix(Minv, mu1, n, r, N1)
    mu_times(mu1, N1, n, r, C)
    matvec(Minv, p1, n, n, w)
    matvec(mu1, w, r, n, rhs)
    if not solve_small(r, C, rhs):
        return False
    for i in range(n):
        v1[i] = w[i]
        for a in range(r):
            v1[i] -= N1[r * i + a] * rhs[a]
    return converged and all_finite(v1, n)


# -- the loop -------------------------------------------------------------------------------
@cython.boundscheck(False)
@cython.wraparound(False)
def nonholonomic_run(Model model, const double[:, ::1] mass, const double[:, ::1] stages,
                     double[::1] q, double[::1] v, double[::1] lam, double h,
                     Py_ssize_t n_steps, Py_ssize_t save_every, double newton_tol,
                     int max_newton, double[:, ::1] out_q, double[:, ::1] out_v):
    """Advance ``n_steps`` steps of the composition ``stages`` (see the twin).

    Parameters
    ----------
    model : Model IN; mass : (n, n) IN; stages : (s, 6) IN, rows (kind, disc, beta, beta',
    alpha, weight); q, v : (n,) IN/OUT; lam : (r,) IN/OUT; h : float; n_steps, save_every :
    int; newton_tol : float; max_newton : int; out_q, out_v : (n_steps // save_every, n) OUT.

    Returns
    -------
    int
        0 on success, ``k + 1`` if a Newton solve of step ``k`` failed (state left at the
        start of that step).
    """
    cdef int n = model.n
    cdef int r = model.r
    cdef int code = model.code
    cdef int n_stages = stages.shape[0]
    cdef double Minv[NMAX * NMAX]
    cdef double Mc[NMAX * NMAX]
    cdef double Mrow[NMAX * NMAX]
    cdef double col[NMAX]
    cdef double qa[NMAX]
    cdef double va[NMAX]
    cdef double qb[NMAX]
    cdef double vb[NMAX]
    cdef double la[RMAX]
    cdef double hs, beta, beta_p, alpha
    cdef int kind, disc, st, i, j, a
    cdef Py_ssize_t k, jj
    cdef int status = 0
    cdef bint ok = True
    if mass.shape[0] != n or q.shape[0] != n or v.shape[0] != n or lam.shape[0] != r:
        raise ValueError(f"Expected n = {n}, r = {r} for model {code}.")
    for i in range(n):
        for j in range(n):
            Mc[n * i + j] = mass[i, j]
    for j in range(n):  # Minv column by column
        for i in range(n * n):
            Mrow[i] = Mc[i]
        for i in range(n):
            col[i] = 1.0 if i == j else 0.0
        if not solve_small(n, Mrow, col):
            raise ValueError("Expected a nonsingular `mass`.")
        for i in range(n):
            Minv[n * i + j] = col[i]
    with nogil:
        for k in range(n_steps):
            for i in range(n):
                qa[i] = q[i]
                va[i] = v[i]
            for a in range(r):
                la[a] = lam[a]
            for st in range(n_stages):
                kind = <int>stages[st, 0]
                disc = <int>stages[st, 1]
                beta = stages[st, 2]
                beta_p = stages[st, 3]
                alpha = stages[st, 4]
                hs = stages[st, 5] * h
                if kind == NEWMARK:
                    if beta == 0.0 and beta_p == 0.0 and alpha == 0.0:
                        ok = newmark_explicit_step(code, model.par, n, r, Minv, qa, va, hs,
                                                   qb, vb, la)
                    else:
                        ok = newmark_step(code, model.par, n, r, Minv, qa, va, la, hs, beta,
                                          beta_p, alpha, disc, newton_tol, max_newton, qb, vb)
                else:
                    ok = dla_step(code, model.par, n, r, Mc, Minv, qa, va, la, hs, kind, alpha,
                                  disc, newton_tol, max_newton, qb, vb)
                if not ok:
                    break
                for i in range(n):
                    qa[i] = qb[i]
                    va[i] = vb[i]
            if not ok:
                status = <int>(k + 1)
                break
            for i in range(n):
                q[i] = qa[i]
                v[i] = va[i]
            for a in range(r):
                lam[a] = la[a]
            if (k + 1) % save_every == 0:
                jj = (k + 1) // save_every - 1
                for i in range(n):
                    out_q[jj, i] = q[i]
                    out_v[jj, i] = v[i]
    return status
