# SE(2) kernels over stacks: per-element `cdef inline ... noexcept nogil` arithmetic and thin
# loops. Elements are (v_x, v_y, omega) in the Lie algebra and (x, y, theta) poses; matrices are
# row-major 3x3. The twin with the same names and signatures is nhphys/twins/se2.py; the formulas
# are derived in nhphys/lie/se2.py.

import numpy as np
cimport numpy as cnp
from libc.math cimport sin, cos, tan, atan, atan2, fabs

from nhphys_ext.so3 cimport coeff_sinc, coeff_a, coeff_b, coeff_c

cnp.import_array()

ctypedef void (*elem_to_elem)(const double*, double*) noexcept nogil
ctypedef void (*elem_to_mat)(const double*, double*) noexcept nogil


cdef inline void hat_se2(const double* xi, double* M) noexcept nogil:
    M[0] = 0.0
    M[1] = -xi[2]
    M[2] = xi[0]
    M[3] = xi[2]
    M[4] = 0.0
    M[5] = xi[1]
    M[6] = 0.0
    M[7] = 0.0
    M[8] = 0.0


cdef inline void vee_se2(const double* M, double* xi) noexcept nogil:
    xi[0] = M[2]
    xi[1] = M[5]
    xi[2] = 0.5 * (M[3] - M[1])


cdef inline void exp_se2(const double* xi, double* g) noexcept nogil:
    cdef double w = xi[2]
    cdef double s = coeff_sinc(fabs(w)), c = w * coeff_a(fabs(w))
    g[0] = s * xi[0] - c * xi[1]
    g[1] = c * xi[0] + s * xi[1]
    g[2] = w


cdef inline void log_se2(const double* g, double* xi) noexcept nogil:
    cdef double w = atan2(sin(g[2]), cos(g[2]))
    cdef double a = 1.0 - w * w * coeff_c(fabs(w)), b = -0.5 * w
    xi[0] = a * g[0] - b * g[1]
    xi[1] = b * g[0] + a * g[1]
    xi[2] = w


cdef inline void cay_se2(const double* xi, double* g) noexcept nogil:
    cdef double w = xi[2]
    cdef double f = 1.0 / (1.0 + 0.25 * w * w)
    g[0] = f * (xi[0] - 0.5 * w * xi[1])
    g[1] = f * (0.5 * w * xi[0] + xi[1])
    g[2] = 2.0 * atan(0.5 * w)


cdef inline void cay_inv_se2(const double* g, double* xi) noexcept nogil:
    cdef double w = 2.0 * tan(0.5 * g[2])
    xi[0] = g[0] + 0.5 * w * g[1]
    xi[1] = -0.5 * w * g[0] + g[1]
    xi[2] = w


cdef inline void exp_jac_left_se2(const double* xi, double* J) noexcept nogil:
    # [[V, W (-J v)], [0, 1]]; -J v = (v_y, -v_x)
    cdef double w = xi[2], t = fabs(w)
    cdef double s = coeff_sinc(t), c = w * coeff_a(t)
    cdef double wa = coeff_a(t), wb = w * coeff_b(t)
    cdef double u0 = xi[1], u1 = -xi[0]
    J[0] = s
    J[1] = -c
    J[2] = wa * u0 - wb * u1
    J[3] = c
    J[4] = s
    J[5] = wb * u0 + wa * u1
    J[6] = 0.0
    J[7] = 0.0
    J[8] = 1.0


cdef inline void exp_jac_left_inv_se2(const double* xi, double* J) noexcept nogil:
    # I - ad/2 + [[-w e I, e v], [0, 0]], e = w c(|w|)
    cdef double w = xi[2]
    cdef double e = w * coeff_c(fabs(w))
    J[0] = 1.0 - w * e
    J[1] = 0.5 * w
    J[2] = -0.5 * xi[1] + e * xi[0]
    J[3] = -0.5 * w
    J[4] = 1.0 - w * e
    J[5] = 0.5 * xi[0] + e * xi[1]
    J[6] = 0.0
    J[7] = 0.0
    J[8] = 1.0


cdef inline void cay_jac_left_inv_se2(const double* xi, double* J) noexcept nogil:
    # I - ad/2 - K/4
    cdef double w = xi[2]
    J[0] = 1.0
    J[1] = 0.5 * w
    J[2] = -0.5 * xi[1] + 0.25 * w * xi[0]
    J[3] = -0.5 * w
    J[4] = 1.0
    J[5] = 0.5 * xi[0] + 0.25 * w * xi[1]
    J[6] = 0.0
    J[7] = 0.0
    J[8] = 1.0 + 0.25 * w * w


cdef inline void cay_jac_left_se2(const double* xi, double* J) noexcept nogil:
    # the inverse of the block-triangular [[M, c], [0, d]]: [[M^-1, -M^-1 c / d], [0, 1/d]],
    # M = I - (w/2) J, M^-1 = (I + (w/2) J) / (1 + w^2/4), d = 1 + w^2/4
    cdef double Jinv[9]
    cdef double w = xi[2]
    cdef double d = 1.0 + 0.25 * w * w
    cdef double m00 = 1.0 / d, m01 = -0.5 * w / d, m10 = 0.5 * w / d, m11 = 1.0 / d
    cay_jac_left_inv_se2(xi, Jinv)
    J[0] = m00
    J[1] = m01
    J[3] = m10
    J[4] = m11
    J[2] = -(m00 * Jinv[2] + m01 * Jinv[5]) / d
    J[5] = -(m10 * Jinv[2] + m11 * Jinv[5]) / d
    J[6] = 0.0
    J[7] = 0.0
    J[8] = 1.0 / d


cdef inline void neg_then(elem_to_mat f, const double* xi, double* out) noexcept nogil:
    cdef double m[3]
    m[0] = -xi[0]
    m[1] = -xi[1]
    m[2] = -xi[2]
    f(m, out)


cdef object _map_elem(elem_to_elem f, const double[:, ::1] x):
    cdef Py_ssize_t i, n = x.shape[0]
    out = np.empty((n, 3))
    cdef double[:, ::1] o = out
    with nogil:
        for i in range(n):
            f(&x[i, 0], &o[i, 0])
    return out


cdef object _map_mat(elem_to_mat f, const double[:, ::1] x, bint negate=False):
    cdef Py_ssize_t i, n = x.shape[0]
    out = np.empty((n, 3, 3))
    cdef double[:, :, ::1] o = out
    with nogil:
        for i in range(n):
            if negate:
                neg_then(f, &x[i, 0], &o[i, 0, 0])
            else:
                f(&x[i, 0], &o[i, 0, 0])
    return out


def hat(const double[:, ::1] xi):
    """``[[omega J, v], [0, 0]]``: (n, 3) -> (n, 3, 3)."""
    return _map_mat(hat_se2, xi)


def vee(const double[:, :, ::1] m):
    """Inverse of ``hat``: (n, 3, 3) -> (n, 3)."""
    cdef Py_ssize_t i, n = m.shape[0]
    out = np.empty((n, 3))
    cdef double[:, ::1] o = out
    with nogil:
        for i in range(n):
            vee_se2(&m[i, 0, 0], &o[i, 0])
    return out


def exp(const double[:, ::1] xi):
    """Exponential map: (n, 3) -> poses (n, 3)."""
    return _map_elem(exp_se2, xi)


def log(const double[:, ::1] g):
    """Inverse of ``exp`` (angle wrapped into (-pi, pi]): (n, 3) -> (n, 3)."""
    return _map_elem(log_se2, g)


def cay(const double[:, ::1] xi):
    """Cayley map: (n, 3) -> poses (n, 3)."""
    return _map_elem(cay_se2, xi)


def cay_inv(const double[:, ::1] g):
    """Inverse Cayley map: (n, 3) -> (n, 3)."""
    return _map_elem(cay_inv_se2, g)


def exp_jac_left(const double[:, ::1] xi):
    """Left Jacobian of exp: (n, 3) -> (n, 3, 3)."""
    return _map_mat(exp_jac_left_se2, xi)


def exp_jac_left_inv(const double[:, ::1] xi):
    """Inverse left Jacobian of exp: (n, 3) -> (n, 3, 3)."""
    return _map_mat(exp_jac_left_inv_se2, xi)


def exp_jac_right(const double[:, ::1] xi):
    """Right Jacobian of exp, ``J_l(-xi)``: (n, 3) -> (n, 3, 3)."""
    return _map_mat(exp_jac_left_se2, xi, True)


def exp_jac_right_inv(const double[:, ::1] xi):
    """Inverse right Jacobian of exp: (n, 3) -> (n, 3, 3)."""
    return _map_mat(exp_jac_left_inv_se2, xi, True)


def cay_jac_left(const double[:, ::1] xi):
    """Left Jacobian of Cayley: (n, 3) -> (n, 3, 3)."""
    return _map_mat(cay_jac_left_se2, xi)


def cay_jac_left_inv(const double[:, ::1] xi):
    """Inverse left Jacobian of Cayley: (n, 3) -> (n, 3, 3)."""
    return _map_mat(cay_jac_left_inv_se2, xi)


def cay_jac_right(const double[:, ::1] xi):
    """Right Jacobian of Cayley, ``J_l(-xi)``: (n, 3) -> (n, 3, 3)."""
    return _map_mat(cay_jac_left_se2, xi, True)


def cay_jac_right_inv(const double[:, ::1] xi):
    """Inverse right Jacobian of Cayley: (n, 3) -> (n, 3, 3)."""
    return _map_mat(cay_jac_left_inv_se2, xi, True)
