# The built-in mechanical systems in coordinates (declarations and layouts in models.pxd; the
# specification, with the derivations, is nhphys/twins/models.py: same class names, same
# constructors, same functions). Constructors run in Python (they may use numpy: the mass
# matrix's inverse is numpy's, as in the twin); the per-point methods are `noexcept nogil`.

from libc.math cimport sin, cos

from nhphys_ext.dense cimport congruence
from nhphys_ext.forces cimport ForceSet

import numpy as np


cdef inline void zero(double* out, int k) noexcept nogil:
    cdef int i
    for i in range(k):
        out[i] = 0.0


cdef class CoordinateModel:
    """Base of the compiled models: ``V = 0``, ``S = 0`` (see the twin's ``CoordinateModel``).

    Parameters
    ----------
    mass_matrix : array_like, shape (n, n)
        n <= NMAX (8).
    r : int
        Constraints, r <= RMAX (4).
    """

    def __init__(self, mass_matrix, int r):
        M = np.array(mass_matrix, dtype=float)
        cdef int n = M.shape[0]
        if M.ndim != 2 or M.shape[1] != n or not 0 < n <= NMAX or not 0 < r <= RMAX:
            raise ValueError(f"Expected an (n, n) mass matrix with n <= {NMAX} and r <= "
                             f"{RMAX}, got shape {M.shape} and r = {r}.")
        Minv = np.linalg.inv(M)
        self.n = n
        self.r = r
        self.has_gauge = False
        for i in range(n):
            for j in range(n):
                self.M[n * i + j] = M[i, j]
                self.Minv[n * i + j] = Minv[i, j]

    @property
    def mass_matrix(self):
        """The mass matrix, (n, n) (a copy)."""
        return np.array([[self.M[self.n * i + j] for j in range(self.n)]
                         for i in range(self.n)])

    def __repr__(self):
        return f"{type(self).__name__}{tuple(self.parameters)!r}"

    @property
    def parameters(self):  # pragma: no cover - every model overrides it
        return ()

    cdef void grad_potential(self, const double* q, double* out) noexcept nogil:
        zero(out, self.n)

    cdef void hessian_potential(self, const double* q, double* out) noexcept nogil:
        zero(out, self.n * self.n)

    cdef void constraint_matrix(self, const double* q, double* out) noexcept nogil:
        zero(out, self.r * self.n)

    cdef void constraint_matrix_derivative(self, const double* q, double* out) noexcept nogil:
        zero(out, self.r * self.n * self.n)

    cdef void gauge_gradient(self, const double* q, double* out) noexcept nogil:
        zero(out, self.n)

    cdef void gauge_hessian(self, const double* q, double* out) noexcept nogil:
        zero(out, self.n * self.n)

    cdef void gauge_third(self, const double* q, const double* d, double* out) noexcept nogil:
        zero(out, self.n * self.n)

    cdef bint body_frame(self, const double* q, double* A, double* a, double* Jv, double* JW,
                         double* Jm) noexcept nogil:
        return False  # not one rigid body: no force elements

    cdef void group_coordinates(self, const double* g, double* q, double* T) noexcept nogil:
        pass  # only the models on a group (which override it) are asked

    cdef bint group_body_frame(self, const double* g, double* q, double* T, double* A,
                               double* a, double* Jv, double* JW, double* Jm) noexcept nogil:
        # group_coordinates, then body_frame at its q (models override it to share the trig)
        self.group_coordinates(g, q, T)
        return self.body_frame(q, A, a, Jv, JW, Jm)

    def py_body_frame(self, q):
        """``(A, a, J_v, J_W, J_m)`` at ``q`` (the twin's ``body_frame``), or None."""
        cdef int n = self.n
        cdef double qq[NMAX]
        cdef double A[9]
        cdef double a[3]
        cdef double Jv[3 * NMAX]
        cdef double JW[3 * NMAX]
        cdef double Jm[3 * NMAX]
        for i in range(n):
            qq[i] = float(q[i])
        if not self.body_frame(qq, A, a, Jv, JW, Jm):
            return None
        return (np.array([A[i] for i in range(9)]).reshape(3, 3),
                np.array([a[i] for i in range(3)]),
                np.array([Jv[i] for i in range(3 * n)]).reshape(3, n),
                np.array([JW[i] for i in range(3 * n)]).reshape(3, n),
                np.array([Jm[i] for i in range(3 * n)]).reshape(3, n))

    def py_group_coordinates(self, g):
        """``(q, T)`` of the group element ``g`` (the twin's ``group_coordinates``)."""
        cdef int n = self.n
        cdef double gg[NMAX]
        cdef double qq[NMAX]
        cdef double T[NMAX * NMAX]
        for i in range(n):
            gg[i] = float(g[i])
        self.group_coordinates(gg, qq, T)
        return (np.array([qq[i] for i in range(n)]),
                np.array([T[i] for i in range(n * n)]).reshape(n, n))

    def evaluate(self, q, d):
        """Every per-point function at ``q`` (n,) (``gauge_third`` along ``d`` (n,)), as a dict
        of arrays shaped as the twin's ``evaluate`` returns them."""
        cdef int n = self.n, r = self.r
        cdef double qq[NMAX]
        cdef double dd[NMAX]
        cdef double buf[RMAX * NMAX * NMAX]
        for i in range(n):
            qq[i] = float(q[i])
            dd[i] = float(d[i])
        out = {}

        def take(shape):
            size = int(np.prod(shape))
            return np.array([buf[i] for i in range(size)]).reshape(shape)

        self.grad_potential(qq, buf)
        out["grad_potential"] = take((n,))
        self.hessian_potential(qq, buf)
        out["hessian_potential"] = take((n, n))
        self.constraint_matrix(qq, buf)
        out["constraint_matrix"] = take((r, n))
        self.constraint_matrix_derivative(qq, buf)
        out["constraint_matrix_derivative"] = take((r, n, n))
        self.gauge_gradient(qq, buf)
        out["gauge_gradient"] = take((n,))
        self.gauge_hessian(qq, buf)
        out["gauge_hessian"] = take((n, n))
        self.gauge_third(qq, dd, buf)
        out["gauge_third"] = take((n, n))
        return out


cdef inline void planar_body(const double* q, int n, double* A, double* a, double* Jv,
                             double* JW) noexcept nogil:
    # a body at (q[0], q[1]) turned by q[2] about z (the twin's _planar_body)
    cdef double th = q[2]
    planar_body_cs(q, n, cos(th), sin(th), A, a, Jv, JW)


cdef inline void planar_body_cs(const double* q, int n, double c, double s, double* A,
                                double* a, double* Jv, double* JW) noexcept nogil:
    # planar_body with c, s = cos q[2], sin q[2]
    planar_pose_cs(q, c, s, A, a)
    zero(Jv, 3 * n)
    zero(JW, 3 * n)
    Jv[0] = 1.0
    Jv[n + 1] = 1.0
    JW[2 * n + 2] = 1.0


cdef inline void sleigh_group_coordinates(const double* g, double off, int n, double* q,
                                          double* T) noexcept nogil:
    # q and T of a sleigh's group element (the twin's _sleigh_group_coordinates)
    cdef double th = g[2]
    sleigh_group_coordinates_cs(g, off, n, cos(th), sin(th), q, T)


cdef inline void sleigh_group_coordinates_cs(const double* g, double off, int n, double c,
                                             double s, double* q, double* T) noexcept nogil:
    # sleigh_group_coordinates with c, s = cos g[2], sin g[2]
    cdef int i
    for i in range(n):
        q[i] = g[i]
    q[0] = g[0] + off * c
    q[1] = g[1] + off * s
    zero(T, n * n)
    for i in range(n):
        T[n * i + i] = 1.0
    T[0] = c
    T[1] = -s
    T[2] = -off * s
    T[n] = s
    T[n + 1] = c
    T[n + 2] = off * c


cdef class SleighModel(CoordinateModel):
    """Base of the sleighs' models: a planar body whose group point is ``offset`` ahead of its
    centre, with the closed forms of models.pxd (``sleigh_pull_back`` and the rest)."""


cdef class KnifeEdgeModel(SleighModel):
    """The knife edge: ``q = (C_x, C_y, theta)`` (see the twin)."""

    def __init__(self, mass, inertia, offset, downhill_force):
        self.mass, self.inertia = float(mass), float(inertia)
        self.offset, self.downhill_force = float(offset), float(downhill_force)
        CoordinateModel.__init__(self, np.diag([self.mass, self.mass, self.inertia]), 1)
        self.motor_row = 2  # J_m = J_W: a motor turns the sleigh
        self.constant_damping = True

    @property
    def parameters(self):
        return (self.mass, self.inertia, self.offset, self.downhill_force)

    cdef void grad_potential(self, const double* q, double* out) noexcept nogil:
        out[0] = -self.downhill_force
        out[1] = 0.0
        out[2] = 0.0

    cdef void constraint_matrix(self, const double* q, double* out) noexcept nogil:
        cdef double th = q[2]  # read before writing: out may alias q, and sin, cos of one
        out[0] = -sin(th)      # local become one sincos
        out[1] = cos(th)
        out[2] = -self.offset

    cdef void constraint_matrix_derivative(self, const double* q, double* out) noexcept nogil:
        cdef double th = q[2]
        zero(out, 9)
        out[0 * 3 + 2] = -cos(th)
        out[1 * 3 + 2] = -sin(th)

    cdef bint body_frame(self, const double* q, double* A, double* a, double* Jv, double* JW,
                         double* Jm) noexcept nogil:
        cdef int i
        planar_body(q, 3, A, a, Jv, JW)
        for i in range(9):
            Jm[i] = JW[i]
        return True

    cdef void group_coordinates(self, const double* g, double* q, double* T) noexcept nogil:
        sleigh_group_coordinates(g, self.offset, 3, q, T)

    cdef bint group_body_frame(self, const double* g, double* q, double* T, double* A,
                               double* a, double* Jv, double* JW, double* Jm) noexcept nogil:
        # q[2] = g[2]: one cos and sin for both
        cdef double th = g[2]
        cdef double c = cos(th), s = sin(th)
        cdef int i
        sleigh_group_coordinates_cs(g, self.offset, 3, c, s, q, T)
        planar_body_cs(q, 3, c, s, A, a, Jv, JW)
        for i in range(9):
            Jm[i] = JW[i]
        return True


cdef class VerticalDiskModel(CoordinateModel):
    """The vertical rolling disk: ``q = (x, y, theta, phi)`` (see the twin)."""

    def __init__(self, mass, radius, inertia_axial, inertia_diametral):
        self.mass, self.radius = float(mass), float(radius)
        self.inertia_axial = float(inertia_axial)
        self.inertia_diametral = float(inertia_diametral)
        CoordinateModel.__init__(
            self, np.diag([self.mass, self.mass, self.inertia_diametral, self.inertia_axial]),
            2)
        self.constant_damping = True

    @property
    def parameters(self):
        return (self.mass, self.radius, self.inertia_axial, self.inertia_diametral)

    cdef void constraint_matrix(self, const double* q, double* out) noexcept nogil:
        cdef double th = q[2]
        out[0] = 1.0
        out[1] = 0.0
        out[2] = 0.0
        out[3] = -self.radius * cos(th)
        out[4] = 0.0
        out[5] = 1.0
        out[6] = 0.0
        out[7] = -self.radius * sin(th)

    cdef void constraint_matrix_derivative(self, const double* q, double* out) noexcept nogil:
        cdef double th = q[2]
        zero(out, 32)
        out[3 * 4 + 2] = self.radius * sin(th)
        out[16 + 3 * 4 + 2] = -self.radius * cos(th)

    cdef bint body_frame(self, const double* q, double* A, double* a, double* Jv, double* JW,
                         double* Jm) noexcept nogil:
        # A = Rz(theta) Rx(-pi/2) Rz(phi), a = (x, y, R) (see the twin)
        cdef double th = q[2], ph = q[3]
        cdef double ct = cos(th), st = sin(th), cp = cos(ph), sp = sin(ph)
        cdef double x = q[0], y = q[1]
        cdef int i
        A[0] = ct * cp
        A[1] = -ct * sp
        A[2] = -st
        A[3] = st * cp
        A[4] = -st * sp
        A[5] = ct
        A[6] = -sp
        A[7] = -cp
        A[8] = 0.0
        a[0] = x
        a[1] = y
        a[2] = self.radius
        zero(Jv, 12)
        zero(JW, 12)
        Jv[0] = 1.0
        Jv[5] = 1.0
        JW[2] = -sp
        JW[4 + 2] = -cp
        JW[8 + 3] = 1.0
        for i in range(12):
            Jm[i] = JW[i]
        return True

    cdef void group_coordinates(self, const double* g, double* q, double* T) noexcept nogil:
        cdef double th = g[2]
        cdef double c = cos(th), s = sin(th)
        cdef int i
        for i in range(4):
            q[i] = g[i]
        zero(T, 16)
        for i in range(4):
            T[5 * i] = 1.0
        T[0] = c
        T[1] = -s
        T[4] = s
        T[5] = c


cdef class ContactOscillatorModel(CoordinateModel):
    """The contact oscillator, ``S = strength cos z`` (see the twin)."""

    def __init__(self, epsilon, strength=0.0):
        self.epsilon, self.strength = float(epsilon), float(strength)
        CoordinateModel.__init__(self, np.eye(3), 1)
        self.has_gauge = self.strength != 0.0

    @property
    def parameters(self):
        return (self.epsilon, self.strength)

    cdef void grad_potential(self, const double* q, double* out) noexcept nogil:
        cdef double x = q[0], y = q[1], z = q[2]
        out[0] = x + self.epsilon * x * z * z
        out[1] = y
        out[2] = z + self.epsilon * x * x * z

    cdef void hessian_potential(self, const double* q, double* out) noexcept nogil:
        cdef double x = q[0], z = q[2]
        zero(out, 9)
        out[0] = 1.0 + self.epsilon * z * z
        out[2] = 2.0 * self.epsilon * x * z
        out[4] = 1.0
        out[6] = out[2]
        out[8] = 1.0 + self.epsilon * x * x

    cdef void constraint_matrix(self, const double* q, double* out) noexcept nogil:
        cdef double y = q[1]
        out[0] = 1.0
        out[1] = 0.0
        out[2] = y

    cdef void constraint_matrix_derivative(self, const double* q, double* out) noexcept nogil:
        zero(out, 9)
        out[2 * 3 + 1] = 1.0

    cdef void gauge_gradient(self, const double* q, double* out) noexcept nogil:
        out[0] = 0.0
        out[1] = 0.0
        out[2] = -self.strength * sin(q[2])

    cdef void gauge_hessian(self, const double* q, double* out) noexcept nogil:
        zero(out, 9)
        out[8] = -self.strength * cos(q[2])

    cdef void gauge_third(self, const double* q, const double* d, double* out) noexcept nogil:
        zero(out, 9)
        out[8] = self.strength * sin(q[2]) * d[2]


cdef class RotorSleighModel(SleighModel):
    """The sleigh with a rotor: ``q = (C_x, C_y, theta, phi)`` (see the twin)."""

    def __init__(self, mass, inertia, rotor_inertia, offset, locked=False):
        self.mass, self.inertia = float(mass), float(inertia)
        self.rotor_inertia, self.offset = float(rotor_inertia), float(offset)
        self.locked = bool(locked)
        m, Is, Ir = self.mass, self.inertia, self.rotor_inertia
        CoordinateModel.__init__(
            self, [[m, 0.0, 0.0, 0.0], [0.0, m, 0.0, 0.0], [0.0, 0.0, Is + Ir, Ir],
                   [0.0, 0.0, Ir, Ir]], 2 if self.locked else 1)
        self.motor_row = 3  # J_m = e_z on phi: a motor drives the rotor
        self.constant_damping = True

    @property
    def parameters(self):
        return (self.mass, self.inertia, self.rotor_inertia, self.offset, self.locked)

    cdef void constraint_matrix(self, const double* q, double* out) noexcept nogil:
        cdef double th = q[2]
        out[0] = -sin(th)
        out[1] = cos(th)
        out[2] = -self.offset
        out[3] = 0.0
        if self.locked:
            out[4] = 0.0
            out[5] = 0.0
            out[6] = 0.0
            out[7] = 1.0

    cdef void constraint_matrix_derivative(self, const double* q, double* out) noexcept nogil:
        cdef double th = q[2]
        zero(out, self.r * 16)
        out[0 * 4 + 2] = -cos(th)
        out[1 * 4 + 2] = -sin(th)

    cdef bint body_frame(self, const double* q, double* A, double* a, double* Jv, double* JW,
                         double* Jm) noexcept nogil:
        # the sleigh; a motor drives the rotor relative to it (J_m = e_z phi_dot)
        planar_body(q, 4, A, a, Jv, JW)
        zero(Jm, 12)
        Jm[8 + 3] = 1.0
        return True

    cdef void group_coordinates(self, const double* g, double* q, double* T) noexcept nogil:
        sleigh_group_coordinates(g, self.offset, 4, q, T)

    cdef bint group_body_frame(self, const double* g, double* q, double* T, double* A,
                               double* a, double* Jv, double* JW, double* Jm) noexcept nogil:
        # q[2] = g[2]: one cos and sin for both
        cdef double th = g[2]
        cdef double c = cos(th), s = sin(th)
        sleigh_group_coordinates_cs(g, self.offset, 4, c, s, q, T)
        planar_body_cs(q, 4, c, s, A, a, Jv, JW)
        zero(Jm, 12)
        Jm[8 + 3] = 1.0
        return True


cdef class BodyForces:
    """The force elements of a model's rigid body as generalized forces (see the twin).

    Parameters
    ----------
    model : CoordinateModel
        A model of one rigid body (``body_frame``).
    body, motors : ForceSet
        Every element but the motors; the motors.
    frame : array_like (3, 3)
        The plane's axes in space (columns).
    origin : array_like (3,)
    normal_force : float
        ``N`` of rolling resistance.
    """

    def __init__(self, CoordinateModel model, ForceSet body, ForceSet motors, frame, origin,
                 double normal_force):
        cdef double A[9]
        cdef double a[3]
        cdef double J[3 * NMAX]
        cdef double qq[NMAX]
        cdef int i
        for i in range(model.n):
            qq[i] = 0.0
        if not model.body_frame(qq, A, a, J, J, J):
            raise TypeError(f"Expected a model of one rigid body for force elements, got "
                            f"{model!r}.")
        if body.n_motors or motors.n_forces or motors.n_torques or motors.n_springs:
            raise ValueError("Expected the motors in `motors` and every other element in "
                             "`body`.")
        E = np.asarray(frame, dtype=float).reshape(3, 3)
        o = np.asarray(origin, dtype=float).reshape(3)
        self.model = model
        self.body = body
        self.motors = motors
        for i in range(9):
            self.E[i] = E[i // 3, i % 3]
        for i in range(3):
            self.o[i] = o[i]
            self.normal[i] = E[i, 2]
        self.normal_force = normal_force
        self.empty = body.empty and motors.empty
        # the parts of the body's set that can be nonzero (the others are skipped: zeros)
        self.has_potential = body.has_potential
        self.has_applied = body.has_applied
        self.has_damping = body.has_damping
        self.motor_gain = motors.has_damping
        self.damps = self.has_damping or self.motor_gain
        self.applies = self.has_applied or motors.has_applied
        # a plane at the identity frame and origin (every built-in one but the inclined knife
        # edge): pose skips the transform, whose products with 1 and 0 give the same numbers
        self.placed = False
        for i in range(9):
            if self.E[i] != (1.0 if i % 4 == 0 else 0.0):
                self.placed = True
        for i in range(3):
            if self.o[i] != 0.0:
                self.placed = True
        self.closed = isinstance(model, SleighModel) and not self.placed
        self.sleigh = model if self.closed else None
        self.constant_C = model.constant_damping and not self.placed
        self.heading_invariant = False
        if self.constant_C:
            self.form_constant_damping()

    cdef void form_constant_damping(self):
        # C_const: C at q = 0, the same at every q (models.pxd: constant_damping). On the
        # group, T^T C T = S^T R^T C R S with R the heading's rotation of (x, y) and S = T at
        # heading 0: where C's (x, y) block is a multiple of the identity and uncoupled from the
        # other coordinates (drag, angular damping, spin friction, rolling resistance and
        # motors all are), R^T C R = C and T^T C T = S^T C S, the same at every heading:
        # Cg_const.
        cdef int n = self.model.n
        cdef double q[NMAX]
        cdef double g[NMAX]
        cdef double T[NMAX * NMAX]
        cdef double A[9]
        cdef double a[3]
        cdef double Jv[3 * NMAX]
        cdef double JW[3 * NMAX]
        cdef double Jm[3 * NMAX]
        cdef const double* C = self.C_const
        cdef int i, j
        for i in range(n):
            q[i] = 0.0
            g[i] = 0.0
        for i in range(n * n):
            self.C_const[i] = 0.0
        self.pose(q, A, a, Jv, JW, Jm)
        if self.has_damping:
            self.body_damping(A, Jv, JW, self.C_const)
        if self.motor_gain:
            self.motor_damping(A, Jm, self.C_const)
        if C[1] != 0.0 or C[n] != 0.0 or C[0] != C[n + 1]:
            return
        for j in range(2, n):
            if C[j] != 0.0 or C[n + j] != 0.0 or C[n * j] != 0.0 or C[n * j + 1] != 0.0:
                return
        self.model.group_coordinates(g, q, T)  # g = 0 is the identity of the group
        congruence(n, n, C, T, self.Cg_const)  # as the group kernel forms T^T C T
        self.heading_invariant = True

    cdef void pose(self, const double* q, double* A, double* a, double* Jv, double* JW,
                   double* Jm) noexcept nogil:
        # the body at q in space: A = E A_loc, a = o + E a_loc, J_v = E J_v,loc
        cdef double Al[9]
        cdef double al[3]
        cdef double Jl[3 * NMAX]
        if not self.placed:
            self.model.body_frame(q, A, a, Jv, JW, Jm)
            return
        self.model.body_frame(q, Al, al, Jl, JW, Jm)
        self.place(Al, al, Jl, A, a, Jv)

    cdef void place(self, const double* Al, const double* al, const double* Jl, double* A,
                    double* a, double* Jv) noexcept nogil:
        # A = E A_loc, a = o + E a_loc, J_v = E J_v,loc
        cdef int n = self.model.n
        cdef int i, j
        for i in range(3):
            for j in range(3):
                A[3 * i + j] = (self.E[3 * i] * Al[j] + self.E[3 * i + 1] * Al[3 + j]
                                + self.E[3 * i + 2] * Al[6 + j])
            a[i] = self.o[i] + (self.E[3 * i] * al[0] + self.E[3 * i + 1] * al[1]
                                + self.E[3 * i + 2] * al[2])
            for j in range(n):
                Jv[n * i + j] = (self.E[3 * i] * Jl[j] + self.E[3 * i + 1] * Jl[n + j]
                                 + self.E[3 * i + 2] * Jl[2 * n + j])

    cdef void group_terms(self, double t, const double* g, double* q, double* T, double* Qc,
                          double* Qa, double* C) noexcept nogil:
        # terms at the group element g (the model's group_body_frame: q, T and the pose at
        # once); q (n,), T (n, d) OUT
        cdef double A[9]
        cdef double a[3]
        cdef double Jv[3 * NMAX]
        cdef double JW[3 * NMAX]
        cdef double Jm[3 * NMAX]
        cdef double Al[9]
        cdef double al[3]
        cdef double Jl[3 * NMAX]
        if not self.placed:
            self.model.group_body_frame(g, q, T, A, a, Jv, JW, Jm)
        else:
            self.model.group_body_frame(g, q, T, Al, al, Jl, JW, Jm)
            self.place(Al, al, Jl, A, a, Jv)
        self.terms_at(t, A, a, Jv, JW, Jm, Qc, Qa, C)

    cdef void terms(self, double t, const double* q, double* Qc, double* Qa,
                    double* C) noexcept nogil:
        # Q_c, Q_a (n,) and C (n, n) at (t, q) (the twin's terms, without callables); C may be
        # NULL when `damps` is False (C is zero then)
        cdef double A[9]
        cdef double a[3]
        cdef double Jv[3 * NMAX]
        cdef double JW[3 * NMAX]
        cdef double Jm[3 * NMAX]
        cdef int i
        if self.closed:
            planar_pose_cs(q, cos(q[2]), sin(q[2]), A, a)
            closed_terms(self, t, A, a, Qc, Qa)
        elif self.constant_C:
            self.pose(q, A, a, Jv, JW, Jm)
            self.terms_at(t, A, a, Jv, JW, Jm, Qc, Qa, NULL)
        else:
            self.pose(q, A, a, Jv, JW, Jm)
            self.terms_at(t, A, a, Jv, JW, Jm, Qc, Qa, C)
            return
        if C != NULL:
            for i in range(self.model.n * self.model.n):
                C[i] = self.C_const[i]

    cdef void terms_at(self, double t, const double* A, const double* a, const double* Jv,
                       const double* JW, const double* Jm, double* Qc, double* Qa,
                       double* C) noexcept nogil:
        # terms at the pose (A, a, J_v, J_W, J_m) in space. The parts that cannot be nonzero
        # are skipped: the twin's products of zeros give zeros, the same numbers.
        cdef int n = self.model.n
        cdef double f[3]
        cdef double tau[3]
        cdef int i, j
        if self.has_potential:
            for i in range(3):
                f[i] = 0.0
                tau[i] = 0.0
            self.body.potential_wrench(A, a, f, tau)
            for j in range(n):
                Qc[j] = (Jv[j] * f[0] + Jv[n + j] * f[1] + Jv[2 * n + j] * f[2]
                         + (JW[j] * tau[0] + JW[n + j] * tau[1] + JW[2 * n + j] * tau[2]))
        else:
            for j in range(n):
                Qc[j] = 0.0
        if self.has_applied:
            for i in range(3):
                f[i] = 0.0
                tau[i] = 0.0
            self.body.applied_wrench(t, A, a, f, tau)
            for j in range(n):
                Qa[j] = (Jv[j] * f[0] + Jv[n + j] * f[1] + Jv[2 * n + j] * f[2]
                         + (JW[j] * tau[0] + JW[n + j] * tau[1] + JW[2 * n + j] * tau[2]))
        else:
            for j in range(n):
                Qa[j] = 0.0
        if self.motors.has_applied:
            for i in range(3):
                f[i] = 0.0
                tau[i] = 0.0
            self.motors.applied_wrench(t, A, a, f, tau)
            for j in range(n):
                Qa[j] = Qa[j] + (Jm[j] * tau[0] + Jm[n + j] * tau[1] + Jm[2 * n + j] * tau[2])
        if C == NULL:
            return
        # C = drag J_v^T J_v + J_W^T D J_W (+ J_m^T D_m J_m)
        for i in range(n * n):
            C[i] = 0.0
        if self.has_damping:
            self.body_damping(A, Jv, JW, C)
        if self.motor_gain:
            self.motor_damping(A, Jm, C)

    cdef void body_damping(self, const double* A, const double* Jv, const double* JW,
                           double* C) noexcept nogil:
        # C = drag J_v^T J_v + J_W^T D J_W (C zero on entry)
        cdef int n = self.model.n
        cdef double D[9]
        cdef double DJ[3 * NMAX]
        cdef double nb[3]
        cdef double drag, roll
        cdef int i, j
        for i in range(9):
            D[i] = 0.0
        drag = self.body.damping(A, self.normal, D)
        if self.body.rolling != 0.0:
            for i in range(3):
                nb[i] = (A[i] * self.normal[0] + A[3 + i] * self.normal[1]
                         + A[6 + i] * self.normal[2])
            roll = self.body.rolling * self.normal_force
            for i in range(3):
                for j in range(3):
                    D[3 * i + j] += roll * ((1.0 if i == j else 0.0) - nb[i] * nb[j])
        for i in range(3):
            for j in range(n):
                DJ[n * i + j] = (D[3 * i] * JW[j] + D[3 * i + 1] * JW[n + j]
                                 + D[3 * i + 2] * JW[2 * n + j])
        for i in range(n):
            for j in range(n):
                C[n * i + j] = (drag * (Jv[i] * Jv[j] + Jv[n + i] * Jv[n + j]
                                        + Jv[2 * n + i] * Jv[2 * n + j])
                                + (JW[i] * DJ[j] + JW[n + i] * DJ[n + j]
                                   + JW[2 * n + i] * DJ[2 * n + j]))

    cdef void motor_damping(self, const double* A, const double* Jm, double* C) noexcept nogil:
        # C += J_m^T D_m J_m (the motors' speed control)
        cdef int n = self.model.n
        cdef double D[9]
        cdef double DJ[3 * NMAX]
        cdef int i, j
        for i in range(9):
            D[i] = 0.0
        self.motors.damping(A, self.normal, D)
        for i in range(3):
            for j in range(n):
                DJ[n * i + j] = (D[3 * i] * Jm[j] + D[3 * i + 1] * Jm[n + j]
                                 + D[3 * i + 2] * Jm[2 * n + j])
        for i in range(n):
            for j in range(n):
                C[n * i + j] = C[n * i + j] + (Jm[i] * DJ[j] + Jm[n + i] * DJ[n + j]
                                               + Jm[2 * n + i] * DJ[2 * n + j])

    cdef double potential(self, const double* q) noexcept nogil:
        cdef double A[9]
        cdef double a[3]
        cdef double J[3 * NMAX]
        cdef double JW[3 * NMAX]
        cdef double Jm[3 * NMAX]
        self.pose(q, A, a, J, JW, Jm)
        return self.body.potential(A, a)

    # -- the twin's methods, callable from Python (for the parity tests) ----------------------
    def py_terms(self, double t, q):
        cdef int n = self.model.n
        cdef double qq[NMAX]
        cdef double Qc[NMAX]
        cdef double Qa[NMAX]
        cdef double C[NMAX * NMAX]
        for i in range(n):
            qq[i] = float(q[i])
        self.terms(t, qq, Qc, Qa, C)
        return (np.array([Qc[i] for i in range(n)]), np.array([Qa[i] for i in range(n)]),
                np.array([C[i] for i in range(n * n)]).reshape(n, n))

    def py_undamped_terms(self, double t, q):
        """``(Q_c, Q_a)`` at ``(t, q)`` as a kernel without damping asks for them (through the
        model's closed forms when ``closed``)."""
        cdef int n = self.model.n
        cdef double qq[NMAX]
        cdef double Qc[NMAX]
        cdef double Qa[NMAX]
        for i in range(n):
            qq[i] = float(q[i])
        self.terms(t, qq, Qc, Qa, NULL)
        return np.array([Qc[i] for i in range(n)]), np.array([Qa[i] for i in range(n)])

    def py_group_forces(self, double t, g):
        """``(F_0, F_a)`` at the group element ``g`` through the model's closed forms (only
        when ``closed``)."""
        cdef int n = self.model.n
        cdef double gg[NMAX]
        cdef double F0[NMAX]
        cdef double Fa[NMAX]
        if not self.closed:
            raise ValueError(f"{self.model!r} has no closed forms here.")
        for i in range(n):
            gg[i] = float(g[i])
        closed_group_forces(self, t, gg, cos(gg[2]), sin(gg[2]), F0, Fa)
        return np.array([F0[i] for i in range(n)]), np.array([Fa[i] for i in range(n)])

    def py_group_damping(self):
        """``T^T C T`` (n, n), the same at every heading, or None where it is not (or the
        model has no closed forms)."""
        cdef int n = self.model.n
        if not self.heading_invariant:
            return None
        return np.array([self.Cg_const[i] for i in range(n * n)]).reshape(n, n)

    def py_potential(self, q):
        cdef double qq[NMAX]
        for i in range(self.model.n):
            qq[i] = float(q[i])
        return self.potential(qq)
