# Compiled right-hand sides of the continuous equations, as callables field(t, y) -> dy/dt for
# an adaptive Runge-Kutta solver (nhphys.integrators.Adaptive), with the projection back onto
# the state's manifold. The specification, the equations and the projection's argument are in
# nhphys/twins/rhs.py (same names, same results).
#
# Why a cdef class with the numpy C API instead of typed memoryviews: the solver calls the field
# once per stage (12 times a DOP853 step), so the cost of a call is the Python call itself; a
# memoryview acquisition would double it. The input is used in place when it is a contiguous
# float64 array of the right length (what scipy passes), else converted once.

cimport cython
cimport numpy as cnp
from libc.math cimport fabs

from nhphys_ext.dense cimport solve_small
from nhphys_ext.models cimport BodyForces, CoordinateModel, NMAX, RMAX

import numpy as np

cnp.import_array()

DEF SUSLOV_STATE = 12
DEF POLAR_MAX_ITER = 50  # Newton iterations of the polar factor; 2-3 from near SO(3)
DEF POLAR_TOL = 4.440892098500626e-16  # 2 eps: the last correction at round-off ends it


cdef inline cnp.ndarray _as_state(object y, Py_ssize_t n):
    """``y`` as a C-contiguous float64 array of length n (itself when it already is)."""
    cdef cnp.ndarray arr
    if (cnp.PyArray_Check(y) and cnp.PyArray_TYPE(<cnp.ndarray>y) == cnp.NPY_DOUBLE
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>y)):
        arr = <cnp.ndarray>y
    else:
        arr = np.ascontiguousarray(y, dtype=np.float64)
    if cnp.PyArray_NDIM(arr) != 1 or cnp.PyArray_DIM(arr, 0) != n:
        raise ValueError(f"Expected a state of shape ({n},), got {np.shape(y)}.")
    return arr


cdef inline void _cross(const double* u, const double* v, double* w) noexcept nogil:
    w[0] = u[1] * v[2] - u[2] * v[1]
    w[1] = u[2] * v[0] - u[0] * v[2]
    w[2] = u[0] * v[1] - u[1] * v[0]


cdef class SuslovField:
    """The Suslov right-hand side ``field(t, y)`` and its projection (see the twin,
    :class:`nhphys.twins.rhs.SuslovField`)."""

    cdef double inertia_[9]
    cdef double inertia_inv_[9]
    cdef double a[3]
    cdef double Ia[3]      # I^-1 a
    cdef double denom      # a . I^-1 a
    cdef public long evaluations

    def __init__(self, inertia, axis):
        I = np.array(inertia, dtype=float).reshape(3, 3)
        I_inv = np.linalg.inv(I)
        a = np.array(axis, dtype=float).reshape(3)
        a = a / np.linalg.norm(a)
        Ia = I_inv @ a
        cdef int i, j
        for i in range(3):
            self.a[i] = a[i]
            self.Ia[i] = Ia[i]
            for j in range(3):
                self.inertia_[3 * i + j] = I[i, j]
                self.inertia_inv_[3 * i + j] = I_inv[i, j]
        self.denom = float(a @ Ia)
        self.evaluations = 0

    @property
    def inertia(self):
        return np.array([self.inertia_[k] for k in range(9)]).reshape(3, 3)

    @property
    def axis(self):
        return np.array([self.a[k] for k in range(3)])

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def __call__(self, double t, y):
        """``dy/dt`` (12,) at the state ``y`` (12,); ``t`` is unused (autonomous)."""
        cdef cnp.ndarray arr = _as_state(y, SUSLOV_STATE)
        cdef cnp.npy_intp dim = SUSLOV_STATE
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(1, &dim, cnp.NPY_DOUBLE, 0)
        self.evaluations += 1
        self._rhs(<const double*>cnp.PyArray_DATA(arr), <double*>cnp.PyArray_DATA(out))
        return out

    def project(self, y):
        """Put the state ``y`` (12,) back on the manifold, in place (the twin's docstring)."""
        if not (cnp.PyArray_Check(y) and cnp.PyArray_TYPE(<cnp.ndarray>y) == cnp.NPY_DOUBLE
                and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>y)
                and cnp.PyArray_NDIM(<cnp.ndarray>y) == 1
                and cnp.PyArray_DIM(<cnp.ndarray>y, 0) == SUSLOV_STATE):
            raise ValueError("Expected a writable C-contiguous float64 state of shape (12,).")
        self._project(<double*>cnp.PyArray_DATA(<cnp.ndarray>y))

    cdef void _rhs(self, const double* y, double* out) noexcept:
        # dR/dt = R hat(Omega): row r of R crossed with Omega; dOmega/dt = g - (a.g)/(a.Ia) Ia
        cdef const double* w = y + 9
        cdef double L[3]
        cdef double gyro[3]
        cdef double g[3]
        cdef double s
        cdef int i, r
        for r in range(3):
            _cross(y + 3 * r, w, out + 3 * r)
        for i in range(3):
            L[i] = (self.inertia_[3 * i] * w[0] + self.inertia_[3 * i + 1] * w[1]
                    + self.inertia_[3 * i + 2] * w[2])
        _cross(L, w, gyro)
        for i in range(3):
            g[i] = (self.inertia_inv_[3 * i] * gyro[0] + self.inertia_inv_[3 * i + 1] * gyro[1]
                    + self.inertia_inv_[3 * i + 2] * gyro[2])
        s = (self.a[0] * g[0] + self.a[1] * g[1] + self.a[2] * g[2]) / self.denom
        for i in range(3):
            out[9 + i] = g[i] - s * self.Ia[i]

    cdef void _project(self, double* y) noexcept:
        # R: the orthogonal polar factor by Newton's iteration X <- (X + X^-T) / 2 (the twin's);
        # X^-T has the rows (r1 x r2, r2 x r0, r0 x r1) / det.
        cdef double C[9]
        cdef double det, change, s
        cdef int it, k
        for it in range(POLAR_MAX_ITER):
            _cross(y + 3, y + 6, C)
            _cross(y + 6, y, C + 3)
            _cross(y, y + 3, C + 6)
            det = y[0] * C[0] + y[1] * C[1] + y[2] * C[2]
            change = 0.0
            for k in range(9):
                s = 0.5 * (y[k] + C[k] / det)
                change = max(change, fabs(s - y[k]))
                y[k] = s
            if change <= POLAR_TOL:
                break
        # Omega: along I^-1 a onto a . Omega = 0 (orthogonal in the kinetic-energy metric)
        s = (self.a[0] * y[9] + self.a[1] * y[10] + self.a[2] * y[11]) / self.denom
        for k in range(3):
            y[9 + k] -= s * self.Ia[k]


cdef class CoordinateField:
    """The right-hand side of a compiled coordinate model and its projection (see the twin,
    :class:`nhphys.twins.rhs.CoordinateField`): state ``(q, v, W)`` (2 n + 1,)."""

    cdef readonly CoordinateModel model
    cdef readonly BodyForces forces   # None without force elements
    cdef readonly Py_ssize_t size
    cdef public long evaluations

    def __init__(self, CoordinateModel model, BodyForces forces=None):
        self.model = model
        self.forces = None if forces is None or forces.empty else forces
        self.size = 2 * model.n + 1
        self.evaluations = 0

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def __call__(self, double t, y):
        """``dy/dt`` (2 n + 1,) at time ``t`` and state ``y`` (2 n + 1,)."""
        cdef cnp.ndarray arr = _as_state(y, self.size)
        cdef cnp.npy_intp dim = self.size
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(1, &dim, cnp.NPY_DOUBLE, 0)
        self.evaluations += 1
        if not self._rhs(t, <const double*>cnp.PyArray_DATA(arr),
                         <double*>cnp.PyArray_DATA(out)):
            raise ValueError("The constraint matrix is singular at this state "
                             "(mu M^-1 mu^T cannot be inverted).")
        return out

    def project(self, y):
        """Put the velocities of ``y`` (2 n + 1,) onto the constraint space, in place."""
        if not (cnp.PyArray_Check(y) and cnp.PyArray_TYPE(<cnp.ndarray>y) == cnp.NPY_DOUBLE
                and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>y)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>y)
                and cnp.PyArray_NDIM(<cnp.ndarray>y) == 1
                and cnp.PyArray_DIM(<cnp.ndarray>y, 0) == self.size):
            raise ValueError(f"Expected a writable C-contiguous float64 state of shape "
                             f"({self.size},).")
        if not self._project(<double*>cnp.PyArray_DATA(<cnp.ndarray>y)):
            raise ValueError("The constraint matrix is singular at this state "
                             "(mu M^-1 mu^T cannot be inverted).")

    cdef void _schur(self, const double* mu, double* Minv_muT, double* S) noexcept:
        # M^-1 mu^T (n, r) and S = mu M^-1 mu^T (r, r), row-major
        cdef int n = self.model.n, r = self.model.r, i, j, k
        cdef double s
        for i in range(n):
            for j in range(r):
                s = 0.0
                for k in range(n):
                    s += self.model.Minv[n * i + k] * mu[n * j + k]
                Minv_muT[r * i + j] = s
        for i in range(r):
            for j in range(r):
                s = 0.0
                for k in range(n):
                    s += mu[n * i + k] * Minv_muT[r * k + j]
                S[r * i + j] = s

    cdef bint _rhs(self, double t, const double* y, double* out) noexcept:
        # the twin's: lambda = S^-1 (mu M^-1 (grad V - Q) - (Dmu[v]) v),
        # dv/dt = M^-1 (Q - grad V + mu^T lambda), dW/dt = (Q_a - C v) . v
        cdef int n = self.model.n, r = self.model.r, a, i, j
        cdef const double* q = y
        cdef const double* v = y + n
        cdef double mu[RMAX * NMAX]
        cdef double D[RMAX * NMAX * NMAX]
        cdef double Minv_muT[NMAX * RMAX]
        cdef double S[RMAX * RMAX]
        cdef double g[NMAX]        # grad V - Q
        cdef double Minv_g[NMAX]
        cdef double lam[RMAX]
        cdef double Qc[NMAX]
        cdef double Qa[NMAX]
        cdef double C[NMAX * NMAX]
        cdef double Cv[NMAX]
        cdef double s, power = 0.0
        self.model.grad_potential(q, g)
        self.model.constraint_matrix(q, mu)
        self.model.constraint_matrix_derivative(q, D)
        if self.forces is not None:
            self.forces.terms(t, q, Qc, Qa, C if self.forces.damps else NULL)
            for i in range(n):
                Cv[i] = 0.0
                if self.forces.damps:
                    for j in range(n):
                        Cv[i] += C[n * i + j] * v[j]
                g[i] -= Qc[i] + Qa[i] - Cv[i]
                power += (Qa[i] - Cv[i]) * v[i]
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += self.model.Minv[n * i + j] * g[j]
            Minv_g[i] = s
        self._schur(mu, Minv_muT, S)
        for a in range(r):
            s = 0.0
            for i in range(n):
                s += mu[n * a + i] * Minv_g[i]
            for i in range(n):
                for j in range(n):
                    s -= D[n * n * a + n * i + j] * v[i] * v[j]
            lam[a] = s
        if not solve_small(r, S, lam):
            return False
        for i in range(n):
            out[i] = v[i]
            s = -Minv_g[i]
            for a in range(r):
                s += Minv_muT[r * i + a] * lam[a]
            out[n + i] = s
        out[2 * n] = power
        return True

    cdef bint _project(self, double* y) noexcept:
        # v <- v - M^-1 mu^T S^-1 mu v
        cdef int n = self.model.n, r = self.model.r, a, i
        cdef double mu[RMAX * NMAX]
        cdef double Minv_muT[NMAX * RMAX]
        cdef double S[RMAX * RMAX]
        cdef double c[RMAX]
        cdef double s
        self.model.constraint_matrix(y, mu)
        self._schur(mu, Minv_muT, S)
        for a in range(r):
            s = 0.0
            for i in range(n):
                s += mu[n * a + i] * y[n + i]
            c[a] = s
        if not solve_small(r, S, c):
            return False
        for i in range(n):
            s = 0.0
            for a in range(r):
                s += Minv_muT[r * i + a] * c[a]
            y[n + i] -= s
        return True
