# Surface geometry per point, shared by every kernel that touches a surface.
#
# Design: a surface is a `cdef class` deriving from ChartSurface. Its only duty is
# `chart_local`, the chart map of one chart coordinate (chart, u, v) in the surface's own frame,
# with its first and second derivatives. ChartSurface places that frame in space (rotation and
# centre), fixes the sign of the normal (role orientation times a per-chart sign that makes the
# chart's normal the reference one), switches charts, and loops over arrays. The derived
# quantities (normal, fundamental forms, Weingarten map, curvatures) are the inline functions
# below, so the rolling kernel computes them exactly as the array methods do. Everything here is
# `noexcept nogil`. The Python twin, the specification, is nhphys/twins/surfaces.py.
#
# Memory layouts (row-major, one point):
#   r[3]; J[6] = dr/du (3, 2), J[2*i + a] = d r_i / d u_a;
#   H[12] = d^2 r/du du (3, 2, 2), H[4*i + 2*a + b] = d^2 r_i / d u_a d u_b;
#   g[4], II[4], L[4] (2, 2) row-major; L = g^-1 II acts on chart velocities.

from libc.math cimport sqrt, atan2, cos, sin, floor, fabs

cdef extern from *:
    """
    #define NHPHYS_STEREO_RECHART_RADIUS 1.5
    #define NHPHYS_PI 3.14159265358979323846
    #define NHPHYS_UMBILIC_TOL 1e-10
    """
    # the same constants as nhphys/twins/surfaces.py (STEREO_RECHART_RADIUS, UMBILIC_TOL)
    const double STEREO_RECHART_RADIUS "NHPHYS_STEREO_RECHART_RADIUS"
    const double PI "NHPHYS_PI"
    const double UMBILIC_TOL "NHPHYS_UMBILIC_TOL"


cdef inline double dot3(const double* a, const double* b) noexcept nogil:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


cdef inline double normal_of(const double* J, double sign, double* n) noexcept nogil:
    # n = sign (J_u x J_v) / |J_u x J_v|; returns |J_u x J_v| = sqrt(det g), the area element
    cdef double c0 = J[2] * J[5] - J[4] * J[3]
    cdef double c1 = J[4] * J[1] - J[0] * J[5]
    cdef double c2 = J[0] * J[3] - J[2] * J[1]
    cdef double a = sqrt(c0 * c0 + c1 * c1 + c2 * c2)
    cdef double f = sign / a
    n[0] = c0 * f
    n[1] = c1 * f
    n[2] = c2 * f
    return a


cdef inline void forms_of(const double* J, const double* H, const double* n,
                          double* g, double* II) noexcept nogil:
    # g_ab = J_a . J_b,  II_ab = n . d^2 r / du_a du_b
    cdef int a, b, i
    cdef double sg, sh
    for a in range(2):
        for b in range(2):
            sg = 0.0
            sh = 0.0
            for i in range(3):
                sg += J[2 * i + a] * J[2 * i + b]
                sh += n[i] * H[4 * i + 2 * a + b]
            g[2 * a + b] = sg
            II[2 * a + b] = sh


cdef inline void weingarten_of(const double* g, const double* II, double* L) noexcept nogil:
    # L = g^-1 II
    cdef double inv = 1.0 / (g[0] * g[3] - g[1] * g[2])
    L[0] = (g[3] * II[0] - g[1] * II[2]) * inv
    L[1] = (g[3] * II[1] - g[1] * II[3]) * inv
    L[2] = (g[0] * II[2] - g[2] * II[0]) * inv
    L[3] = (g[0] * II[3] - g[2] * II[1]) * inv


cdef inline double gaussian_of(const double* g, const double* II) noexcept nogil:
    return (II[0] * II[3] - II[1] * II[2]) / (g[0] * g[3] - g[1] * g[2])


cdef inline double mean_of(const double* g, const double* II) noexcept nogil:
    # trace(g^-1 II) / 2
    return (0.5 * (g[3] * II[0] - g[1] * II[2] - g[2] * II[1] + g[0] * II[3])
            / (g[0] * g[3] - g[1] * g[2]))


cdef inline void principal_of(const double* J, const double* II, const double* n,
                              double* k, double* d1, double* d2) noexcept nogil:
    # Principal curvatures k[0] >= k[1] and unit principal directions d1, d2 (3-vectors).
    # In the orthonormal tangent frame e1 = J_u/|J_u|, e2 = n x e1 the chart Jacobian is the
    # upper-triangular P = [[|J_u|, e1.J_v], [0, e2.J_v]], and the Weingarten map there is the
    # symmetric S = P^-T II P^-1; its eigen-decomposition is a single Jacobi rotation.
    cdef double e1[3]
    cdef double e2[3]
    cdef double Jv[3]
    cdef double p00, p01, p11, q00, q01, q11, s00, s01, s11, m, d, th, c, s
    cdef int i
    for i in range(3):
        e1[i] = J[2 * i]
        Jv[i] = J[2 * i + 1]
    p00 = sqrt(dot3(e1, e1))
    for i in range(3):
        e1[i] /= p00
    e2[0] = n[1] * e1[2] - n[2] * e1[1]
    e2[1] = n[2] * e1[0] - n[0] * e1[2]
    e2[2] = n[0] * e1[1] - n[1] * e1[0]
    p01 = dot3(e1, Jv)
    p11 = dot3(e2, Jv)
    # Q = P^-1
    q00 = 1.0 / p00
    q11 = 1.0 / p11
    q01 = -p01 * q00 * q11
    # S = Q^T II Q (II symmetric)
    s00 = q00 * q00 * II[0]
    s01 = q00 * (q01 * II[0] + q11 * II[1])
    s11 = q01 * q01 * II[0] + 2.0 * q01 * q11 * II[1] + q11 * q11 * II[3]
    m = 0.5 * (s00 + s11)
    d = sqrt(0.25 * (s00 - s11) * (s00 - s11) + s01 * s01)
    k[0] = m + d
    k[1] = m - d
    # at an umbilic every direction is principal: take e1, e2 rather than a rotation by noise
    if d <= UMBILIC_TOL * (fabs(m) + d):
        th = 0.0
    else:
        th = 0.5 * atan2(2.0 * s01, s00 - s11)
    c = cos(th)
    s = sin(th)
    # sign: the larger of d1's two components in (e1, e2) is positive
    if (fabs(c) >= fabs(s) and c < 0.0) or (fabs(c) < fabs(s) and s < 0.0):
        c = -c
        s = -s
    for i in range(3):
        d1[i] = c * e1[i] + s * e2[i]
        d2[i] = -s * e1[i] + c * e2[i]


cdef inline void stereographic(int chart, double u, double v,
                               double* x, double* Jx, double* Hx) noexcept nogil:
    # Unit sphere from the plane: chart 0 sends w = 0 to the north pole,
    #   sigma = (2u q, 2v q, 2q - 1), q = 1 / (1 + u^2 + v^2),
    # chart 1 to the south pole (third component 1 - 2q). Layouts as r, J, H above.
    cdef double q = 1.0 / (1.0 + u * u + v * v)
    cdef double w[2]
    cdef double qa[2]
    cdef double qab[4]
    cdef double s3 = 1.0 if chart == 0 else -1.0
    cdef int i, a, b
    w[0] = u
    w[1] = v
    for a in range(2):
        qa[a] = -2.0 * w[a] * q * q
    for a in range(2):
        for b in range(2):
            qab[2 * a + b] = 8.0 * w[a] * w[b] * q * q * q
        qab[3 * a] -= 2.0 * q * q
    for i in range(2):
        x[i] = 2.0 * w[i] * q
        for a in range(2):
            Jx[2 * i + a] = 2.0 * w[i] * qa[a]
            for b in range(2):
                Hx[4 * i + 2 * a + b] = 2.0 * w[i] * qab[2 * a + b]
        Jx[2 * i + i] += 2.0 * q
        for a in range(2):
            Hx[4 * i + 2 * i + a] += 2.0 * qa[a]
            Hx[4 * i + 2 * a + i] += 2.0 * qa[a]
    x[2] = s3 * (2.0 * q - 1.0)
    for a in range(2):
        Jx[4 + a] = 2.0 * s3 * qa[a]
        for b in range(2):
            Hx[8 + 2 * a + b] = 2.0 * s3 * qab[2 * a + b]


cdef inline double wrap_angle(double x) noexcept nogil:
    # the representative of x modulo 2 pi in [-pi, pi)
    cdef double y = x - 2.0 * PI * floor((x + PI) / (2.0 * PI))
    if y < -PI:
        y += 2.0 * PI
    elif y >= PI:
        y -= 2.0 * PI
    return y


cdef class ChartSurface:
    cdef readonly int n_charts
    cdef readonly double orientation
    cdef double chart_sign[2]
    cdef double rot[9]
    cdef double ctr[3]
    cdef bint placed
    # True once a Python callback of the surface raised (PythonChartSurface): every later
    # evaluation fails at once (NaN values, failed chart changes) and a kernel seeing it stops
    # with the status CALLBACK_RAISED; `error` holds the exception, re-raised by the run
    cdef readonly bint raised
    cdef object error

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil
    cdef void evaluate(self, int chart, double u, double v,
                       double* r, double* J, double* H) noexcept nogil
    cdef double normal_sign(self, int chart) noexcept nogil
    cdef int change_chart_point(self, int chart, double* u, double* v, int target) noexcept nogil
    cdef int rechart_point(self, int* chart, double* u, double* v) noexcept nogil
    cdef int support_local(self, const double* d, int* chart, double* u, double* v) noexcept nogil
    cdef int support(self, const double* d, int* chart, double* u, double* v) noexcept nogil
    cdef void weingarten_point(self, int chart, double u, double v,
                               double* n, double* L) noexcept nogil
    cdef object _loop(self, int what, const Py_ssize_t[::1] chart, const double[:, ::1] uv)
    cdef void keep_error(self, object exc)
    cdef void raise_pending(self) except *


cdef class Plane(ChartSurface):
    pass


cdef class Ellipsoid(ChartSurface):
    cdef double ax[3]


cdef class Sphere(Ellipsoid):
    pass


cdef class Torus(ChartSurface):
    cdef double major
    cdef double minor


cdef class Paraboloid(ChartSurface):
    cdef double cx
    cdef double cy


cdef class SurfaceOfRevolution(ChartSurface):
    cdef double[:, ::1] knots
    cdef double t0
    cdef double h
    cdef bint periodic
    cdef void profile(self, double t, double* rho, double* z) noexcept nogil


cdef class HeightField(ChartSurface):
    cdef double[:, :, ::1] nodes
    cdef double x0
    cdef double hx
    cdef double y0
    cdef double hy


cdef class PythonChartSurface(ChartSurface):
    cdef object impl
