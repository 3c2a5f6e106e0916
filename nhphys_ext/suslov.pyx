# Variational retraction integrator for a rigid body with a fixed point under a left-invariant
# constraint Omega in d (Suslov, m = 2) or none (free body, m = 3): the whole time loop.
#
# Design: the per-step arithmetic (discrete Legendre transforms, their Jacobian, a small Newton
# solve) is in `cdef inline ... noexcept nogil` functions; retraction_run() is the loop. The
# derivation and the specification are in nhphys/twins/suslov.py (same names, same results).

cimport cython
from libc.math cimport sqrt, fabs, isfinite, M_PI

from nhphys_ext.so3 cimport (
    cross3, dot3, norm3, coeff_c, coeff_dc, exp3, cay3,
)



cdef inline void momentum_minus(const double* xi, const double* I, double h, int map_code,
                                double* M, double* G) noexcept nogil:
    # M = I xi / h; G = Pi^- = M + xi x M / 2 + extra
    cdef double xM[3]
    cdef double xxM[3]
    cdef double c
    cdef int i
    for i in range(3):
        M[i] = (I[3 * i] * xi[0] + I[3 * i + 1] * xi[1] + I[3 * i + 2] * xi[2]) / h
    cross3(xi, M, xM)
    if map_code == 0:
        cross3(xi, xM, xxM)
        c = coeff_c(norm3(xi))
        for i in range(3):
            G[i] = M[i] + 0.5 * xM[i] + c * xxM[i]
    else:
        c = 0.25 * dot3(xi, M)
        for i in range(3):
            G[i] = M[i] + 0.5 * xM[i] + c * xi[i]


cdef inline void hat_into(const double* v, double* K) noexcept nogil:
    K[0] = 0.0
    K[1] = -v[2]
    K[2] = v[1]
    K[3] = v[2]
    K[4] = 0.0
    K[5] = -v[0]
    K[6] = -v[1]
    K[7] = v[0]
    K[8] = 0.0


cdef inline void matmul3(const double* A, const double* B, double* C) noexcept nogil:
    cdef int i, j
    for i in range(3):
        for j in range(3):
            C[3 * i + j] = (A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j]
                            + A[3 * i + 2] * B[6 + j])


cdef inline void reorthonormalize(double* R) noexcept nogil:
    # R <- R (3 I - R^T R) / 2: one Newton-Schulz step towards the polar factor (see the twin)
    cdef double C[9]
    cdef double Rc[9]
    cdef int i, j
    for i in range(3):
        for j in range(3):
            C[3 * i + j] = -0.5 * (R[i] * R[j] + R[3 + i] * R[3 + j] + R[6 + i] * R[6 + j])
        C[4 * i] += 1.5
    for i in range(9):
        Rc[i] = R[i]
    matmul3(Rc, C, R)


cdef inline void momentum_minus_jacobian(const double* xi, const double* I, double h,
                                         int map_code, double* D) noexcept nogil:
    # D = dPi^-/dxi (row-major 3x3); see the twin for the formula
    cdef double M[3]
    cdef double xM[3]
    cdef double xxM[3]
    cdef double dM[9]
    cdef double K[9]
    cdef double KM[9]
    cdef double Mh[9]
    cdef double T[9]
    cdef double T2[9]
    cdef double XM[9]
    cdef double c, dc, xm
    cdef int i, j
    for i in range(3):
        M[i] = (I[3 * i] * xi[0] + I[3 * i + 1] * xi[1] + I[3 * i + 2] * xi[2]) / h
    for i in range(9):
        dM[i] = I[i] / h
    hat_into(xi, K)
    hat_into(M, Mh)
    matmul3(K, dM, KM)
    for i in range(9):
        D[i] = dM[i] + 0.5 * (KM[i] - Mh[i])
    if map_code == 0:
        c = coeff_c(norm3(xi))
        dc = coeff_dc(norm3(xi))
        cross3(xi, M, xM)
        cross3(xi, xM, xxM)
        matmul3(K, KM, T)       # hat(xi)^2 I / h
        matmul3(K, Mh, T2)      # hat(xi) hat(M)
        hat_into(xM, XM)        # hat(xi x M)
        for i in range(3):
            for j in range(3):
                D[3 * i + j] += (c * (T[3 * i + j] - XM[3 * i + j] - T2[3 * i + j])
                                 + dc * xxM[i] * xi[j])
    else:
        xm = dot3(xi, M)
        for i in range(3):
            for j in range(3):
                D[3 * i + j] += 0.25 * (xi[i] * M[j] + xi[i] * (
                    xi[0] * dM[j] + xi[1] * dM[3 + j] + xi[2] * dM[6 + j]))
            D[4 * i] += 0.25 * xm


cdef inline bint solve_small(int m, double* A, double* b) noexcept nogil:
    # Gaussian elimination with partial pivoting on an m x m row-major A (m <= 3);
    # the solution overwrites b. Returns False for a singular matrix.
    cdef int col, row, piv, k
    cdef double tmp, f
    for col in range(m):
        piv = col
        for row in range(col + 1, m):
            if fabs(A[m * row + col]) > fabs(A[m * piv + col]):
                piv = row
        if A[m * piv + col] == 0.0:
            return False
        if piv != col:
            for k in range(m):
                tmp = A[m * col + k]
                A[m * col + k] = A[m * piv + k]
                A[m * piv + k] = tmp
            tmp = b[col]
            b[col] = b[piv]
            b[piv] = tmp
        for row in range(col + 1, m):
            f = A[m * row + col] / A[m * col + col]
            for k in range(col, m):
                A[m * row + k] -= f * A[m * col + k]
            b[row] -= f * b[col]
    for row in range(m - 1, -1, -1):
        for k in range(row + 1, m):
            b[row] -= A[m * row + k] * b[k]
        b[row] /= A[m * row + row]
    return True


cdef inline bint retraction_step(const double* I, const double* B, int m, const double* p,
                                 double* y, double h, int map_code, double newton_tol,
                                 int max_newton, double* xi, double* p_new) noexcept nogil:
    # Newton on F(y) = B^T Pi^-(B y) - p; then p_new = p - B^T (xi x I xi) / h
    cdef double M[3]
    cdef double G[3]
    cdef double D[9]
    cdef double DB[9]
    cdef double Jm[9]
    cdef double F[3]
    cdef double xIx[3]
    cdef double ny, ndy, s
    cdef int it, a, b, i, j
    cdef bint converged = False
    for it in range(max_newton):
        for i in range(3):
            xi[i] = 0.0
            for a in range(m):
                xi[i] += B[m * i + a] * y[a]
        momentum_minus(xi, I, h, map_code, M, G)
        momentum_minus_jacobian(xi, I, h, map_code, D)
        for i in range(3):           # DB = D B (3 x m)
            for b in range(m):
                DB[m * i + b] = (D[3 * i] * B[b] + D[3 * i + 1] * B[m + b]
                                 + D[3 * i + 2] * B[2 * m + b])
        for a in range(m):           # Jm = B^T D B, F = B^T G - p
            F[a] = B[a] * G[0] + B[m + a] * G[1] + B[2 * m + a] * G[2] - p[a]
            for b in range(m):
                Jm[m * a + b] = (B[a] * DB[b] + B[m + a] * DB[m + b]
                                 + B[2 * m + a] * DB[2 * m + b])
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
    for i in range(3):
        xi[i] = 0.0
        for a in range(m):
            xi[i] += B[m * i + a] * y[a]
    if map_code == 0 and norm3(xi) >= M_PI:
        return False  # a turn of pi or more per step: a spurious root of a far branch
    for i in range(3):
        M[i] = I[3 * i] * xi[0] + I[3 * i + 1] * xi[1] + I[3 * i + 2] * xi[2]
    cross3(xi, M, xIx)
    for a in range(m):
        s = B[a] * xIx[0] + B[m + a] * xIx[1] + B[2 * m + a] * xIx[2]
        p_new[a] = p[a] - s / h
    return True


@cython.boundscheck(False)
@cython.wraparound(False)
def retraction_run(const double[:, ::1] inertia, const double[:, ::1] basis,
                   double[:, ::1] R, double[::1] p, double[::1] y, double h,
                   Py_ssize_t n_steps, Py_ssize_t save_every, int map_code,
                   double newton_tol, int max_newton,
                   double[:, :, ::1] out_R, double[:, ::1] out_p):
    """Advance ``n_steps`` steps, saving every ``save_every``-th state (see the twin).

    Parameters
    ----------
    inertia : (3, 3) IN; basis : (3, m) IN; R : (3, 3) IN/OUT; p : (m,) IN/OUT;
    y : (m,) IN/OUT; h : float; n_steps, save_every : int; map_code : 0 exp, 1 Cayley;
    newton_tol : float; max_newton : int; out_R : (n_steps // save_every, 3, 3) OUT;
    out_p : (n_steps // save_every, m) OUT.

    Returns
    -------
    int
        0 on success, ``k + 1`` if the Newton solve of step ``k`` failed (state left at the
        start of that step).
    """
    cdef int m = basis.shape[1]
    cdef double xi[3]
    cdef double p_new[3]
    cdef double y_try[3]
    cdef double Q[9]
    cdef double Rn[9]
    cdef Py_ssize_t k, j
    cdef int i, a
    cdef int status = 0
    with nogil:
        for k in range(n_steps):
            for a in range(m):
                y_try[a] = y[a]
            if not retraction_step(&inertia[0, 0], &basis[0, 0], m, &p[0], y_try, h,
                                   map_code, newton_tol, max_newton, xi, p_new):
                status = <int>(k + 1)
                break
            if map_code == 0:
                exp3(xi, Q)
            else:
                cay3(xi, Q)
            matmul3(&R[0, 0], Q, Rn)
            reorthonormalize(Rn)
            for i in range(9):
                R[i // 3, i % 3] = Rn[i]
            for a in range(m):
                p[a] = p_new[a]
                y[a] = y_try[a]
            if (k + 1) % save_every == 0:
                j = (k + 1) // save_every - 1
                for i in range(9):
                    out_R[j, i // 3, i % 3] = Rn[i]
                for a in range(m):
                    out_p[j, a] = p[a]
    return status
