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
from nhphys_ext.so3 cimport cross3, polar_factor
from nhphys_ext.field_state cimport as_state, energy_correction, writable_state
from nhphys_ext.forces cimport ForceSet
from nhphys_ext.models cimport BodyForces, CoordinateModel, NMAX, RMAX
from nhphys_ext.dop853 cimport (
    DOP_NMAX, Dop853Table, dop853_run,
)

import numpy as np

cnp.import_array()

DEF SUSLOV_STATE = 12
DEF SINGULAR = 1  # the coordinate field's status for a singular mu M^-1 mu^T (a ValueError)


cdef int _suslov_rates(object field, double t, const double* y, double* out) noexcept:
    (<SuslovField>field)._rhs(t, y, out)
    return 0


cdef int _suslov_project(object field, double t, double* y) noexcept:
    (<SuslovField>field)._project(y)
    return 0


cdef int _coordinate_rates(object field, double t, const double* y, double* out) noexcept:
    return 0 if (<CoordinateField>field)._rhs(t, y, out) else SINGULAR


cdef int _coordinate_project(object field, double t, double* y) noexcept:
    return 0 if (<CoordinateField>field)._project(y) else SINGULAR


cdef class SuslovField:
    """The Suslov right-hand side ``field(t, y)`` and its projection, with built-in force
    elements about the fixed point (see the twin, :class:`nhphys.twins.rhs.SuslovField`)."""

    cdef double inertia_[9]
    cdef double inertia_inv_[9]
    cdef double a[3]
    cdef double Ia[3]      # I^-1 a
    cdef double denom      # a . I^-1 a
    cdef ForceSet forces   # None without force elements
    cdef double pivot_[3]  # the fixed point in space
    cdef readonly Py_ssize_t size  # 12, or 13 with force elements (the work W)
    cdef public long evaluations
    cdef public double energy_level  # NaN: the energy is not projected
    cdef public long energy_misses   # projections that could not reach the level
    cdef bint have_table
    cdef Dop853Table table

    def __init__(self, inertia, axis, ForceSet forces=None, pivot=(0.0, 0.0, 0.0)):
        I = np.array(inertia, dtype=float).reshape(3, 3)
        I_inv = np.linalg.inv(I)
        a = np.array(axis, dtype=float).reshape(3)
        a = a / np.linalg.norm(a)
        Ia = I_inv @ a
        cdef int i, j
        for i in range(3):
            self.a[i] = a[i]
            self.Ia[i] = Ia[i]
            self.pivot_[i] = float(pivot[i])
            for j in range(3):
                self.inertia_[3 * i + j] = I[i, j]
                self.inertia_inv_[3 * i + j] = I_inv[i, j]
        self.denom = float(a @ Ia)
        self.forces = None if forces is None or forces.empty else forces
        self.size = SUSLOV_STATE + (self.forces is not None)
        self.evaluations = 0
        self.energy_level = float("nan")
        self.energy_misses = 0

    @property
    def inertia(self):
        return np.array([self.inertia_[k] for k in range(9)]).reshape(3, 3)

    @property
    def axis(self):
        return np.array([self.a[k] for k in range(3)])

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def __call__(self, double t, y):
        """``dy/dt`` at the state ``y`` ((12,), or (13,) with force elements) and time ``t``
        (scheduled forces; else unused)."""
        cdef cnp.ndarray arr = as_state(y, self.size)
        cdef cnp.npy_intp dim = self.size
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(1, &dim, cnp.NPY_DOUBLE, 0)
        self.evaluations += 1
        self._rhs(t, <const double*>cnp.PyArray_DATA(arr), <double*>cnp.PyArray_DATA(out))
        return out

    def energy(self, y, double t=0.0):
        """``E - W`` of the state ``y`` (the twin's docstring)."""
        cdef cnp.ndarray arr = as_state(y, self.size)
        return self._energy(<const double*>cnp.PyArray_DATA(arr))

    def project(self, y, double t=0.0):
        """Put the state ``y`` back on the manifold, in place, and onto the energy level when
        it is finite (the twin's docstring)."""
        self._project(writable_state(y, self.size))

    cdef double _kinetic(self, const double* y) noexcept:
        cdef const double* w = y + 9
        cdef double twice = 0.0
        cdef int i, j
        for i in range(3):
            for j in range(3):
                twice += w[i] * self.inertia_[3 * i + j] * w[j]
        return 0.5 * twice

    cdef double _energy(self, const double* y) noexcept:
        # kinetic energy, plus the springs' and less the work with force elements
        cdef double energy = self._kinetic(y)
        if self.forces is not None:
            energy += self.forces.potential(y, self.pivot_) - y[12]
        return energy

    def integrate(self, y, double t0, double t1, double rtol, double atol, double h_abs,
                  long max_steps, bint project=True):
        """Advance ``y`` in place from ``t0`` to ``t1`` by DOP853 with the field in C,
        projecting every accepted step unless ``project`` is False; returns ``(status,
        solver_code, h_next, steps)`` (the twin's docstring)."""
        cdef double* data = writable_state(y, self.size)
        return dop853_run(self, _suslov_rates, _suslov_project, project, &self.table,
                          &self.have_table, <int>self.size, data, t0, t1, rtol, atol, h_abs,
                          max_steps, &self.evaluations)

    cdef void _rhs(self, double t, const double* y, double* out) noexcept:
        # dR/dt = R hat(Omega): row r of R crossed with Omega; dOmega/dt = g - (a.g)/(a.Ia) Ia,
        # g = I^-1 ((I Omega) x Omega + tau_0 - D Omega); dW/dt = (tau_a - D Omega) . Omega
        cdef const double* w = y + 9
        cdef double L[3]
        cdef double gyro[3]
        cdef double g[3]
        cdef double f[3]
        cdef double tau[3]
        cdef double tau_a[3]
        cdef double D[9]
        cdef double Dw[3]
        cdef double e3[3]
        cdef double s
        cdef int i, j, r
        for r in range(3):
            cross3(y + 3 * r, w, out + 3 * r)
        for i in range(3):
            L[i] = (self.inertia_[3 * i] * w[0] + self.inertia_[3 * i + 1] * w[1]
                    + self.inertia_[3 * i + 2] * w[2])
        cross3(L, w, gyro)
        if self.forces is not None:  # the twin's torques(), as Suslov.torques makes them
            for i in range(3):
                f[i] = tau[i] = tau_a[i] = 0.0
                e3[i] = 0.0
            for i in range(9):
                D[i] = 0.0
            e3[2] = 1.0
            self.forces.potential_wrench(y, self.pivot_, f, tau)
            self.forces.applied_wrench(t, y, self.pivot_, f, tau_a)
            self.forces.damping(y, e3, D)
            for i in range(3):
                Dw[i] = D[3 * i] * w[0] + D[3 * i + 1] * w[1] + D[3 * i + 2] * w[2]
                gyro[i] += tau[i] + tau_a[i] - Dw[i]
            out[12] = ((tau_a[0] - Dw[0]) * w[0] + (tau_a[1] - Dw[1]) * w[1]
                       + (tau_a[2] - Dw[2]) * w[2])
        for i in range(3):
            g[i] = (self.inertia_inv_[3 * i] * gyro[0] + self.inertia_inv_[3 * i + 1] * gyro[1]
                    + self.inertia_inv_[3 * i + 2] * gyro[2])
        s = (self.a[0] * g[0] + self.a[1] * g[1] + self.a[2] * g[2]) / self.denom
        for i in range(3):
            out[9 + i] = g[i] - s * self.Ia[i]

    cdef void _project(self, double* y) noexcept:
        cdef double s, kinetic, energy
        cdef int k
        polar_factor(y)  # R: the closest rotation
        # Omega: along I^-1 a onto a . Omega = 0 (orthogonal in the kinetic-energy metric)
        s = (self.a[0] * y[9] + self.a[1] * y[10] + self.a[2] * y[11]) / self.denom
        for k in range(3):
            y[9 + k] -= s * self.Ia[k]
        if self.energy_level == self.energy_level:  # not NaN: scale Omega onto the level
            kinetic = self._kinetic(y)
            energy = self._energy(y)
            s = energy_correction(energy - self.energy_level, 2.0 * kinetic)
            if s == 0.0 and energy != self.energy_level:
                self.energy_misses += 1  # at rest: no scaling reaches the level
            for k in range(3):
                y[9 + k] += s * y[9 + k]


cdef class CoordinateField:
    """The right-hand side of a compiled coordinate model and its projection (see the twin,
    :class:`nhphys.twins.rhs.CoordinateField`): state ``(q, v, W)`` (2 n + 1,)."""

    cdef readonly CoordinateModel model
    cdef readonly BodyForces forces   # None without force elements
    cdef readonly Py_ssize_t size
    cdef public long evaluations
    cdef bint have_table
    cdef Dop853Table table

    def __init__(self, CoordinateModel model, BodyForces forces=None):
        self.model = model
        self.forces = None if forces is None or forces.empty else forces
        self.size = 2 * model.n + 1
        self.evaluations = 0
        if self.size > DOP_NMAX:  # NMAX = 8 keeps it at 17
            raise ValueError(f"Expected a state of at most {DOP_NMAX} entries, got {self.size}.")

    def integrate(self, y, double t0, double t1, double rtol, double atol, double h_abs,
                  long max_steps, bint project=True):
        """Advance ``y`` (2 n + 1,) in place from ``t0`` to ``t1`` by DOP853 with the field in
        C, projecting every accepted step unless ``project`` is False; returns ``(status,
        solver_code, h_next, steps)`` (the twin's docstring). A singular constraint matrix
        raises ``ValueError`` as a call of the field does (the state is left at the last
        accepted step)."""
        cdef double* data = writable_state(y, self.size)
        out = dop853_run(self, _coordinate_rates, _coordinate_project, project, &self.table,
                         &self.have_table, <int>self.size, data, t0, t1, rtol, atol, h_abs,
                         max_steps, &self.evaluations)
        if out[0] == SINGULAR:
            raise ValueError("The constraint matrix is singular at this state "
                             "(mu M^-1 mu^T cannot be inverted).")
        return out

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def __call__(self, double t, y):
        """``dy/dt`` (2 n + 1,) at time ``t`` and state ``y`` (2 n + 1,)."""
        cdef cnp.ndarray arr = as_state(y, self.size)
        cdef cnp.npy_intp dim = self.size
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(1, &dim, cnp.NPY_DOUBLE, 0)
        self.evaluations += 1
        if not self._rhs(t, <const double*>cnp.PyArray_DATA(arr),
                         <double*>cnp.PyArray_DATA(out)):
            raise ValueError("The constraint matrix is singular at this state "
                             "(mu M^-1 mu^T cannot be inverted).")
        return out

    def project(self, y, double t=0.0):
        """Put the velocities of ``y`` (2 n + 1,) onto the constraint space, in place (``t`` is
        unused)."""
        if not self._project(writable_state(y, self.size)):
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
