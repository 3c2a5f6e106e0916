# A convex rigid body rolling without slipping on a surface: the whole time loop.
#
# Design: the body's shape is a `cdef class` with a virtual `support` (support point, its
# derivative and the into-body normal; a nonzero status is a failure or a contact event, passed
# up unchanged to rolling_run's info): ChartShape, Disk, Cylinder, Wheel. The ground is any
# compiled chart surface of nhphys_ext.surfaces. The two Newton problems (the contact pair of a
# pose, and the step's (xi, F)) are residual and Jacobian callbacks over problem structs
# (ContactProblem, StepProblem) solved by the shared newton_solve of nhphys_ext/newton.pxd, each
# under its own NewtonRule; rolling_step() is one step and rolling_loop() the loop of one run,
# which works on a local copy of the state and commits a step only when all its sub-steps
# succeeded; rolling_run() calls it once, rolling_ensemble() once per run of a batch, the runs
# spread over OpenMP threads (prange). Statuses are those of newton.pxd. The derivation, the Newton rules and floors, and the specification
# are in nhphys/twins/rolling.py (same names, same arguments, same results).
#
# The problem structs hold the shape and the ground as borrowed PyObject pointers: the objects
# are arguments of the caller, alive for the whole solve, and the casts back take no reference
# (no GIL needed).

cimport cython
from cython.parallel cimport prange
from cpython.ref cimport PyObject
from libc.math cimport sqrt, fabs, isfinite, atan, atan2, sin, cos, asinh, hypot, M_PI, INFINITY

from nhphys_ext.so3 cimport (
    polar_factor, cross3, dot3, norm3, exp3, cay3, exp_jac_left3, cay_jac_left3, neg3, hat3,
    rotation_about,
)
from nhphys_ext.dense cimport matmul3, matTvec3, matvec3, max_abs, solve_small
from nhphys_ext.rigid cimport (
    momentum_minus, momentum_minus_jacobian, momentum_plus, reorthonormalize,
)
from nhphys_ext.surfaces cimport (
    ChartSurface, PythonChartSurface, normal_of, forms_of, weingarten_of,
)
from nhphys_ext.forces cimport ForceSet
from nhphys_ext.newton cimport (
    newton_solve, newton_solve_damped, NewtonRule, OK, NOT_CONVERGED, SINGULAR_JACOBIAN,
    NOT_FINITE, FAR_BRANCH, CONTACT_FAILED, SINGULAR_CONTACT, SUPPORT_FAILED, FLAT, RIM_TO_SIDE,
    INNER_CONTACT, CALLBACK_RAISED, TOO_MANY_EVENTS,
)
from nhphys_ext.newton cimport INFO_COMMITTED, INFO_SIZE
from nhphys_ext.field_state cimport as_state, energy_correction, writable_state
from nhphys_ext.dop853 cimport (
    Dop853Table, dop853_run,
)

DEF ROUNDOFF = 8 * 2.220446049250313e-16  # ROUNDOFF of the twin: the step's residual test
DEF ROLLING_SWEEPS = 50  # the twin's: the end kick's rolling-resistance normal force
DEF NORMAL_TOL = 1e-14
DEF NORMAL_STALL = 1e-8
# rolling_run's option bits and history length (twin: EXTRAPOLATE, GLOBALIZE, HISTORY)
DEF EXTRAPOLATE = 1
DEF GLOBALIZE = 2
DEF HISTORY = 3
DEF MAX_SUBSTEPS = 32  # sub-steps whose solutions EXTRAPOLATE keeps (order 8: 17)
DEF FRAME_SIZE = 34  # numbers of one saved frame (the twin's FRAME_SIZE; write_frame)

cdef extern from *:
    """
    #ifdef _OPENMP
    #define NHPHYS_OPENMP 1
    #else
    #define NHPHYS_OPENMP 0
    #endif
    """
    const int NHPHYS_OPENMP

# True when this module was compiled with OpenMP: rolling_ensemble then spreads its runs over
# threads; without it the prange is a plain serial loop (setup.py builds without -fopenmp
# where the compiler does not take it)
OPENMP = bool(NHPHYS_OPENMP)


cdef struct Contact:
    int chart
    double z[2]
    double s[3]
    double Sp[9]
    double n_M[3]
    double x[3]
    double n[3]
    double gap
    double ds_ddelta[9]
    double ds_da[9]


cdef class ConvexShape:
    """A convex body shape seen from its centre of mass (base class)."""

    cdef int support(self, const double* d, double* s, double* Sp, double* n_M) noexcept nogil:
        return SUPPORT_FAILED


cdef class ChartShape(ConvexShape):
    """A strictly convex closed chart surface as a body shape (see the twin)."""

    cdef ChartSurface surface
    cdef double com[3]

    def __init__(self, ChartSurface surface, com):
        self.surface = surface
        for i in range(3):
            self.com[i] = float(com[i])

    cdef int support(self, const double* d, double* s, double* Sp, double* n_M) noexcept nogil:
        cdef double unit[3]
        cdef double r[3]
        cdef double J[6]
        cdef double H[12]
        cdef double II[4]
        cdef double IIinv[4]
        cdef double nc[3]
        cdef double norm = norm3(d), det, ncn
        cdef int chart = 0, i, j, a, b
        cdef double u = 0.0, v = 0.0
        for i in range(3):
            unit[i] = d[i] / norm
        if self.surface.support(unit, &chart, &u, &v) != 0:
            return CALLBACK_RAISED if self.surface.raised else SUPPORT_FAILED
        self.surface.evaluate(chart, u, v, r, J, H)
        if self.surface.raised:
            return CALLBACK_RAISED
        # II with the into-body normal -unit
        for a in range(2):
            for b in range(2):
                II[2 * a + b] = -(unit[0] * H[2 * a + b] + unit[1] * H[4 + 2 * a + b]
                                  + unit[2] * H[8 + 2 * a + b])
        det = II[0] * II[3] - II[1] * II[2]
        IIinv[0] = II[3] / det
        IIinv[1] = -II[1] / det
        IIinv[2] = -II[2] / det
        IIinv[3] = II[0] / det
        for i in range(3):
            s[i] = r[i] - self.com[i]
            for j in range(3):
                Sp[3 * i + j] = 0.0
                for a in range(2):
                    for b in range(2):
                        Sp[3 * i + j] += J[2 * i + a] * IIinv[2 * a + b] * J[2 * j + b]
                Sp[3 * i + j] /= norm
        normal_of(J, 1.0, nc)
        ncn = -(nc[0] * unit[0] + nc[1] * unit[1] + nc[2] * unit[2])
        for i in range(3):
            n_M[i] = nc[i] if ncn > 0 else -nc[i]
        return OK


cdef inline int rim(const double* d, double sin_flat, double* w, double* t, double* perp,
                    double* norm) noexcept nogil:
    # rim direction w, rim tangent t = e_z x w, |d_perp| and |d|; FLAT near the axis
    norm[0] = norm3(d)
    perp[0] = sqrt(d[0] * d[0] + d[1] * d[1])
    if not perp[0] > sin_flat * norm[0]:
        return FLAT
    w[0] = d[0] / perp[0]
    w[1] = d[1] / perp[0]
    w[2] = 0.0
    t[0] = -w[1]
    t[1] = w[0]
    t[2] = 0.0
    return OK


cdef inline void rim_support(const double* d, double radius, const double* com, const double* w,
                             const double* t, double perp, double norm, double* s, double* Sp,
                             double* n_M) noexcept nogil:
    # s = rho w - com, S' = rho / |d_perp| t t^T, n_M = -d/|d|
    cdef int i, j
    for i in range(3):
        s[i] = radius * w[i] - com[i]
        n_M[i] = -d[i] / norm
        for j in range(3):
            Sp[3 * i + j] = radius / perp * t[i] * t[j]


cdef class Disk(ConvexShape):
    """A thin disk in the body's xy plane (see the twin)."""

    cdef double radius, sin_flat
    cdef double com[3]

    def __init__(self, double radius, com, double flat_angle):
        self.radius = radius
        self.sin_flat = sin(flat_angle)
        for i in range(3):
            self.com[i] = float(com[i])

    cdef int support(self, const double* d, double* s, double* Sp, double* n_M) noexcept nogil:
        cdef double w[3]
        cdef double t[3]
        cdef double perp, norm
        if rim(d, self.sin_flat, w, t, &perp, &norm):
            return FLAT
        rim_support(d, self.radius, self.com, w, t, perp, norm, s, Sp, n_M)
        return OK


cdef class Cylinder(ConvexShape):
    """A solid cylinder round the body z axis (see the twin)."""

    cdef double radius, half_length, sin_flat, sin_side
    cdef double com[3]

    def __init__(self, double radius, double half_length, com, double flat_angle,
                 double side_angle):
        self.radius = radius
        self.half_length = half_length
        self.sin_flat = sin(flat_angle)
        self.sin_side = sin(side_angle)
        for i in range(3):
            self.com[i] = float(com[i])

    cdef int support(self, const double* d, double* s, double* Sp, double* n_M) noexcept nogil:
        cdef double w[3]
        cdef double t[3]
        cdef double perp, norm
        if rim(d, self.sin_flat, w, t, &perp, &norm):
            return FLAT
        if not fabs(d[2]) > self.sin_side * norm:
            return RIM_TO_SIDE
        rim_support(d, self.radius, self.com, w, t, perp, norm, s, Sp, n_M)
        s[2] += self.half_length if d[2] > 0 else -self.half_length
        return OK


cdef class Wheel(ConvexShape):
    """A torus (tyre) round the body z axis; only the tube's outer half supports (see the twin)."""

    cdef double radius, tube_radius, sin_flat
    cdef double com[3]

    def __init__(self, double radius, double tube_radius, com, double flat_angle):
        self.radius = radius
        self.tube_radius = tube_radius
        self.sin_flat = sin(flat_angle)
        for i in range(3):
            self.com[i] = float(com[i])

    cdef int support(self, const double* d, double* s, double* Sp, double* n_M) noexcept nogil:
        cdef double w[3]
        cdef double t[3]
        cdef double perp, norm
        cdef int i, j
        if rim(d, self.sin_flat, w, t, &perp, &norm):
            return INNER_CONTACT
        rim_support(d, self.radius, self.com, w, t, perp, norm, s, Sp, n_M)
        # the tube: + r u, S' += r/|d| (I - u u^T), with u = -n_M
        for i in range(3):
            s[i] -= self.tube_radius * n_M[i]
            for j in range(3):
                Sp[3 * i + j] += self.tube_radius / norm * ((1.0 if i == j else 0.0)
                                                            - n_M[i] * n_M[j])
        return OK


# -- small dense helpers ------------------------------------------------------------------------

cdef inline void transpose3(const double* M, double* T) noexcept nogil:
    cdef int i, j
    for i in range(3):
        for j in range(3):
            T[3 * i + j] = M[3 * j + i]


cdef inline void tangent_basis(const double* n, double* T) noexcept nogil:
    # orthonormal (3, 2) basis of n's perpendicular plane, row-major T[2*i + col]
    cdef double e[3]
    cdef double t1[3]
    cdef double t2[3]
    cdef int k = 0, i
    cdef double nt
    if fabs(n[1]) < fabs(n[k]):
        k = 1
    if fabs(n[2]) < fabs(n[k]):
        k = 2
    e[0] = 0.0
    e[1] = 0.0
    e[2] = 0.0
    e[k] = 1.0
    cross3(n, e, t1)
    nt = norm3(t1)
    for i in range(3):
        t1[i] /= nt
    cross3(n, t1, t2)
    for i in range(3):
        T[2 * i] = t1[i]
        T[2 * i + 1] = t2[i]


cdef inline void jac_right(const double* xi, int map_code, double* J) noexcept nogil:
    # J_r(xi) = J_l(-xi)
    cdef double m[3]
    neg3(xi, m)
    if map_code == 0:
        exp_jac_left3(m, J)
    else:
        cay_jac_left3(m, J)


cdef inline void retract(const double* xi, int map_code, double* Q) noexcept nogil:
    if map_code == 0:
        exp3(xi, Q)
    else:
        cay3(xi, Q)


cdef inline void rotation_vector(const double* xi, int map_code, double* phi,
                                 double* dphi) noexcept nogil:
    # phi = log(tau(xi)) and dphi/dxi (see the twin): exp -> xi, I; Cayley -> g xi, g I + dg xi xi^T
    cdef double G[8]
    cdef double DG[8]
    cdef double t, t2, g, dg
    cdef int i, j
    if map_code == 0:
        for i in range(3):
            phi[i] = xi[i]
            for j in range(3):
                dphi[3 * i + j] = 1.0 if i == j else 0.0
        return
    t = norm3(xi)
    if t < 0.1:  # CAYLEY_SERIES_SWITCH of the twin
        G[:] = [1.0, -1.0 / 12, 1.0 / 80, -1.0 / 448, 1.0 / 2304, -1.0 / 11264, 1.0 / 53248,
                -1.0 / 245760]
        DG[:] = [-1.0 / 6, 1.0 / 20, -3.0 / 224, 1.0 / 288, -5.0 / 5632, 3.0 / 13312,
                 -7.0 / 122880, 1.0 / 69632]
        t2 = t * t
        g = 0.0
        dg = 0.0
        for i in range(7, -1, -1):
            g = g * t2 + G[i]
            dg = dg * t2 + DG[i]
    else:
        g = 2.0 * atan(0.5 * t) / t
        dg = (t / (1.0 + 0.25 * t * t) - 2.0 * atan(0.5 * t)) / (t * t * t)
    for i in range(3):
        phi[i] = g * xi[i]
        for j in range(3):
            dphi[3 * i + j] = dg * xi[i] * xi[j]
        dphi[4 * i] += g


# -- contact ------------------------------------------------------------------------------------

cdef inline void ground_geometry(ChartSurface ground, int chart, const double* z, double* x,
                                 double* J, double* H, double* n, double* W) noexcept nogil:
    cdef double g[4]
    cdef double II[4]
    ground.evaluate(chart, z[0], z[1], x, J, H)
    normal_of(J, ground.normal_sign(chart), n)
    forms_of(J, H, n, g, II)
    weingarten_of(g, II, W)


cdef inline void contact_jacobian(const double* A, const double* Sp, const double* J,
                                  const double* H, const double* W, const double* Px,
                                  double* dRdz) noexcept nogil:
    # dR/dz = H . (P - x) + J^T (A S' A^T J W - J)  (2 x 2)
    cdef double ASAt[9]
    cdef double T1[9]
    cdef double At[9]
    cdef double JW[6]
    cdef double M[6]
    cdef int i, a, b, k
    transpose3(A, At)
    matmul3(A, Sp, T1)
    matmul3(T1, At, ASAt)
    for i in range(3):
        for b in range(2):
            JW[2 * i + b] = J[2 * i] * W[b] + J[2 * i + 1] * W[2 + b]
    for i in range(3):
        for b in range(2):
            M[2 * i + b] = -J[2 * i + b]
            for k in range(3):
                M[2 * i + b] += ASAt[3 * i + k] * JW[2 * k + b]
    for a in range(2):
        for b in range(2):
            dRdz[2 * a + b] = 0.0
            for i in range(3):
                dRdz[2 * a + b] += H[4 * i + 2 * a + b] * Px[i] + J[2 * i + a] * M[2 * i + b]


cdef struct ContactProblem:
    PyObject* shape    # ConvexShape (borrowed)
    PyObject* ground   # ChartSurface (borrowed)
    const double* A    # (3, 3) the pose
    const double* a    # (3,)
    int chart          # the chart of the iterate (the residual may change it)
    double J[6]        # left by the residual for the Jacobian
    double H[12]
    double W[4]
    double Sp[9]
    double Px[3]


cdef int contact_residual(void* problem, double* z, double* R, double* R_scale) noexcept nogil:
    # R = J_H^T (P - x) at the re-charted z; R_scale = |J_H|^T (|P| + |x|)
    cdef ContactProblem* P = <ContactProblem*>problem
    cdef double x[3]
    cdef double n[3]
    cdef double d[3]
    cdef double s[3]
    cdef double n_M[3]
    cdef double Pa[3]
    cdef int i, k, st
    (<ChartSurface>P.ground).rechart_point(&P.chart, &z[0], &z[1])
    ground_geometry(<ChartSurface>P.ground, P.chart, z, x, P.J, P.H, n, P.W)
    if (<ChartSurface>P.ground).raised:
        return CALLBACK_RAISED
    matTvec3(P.A, n, d)
    for i in range(3):
        d[i] = -d[i]
    st = (<ConvexShape>P.shape).support(d, s, P.Sp, n_M)
    if st != OK:
        return st
    matvec3(P.A, s, Pa)
    for i in range(3):
        Pa[i] += P.a[i]
        P.Px[i] = Pa[i] - x[i]
    for k in range(2):
        R[k] = P.J[k] * P.Px[0] + P.J[2 + k] * P.Px[1] + P.J[4 + k] * P.Px[2]
        R_scale[k] = (fabs(P.J[k]) * (fabs(Pa[0]) + fabs(x[0]))
                      + fabs(P.J[2 + k]) * (fabs(Pa[1]) + fabs(x[1]))
                      + fabs(P.J[4 + k]) * (fabs(Pa[2]) + fabs(x[2])))
    if not (isfinite(R[0]) and isfinite(R[1])):
        return CONTACT_FAILED  # the ground is not defined there
    return OK


cdef int contact_residual_jacobian(void* problem, const double* z, double* dRdz) noexcept nogil:
    cdef ContactProblem* P = <ContactProblem*>problem
    cdef double det, mx = 0.0
    cdef int k
    contact_jacobian(P.A, P.Sp, P.J, P.H, P.W, P.Px, dRdz)
    det = dRdz[0] * dRdz[3] - dRdz[1] * dRdz[2]
    for k in range(4):
        if fabs(dRdz[k]) > mx:
            mx = fabs(dRdz[k])
    if not isfinite(det):
        return CONTACT_FAILED
    if fabs(det) <= 1e-14 * mx * mx:
        return SINGULAR_CONTACT
    return OK


cdef int contact(ConvexShape shape, ChartSurface ground, const double* A, const double* a,
                 int chart, const double* z0, double tol, int max_iter,
                 Contact* c) noexcept nogil:
    # the contact pair of the pose (A, a) from the guess (chart, z0): see the twin's contact
    cdef ContactProblem P
    cdef double z[2]
    cdef double floor[2]
    cdef NewtonRule rule
    cdef int st
    P.shape = <PyObject*>shape
    P.ground = <PyObject*>ground
    P.A = A
    P.a = a
    P.chart = chart
    z[0] = z0[0]
    z[1] = z0[1]
    floor[0] = 1.0
    floor[1] = 1.0
    rule.correction_tol = tol
    rule.residual_tol = 0.0
    rule.max_iter = max_iter
    st = newton_solve(contact_residual, contact_residual_jacobian, &P, 2, z, floor, rule)
    if st == NOT_CONVERGED or st == NOT_FINITE:
        return CONTACT_FAILED
    if st == SINGULAR_JACOBIAN:
        return SINGULAR_CONTACT
    if st != OK:
        return st
    ground.rechart_point(&P.chart, &z[0], &z[1])
    return contact_final(shape, ground, A, a, P.chart, z, c)


cdef int contact_final(ConvexShape shape, ChartSurface ground, const double* A, const double* a,
                       int ch, const double* z, Contact* c) noexcept nogil:
    # geometry at the converged coordinates, with the sensitivities (see the twin)
    cdef double x[3]
    cdef double J[6]
    cdef double H[12]
    cdef double n[3]
    cdef double W[4]
    cdef double d[3]
    cdef double An[3]
    cdef double As[3]
    cdef double Px[3]
    cdef double dRdz[4]
    cdef double inv[4]
    cdef double K[9]
    cdef double Q[9]
    cdef double SpK[9]
    cdef double AQ[9]
    cdef double JtAQ[6]
    cdef double dz_dd[6]
    cdef double dz_da[6]
    cdef double JWdz[9]
    cdef double AtJWdz[9]
    cdef double AtJW[6]
    cdef double JW[6]
    cdef double At[9]
    cdef double tmp[9]
    cdef double det
    cdef int i, j, k, b
    ground_geometry(ground, ch, z, x, J, H, n, W)
    if ground.raised:
        return CALLBACK_RAISED
    matTvec3(A, n, An)
    for i in range(3):
        d[i] = -An[i]
    cdef int st = shape.support(d, c.s, c.Sp, c.n_M)
    if st != OK:
        return st
    matvec3(A, c.s, As)
    for i in range(3):
        Px[i] = a[i] + As[i] - x[i]
    contact_jacobian(A, c.Sp, J, H, W, Px, dRdz)
    det = dRdz[0] * dRdz[3] - dRdz[1] * dRdz[2]
    inv[0] = dRdz[3] / det
    inv[1] = -dRdz[1] / det
    inv[2] = -dRdz[2] / det
    inv[3] = dRdz[0] / det
    # Q = -hat(s) - S' hat(A^T n)
    hat3(An, K)
    matmul3(c.Sp, K, SpK)
    hat3(c.s, Q)
    for i in range(9):
        Q[i] = -Q[i] - SpK[i]
    matmul3(A, Q, AQ)
    for k in range(2):
        for j in range(3):
            JtAQ[3 * k + j] = J[k] * AQ[j] + J[2 + k] * AQ[3 + j] + J[4 + k] * AQ[6 + j]
    for k in range(2):
        for j in range(3):
            # dz/ddelta = -(dR/dz)^-1 J^T A Q ; dz/da = -(dR/dz)^-1 J^T
            dz_dd[3 * k + j] = -(inv[2 * k] * JtAQ[j] + inv[2 * k + 1] * JtAQ[3 + j])
            dz_da[3 * k + j] = -(inv[2 * k] * J[2 * j] + inv[2 * k + 1] * J[2 * j + 1])
    # A^T J W (3 x 2)
    transpose3(A, At)
    for i in range(3):
        for b in range(2):
            JW[2 * i + b] = J[2 * i] * W[b] + J[2 * i + 1] * W[2 + b]
    for i in range(3):
        for b in range(2):
            AtJW[2 * i + b] = (At[3 * i] * JW[b] + At[3 * i + 1] * JW[2 + b]
                               + At[3 * i + 2] * JW[4 + b])
    # ds/ddelta = S' (-hat(A^T n) + A^T J W dz/ddelta); ds/da = S' A^T J W dz/da
    for i in range(3):
        for j in range(3):
            tmp[3 * i + j] = -K[3 * i + j] + AtJW[2 * i] * dz_dd[j] + AtJW[2 * i + 1] * dz_dd[3 + j]
    matmul3(c.Sp, tmp, c.ds_ddelta)
    for i in range(3):
        for j in range(3):
            tmp[3 * i + j] = AtJW[2 * i] * dz_da[j] + AtJW[2 * i + 1] * dz_da[3 + j]
    matmul3(c.Sp, tmp, c.ds_da)
    c.chart = ch
    c.z[0] = z[0]
    c.z[1] = z[1]
    for i in range(3):
        c.x[i] = x[i]
        c.n[i] = n[i]
    c.gap = dot3(n, Px)
    return OK


# -- the step -----------------------------------------------------------------------------------

cdef struct Placement:
    # the ground's rigid motion at one time: x_space = Q x_ground + d; w its angular velocity,
    # v = dd/dt (see the twin's GroundMotion)
    double Q[9]
    double d[3]
    double w[3]
    double v[3]


cdef class GroundMotion:
    """A rigid motion of the ground (base: at rest); see the twin."""

    cdef readonly bint moving

    def __init__(self):
        self.moving = False

    cdef void at(self, double t, Placement* M) noexcept nogil:
        cdef int i
        for i in range(9):
            M.Q[i] = 1.0 if i % 4 == 0 else 0.0
        for i in range(3):
            M.d[i] = 0.0
            M.w[i] = 0.0
            M.v[i] = 0.0


cdef class SteadyRotation(GroundMotion):
    """Rotation at ``rate`` about the unit ``axis`` through ``center`` (see the twin)."""

    cdef double rate
    cdef double axis[3]
    cdef double center[3]

    def __init__(self, double rate, axis, center):
        cdef int i
        self.moving = True
        self.rate = rate
        for i in range(3):
            self.axis[i] = axis[i]
            self.center[i] = center[i]

    cdef void at(self, double t, Placement* M) noexcept nogil:
        cdef double tw[3]
        cdef double Qc[3]
        cdef int i
        for i in range(3):
            M.w[i] = self.rate * self.axis[i]
            tw[i] = t * M.w[i]
        exp3(tw, M.Q)
        matvec3(M.Q, self.center, Qc)
        cross3(M.w, Qc, M.v)
        for i in range(3):
            M.d[i] = self.center[i] - Qc[i]
            M.v[i] = -M.v[i]


cdef class UniformTranslation(GroundMotion):
    """Translation at a constant ``velocity`` (see the twin)."""

    cdef double velocity[3]

    def __init__(self, velocity):
        cdef int i
        self.moving = True
        for i in range(3):
            self.velocity[i] = velocity[i]

    cdef void at(self, double t, Placement* M) noexcept nogil:
        cdef int i
        for i in range(9):
            M.Q[i] = 1.0 if i % 4 == 0 else 0.0
        for i in range(3):
            M.d[i] = t * self.velocity[i]
            M.w[i] = 0.0
            M.v[i] = self.velocity[i]


cdef inline void ground_in_space(const Placement* M, double* x, double* n) noexcept nogil:
    # the ground's point x and normal n from its own frame to space, in place: Q x + d, Q n
    cdef double r[3]
    cdef int i
    matvec3(M.Q, x, r)
    for i in range(3):
        x[i] = r[i] + M.d[i]
    matvec3(M.Q, n, r)
    for i in range(3):
        n[i] = r[i]


cdef inline void ground_velocity(const Placement* M, const double* x, double* V) noexcept nogil:
    # V = w x (x - d) + v
    cdef double r[3]
    cdef int i
    for i in range(3):
        r[i] = x[i] - M.d[i]
    cross3(M.w, r, V)
    for i in range(3):
        V[i] += M.v[i]


cdef int contact_at(ConvexShape shape, ChartSurface ground, const Placement* M,
                    const double* A, const double* a, int chart, const double* z0, double tol,
                    int max_iter, Contact* c) noexcept nogil:
    # contact() on a ground placed by *M (NULL: at rest), as the twin's contact_at
    cdef double Ag[9]
    cdef double ag[3]
    cdef double r[3]
    cdef double B[9]
    cdef int i, j, k, st
    if M == NULL:
        return contact(shape, ground, A, a, chart, z0, tol, max_iter, c)
    for i in range(3):
        for j in range(3):
            Ag[3 * i + j] = M.Q[i] * A[j] + M.Q[3 + i] * A[3 + j] + M.Q[6 + i] * A[6 + j]
        r[i] = a[i] - M.d[i]
    matTvec3(M.Q, r, ag)
    st = contact(shape, ground, Ag, ag, chart, z0, tol, max_iter, c)
    if st == OK:
        ground_in_space(M, c.x, c.n)
        for i in range(3):  # ds/da <- ds/da Q^T
            for j in range(3):
                B[3 * i + j] = 0.0
                for k in range(3):
                    B[3 * i + j] += c.ds_da[3 * i + k] * M.Q[3 * j + k]
        for i in range(9):
            c.ds_da[i] = B[i]
    return st


cdef struct State:
    # the state of rolling_run (see the twin's rolling_run), one step's working copy
    double A[9]
    double a[3]
    double Pi[3]
    double p[3]
    double s[3]
    double n[3]        # ground normal at the contact
    double F[3]        # warm start of the step's force
    double xi[3]       # warm start of the step's turn
    int chart
    double z[2]
    double t           # time
    double work        # work of the applied forces so far
    double normal_force
    double guess[6]    # the extrapolated start of the step's (xi, F), when has_guess
    bint has_guess
    # contact modes only (modes_run; the rolling step neither reads nor writes them)
    double slip[3]     # the slip direction where the slip is too small to give it
    double slip_ref[3]  # a sliding step's direction at its start (its guard's)
    bint slip_armed    # ... and whether the slip had a direction of its own there
    bint slip_kept     # the last sliding step found no slip along its start's direction
    double face_v[3]   # a disk lying flat: its velocities at the start of the step (its
    double face_w      # guard's)
    double graze       # the depth a flight's guard is lowered by after a graze (twin: grazes)
    double side_ref[3]  # a cylinder sliding on its side: its line's slip at the step's start


cdef struct StepProblem:
    PyObject* shape    # ConvexShape (borrowed)
    PyObject* ground   # ChartSurface (borrowed)
    const double* I    # (3, 3) inertia
    double mass
    double h
    int map_code
    double newton_tol
    int max_newton
    const State* st    # the state at the start of the step
    double weight[3]
    double kick_row[9]  # h/2 hat(s_k) A_k^T (+ rolling resistance): Pi_half = Pi + kick_row F
    double kick_const[3]  # h/2 tau_k of the applied forces
    double p_start[3]   # p + h/2 f_k
    const Placement* Mm  # the ground's placement at mid-step and at the end (NULL: at rest)
    const Placement* M1
    double c2           # h^2 / (2 m)
    int chart1          # the contacts' last solutions (their warm starts)
    double z1[2]
    int chart_m
    double zm[2]
    double A1[9]        # left by the residual for the Jacobian
    double Am[9]
    double phi[3]
    double dphi[9]
    double T[6]
    double x_last[6]    # the x of the last residual (its c1 may be the step's end contact)
    Contact c1
    Contact cm


cdef int step_residual(void* problem, double* x, double* E, double* E_scale) noexcept nogil:
    # E = (Pi^-(xi) - Pi - kick, gap(A_1, a_1), T^T N) at x = (xi, F); see the twin
    cdef StepProblem* P = <StepProblem*>problem
    cdef const State* S = P.st
    cdef double* xi = x
    cdef double* F = &x[3]
    cdef double Q[9]
    cdef double a1[3]
    cdef double am[3]
    cdef double half[3]
    cdef double M[3]
    cdef double pim[3]
    cdef double kick[3]
    cdef double xs[3]
    cdef double AmXs[3]
    cdef double N[3]
    cdef double scale
    cdef int i, k, st
    retract(xi, P.map_code, Q)
    matmul3(S.A, Q, P.A1)
    for i in range(3):
        a1[i] = S.a[i] + (P.h / P.mass) * (P.p_start[i] + 0.5 * P.h * (F[i] - P.weight[i]))
    st = contact_at(<ConvexShape>P.shape, <ChartSurface>P.ground, P.M1, P.A1, a1, P.chart1,
                    P.z1, P.newton_tol, P.max_newton, &P.c1)
    if st:
        return st
    rotation_vector(xi, P.map_code, P.phi, P.dphi)
    for i in range(3):
        half[i] = 0.5 * P.phi[i]
    exp3(half, Q)  # the geodesic midpoint of A_k and A_{k+1}
    matmul3(S.A, Q, P.Am)
    for i in range(3):
        am[i] = 0.5 * (S.a[i] + a1[i])
    st = contact_at(<ConvexShape>P.shape, <ChartSurface>P.ground, P.Mm, P.Am, am, P.chart_m,
                    P.zm, P.newton_tol, P.max_newton, &P.cm)
    if st:
        return st
    P.chart1 = P.c1.chart
    P.z1[0] = P.c1.z[0]
    P.z1[1] = P.c1.z[1]
    P.chart_m = P.cm.chart
    P.zm[0] = P.cm.z[0]
    P.zm[1] = P.cm.z[1]
    momentum_minus(xi, P.I, P.h, P.map_code, M, pim)
    tangent_basis(P.cm.n, P.T)
    matvec3(P.kick_row, F, kick)
    for i in range(3):
        kick[i] += P.kick_const[i]
    cross3(P.phi, P.cm.s, xs)
    matvec3(P.Am, xs, AmXs)
    for i in range(3):
        N[i] = (a1[i] - S.a[i]) + AmXs[i]
        E[i] = pim[i] - S.Pi[i] - kick[i]
    if P.Mm != NULL:  # the ground's material point moves: the body's must move with it
        ground_velocity(P.Mm, P.cm.x, xs)
        for i in range(3):
            N[i] = N[i] - P.h * xs[i]
    E[3] = P.c1.gap
    for k in range(2):
        E[4 + k] = P.T[k] * N[0] + P.T[2 + k] * N[1] + P.T[4 + k] * N[2]
    scale = max_abs(pim, 3) + max_abs(S.Pi, 3) + max_abs(kick, 3)
    for i in range(3):
        E_scale[i] = scale
    E_scale[3] = max_abs(P.c1.x, 3) + max_abs(P.c1.s, 3)
    E_scale[4] = max_abs(S.a, 3) + max_abs(P.cm.s, 3)
    E_scale[5] = E_scale[4]
    for i in range(6):
        P.x_last[i] = x[i]
    return OK


cdef int step_jacobian(void* problem, const double* x, double* jac) noexcept nogil:
    # the 6 x 6 Jacobian of the twin's rolling_step (row-major)
    cdef StepProblem* P = <StepProblem*>problem
    cdef const double* xi = x
    cdef double D[9]
    cdef double Jr[9]
    cdef double Jm[9]
    cdef double v3[3]
    cdef double row[3]
    cdef double xs[3]
    cdef double half[3]
    cdef double B1[9]
    cdef double B2[9]
    cdef double B3[9]
    cdef double Kk[9]
    cdef double dNdxi[9]
    cdef double dNdF[9]
    cdef int i, j, k
    for i in range(36):
        jac[i] = 0.0
    momentum_minus_jacobian(xi, P.I, P.h, P.map_code, D)
    for i in range(3):
        for j in range(3):
            jac[6 * i + j] = D[3 * i + j]
            jac[6 * i + 3 + j] = -P.kick_row[3 * i + j]
    jac_right(xi, P.map_code, Jr)
    matTvec3(P.A1, P.c1.n, v3)
    cross3(P.c1.s, v3, row)
    for j in range(3):
        jac[18 + j] = row[0] * Jr[j] + row[1] * Jr[3 + j] + row[2] * Jr[6 + j]
        jac[21 + j] = P.c2 * P.c1.n[j]
    for i in range(3):
        half[i] = 0.5 * P.phi[i]
    jac_right(half, 0, B1)
    matmul3(B1, P.dphi, Jm)
    for i in range(9):
        Jm[i] *= 0.5
    # dN/dxi = Am (-hat(phi x s_m) Jm - hat(s_m) dphi + hat(phi) ds_m/ddelta Jm)
    cross3(P.phi, P.cm.s, xs)
    hat3(xs, B1)
    matmul3(B1, Jm, B2)
    hat3(P.cm.s, B1)
    matmul3(B1, P.dphi, B3)
    for i in range(9):
        B2[i] = -B2[i] - B3[i]
    hat3(P.phi, B1)
    matmul3(B1, P.cm.ds_ddelta, B3)
    matmul3(B3, Jm, Kk)
    for i in range(9):
        B2[i] += Kk[i]
    matmul3(P.Am, B2, dNdxi)
    # dN/dF = c2 I + c2/2 Am hat(phi) ds_m/da
    matmul3(B1, P.cm.ds_da, B3)
    matmul3(P.Am, B3, dNdF)
    for i in range(9):
        dNdF[i] *= 0.5 * P.c2
    for i in range(3):
        dNdF[4 * i] += P.c2
    for k in range(2):
        for j in range(3):
            jac[6 * (4 + k) + j] = (P.T[k] * dNdxi[j] + P.T[2 + k] * dNdxi[3 + j]
                                    + P.T[4 + k] * dNdxi[6 + j])
            jac[6 * (4 + k) + 3 + j] = (P.T[k] * dNdF[j] + P.T[2 + k] * dNdF[3 + j]
                                        + P.T[4 + k] * dNdF[6 + j])
    return OK


cdef inline void tangent_projector(const double* A, const double* n, double* Pt) noexcept nogil:
    # P_t = I - n_b n_b^T, n_b = A^T n (see the twin)
    cdef double nb[3]
    cdef int r, c
    matTvec3(A, n, nb)
    for r in range(3):
        for c in range(3):
            Pt[3 * r + c] = (1.0 if r == c else 0.0) - nb[r] * nb[c]


cdef double total_wrench(ForceSet forces, double t, const double* A, const double* a,
                         const double* n, const double* v, const double* omega, double* f,
                         double* tau, double* rolling_row) noexcept nogil:
    # the force elements' force (space) and torque (body), rolling resistance's torque per
    # newton of normal force; returns the non-potential part's power (twin: total_wrench)
    cdef double f_pot[3]
    cdef double tau_pot[3]
    cdef double f_app[3]
    cdef double tau_app[3]
    cdef double D[9]
    cdef double Pt[9]
    cdef double Dw[3]
    cdef double f_np[3]
    cdef double tau_np[3]
    cdef double drag
    cdef int i
    drag = forces.wrench(t, A, a, n, f_pot, tau_pot, f_app, tau_app, D)
    matvec3(D, omega, Dw)
    for i in range(3):
        f_np[i] = f_app[i] - drag * v[i]
        tau_np[i] = tau_app[i] - Dw[i]
    tangent_projector(A, n, Pt)
    matvec3(Pt, omega, rolling_row)
    for i in range(3):
        rolling_row[i] *= -forces.rolling
        f[i] = f_pot[i] + f_np[i]
        tau[i] = tau_pot[i] + tau_np[i]
    return dot3(f_np, v) + dot3(tau_np, omega)


cdef int start_wrench(ForceSet forces, double h, double mass, const double* Iinv, State* S,
                      double* p_start, double* kick_const, double* rolling_row,
                      double* power) noexcept nogil:
    # the twin's start_wrench: power[0] fixed, power[1] per newton of n_k . F
    cdef double v[3]
    cdef double omega[3]
    cdef double f[3]
    cdef double tau[3]
    cdef int i
    for i in range(3):
        v[i] = S.p[i] / mass
    matvec3(Iinv, S.Pi, omega)
    power[0] = total_wrench(forces, S.t, S.A, S.a, S.n, v, omega, f, tau, rolling_row)
    for i in range(3):
        p_start[i] = S.p[i] + 0.5 * h * f[i]
        kick_const[i] = 0.5 * h * tau[i]
    power[1] = dot3(rolling_row, omega)
    return OK


cdef bint damped_kick(double h, const double* D, const double* Iinv, double* Binv,
                      double* G) noexcept nogil:
    # B^-1 and G = I^-1 B^-1 with B = I + h/2 D I^-1, the matrices of a kick implicit in the
    # angular damping D (twin: damped_kick); False where B is singular
    cdef double B[9]
    cdef int i
    matmul3(D, Iinv, B)
    for i in range(9):
        B[i] *= 0.5 * h
    for i in range(3):
        B[4 * i] += 1.0
    if not invert3(B, Binv):
        return False
    matmul3(Iinv, Binv, G)
    return True


DEF SWEEP_SETTLED = 0
DEF SWEEP_AGAIN = 1
DEF SWEEP_DIVERGED = -1


cdef inline int normal_sweep(double new, double normal, double* last_change,
                             double weight_scale) noexcept nogil:
    # one sweep's verdict on a kick's own normal force, last_change updated (twin:
    # normal_sweep)
    cdef double change = fabs(new - normal)
    cdef double scale = max(fabs(new), weight_scale)
    cdef int verdict = SWEEP_AGAIN
    if change <= NORMAL_TOL * scale:
        verdict = SWEEP_SETTLED
    elif change >= last_change[0]:  # no longer contracting: round-off, or not a contraction
        verdict = SWEEP_SETTLED if change <= NORMAL_STALL * scale else SWEEP_DIVERGED
    last_change[0] = change
    return verdict


cdef bint invert3(const double* M, double* out) noexcept nogil:
    # out = M^-1 (3 x 3), column by column; False where M is singular
    cdef double work[9]
    cdef double y[3]
    cdef int i, j
    for j in range(3):
        for i in range(3):
            y[i] = 1.0 if i == j else 0.0
        for i in range(9):
            work[i] = M[i]
        if not solve_small(3, work, y):
            return False
        for i in range(3):
            out[3 * i + j] = y[i]
    return True


cdef int end_kick(ForceSet forces, double h, double mass, const double* Iinv,
                  const double* weight, double t1, const double* A1, const double* a1,
                  Contact* c1, const double* F, const double* p_half, const double* pi_end,
                  const double* target, double* Pi1, double* p1, double* u,
                  double* power) noexcept nogil:
    # the twin's end_kick: the second half kick with applied forces
    cdef double f_pot[3]
    cdef double tau_pot[3]
    cdef double f_app[3]
    cdef double tau_app[3]
    cdef double f_c[3]
    cdef double tau_c[3]
    cdef double D[9]
    cdef double Pt[9]
    cdef double Binv[9]
    cdef double G[9]
    cdef double S[9]
    cdef double SG[9]
    cdef double SGS[9]
    cdef double K[9]
    cdef double w[3]
    cdef double v3[3]
    cdef double y[3]
    cdef double rhs[3]
    cdef double Au[3]
    cdef double v1[3]
    cdef double omega1[3]
    cdef double Dw[3]
    cdef double D_rest[9]
    cdef double drag, alpha, rollN, normal, new, weight_norm, last_change
    cdef int verdict
    cdef bint settled
    cdef int i, sweep
    drag = forces.wrench(t1, A1, a1, c1.n, f_pot, tau_pot, f_app, tau_app, D_rest)
    tangent_projector(A1, c1.n, Pt)
    for i in range(3):
        f_c[i] = f_pot[i] + f_app[i]
        tau_c[i] = tau_pot[i] + tau_app[i]
    alpha = 1.0 / (1.0 + 0.5 * h * drag / mass)
    hat3(c1.s, S)
    weight_norm = sqrt(dot3(weight, weight))
    normal = dot3(c1.n, F)  # rolling resistance's normal force: first guess, the first kick's
    settled = False
    last_change = INFINITY
    for sweep in range(ROLLING_SWEEPS):
        rollN = forces.rolling * normal
        for i in range(9):
            D[i] = D_rest[i] + rollN * Pt[i]
        if not damped_kick(h, D, Iinv, Binv, G):
            return SINGULAR_JACOBIAN
        matmul3(S, G, SG)
        matmul3(SG, S, SGS)
        for i in range(9):
            K[i] = -0.5 * h * SGS[i]
        for i in range(3):
            K[4 * i] += 0.5 * h * (alpha / mass)
        for i in range(3):
            y[i] = p_half[i] + 0.5 * h * (f_c[i] - weight[i])
            w[i] = pi_end[i] + 0.5 * h * tau_c[i]
        matTvec3(A1, y, v3)
        matvec3(SG, w, y)
        for i in range(3):
            rhs[i] = -((alpha / mass) * v3[i] - y[i]) + target[i]
        if not solve_small(3, K, rhs):
            return SINGULAR_JACOBIAN
        for i in range(3):
            u[i] = rhs[i]
        if forces.rolling == 0.0:
            settled = True
            break
        # the kick's own normal force n . A u, to round-off (the twin's end_kick)
        matvec3(A1, u, Au)
        new = dot3(c1.n, Au)
        if not isfinite(new):
            return NOT_FINITE
        verdict = normal_sweep(new, normal, &last_change, weight_norm)
        if verdict == SWEEP_SETTLED:
            settled = True
            break
        if verdict == SWEEP_DIVERGED:
            return NOT_CONVERGED
        normal = new
    if not settled:
        return NOT_CONVERGED
    cross3(c1.s, u, y)
    for i in range(3):
        w[i] = pi_end[i] + 0.5 * h * (y[i] + tau_c[i])
    matvec3(Binv, w, Pi1)
    matvec3(A1, u, Au)
    for i in range(3):
        p1[i] = alpha * (p_half[i] + 0.5 * h * (Au[i] - weight[i] + f_c[i]))
        v1[i] = p1[i] / mass
    matvec3(Iinv, Pi1, omega1)
    matvec3(D, omega1, Dw)
    power[0] = 0.0
    for i in range(3):
        power[0] += (f_app[i] - drag * v1[i]) * v1[i]
    for i in range(3):
        power[0] += (tau_app[i] - Dw[i]) * omega1[i]
    return OK


cdef int rolling_step(ConvexShape shape, ChartSurface ground, GroundMotion motion,
                      ForceSet forces, double mass, const double* I,
                      const double* Iinv, double gravity, const double* up, double h,
                      int map_code, double newton_tol, int max_newton, State* S,
                      Contact* c1, int options) noexcept nogil:
    # one step from *S; on success *S is the state at its end and *c1 its contact (see the
    # twin's rolling_step); on failure *S is left partly changed (the caller's working copy)
    cdef StepProblem P
    cdef double x[6]
    cdef double floor[6]
    cdef double K[9]
    cdef double At[9]
    cdef double Q[9]
    cdef double A1[9]
    cdef double a1[3]
    cdef double p_half[3]
    cdef double pi_end[3]
    cdef double rhs[3]
    cdef double u[3]
    cdef double v3[3]
    cdef double row[3]
    cdef double w[3]
    cdef double xs[3]
    cdef double su[3]
    cdef double Au[3]
    cdef double B1[9]
    cdef double B2[9]
    cdef double IS[9]
    cdef double Kk[9]
    cdef double f_xi, f_F
    cdef double rolling_row[3]
    cdef double power_start[2]
    cdef double power_end = 0.0
    cdef double Pi1[3]
    cdef double p1[3]
    cdef double target[3]
    cdef double V0[3]
    cdef double V1[3]
    cdef double xk[3]
    cdef Placement M0, Mm, M1
    cdef NewtonRule rule
    cdef double x_warm[6]
    cdef int i, j, st, attempt, status = OK
    cdef bint reuse
    # set only when the ground moves, or when there are forces, and read only then; zeroed so
    # that the compiler, inlining this step into rolling_loop, sees them initialised
    for i in range(3):
        V1[i] = 0.0
    power_start[0] = 0.0
    power_start[1] = 0.0
    P.shape = <PyObject*>shape
    P.ground = <PyObject*>ground
    P.I = I
    P.mass = mass
    P.h = h
    P.map_code = map_code
    P.newton_tol = newton_tol
    P.max_newton = max_newton
    P.st = S
    P.c2 = h * h / (2.0 * mass)
    P.Mm = NULL
    P.M1 = NULL
    if motion.moving:
        motion.at(S.t, &M0)
        motion.at(S.t + 0.5 * h, &Mm)
        motion.at(S.t + h, &M1)
        P.Mm = &Mm
        P.M1 = &M1
    P.chart1 = S.chart
    P.chart_m = S.chart
    P.z1[0] = S.z[0]
    P.z1[1] = S.z[1]
    P.zm[0] = S.z[0]
    P.zm[1] = S.z[1]
    for i in range(3):
        P.weight[i] = mass * gravity * up[i]
    hat3(S.s, K)
    transpose3(S.A, At)
    matmul3(K, At, P.kick_row)
    for i in range(9):
        P.kick_row[i] *= 0.5 * h
    for i in range(3):
        P.p_start[i] = S.p[i]
        P.kick_const[i] = 0.0
    if not forces.empty:
        start_wrench(forces, h, mass, Iinv, S, P.p_start, P.kick_const, rolling_row, power_start)
        for i in range(3):
            for j in range(3):
                P.kick_row[3 * i + j] += 0.5 * h * rolling_row[i] * S.n[j]
    f_xi = norm3(S.xi) + 1e-15 * fabs(h) / newton_tol
    f_F = norm3(S.F) + mass * gravity
    for i in range(3):
        x[i] = S.xi[i]
        x[3 + i] = S.F[i]
        floor[i] = f_xi
        floor[3 + i] = f_F
    rule.correction_tol = newton_tol
    rule.residual_tol = ROUNDOFF
    rule.max_iter = max_newton
    for i in range(6):
        x_warm[i] = x[i]
    # the attempts of the twin's "Finding the step": 0 the extrapolated start, 1 the warm
    # start, 2 the warm start under the globalised rule; each from the same contact warm starts
    for attempt in range(3):
        if attempt == 0 and not S.has_guess:
            continue
        if attempt == 2 and not (options & GLOBALIZE):
            break
        for i in range(6):
            x[i] = S.guess[i] if attempt == 0 else x_warm[i]
        P.chart1 = S.chart
        P.chart_m = S.chart
        P.z1[0] = S.z[0]
        P.z1[1] = S.z[1]
        P.zm[0] = S.z[0]
        P.zm[1] = S.z[1]
        if attempt == 2:
            st = newton_solve_damped(step_residual, step_jacobian, &P, 6, x, floor, rule)
        else:
            st = newton_solve(step_residual, step_jacobian, &P, 6, x, floor, rule)
        if st == OK and map_code == 0 and norm3(x) >= M_PI:
            st = FAR_BRANCH
        if st == OK:
            break
        if attempt == 1:  # a failure reports the plain solve's status
            status = st
    if st != OK:
        return status

    # the converged pose, its contact, and the second kick
    retract(x, map_code, Q)
    matmul3(S.A, Q, A1)
    reorthonormalize(A1)
    for i in range(3):
        p_half[i] = P.p_start[i] + 0.5 * h * (x[3 + i] - P.weight[i])
        a1[i] = S.a[i] + (h / mass) * p_half[i]
    reuse = (options & EXTRAPOLATE) != 0  # the last residual's end contact (see the twin)
    for i in range(6):
        if x[i] != P.x_last[i]:
            reuse = False
    if reuse:
        c1[0] = P.c1
    else:
        st = contact_at(shape, ground, P.M1, A1, a1, P.chart1, P.z1, newton_tol, max_newton,
                        c1)
        if st:
            return st
    momentum_plus(x, I, h, map_code, pi_end)
    for i in range(3):
        target[i] = 0.0
    if motion.moving:
        ground_velocity(&M1, c1.x, V1)
        matTvec3(A1, V1, target)
    if forces.empty:
        # K = h/2 (I/m - hat(s) I^-1 hat(s)) ; rhs = -(A^T p_half/m - h/2 g A^T up + (I^-1 Pi) x s)
        hat3(c1.s, B1)
        matmul3(B1, Iinv, B2)
        matmul3(B2, B1, IS)
        for i in range(9):
            Kk[i] = -0.5 * h * IS[i]
        for i in range(3):
            Kk[4 * i] += 0.5 * h / mass
        matTvec3(A1, p_half, v3)
        matTvec3(A1, up, row)
        matvec3(Iinv, pi_end, w)
        cross3(w, c1.s, xs)
        for i in range(3):
            rhs[i] = -(v3[i] / mass - 0.5 * h * gravity * row[i] + xs[i]) + target[i]
        if not solve_small(3, Kk, rhs):
            return SINGULAR_JACOBIAN
        for i in range(3):
            u[i] = rhs[i]
        cross3(c1.s, u, su)
        matvec3(A1, u, Au)
        for i in range(3):
            Pi1[i] = pi_end[i] + 0.5 * h * su[i]
            p1[i] = p_half[i] + 0.5 * h * (Au[i] - P.weight[i])
    else:
        st = end_kick(forces, h, mass, Iinv, P.weight, S.t + h, A1, a1, c1, &x[3], p_half,
                      pi_end, target, Pi1, p1, u, &power_end)
        if st:
            return st
        matvec3(A1, u, Au)
        S.work += 0.5 * h * (power_start[0] + power_start[1] * dot3(S.n, &x[3]) + power_end)
    if motion.moving:  # the ground's work: the contact force's power on its material point
        matvec3(S.A, S.s, xk)
        for i in range(3):
            xk[i] += S.a[i]
        ground_velocity(&M0, xk, V0)
        S.work += 0.5 * h * (dot3(&x[3], V0) + dot3(Au, V1))
    for i in range(9):
        S.A[i] = A1[i]
    for i in range(3):
        S.a[i] = a1[i]
        S.Pi[i] = Pi1[i]
        S.p[i] = p1[i]
        S.s[i] = c1.s[i]
        S.n[i] = c1.n[i]
        S.xi[i] = x[i]
        S.F[i] = x[3 + i]
    S.chart = c1.chart
    S.z[0] = c1.z[0]
    S.z[1] = c1.z[1]
    S.t += h
    S.normal_force = 0.5 * (dot3(c1.n, &x[3]) + dot3(c1.n, Au))
    return OK


cdef inline void write_frame(double* out, const State* S, Contact* c) noexcept nogil:
    cdef int i
    for i in range(9):
        out[i] = S.A[i]
    for i in range(3):
        out[9 + i] = S.a[i]
        out[12 + i] = S.Pi[i]
        out[15 + i] = S.p[i]
        out[18 + i] = c.s[i]
        out[21 + i] = c.x[i]
        out[24 + i] = c.n[i]
        out[27 + i] = c.n_M[i]
    out[30] = c.gap
    out[31] = S.normal_force
    out[32] = S.work
    out[33] = S.t


cdef int rolling_loop(ConvexShape shape, ChartSurface ground, GroundMotion motion,
                      ForceSet forces, double mass, const double* inertia,
                      const double* inertia_inv, double gravity, const double* up, double h,
                      const double* substeps, Py_ssize_t n_sub, Py_ssize_t n_steps,
                      Py_ssize_t save_every, int map_code, double newton_tol, int max_newton,
                      int options, double* A, double* a, double* Pi, double* p, double* s,
                      double* n, double* F, double* xi, Py_ssize_t* chart, double* z,
                      double* clock, double* out, Py_ssize_t* info, double* history,
                      Py_ssize_t* filled) noexcept nogil:
    # The time loop of one run (see rolling_run): the state arrays as pointers (A (3, 3), out
    # (n_steps // save_every, FRAME_SIZE) and history (n_sub, 6 HISTORY) row-major; history and
    # filled may be NULL without EXTRAPOLATE). Every buffer it writes besides these is its own
    # (on its stack), so concurrent calls on different runs share nothing mutable: the shape,
    # ground, motion and forces are only read (a Python ground's `raised` flag aside, which is
    # why rolling_ensemble refuses such grounds).
    cdef Contact c
    cdef State committed, work
    cdef Py_ssize_t k, j
    cdef int status = 0, st = OK, i
    cdef double h_last = h * substeps[n_sub - 1], hj
    cdef bint extrapolate = (options & EXTRAPOLATE) != 0
    cdef double solved[6 * MAX_SUBSTEPS]
    # the history on the stack, written back at the end: a run of rolling_ensemble writes no
    # memory it shares a cache line with another run's in its steps
    cdef double hist[6 * HISTORY * MAX_SUBSTEPS]
    cdef Py_ssize_t fill = 0
    cdef double* past
    info[0] = OK
    if extrapolate:
        fill = filled[0]
        for i in range(6 * HISTORY * n_sub):
            hist[i] = history[i]
    for i in range(9):
        committed.A[i] = A[i]
    for i in range(3):
        committed.a[i] = a[i]
        committed.Pi[i] = Pi[i]
        committed.p[i] = p[i]
        committed.s[i] = s[i]
        committed.n[i] = n[i]
        committed.F[i] = F[i]
        committed.xi[i] = xi[i]
    committed.t = clock[0]
    committed.work = clock[1]
    committed.chart = <int>chart[0]
    committed.z[0] = z[0]
    committed.z[1] = z[1]
    committed.normal_force = 0.0
    committed.has_guess = False
    for k in range(n_steps):
        work = committed
        for j in range(n_sub):
            hj = h * substeps[j]
            for i in range(3):
                work.xi[i] *= hj / h_last  # the warm start belongs to the last sub-step
            h_last = hj
            work.has_guess = extrapolate and fill >= 2
            if work.has_guess:
                past = &hist[6 * HISTORY * j]
                for i in range(6):
                    if fill >= 3:
                        work.guess[i] = 3.0 * past[i] - 3.0 * past[6 + i] + past[12 + i]
                    else:
                        work.guess[i] = 2.0 * past[i] - past[6 + i]
            st = rolling_step(shape, ground, motion, forces, mass, inertia, inertia_inv,
                              gravity, up, hj, map_code, newton_tol, max_newton,
                              &work, &c, options)
            if st:
                break
            for i in range(3):
                solved[6 * j + i] = work.xi[i]
                solved[6 * j + 3 + i] = work.F[i]
        if st == OK and ground.raised:
            st = CALLBACK_RAISED  # a Python ground raised (in a re-charting, say)
        if st:
            info[0] = st
            status = <int>(k + 1)
            break
        committed = work
        if extrapolate:  # the step's solutions join the history, the oldest leave it
            for j in range(n_sub):
                past = &hist[6 * HISTORY * j]
                for i in range(6 * HISTORY - 1, 5, -1):
                    past[i] = past[i - 6]
                for i in range(6):
                    past[i] = solved[6 * j + i]
            if fill < HISTORY:
                fill += 1
        if (k + 1) % save_every == 0:
            write_frame(&out[((k + 1) // save_every - 1) * FRAME_SIZE], &committed, &c)
    if extrapolate:
        filled[0] = fill
        for i in range(6 * HISTORY * n_sub):
            history[i] = hist[i]
    for i in range(9):
        A[i] = committed.A[i]
    for i in range(3):
        a[i] = committed.a[i]
        Pi[i] = committed.Pi[i]
        p[i] = committed.p[i]
        s[i] = committed.s[i]
        n[i] = committed.n[i]
        F[i] = committed.F[i]
        xi[i] = committed.xi[i]
    clock[0] = committed.t
    clock[1] = committed.work
    chart[0] = committed.chart
    z[0] = committed.z[0]
    z[1] = committed.z[1]
    info[INFO_COMMITTED] = status - 1 if status else n_steps
    return status


@cython.boundscheck(False)
@cython.wraparound(False)
def rolling_run(ConvexShape shape, ChartSurface ground, GroundMotion motion, ForceSet forces,
                double mass,
                const double[:, ::1] inertia, const double[:, ::1] inertia_inv, double gravity,
                const double[::1] up, double h, const double[::1] substeps,
                Py_ssize_t n_steps, Py_ssize_t save_every,
                int map_code, double newton_tol, int max_newton,
                double[:, ::1] A, double[::1] a, double[::1] Pi, double[::1] p, double[::1] s,
                double[::1] n, double[::1] F, double[::1] xi, Py_ssize_t[::1] chart,
                double[::1] z, double[::1] clock, double[:, ::1] out, Py_ssize_t[::1] info,
                int options=0, double[:, ::1] history=None, Py_ssize_t[::1] filled=None):
    """Advance ``n_steps`` steps, saving every ``save_every``-th frame (see the twin).

    Returns 0 on success, ``k + 1`` if step ``k`` failed (``info[0]`` says why; the IN/OUT
    state holds the state at the start of that step: a step is committed only when all its
    sub-steps succeeded). ``info`` (3,) OUT: [the status, -, steps committed].
    """
    cdef Py_ssize_t n_sub = substeps.shape[0]
    cdef int status
    cdef bint extrapolate = (options & EXTRAPOLATE) != 0
    cdef double* past = NULL
    cdef Py_ssize_t* count = NULL
    cdef double* frames = NULL
    if info.shape[0] < INFO_SIZE:
        raise ValueError(f"Expected `info` of shape ({INFO_SIZE},), got ({info.shape[0]},).")
    if extrapolate and (history is None or filled is None or n_sub > MAX_SUBSTEPS
                        or history.shape[0] != n_sub or history.shape[1] != 6 * HISTORY
                        or filled.shape[0] < 1):
        raise ValueError(f"Expected `history` of shape ({n_sub}, {6 * HISTORY}) and `filled` "
                         "of shape (1,) with EXTRAPOLATE (at most 32 sub-steps).")
    if extrapolate:
        past = &history[0, 0]
        count = &filled[0]
    if out.shape[0] > 0:
        frames = &out[0, 0]
    with nogil:
        status = rolling_loop(shape, ground, motion, forces, mass, &inertia[0, 0],
                              &inertia_inv[0, 0], gravity, &up[0], h, &substeps[0], n_sub,
                              n_steps, save_every, map_code, newton_tol, max_newton, options,
                              &A[0, 0], &a[0], &Pi[0], &p[0], &s[0], &n[0], &F[0], &xi[0],
                              &chart[0], &z[0], &clock[0], frames, &info[0], past, count)
    return status


@cython.boundscheck(False)
@cython.wraparound(False)
def rolling_ensemble(ConvexShape shape, ChartSurface ground, GroundMotion motion,
                     ForceSet forces, const double[::1] mass, const double[:, :, ::1] inertia,
                     const double[:, :, ::1] inertia_inv, double gravity, const double[::1] up,
                     double h, const double[::1] substeps, Py_ssize_t n_steps,
                     Py_ssize_t save_every, int map_code, double newton_tol, int max_newton,
                     double[:, :, ::1] A, double[:, ::1] a, double[:, ::1] Pi, double[:, ::1] p,
                     double[:, ::1] s, double[:, ::1] n, double[:, ::1] F, double[:, ::1] xi,
                     Py_ssize_t[::1] chart, double[:, ::1] z, double[:, ::1] clock,
                     double[:, :, ::1] out, Py_ssize_t[:, ::1] info, int options=0,
                     double[:, :, ::1] history=None, Py_ssize_t[::1] filled=None,
                     int threads=1, const unsigned char[::1] active=None):
    """Advance N independent runs ``n_steps`` steps each, spread over ``threads`` threads.

    The arguments are those of :func:`rolling_run` with a leading run axis on the state and
    on ``mass`` (N,), ``inertia`` and ``inertia_inv`` (N, 3, 3), ``chart`` and ``filled``
    (N,), ``out`` (N, n_steps // save_every, FRAME_SIZE), ``info`` (N, INFO_SIZE) and
    ``history`` (N, n_sub, 6 HISTORY); the shape, ground, motion and forces are shared. Run
    ``i`` is exactly ``rolling_run`` on its rows (the same function steps it), so its results
    are those of the run made alone, bit for bit, whatever the number of threads.

    ``active`` (N,) uint8, optional: only runs with a nonzero entry are stepped (the others are
    left as they are, with ``info`` rows of zeros). Each run's failure is its own:
    ``info[i, 0]`` its status (0 when it took all its steps) and ``info[i, 2]`` the steps it
    committed; the state of a failed run is that at the start of its failing step, and the other
    runs go on.

    Returns
    -------
    int
        The number of runs that failed in this call.

    Raises
    ------
    ValueError
        A leading length differs from ``len(mass)``, a shape is wrong, or the ground (or the
        body's chart surface) calls back into Python (``PythonChartSurface``): such a surface
        keeps one error flag for every caller, so its runs step one at a time through
        :func:`rolling_run`.
    """
    cdef Py_ssize_t N = mass.shape[0], n_sub = substeps.shape[0], n_saved, i
    cdef bint extrapolate = (options & EXTRAPOLATE) != 0
    cdef Py_ssize_t hist_size = 6 * HISTORY * n_sub
    cdef int failed = 0, code
    cdef double* past
    cdef Py_ssize_t* count
    cdef double* frames
    cdef const unsigned char* on = NULL
    if isinstance(ground, PythonChartSurface) or (
            isinstance(shape, ChartShape)
            and isinstance((<ChartShape>shape).surface, PythonChartSurface)):
        raise ValueError("rolling_ensemble cannot step a surface that calls back into Python "
                         "(PythonChartSurface) on several threads; step its runs one at a time "
                         "with rolling_run.")
    if threads < 1:
        raise ValueError(f"Expected `threads` >= 1, got {threads}.")
    if save_every < 1 or n_steps < 0:
        raise ValueError(f"Expected `n_steps` >= 0 and `save_every` >= 1, got {n_steps} and "
                         f"{save_every}.")
    n_saved = n_steps // save_every
    for name, view, shape_tail in (
            ("inertia", inertia, (3, 3)), ("inertia_inv", inertia_inv, (3, 3)),
            ("A", A, (3, 3)), ("a", a, (3,)), ("Pi", Pi, (3,)), ("p", p, (3,)), ("s", s, (3,)),
            ("n", n, (3,)), ("F", F, (3,)), ("xi", xi, (3,)), ("chart", chart, ()),
            ("z", z, (2,)), ("clock", clock, (2,)), ("out", out, (n_saved, FRAME_SIZE)),
            ("info", info, (INFO_SIZE,))):
        got = tuple(view.shape[:view.ndim])
        if got != (N,) + shape_tail:
            raise ValueError(f"Expected `{name}` of shape {(N,) + shape_tail} (N = len(mass) "
                             f"runs), got {got}.")
    if extrapolate:
        if history is None or filled is None or n_sub > MAX_SUBSTEPS:
            raise ValueError(f"Expected `history` and `filled` with EXTRAPOLATE (at most "
                             f"{MAX_SUBSTEPS} sub-steps).")
        if (history.shape[0] != N or history.shape[1] != n_sub
                or history.shape[2] != 6 * HISTORY or filled.shape[0] != N):
            raise ValueError(f"Expected `history` of shape ({N}, {n_sub}, {6 * HISTORY}) and "
                             f"`filled` of shape ({N},).")
    if active is not None:
        if active.shape[0] != N:
            raise ValueError(f"Expected `active` of shape ({N},), got ({active.shape[0]},).")
        on = &active[0] if N > 0 else NULL
    if N == 0:
        return 0
    info[:, :] = 0
    for i in prange(N, nogil=True, schedule="dynamic", num_threads=threads):
        if on != NULL and on[i] == 0:
            continue
        past = &history[i, 0, 0] if extrapolate else NULL
        count = &filled[i] if extrapolate else NULL
        frames = &out[i, 0, 0] if n_saved > 0 else NULL
        code = rolling_loop(shape, ground, motion, forces, mass[i], &inertia[i, 0, 0],
                            &inertia_inv[i, 0, 0], gravity, &up[0], h, &substeps[0], n_sub,
                            n_steps, save_every, map_code, newton_tol, max_newton, options,
                            &A[i, 0, 0], &a[i, 0], &Pi[i, 0], &p[i, 0], &s[i, 0], &n[i, 0],
                            &F[i, 0], &xi[i, 0], &chart[i], &z[i, 0], &clock[i, 0], frames,
                            &info[i, 0], past, count)
        if code != 0:
            failed += 1
    return failed


def support_map(ConvexShape shape, d):
    """``(status, s (3,), S' (3, 3), n_M (3,))`` of ``shape`` in direction ``d`` (see the twin)."""
    cdef double dd[3]
    cdef double s[3]
    cdef double Sp[9]
    cdef double n_M[3]
    cdef int i, st
    for i in range(3):
        dd[i] = float(d[i])
        s[i] = 0.0
        n_M[i] = 0.0
    for i in range(9):
        Sp[i] = 0.0
    st = shape.support(dd, s, Sp, n_M)
    return (st, [s[0], s[1], s[2]], [[Sp[3 * i + j] for j in range(3)] for i in range(3)],
            [n_M[0], n_M[1], n_M[2]])


cdef struct Arctan:
    double points[2 * 1024]  # the points at which the residual was evaluated
    int count


cdef int arctan_residual(void* problem, double* x, double* F, double* F_scale) noexcept nogil:
    # F(x) = (atan(x0 - 1) + x1 / 10, atan(x1 + 2)); see the twin's solve_arctan
    cdef Arctan* P = <Arctan*>problem
    if P.count < 1024:
        P.points[2 * P.count] = x[0]
        P.points[2 * P.count + 1] = x[1]
    P.count += 1
    F[0] = atan(x[0] - 1.0) + 0.1 * x[1]
    F[1] = atan(x[1] + 2.0)
    F_scale[0] = 0.5 * M_PI + 0.1 * fabs(x[1])
    F_scale[1] = 0.5 * M_PI
    return OK


cdef int arctan_jacobian(void* problem, const double* x, double* J) noexcept nogil:
    cdef double e0 = x[0] - 1.0, e1 = x[1] + 2.0
    J[0] = 1.0 / (1.0 + e0 * e0)
    J[1] = 0.1
    J[2] = 0.0
    J[3] = 1.0 / (1.0 + e1 * e1)
    return OK


def solve_arctan(x0, bint damped, int max_iter):
    """The globalised (``damped``) or plain shared Newton on the twin's check problem: ``(status,
    x (2,), points (k, 2))`` (see the twin)."""
    cdef Arctan P
    cdef double x[2]
    cdef double floor[2]
    cdef NewtonRule rule
    cdef int st, i
    import numpy as np
    P.count = 0
    x[0] = float(x0[0])
    x[1] = float(x0[1])
    floor[0] = 1.0
    floor[1] = 1.0
    rule.correction_tol = 1e-13
    rule.residual_tol = ROUNDOFF
    rule.max_iter = max_iter
    if damped:
        st = newton_solve_damped(arctan_residual, arctan_jacobian, &P, 2, x, floor, rule)
    else:
        st = newton_solve(arctan_residual, arctan_jacobian, &P, 2, x, floor, rule)
    if P.count > 1024:
        raise ValueError("Expected at most 1024 residual evaluations; raise the buffer.")
    points = np.array([P.points[i] for i in range(2 * P.count)]).reshape(-1, 2)
    return st, [x[0], x[1]], points


# -- the continuous vector field (eq. 29) for an adaptive solver ---------------------------------
#
# RollingField: RollingBody.reference_rhs (a ground at rest, built-in forces) as a callable
# field(t, y) for scipy's ode("dop853") (nhphys.integrators.Adaptive), with its projection. The
# specification, the equations and the projection's argument are in the twin's RollingField
# (nhphys/twins/rolling.py). Why the numpy C API rather than memoryviews: the solver calls the
# field once per stage, and a memoryview acquisition would cost as much as the field itself.

cimport numpy as cnp
from libc.math cimport nextafter, pow

cdef extern from *:
    # numpy's headers include <complex.h>, whose macro `I` would rename the field `I` of the
    # step's problem struct above; nothing here uses the macro
    """
    #ifdef I
    #undef I
    #endif
    """

cnp.import_array()

DEF FIELD_STATE = 15  # A (9, row-major), z (2), Omega (3), W (1): RollingBody.reference_state


cdef int _field_rates(object field, double t, const double* y, double* out) noexcept:
    # dop853_integrate's rates: the field's eq. (29) in C
    return (<RollingField>field)._eval(t, y, out, NULL)


cdef int _field_project(object field, double t, double* y) noexcept:
    # dop853_integrate's projection: A to the rotation that keeps the body's normal
    # direction, then Omega onto the energy level when the field holds one
    return (<RollingField>field)._project(t, y)


cdef inline void ground_operators(const double* J, const double* WH, const double* A,
                                  double* gi, double* LH, double* K) noexcept nogil:
    # from the ground's chart Jacobian J (3 x 2) and Weingarten matrix WH (2 x 2): the inverse
    # metric gi = (J^T J)^-1, the Weingarten map on space vectors LH = J WH gi J^T (-dn = LH dx)
    # and K = A^T LH A (row-major)
    cdef double G[4]
    cdef double JWgi[6]
    cdef double T1[9]
    cdef double det, sum_
    cdef int i, j, a, b, k
    G[0] = J[0] * J[0] + J[2] * J[2] + J[4] * J[4]
    G[1] = J[0] * J[1] + J[2] * J[3] + J[4] * J[5]
    G[2] = G[1]
    G[3] = J[1] * J[1] + J[3] * J[3] + J[5] * J[5]
    det = G[0] * G[3] - G[1] * G[2]
    gi[0] = G[3] / det
    gi[1] = -G[1] / det
    gi[2] = -G[2] / det
    gi[3] = G[0] / det
    for i in range(3):
        for b in range(2):
            sum_ = 0.0
            for a in range(2):
                for k in range(2):
                    sum_ += J[2 * i + a] * WH[2 * a + k] * gi[2 * k + b]
            JWgi[2 * i + b] = sum_
    for i in range(3):
        for j in range(3):
            LH[3 * i + j] = JWgi[2 * i] * J[2 * j] + JWgi[2 * i + 1] * J[2 * j + 1]
    matmul3(LH, A, T1)
    for i in range(3):
        for j in range(3):
            K[3 * i + j] = A[i] * T1[j] + A[3 + i] * T1[3 + j] + A[6 + i] * T1[6 + j]


cdef class RollingField:
    """Eq. (29) of a body rolling on a ground at rest or under a built-in motion,
    ``field(t, y)``, and its projection (see the twin, :class:`nhphys.twins.rolling.RollingField`)."""

    cdef ConvexShape shape
    cdef ChartSurface ground
    cdef ForceSet forces  # None: gravity alone
    cdef GroundMotion motion  # None: the ground is at rest
    cdef readonly int chart
    cdef readonly bint support_form
    cdef double mass, gravity
    cdef double inertia_[9]
    cdef double up_[3]
    cdef public long evaluations
    cdef public int status
    cdef public double energy_level  # the level of E - W the projection holds; NaN: none
    cdef public long energy_misses   # projections that could not reach the level
    cdef bint have_table
    cdef Dop853Table table

    def __init__(self, ConvexShape shape, ChartSurface ground, int chart, double mass, inertia,
                 double gravity, up, bint support_form, ForceSet forces=None,
                 GroundMotion motion=None):
        cdef int i, j
        self.shape = shape
        self.ground = ground
        self.forces = None if forces is None or forces.empty else forces
        self.motion = motion if motion is not None and motion.moving else None
        self.chart = chart
        self.mass = mass
        self.gravity = gravity
        self.support_form = support_form
        for i in range(3):
            self.up_[i] = float(up[i])
            for j in range(3):
                self.inertia_[3 * i + j] = float(inertia[i][j])
        self.evaluations = 0
        self.status = OK
        self.energy_level = float("nan")
        self.energy_misses = 0

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def __call__(self, double t, y):
        """``dy/dt`` (15,) at the state ``y`` (15,) and time ``t`` (scheduled forces, a moving
        ground; else unused). A state where
        the contact fails (a contact event, a singular contact) gives NaN rates and keeps the
        first such status in ``status``."""
        cdef cnp.ndarray arr = as_state(y, FIELD_STATE)
        cdef cnp.npy_intp dim = FIELD_STATE
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(1, &dim, cnp.NPY_DOUBLE, 0)
        cdef double* o = <double*>cnp.PyArray_DATA(out)
        cdef int st, k
        self.evaluations += 1
        st = self._eval(t, <const double*>cnp.PyArray_DATA(arr), o, NULL)
        if st != OK:
            if self.status == OK:
                self.status = st
            for k in range(FIELD_STATE):
                o[k] = float("nan")
        if self.ground.raised:
            self.ground.raise_pending()
        return out

    def project(self, y, double t=0.0):
        """Put the state ``y`` (15,) at time ``t`` back on the manifold, in place, and onto the
        energy level when it is finite; returns 0 or a failed contact's status (the twin's
        docstring)."""
        cdef int st = self._project(t, writable_state(y, FIELD_STATE))
        if self.ground.raised:
            self.ground.raise_pending()
        return st

    def energy(self, y, double t):
        """``E - W`` at the state ``y`` (15,) and time ``t`` (the twin's docstring)."""
        cdef cnp.ndarray arr = as_state(y, FIELD_STATE)
        cdef const double* Y = <const double*>cnp.PyArray_DATA(arr)
        cdef double energy
        cdef double d[3]
        cdef double x[3]
        cdef double n[3]
        cdef double metric_square
        cdef int st = self._ground_point(t, Y, x, n)
        if st == OK:
            st = self._energy(t, Y, x, n, &energy, d, &metric_square)
        if self.ground.raised:
            self.ground.raise_pending()
        if st != OK:
            raise ValueError(f"Expected a state with a regular contact (status {st}).")
        return energy

    cdef int _project(self, double t, double* y) noexcept:
        # A to T U, U its polar factor and T the smallest rotation taking U b back to n, b the
        # body's normal direction A^T n / |A^T n|; with an energy level, Omega += mu d (twin:
        # project)
        cdef double energy, metric_square, mu, size, c
        cdef double d[3]
        cdef double x[3]
        cdef double n[3]
        cdef double b[3]
        cdef double Ub[3]
        cdef double v[3]
        cdef double V[9]
        cdef double T[9]
        cdef double U[9]
        cdef int st, i, j, k
        st = self._ground_point(t, y, x, n)  # (z and t only: the same after A's projection)
        if st != OK:
            return st
        matTvec3(y, n, b)
        size = sqrt(dot3(b, b))
        for i in range(3):
            b[i] /= size
        polar_factor(y)
        matvec3(y, b, Ub)
        cross3(Ub, n, v)
        c = dot3(Ub, n)
        hat3(v, V)
        for i in range(3):  # T = I + [v]x + [v]x^2 / (1 + c)  (twin: tilt_onto)
            for j in range(3):
                T[3 * i + j] = (1.0 if i == j else 0.0) + V[3 * i + j]
                for k in range(3):
                    T[3 * i + j] += V[3 * i + k] * V[3 * k + j] / (1.0 + c)
        for i in range(9):
            U[i] = y[i]
        matmul3(T, U, y)
        if self.energy_level != self.energy_level:  # NaN: the energy is not held
            return OK
        st = self._energy(t, y, x, n, &energy, d, &metric_square)
        if st != OK:
            return st
        mu = energy_correction(energy - self.energy_level, metric_square)
        if mu == 0.0 and energy != self.energy_level:
            self.energy_misses += 1  # the velocities cannot reach the level here
        for i in range(3):
            y[11 + i] += mu * d[i]
        return OK

    cdef int _ground_point(self, double t, const double* y, double* x, double* n) noexcept:
        # the ground's point x and normal n (space) at the state's z and time t (twin:
        # _ground_point)
        cdef double J[6]
        cdef double H[12]
        cdef double WH[4]
        cdef Placement now
        ground_geometry(self.ground, self.chart, y + 9, x, J, H, n, WH)
        if self.ground.raised:
            return CALLBACK_RAISED
        if self.motion is not None:
            self.motion.at(t, &now)
            ground_in_space(&now, x, n)
        return OK

    cdef int _energy(self, double t, const double* y, const double* x, const double* n,
                     double* energy, double* d, double* metric_square) noexcept:
        # E - W at y with the ground's point x and normal n (space, _ground_point), the metric
        # gradient d = I~^-1 g of E in Omega and a = g . d (twin: _energy); the body's contact
        # point s is its support point in the direction -A^T n
        cdef double s[3]
        cdef double Sp[9]
        cdef double n_M[3]
        cdef double ws[3]
        cdef double v[3]
        cdef double V[3]
        cdef double q[3]
        cdef double g[3]
        cdef double It[9]
        cdef double S[9]
        cdef Placement M
        cdef const double* A = y
        cdef const double* w = y + 11
        cdef double kinetic = 0.0
        cdef double height = 0.0
        cdef double m = self.mass
        cdef int i, j, k, st
        matTvec3(A, n, q)
        for i in range(3):
            q[i] = -q[i]
        st = self.shape.support(q, s, Sp, n_M)
        if st != OK:
            return st
        V[0] = V[1] = V[2] = 0.0
        if self.motion is not None:
            self.motion.at(t, &M)
            ground_velocity(&M, x, V)
        cross3(w, s, ws)
        matvec3(A, ws, q)
        for i in range(3):
            v[i] = V[i] - q[i]  # the centre's velocity
        matvec3(A, s, q)
        for i in range(3):
            q[i] = x[i] - q[i]  # the centre a = x - A s
            height += self.up_[i] * q[i]
            for j in range(3):
                kinetic += w[i] * self.inertia_[3 * i + j] * w[j]
        energy[0] = 0.5 * (kinetic + m * dot3(v, v)) + m * self.gravity * height - y[14]
        if self.forces is not None:
            energy[0] += self.forces.potential(A, q)
        # g = I Omega - m s x (A^T v); I~ = I - m hat(s)^2
        matTvec3(A, v, q)
        cross3(s, q, ws)
        hat3(s, S)
        for i in range(3):
            g[i] = -m * ws[i]
            for j in range(3):
                g[i] += self.inertia_[3 * i + j] * w[j]
                It[3 * i + j] = self.inertia_[3 * i + j]
                for k in range(3):
                    It[3 * i + j] -= m * S[3 * i + k] * S[3 * k + j]
            d[i] = g[i]
        if not solve_small(3, It, d):
            return SINGULAR_CONTACT
        metric_square[0] = dot3(g, d)
        return OK

    def integrate(self, y, double t0, double t1, double rtol, double atol, double h_abs,
                  long max_steps, bint project=True):
        """Advance ``y`` (15,) in place from ``t0`` to ``t1`` by DOP853 with the field
        evaluated in C (no Python call per stage), projecting every accepted step unless
        ``project`` is False; returns ``(status, solver_code, h_next, steps)`` (see the twin's
        docstring)."""
        cdef double* data = writable_state(y, FIELD_STATE)
        out = dop853_run(self, _field_rates, _field_project, project, &self.table,
                         &self.have_table, FIELD_STATE, data, t0, t1, rtol, atol, h_abs,
                         max_steps, &self.evaluations)
        if out[0] != OK and self.status == OK:
            self.status = out[0]
        if self.ground.raised:
            self.ground.raise_pending()
        return out

    def frame(self, y, double t):
        """The saved frame (34,) of the state ``y`` (15,) at time ``t``, as
        ``RollingBody.reference_unpack`` makes it (see the twin)."""
        cdef cnp.ndarray arr = as_state(y, FIELD_STATE)
        cdef const double* Y = <const double*>cnp.PyArray_DATA(arr)
        cdef double rates[FIELD_STATE]
        cdef double ex[19]
        cdef double ws[3]
        cdef double q[3]
        cdef double v[3]
        cdef double V[3]
        cdef Placement M
        cdef int i, st
        cdef cnp.npy_intp dim = 34
        cdef cnp.ndarray out = cnp.PyArray_ZEROS(1, &dim, cnp.NPY_DOUBLE, 0)
        cdef double* o = <double*>cnp.PyArray_DATA(out)
        st = self._eval(t, Y, rates, ex)
        if self.ground.raised:
            self.ground.raise_pending()
        if st != OK:
            raise ValueError(f"Expected a state with a regular contact (status {st}).")
        cdef const double* A = Y
        cdef const double* w = Y + 11
        cdef const double* s = ex
        # a = x - A s; Pi = I Omega; p = m da/dt = m (V(x) - A (Omega x s))
        matvec3(A, s, q)
        cross3(w, s, ws)
        matvec3(A, ws, v)
        if self.motion is not None:
            self.motion.at(t, &M)
            ground_velocity(&M, ex + 3, V)
            for i in range(3):
                v[i] -= V[i]
        for i in range(9):
            o[i] = A[i]
        for i in range(3):
            o[9 + i] = ex[3 + i] - q[i]
            o[12 + i] = (self.inertia_[3 * i] * w[0] + self.inertia_[3 * i + 1] * w[1]
                         + self.inertia_[3 * i + 2] * w[2])
            o[15 + i] = -self.mass * v[i]
            o[18 + i] = ex[i]
            o[21 + i] = ex[3 + i]
            o[24 + i] = ex[6 + i]
            o[27 + i] = ex[9 + i]
        o[30] = 0.0
        o[31] = ex[15]  # the normal force
        o[32] = Y[14]
        o[33] = t
        return out

    cdef int _eval(self, double t, const double* y, double* out, double* extra) noexcept:
        # the rates into out (15) at time t; if extra is not NULL, s, x, n, n_M, ds/dt, the
        # normal force and the contact force (without force elements) into it (19)
        cdef const double* A = y
        cdef const double* z = y + 9
        cdef const double* w = y + 11
        cdef double x[3]
        cdef double J[6]
        cdef double H[12]
        cdef double n[3]
        cdef double WH[4]
        cdef double d[3]
        cdef double s[3]
        cdef double Sp[9]
        cdef double n_M[3]
        cdef double gi[4]      # (J^T J)^-1
        cdef double LH[9]      # J W g^-1 J^T: -dn = LH dx in space
        cdef double T1[9]
        cdef double K[9]       # A^T LH A
        cdef double M[9]
        cdef double An[3]
        cdef double wn[3]
        cdef double sd[3]
        cdef double E[6]
        cdef double G[4]
        cdef double lam[4]
        cdef double b2[2]
        cdef double As[3]
        cdef double Jt[2]
        cdef double It[9]
        cdef double Iw[3]
        cdef double rhs[3]
        cdef double q[3]
        cdef double u[3]
        cdef double gk[3]
        cdef double ws[3]
        cdef double acc0[3]
        cdef double Bm[9]      # Q^T A: the body's attitude relative to a moving ground
        cdef double wrel[3]    # Omega_r = Omega - A^T w_ground
        cdef double V[3]       # the ground's material point's velocity at x
        cdef double aV[3]      # ... and its acceleration, with the Coriolis-like term
        cdef double rg[3]
        cdef double F[3]
        cdef Placement now  # the ground's placement at t
        cdef const double* B = A
        cdef const double* wr = w
        cdef bint moving = self.motion is not None
        cdef double det, sum_, ss, power, N = 0.0
        cdef int i, j, k, a, b, st, r
        # on a moving ground (the twin's docstring, "Moving ground"), the contact is solved in
        # the ground's frame with B = Q^T A and Omega_r, then put in space
        ground_geometry(self.ground, self.chart, z, x, J, H, n, WH)
        if self.ground.raised:
            return CALLBACK_RAISED
        if moving:
            self.motion.at(t, &now)
            for i in range(3):
                for j in range(3):
                    Bm[3 * i + j] = (now.Q[i] * A[j] + now.Q[3 + i] * A[3 + j]
                                     + now.Q[6 + i] * A[6 + j])
            matTvec3(A, now.w, rg)
            for i in range(3):
                wrel[i] = w[i] - rg[i]
            B, wr = Bm, wrel
        matTvec3(B, n, An)  # B^T n_ground = A^T n
        for i in range(3):
            d[i] = -An[i]
        st = self.shape.support(d, s, Sp, n_M)
        if st != OK:
            return st
        ground_operators(J, WH, B, gi, LH, K)  # g^-1, L_H and K = B^T L_H B
        cross3(wr, An, wn)  # Omega_r x B^T n
        if self.support_form:
            # (I - S' K) ds/dt = S' (Omega_r x B^T n)
            matmul3(Sp, K, M)
            for i in range(9):
                M[i] = -M[i]
            M[0] += 1.0
            M[4] += 1.0
            M[8] += 1.0
            matvec3(Sp, wn, sd)
            if not solve_small(3, M, sd):
                return SINGULAR_CONTACT
        else:
            # Lambda = (E^T S' E)^-1 - E^T K E on the tangent plane, Lambda E^T ds/dt = E^T wn
            tangent_basis(An, E)
            for a in range(2):
                for b in range(2):
                    sum_ = 0.0
                    ss = 0.0
                    for i in range(3):
                        for j in range(3):
                            sum_ += E[2 * i + a] * Sp[3 * i + j] * E[2 * j + b]
                            ss += E[2 * i + a] * K[3 * i + j] * E[2 * j + b]
                    G[2 * a + b] = sum_
                    lam[2 * a + b] = ss
            det = G[0] * G[3] - G[1] * G[2]
            if det == 0.0:
                return SINGULAR_CONTACT
            lam[0] = G[3] / det - lam[0]
            lam[1] = -G[1] / det - lam[1]
            lam[2] = -G[2] / det - lam[2]
            lam[3] = G[0] / det - lam[3]
            for a in range(2):
                b2[a] = E[a] * wn[0] + E[2 + a] * wn[1] + E[4 + a] * wn[2]
            if not solve_small(2, lam, b2):
                return SINGULAR_CONTACT
            for i in range(3):
                sd[i] = E[2 * i] * b2[0] + E[2 * i + 1] * b2[1]
        # dz/dt = g^-1 J^T B ds/dt
        matvec3(B, sd, As)
        for a in range(2):
            Jt[a] = J[a] * As[0] + J[2 + a] * As[1] + J[4 + a] * As[2]
        out[9] = gi[0] * Jt[0] + gi[1] * Jt[1]
        out[10] = gi[2] * Jt[0] + gi[3] * Jt[1]
        if moving:
            # the contact in space; V = w x r + v and, the built-in motions having a constant w
            # and dv/dt = w x v, a_V = w x (w x r) + w x v + w x (A ds/dt), r = x - d
            ground_in_space(&now, x, n)
            for i in range(3):
                rg[i] = x[i] - now.d[i]
            cross3(now.w, rg, V)
            for i in range(3):
                V[i] += now.v[i]
            matvec3(A, sd, q)
            for i in range(3):
                q[i] += V[i]  # w x r + v + A ds/dt: w x (.) of it is a_V
            cross3(now.w, q, aV)
        # I~ dOmega/dt = (I~ Omega) x Omega + m s x (ds/dt x Omega + g A^T k), I~ = I - m hat(s)^2
        ss = dot3(s, s)
        for i in range(3):
            for j in range(3):
                It[3 * i + j] = self.inertia_[3 * i + j] + self.mass * (
                    (ss if i == j else 0.0) - s[i] * s[j])
        matvec3(It, w, Iw)
        cross3(Iw, w, rhs)
        cross3(sd, w, q)
        matTvec3(A, self.up_, gk)
        for i in range(3):
            q[i] += self.gravity * gk[i]
        if moving:  # m s x A^T a_V more
            matTvec3(A, aV, u)
            for i in range(3):
                q[i] += u[i]
        cross3(s, q, u)
        for i in range(3):
            out[11 + i] = rhs[i] + self.mass * u[i]
        # the known part of the centre's acceleration, acc0 = -A (Omega x (Omega x s)
        # + Omega x ds/dt): d2a/dt2 = acc0 - A (dOmega/dt x s)
        cross3(w, s, ws)
        cross3(w, ws, q)
        cross3(w, sd, u)
        for i in range(3):
            q[i] += u[i]
        matvec3(A, q, acc0)
        for i in range(3):
            acc0[i] = -acc0[i] + (aV[i] if moving else 0.0)
        power = 0.0
        if self.forces is None:
            if not solve_small(3, It, out + 11):
                return SINGULAR_CONTACT
            if extra != NULL or moving:  # F = m (d2a/dt2 + g k), N = n . F
                cross3(out + 11, s, q)
                matvec3(A, q, u)
                for i in range(3):
                    F[i] = self.mass * (acc0[i] - u[i] + self.gravity * self.up_[i])
                if moving:  # the ground's power on the body, F . V(x)
                    power = dot3(F, V)
                if extra != NULL:
                    for i in range(3):
                        extra[16 + i] = F[i]
                    extra[15] = dot3(n, F)
        else:
            power = self._forced(t, A, x, n, An, s, w, ws, acc0, It, out + 11, &N,
                                 V if moving else NULL, F)
            if power != power:  # NaN: the forced system is singular
                return SINGULAR_CONTACT
            if extra != NULL:
                extra[15] = N
                for i in range(3):
                    extra[16 + i] = F[i]
        # dA/dt = A hat(Omega): row r of A crossed with Omega; dW/dt the forces' power
        for r in range(3):
            cross3(A + 3 * r, w, out + 3 * r)
        out[14] = power
        if extra != NULL:
            for i in range(3):
                extra[i] = s[i]
                extra[3 + i] = x[i]
                extra[6 + i] = n[i]
                extra[9 + i] = n_M[i]
                extra[12 + i] = sd[i]
        return OK

    cdef double _forced(self, double t, const double* A, const double* x, const double* n,
                        const double* nb, const double* s, const double* w, const double* ws,
                        const double* acc0, const double* It, double* b,
                        double* N_out, const double* V, double* F_out) noexcept:
        # dOmega/dt into b (which holds the gravity-only right-hand side) with the force
        # elements, as RollingBody._rates (its Notes: applied forces, rolling resistance);
        # returns the power of the non-potential elements and, on a moving ground (V the
        # ground's velocity at the contact, else NULL), the ground's (NaN for a singular system);
        # the contact force (space) into F_out
        cdef double a[3]
        cdef double v[3]
        cdef double f_pot[3]
        cdef double tau_pot[3]
        cdef double f_app[3]
        cdef double tau_app[3]
        cdef double D[9]
        cdef double f_np[3]
        cdef double tau_np[3]
        cdef double f[3]
        cdef double Atf[3]
        cdef double sf[3]
        cdef double wr[3]
        cdef double snb[3]
        cdef double lhs[9]
        cdef double Dw[3]
        cdef double drag, N0, N, nbw, power
        cdef int i, j
        matvec3(A, s, a)
        matvec3(A, ws, v)
        for i in range(3):
            a[i] = x[i] - a[i]
            v[i] = -v[i] + (V[i] if V != NULL else 0.0)
        drag = self.forces.wrench(t, A, a, n, f_pot, tau_pot, f_app, tau_app, D)
        matvec3(D, w, Dw)
        for i in range(3):
            f_np[i] = f_app[i] - drag * v[i]
            tau_np[i] = tau_app[i] - Dw[i]
            f[i] = f_pot[i] + f_np[i]
        # rolling resistance: w_roll = mu P_t Omega, P_t = I - nb nb^T
        nbw = dot3(nb, w)
        for i in range(3):
            wr[i] = self.forces.rolling * (w[i] - nb[i] * nbw)
        N0 = 0.0
        for i in range(3):
            N0 += n[i] * (self.mass * acc0[i] + self.mass * self.gravity * self.up_[i] - f[i])
        cross3(s, nb, snb)
        for i in range(3):
            for j in range(3):
                lhs[3 * i + j] = It[3 * i + j] - self.mass * wr[i] * snb[j]
        matTvec3(A, f, Atf)
        cross3(s, Atf, sf)
        for i in range(3):
            b[i] += tau_pot[i] + tau_np[i] - sf[i] - N0 * wr[i]
        if not solve_small(3, lhs, b):
            return float("nan")
        N = N0 - self.mass * dot3(snb, b)
        N_out[0] = N
        power = dot3(f_np, v)
        for i in range(3):
            power += (tau_np[i] - N * wr[i]) * w[i]
        # the contact force F = m d2a/dt2 + m g k - f
        cross3(b, s, snb)
        matvec3(A, snb, Dw)
        for i in range(3):
            F_out[i] = self.mass * (acc0[i] - Dw[i] + self.gravity * self.up_[i]) - f[i]
        if V != NULL:  # the ground's power: F . V
            power += dot3(F_out, V)
        return power



# -- contact modes: rolling, flight, sliding (twin: nhphys/twins/modes.py) -----------------------

DEF MODE_ROLLING = 0
DEF MODE_FLIGHT = 1
DEF MODE_SLIDING = 2
DEF MODE_FACE = 3
DEF MODE_SIDE = 4  # a cylinder rolling on its side (twin: SIDE)
DEF MODE_SIDE_SLIDING = 5  # ... sliding on it (twin: SIDE_SLIDING)
DEF EVENT_FALL_FLAT = 5
DEF EVENT_FALL_SIDE = 6
DEF FACE_POINTS = 256  # the twin's (nhphys.twins.face)
DEF TRANSLATION_LIMIT = 1e12
DEF FACE_FLOOR = 1e-9
DEF EVENT_LIFT_OFF = 1
DEF EVENT_TOUCHDOWN = 2
DEF EVENT_SLIP = 3
DEF EVENT_STICK = 4
DEF EVENT_SIZE = 6  # t, kind, mode before, mode after, normal impulse, kinetic energy change
DEF MODES_FRAME_SIZE = 35  # FRAME_SIZE and the mode
DEF MAX_EVENTS_PER_STEP = 4
DEF LOCATE_TOL = 4 * 2.220446049250313e-16  # the bracket of a located event, relative to h
DEF LOCATE_ITER = 100
DEF SLIDE_SWEEPS = 50
DEF SLIDE_TOL = 1e-14
DEF SLIP_FLOOR = 1e-12


cdef struct FreeBody:
    # Pi^-(xi) = Pi, the free rigid body's discrete Legendre transform (twin: flight_step)
    const double* I
    const double* Pi
    double h
    int map_code


cdef int free_residual(void* problem, double* x, double* F, double* F_scale) noexcept nogil:
    cdef FreeBody* P = <FreeBody*>problem
    cdef double M[3]
    cdef double G[3]
    cdef int i
    momentum_minus(x, P.I, P.h, P.map_code, M, G)
    for i in range(3):
        F[i] = G[i] - P.Pi[i]
        F_scale[i] = fabs(G[i]) + fabs(P.Pi[i])
    return OK


cdef int free_jacobian(void* problem, const double* x, double* J) noexcept nogil:
    cdef FreeBody* P = <FreeBody*>problem
    momentum_minus_jacobian(x, P.I, P.h, P.map_code, J)
    return OK


cdef class ModesModel:
    # what the steps of modes_run read (twin: Model)
    cdef ConvexShape shape
    cdef ChartSurface ground
    cdef GroundMotion motion
    cdef ForceSet forces
    cdef RollingField field
    cdef double mass, gravity, restitution, mu, newton_tol
    cdef int impact_law  # ROUGH 0, COULOMB 1 (twin: IMPACT_LAWS)
    cdef const double* I
    cdef const double* Iinv
    cdef const double* up
    cdef const double* substeps
    cdef Py_ssize_t n_sub
    cdef const double* slide_substeps  # a sliding step's composition (twin: Model)
    cdef Py_ssize_t n_slide
    cdef int map_code, max_newton, options
    cdef double face_radius, flat_angle, face_inertia  # a disk that can lie flat (twin: Model)
    cdef double face_offset  # ... its face's distance from the centre of mass (a cylinder's)
    # ... whether it touches along a ring (a wheel: its fall is INNER_CONTACT), and its largest
    # friction torque per mu N R (twin: Model)
    cdef bint face_ring
    cdef int flat_status
    cdef double face_torque
    # a cylinder that can lie on its side (twin: Model): radius (0: none), half length, side
    # angle, and its inertia about a diameter
    cdef double side_radius, side_length, side_angle, side_inertia
    cdef bint forced  # force elements act (twin: Model.forced)
    cdef double weight[3]


cdef double NO_CONTACT[3]  # the normal the force elements see in flight: no spin friction
NO_CONTACT[0] = NO_CONTACT[1] = NO_CONTACT[2] = 0.0


cdef struct EndKick:
    # the applied forces' second half kick (twin: EndKick, end_wrench)
    double alpha
    double Binv[9]     # B^-1, B = I + h/2 D I^-1
    double G[9]        # I^-1 B^-1
    double f_c[3]
    double tau_c[3]
    double f_app[3]
    double tau_app[3]
    double D[9]
    double drag
    double Pi[3]
    double p[3]
    double power


cdef int end_wrench(ModesModel m, double h, double t1, const double* A1, const double* a1,
                    const double* n, double normal, EndKick* k) noexcept:
    # the applied forces at the end of a step and the implicit kick's matrices, rolling
    # resistance at the normal force `normal` (twin: end_wrench)
    cdef double f_pot[3]
    cdef double tau_pot[3]
    cdef double Pt[9]
    cdef int i
    k.drag = m.forces.wrench(t1, A1, a1, n, f_pot, tau_pot, k.f_app, k.tau_app, k.D)
    if m.forces.rolling != 0.0 and normal != 0.0:
        tangent_projector(A1, n, Pt)
        for i in range(9):
            k.D[i] += (m.forces.rolling * normal) * Pt[i]
    for i in range(3):
        k.f_c[i] = f_pot[i] + k.f_app[i]
        k.tau_c[i] = tau_pot[i] + k.tau_app[i]
    k.alpha = 1.0 / (1.0 + 0.5 * h * k.drag / m.mass)
    if not damped_kick(h, k.D, m.Iinv, k.Binv, k.G):
        return SINGULAR_JACOBIAN
    return OK


cdef void end_power(ModesModel m, EndKick* k) noexcept:
    # the non-potential elements' power at the end of the kick k (twin: end_power)
    cdef double omega[3]
    cdef double Dw[3]
    cdef int i
    matvec3(m.Iinv, k.Pi, omega)
    matvec3(k.D, omega, Dw)
    k.power = 0.0
    for i in range(3):
        k.power += (k.f_app[i] - k.drag * k.p[i] / m.mass) * (k.p[i] / m.mass)
    for i in range(3):
        k.power += (k.tau_app[i] - Dw[i]) * omega[i]


cdef int free_end_kick(ModesModel m, double h, double t1, const double* A1, const double* a1,
                       const double* p_half, const double* pi_end, EndKick* k) noexcept:
    # the second half kick of a body with no contact force, in flight (twin: free_end_kick)
    cdef double y[3]
    cdef int i, st
    st = end_wrench(m, h, t1, A1, a1, NO_CONTACT, 0.0, k)
    if st:
        return st
    for i in range(3):
        y[i] = pi_end[i] + 0.5 * h * k.tau_c[i]
        k.p[i] = k.alpha * (p_half[i] + 0.5 * h * (k.f_c[i] - m.weight[i]))
    matvec3(k.Binv, y, k.Pi)
    end_power(m, k)
    return OK


cdef int flight_step(ModesModel m, double h, State* S, Contact* c) noexcept:
    # one flight step from *S (twin: flight_step); *c the closest-approach pair at its end
    cdef FreeBody P
    cdef NewtonRule rule
    cdef double xi[3]
    cdef double floor[3]
    cdef double Ix[3]
    cdef double xIx[3]
    cdef double Q[9]
    cdef double A1[9]
    cdef double a1[3]
    cdef double p_half[3]
    cdef double half_weight[3]
    cdef double Pi_half[3]
    cdef double p_start[3]
    cdef double kick_const[3]
    cdef double rolling_row[3]
    cdef double power[2]
    cdef double pi_end[3]
    cdef EndKick k
    cdef State free
    cdef double size
    cdef int i, st
    for i in range(3):
        Pi_half[i] = S.Pi[i]
        p_start[i] = S.p[i]
    if m.forced:  # the first half kick of the applied forces (no contact: no spin friction)
        free = S[0]
        for i in range(3):
            free.n[i] = 0.0
        start_wrench(m.forces, h, m.mass, m.Iinv, &free, p_start, kick_const, rolling_row,
                     power)
        for i in range(3):
            Pi_half[i] += kick_const[i]
    matvec3(m.Iinv, Pi_half, xi)
    for i in range(3):
        xi[i] = h * xi[i]
    size = norm3(xi)
    for i in range(3):
        floor[i] = size
    P.I = m.I
    P.Pi = Pi_half
    P.h = h
    P.map_code = m.map_code
    rule.correction_tol = m.newton_tol
    rule.residual_tol = ROUNDOFF
    rule.max_iter = m.max_newton
    st = newton_solve(free_residual, free_jacobian, &P, 3, xi, floor, rule)
    if st == OK and m.map_code == 0 and norm3(xi) >= M_PI:
        st = FAR_BRANCH
    if st:
        return st
    retract(xi, m.map_code, Q)
    matmul3(S.A, Q, A1)
    reorthonormalize(A1)
    for i in range(3):
        half_weight[i] = 0.5 * h * m.weight[i]
        p_half[i] = p_start[i] - half_weight[i]
        a1[i] = S.a[i] + (h / m.mass) * p_half[i]
    st = contact(m.shape, m.ground, A1, a1, S.chart, S.z, m.newton_tol, m.max_newton, c)
    if st == m.flat_status and m.face_radius > 0.0:  # (a disk, a wheel) flat in the air
        flat_flight_contact(m, A1, a1, S.chart, S.z, c)
        st = OK
    elif st == RIM_TO_SIDE and m.side_radius > 0.0:  # a cylinder level in the air
        flat_flight_contact(m, A1, a1, S.chart, S.z, c)
        st = OK
    if st:
        return st
    matvec3(m.I, xi, Ix)
    cross3(xi, Ix, xIx)
    for i in range(3):
        pi_end[i] = Pi_half[i] - xIx[i] / h
    if m.forced:
        st = free_end_kick(m, h, S.t + h, A1, a1, p_half, pi_end, &k)
        if st:
            return st
        S.work = S.work + 0.5 * h * (power[0] + k.power)
    for i in range(9):
        S.A[i] = A1[i]
    for i in range(3):
        S.a[i] = a1[i]
        S.Pi[i] = k.Pi[i] if m.forced else pi_end[i]
        S.p[i] = k.p[i] if m.forced else p_half[i] - half_weight[i]
        S.s[i] = c.s[i]
        S.n[i] = c.n[i]
    S.chart = c.chart
    S.z[0] = c.z[0]
    S.z[1] = c.z[1]
    S.t += h
    S.normal_force = 0.0
    return OK


cdef inline void contact_velocity(ModesModel m, const State* S, const double* s,
                                  double* u) noexcept:
    # the velocity of the body's material point at s (twin: contact_velocity)
    cdef double w[3]
    cdef double ws[3]
    cdef double Aws[3]
    cdef int i
    matvec3(m.Iinv, S.Pi, w)
    cross3(w, s, ws)
    matvec3(S.A, ws, Aws)
    for i in range(3):
        u[i] = S.p[i] / m.mass + Aws[i]


cdef inline void space_omega(ModesModel m, const State* S, double* omega) noexcept:
    # the body's angular velocity in space, A I^-1 Pi (twin: space_omega)
    cdef double W[3]
    matvec3(m.Iinv, S.Pi, W)
    matvec3(S.A, W, omega)


cdef inline void tangential(const double* u, const double* n, double* out) noexcept nogil:
    cdef double un = dot3(n, u)
    cdef int i
    for i in range(3):
        out[i] = u[i] - un * n[i]


cdef bint slipping(ModesModel m, const State* S, double* u_t) noexcept:
    # whether the contact point's tangential velocity u_t has a direction (twin: slipping)
    cdef double u[3]
    cdef double w[3]
    cdef double size, speed
    contact_velocity(m, S, S.s, u)
    tangential(u, S.n, u_t)
    size = norm3(u_t)
    matvec3(m.Iinv, S.Pi, w)
    speed = norm3(S.p) / m.mass + norm3(w) * norm3(S.s)
    return size > SLIP_FLOOR * speed and size > 0.0


cdef void slip_direction(ModesModel m, const State* S, double* t) noexcept:
    # the unit slip direction of a sliding state (twin: slip_direction)
    cdef double u_t[3]
    cdef double size
    cdef int i
    cdef bint slips = slipping(m, S, u_t)
    size = norm3(u_t)
    for i in range(3):
        t[i] = u_t[i] / size if slips else S.slip[i]


cdef struct SlideProblem:
    # (xi, N) of a sliding step (twin: sliding_step)
    PyObject* shape
    PyObject* ground
    const double* I
    const State* st
    double h
    double mass
    int map_code
    double newton_tol
    int max_newton
    double d_k[3]
    double kick_dir[3]
    double kick_const[3]  # h/2 tau_k of the applied forces
    double p_start[3]     # p + h/2 f_k
    double weight[3]
    double c2
    int chart
    double z[2]
    double A1[9]
    Contact c1


cdef void slide_pose(SlideProblem* P, const double* x, double* A1, double* a1) noexcept nogil:
    cdef double Q[9]
    cdef int i
    retract(x, P.map_code, Q)
    matmul3(P.st.A, Q, A1)
    for i in range(3):
        a1[i] = P.st.a[i] + (P.h / P.mass) * (P.p_start[i] + 0.5 * P.h * (
            x[3] * P.d_k[i] - P.weight[i]))


cdef int slide_residual(void* problem, double* x, double* E, double* E_scale) noexcept nogil:
    cdef SlideProblem* P = <SlideProblem*>problem
    cdef double a1[3]
    cdef double M[3]
    cdef double G[3]
    cdef double kick[3]
    cdef double momentum, gap
    cdef int i, st
    slide_pose(P, x, P.A1, a1)
    st = contact(<ConvexShape>P.shape, <ChartSurface>P.ground, P.A1, a1, P.chart, P.z,
                 P.newton_tol, P.max_newton, &P.c1)
    if st:
        return st
    P.chart = P.c1.chart
    P.z[0] = P.c1.z[0]
    P.z[1] = P.c1.z[1]
    momentum_minus(x, P.I, P.h, P.map_code, M, G)
    for i in range(3):
        kick[i] = P.kick_dir[i] * x[3] + P.kick_const[i]
        E[i] = G[i] - P.st.Pi[i] - kick[i]
    E[3] = P.c1.gap
    momentum = max_abs(G, 3) + max_abs(P.st.Pi, 3) + max_abs(kick, 3)
    gap = max_abs(P.c1.x, 3) + max_abs(P.c1.s, 3)
    for i in range(3):
        E_scale[i] = momentum
    E_scale[3] = gap
    return OK


cdef int slide_jacobian(void* problem, const double* x, double* jac) noexcept nogil:
    cdef SlideProblem* P = <SlideProblem*>problem
    cdef double D[9]
    cdef double Jr[9]
    cdef double An[3]
    cdef double row[3]
    cdef int i, j
    momentum_minus_jacobian(x, P.I, P.h, P.map_code, D)
    for i in range(3):
        for j in range(3):
            jac[4 * i + j] = D[3 * i + j]
        jac[4 * i + 3] = -P.kick_dir[i]
    matTvec3(P.A1, P.c1.n, An)
    cross3(P.c1.s, An, row)
    jac_right(x, P.map_code, Jr)
    for j in range(3):
        jac[12 + j] = row[0] * Jr[j] + row[1] * Jr[3 + j] + row[2] * Jr[6 + j]
    jac[15] = P.c2 * dot3(P.c1.n, P.d_k)
    return OK


cdef int sliding_step(ModesModel m, double h, State* S, Contact* c) noexcept:
    # one sliding step from *S (twin: sliding_step)
    cdef SlideProblem P
    cdef NewtonRule rule
    cdef double t_k[3]
    cdef double At_d[3]
    cdef double x[4]
    cdef double floor[4]
    cdef double A1[9]
    cdef double a1[3]
    cdef double p_half[3]
    cdef double pi_end[3]
    cdef double w[3]
    cdef double d1[3]
    cdef double t1[3]
    cdef double u1[3]
    cdef double u_k[3]
    cdef double v3[3]
    cdef double v4[3]
    cdef double rolling_row[3]
    cdef double power_start[2]
    cdef double u_free[3]
    cdef double K[9]
    cdef EndKick k
    cdef double Pi1[3]
    cdef double p1[3]
    cdef double N, N0, N1 = 0.0, work
    cdef int i, st
    slip_direction(m, S, t_k)
    for i in range(3):
        P.d_k[i] = S.n[i] - m.mu * t_k[i]
        P.weight[i] = m.weight[i]
        P.p_start[i] = S.p[i]
        P.kick_const[i] = 0.0
        rolling_row[i] = 0.0
    matTvec3(S.A, P.d_k, At_d)
    cross3(S.s, At_d, P.kick_dir)
    if m.forced:  # the applied forces' first half kick; rolling resistance per newton of N
        start_wrench(m.forces, h, m.mass, m.Iinv, S, P.p_start, P.kick_const, rolling_row,
                     power_start)
    for i in range(3):
        P.kick_dir[i] = 0.5 * h * P.kick_dir[i] + 0.5 * h * rolling_row[i]
    P.shape = <PyObject*>m.shape
    P.ground = <PyObject*>m.ground
    P.I = m.I
    P.st = S
    P.h = h
    P.mass = m.mass
    P.map_code = m.map_code
    P.newton_tol = m.newton_tol
    P.max_newton = m.max_newton
    P.c2 = h * h / (2 * m.mass)
    P.chart = S.chart
    P.z[0] = S.z[0]
    P.z[1] = S.z[1]
    matvec3(m.Iinv, S.Pi, w)
    for i in range(3):
        x[i] = h * w[i]
    N0 = m.mass * m.gravity * fabs(dot3(S.n, m.up))  # (the twin's: not the last step's)
    x[3] = N0
    for i in range(3):
        floor[i] = norm3(x) + 1e-15 * fabs(h) / m.newton_tol
    floor[3] = fabs(N0) + m.mass * m.gravity
    rule.correction_tol = m.newton_tol
    rule.residual_tol = ROUNDOFF
    rule.max_iter = m.max_newton
    st = newton_solve(slide_residual, slide_jacobian, &P, 4, x, floor, rule)
    if st == OK and m.map_code == 0 and norm3(x) >= M_PI:
        st = FAR_BRANCH
    if st:
        return st
    N = x[3]
    slide_pose(&P, x, A1, a1)
    reorthonormalize(A1)
    for i in range(3):
        p_half[i] = P.p_start[i] + 0.5 * h * (N * P.d_k[i] - P.weight[i])
        a1[i] = S.a[i] + (h / m.mass) * p_half[i]
    st = contact(m.shape, m.ground, A1, a1, P.chart, P.z, m.newton_tol, m.max_newton, c)
    if st:
        return st
    momentum_plus(x, m.I, h, m.map_code, pi_end)
    # the end kick: N' and the slip direction it leaves (twin: end_slip)
    work = S.work
    if not m.forced:
        slide_kick_terms(m, h, A1, c.s, p_half, pi_end, NULL, u_free, K)
        S.slip_kept = not end_slip(m, h, u_free, K, c.n, t_k, NULL, False, t1, &N1, u1)
        for i in range(3):
            d1[i] = c.n[i] - m.mu * t1[i]
        matTvec3(A1, d1, v3)
        cross3(c.s, v3, v4)
        for i in range(3):
            Pi1[i] = pi_end[i] + 0.5 * h * N1 * v4[i]
            p1[i] = p_half[i] + 0.5 * h * (N1 * d1[i] - P.weight[i])
    else:
        st = forced_end_slip(m, h, S, A1, a1, c, N, p_half, pi_end, t_k, t1, &N1,
                             &S.slip_kept, &k)
        if st:
            return st
        for i in range(3):
            d1[i] = c.n[i] - m.mu * t1[i]
            Pi1[i] = k.Pi[i]
            p1[i] = k.p[i]
        work = work + 0.5 * h * (power_start[0] + power_start[1] * N + k.power)
    contact_velocity(m, S, S.s, u_k)
    for i in range(9):
        S.A[i] = A1[i]
    for i in range(3):
        S.a[i] = a1[i]
        S.Pi[i] = Pi1[i]
        S.p[i] = p1[i]
        S.s[i] = c.s[i]
        S.n[i] = c.n[i]
        S.slip[i] = t1[i]
    S.chart = c.chart
    S.z[0] = c.z[0]
    S.z[1] = c.z[1]
    S.t += h
    S.normal_force = 0.5 * (N + N1)
    contact_velocity(m, S, S.s, u1)
    S.work = work + 0.5 * h * (N * dot3(P.d_k, u_k) + N1 * dot3(d1, u1))
    return OK


cdef void slide_kick_terms(ModesModel m, double h, const double* A1, const double* s1,
                           const double* p_half, const double* pi_end, const EndKick* k,
                           double* u_free, double* K) noexcept:
    # u_free (3) and K (3 x 3) of a sliding step's end kick, u_1 = u_free + h/2 K F'; with
    # no force elements (k NULL) K is the contact's inverse mass (twin: slide_kick_terms)
    cdef double Sh[9]
    cdef double T1[9]
    cdef double T2[9]
    cdef double T3[9]
    cdef double w3[3]
    cdef double ws[3]
    cdef double v3[3]
    cdef double y[3]
    cdef double scale = (1.0 if k == NULL else k.alpha) / m.mass
    cdef int i, j
    hat3(s1, Sh)
    matmul3(A1, Sh, T1)
    matmul3(T1, m.Iinv if k == NULL else k.G, T2)
    matmul3(T2, Sh, T3)
    for i in range(3):
        for j in range(3):
            K[3 * i + j] = -(T3[3 * i] * A1[3 * j] + T3[3 * i + 1] * A1[3 * j + 1]
                             + T3[3 * i + 2] * A1[3 * j + 2])
        K[4 * i] += scale
    if k == NULL:
        matvec3(m.Iinv, pi_end, w3)
    else:
        for i in range(3):
            y[i] = pi_end[i] + 0.5 * h * k.tau_c[i]
        matvec3(k.G, y, w3)
    cross3(w3, s1, ws)
    matvec3(A1, ws, v3)
    for i in range(3):
        if k == NULL:
            u_free[i] = p_half[i] / m.mass - 0.5 * h * m.gravity * m.up[i] + v3[i]
        else:
            u_free[i] = scale * (p_half[i] + 0.5 * h * (k.f_c[i] - m.weight[i])) + v3[i]


cdef int forced_end_slip(ModesModel m, double h, const State* S, const double* A1,
                         const double* a1, const Contact* c, double N, const double* p_half,
                         const double* pi_end, const double* t_k, double* t1, double* N1,
                         bint* kept, EndKick* k) noexcept:
    # the sliding step's end kick with applied forces, N' settled through rolling
    # resistance's damping; k gets the end's Pi, p and power (twin: forced_end_slip)
    cdef double u_free[3]
    cdef double K[9]
    cdef double u1[3]
    cdef double d1[3]
    cdef double v3[3]
    cdef double v4[3]
    cdef double y[3]
    cdef double normal = N, last_change = INFINITY
    cdef int verdict
    cdef double scale_floor = norm3(m.weight)
    cdef double t_start[3]
    cdef bint settled = False, found, fixed = False, warm = False
    cdef int i, sweep, st
    for sweep in range(ROLLING_SWEEPS):
        st = end_wrench(m, h, S.t + h, A1, a1, c.n, normal, k)
        if st:
            return st
        slide_kick_terms(m, h, A1, c.s, p_half, pi_end, k, u_free, K)
        found = end_slip(m, h, u_free, K, c.n, t_k, &t_start[0] if warm else NULL, fixed, t1, N1,
                         u1)
        # the first solve chooses the branch for the sweeps after it (twin: forced_end_slip)
        if sweep == 0:
            fixed = not found
        elif found == fixed:  # a later solve left the branch: no settled N'
            return NOT_CONVERGED
        warm = found
        if found:
            for i in range(3):
                t_start[i] = t1[i]
        if not isfinite(N1[0]):
            return NOT_FINITE
        if m.forces.rolling == 0.0:
            settled = True
            break
        verdict = normal_sweep(N1[0], normal, &last_change, scale_floor)
        if verdict == SWEEP_SETTLED:
            settled = True
            break
        if verdict == SWEEP_DIVERGED:
            return NOT_CONVERGED
        normal = N1[0]
    if not settled:
        return NOT_CONVERGED
    kept[0] = not found
    for i in range(3):
        d1[i] = c.n[i] - m.mu * t1[i]
    matTvec3(A1, d1, v3)
    cross3(c.s, v3, v4)
    for i in range(3):
        y[i] = pi_end[i] + 0.5 * h * (N1[0] * v4[i] + k.tau_c[i])
        k.p[i] = k.alpha * (p_half[i] + 0.5 * h * (N1[0] * d1[i] - m.weight[i] + k.f_c[i]))
    matvec3(k.Binv, y, k.Pi)
    end_power(m, k)
    return OK


cdef inline double slip_normal_force(double c_n, double h, double a_nn, double mu,
                                     const double* b, const double* t) noexcept nogil:
    return -c_n / (0.5 * h * (a_nn - mu * dot3(b, t)))


cdef bint end_slip(ModesModel m, double h, const double* u_free, const double* K,
                   const double* n1, const double* t_k, const double* t_start, bint fixed,
                   double* t1, double* N1, double* u1) noexcept:
    # the sliding step's end kick: the slip direction t1, the normal force N1 and the contact
    # point's velocity u1 at the end, from slide_kick_terms' u_free and K; whether a slip
    # along t_k was found; t_start (or NULL) the Newton's start, and with fixed the start's
    # direction kept without a solve (twin: end_slip)
    cdef double v3[3]
    cdef double b[3]
    cdef double T[6]
    cdef double t0[3]
    cdef double t[3]
    cdef double d[3]
    cdef double Kd[3]
    cdef double dN[3]
    cdef double du[9]
    cdef double P[9]
    cdef double G[6]
    cdef double jac[4]
    cdef double w[2]
    cdef double r[2]
    cdef double a_nn, c_n, size, dmax, wmax, umax, N
    cdef int i, j, k, it
    cdef bint found = False
    matvec3(K, n1, b)
    a_nn = dot3(n1, b)
    c_n = dot3(n1, u_free)
    tangent_basis(n1, T)
    tangential(t_k, n1, t0)
    size = norm3(t0)
    for i in range(3):
        t0[i] = t0[i] / size
    # u1 at the Newton's start, and the slip w = T^T u1: t0, or backward (h < 0) u_free's
    # tangential direction signed along t0, the branch that keeps the slip's sense (twin)
    for i in range(3):
        t[i] = t0[i]
    if t_start != NULL:
        for i in range(3):
            t[i] = t_start[i]
    elif h < 0.0:
        tangential(u_free, n1, v3)
        size = norm3(v3)
        if size > 0.0:
            if dot3(v3, t0) < 0.0:
                size = -size
            for i in range(3):
                t[i] = v3[i] / size
    N = slip_normal_force(c_n, h, a_nn, m.mu, b, t)
    for i in range(3):
        d[i] = n1[i] - m.mu * t[i]
    matvec3(K, d, Kd)
    for i in range(3):
        u1[i] = u_free[i] + (0.5 * h * N) * Kd[i]
    for k in range(2):
        w[k] = T[k] * u1[0] + T[2 + k] * u1[1] + T[4 + k] * u1[2]
    size = 0.0
    for it in range(0 if fixed else SLIDE_SWEEPS):
        size = sqrt(w[0] * w[0] + w[1] * w[1])
        if not size > 0.0:
            break
        for i in range(3):
            t[i] = (T[2 * i] * w[0] + T[2 * i + 1] * w[1]) / size
        N = slip_normal_force(c_n, h, a_nn, m.mu, b, t)
        for i in range(3):
            d[i] = n1[i] - m.mu * t[i]
        matvec3(K, d, Kd)
        for i in range(3):
            u1[i] = u_free[i] + (0.5 * h * N) * Kd[i]
        for k in range(2):
            r[k] = -(w[k] - (T[k] * u1[0] + T[2 + k] * u1[1] + T[4 + k] * u1[2]))
        # du/dt = h/2 (K d dN^T - mu N K), dN/dt = N mu b / (a_nn - mu b . t)
        for i in range(3):
            dN[i] = (N * m.mu / (a_nn - m.mu * dot3(b, t))) * b[i]
        for i in range(3):
            for j in range(3):
                du[3 * i + j] = 0.5 * h * (Kd[i] * dN[j] - m.mu * N * K[3 * i + j])
        # P = (I - t t^T) T / size (3 x 2), G = du P (3 x 2), jac = I - T^T G
        for i in range(3):
            for k in range(2):
                P[2 * i + k] = (T[2 * i + k] - t[i] * (t[0] * T[k] + t[1] * T[2 + k]
                                                      + t[2] * T[4 + k])) / size
        for i in range(3):
            for k in range(2):
                G[2 * i + k] = (du[3 * i] * P[k] + du[3 * i + 1] * P[2 + k]
                                + du[3 * i + 2] * P[4 + k])
        for j in range(2):
            for k in range(2):
                jac[2 * j + k] = (1.0 if j == k else 0.0) - (
                    T[j] * G[k] + T[2 + j] * G[2 + k] + T[4 + j] * G[4 + k])
        if not solve_small(2, jac, r):
            break
        w[0] += r[0]
        w[1] += r[1]
        dmax = fabs(r[0]) if fabs(r[0]) > fabs(r[1]) else fabs(r[1])
        wmax = fabs(w[0]) if fabs(w[0]) > fabs(w[1]) else fabs(w[1])
        umax = max_abs(u_free, 3)
        if dmax <= SLIDE_TOL * (wmax if wmax > umax else umax):
            size = sqrt(w[0] * w[0] + w[1] * w[1])
            if size > 0.0:
                for i in range(3):
                    t[i] = (T[2 * i] * w[0] + T[2 * i + 1] * w[1]) / size
                found = dot3(t, t0) > 0.0
            break
    for i in range(3):
        t1[i] = t[i] if found else t0[i]
    N1[0] = slip_normal_force(c_n, h, a_nn, m.mu, b, t1)
    for i in range(3):
        d[i] = n1[i] - m.mu * t1[i]
    matvec3(K, d, Kd)
    for i in range(3):
        u1[i] = u_free[i] + (0.5 * h * N1[0]) * Kd[i]
    return found


cdef int composed_step(ModesModel m, int mode, State* S, double h, Contact* c) noexcept:
    # a whole step of size h in mode: the sub-steps h * substeps one after another (sliding:
    # slide_substeps, from a slip with a direction of its own)
    cdef Py_ssize_t j
    cdef double size
    cdef double w[3]
    cdef double ref[3]
    cdef int i, st
    cdef Py_ssize_t n_sub = m.n_sub
    cdef const double* fractions = m.substeps
    cdef bint armed = False
    cdef bint basic = mode == MODE_FACE or mode == MODE_SIDE or mode == MODE_SIDE_SLIDING
    cdef State begin
    if mode == MODE_SLIDING:
        slip_direction(m, S, ref)
        armed = slipping(m, S, w)
        basic = not armed
        fractions, n_sub = m.slide_substeps, m.n_slide
        begin = S[0]
    if basic:  # the basic step (twin: composed_step)
        n_sub = 1
    j = 0
    while j < n_sub:
        size = h * (1.0 if basic else fractions[j])
        if mode == MODE_FACE:
            st = face_step(m, size, S, c)
        elif mode == MODE_SIDE:
            st = side_roll_step(m, size, S, c)
        elif mode == MODE_SIDE_SLIDING:
            st = side_slide_step(m, size, S, c)
        elif mode == MODE_FLIGHT:
            st = flight_step(m, size, S, c)
        elif mode == MODE_SLIDING:
            st = sliding_step(m, size, S, c)
        else:
            matvec3(m.Iinv, S.Pi, w)
            for i in range(3):
                S.xi[i] = size * w[i]
            S.has_guess = False
            st = rolling_step(m.shape, m.ground, m.motion, m.forces, m.mass, m.I, m.Iinv,
                              m.gravity, m.up, size, m.map_code, m.newton_tol, m.max_newton,
                              S, c, m.options & ~EXTRAPOLATE)
        if st:
            return st
        if mode == MODE_SLIDING and not basic and j < n_sub - 1 and S.slip_kept:
            # the slip stops inside the step before its last sub-step: the basic step instead
            S[0] = begin
            basic, n_sub, j = True, 1, 0
            continue
        j += 1
    if mode == MODE_SLIDING:
        for i in range(3):
            S.slip_ref[i] = ref[i]
        S.slip_armed = armed
    return OK



# -- a disk lying flat (twins: nhphys.twins.face and the "Lying flat" part of nhphys.twins.modes)

cdef inline void plane_basis(const double* n, double* e1, double* e2) noexcept nogil:
    # (e1, e2, n) right-handed (twin: face.plane_basis)
    cdef double e[3]
    cdef double size
    cdef int i, k = 0
    for i in range(1, 3):
        if fabs(n[i]) < fabs(n[k]):
            k = i
    e[0] = e[1] = e[2] = 0.0
    e[k] = 1.0
    cross3(n, e, e1)
    size = norm3(e1)
    for i in range(3):
        e1[i] = e1[i] / size
    cross3(n, e1, e2)


cdef void face_integrals(double c0, double c1, double R, double* G, double* H) noexcept nogil:
    # G (2) and H of the instantaneous centre c (twin: face.face_integrals)
    cdef double size = sqrt(c0 * c0 + c1 * c1)
    cdef double weight = 2.0 * M_PI / FACE_POINTS
    cdef double angle, e0, e1, ce, sm, k, sin_psi, cos_psi, cos_beta, t0, t1, s0, s1, ca, sa
    cdef int j
    G[0] = G[1] = H[0] = 0.0
    if size < R:
        t0, t1 = (c0 / size, c1 / size) if size > 0.0 else (1.0, 0.0)  # angles from c
        for j in range(FACE_POINTS):
            angle = 2.0 * M_PI * j / FACE_POINTS
            ca = cos(angle)
            sa = sin(angle)
            e0 = t0 * ca - t1 * sa
            e1 = t1 * ca + t0 * sa
            ce = c0 * e0 + c1 * e1
            sm = -ce + sqrt(R * R - size * size + ce * ce)
            G[0] += e0 * 0.5 * sm * sm
            G[1] += e1 * 0.5 * sm * sm
            H[0] += ce * 0.5 * sm * sm + sm * sm * sm / 3.0
        G[0] *= weight
        G[1] *= weight
        H[0] *= weight
        return
    t0, t1 = -c0 / size, -c1 / size  # towards the disk
    s0, s1 = -t1, t0
    k = R / size
    for j in range(FACE_POINTS):
        angle = 2.0 * M_PI * j / FACE_POINTS
        sin_psi = k * sin(angle)
        cos_beta = cos(angle)
        cos_psi = sqrt((1.0 - k) * (1.0 + k) + (k * cos_beta) * (k * cos_beta))
        G[0] += (t0 * cos_psi + s0 * sin_psi) * 2.0 * R * R * cos_beta * cos_beta
        G[1] += (t1 * cos_psi + s1 * sin_psi) * 2.0 * R * R * cos_beta * cos_beta
        H[0] += (2.0 / 3.0) * R * R * R * R * cos_beta * cos_beta * cos_beta * cos_beta / (
            size * cos_psi)
    G[0] *= 0.5 * weight
    G[1] *= 0.5 * weight
    H[0] *= 0.5 * weight


cdef bint translation_friction(const double* v, double w, double R, double limit,
                               const double* hint, double* F, double* T) noexcept nogil:
    # F, T = 0 of a face or ring whose motion is a translation, and True; False for any other
    # motion (twin: face.translation_friction; hint NULL: none)
    cdef double speed = norm3(v)
    cdef int i
    if not (w == 0.0 or speed > TRANSLATION_LIMIT * R * fabs(w)):
        return False
    T[0] = 0.0
    for i in range(3):
        if speed > 0.0:
            F[i] = -limit * v[i] / speed
        elif hint != NULL:
            F[i] = -limit * hint[i]
        else:
            F[i] = 0.0
    return True


cdef void face_friction(const double* v, double w, const double* n, double R, double N,
                        double mu, const double* hint, double* F, double* T) noexcept nogil:
    # the friction force F (3) and torque T on a face sliding on a plane (twin: face_friction;
    # hint NULL: none)
    cdef double limit = mu * N, scale
    cdef double e1[3]
    cdef double e2[3]
    cdef double G[2]
    cdef double G3[3]
    cdef double c0, c1
    cdef int i
    if translation_friction(v, w, R, limit, hint, F, T):
        return
    plane_basis(n, e1, e2)
    c0 = -dot3(v, e2) / w
    c1 = dot3(v, e1) / w
    face_integrals(c0, c1, R, G, T)
    scale = -limit / (M_PI * R * R) * (1.0 if w > 0.0 else -1.0)
    for i in range(3):
        G3[i] = G[0] * e1[i] + G[1] * e2[i]
    cross3(n, G3, F)
    for i in range(3):
        F[i] = scale * F[i]
    T[0] = scale * T[0]


def face_friction_py(v, double w, n, double radius, double normal_force, double mu, hint=None):
    """The face friction ``(F (3,), T)`` (for the tests; see the twin
    :func:`nhphys.twins.face.face_friction`)."""
    return _plane_friction_py(False, v, w, n, radius, normal_force, mu, hint)


def _plane_friction_py(bint ring, v, double w, n, double radius, double normal_force,
                       double mu, hint):
    # a face's or a ring's friction on Python sequences
    cdef double vv[3]
    cdef double nn[3]
    cdef double hh[3]
    cdef double F[3]
    cdef double T
    cdef int i
    for i in range(3):
        vv[i] = v[i]
        nn[i] = n[i]
        hh[i] = hint[i] if hint is not None else 0.0
    if ring:
        ring_friction(vv, w, nn, radius, normal_force, mu, hh if hint is not None else NULL, F,
                      &T)
    else:
        face_friction(vv, w, nn, radius, normal_force, mu, hh if hint is not None else NULL, F,
                      &T)
    return (F[0], F[1], F[2]), T


DEF RING_POINTS = 64  # the twin's (nhphys.twins.face, "A ring")
DEF RING_CLOSED_LOW = 0.5
DEF RING_CLOSED_HIGH = 2.0


cdef void elliptic_ke(double k_prime, double* K, double* E) noexcept nogil:
    # the complete elliptic integrals K, E of the modulus sqrt(1 - k'^2), by the arithmetic-
    # geometric mean (twin: face.elliptic_ke)
    cdef double a = 1.0, b = k_prime, c, a1
    cdef double total = 1.0 - 0.5 * (1.0 - k_prime * k_prime), power = 0.5
    cdef int it
    for it in range(40):
        c = 0.5 * (a - b)
        a1 = 0.5 * (a + b)
        b = sqrt(a * b)
        a = a1
        power *= 2.0
        total -= power * c * c
        if fabs(c) <= 1e-17 * a:
            break
    K[0] = M_PI / (2.0 * a)
    E[0] = K[0] * total


cdef void ring_integrals(double rho, double R, double* G, double* H) noexcept nogil:
    # G and H of a ring for the instantaneous centre at rho from its centre (twin)
    cdef double K, E, K_term, phi, cs, D, weight
    cdef int i
    if RING_CLOSED_LOW * R <= rho <= RING_CLOSED_HIGH * R:
        if rho == R:
            K_term = 0.0
            E = 1.0
        else:
            elliptic_ke(fabs(R - rho) / (R + rho), &K, &E)
            K_term = (R - rho) * K
        G[0] = 2.0 * (K_term - (R + rho) * E) / rho
        H[0] = 2.0 * (K_term + (R + rho) * E)
        return
    weight = 2.0 * M_PI / RING_POINTS
    G[0] = 0.0
    H[0] = 0.0
    for i in range(RING_POINTS):
        phi = 2.0 * M_PI * i / RING_POINTS
        cs = cos(phi)
        D = sqrt((R - rho) * (R - rho) + 2.0 * R * rho * (1.0 - cs))
        G[0] += (R * cs - rho) / D
        H[0] += R * (R - rho * cs) / D
    G[0] = weight * G[0]
    H[0] = weight * H[0]


cdef void ring_friction(const double* v, double w, const double* n, double R, double N,
                        double mu, const double* hint, double* F, double* T) noexcept nogil:
    # the friction force F (3) and torque T on a ring sliding on a plane (twin: ring_friction;
    # hint NULL: none)
    cdef double limit = mu * N, scale, rho, G, H
    cdef double c[3]
    cdef double along[3]
    cdef int i
    if translation_friction(v, w, R, limit, hint, F, T):
        return
    cross3(n, v, c)
    for i in range(3):
        c[i] = c[i] / w
    rho = norm3(c)
    ring_integrals(rho, R, &G, &H)
    scale = -limit / (2.0 * M_PI) * (1.0 if w > 0.0 else -1.0)
    for i in range(3):
        along[i] = c[i] / rho if rho > 0.0 else 0.0
    cross3(n, along, F)
    for i in range(3):
        F[i] = scale * G * F[i]
    T[0] = scale * H


def ring_friction_py(v, double w, n, double radius, double normal_force, double mu, hint=None):
    """The ring friction ``(F (3,), T)`` (for the tests; see the twin
    :func:`nhphys.twins.face.ring_friction`)."""
    return _plane_friction_py(True, v, w, n, radius, normal_force, mu, hint)


cdef struct FaceLoad:
    # what acts on a disk lying flat besides its face's friction (twin: FaceLoad)
    double N
    double g_t[3]
    double tau_n
    double f_np[3]
    double tau_np


cdef void face_load(ModesModel m, double t, const double* A, const double* a, const double* n,
                    const double* v, double w, FaceLoad* L) noexcept:
    # the load at time t, pose (A, a) and velocities (v, w) (twin: face_state)
    cdef double f_pot[3]
    cdef double tau_pot[3]
    cdef double f_app[3]
    cdef double tau_app[3]
    cdef double D[9]
    cdef double An[3]
    cdef double omega[3]
    cdef double Dw[3]
    cdef double f[3]
    cdef double tau[3]
    cdef double q[3]
    cdef double un = dot3(m.up, n)
    cdef double drag, fn
    cdef int i
    L.N = m.mass * m.gravity * un
    for i in range(3):
        L.g_t[i] = -m.gravity * (m.up[i] - un * n[i])
        L.f_np[i] = 0.0
    L.tau_n = L.tau_np = 0.0
    if not m.forced:
        return
    matTvec3(A, n, An)
    for i in range(3):
        omega[i] = w * An[i]
    drag = m.forces.wrench(t, A, a, n, f_pot, tau_pot, f_app, tau_app, D)
    matvec3(D, omega, Dw)
    for i in range(3):
        L.f_np[i] = f_app[i] - drag * v[i]
        f[i] = f_pot[i] + L.f_np[i]
        tau[i] = tau_app[i] - Dw[i]
    fn = dot3(n, f)
    L.N = max(L.N - fn, 0.0)
    for i in range(3):
        L.g_t[i] = L.g_t[i] + (f[i] - fn * n[i]) / m.mass
    matvec3(A, tau, q)
    L.tau_np = dot3(n, q)
    for i in range(3):
        tau[i] = tau_pot[i] + tau[i]
    matvec3(A, tau, q)
    L.tau_n = dot3(n, q)


cdef void face_state(ModesModel m, const State* S, double* v, double* w,
                     FaceLoad* L) noexcept:
    # (v, w, load) of a disk lying flat (twin: face_state)
    cdef double AW[3]
    cdef int i
    space_omega(m, S, AW)
    w[0] = dot3(S.n, AW)
    for i in range(3):
        v[i] = S.p[i] / m.mass
    face_load(m, S.t, S.A, S.a, S.n, v, w[0], L)


cdef bint face_holds(ModesModel m, const State* S) noexcept:
    # static friction holds a disk lying flat at rest (twin: face_holds)
    cdef double v[3]
    cdef double w, limit
    cdef FaceLoad L
    face_state(m, S, v, &w, &L)
    limit = m.mu * L.N
    return (m.mass * norm3(L.g_t) <= limit
            and fabs(L.tau_n) <= m.face_torque * m.face_radius * limit)


cdef void face_rates(ModesModel m, const double* v, double w, const double* n,
                     const FaceLoad* L, double* dv, double* dw, double* F,
                     double* T) noexcept:
    # (dv/dt, dw/dt, F, T) of a disk sliding on its face (twin: face_rates)
    cdef double hint[3]
    cdef double size = norm3(L.g_t)
    cdef int i
    cdef bint at_rest = v[0] == 0.0 and v[1] == 0.0 and v[2] == 0.0 and w == 0.0
    cdef bint slides = m.mass * size > m.mu * L.N
    for i in range(3):
        hint[i] = L.g_t[i] / size if size > 0.0 else 0.0
    if at_rest and not slides and L.tau_n != 0.0:
        # from rest, held against sliding but not against the torque: it starts to spin
        # (twin: face_rates)
        for i in range(3):
            F[i] = -m.mass * L.g_t[i]
        T[0] = (-1.0 if L.tau_n > 0.0 else 1.0) * m.face_torque * (m.face_radius * m.mu * L.N)
    elif m.face_ring:
        ring_friction(v, w, n, m.face_radius, L.N, m.mu,
                      hint if (at_rest and slides) else NULL, F, T)
    else:
        face_friction(v, w, n, m.face_radius, L.N, m.mu,
                      hint if (at_rest and slides) else NULL, F, T)
    for i in range(3):
        dv[i] = F[i] / m.mass + L.g_t[i]
    dw[0] = (T[0] + L.tau_n) / m.face_inertia


cdef inline void face_centre(ModesModel m, const double* A, const double* n,
                             double* s) noexcept:
    # the centre of the face a body lies on, from its centre of mass (twin: face_centre)
    cdef double down = -(A[2] * n[0] + A[5] * n[1] + A[8] * n[2])
    s[0] = s[1] = 0.0
    s[2] = m.face_offset if down > 0.0 else -m.face_offset


cdef void face_contact(ModesModel m, const State* S, Contact* c) noexcept:
    # the frame's contact of a disk lying flat (twin: face_contact)
    cdef double s[3]
    face_centre(m, S.A, S.n, s)
    plane_contact(m, S, s, c)


cdef void plane_contact(ModesModel m, const State* S, const double* s, Contact* c) noexcept:
    # the contact of a body lying on a plane at its body point s (twin: plane_contact)
    cdef double x[3]
    cdef double J[6]
    cdef double H[12]
    cdef double nn[3]
    cdef double W[4]
    cdef double P[3]
    cdef int i
    ground_geometry(m.ground, S.chart, S.z, x, J, H, nn, W)
    for i in range(3):
        c.s[i] = s[i]
    matvec3(S.A, c.s, P)
    for i in range(3):
        P[i] += S.a[i]
    c.chart = S.chart
    c.z[0] = S.z[0]
    c.z[1] = S.z[1]
    c.gap = dot3(S.n, P) - dot3(S.n, x)
    matTvec3(S.A, S.n, c.n_M)
    for i in range(3):
        c.n[i] = S.n[i]
        c.x[i] = P[i] - c.gap * S.n[i]
    for i in range(9):
        c.Sp[i] = 0.0


cdef int face_step(ModesModel m, double h, State* S, Contact* c) noexcept:
    # one step of a disk lying flat (twin: face_step)
    cdef double v0[3]
    cdef double dv0[3]
    cdef double dv1[3]
    cdef double F0[3]
    cdef double F1[3]
    cdef double vp[3]
    cdef double v1[3]
    cdef double xi[3]
    cdef double Q[9]
    cdef double A1[9]
    cdef double An[3]
    cdef double Om[3]
    cdef double w0, dw0, dw1, T0, T1, wp, w1, sign, angle
    cdef double ap[3]
    cdef double Ap[9]
    cdef FaceLoad L0, L1
    cdef bint held
    cdef int i
    face_state(m, S, v0, &w0, &L0)
    held = (v0[0] == 0.0 and v0[1] == 0.0 and v0[2] == 0.0 and w0 == 0.0
            and face_holds(m, S))
    for i in range(3):
        S.face_v[i] = v0[i]
    S.face_w = w0
    S.t += h
    S.normal_force = L0.N
    if held:  # at rest, held by static friction
        face_contact(m, S, c)
        return OK
    face_rates(m, v0, w0, S.n, &L0, dv0, &dw0, F0, &T0)
    for i in range(3):
        vp[i] = v0[i] + h * dv0[i]
    wp = w0 + h * dw0
    sign = -1.0 if face_progress(m, vp, wp, v0, w0) < 0.0 else 1.0
    L1 = L0
    if m.forced:  # the applied forces at the predictor's time, pose and velocities
        for i in range(3):
            xi[i] = h * w0 * S.n[i]
            ap[i] = S.a[i] + h * v0[i]
        exp3(xi, Q)
        matmul3(Q, S.A, Ap)
        face_load(m, S.t, Ap, ap, S.n, vp, wp, &L1)
    for i in range(3):
        vp[i] = sign * vp[i]
    wp = sign * wp
    if vp[0] == 0.0 and vp[1] == 0.0 and vp[2] == 0.0 and wp == 0.0:
        # the predictor stops exactly: the friction just before (twin: face_step)
        for i in range(3):
            vp[i] = v0[i]
        wp = w0
    face_rates(m, vp, wp, S.n, &L1, dv1, &dw1, F1, &T1)
    for i in range(3):
        v1[i] = v0[i] + 0.5 * h * (dv0[i] + dv1[i])
    w1 = w0 + 0.5 * h * (dw0 + dw1)
    angle = 0.5 * h * (w0 + w1)
    for i in range(3):
        xi[i] = angle * S.n[i]
    exp3(xi, Q)
    matmul3(Q, S.A, A1)
    reorthonormalize(A1)
    S.work = S.work + 0.5 * h * (dot3(F0, v0) + T0 * w0 + dot3(L0.f_np, v0) + L0.tau_np * w0
                                 + dot3(F1, v1) + T1 * w1 + dot3(L1.f_np, v1) + L1.tau_np * w1)
    for i in range(9):
        S.A[i] = A1[i]
    matTvec3(A1, S.n, An)
    for i in range(3):
        S.a[i] = S.a[i] + 0.5 * h * (v0[i] + v1[i])
        S.p[i] = m.mass * v1[i]
        Om[i] = w1 * An[i]
    matvec3(m.I, Om, S.Pi)
    face_contact(m, S, c)
    return OK


cdef void flat_flight_contact(ModesModel m, const double* A, const double* a, int chart,
                              const double* z, Contact* c) noexcept:
    # the closest-approach pair of a disk in flight over a plane, flat included (twin)
    cdef double x0[3]
    cdef double J[6]
    cdef double H[12]
    cdef double n[3]
    cdef double W[4]
    cdef double d[3]
    cdef double As[3]
    cdef double P[3]
    cdef double diff[3]
    cdef double perp, size
    cdef int i
    ground_geometry(m.ground, chart, z, x0, J, H, n, W)
    matTvec3(A, n, c.n_M)
    for i in range(3):
        d[i] = -c.n_M[i]
    perp = sqrt(d[0] * d[0] + d[1] * d[1])
    if perp > 0.0:
        c.s[0] = m.face_radius * d[0] / perp
        c.s[1] = m.face_radius * d[1] / perp
    else:
        c.s[0] = m.face_radius
        c.s[1] = 0.0
    if m.face_ring:  # a wheel's lowest point: its tube's (twin: lowest_point)
        size = norm3(d)
        c.s[2] = 0.0
        for i in range(3):
            c.s[i] = c.s[i] + m.face_offset * d[i] / size
    else:
        c.s[2] = m.face_offset if d[2] > 0.0 else -m.face_offset  # the rim of the lower end
    matvec3(A, c.s, As)
    for i in range(3):
        P[i] = a[i] + As[i]
        diff[i] = P[i] - x0[i]
    c.gap = dot3(n, diff)
    for i in range(3):
        c.x[i] = P[i] - c.gap * n[i]
        c.n[i] = n[i]
        diff[i] = c.x[i] - x0[i]
    for i in range(9):
        c.Sp[i] = 0.0
    c.chart = chart
    c.z[0] = z[0] + J[0] * diff[0] + J[2] * diff[1] + J[4] * diff[2]
    c.z[1] = z[1] + J[1] * diff[0] + J[3] * diff[1] + J[5] * diff[2]


cdef double face_progress(ModesModel m, const double* v, double w, const double* v0,
                          double w0) noexcept:
    # the larger of m v . v0 and I_a w w0 over the velocities that were moving (twin)
    # (a ring: their sum, twin: face_progress)
    cdef double g = -INFINITY, total = 0.0
    cdef double speed = norm3(v0), turn = m.face_radius * fabs(w0)
    cdef bint any_part = False
    if speed > FACE_FLOOR * (speed + turn):
        g = m.mass * dot3(v, v0)
        total = g
        any_part = True
    if turn > FACE_FLOOR * (speed + turn):
        g = max(g, m.face_inertia * w * w0)
        total = total + m.face_inertia * w * w0
        any_part = True
    if not any_part:
        return INFINITY
    return total if m.face_ring else g


cdef double face_guard(ModesModel m, const State* S) noexcept:
    # face_progress from the step's starting velocities (twin: face_guard)
    cdef double v[3]
    cdef double w
    cdef FaceLoad L
    face_state(m, S, v, &w, &L)
    return face_progress(m, v, w, S.face_v, S.face_w)


cdef bint lands_flat(ModesModel m, const State* S) noexcept:
    # a thin centred disk with its axis within twice its flat angle of n (twin: lands_flat)
    if m.face_radius <= 0.0:
        return False
    return fabs(S.A[2] * S.n[0] + S.A[5] * S.n[1] + S.A[8] * S.n[2]) >= cos(2.0 * m.flat_angle)


cdef void land_flat(ModesModel m, State* S, double* impulse, double* change) noexcept:
    # the landing of a disk falling flat (twin: land_flat)
    cdef double axis[3]
    cdef double Q[9]
    cdef double A1[9]
    cdef double As[3]
    cdef double a1[3]
    cdef double x[3]
    cdef double J[6]
    cdef double H[12]
    cdef double nn[3]
    cdef double W[4]
    cdef double Om[3]
    cdef double AOm[3]
    cdef double An[3]
    cdef double v1[3]
    cdef double s_face[3]
    cdef double before, after, sgn, off, vn, w1 = 0.0, p_n
    cdef int i
    for i in range(3):
        axis[i] = S.A[3 * i + 2]
    sgn = 1.0 if dot3(axis, S.n) >= 0.0 else -1.0
    for i in range(3):
        axis[i] = sgn * axis[i]
    smallest_rotation(axis, S.n, Q)
    turn_about_contact(S, Q, A1, a1)
    ground_geometry(m.ground, S.chart, S.z, x, J, H, nn, W)
    face_centre(m, A1, S.n, s_face)
    matvec3(A1, s_face, As)
    off = dot3(S.n, a1) + dot3(S.n, As) - dot3(S.n, x)
    for i in range(3):
        a1[i] = a1[i] - off * S.n[i]
    before = kinetic_energy(m, S) + potential_energy(m, S)
    vn = dot3(S.p, S.n) / m.mass
    space_omega(m, S, AOm)
    if isfinite(m.mu):  # the face slides on: its motion in the plane is kept
        for i in range(3):
            v1[i] = S.p[i] / m.mass - vn * S.n[i]
        w1 = dot3(S.n, AOm)
    else:  # a rough face: no point of it can move on the plane
        for i in range(3):
            v1[i] = 0.0
    p_n = dot3(S.n, S.p)
    for i in range(9):
        S.A[i] = A1[i]
    matTvec3(A1, S.n, An)
    for i in range(3):
        S.a[i] = a1[i]
        S.p[i] = m.mass * v1[i]
        S.s[i] = s_face[i]
        Om[i] = w1 * An[i]
        S.face_v[i] = v1[i]
    S.face_w = w1
    matvec3(m.I, Om, S.Pi)
    S.normal_force = 0.0
    after = kinetic_energy(m, S) + potential_energy(m, S)
    change[0] = after - before
    impulse[0] = dot3(S.n, S.p) - p_n
    S.work = S.work + change[0]


cdef void smallest_rotation(const double* a, const double* b, double* Q) noexcept nogil:
    # the smallest rotation turning the unit vector a onto the direction of b (twin)
    cdef double k[3]
    cdef double size
    cdef int i
    cross3(a, b, k)
    size = norm3(k)
    if size > 0.0:
        for i in range(3):
            k[i] = k[i] / size
        rotation_about(k, atan2(size, dot3(a, b)), Q)
    else:
        for i in range(9):
            Q[i] = 1.0 if i % 4 == 0 else 0.0


cdef void turn_about_contact(const State* S, const double* Q, double* A1,
                             double* a1) noexcept nogil:
    # the body turned by Q about its contact point S.s (twin: turn_about_contact)
    cdef double As[3]
    cdef double x_rim[3]
    cdef double r[3]
    cdef double Qr[3]
    cdef int i
    matvec3(S.A, S.s, As)
    for i in range(3):
        x_rim[i] = S.a[i] + As[i]
        r[i] = S.a[i] - x_rim[i]
    matvec3(Q, r, Qr)
    matmul3(Q, S.A, A1)
    reorthonormalize(A1)
    for i in range(3):
        a1[i] = x_rim[i] + Qr[i]


cdef int locate_fall(ModesModel m, int mode, State* S, double h, double* theta,
                     int event) noexcept:
    # the partial step in which the disk reaches its flat angle (event FLAT), or the cylinder
    # its side angle (RIM_TO_SIDE), by bisection on the step's status; *S is left at it (twin:
    # locate_fall)
    cdef double lo = 0.0, hi = h, mid
    cdef State trial, at_lo = S[0]
    cdef Contact ct
    cdef int it, st
    for it in range(LOCATE_ITER):
        if fabs(hi - lo) <= LOCATE_TOL * fabs(h):
            break
        mid = 0.5 * (lo + hi)
        trial = S[0]
        st = composed_step(m, mode, &trial, mid, &ct)
        if st == event:
            hi = mid
        elif st:
            return st
        else:
            lo = mid
            at_lo = trial
    if not (lands_on_side(m, &at_lo) if event == RIM_TO_SIDE else lands_flat(m, &at_lo)):
        return event  # a Newton iterate met the event, not the body
    S[0] = at_lo
    theta[0] = lo
    return OK


# -- a cylinder lying on its side (twins: nhphys.twins.side and the "Lying on its side" part of
# nhphys.twins.modes) ---------------------------------------------------------------------------

DEF LINE_POINTS = 12  # the twin's (nhphys.twins.side)
DEF QUADRATURE_LIMIT = 0.25
cdef double LINE_NODES[LINE_POINTS]
cdef double LINE_WEIGHTS[LINE_POINTS]
LINE_NODES[:] = [-0.9815606342467192, -0.9041172563704748, -0.7699026741943047,
                 -0.5873179542866175, -0.3678314989981802, -0.1252334085114689,
                 0.1252334085114689, 0.3678314989981802, 0.5873179542866175,
                 0.7699026741943047, 0.9041172563704748, 0.9815606342467192]
LINE_WEIGHTS[:] = [0.04717533638651141, 0.10693932599531907, 0.16007832854334642,
                   0.20316742672306573, 0.2334925365383546, 0.2491470458134027,
                   0.2491470458134027, 0.2334925365383546, 0.20316742672306573,
                   0.16007832854334642, 0.10693932599531907, 0.04717533638651141]


cdef void line_integrals(double a, double b, double c, double L, double* I) noexcept nogil:
    # (int a / r, int x / r, int s x / r) over [-L, L] of a slip (a, b, c) that is not zero
    # (twin: side.line_integrals)
    cdef double scale = max(fabs(a), max(fabs(b), fabs(c) * L))
    cdef double size, s, x, r, wr, x1, x2, r1, r2, delta
    cdef double along = 0.0, a2_delta = 0.0
    cdef int k
    a = a / scale  # only the direction matters (twin: line_integrals)
    b = b / scale
    c = c / scale
    size = hypot(a, b)
    if fabs(c) * L <= QUADRATURE_LIMIT * size:
        I[0] = I[1] = I[2] = 0.0
        for k in range(LINE_POINTS):
            s = L * LINE_NODES[k]
            x = b + c * s
            r = hypot(a, x)
            wr = L * LINE_WEIGHTS[k] / r
            I[0] += wr * a
            I[1] += wr * x
            I[2] += wr * (s * x)
        return
    x1 = b - c * L
    x2 = b + c * L
    r1 = hypot(a, x1)
    r2 = hypot(a, x2)
    if a != 0.0:
        if (x1 >= 0.0) == (x2 >= 0.0):  # one sign: the asinh's difference without cancellation
            delta = asinh(4.0 * b * c * L / (x2 * r1 + x1 * r2))
        else:
            delta = asinh(x2 / fabs(a)) - asinh(x1 / fabs(a))
        along = a * delta / c
        a2_delta = a * a * delta
    I[0] = along
    I[1] = 4.0 * b * L / (r1 + r2)
    I[2] = (L * (r1 + r2) - (x2 * r2 - x1 * r1 + a2_delta) / (2.0 * c)) / c


def line_friction_py(double a, double b, double c, double half_length, double normal_force,
                     double mu):
    """The kernel's line friction (the twin: :func:`nhphys.twins.side.line_friction`), for
    the parity tests: ``(F_u, F_w, M)``."""
    cdef double I[3]
    cdef double scale
    if a == 0.0 and b == 0.0 and c == 0.0:
        raise ValueError("The line's friction has no direction at rest.")
    line_integrals(a, b, c, half_length, I)
    scale = -mu * normal_force / (2.0 * half_length)
    return scale * I[0], scale * I[1], scale * I[2]


cdef struct SideLoad:
    # what acts on a cylinder on its side besides its line's friction (twin: SideLoad)
    double N
    double F_t[3]
    double tau_u
    double tau_n
    double f_np[3]
    double tau_np[3]


cdef inline double side_load_power(const SideLoad* L, const double* v,
                                   const double* omega) noexcept nogil:
    return dot3(L.f_np, v) + dot3(L.tau_np, omega)


cdef inline void side_axes(const double* A, const double* n, double* u, double* w) noexcept nogil:
    # the axis (body z) in space and w = n x u (twin: side_axes)
    u[0] = A[2]
    u[1] = A[5]
    u[2] = A[8]
    cross3(n, u, w)


cdef void side_velocities(ModesModel m, const State* S, double* v, double* psi,
                          double* phi) noexcept:
    # (v, psi, phi) of a cylinder on its side (twin: side_velocities)
    cdef double omega[3]
    cdef int i
    space_omega(m, S, omega)
    for i in range(3):
        v[i] = S.p[i] / m.mass
    psi[0] = dot3(S.n, omega)
    phi[0] = S.A[2] * omega[0] + S.A[5] * omega[1] + S.A[8] * omega[2]


cdef inline void side_slip(ModesModel m, const double* v, double psi, double phi,
                           const double* u, const double* w, double* slip) noexcept nogil:
    # (a, b, c) of the line (twin: side_slip)
    slip[0] = dot3(v, u)
    slip[1] = dot3(v, w) + m.side_radius * phi
    slip[2] = psi


cdef void side_load(ModesModel m, double t, const double* A, const double* a, const double* n,
                    const double* v, double psi, double phi, SideLoad* L) noexcept:
    # the load at (t, A, a) and the velocities (v, psi, phi) (twin: side_load)
    cdef double u[3]
    cdef double omega[3]
    cdef double omega_b[3]
    cdef double f_pot[3]
    cdef double tau_pot[3]
    cdef double f_app[3]
    cdef double tau_app[3]
    cdef double D[9]
    cdef double Dw[3]
    cdef double body[3]
    cdef double q[3]
    cdef double f[3]
    cdef double tau[3]
    cdef double un = dot3(m.up, n)
    cdef double drag, fn
    cdef int i
    u[0] = A[2]
    u[1] = A[5]
    u[2] = A[8]
    L.N = m.mass * m.gravity * un
    for i in range(3):
        L.F_t[i] = -m.mass * m.gravity * (m.up[i] - un * n[i])
        L.f_np[i] = 0.0
        L.tau_np[i] = 0.0
    L.tau_u = L.tau_n = 0.0
    if not m.forced:
        return
    for i in range(3):
        omega[i] = psi * n[i] + phi * u[i]
    matTvec3(A, omega, omega_b)
    drag = m.forces.wrench(t, A, a, n, f_pot, tau_pot, f_app, tau_app, D)
    for i in range(3):
        L.f_np[i] = f_app[i] - drag * v[i]
        f[i] = f_pot[i] + L.f_np[i]
    fn = dot3(n, f)
    L.N = max(L.N - fn, 0.0)
    matvec3(D, omega_b, Dw)
    for i in range(3):
        body[i] = tau_app[i] - Dw[i]
    matvec3(A, body, L.tau_np)
    if m.forces.rolling != 0.0:
        for i in range(3):
            L.tau_np[i] = L.tau_np[i] - (m.forces.rolling * L.N * phi) * u[i]
    matvec3(A, tau_pot, q)
    for i in range(3):
        tau[i] = q[i] + L.tau_np[i]
        L.F_t[i] = L.F_t[i] + (f[i] - fn * n[i])
    L.tau_u = dot3(u, tau)
    L.tau_n = dot3(n, tau)


cdef inline double side_roll_rate(ModesModel m, const SideLoad* L,
                                  const double* w) noexcept nogil:
    # phi'' of a cylinder rolling on its side (twin: side_roll_rate)
    cdef double R = m.side_radius
    return (L.tau_u - R * dot3(L.F_t, w)) / (m.face_inertia + m.mass * R * R)


cdef inline double side_needed(ModesModel m, const SideLoad* L, const double* w,
                               double* F) noexcept nogil:
    # the friction (F, returned M) a cylinder rolling on its side needs (twin: side_needed)
    cdef double acc = side_roll_rate(m, L, w)
    cdef int i
    for i in range(3):
        F[i] = -m.mass * m.side_radius * acc * w[i] - L.F_t[i]
    return -L.tau_n


cdef double side_margin(ModesModel m, const State* S) noexcept:
    # the guard of a cylinder rolling on its side (twin: side_margin)
    cdef double u[3]
    cdef double w[3]
    cdef double v[3]
    cdef double F[3]
    cdef double vv[3]
    cdef double psi, phi, M, limit, half, g1, g2
    cdef SideLoad L
    cdef int i
    if not isfinite(m.mu):
        return INFINITY
    side_axes(S.A, S.n, u, w)
    side_velocities(m, S, v, &psi, &phi)
    for i in range(3):
        vv[i] = -m.side_radius * phi * w[i]
    side_load(m, S.t, S.A, S.a, S.n, vv, 0.0, phi, &L)
    M = side_needed(m, &L, w, F)
    limit = m.mu * L.N
    half = 0.5 * m.side_length
    g1 = limit - norm3(F)
    g2 = (half * limit - fabs(M)) / half
    return g1 if g1 < g2 else g2


cdef inline double side_speed(ModesModel m, const double* v, double psi,
                              double phi) noexcept nogil:
    # |v| + R |phi'| + L |psi'| (twin: side_speed)
    return norm3(v) + m.side_radius * fabs(phi) + m.side_length * fabs(psi)


cdef double side_friction(ModesModel m, const double* slip, double speed, const double* u,
                          const double* w, const SideLoad* L, double* F) noexcept:
    # the line's friction (F, returned M) at the slip (twin: side_friction)
    cdef double I[3]
    cdef double limit, size, M, scale, half
    cdef int i
    scale = fabs(slip[0]) + fabs(slip[1]) + m.side_length * fabs(slip[2])
    if not scale > SLIP_FLOOR * speed:  # a line at rest
        M = side_needed(m, L, w, F)
        limit = m.mu * L.N
        size = norm3(F)
        if size > limit:
            for i in range(3):
                F[i] = (limit / size) * F[i]
        half = 0.5 * m.side_length * limit
        return max(-half, min(M, half))
    line_integrals(slip[0], slip[1], slip[2], m.side_length, I)
    scale = -m.mu * L.N / (2.0 * m.side_length)
    for i in range(3):
        F[i] = scale * I[0] * u[i] + scale * I[1] * w[i]
    return scale * I[2]


cdef double side_progress(ModesModel m, const double* slip, const double* slip0) noexcept:
    # how the slip still moves on along slip0 (twin: side_progress)
    if slip0[0] == 0.0 and slip0[1] == 0.0 and slip0[2] == 0.0:
        return INFINITY
    return (m.mass * (slip[0] * slip0[0] + slip[1] * slip0[1])
            + m.side_inertia * slip[2] * slip0[2])


cdef void side_state_slip(ModesModel m, const State* S, double* slip) noexcept:
    cdef double u[3]
    cdef double w[3]
    cdef double v[3]
    cdef double psi, phi
    side_axes(S.A, S.n, u, w)
    side_velocities(m, S, v, &psi, &phi)
    side_slip(m, v, psi, phi, u, w, slip)


cdef double side_guard(ModesModel m, const State* S) noexcept:
    # side_progress from the step's starting slip (twin: side_guard)
    cdef double slip[3]
    side_state_slip(m, S, slip)
    return side_progress(m, slip, S.side_ref)


cdef int side_roll_step(ModesModel m, double h, State* S, Contact* c) noexcept:
    # one step of a cylinder rolling on its side (twin: side_roll_step)
    cdef double u[3]
    cdef double w[3]
    cdef double v[3]
    cdef double v0[3]
    cdef double v1[3]
    cdef double om0[3]
    cdef double om1[3]
    cdef double Q[9]
    cdef double Ap[9]
    cdef double A1[9]
    cdef double ap[3]
    cdef double vp[3]
    cdef double ob[3]
    cdef double psi, phi0, acc0, acc1, phi_p, phi1, turn, R = m.side_radius
    cdef SideLoad L0, L1
    cdef int i
    side_axes(S.A, S.n, u, w)
    side_velocities(m, S, v, &psi, &phi0)
    for i in range(3):
        v0[i] = -R * phi0 * w[i]
    side_load(m, S.t, S.A, S.a, S.n, v0, 0.0, phi0, &L0)
    acc0 = side_roll_rate(m, &L0, w)
    L1 = L0
    if m.forced:  # the forces at the predictor's time, pose and velocities
        phi_p = phi0 + h * acc0
        rotation_about(u, h * phi0, Q)
        matmul3(Q, S.A, Ap)
        for i in range(3):
            ap[i] = S.a[i] - (R * h * phi0) * w[i]
            vp[i] = -R * phi_p * w[i]
        side_load(m, S.t + h, Ap, ap, S.n, vp, 0.0, phi_p, &L1)
    acc1 = side_roll_rate(m, &L1, w)
    phi1 = phi0 + 0.5 * h * (acc0 + acc1)
    turn = 0.5 * h * (phi0 + phi1)
    rotation_about(u, turn, Q)
    matmul3(Q, S.A, A1)
    reorthonormalize(A1)
    for i in range(3):
        v1[i] = -R * phi1 * w[i]
        om0[i] = phi0 * u[i]
        om1[i] = phi1 * u[i]
    S.work = S.work + 0.5 * h * (side_load_power(&L0, v0, om0) + side_load_power(&L1, v1, om1))
    S.t += h
    S.normal_force = L0.N
    for i in range(9):
        S.A[i] = A1[i]
    matTvec3(A1, u, ob)
    for i in range(3):
        S.a[i] = S.a[i] - (R * turn) * w[i]
        S.p[i] = m.mass * v1[i]
        ob[i] = phi1 * ob[i]
    matvec3(m.I, ob, S.Pi)
    side_contact(m, S, c)
    for i in range(3):
        S.s[i] = c.s[i]
    return OK


cdef void side_rates(ModesModel m, const SideLoad* L, const double* F, double M,
                     const double* w, double* dv, double* dphi, double* dpsi) noexcept:
    cdef int i
    for i in range(3):
        dv[i] = (L.F_t[i] + F[i]) / m.mass
    dphi[0] = (L.tau_u + m.side_radius * dot3(F, w)) / m.face_inertia
    dpsi[0] = (L.tau_n + M) / m.side_inertia


cdef int side_slide_step(ModesModel m, double h, State* S, Contact* c) noexcept:
    # one step of a cylinder sliding on its side (twin: side_slide_step)
    cdef double u0[3]
    cdef double w0[3]
    cdef double up_[3]
    cdef double wp[3]
    cdef double u1[3]
    cdef double w1[3]
    cdef double v0[3]
    cdef double vraw[3]
    cdef double vp[3]
    cdef double v1[3]
    cdef double dv0[3]
    cdef double dv1[3]
    cdef double F0[3]
    cdef double F1[3]
    cdef double slip0[3]
    cdef double slip_p[3]
    cdef double slip_f[3]
    cdef double om0[3]
    cdef double om1[3]
    cdef double ob[3]
    cdef double ap[3]
    cdef double Q1[9]
    cdef double Q2[9]
    cdef double T[9]
    cdef double Ap[9]
    cdef double A1[9]
    cdef double psi0, phi0, M0, M1, dphi0, dpsi0, dphi1, dpsi1, phi_p, psi_p, phi1, psi1
    cdef double sign, power0, power1, R = m.side_radius
    cdef SideLoad L0, L1
    cdef int i
    side_axes(S.A, S.n, u0, w0)
    side_velocities(m, S, vraw, &psi0, &phi0)
    tangential(vraw, S.n, v0)
    side_slip(m, v0, psi0, phi0, u0, w0, slip0)
    if not (fabs(slip0[0]) + fabs(slip0[1]) + m.side_length * fabs(slip0[2])
            > SLIP_FLOOR * side_speed(m, v0, psi0, phi0)):
        slip0[0] = slip0[1] = slip0[2] = 0.0  # a line at rest (twin: side_slide_step)
    side_load(m, S.t, S.A, S.a, S.n, v0, psi0, phi0, &L0)
    M0 = side_friction(m, slip0, side_speed(m, v0, psi0, phi0), u0, w0, &L0, F0)
    side_rates(m, &L0, F0, M0, w0, dv0, &dphi0, &dpsi0)
    for i in range(3):
        vp[i] = v0[i] + h * dv0[i]
    phi_p = phi0 + h * dphi0
    psi_p = psi0 + h * dpsi0
    rotation_about(S.n, h * psi0, Q1)
    rotation_about(u0, h * phi0, Q2)
    matmul3(Q1, Q2, T)
    matmul3(T, S.A, Ap)
    side_axes(Ap, S.n, up_, wp)
    side_slip(m, vp, psi_p, phi_p, up_, wp, slip_p)
    # through a stop the friction is continued as it was before it (twin: side_slide_step)
    sign = -1.0 if side_progress(m, slip_p, slip0) < 0.0 else 1.0
    L1 = L0
    if m.forced:
        for i in range(3):
            ap[i] = S.a[i] + h * v0[i]
        side_load(m, S.t + h, Ap, ap, S.n, vp, psi_p, phi_p, &L1)
    for i in range(3):
        slip_f[i] = sign * slip_p[i]
    if slip_f[0] == 0.0 and slip_f[1] == 0.0 and slip_f[2] == 0.0:
        for i in range(3):
            slip_f[i] = slip0[i]
    M1 = side_friction(m, slip_f, side_speed(m, vp, psi_p, phi_p), up_, wp, &L1, F1)
    side_rates(m, &L1, F1, M1, wp, dv1, &dphi1, &dpsi1)
    for i in range(3):
        v1[i] = v0[i] + 0.5 * h * (dv0[i] + dv1[i])
    phi1 = phi0 + 0.5 * h * (dphi0 + dphi1)
    psi1 = psi0 + 0.5 * h * (dpsi0 + dpsi1)
    rotation_about(S.n, 0.5 * h * (psi0 + psi1), Q1)
    rotation_about(u0, 0.5 * h * (phi0 + phi1), Q2)
    matmul3(Q1, Q2, T)
    matmul3(T, S.A, A1)
    reorthonormalize(A1)
    side_axes(A1, S.n, u1, w1)
    for i in range(3):
        om0[i] = psi0 * S.n[i] + phi0 * u0[i]
        om1[i] = psi1 * S.n[i] + phi1 * u1[i]
    power0 = dot3(F0, v0) + R * dot3(F0, w0) * phi0 + M0 * psi0 + side_load_power(&L0, v0, om0)
    power1 = dot3(F1, v1) + R * dot3(F1, wp) * phi1 + M1 * psi1 + side_load_power(&L1, v1, om1)
    S.work = S.work + 0.5 * h * (power0 + power1)
    S.t += h
    S.normal_force = L0.N
    for i in range(3):
        S.side_ref[i] = slip0[i]
        S.a[i] = S.a[i] + 0.5 * h * (v0[i] + v1[i])
        S.p[i] = m.mass * v1[i]
    for i in range(9):
        S.A[i] = A1[i]
    matTvec3(A1, om1, ob)
    matvec3(m.I, ob, S.Pi)
    side_contact(m, S, c)
    for i in range(3):
        S.s[i] = c.s[i]
    return OK


cdef void side_contact(ModesModel m, const State* S, Contact* c) noexcept:
    # the frame's contact of a cylinder on its side: its line's midpoint (twin: side_contact)
    cdef double s[3]
    cdef int i
    matTvec3(S.A, S.n, s)
    for i in range(3):
        s[i] = -m.side_radius * s[i]
    plane_contact(m, S, s, c)


cdef bint lands_on_side(ModesModel m, const State* S) noexcept:
    # a centred cylinder with its axis within twice its side angle of the plane (twin)
    if m.side_radius <= 0.0:
        return False
    return fabs(S.A[2] * S.n[0] + S.A[5] * S.n[1] + S.A[8] * S.n[2]) <= sin(2.0 * m.side_angle)


cdef int onto_side(ModesModel m, State* S, bint rough, const double* omega) noexcept:
    # the velocities of a cylinder on its side, from its angular velocity omega in space (twin:
    # onto_side); returns its mode
    cdef double u[3]
    cdef double w[3]
    cdef double vraw[3]
    cdef double v[3]
    cdef double om[3]
    cdef double ob[3]
    cdef double slip[3]
    cdef double psi, phi, R = m.side_radius, Ia = m.face_inertia
    cdef int i, mode
    side_axes(S.A, S.n, u, w)
    for i in range(3):
        vraw[i] = S.p[i] / m.mass
    tangential(vraw, S.n, v)
    psi = dot3(S.n, omega)
    phi = dot3(u, omega)
    side_slip(m, v, psi, phi, u, w, slip)
    mode = MODE_SIDE_SLIDING if (fabs(slip[0]) + fabs(slip[1]) + m.side_length * fabs(slip[2])
                                 > SLIP_FLOOR * side_speed(m, v, psi, phi)) else MODE_SIDE
    if rough:
        phi = (Ia * phi - m.mass * R * dot3(v, w)) / (Ia + m.mass * R * R)
        for i in range(3):
            v[i] = -R * phi * w[i]
        psi = 0.0
        mode = MODE_SIDE
    for i in range(3):
        S.p[i] = m.mass * v[i]
        om[i] = psi * S.n[i] + phi * u[i]
        S.side_ref[i] = 0.0
    matTvec3(S.A, om, ob)
    matvec3(m.I, ob, S.Pi)
    return mode


cdef int land_side(ModesModel m, State* S, double* impulse, double* change) noexcept:
    # the landing of a cylinder falling onto its side (twin: land_side); returns its mode
    cdef double axis[3]
    cdef double along[3]
    cdef double Q[9]
    cdef double A1[9]
    cdef double a1[3]
    cdef double As[3]
    cdef double x[3]
    cdef double J[6]
    cdef double H[12]
    cdef double nn[3]
    cdef double W[4]
    cdef double omega[3]
    cdef double before, off, p_n
    cdef int i, mode
    space_omega(m, S, omega)  # the velocities in space are kept through the turn (twin)
    for i in range(3):
        axis[i] = S.A[3 * i + 2]
    tangential(axis, S.n, along)
    smallest_rotation(axis, along, Q)
    turn_about_contact(S, Q, A1, a1)
    before = kinetic_energy(m, S) + potential_energy(m, S)
    p_n = dot3(S.n, S.p)
    ground_geometry(m.ground, S.chart, S.z, x, J, H, nn, W)
    for i in range(9):
        S.A[i] = A1[i]
    for i in range(3):
        S.a[i] = a1[i]
    off = dot3(S.n, S.a) - dot3(S.n, x) - m.side_radius
    for i in range(3):
        S.a[i] = S.a[i] - off * S.n[i]
    mode = onto_side(m, S, not isfinite(m.mu), omega)
    matTvec3(S.A, S.n, As)
    for i in range(3):
        S.s[i] = -m.side_radius * As[i]
    S.normal_force = 0.0
    change[0] = kinetic_energy(m, S) + potential_energy(m, S) - before
    impulse[0] = dot3(S.n, S.p) - p_n
    S.work = S.work + change[0]
    return mode


cdef int side_stick(ModesModel m, State* S, double* change) noexcept:
    # a line that has stopped slipping, brought to rolling on its side (twin: side_stick);
    # returns the mode
    cdef double before = kinetic_energy(m, S)
    cdef double omega[3]
    space_omega(m, S, omega)
    onto_side(m, S, True, omega)
    change[0] = kinetic_energy(m, S) - before
    S.work = S.work + change[0]
    return MODE_SIDE if side_margin(m, S) >= 0.0 else MODE_SIDE_SLIDING


cdef int contact_force(ModesModel m, const State* S, double* N, double* F) noexcept:
    # the continuous rolling model's normal and contact force (twin: contact_force)
    cdef double y[FIELD_STATE]
    cdef double rates[FIELD_STATE]
    cdef double ex[19]
    cdef int i, st
    for i in range(9):
        y[i] = S.A[i]
    y[9] = S.z[0]
    y[10] = S.z[1]
    matvec3(m.Iinv, S.Pi, &y[11])
    y[14] = 0.0
    m.field.chart = S.chart
    st = m.field._eval(S.t, y, rates, ex)
    N[0] = ex[15] if st == OK else 0.0
    for i in range(3):
        F[i] = ex[16 + i] if st == OK else 0.0
    return st


cdef int friction_margin(ModesModel m, const State* S, double* g, double* direction,
                         bint* has_direction) noexcept:
    # the rolling guard and the direction a slip starts in (twin: friction_margin)
    cdef double N
    cdef double F[3]
    cdef double F_t[3]
    cdef double size
    cdef int i, st
    st = contact_force(m, S, &N, F)
    has_direction[0] = False
    g[0] = N
    if st or m.mu == INFINITY:
        return st
    tangential(F, S.n, F_t)
    size = norm3(F_t)
    g[0] = m.mu * N - size
    if size > 0.0:
        has_direction[0] = True
        for i in range(3):
            direction[i] = -F_t[i] / size
    return OK


cdef int sliding_normal_force(ModesModel m, const State* S, double* N) noexcept:
    # the continuous sliding model's normal force at a state (twin: sliding_normal_force)
    cdef double x[3]
    cdef double J[6]
    cdef double H[12]
    cdef double n[3]
    cdef double WH[4]
    cdef double An[3]
    cdef double d[3]
    cdef double s[3]
    cdef double Sp[9]
    cdef double n_M[3]
    cdef double gi[4]
    cdef double LH[9]
    cdef double T1[9]
    cdef double Kb[9]
    cdef double M[9]
    cdef double w[3]
    cdef double ws[3]
    cdef double u[3]
    cdef double u_t[3]
    cdef double v3[3]
    cdef double v4[3]
    cdef double rhs[3]
    cdef double sd[3]
    cdef double xd[3]
    cdef double Lx[3]
    cdef double t[3]
    cdef double Iw[3]
    cdef double wdot0[3]
    cdef double q[3]
    cdef double Sh[9]
    cdef double K[9]
    cdef double Kd[3]
    cdef double f[3]
    cdef double tau[3]
    cdef double rolling_row[3]
    cdef double c0, per_N
    cdef State probe
    cdef int i, j, st
    ground_geometry(m.ground, S.chart, S.z, x, J, H, n, WH)
    if m.ground.raised:
        return CALLBACK_RAISED
    matTvec3(S.A, n, An)
    for i in range(3):
        d[i] = -An[i]
    st = m.shape.support(d, s, Sp, n_M)
    if st != OK:
        return st
    ground_operators(J, WH, S.A, gi, LH, Kb)
    # u, u_t; (I - S' Kb) ds/dt = S' (Omega x A^T n + A^T LH u_t)
    matvec3(m.Iinv, S.Pi, w)
    cross3(w, s, ws)
    matvec3(S.A, ws, u)
    for i in range(3):
        u[i] = S.p[i] / m.mass + u[i]
    tangential(u, n, u_t)
    cross3(w, An, v3)
    matvec3(LH, u_t, q)
    matTvec3(S.A, q, v4)
    for i in range(3):
        v3[i] = v3[i] + v4[i]
    matvec3(Sp, v3, rhs)
    matmul3(Sp, Kb, M)
    for i in range(9):
        M[i] = -M[i]
    M[0] += 1.0
    M[4] += 1.0
    M[8] += 1.0
    for i in range(3):
        sd[i] = rhs[i]
    if not solve_small(3, M, sd):
        return SINGULAR_CONTACT
    matvec3(S.A, sd, xd)
    for i in range(3):
        xd[i] = u_t[i] + xd[i]
    probe = S[0]
    for i in range(3):
        probe.s[i] = s[i]
        probe.n[i] = n[i]
    slip_direction(m, &probe, t)
    for i in range(3):
        d[i] = n[i] - m.mu * t[i]
    hat3(s, Sh)
    matmul3(S.A, Sh, T1)
    matmul3(T1, m.Iinv, M)
    matmul3(M, Sh, T1)
    for i in range(3):
        for j in range(3):
            K[3 * i + j] = -(T1[3 * i] * S.A[3 * j] + T1[3 * i + 1] * S.A[3 * j + 1]
                             + T1[3 * i + 2] * S.A[3 * j + 2])
        K[4 * i] += 1.0 / m.mass
    matvec3(K, d, Kd)
    matvec3(m.I, w, Iw)
    cross3(Iw, w, q)
    matvec3(m.Iinv, q, wdot0)
    # c0 = -(LH dx/dt) . u_t - g n . k + n . A (Omega x (Omega x s) + Omega x ds/dt
    #      + wdot0 x s)
    matvec3(LH, xd, Lx)
    cross3(w, ws, v3)
    cross3(w, sd, v4)
    for i in range(3):
        v3[i] = v3[i] + v4[i]
    cross3(wdot0, s, v4)
    for i in range(3):
        v3[i] = v3[i] + v4[i]
    matvec3(S.A, v3, q)
    c0 = -dot3(Lx, u_t) - m.gravity * dot3(n, m.up) + dot3(n, q)
    per_N = dot3(n, Kd)
    if m.forced:  # the applied wrench's part, and rolling resistance's per newton (twin)
        for i in range(3):
            v3[i] = S.p[i] / m.mass
        total_wrench(m.forces, S.t, S.A, S.a, n, v3, w, f, tau, rolling_row)
        matvec3(m.Iinv, tau, v4)
        cross3(v4, s, v3)
        matvec3(S.A, v3, q)
        c0 += dot3(n, f) / m.mass + dot3(n, q)
        matvec3(m.Iinv, rolling_row, v4)
        cross3(v4, s, v3)
        matvec3(S.A, v3, q)
        per_N += dot3(n, q)
    N[0] = -c0 / per_N
    return OK


cdef int slide_guards(ModesModel m, const State* S, double* g_normal,
                      double* g_slip) noexcept:
    # the sliding guards at a state, in newtons (twin: slide_guards)
    cdef double u[3]
    cdef double u_t[3]
    cdef int st
    st = sliding_normal_force(m, S, g_normal)
    if not S.slip_armed:  # a slip just started: it cannot stop in this step (twin)
        g_slip[0] = INFINITY
        return st
    contact_velocity(m, S, S.s, u)
    tangential(u, S.n, u_t)
    g_slip[0] = m.mass * m.gravity * dot3(u_t, S.slip_ref)
    return st


cdef int guard_of(ModesModel m, int mode, const State* S, const Contact* c,
                  double* g) noexcept:
    cdef double gn, gs
    cdef int st
    cdef double direction[3]
    cdef bint has
    if mode == MODE_FLIGHT:  # lowered by a graze's depth (twin: guard)
        g[0] = c.gap + S.graze
        return OK
    if mode == MODE_FACE:
        g[0] = face_guard(m, S)
        return OK
    if mode == MODE_SIDE:
        g[0] = side_margin(m, S)
        return OK
    if mode == MODE_SIDE_SLIDING:
        g[0] = side_guard(m, S)
        return OK
    if mode == MODE_SLIDING:
        st = slide_guards(m, S, &gn, &gs)
        g[0] = gn if gn < gs else gs
        return st
    return friction_margin(m, S, g, direction, &has)


cdef double potential_energy(ModesModel m, const State* S) noexcept:
    # gravity's and the force elements' potential at the state's pose (twin: potential_energy)
    cdef double V = m.mass * m.gravity * dot3(m.up, S.a)
    return V + m.forces.potential(S.A, S.a) if m.forced else V


cdef double kinetic_energy(ModesModel m, const State* S) noexcept:
    cdef double w[3]
    matvec3(m.Iinv, S.Pi, w)
    return 0.5 * dot3(S.p, S.p) / m.mass + 0.5 * dot3(S.Pi, w)


cdef void contact_mass(ModesModel m, const double* A, const double* s, double* K) noexcept:
    # K = I/m - A hat(s) I^-1 hat(s) A^T (twin: contact_mass)
    cdef double Sh[9]
    cdef double T1[9]
    cdef double T2[9]
    cdef double T3[9]
    cdef int i, j
    hat3(s, Sh)
    matmul3(A, Sh, T1)
    matmul3(T1, m.Iinv, T2)
    matmul3(T2, Sh, T3)
    for i in range(3):
        for j in range(3):
            K[3 * i + j] = -(T3[3 * i] * A[3 * j] + T3[3 * i + 1] * A[3 * j + 1]
                             + T3[3 * i + 2] * A[3 * j + 2])
        K[4 * i] += 1.0 / m.mass


cdef void apply_impulse(ModesModel m, State* S, const Contact* c, const double* P,
                        double* change) noexcept:
    # S after the impulse P at the contact c, and the kinetic energy's change (twin)
    cdef double AtP[3]
    cdef double sP[3]
    cdef double before = kinetic_energy(m, S)
    cdef int i
    matTvec3(S.A, P, AtP)
    cross3(c.s, AtP, sP)
    for i in range(3):
        S.p[i] = S.p[i] + P[i]
        S.Pi[i] = S.Pi[i] + sP[i]
        S.s[i] = c.s[i]
        S.n[i] = c.n[i]
    S.chart = c.chart
    S.z[0] = c.z[0]
    S.z[1] = c.z[1]
    change[0] = kinetic_energy(m, S) - before
    S.work = S.work + change[0]


cdef int impulse_to(ModesModel m, State* S, const Contact* c, const double* target,
                    double* P, double* change) noexcept:
    # the impulse at the contact point that brings its velocity to target, applied (twin)
    cdef double u[3]
    cdef double K[9]
    cdef int i
    contact_velocity(m, S, c.s, u)
    contact_mass(m, S.A, c.s, K)
    for i in range(3):
        P[i] = target[i] - u[i]
    if not solve_small(3, K, P):
        return SINGULAR_JACOBIAN
    apply_impulse(m, S, c, P, change)
    return OK


cdef int settle(ModesModel m, State* S) noexcept:
    # the mode of a body just put in rolling contact (twin: settle)
    cdef double g, N
    cdef double F[3]
    cdef double direction[3]
    cdef bint has
    cdef int i, st
    for i in range(3):
        S.F[i] = m.mass * m.gravity * m.up[i]
    S.normal_force = 0.0
    st = friction_margin(m, S, &g, direction, &has)
    if st != OK or g >= 0.0:
        return MODE_ROLLING
    st = contact_force(m, S, &N, F)
    if N <= 0.0:
        return MODE_FLIGHT
    for i in range(3):
        S.slip[i] = direction[i]
    return MODE_SLIDING


cdef int impact(ModesModel m, State* S, const Contact* c, double h, int* after,
                double* impulse, double* change) noexcept:
    # the impact at touchdown (twin: impact)
    cdef double u[3]
    cdef double u_t[3]
    cdef double P[3]
    cdef double P_t[3]
    cdef double K[9]
    cdef double Kc[9]
    cdef double t[3]
    cdef double d[3]
    cdef double Kd[3]
    cdef double T[6]
    cdef double KT[6]
    cdef double TKT[4]
    cdef double w2[2]
    cdef double un, rest_speed, e, P_n, lam, N, size
    cdef int i, j, k, st
    cdef bint sliding = False, pulls = False
    contact_velocity(m, S, c.s, u)
    un = dot3(c.n, u)
    if un > 0.0:
        un = 0.0
    rest_speed = 0.5 * m.gravity * fabs(dot3(c.n, m.up)) * fabs(h)
    e = m.restitution if m.restitution * -un > rest_speed else 0.0
    contact_mass(m, S.A, c.s, K)
    for i in range(9):
        Kc[i] = K[i]
    for i in range(3):
        P[i] = -e * un * c.n[i] - u[i]
    if not solve_small(3, Kc, P):
        return SINGULAR_JACOBIAN
    if m.impact_law == 0 and dot3(c.n, P) < 0.0:
        # the ground would have to pull: the rough law's other branch, no normal impulse and
        # the tangential velocity stopped (twin: impact)
        tangent_basis(c.n, T)
        for i in range(3):
            for k in range(2):
                KT[2 * i + k] = K[3 * i] * T[k] + K[3 * i + 1] * T[2 + k] + K[3 * i + 2] * T[4 + k]
        for j in range(2):
            w2[j] = -(T[j] * u[0] + T[2 + j] * u[1] + T[4 + j] * u[2])
            for k in range(2):
                TKT[2 * j + k] = T[j] * KT[k] + T[2 + j] * KT[2 + k] + T[4 + j] * KT[4 + k]
        if not solve_small(2, TKT, w2):
            return SINGULAR_JACOBIAN
        for i in range(3):
            P[i] = T[2 * i] * w2[0] + T[2 * i + 1] * w2[1]
        pulls = True
    if m.impact_law == 1:
        P_n = dot3(c.n, P)
        tangential(P, c.n, P_t)
        tangential(u, c.n, u_t)
        size = norm3(u_t)
        if norm3(P_t) > m.mu * P_n and size > 0.0:
            for i in range(3):
                t[i] = u_t[i] / size
                d[i] = c.n[i] - m.mu * t[i]
            matvec3(K, d, Kd)
            lam = -(1.0 + e) * un / dot3(c.n, Kd)
            for i in range(3):
                P[i] = lam * d[i]
            sliding = True
    apply_impulse(m, S, c, P, change)
    impulse[0] = dot3(c.n, P)
    if e > 0.0 or pulls:
        after[0] = MODE_FLIGHT
    elif sliding:  # it lands sliding (or flies on, where the ground cannot hold it)
        if slipping(m, S, u_t):
            size = norm3(u_t)
            for i in range(3):
                S.slip[i] = u_t[i] / size
        else:
            for i in range(3):
                S.slip[i] = t[i]
        for i in range(3):
            S.F[i] = m.mass * m.gravity * m.up[i]
        st = sliding_normal_force(m, S, &N)
        after[0] = MODE_FLIGHT if (st == OK and N <= 0.0) else MODE_SLIDING
    else:
        after[0] = settle(m, S)
    S.normal_force = 0.0
    return OK


cdef int modes_step(ModesModel m, int* mode, State* S, Contact* c, double* gap, double h,
                    double* events, int* n_found) noexcept:
    # one step of size h with its mode changes (twin: modes_step and locate); the events
    # found are written to events (rows of EVENT_SIZE), n_found counting them
    cdef State trial, lo_state, hi_state
    cdef Contact ct, lo_c, hi_c
    cdef double t_end = S.t + h, remaining = h, g_end, g0, g, theta
    cdef double lo, hi, g_lo, g_hi, impulse, change, gn, gs, N
    cdef double u[3]
    cdef double u_t[3]
    cdef double direction[3]
    cdef double zero[3]
    cdef double P[3]
    cdef int st, side, it, after, before, kind
    cdef double lifted
    cdef bint have_lo, has
    cdef double* row
    cdef double w
    cdef FaceLoad load
    zero[0] = zero[1] = zero[2] = 0.0
    while True:
        trial = S[0]
        st = composed_step(m, mode[0], &trial, remaining, &ct)
        if st == m.flat_status and (mode[0] == MODE_ROLLING or mode[0] == MODE_SLIDING) and (
                m.face_radius > 0.0):
            if n_found[0] >= MAX_EVENTS_PER_STEP:
                return TOO_MANY_EVENTS
            st = locate_fall(m, mode[0], S, remaining, &theta, m.flat_status)
            if st:
                return st
            before = mode[0]
            land_flat(m, S, &impulse, &change)
            mode[0] = MODE_FACE
            face_contact(m, S, c)
            row = &events[EVENT_SIZE * n_found[0]]
            n_found[0] += 1
            row[0], row[1], row[2], row[3], row[4], row[5] = (
                S.t, EVENT_FALL_FLAT, before, MODE_FACE, impulse, change)
            remaining = remaining - theta
            if fabs(remaining) <= LOCATE_TOL * fabs(h):
                break
            continue
        if st == RIM_TO_SIDE and (mode[0] == MODE_ROLLING or mode[0] == MODE_SLIDING) and (
                m.side_radius > 0.0):
            if n_found[0] >= MAX_EVENTS_PER_STEP:
                return TOO_MANY_EVENTS
            st = locate_fall(m, mode[0], S, remaining, &theta, RIM_TO_SIDE)
            if st:
                return st
            before = mode[0]
            mode[0] = land_side(m, S, &impulse, &change)
            side_contact(m, S, c)
            row = &events[EVENT_SIZE * n_found[0]]
            n_found[0] += 1
            row[0], row[1], row[2], row[3], row[4], row[5] = (
                S.t, EVENT_FALL_SIDE, before, mode[0], impulse, change)
            remaining = remaining - theta
            if fabs(remaining) <= LOCATE_TOL * fabs(h):
                break
            continue
        if st:
            return st
        st = guard_of(m, mode[0], &trial, &ct, &g_end)
        if st:
            return st
        if g_end >= 0.0:
            S[0] = trial
            c[0] = ct
            break
        if n_found[0] >= MAX_EVENTS_PER_STEP:
            return TOO_MANY_EVENTS
        if mode[0] == MODE_FLIGHT:
            g0 = gap[0] + S.graze
        elif mode[0] == MODE_FACE:
            face_state(m, S, u, &w, &load)
            g0 = face_progress(m, u, w, u, w)
        elif mode[0] == MODE_SIDE_SLIDING:  # the slip against itself
            side_state_slip(m, S, u)
            g0 = side_progress(m, u, u)
        elif mode[0] == MODE_SIDE:
            g0 = side_margin(m, S)
        elif mode[0] == MODE_SLIDING:
            st = sliding_normal_force(m, S, &gn)
            if st:
                return st
            contact_velocity(m, S, S.s, u)
            tangential(u, S.n, u_t)
            g0 = m.mass * m.gravity * norm3(u_t)
            if gn < g0:
                g0 = gn
        else:
            st = friction_margin(m, S, &g0, direction, &has)
            if st:
                return st
        # the Illinois method on [0, remaining] (twin: locate)
        lo, g_lo, have_lo = 0.0, (g0 if g0 > 0.0 else 0.0), False
        hi, g_hi = remaining, g_end
        hi_state, hi_c = trial, ct
        side = 0
        for it in range(LOCATE_ITER):
            if fabs(hi - lo) <= LOCATE_TOL * fabs(remaining):
                break
            theta = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
            if not ((lo < theta < hi) if lo < hi else (hi < theta < lo)):
                theta = 0.5 * (lo + hi)
            trial = S[0]
            st = composed_step(m, mode[0], &trial, theta, &ct)
            if st:
                return st
            st = guard_of(m, mode[0], &trial, &ct, &g)
            if st:
                return st
            if g >= 0.0:
                lo, g_lo, have_lo = theta, g, True
                lo_state, lo_c = trial, ct
                if side == 1:
                    g_hi *= 0.5
                side = 1
            else:
                hi, g_hi = theta, g
                hi_state, hi_c = trial, ct
                if side == -1:
                    g_lo *= 0.5
                side = -1
            if g == 0.0:
                break
        if have_lo and fabs(g_lo) <= fabs(g_hi):
            theta = lo
            S[0] = lo_state
            c[0] = lo_c
        else:
            theta = hi
            S[0] = hi_state
            c[0] = hi_c
        remaining = remaining - theta
        before = mode[0]
        impulse = 0.0
        change = 0.0
        if mode[0] == MODE_FLIGHT and S.graze == 0.0 and grazes(m, S, c, h):  # (twin)
            S.graze = 0.5 * m.gravity * fabs(dot3(c.n, m.up)) * h * h
            gap[0] = c.gap
            if fabs(remaining) <= LOCATE_TOL * fabs(h):
                break
            continue
        if mode[0] == MODE_FLIGHT and m.face_radius > 0.0 and fabs(
                S.A[2] * c.n[0] + S.A[5] * c.n[1] + S.A[8] * c.n[2]) >= cos(m.flat_angle):
            for it in range(3):  # it lands on its face (twin: modes_step)
                S.s[it] = c.s[it]
                S.n[it] = c.n[it]
            land_flat(m, S, &impulse, &change)
            mode[0] = MODE_FACE
            face_contact(m, S, c)
            kind = EVENT_TOUCHDOWN
        elif mode[0] == MODE_FLIGHT and m.side_radius > 0.0 and fabs(
                S.A[2] * c.n[0] + S.A[5] * c.n[1] + S.A[8] * c.n[2]) <= sin(m.side_angle):
            for it in range(3):  # it lands on its side (twin: modes_step)
                S.s[it] = c.s[it]
                S.n[it] = c.n[it]
            S.chart = c.chart
            S.z[0] = c.z[0]
            S.z[1] = c.z[1]
            mode[0] = land_side(m, S, &impulse, &change)
            side_contact(m, S, c)
            kind = EVENT_TOUCHDOWN
        elif mode[0] == MODE_FLIGHT:
            st = impact(m, S, c, h, &after, &impulse, &change)
            if st:
                return st
            mode[0] = after
            kind = EVENT_TOUCHDOWN
            if after == MODE_FLIGHT and c.gap < 0.0:  # it flies on from below the ground:
                # put back on it (twin: lift_to_ground)
                lifted = -potential_energy(m, S)
                for it in range(3):
                    S.a[it] = S.a[it] - c.gap * c.n[it]
                lifted += potential_energy(m, S)
                S.work = S.work + lifted
                change = change + lifted
                c.gap = 0.0  # (its point on the ground is where the body now touches it)
        elif mode[0] == MODE_FACE:  # the face has stopped sliding (twin: modes_step)
            change = -kinetic_energy(m, S)
            for it in range(3):
                S.p[it] = 0.0
                S.Pi[it] = 0.0
                S.face_v[it] = 0.0
            S.face_w = 0.0
            S.work = S.work + change
            kind = EVENT_STICK
        elif mode[0] == MODE_SIDE_SLIDING:  # the line has stopped slipping (twin)
            mode[0] = side_stick(m, S, &change)
            kind = EVENT_STICK
        elif mode[0] == MODE_SIDE:  # the needed friction left the line's limits (twin)
            mode[0] = MODE_SIDE_SLIDING
            kind = EVENT_SLIP
        elif mode[0] == MODE_SLIDING:
            st = slide_guards(m, S, &gn, &gs)
            if st:
                return st
            if gn - gs <= 0.0:
                S.normal_force = 0.0
                mode[0] = MODE_FLIGHT
                kind = EVENT_LIFT_OFF
            else:  # the slip has stopped: the contact point is brought to rest
                st = impulse_to(m, S, c, zero, P, &change)
                if st:
                    return st
                impulse = dot3(c.n, P)
                kind = EVENT_STICK
                mode[0] = settle(m, S)
        else:
            st = contact_force(m, S, &N, u)
            if st:
                return st
            friction_margin(m, S, &g, direction, &has)
            if N <= 0.0 or not has:  # lift-off: the velocities carry on into the flight
                S.normal_force = 0.0
                mode[0] = MODE_FLIGHT
                kind = EVENT_LIFT_OFF
            else:  # the needed friction left the cone: the slip starts against it
                for it in range(3):
                    S.slip[it] = direction[it]
                mode[0] = MODE_SLIDING
                kind = EVENT_SLIP
        gap[0] = 0.0
        S.graze = 0.0
        row = &events[EVENT_SIZE * n_found[0]]
        n_found[0] += 1
        row[0], row[1], row[2], row[3], row[4], row[5] = (
            S.t, kind, before, mode[0], impulse, change)
        if fabs(remaining) <= LOCATE_TOL * fabs(h):
            break
    S.t = t_end
    gap[0] = c.gap
    if mode[0] != MODE_FLIGHT or c.gap >= 0.0:  # clear of the ground again
        S.graze = 0.0
    return OK


cdef bint grazes(ModesModel m, const State* S, const Contact* c, double h) noexcept:
    # a touchdown below the rest speed whose plastic impact would leave it in flight (twin)
    cdef double u[3]
    cdef double un, rest_speed, impulse, change
    cdef State trial = S[0]
    cdef int after
    contact_velocity(m, S, c.s, u)
    un = min(dot3(c.n, u), 0.0)
    rest_speed = 0.5 * m.gravity * fabs(dot3(c.n, m.up)) * fabs(h)
    if -un > rest_speed:
        return False
    if impact(m, &trial, c, h, &after, &impulse, &change):
        return False
    return after == MODE_FLIGHT


@cython.boundscheck(False)
@cython.wraparound(False)
def modes_run(ConvexShape shape, ChartSurface ground, GroundMotion motion, ForceSet forces,
              double mass, const double[:, ::1] inertia, const double[:, ::1] inertia_inv,
              double gravity, const double[::1] up, bint support_form, double restitution,
              double mu, int impact_law, const double[::1] face, double h,
              const double[::1] substeps, const double[::1] slide_substeps,
              Py_ssize_t n_steps,
              Py_ssize_t save_every, int map_code, double newton_tol, int max_newton,
              int options, double[:, ::1] A, double[::1] a, double[::1] Pi, double[::1] p,
              double[::1] s, double[::1] n, double[::1] F, double[::1] slip,
              Py_ssize_t[::1] chart, double[::1] z, double[::1] clock, Py_ssize_t[::1] mode,
              double[:, ::1] out, double[:, ::1] events, Py_ssize_t[::1] n_events,
              Py_ssize_t[::1] info, const double[::1] side=None):
    """Advance ``n_steps`` steps through mode changes, saving every ``save_every``-th frame
    (see the twin, :func:`nhphys.twins.modes.modes_run`). Returns 0, or ``k + 1`` if step ``k``
    failed (``info[0]`` says why)."""
    cdef ModesModel m = ModesModel()
    cdef State S, start
    cdef Contact c
    cdef double found[EVENT_SIZE * MAX_EVENTS_PER_STEP]
    cdef double gap = 0.0, t0
    cdef int current, n_found, st, i
    cdef Py_ssize_t k, row
    if info.shape[0] < INFO_SIZE:
        raise ValueError(f"Expected `info` of shape ({INFO_SIZE},), got ({info.shape[0]},).")
    if out.shape[0] < n_steps // save_every or (out.shape[0] and out.shape[1] != MODES_FRAME_SIZE):
        raise ValueError(f"Expected `out` of shape ({n_steps // save_every}, "
                         f"{MODES_FRAME_SIZE}).")
    if events.shape[0] < MAX_EVENTS_PER_STEP * n_steps or (
            events.shape[0] and events.shape[1] != EVENT_SIZE):
        raise ValueError(f"Expected `events` of shape ({MAX_EVENTS_PER_STEP * n_steps}, "
                         f"{EVENT_SIZE}).")
    m.shape, m.ground, m.motion, m.forces = shape, ground, motion, forces
    m.field = RollingField(shape, ground, <int>chart[0], mass, inertia, gravity, up,
                           support_form, forces=forces if not forces.empty else None)
    m.mass, m.gravity, m.restitution, m.mu = mass, gravity, restitution, mu
    m.impact_law = impact_law
    m.face_radius, m.flat_angle, m.face_inertia = face[0], face[1], inertia[2, 2]
    m.face_offset = face[2] if face.shape[0] > 2 else 0.0
    m.face_ring = face.shape[0] > 3 and face[3] != 0.0
    m.flat_status = INNER_CONTACT if m.face_ring else FLAT
    m.face_torque = 1.0 if m.face_ring else 2.0 / 3.0
    m.side_radius = m.side_length = m.side_angle = 0.0
    if side is not None and side.shape[0] >= 3:
        m.side_radius, m.side_length, m.side_angle = side[0], side[1], side[2]
    m.side_inertia = inertia[0, 0]
    m.forced = not forces.empty
    for i in range(3):
        m.weight[i] = mass * gravity * up[i]
    m.newton_tol, m.max_newton, m.map_code, m.options = newton_tol, max_newton, map_code, options
    m.I, m.Iinv, m.up = &inertia[0, 0], &inertia_inv[0, 0], &up[0]
    m.substeps, m.n_sub = &substeps[0], substeps.shape[0]
    m.slide_substeps, m.n_slide = &slide_substeps[0], slide_substeps.shape[0]
    for i in range(9):
        S.A[i] = A[i // 3, i % 3]
    for i in range(3):
        S.a[i] = a[i]
        S.Pi[i] = Pi[i]
        S.p[i] = p[i]
        S.s[i] = s[i]
        S.n[i] = n[i]
        S.F[i] = F[i]
        S.slip[i] = slip[i]
        S.slip_ref[i] = slip[i]
        S.xi[i] = 0.0
    S.slip_armed = True
    S.face_v[0] = S.face_v[1] = S.face_v[2] = S.face_w = 0.0
    S.side_ref[0] = S.side_ref[1] = S.side_ref[2] = 0.0
    S.graze = clock[3] if clock.shape[0] > 3 else 0.0
    S.chart = <int>chart[0]
    S.z[0] = z[0]
    S.z[1] = z[1]
    S.t = clock[0]
    S.work = clock[1]
    S.normal_force = 0.0
    S.has_guess = False
    current = <int>mode[0]
    gap = clock[2]
    info[0] = OK
    info[INFO_COMMITTED] = 0
    n_events[0] = 0
    t0 = S.t
    for k in range(n_steps):
        start = S
        start.t = t0 + k * h
        n_found = 0
        st = modes_step(m, &current, &start, &c, &gap, h, found, &n_found)
        if st == OK and ground.raised:
            st = CALLBACK_RAISED
        if st:
            info[0] = st
            return k + 1
        S = start
        S.t = t0 + (k + 1) * h
        for row in range(n_found):
            for i in range(EVENT_SIZE):
                events[n_events[0], i] = found[EVENT_SIZE * row + i]
            n_events[0] += 1
        for i in range(9):
            A[i // 3, i % 3] = S.A[i]
        for i in range(3):
            a[i] = S.a[i]
            Pi[i] = S.Pi[i]
            p[i] = S.p[i]
            s[i] = S.s[i]
            n[i] = S.n[i]
            F[i] = S.F[i]
            slip[i] = S.slip[i]
        chart[0] = S.chart
        z[0] = S.z[0]
        z[1] = S.z[1]
        mode[0] = current
        clock[0] = S.t
        clock[1] = S.work
        clock[2] = gap
        if clock.shape[0] > 3:
            clock[3] = S.graze
        if (k + 1) % save_every == 0:
            write_frame(&out[(k + 1) // save_every - 1, 0], &S, &c)
            out[(k + 1) // save_every - 1, FRAME_SIZE] = current
        info[INFO_COMMITTED] = k + 1
    return 0
