# Built-in surfaces as cdef classes: per-point chart maps (nogil) and thin array loops.
#
# Each class implements `chart_local` (see surfaces.pxd for layouts); ChartSurface does the
# placement in space, the normal sign, chart changes and the loops. Array methods take
# `chart` (n,) intp and `uv` (n, 2) float64, C-contiguous, and return new arrays. The twin with
# the same class names, constructors and methods is nhphys/twins/surfaces.py; input checking
# happens in nhphys/surfaces.

import numpy as np
cimport numpy as cnp
from libc.math cimport NAN

cnp.import_array()

# what the generic loop computes, and how many doubles per point it writes
cdef enum:
    Q_POINT = 0
    Q_JACOBIAN = 1
    Q_HESSIAN = 2
    Q_NORMAL = 3
    Q_AREA = 4
    Q_FIRST = 5
    Q_SECOND = 6
    Q_WEINGARTEN = 7
    Q_GAUSSIAN = 8
    Q_MEAN = 9
    Q_PRINCIPAL = 10

cdef int[11] WIDTH = [3, 6, 12, 3, 1, 4, 4, 4, 1, 1, 8]


cdef class ChartSurface:
    """Base of the compiled surfaces: placement, normal sign, chart changes, array loops."""

    def __init__(self, double orientation, center, rotation):
        cdef int i
        c = np.asarray(center, dtype=float).reshape(3)
        R = np.asarray(rotation, dtype=float).reshape(9)
        self.orientation = orientation
        self.placed = False
        for i in range(3):
            self.ctr[i] = c[i]
            if c[i] != 0.0:
                self.placed = True
        for i in range(9):
            self.rot[i] = R[i]
            if R[i] != (1.0 if i % 4 == 0 else 0.0):
                self.placed = True
        if self.n_charts == 0:
            self.n_charts = 1
            self.chart_sign[0] = 1.0
            self.chart_sign[1] = 1.0

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef int i
        for i in range(3):
            r[i] = 0.0
        for i in range(6):
            J[i] = 0.0
        for i in range(12):
            H[i] = 0.0

    cdef void evaluate(self, int chart, double u, double v,
                       double* r, double* J, double* H) noexcept nogil:
        # world frame: r = centre + R r_local, J = R J_local, H = R H_local
        cdef double rl[3]
        cdef double Jl[6]
        cdef double Hl[12]
        cdef int i, k, m
        cdef double s
        if not self.placed:
            self.chart_local(chart, u, v, r, J, H)
            return
        self.chart_local(chart, u, v, rl, Jl, Hl)
        for i in range(3):
            s = self.ctr[i]
            for k in range(3):
                s = s + self.rot[3 * i + k] * rl[k]
            r[i] = s
            for m in range(2):
                s = 0.0
                for k in range(3):
                    s = s + self.rot[3 * i + k] * Jl[2 * k + m]
                J[2 * i + m] = s
            for m in range(4):
                s = 0.0
                for k in range(3):
                    s = s + self.rot[3 * i + k] * Hl[4 * k + m]
                H[4 * i + m] = s

    cdef double normal_sign(self, int chart) noexcept nogil:
        return self.orientation * self.chart_sign[chart]

    cdef int change_chart_point(self, int chart, double* u, double* v, int target) noexcept nogil:
        # 0: (u, v) now holds the coordinates of the same point in chart `target`; -1: impossible
        if target == chart:
            return 0
        return -1

    cdef int rechart_point(self, int* chart, double* u, double* v) noexcept nogil:
        # 1 if the coordinates were changed (other chart or wrapped angles), else 0
        return 0

    cdef int support_local(self, const double* d, int* chart, double* u, double* v) noexcept nogil:
        return -1

    cdef int support(self, const double* d, int* chart, double* u, double* v) noexcept nogil:
        # the point whose outward normal is d (world frame); -1 if the surface has no such map
        cdef double dl[3]
        cdef int i
        for i in range(3):
            dl[i] = self.rot[i] * d[0] + self.rot[3 + i] * d[1] + self.rot[6 + i] * d[2]
        return self.support_local(dl, chart, u, v)

    cdef void weingarten_point(self, int chart, double u, double v,
                               double* n, double* L) noexcept nogil:
        cdef double r[3]
        cdef double J[6]
        cdef double H[12]
        cdef double g[4]
        cdef double II[4]
        self.evaluate(chart, u, v, r, J, H)
        normal_of(J, self.normal_sign(chart), n)
        forms_of(J, H, n, g, II)
        weingarten_of(g, II, L)

    cdef void keep_error(self, object exc):
        # the first exception a Python callback raised wins (later ones follow from it)
        if not self.raised:
            self.error = exc
            self.raised = True

    def take_error(self):
        """The exception a Python callback of this surface raised (with its traceback), or
        None; taking it clears it, and the surface evaluates again."""
        exc = self.error
        self.error = None
        self.raised = False
        return exc

    cdef void raise_pending(self) except *:
        # an array method re-raises what a callback raised inside its loop
        if self.raised:
            raise self.take_error()

    cdef object _loop(self, int what, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        cdef Py_ssize_t p, npts = uv.shape[0]
        cdef int w = WIDTH[what], c, i
        cdef double r[3]
        cdef double J[6]
        cdef double H[12]
        cdef double n[3]
        cdef double g[4]
        cdef double II[4]
        cdef double* o
        out = np.empty((npts, w))
        cdef double[:, ::1] ov = out
        if npts == 0:
            return out
        with nogil:
            for p in range(npts):
                c = <int>chart[p]
                o = &ov[p, 0]
                self.evaluate(c, uv[p, 0], uv[p, 1], r, J, H)
                if what == Q_POINT:
                    for i in range(3):
                        o[i] = r[i]
                    continue
                if what == Q_JACOBIAN:
                    for i in range(6):
                        o[i] = J[i]
                    continue
                if what == Q_HESSIAN:
                    for i in range(12):
                        o[i] = H[i]
                    continue
                if what == Q_AREA:
                    o[0] = normal_of(J, 1.0, n)
                    continue
                normal_of(J, self.normal_sign(c), n)
                if what == Q_NORMAL:
                    for i in range(3):
                        o[i] = n[i]
                    continue
                forms_of(J, H, n, g, II)
                if what == Q_FIRST:
                    for i in range(4):
                        o[i] = g[i]
                elif what == Q_SECOND:
                    for i in range(4):
                        o[i] = II[i]
                elif what == Q_WEINGARTEN:
                    weingarten_of(g, II, o)
                elif what == Q_GAUSSIAN:
                    o[0] = gaussian_of(g, II)
                elif what == Q_MEAN:
                    o[0] = mean_of(g, II)
                else:
                    principal_of(J, II, n, o, o + 2, o + 5)
        self.raise_pending()
        return out

    def point(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """Points r(u): (n,), (n, 2) -> (n, 3)."""
        return self._loop(Q_POINT, chart, uv)

    def jacobian(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """Jacobians dr/du: (n,), (n, 2) -> (n, 3, 2)."""
        return self._loop(Q_JACOBIAN, chart, uv).reshape(-1, 3, 2)

    def hessian(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """Second derivatives d^2 r/du du: (n,), (n, 2) -> (n, 3, 2, 2)."""
        return self._loop(Q_HESSIAN, chart, uv).reshape(-1, 3, 2, 2)

    def normal(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """Unit normals with the role's sign: (n,), (n, 2) -> (n, 3)."""
        return self._loop(Q_NORMAL, chart, uv)

    def area_element(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """sqrt(det g): (n,), (n, 2) -> (n,)."""
        return self._loop(Q_AREA, chart, uv).reshape(-1)

    def first_fundamental_form(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """g = J^T J: (n,), (n, 2) -> (n, 2, 2)."""
        return self._loop(Q_FIRST, chart, uv).reshape(-1, 2, 2)

    def second_fundamental_form(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """II_ab = n . d^2 r/du_a du_b: (n,), (n, 2) -> (n, 2, 2)."""
        return self._loop(Q_SECOND, chart, uv).reshape(-1, 2, 2)

    def weingarten(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """L = g^-1 II on chart velocities: (n,), (n, 2) -> (n, 2, 2)."""
        return self._loop(Q_WEINGARTEN, chart, uv).reshape(-1, 2, 2)

    def gaussian_curvature(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """det L: (n,), (n, 2) -> (n,)."""
        return self._loop(Q_GAUSSIAN, chart, uv).reshape(-1)

    def mean_curvature(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """trace(L) / 2: (n,), (n, 2) -> (n,)."""
        return self._loop(Q_MEAN, chart, uv).reshape(-1)

    def principal_curvatures(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """Curvatures k1 >= k2 (n, 2) and unit directions (n, 2, 3)."""
        out = self._loop(Q_PRINCIPAL, chart, uv)
        return np.ascontiguousarray(out[:, :2]), np.ascontiguousarray(out[:, 2:]).reshape(-1, 2, 3)

    def rechart(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv):
        """Preferred chart coordinates of the same points: -> chart (n,), uv (n, 2)."""
        cdef Py_ssize_t p, npts = uv.shape[0]
        cdef int c
        cdef double u, v
        chart_out = np.empty(npts, dtype=np.intp)
        uv_out = np.empty((npts, 2))
        cdef Py_ssize_t[::1] co = chart_out
        cdef double[:, ::1] uo = uv_out
        with nogil:
            for p in range(npts):
                c = <int>chart[p]
                u = uv[p, 0]
                v = uv[p, 1]
                self.rechart_point(&c, &u, &v)
                co[p] = c
                uo[p, 0] = u
                uo[p, 1] = v
        self.raise_pending()
        return chart_out, uv_out

    def change_chart(self, const Py_ssize_t[::1] chart, const double[:, ::1] uv,
                     const Py_ssize_t[::1] target):
        """Coordinates in chart `target` of the same points: -> uv (n, 2), ok (n,) bool."""
        cdef Py_ssize_t p, npts = uv.shape[0]
        cdef double u, v
        uv_out = np.empty((npts, 2))
        ok = np.empty(npts, dtype=np.bool_)
        cdef double[:, ::1] uo = uv_out
        cdef cnp.npy_bool[::1] okv = ok
        with nogil:
            for p in range(npts):
                u = uv[p, 0]
                v = uv[p, 1]
                okv[p] = self.change_chart_point(<int>chart[p], &u, &v, <int>target[p]) == 0
                uo[p, 0] = u
                uo[p, 1] = v
        self.raise_pending()
        return uv_out, ok

    def support_point(self, const double[:, ::1] direction):
        """Chart coordinates of the points whose outward normals are the unit `direction` (n, 3).

        Raises ValueError when the surface has no inverse Gauss map.
        """
        cdef Py_ssize_t p, npts = direction.shape[0]
        cdef int c = 0, status = 0
        cdef double u = 0.0, v = 0.0
        chart_out = np.empty(npts, dtype=np.intp)
        uv_out = np.empty((npts, 2))
        cdef Py_ssize_t[::1] co = chart_out
        cdef double[:, ::1] uo = uv_out
        cdef double e3[3]
        if npts == 0:
            e3[0] = 0.0
            e3[1] = 0.0
            e3[2] = 1.0
            status = self.support_local(e3, &c, &u, &v)
        with nogil:
            for p in range(npts):
                status = self.support(&direction[p, 0], &c, &u, &v)
                if status != 0:
                    break
                co[p] = c
                uo[p, 0] = u
                uo[p, 1] = v
        self.raise_pending()
        if status != 0:
            raise ValueError(
                f"support_point needs a strictly convex closed surface; {type(self).__name__} "
                "has no inverse Gauss map."
            )
        return chart_out, uv_out


cdef class Plane(ChartSurface):
    """r(u, v) = (u, v, 0) in the plane's frame; reference normal +z of that frame."""

    def __init__(self, double orientation, center, rotation):
        self.n_charts = 1
        self.chart_sign[0] = 1.0
        self.chart_sign[1] = 1.0
        ChartSurface.__init__(self, orientation, center, rotation)

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef int i
        r[0] = u
        r[1] = v
        r[2] = 0.0
        for i in range(6):
            J[i] = 0.0
        J[0] = 1.0
        J[3] = 1.0
        for i in range(12):
            H[i] = 0.0


cdef class Ellipsoid(ChartSurface):
    """Two stereographic charts of the unit sphere scaled by the semi-axes (see the twin)."""

    def __init__(self, double a, double b, double c, double orientation, center, rotation):
        self.ax[0] = a
        self.ax[1] = b
        self.ax[2] = c
        self.n_charts = 2
        self.chart_sign[0] = 1.0
        self.chart_sign[1] = -1.0
        ChartSurface.__init__(self, orientation, center, rotation)

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef int i, m
        stereographic(chart, u, v, r, J, H)
        for i in range(3):
            r[i] *= self.ax[i]
            for m in range(2):
                J[2 * i + m] *= self.ax[i]
            for m in range(4):
                H[4 * i + m] *= self.ax[i]

    cdef int change_chart_point(self, int chart, double* u, double* v, int target) noexcept nogil:
        cdef double d
        if target == chart:
            return 0
        if target < 0 or target > 1:
            return -1
        d = u[0] * u[0] + v[0] * v[0]
        if d == 0.0:
            return -1
        u[0] = u[0] / d
        v[0] = v[0] / d
        return 0

    cdef int rechart_point(self, int* chart, double* u, double* v) noexcept nogil:
        if u[0] * u[0] + v[0] * v[0] > STEREO_RECHART_RADIUS * STEREO_RECHART_RADIUS:
            self.change_chart_point(chart[0], u, v, 1 - chart[0])
            chart[0] = 1 - chart[0]
            return 1
        return 0

    cdef int support_local(self, const double* d, int* chart, double* u, double* v) noexcept nogil:
        # outward normal of x.D^-2 x = 1 at x = D s (|s| = 1) is along D^-1 s, so s = D d / |D d|
        cdef double s[3]
        cdef double nrm
        cdef int i
        for i in range(3):
            s[i] = self.ax[i] * d[i]
        nrm = sqrt(dot3(s, s))
        for i in range(3):
            s[i] /= nrm
        if s[2] >= 0.0:
            chart[0] = 0
            u[0] = s[0] / (1.0 + s[2])
            v[0] = s[1] / (1.0 + s[2])
        else:
            chart[0] = 1
            u[0] = s[0] / (1.0 - s[2])
            v[0] = s[1] / (1.0 - s[2])
        return 0


cdef class Sphere(Ellipsoid):
    """The ellipsoid with three equal semi-axes."""

    def __init__(self, double radius, double orientation, center, rotation):
        Ellipsoid.__init__(self, radius, radius, radius, orientation, center, rotation)


cdef class Torus(ChartSurface):
    """Angles (phi around the axis, theta around the tube); one periodic chart."""

    def __init__(self, double major, double minor, double orientation, center, rotation):
        self.major = major
        self.minor = minor
        self.n_charts = 1
        self.chart_sign[0] = 1.0
        self.chart_sign[1] = 1.0
        ChartSurface.__init__(self, orientation, center, rotation)

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef double cu = cos(u), su = sin(u), cv = cos(v), sv = sin(v)
        cdef double a = self.major + self.minor * cv
        cdef double b = self.minor
        r[0] = a * cu
        r[1] = a * su
        r[2] = b * sv
        J[0] = -a * su
        J[1] = -b * sv * cu
        J[2] = a * cu
        J[3] = -b * sv * su
        J[4] = 0.0
        J[5] = b * cv
        H[0] = -a * cu
        H[1] = b * sv * su
        H[2] = b * sv * su
        H[3] = -b * cv * cu
        H[4] = -a * su
        H[5] = -b * sv * cu
        H[6] = -b * sv * cu
        H[7] = -b * cv * su
        H[8] = 0.0
        H[9] = 0.0
        H[10] = 0.0
        H[11] = -b * sv

    cdef int rechart_point(self, int* chart, double* u, double* v) noexcept nogil:
        cdef double wu, wv
        if -PI <= u[0] < PI and -PI <= v[0] < PI:
            return 0
        wu = wrap_angle(u[0])
        wv = wrap_angle(v[0])
        u[0] = wu
        v[0] = wv
        return 1


cdef class Paraboloid(ChartSurface):
    """Graph z = cx x^2 + cy y^2 over chart coordinates (x, y); reference normal +z side."""

    def __init__(self, double cx, double cy, double orientation, center, rotation):
        self.cx = cx
        self.cy = cy
        self.n_charts = 1
        self.chart_sign[0] = 1.0
        self.chart_sign[1] = 1.0
        ChartSurface.__init__(self, orientation, center, rotation)

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef int i
        r[0] = u
        r[1] = v
        r[2] = self.cx * u * u + self.cy * v * v
        J[0] = 1.0
        J[1] = 0.0
        J[2] = 0.0
        J[3] = 1.0
        J[4] = 2.0 * self.cx * u
        J[5] = 2.0 * self.cy * v
        for i in range(12):
            H[i] = 0.0
        H[8] = 2.0 * self.cx
        H[11] = 2.0 * self.cy


# quintic Hermite basis on [0, 1], coefficients of s^0..s^5, multiplying in order
# h p0', h^2 p0'', h^2 p1'', h p1' and (p1 - p0); see quintic_eval in the twin
cdef double[30] QUINTIC = [
    0.0, 1.0, 0.0, -6.0, 8.0, -3.0,
    0.0, 0.0, 0.5, -1.5, 1.5, -0.5,
    0.0, 0.0, 0.0, 0.5, -1.0, 0.5,
    0.0, 0.0, 0.0, -4.0, 7.0, -3.0,
    0.0, 0.0, 0.0, 10.0, -15.0, 6.0,
]


cdef inline void quintic_eval(const double* k0, const double* k1, double h, double s,
                              double* out) noexcept nogil:
    # k0, k1: (value, first, second derivative) at the cell's ends; out: the same at s
    cdef double w[5]
    cdef const double* c
    cdef double v = 0.0, d1 = 0.0, d2 = 0.0
    cdef int j
    w[0] = h * k0[1]
    w[1] = h * h * k0[2]
    w[2] = h * h * k1[2]
    w[3] = h * k1[1]
    w[4] = k1[0] - k0[0]
    for j in range(5):
        c = &QUINTIC[6 * j]
        v += w[j] * (c[0] + s * (c[1] + s * (c[2] + s * (c[3] + s * (c[4] + s * c[5])))))
        d1 += w[j] * (c[1] + s * (2.0 * c[2] + s * (3.0 * c[3] + s * (4.0 * c[4]
                                                                        + s * 5.0 * c[5]))))
        d2 += w[j] * (2.0 * c[2] + s * (6.0 * c[3] + s * (12.0 * c[4] + s * 20.0 * c[5])))
    out[0] = k0[0] + v
    out[1] = d1 / h
    out[2] = d2 / (h * h)


cdef class SurfaceOfRevolution(ChartSurface):
    """r(t, phi) = (rho(t) cos phi, rho(t) sin phi, z(t)), profile by quintic Hermite knots."""

    def __init__(self, knots, double t0, double h, bint periodic, double orientation,
                 center, rotation):
        self.knots = np.ascontiguousarray(knots, dtype=float)
        self.t0 = t0
        self.h = h
        self.periodic = periodic
        self.n_charts = 1
        self.chart_sign[0] = -1.0
        self.chart_sign[1] = -1.0
        ChartSurface.__init__(self, orientation, center, rotation)

    cdef void profile(self, double t, double* rho, double* z) noexcept nogil:
        cdef Py_ssize_t n = self.knots.shape[0]
        cdef double x, period
        cdef Py_ssize_t k
        if self.periodic:
            period = (n - 1) * self.h
            t = t - period * floor((t - self.t0) / period)
        x = (t - self.t0) / self.h
        k = <Py_ssize_t>floor(x)
        if k < 0:
            k = 0
        elif k > n - 2:
            k = n - 2
        quintic_eval(&self.knots[k, 0], &self.knots[k + 1, 0], self.h, x - k, rho)
        quintic_eval(&self.knots[k, 3], &self.knots[k + 1, 3], self.h, x - k, z)

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef double rho[3]
        cdef double z[3]
        cdef double c = cos(v), s = sin(v)
        self.profile(u, rho, z)
        r[0] = rho[0] * c
        r[1] = rho[0] * s
        r[2] = z[0]
        J[0] = rho[1] * c
        J[1] = -rho[0] * s
        J[2] = rho[1] * s
        J[3] = rho[0] * c
        J[4] = z[1]
        J[5] = 0.0
        H[0] = rho[2] * c
        H[1] = -rho[1] * s
        H[2] = -rho[1] * s
        H[3] = -rho[0] * c
        H[4] = rho[2] * s
        H[5] = rho[1] * c
        H[6] = rho[1] * c
        H[7] = -rho[0] * s
        H[8] = z[2]
        H[9] = 0.0
        H[10] = 0.0
        H[11] = 0.0

    cdef int rechart_point(self, int* chart, double* u, double* v) noexcept nogil:
        cdef int changed = 0
        cdef double period
        if not (-PI <= v[0] < PI):
            v[0] = wrap_angle(v[0])
            changed = 1
        if self.periodic:
            period = (self.knots.shape[0] - 1) * self.h
            if not (self.t0 <= u[0] < self.t0 + period):
                u[0] = u[0] - period * floor((u[0] - self.t0) / period)
                changed = 1
        return changed


cdef inline void cubic_basis(double s, double h, double* b) noexcept nogil:
    # b[6 * corner + 3 * kind + order]: corner 0/1, kind 0 value / 1 slope (times h),
    # order 0, 1, 2 derivatives with respect to the physical coordinate
    b[0] = 1.0 - s * s * (3.0 - 2.0 * s)
    b[1] = (-6.0 * s + 6.0 * s * s) / h
    b[2] = (-6.0 + 12.0 * s) / (h * h)
    b[3] = h * (s - 2.0 * s * s + s * s * s)
    b[4] = 1.0 - 4.0 * s + 3.0 * s * s
    b[5] = (-4.0 + 6.0 * s) / h
    b[6] = s * s * (3.0 - 2.0 * s)
    b[7] = (6.0 * s - 6.0 * s * s) / h
    b[8] = (6.0 - 12.0 * s) / (h * h)
    b[9] = h * (-s * s + s * s * s)
    b[10] = -2.0 * s + 3.0 * s * s
    b[11] = (-2.0 + 6.0 * s) / h


cdef class HeightField(ChartSurface):
    """Graph z = f(x, y), f bicubic Hermite on a uniform grid (nodes: f, f_x, f_y, f_xy)."""

    def __init__(self, nodes, double x0, double hx, double y0, double hy, double orientation,
                 center, rotation):
        self.nodes = np.ascontiguousarray(nodes, dtype=float)
        self.x0 = x0
        self.hx = hx
        self.y0 = y0
        self.hy = hy
        self.n_charts = 1
        self.chart_sign[0] = 1.0
        self.chart_sign[1] = 1.0
        ChartSurface.__init__(self, orientation, center, rotation)

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef Py_ssize_t nx = self.nodes.shape[0], ny = self.nodes.shape[1]
        cdef double xs = (u - self.x0) / self.hx, ys = (v - self.y0) / self.hy
        cdef Py_ssize_t ix = <Py_ssize_t>floor(xs), iy = <Py_ssize_t>floor(ys)
        cdef double bx[12]
        cdef double by[12]
        cdef double f[9]
        cdef int i, j, kx, ky, p, q
        cdef double d
        if ix < 0:
            ix = 0
        elif ix > nx - 2:
            ix = nx - 2
        if iy < 0:
            iy = 0
        elif iy > ny - 2:
            iy = ny - 2
        cubic_basis(xs - ix, self.hx, bx)
        cubic_basis(ys - iy, self.hy, by)
        for p in range(9):
            f[p] = 0.0
        for i in range(2):
            for j in range(2):
                for kx in range(2):
                    for ky in range(2):
                        d = self.nodes[ix + i, iy + j, kx + 2 * ky]
                        for p in range(3):
                            for q in range(3 - p):
                                f[3 * p + q] += d * bx[6 * i + 3 * kx + p] * by[6 * j + 3 * ky + q]
        r[0] = u
        r[1] = v
        r[2] = f[0]
        J[0] = 1.0
        J[1] = 0.0
        J[2] = 0.0
        J[3] = 1.0
        J[4] = f[3]
        J[5] = f[1]
        for i in range(8):
            H[i] = 0.0
        H[8] = f[6]
        H[9] = f[4]
        H[10] = f[4]
        H[11] = f[2]


cdef class PythonChartSurface(ChartSurface):
    """A surface evaluated by Python (a twin-style object), usable wherever a ChartSurface is.

    ``impl`` provides ``n_charts``, ``chart_sign``, ``chart_local(chart, u, v) -> (r, J, H)``,
    ``rechart_point``, ``change_chart_point`` and ``support_local`` with the twin's signatures
    (see nhphys/twins/surfaces.py). Each call takes the GIL, so a compiled kernel can use a
    user-defined surface, at Python speed.

    An exception raised by ``impl`` (Ctrl-C's ``KeyboardInterrupt`` included) cannot cross the
    ``noexcept nogil`` boundary: the surface keeps the first one, with its traceback, sets
    ``raised``, and from then on every evaluation fails at once without calling Python (NaN
    values, a failed chart change or support point), so the calling kernel stops within its
    step (the rolling kernel with the status ``CALLBACK_RAISED``). The run then re-raises the
    exception itself (``take_error``); the array methods re-raise it when their loop ends.
    """

    def __init__(self, impl, double orientation):
        self.impl = impl
        self.n_charts = int(impl.n_charts)
        self.chart_sign[0] = float(impl.chart_sign[0])
        self.chart_sign[1] = float(impl.chart_sign[1]) if self.n_charts > 1 else 1.0
        ChartSurface.__init__(self, orientation, np.zeros(3), np.eye(3))

    cdef void chart_local(self, int chart, double u, double v,
                          double* r, double* J, double* H) noexcept nogil:
        cdef int i
        if not self.raised:
            with gil:
                try:
                    rr, JJ, HH = self.impl.chart_local(chart, u, v)
                    rr = np.asarray(rr, dtype=float).reshape(3)
                    JJ = np.asarray(JJ, dtype=float).reshape(6)
                    HH = np.asarray(HH, dtype=float).reshape(12)
                    for i in range(3):
                        r[i] = rr[i]
                    for i in range(6):
                        J[i] = JJ[i]
                    for i in range(12):
                        H[i] = HH[i]
                    return
                except BaseException as exc:
                    self.keep_error(exc)
        for i in range(3):
            r[i] = NAN
        for i in range(6):
            J[i] = NAN
        for i in range(12):
            H[i] = NAN

    cdef int change_chart_point(self, int chart, double* u, double* v, int target) noexcept nogil:
        if self.raised:
            return -1
        with gil:
            try:
                status, uu, vv = self.impl.change_chart_point(chart, u[0], v[0], target)
                u[0] = uu
                v[0] = vv
                return status
            except BaseException as exc:
                self.keep_error(exc)
                return -1

    cdef int rechart_point(self, int* chart, double* u, double* v) noexcept nogil:
        if self.raised:
            return 0
        with gil:
            try:
                changed, c, uu, vv = self.impl.rechart_point(chart[0], u[0], v[0])
                chart[0] = c
                u[0] = uu
                v[0] = vv
                return changed
            except BaseException as exc:
                self.keep_error(exc)
                return 0

    cdef int support_local(self, const double* d, int* chart, double* u, double* v) noexcept nogil:
        if self.raised:
            return -1
        with gil:
            try:
                status, c, uu, vv = self.impl.support_local(np.array([d[0], d[1], d[2]]))
                chart[0] = c
                u[0] = uu
                v[0] = vv
                return status
            except BaseException as exc:
                self.keep_error(exc)
                return -1
