# The applied forces of a rigid body as data: the kernel of nhphys/twins/forces.py (same
# arrays, same arithmetic, same order of operations). Matrices are row-major double[9].

cimport cython
from libc.math cimport sqrt

from nhphys_ext.dense cimport matTvec3, matvec3

import numpy as np


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
        # the per-step evaluations read 3 components of a force's or torque's schedule and 1
        # of a motor's (schedule_value)
        dims = np.asarray(self.sched)[:, 3]
        for rows, dim in ((np.asarray(self.force_rows)[:, :1], 3),
                          (np.asarray(self.torque_rows)[:, :1], 3),
                          (np.asarray(self.motor_rows)[:, :2], 1)):
            used = rows[rows >= 0]
            if np.any(dims[used] != dim):
                raise ValueError(f"Expected schedules of {dim} component(s) for these "
                                 f"elements, got {sorted(set(dims[used].tolist()))}.")

    cdef void evaluate(self, Py_ssize_t j, double t, double* out) noexcept nogil:
        schedule_value(self, j, t, self.p_sched[4 * j + 3], out)

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
            matvec3(A, sp, Ar)
            for i in range(3):
                d[i] = a[i] + Ar[i] - sp[3 + i]
            stretch = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - sp[7]
            V += 0.5 * sp[6] * stretch * stretch
        return V

    cdef void potential_wrench(self, const double* A, const double* a, double* f,
                               double* tau) noexcept nogil:
        add_potential_wrench(self, A, a, f, tau)

    cdef void applied_wrench(self, double t, const double* A, const double* a, double* f,
                             double* tau) noexcept nogil:
        add_applied_wrench(self, t, A, a, f, tau)

    cdef double damping(self, const double* A, const double* n, double* D) noexcept nogil:
        cdef double nb[3]
        cdef const double* mv
        cdef Py_ssize_t j
        cdef int r, c
        matTvec3(A, n, nb)
        for r in range(3):
            for c in range(3):
                D[3 * r + c] += ((self.spin_all if r == c else 0.0)
                                 + self.spin_normal * nb[r] * nb[c])
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
