# SO(3) per-point arithmetic, shared by every kernel that moves a rigid body.
#
# Design: each function below works on raw pointers to one 3-vector or one row-major 3x3
# matrix, is `noexcept nogil`, and is inlined into the loops that call it (the array wrappers
# in so3.pyx and the time loops of the integrator kernels). The Python twin, the
# specification, is nhphys/twins/so3.py: same formulas, same series switches.

from libc.math cimport sin, cos, tan, sqrt, atan2, fabs

cdef extern from *:
    """
    #define NHPHYS_SERIES_SWITCH 0.5
    #define NHPHYS_LOG_SERIES_SWITCH 1e-3
    """
    # the same switches as nhphys/twins/so3.py (SERIES_SWITCH, LOG_SERIES_SWITCH)
    const double SERIES_SWITCH "NHPHYS_SERIES_SWITCH"
    const double LOG_SERIES_SWITCH "NHPHYS_LOG_SERIES_SWITCH"


cdef inline double horner(const double* c, double t2) noexcept nogil:
    # eight Taylor coefficients in t^2, constant term first
    cdef double out = 0.0
    cdef int k
    for k in range(7, -1, -1):
        out = out * t2 + c[k]
    return out


cdef inline double coeff_sinc(double t) noexcept nogil:
    cdef double[8] c = [1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800.0,
                        1.0 / 6227020800.0, -1.0 / 1307674368000.0]
    if t < SERIES_SWITCH:
        return horner(c, t * t)
    return sin(t) / t


cdef inline double coeff_a(double t) noexcept nogil:
    # (1 - cos t) / t^2
    cdef double[8] c = [0.5, -1.0 / 24, 1.0 / 720, -1.0 / 40320, 1.0 / 3628800.0,
                        -1.0 / 479001600.0, 1.0 / 87178291200.0, -1.0 / 20922789888000.0]
    cdef double s
    if t < SERIES_SWITCH:
        return horner(c, t * t)
    s = sin(0.5 * t)
    return 2.0 * s * s / (t * t)


cdef inline double coeff_b(double t) noexcept nogil:
    # (t - sin t) / t^3
    cdef double[8] c = [1.0 / 6, -1.0 / 120, 1.0 / 5040, -1.0 / 362880, 1.0 / 39916800.0,
                        -1.0 / 6227020800.0, 1.0 / 1307674368000.0, -1.0 / 355687428096000.0]
    if t < SERIES_SWITCH:
        return horner(c, t * t)
    return (t - sin(t)) / (t * t * t)


cdef inline double coeff_c(double t) noexcept nogil:
    # 1/t^2 - (1 + cos t)/(2 t sin t): the hat^2 coefficient of J_l^-1 for exp
    cdef double[8] c = [1.0 / 12, 1.0 / 720, 1.0 / 30240, 1.0 / 1209600.0, 1.0 / 47900160.0,
                        691.0 / 1307674368000.0, 1.0 / 74724249600.0, 3617.0 / 10670622842880000.0]
    if t < SERIES_SWITCH:
        return horner(c, t * t)
    return 1.0 / (t * t) - 1.0 / (2.0 * t * tan(0.5 * t))


cdef inline double coeff_dc(double t) noexcept nogil:
    # c'(t) / t
    cdef double[8] c = [1.0 / 360, 1.0 / 7560, 1.0 / 201600, 1.0 / 5987520.0,
                        691.0 / 130767436800.0, 1.0 / 6227020800.0, 3617.0 / 762187345920000.0,
                        43867.0 / 319318388573184000.0]
    cdef double s
    if t < SERIES_SWITCH:
        return horner(c, t * t)
    s = sin(0.5 * t)
    return (-2.0 / (t * t * t * t) + 1.0 / (2.0 * t * t * t * tan(0.5 * t))
            + 1.0 / (4.0 * t * t * s * s))


cdef inline double norm3(const double* v) noexcept nogil:
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


cdef inline double dot3(const double* u, const double* v) noexcept nogil:
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


cdef inline void cross3(const double* u, const double* v, double* out) noexcept nogil:
    # out may not alias u or v
    out[0] = u[1] * v[2] - u[2] * v[1]
    out[1] = u[2] * v[0] - u[0] * v[2]
    out[2] = u[0] * v[1] - u[1] * v[0]


cdef inline void polar_factor(double* X) noexcept nogil:
    # the orthogonal polar factor of the 3 x 3 X in place (the twin's polar_factor): Newton's
    # iteration X <- (X + X^-T) / 2, where X^-T has the rows (r1 x r2, r2 x r0, r0 x r1) / det;
    # quadratic, two or three iterations from near SO(3); stops when the last correction is at
    # round-off (2 eps) or after 50 iterations
    cdef double C[9]
    cdef double det, change, v
    cdef int it, k
    for it in range(50):
        cross3(X + 3, X + 6, C)
        cross3(X + 6, X, C + 3)
        cross3(X, X + 3, C + 6)
        det = X[0] * C[0] + X[1] * C[1] + X[2] * C[2]
        change = 0.0
        for k in range(9):
            v = 0.5 * (X[k] + C[k] / det)
            if fabs(v - X[k]) > change:
                change = fabs(v - X[k])
            X[k] = v
        if change <= 4.440892098500626e-16:
            break


cdef inline void hat3(const double* v, double* M) noexcept nogil:
    M[0] = 0.0
    M[1] = -v[2]
    M[2] = v[1]
    M[3] = v[2]
    M[4] = 0.0
    M[5] = -v[0]
    M[6] = -v[1]
    M[7] = v[0]
    M[8] = 0.0


cdef inline void vee3(const double* M, double* v) noexcept nogil:
    v[0] = 0.5 * (M[7] - M[5])
    v[1] = 0.5 * (M[2] - M[6])
    v[2] = 0.5 * (M[3] - M[1])


cdef inline void poly3(const double* xi, double c1, double c2, double* M) noexcept nogil:
    # I + c1 hat(xi) + c2 hat(xi)^2, using hat(xi)^2 = xi xi^T - |xi|^2 I
    cdef double x = xi[0], y = xi[1], z = xi[2]
    cdef double n2 = x * x + y * y + z * z
    M[0] = 1.0 + c2 * (x * x - n2)
    M[1] = -c1 * z + c2 * x * y
    M[2] = c1 * y + c2 * x * z
    M[3] = c1 * z + c2 * y * x
    M[4] = 1.0 + c2 * (y * y - n2)
    M[5] = -c1 * x + c2 * y * z
    M[6] = -c1 * y + c2 * z * x
    M[7] = c1 * x + c2 * z * y
    M[8] = 1.0 + c2 * (z * z - n2)


cdef inline void exp3(const double* xi, double* R) noexcept nogil:
    cdef double t = norm3(xi)
    poly3(xi, coeff_sinc(t), coeff_a(t), R)


cdef inline void rotation_about(const double* axis, double angle, double* R) noexcept nogil:
    # the rotation by `angle` about the unit axis: exp3 of the rotation vector angle * axis
    cdef double xi[3]
    xi[0] = angle * axis[0]
    xi[1] = angle * axis[1]
    xi[2] = angle * axis[2]
    exp3(xi, R)


cdef inline void log3(const double* R, double* xi) noexcept nogil:
    cdef double v[3]
    cdef double S[9]
    cdef double cos_t, sin_t, theta, ratio, scale
    cdef int i, j
    vee3(R, v)
    cos_t = 0.5 * (R[0] + R[4] + R[8] - 1.0)
    sin_t = norm3(v)
    theta = atan2(sin_t, cos_t)
    if cos_t < 0.0:
        # near pi: axis from S = (R + R^T)/2 - cos(theta) I = (1 - cos(theta)) n n^T
        for i in range(3):
            for j in range(3):
                S[3 * i + j] = 0.5 * (R[3 * i + j] + R[3 * j + i])
            S[4 * i] -= cos_t
        j = 0
        if S[4] > S[4 * j]:
            j = 1
        if S[8] > S[4 * j]:
            j = 2
        scale = 1.0 / sqrt(S[4 * j] * (1.0 - cos_t))
        for i in range(3):
            xi[i] = S[3 * i + j] * scale
        if dot3(xi, v) < 0.0:
            scale = -theta
        else:
            scale = theta
        for i in range(3):
            xi[i] *= scale
        return
    if theta < LOG_SERIES_SWITCH:
        ratio = 1.0 + theta * theta / 6.0 + 7.0 * theta * theta * theta * theta / 360.0
    else:
        ratio = theta / sin_t
    for i in range(3):
        xi[i] = ratio * v[i]


cdef inline void cay3(const double* xi, double* R) noexcept nogil:
    cdef double f = 4.0 / (4.0 + dot3(xi, xi))
    poly3(xi, f, 0.5 * f, R)


cdef inline void cay_inv3(const double* R, double* xi) noexcept nogil:
    cdef double v[3]
    cdef double f = 4.0 / (1.0 + R[0] + R[4] + R[8])
    cdef int i
    vee3(R, v)
    for i in range(3):
        xi[i] = f * v[i]


cdef inline void exp_jac_left3(const double* xi, double* J) noexcept nogil:
    cdef double t = norm3(xi)
    poly3(xi, coeff_a(t), coeff_b(t), J)


cdef inline void exp_jac_left_inv3(const double* xi, double* J) noexcept nogil:
    poly3(xi, -0.5, coeff_c(norm3(xi)), J)


cdef inline void cay_jac_left3(const double* xi, double* J) noexcept nogil:
    cdef double f = 4.0 / (4.0 + dot3(xi, xi))
    cdef int i
    poly3(xi, 0.5, 0.0, J)
    for i in range(9):
        J[i] *= f


cdef inline void cay_jac_left_inv3(const double* xi, double* J) noexcept nogil:
    cdef int i, j
    poly3(xi, -0.5, 0.0, J)
    for i in range(3):
        for j in range(3):
            J[3 * i + j] += 0.25 * xi[i] * xi[j]


cdef inline void neg3(const double* xi, double* out) noexcept nogil:
    out[0] = -xi[0]
    out[1] = -xi[1]
    out[2] = -xi[2]
