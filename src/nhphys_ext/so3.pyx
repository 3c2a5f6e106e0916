# SO(3) kernels over stacks: thin loops around the per-point functions of so3.pxd.
#
# Each function takes C-contiguous float64 arrays with one leading axis, (n, 3) or (n, 3, 3),
# and returns a new array; the twin with the same name and signature is nhphys/twins/so3.py.
# Input checking and reshaping of other leading axes happen in nhphys/lie/so3.py.

import numpy as np
cimport numpy as cnp

cnp.import_array()

ctypedef void (*vec_to_mat)(const double*, double*) noexcept nogil
ctypedef void (*mat_to_vec)(const double*, double*) noexcept nogil


cdef inline void _neg_then(vec_to_mat f, const double* xi, double* out) noexcept nogil:
    cdef double m[3]
    neg3(xi, m)
    f(m, out)


cdef object _map_vec(vec_to_mat f, const double[:, ::1] xi, bint negate=False):
    # (n, 3) -> (n, 3, 3)
    cdef Py_ssize_t i, n = xi.shape[0]
    out = np.empty((n, 3, 3))
    cdef double[:, :, ::1] o = out
    with nogil:
        for i in range(n):
            if negate:
                _neg_then(f, &xi[i, 0], &o[i, 0, 0])
            else:
                f(&xi[i, 0], &o[i, 0, 0])
    return out


cdef object _map_mat(mat_to_vec f, const double[:, :, ::1] R):
    # (n, 3, 3) -> (n, 3)
    cdef Py_ssize_t i, n = R.shape[0]
    out = np.empty((n, 3))
    cdef double[:, ::1] o = out
    with nogil:
        for i in range(n):
            f(&R[i, 0, 0], &o[i, 0])
    return out


def hat(const double[:, ::1] v):
    """Skew matrices ``hat(v) @ w == cross(v, w)``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(hat3, v)


def vee(const double[:, :, ::1] m):
    """Inverse of ``hat`` on the skew part of ``m``: (n, 3, 3) -> (n, 3)."""
    return _map_mat(vee3, m)


def exp(const double[:, ::1] xi):
    """Exponential map: (n, 3) -> (n, 3, 3)."""
    return _map_vec(exp3, xi)


def log(const double[:, :, ::1] R):
    """Rotation vector with angle in [0, pi]: (n, 3, 3) -> (n, 3)."""
    return _map_mat(log3, R)


def cay(const double[:, ::1] xi):
    """Cayley map ``(I - hat(xi)/2)^-1 (I + hat(xi)/2)``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(cay3, xi)


def cay_inv(const double[:, :, ::1] R):
    """Inverse Cayley map (angle < pi): (n, 3, 3) -> (n, 3)."""
    return _map_mat(cay_inv3, R)


def exp_jac_left(const double[:, ::1] xi):
    """Left Jacobian of ``exp``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(exp_jac_left3, xi)


def exp_jac_left_inv(const double[:, ::1] xi):
    """Inverse left Jacobian of ``exp``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(exp_jac_left_inv3, xi)


def exp_jac_right(const double[:, ::1] xi):
    """Right Jacobian of ``exp``, ``J_l(-xi)``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(exp_jac_left3, xi, True)


def exp_jac_right_inv(const double[:, ::1] xi):
    """Inverse right Jacobian of ``exp``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(exp_jac_left_inv3, xi, True)


def cay_jac_left(const double[:, ::1] xi):
    """Left Jacobian of ``cay``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(cay_jac_left3, xi)


def cay_jac_left_inv(const double[:, ::1] xi):
    """Inverse left Jacobian of ``cay``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(cay_jac_left_inv3, xi)


def cay_jac_right(const double[:, ::1] xi):
    """Right Jacobian of ``cay``, ``J_l(-xi)``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(cay_jac_left3, xi, True)


def cay_jac_right_inv(const double[:, ::1] xi):
    """Inverse right Jacobian of ``cay``: (n, 3) -> (n, 3, 3)."""
    return _map_vec(cay_jac_left_inv3, xi, True)
