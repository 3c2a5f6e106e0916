# The built-in mechanical systems in coordinates (declarations and layouts in models.pxd; the
# specification, with the derivations, is nhphys/twins/models.py: same class names, same
# constructors, same functions). Constructors run in Python (they may use numpy: the mass
# matrix's inverse is numpy's, as in the twin); the per-point methods are `noexcept nogil`.

from libc.math cimport sin, cos

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


cdef class KnifeEdgeModel(CoordinateModel):
    """The knife edge: ``q = (C_x, C_y, theta)`` (see the twin)."""

    def __init__(self, mass, inertia, offset, downhill_force):
        self.mass, self.inertia = float(mass), float(inertia)
        self.offset, self.downhill_force = float(offset), float(downhill_force)
        CoordinateModel.__init__(self, np.diag([self.mass, self.mass, self.inertia]), 1)

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


cdef class VerticalDiskModel(CoordinateModel):
    """The vertical rolling disk: ``q = (x, y, theta, phi)`` (see the twin)."""

    def __init__(self, mass, radius, inertia_axial, inertia_diametral):
        self.mass, self.radius = float(mass), float(radius)
        self.inertia_axial = float(inertia_axial)
        self.inertia_diametral = float(inertia_diametral)
        CoordinateModel.__init__(
            self, np.diag([self.mass, self.mass, self.inertia_diametral, self.inertia_axial]),
            2)

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


cdef class RotorSleighModel(CoordinateModel):
    """The sleigh with a rotor: ``q = (C_x, C_y, theta, phi)`` (see the twin)."""

    def __init__(self, mass, inertia, rotor_inertia, offset, locked=False):
        self.mass, self.inertia = float(mass), float(inertia)
        self.rotor_inertia, self.offset = float(rotor_inertia), float(offset)
        self.locked = bool(locked)
        m, Is, Ir = self.mass, self.inertia, self.rotor_inertia
        CoordinateModel.__init__(
            self, [[m, 0.0, 0.0, 0.0], [0.0, m, 0.0, 0.0], [0.0, 0.0, Is + Ir, Ir],
                   [0.0, 0.0, Ir, Ir]], 2 if self.locked else 1)

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
