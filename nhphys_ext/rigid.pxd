# Rigid-body arithmetic shared by the kernels that move a rigid body (suslov, rolling):
# the discrete Legendre transforms of the free body and their Jacobian, small dense solves,
# 3x3 products, and the polar correction that keeps rotations on SO(3). Everything is
# `cdef inline ... noexcept nogil`; the specification is nhphys/twins/suslov.py.

from libc.math cimport fabs

from nhphys_ext.so3 cimport cross3, dot3, norm3, coeff_c, coeff_dc


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


cdef inline void momentum_plus(const double* xi, const double* I, double h, int map_code,
                               double* P) noexcept nogil:
    # Pi^+ = J_r(xi)^-T I xi / h = M - xi x M / 2 + extra (the same extra as Pi^-)
    cdef double M[3]
    cdef double G[3]
    cdef double xM[3]
    cdef int i
    momentum_minus(xi, I, h, map_code, M, G)
    # G = M + xM/2 + extra  ->  Pi^+ = G - xi x M
    cross3(xi, M, xM)
    for i in range(3):
        P[i] = G[i] - xM[i]


