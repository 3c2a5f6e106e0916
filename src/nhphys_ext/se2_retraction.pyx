# Variational retraction integrator on SE(2) x R^k for a left-invariant Lagrangian under a
# left-invariant constraint xi in d (Chaplygin sleigh, k = 0; vertical rolling disk, k = 1):
# the whole time loop.
#
# Design: the per-step arithmetic (closed-form discrete Legendre transforms, their Jacobian, a
# small Newton solve) is in `cdef inline ... noexcept nogil` functions; retraction_run() is the
# loop. The derivation and the specification are in nhphys/twins/se2_retraction.py (same
# names, same results). Sizes: d = 3 + k <= 6, m <= 6.

cimport cython
from libc.math cimport sin, cos, atan, sqrt, fabs, isfinite

from nhphys_ext.dense cimport solve_small

from nhphys_ext.so3 cimport coeff_c, coeff_dc, coeff_sinc, coeff_a

DEF DMAX = 6


cdef inline void coefficients(double w, int map_code, double* co) noexcept nogil:
    # co = (f, f', g, g', ev, ev') of the closed-form momenta
    cdef double t = fabs(w)
    cdef double e
    if map_code == 0:
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


cdef inline void momentum(const double* xi, const double* I, int d, double h, int map_code,
                          double sign, double* out) noexcept nogil:
    # Pi^- (sign = +1) or Pi^+ (sign = -1); I row-major d x d
    cdef double M[DMAX]
    cdef double co[6]
    cdef int i, j
    cdef double w = xi[2]
    for i in range(d):
        M[i] = 0.0
        for j in range(d):
            M[i] += I[d * i + j] * xi[j]
        M[i] /= h
    coefficients(w, map_code, co)
    for i in range(3, d):
        out[i] = M[i]
    # J M_v = (-M_y, M_x)
    out[0] = M[0] + w * (0.5 * sign * (-M[1]) - co[4] * M[0])
    out[1] = M[1] + w * (0.5 * sign * M[0] - co[4] * M[1])
    out[2] = (M[2] + 0.5 * sign * (xi[0] * M[1] - xi[1] * M[0])
              + co[0] * (xi[0] * M[0] + xi[1] * M[1]) + co[2] * M[2])


cdef inline void momentum_minus_jacobian(const double* xi, const double* I, int d, double h,
                                         int map_code, double* D) noexcept nogil:
    # D = dPi^-/dxi, row-major d x d (see the twin)
    cdef double M[DMAX]
    cdef double co[6]
    cdef double A00, A01, A10, A11, r0, r1
    cdef int i, j
    cdef double w = xi[2]
    cdef double vM
    for i in range(d):
        M[i] = 0.0
        for j in range(d):
            M[i] += I[d * i + j] * xi[j]
        M[i] /= h
    coefficients(w, map_code, co)
    # A = J/2 - ev I = [[-ev, -1/2], [1/2, -ev]]
    A00 = -co[4]
    A01 = -0.5
    A10 = 0.5
    A11 = -co[4]
    for j in range(d):
        D[j] = I[j] / h + w * (A00 * I[j] + A01 * I[d + j]) / h
        D[d + j] = I[d + j] / h + w * (A10 * I[j] + A11 * I[d + j]) / h
    r0 = A00 * M[0] + A01 * M[1] - w * co[5] * M[0]
    r1 = A10 * M[0] + A11 * M[1] - w * co[5] * M[1]
    D[2] += r0
    D[d + 2] += r1
    vM = xi[0] * M[0] + xi[1] * M[1]
    for j in range(d):
        D[2 * d + j] = (I[2 * d + j] / h
                        + 0.5 * (xi[0] * I[d + j] - xi[1] * I[j]) / h
                        + co[0] * (xi[0] * I[j] + xi[1] * I[d + j]) / h
                        + co[2] * I[2 * d + j] / h)
    D[2 * d + 0] += 0.5 * M[1] + co[0] * M[0]
    D[2 * d + 1] += -0.5 * M[0] + co[0] * M[1]
    D[2 * d + 2] += co[1] * vM + co[3] * M[2]
    for i in range(3, d):
        for j in range(d):
            D[d * i + j] = I[d * i + j] / h




cdef inline bint retraction_step(const double* I, const double* B, int d, int m,
                                 const double* p, double* y, double h, int map_code,
                                 double newton_tol, int max_newton, double* xi,
                                 double* p_new) noexcept nogil:
    # Newton on F(y) = B^T Pi^-(B y) - p; then p_new = B^T Pi^+(xi)
    cdef double G[DMAX]
    cdef double D[DMAX * DMAX]
    cdef double DB[DMAX * DMAX]
    cdef double Jm[DMAX * DMAX]
    cdef double F[DMAX]
    cdef double ny, ndy
    cdef int it, a, b, i, j
    cdef bint converged = False
    for it in range(max_newton):
        for i in range(d):
            xi[i] = 0.0
            for a in range(m):
                xi[i] += B[m * i + a] * y[a]
        momentum(xi, I, d, h, map_code, 1.0, G)
        momentum_minus_jacobian(xi, I, d, h, map_code, D)
        for i in range(d):
            for b in range(m):
                DB[m * i + b] = 0.0
                for j in range(d):
                    DB[m * i + b] += D[d * i + j] * B[m * j + b]
        for a in range(m):
            F[a] = -p[a]
            for i in range(d):
                F[a] += B[m * i + a] * G[i]
            for b in range(m):
                Jm[m * a + b] = 0.0
                for i in range(d):
                    Jm[m * a + b] += B[m * i + a] * DB[m * i + b]
        if not solve_small(m, Jm, F):
            return False
        ny = 0.0
        ndy = 0.0
        for a in range(m):
            y[a] -= F[a]
            ny += y[a] * y[a]
            ndy += F[a] * F[a]
        if not isfinite(ny):
            return False
        if sqrt(ndy) <= newton_tol * sqrt(ny):
            converged = True
            break
    if not converged:
        return False
    for i in range(d):
        xi[i] = 0.0
        for a in range(m):
            xi[i] += B[m * i + a] * y[a]
    momentum(xi, I, d, h, map_code, -1.0, G)
    for a in range(m):
        p_new[a] = 0.0
        for i in range(d):
            p_new[a] += B[m * i + a] * G[i]
    return True


cdef inline void retract(const double* xi, int map_code, double* step) noexcept nogil:
    # exp or Cayley of (v_x, v_y, omega) as a pose (x, y, theta)
    cdef double w = xi[2]
    cdef double s, c, den
    if map_code == 0:
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


@cython.boundscheck(False)
@cython.wraparound(False)
def retraction_run(const double[:, ::1] inertia, const double[:, ::1] basis, double[::1] g,
                   double[::1] p, double[::1] y, double h, Py_ssize_t n_steps,
                   Py_ssize_t save_every, int map_code, double newton_tol, int max_newton,
                   double[:, ::1] out_g, double[:, ::1] out_p):
    """Advance ``n_steps`` steps, saving every ``save_every``-th state (see the twin).

    Parameters
    ----------
    inertia : (d, d) IN; basis : (d, m) IN; g : (d,) IN/OUT (x, y, theta, phi...);
    p : (m,) IN/OUT; y : (m,) IN/OUT; h : float; n_steps, save_every : int;
    map_code : 0 exp, 1 Cayley; newton_tol : float; max_newton : int;
    out_g : (n_steps // save_every, d) OUT; out_p : (n_steps // save_every, m) OUT.

    Returns
    -------
    int
        0 on success, ``k + 1`` if the Newton solve of step ``k`` failed (state left at the
        start of that step).
    """
    cdef int d = inertia.shape[0]
    cdef int m = basis.shape[1]
    cdef double xi[DMAX]
    cdef double p_new[DMAX]
    cdef double y_try[DMAX]
    cdef double step[3]
    cdef double c, s
    cdef Py_ssize_t k, j
    cdef int i, a
    cdef int status = 0
    if d > DMAX or m > DMAX or d < 3:
        raise ValueError(f"Expected 3 <= d <= {DMAX} and m <= {DMAX}, got d={d}, m={m}.")
    with nogil:
        for k in range(n_steps):
            for a in range(m):
                y_try[a] = y[a]
            if not retraction_step(&inertia[0, 0], &basis[0, 0], d, m, &p[0], y_try, h,
                                   map_code, newton_tol, max_newton, xi, p_new):
                status = <int>(k + 1)
                break
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
            if (k + 1) % save_every == 0:
                j = (k + 1) // save_every - 1
                for i in range(d):
                    out_g[j, i] = g[i]
                for a in range(m):
                    out_p[j, a] = p[a]
    return status
