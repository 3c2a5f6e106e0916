# Rigid-body arithmetic shared by the kernels that move a rigid body (suslov, rolling): the
# discrete Legendre transforms of the free body and their Jacobian, and the polar correction
# that keeps rotations on SO(3). Everything is `cdef inline ... noexcept nogil`; the
# specification is nhphys/twins/suslov.py.

from nhphys_ext.dense cimport matmul3
from nhphys_ext.so3 cimport cross3, dot3, norm3, coeff_c, coeff_dc, hat3


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
    hat3(xi, K)
    hat3(M, Mh)
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
        hat3(xM, XM)        # hat(xi x M)
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


