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
        self.n_forces = self.force_rows.shape[0]
        self.n_torques = self.torque_rows.shape[0]
        self.n_springs = self.springs.shape[0]
        self.n_motors = self.motor_rows.shape[0]
        self.p_breaks = &self.breaks[0] if self.breaks.shape[0] else NULL
        self.p_coef = &self.coef[0] if self.coef.shape[0] else NULL
        self.p_sched = &self.sched[0, 0] if self.sched.shape[0] else NULL
        self.p_force_rows = &self.force_rows[0, 0] if self.n_forces else NULL
        self.p_force_points = (&self.force_points[0, 0] if self.force_points.shape[0]
                               else NULL)
        self.p_torque_rows = &self.torque_rows[0, 0] if self.n_torques else NULL
        self.p_springs = &self.springs[0, 0] if self.n_springs else NULL
        self.p_motor_values = (&self.motor_values[0, 0] if self.motor_values.shape[0]
                               else NULL)
        self.p_motor_rows = &self.motor_rows[0, 0] if self.n_motors else NULL
        self.has_potential = (self.n_springs > 0 or self.field[0] != 0.0
                              or self.field[1] != 0.0 or self.field[2] != 0.0)
        self.has_applied = self.n_forces > 0 or self.n_torques > 0 or self.n_motors > 0
        self.has_damping = (drag != 0.0 or spin_all != 0.0 or spin_normal != 0.0
                            or rolling != 0.0)
        for i in range(self.motor_values.shape[0]):
            if self.motor_values[i, 3] != 0.0:
                self.has_damping = True

    cdef void evaluate(self, Py_ssize_t j, double t, double* out) noexcept nogil:
        # schedule j at time t (the twin's evaluate_schedule)
        cdef const Py_ssize_t* row = self.p_sched + 4 * j
        cdef Py_ssize_t m = row[1], c0 = row[2], d = row[3]
        cdef const double* br = self.p_breaks + row[0]
        cdef const double* cf
        cdef Py_ssize_t i = 0, lo, hi, mid, c
        cdef double tt = t, s
        if m == 1:  # a constant: its polynomial's other coefficients are zeros
            for c in range(d):
                out[c] = self.p_coef[c0 + 4 * c]
            return
        if m > 1:
            if tt <= br[0]:
                tt = br[0]
            elif tt >= br[m - 1]:
                tt = br[m - 1]
                i = m - 2
            else:
                lo = 0
                hi = m - 1
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if br[mid] <= tt:
                        lo = mid
                    else:
                        hi = mid
                i = lo
        s = tt - br[i]
        for c in range(d):
            cf = self.p_coef + c0 + 4 * (i * d + c)
            out[c] = cf[0] + s * (cf[1] + s * (cf[2] + s * cf[3]))

    cdef double potential(self, const double* A, const double* a) noexcept nogil:
        cdef double V = -(self.field[0] * a[0] + self.field[1] * a[1] + self.field[2] * a[2])
        cdef double Ar[3]
        cdef double d[3]
        cdef double stretch
        cdef const double* sp
        cdef Py_ssize_t j
        cdef int i
        for j in range(self.n_springs):
            sp = self.p_springs + 8 * j
            matvec(A, sp, Ar)
            for i in range(3):
                d[i] = a[i] + Ar[i] - sp[3 + i]
            stretch = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - sp[7]
            V += 0.5 * sp[6] * stretch * stretch
        return V

    cdef void potential_wrench(self, const double* A, const double* a, double* f,
                               double* tau) noexcept nogil:
        cdef double Ar[3]
        cdef double d[3]
        cdef double force[3]
        cdef double body[3]
        cdef double length, scale
        cdef const double* sp
        cdef Py_ssize_t j
        cdef int i
        for i in range(3):
            f[i] += self.field[i]
        for j in range(self.n_springs):
            sp = self.p_springs + 8 * j
            matvec(A, sp, Ar)
            for i in range(3):
                d[i] = a[i] + Ar[i] - sp[3 + i]
            length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            if length == 0.0:
                continue
            scale = -sp[6] * (length - sp[7]) / length
            for i in range(3):
                force[i] = scale * d[i]
                f[i] += force[i]
            matTvec(A, force, body)
            add_cross(sp, body, tau)

    cdef void applied_wrench(self, double t, const double* A, const double* a, double* f,
                             double* tau) noexcept nogil:
        cdef double value[3]
        cdef double force[3]
        cdef double body[3]
        cdef double amount
        cdef const Py_ssize_t* row
        cdef const double* mv
        cdef Py_ssize_t j
        cdef int i
        for j in range(self.n_forces):
            row = self.p_force_rows + 4 * j
            self.evaluate(row[0], t, value)
            if row[1] == FRAME_BODY:
                matvec(A, value, force)
            else:
                for i in range(3):
                    force[i] = value[i]
            for i in range(3):
                f[i] += force[i]
            if row[2]:
                matTvec(A, force, body)
                add_cross(self.p_force_points + 3 * j, body, tau)
        for j in range(self.n_torques):
            row = self.p_torque_rows + 2 * j
            self.evaluate(row[0], t, value)
            if row[1] == FRAME_SPACE:
                matTvec(A, value, body)
                for i in range(3):
                    tau[i] += body[i]
            else:
                for i in range(3):
                    tau[i] += value[i]
        for j in range(self.n_motors):
            row = self.p_motor_rows + 3 * j
            mv = self.p_motor_values + 5 * j
            amount = 0.0
            if row[0] >= 0:
                self.evaluate(row[0], t, value)
                amount += value[0]
            if row[1] >= 0:
                self.evaluate(row[1], t, value)
                amount += mv[3] * value[0]
            for i in range(3):
                tau[i] += amount * mv[i]

    cdef double damping(self, const double* A, const double* n, double* D) noexcept nogil:
        cdef double nb[3]
        cdef const double* mv
        cdef Py_ssize_t j
        cdef int r, c
        matTvec(A, n, nb)
        for r in range(3):
            for c in range(3):
                D[3 * r + c] += (self.spin_all if r == c else 0.0) + self.spin_normal * nb[r] * nb[c]
        for j in range(self.n_motors):
            mv = self.p_motor_values + 5 * j
            for r in range(3):
                for c in range(3):
                    D[3 * r + c] += mv[3] * mv[r] * mv[c]
        return self.drag

    cdef double wrench(self, double t, const double* A, const double* a, const double* n,
                       double* f_pot, double* tau_pot, double* f_app, double* tau_app,
                       double* D) noexcept nogil:
        # the twin's wrench (without callables): zeroes the outputs, returns the drag; the
        # parts that cannot be nonzero are left at their zeros
        cdef int i
        for i in range(3):
            f_pot[i] = 0.0
            tau_pot[i] = 0.0
            f_app[i] = 0.0
            tau_app[i] = 0.0
        for i in range(9):
            D[i] = 0.0
        if self.has_potential:
            self.potential_wrench(A, a, f_pot, tau_pot)
        if self.has_applied:
            self.applied_wrench(t, A, a, f_app, tau_app)
        if not self.has_damping:
            return self.drag
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
