# The applied forces of a rigid body as data: the kernel of nhphys/twins/forces.py (same
# arrays, same arithmetic, same order of operations). Matrices are row-major double[9].

cimport cython
from libc.math cimport sqrt

import numpy as np

DEF FRAME_SPACE = 0
DEF FRAME_BODY = 1


cdef inline void matvec(const double* M, const double* v, double* out) noexcept nogil:
    cdef int i
    for i in range(3):
        out[i] = M[3 * i] * v[0] + M[3 * i + 1] * v[1] + M[3 * i + 2] * v[2]


cdef inline void matTvec(const double* M, const double* v, double* out) noexcept nogil:
    cdef int i
    for i in range(3):
        out[i] = M[i] * v[0] + M[3 + i] * v[1] + M[6 + i] * v[2]


cdef inline void add_cross(const double* r, const double* w, double* out) noexcept nogil:
    # out += r x w
    out[0] += r[1] * w[2] - r[2] * w[1]
    out[1] += r[2] * w[0] - r[0] * w[2]
    out[2] += r[0] * w[1] - r[1] * w[0]


cdef class ForceSet:
    """Every force element of one body, as arrays (see the twin for the parameters)."""

    def __init__(self, breaks, coef, sched, force_rows, force_points, torque_rows, springs,
                 field, motor_values, motor_rows, double drag, double spin_all,
                 double spin_normal, double rolling):
        cdef int i
        self.breaks = np.ascontiguousarray(breaks, dtype=float)
        self.coef = np.ascontiguousarray(coef, dtype=float)
        self.sched = np.ascontiguousarray(sched, dtype=np.intp).reshape(-1, 4)
        self.force_rows = np.ascontiguousarray(force_rows, dtype=np.intp).reshape(-1, 4)
        self.force_points = np.ascontiguousarray(force_points, dtype=float).reshape(-1, 3)
        self.torque_rows = np.ascontiguousarray(torque_rows, dtype=np.intp).reshape(-1, 2)
        self.springs = np.ascontiguousarray(springs, dtype=float).reshape(-1, 8)
        field = np.asarray(field, dtype=float)
        for i in range(3):
            self.field[i] = field[i]
        self.motor_values = np.ascontiguousarray(motor_values, dtype=float).reshape(-1, 5)
        self.motor_rows = np.ascontiguousarray(motor_rows, dtype=np.intp).reshape(-1, 3)
        self.drag = drag
        self.spin_all = spin_all
        self.spin_normal = spin_normal
        self.rolling = rolling
        self.empty = not (self.force_rows.shape[0] or self.torque_rows.shape[0]
                          or self.springs.shape[0] or self.motor_rows.shape[0]
                          or self.field[0] or self.field[1] or self.field[2]
                          or drag or spin_all or spin_normal or rolling)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef void evaluate(self, Py_ssize_t j, double t, double* out) noexcept nogil:
        # schedule j at time t (the twin's evaluate_schedule)
        cdef Py_ssize_t b0 = self.sched[j, 0], m = self.sched[j, 1]
        cdef Py_ssize_t c0 = self.sched[j, 2], d = self.sched[j, 3]
        cdef Py_ssize_t i = 0, lo, hi, mid, c, k
        cdef double tt = t, s
        if m > 1:
            if tt <= self.breaks[b0]:
                tt = self.breaks[b0]
            elif tt >= self.breaks[b0 + m - 1]:
                tt = self.breaks[b0 + m - 1]
                i = m - 2
            else:
                lo = 0
                hi = m - 1
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if self.breaks[b0 + mid] <= tt:
                        lo = mid
                    else:
                        hi = mid
                i = lo
        s = tt - self.breaks[b0 + i]
        for c in range(d):
            k = c0 + 4 * (i * d + c)
            out[c] = self.coef[k] + s * (self.coef[k + 1] + s * (self.coef[k + 2]
                                                                 + s * self.coef[k + 3]))

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef double potential(self, const double* A, const double* a) noexcept nogil:
        cdef double V = -(self.field[0] * a[0] + self.field[1] * a[1] + self.field[2] * a[2])
        cdef double Ar[3]
        cdef double d[3]
        cdef double stretch
        cdef Py_ssize_t j
        cdef int i
        for j in range(self.springs.shape[0]):
            matvec(A, &self.springs[j, 0], Ar)
            for i in range(3):
                d[i] = a[i] + Ar[i] - self.springs[j, 3 + i]
            stretch = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - self.springs[j, 7]
            V += 0.5 * self.springs[j, 6] * stretch * stretch
        return V

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef void potential_wrench(self, const double* A, const double* a, double* f,
                               double* tau) noexcept nogil:
        cdef double Ar[3]
        cdef double d[3]
        cdef double force[3]
        cdef double body[3]
        cdef double length, scale
        cdef Py_ssize_t j
        cdef int i
        for i in range(3):
            f[i] += self.field[i]
        for j in range(self.springs.shape[0]):
            matvec(A, &self.springs[j, 0], Ar)
            for i in range(3):
                d[i] = a[i] + Ar[i] - self.springs[j, 3 + i]
            length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            if length == 0.0:
                continue
            scale = -self.springs[j, 6] * (length - self.springs[j, 7]) / length
            for i in range(3):
                force[i] = scale * d[i]
                f[i] += force[i]
            matTvec(A, force, body)
            add_cross(&self.springs[j, 0], body, tau)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef void applied_wrench(self, double t, const double* A, const double* a, double* f,
                             double* tau) noexcept nogil:
        cdef double value[3]
        cdef double force[3]
        cdef double body[3]
        cdef double amount
        cdef Py_ssize_t j
        cdef int i
        for j in range(self.force_rows.shape[0]):
            self.evaluate(self.force_rows[j, 0], t, value)
            if self.force_rows[j, 1] == FRAME_BODY:
                matvec(A, value, force)
            else:
                for i in range(3):
                    force[i] = value[i]
            for i in range(3):
                f[i] += force[i]
            if self.force_rows[j, 2]:
                matTvec(A, force, body)
                add_cross(&self.force_points[j, 0], body, tau)
        for j in range(self.torque_rows.shape[0]):
            self.evaluate(self.torque_rows[j, 0], t, value)
            if self.torque_rows[j, 1] == FRAME_SPACE:
                matTvec(A, value, body)
                for i in range(3):
                    tau[i] += body[i]
            else:
                for i in range(3):
                    tau[i] += value[i]
        for j in range(self.motor_rows.shape[0]):
            amount = 0.0
            if self.motor_rows[j, 0] >= 0:
                self.evaluate(self.motor_rows[j, 0], t, value)
                amount += value[0]
            if self.motor_rows[j, 1] >= 0:
                self.evaluate(self.motor_rows[j, 1], t, value)
                amount += self.motor_values[j, 3] * value[0]
            for i in range(3):
                tau[i] += amount * self.motor_values[j, i]

    @cython.boundscheck(False)
    @cython.wraparound(False)
    cdef double damping(self, const double* A, const double* n, double* D) noexcept nogil:
        cdef double nb[3]
        cdef Py_ssize_t j
        cdef int r, c
        matTvec(A, n, nb)
        for r in range(3):
            for c in range(3):
                D[3 * r + c] += (self.spin_all if r == c else 0.0) + self.spin_normal * nb[r] * nb[c]
        for j in range(self.motor_rows.shape[0]):
            for r in range(3):
                for c in range(3):
                    D[3 * r + c] += (self.motor_values[j, 3] * self.motor_values[j, r]
                                     * self.motor_values[j, c])
        return self.drag

    cdef double wrench(self, double t, const double* A, const double* a, const double* n,
                       double* f_pot, double* tau_pot, double* f_app, double* tau_app,
                       double* D) noexcept nogil:
        # the twin's wrench (without callables): zeroes the outputs, returns the drag
        cdef int i
        for i in range(3):
            f_pot[i] = 0.0
            tau_pot[i] = 0.0
            f_app[i] = 0.0
            tau_app[i] = 0.0
        for i in range(9):
            D[i] = 0.0
        self.potential_wrench(A, a, f_pot, tau_pot)
        self.applied_wrench(t, A, a, f_app, tau_app)
        return self.damping(A, n, D)

    # -- the twin's methods, callable from Python (for the parity tests) -----------------------
    def py_potential(self, A, a):
        cdef double[:, ::1] Am = np.ascontiguousarray(A, dtype=float)
        cdef double[::1] am = np.ascontiguousarray(a, dtype=float)
        return self.potential(&Am[0, 0], &am[0])

    def py_wrenches(self, double t, A, a, n):
        """``(f_potential, tau_potential, f_applied, tau_applied, D, drag)`` at ``(t, A, a)``
        with contact normal ``n``."""
        cdef double[:, ::1] Am = np.ascontiguousarray(A, dtype=float)
        cdef double[::1] am = np.ascontiguousarray(a, dtype=float)
        cdef double[::1] nm = np.ascontiguousarray(n, dtype=float)
        cdef double[::1] fp = np.zeros(3), tp = np.zeros(3), fa = np.zeros(3), ta = np.zeros(3)
        cdef double[:, ::1] D = np.zeros((3, 3))
        drag = self.wrench(t, &Am[0, 0], &am[0], &nm[0], &fp[0], &tp[0], &fa[0], &ta[0],
                           &D[0, 0])
        return (np.asarray(fp), np.asarray(tp), np.asarray(fa), np.asarray(ta), np.asarray(D),
                drag)
