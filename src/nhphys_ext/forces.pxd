# The applied forces of a rigid body as data (the twin, and the derivation of how steps use
# them, is nhphys/twins/forces.py): a ForceSet evaluates, without the GIL, the wrench of its
# potential elements, of its time- and pose-dependent elements, and its damping.

cimport cython
from libc.math cimport sqrt

from nhphys_ext.dense cimport matTvec3, matvec3

cdef enum:
    FRAME_SPACE = 0  # a force's or torque's components are in space
    FRAME_BODY = 1   # in the body frame


@cython.final
cdef class ForceSet:
    cdef readonly bint empty
    cdef double[::1] breaks
    cdef double[::1] coef
    cdef Py_ssize_t[:, ::1] sched
    cdef Py_ssize_t[:, ::1] force_rows
    cdef double[:, ::1] force_points
    cdef Py_ssize_t[:, ::1] torque_rows
    cdef double[:, ::1] springs
    cdef double field[3]
    cdef double[:, ::1] motor_values
    cdef Py_ssize_t[:, ::1] motor_rows
    cdef readonly double drag, spin_all, spin_normal, rolling
    # which parts can be nonzero (the others are skipped: their zeros are the same numbers)
    cdef readonly bint has_potential   # springs or a field
    cdef readonly bint has_applied     # forces, torques or motors
    cdef readonly bint has_damping     # drag, spin, rolling or a motor's speed control
    # the arrays above as raw pointers (NULL when empty) and their rows: the per-step methods
    # read these, not the memoryviews, which cost an index computation per access
    cdef Py_ssize_t n_forces, n_torques, n_springs, n_motors
    cdef const double* p_breaks
    cdef const double* p_coef
    cdef const Py_ssize_t* p_sched
    cdef const Py_ssize_t* p_force_rows
    cdef const double* p_force_points
    cdef const Py_ssize_t* p_torque_rows
    cdef const double* p_springs
    cdef const double* p_motor_values
    cdef const Py_ssize_t* p_motor_rows

    cdef void evaluate(self, Py_ssize_t j, double t, double* out) noexcept nogil
    cdef double potential(self, const double* A, const double* a) noexcept nogil
    cdef void potential_wrench(self, const double* A, const double* a, double* f,
                               double* tau) noexcept nogil
    cdef void applied_wrench(self, double t, const double* A, const double* a, double* f,
                             double* tau) noexcept nogil
    cdef double damping(self, const double* A, const double* n, double* D) noexcept nogil
    cdef double wrench(self, double t, const double* A, const double* a, const double* n,
                       double* f_pot, double* tau_pot, double* f_app, double* tau_app,
                       double* D) noexcept nogil


# -- the per-step evaluations, inline so that a kernel's step compiles them in (the methods
# above call them too: one arithmetic) --------------------------------------------------------

cdef inline void add_cross(const double* r, const double* w, double* out) noexcept nogil:
    # out += r x w
    out[0] += r[1] * w[2] - r[2] * w[1]
    out[1] += r[2] * w[0] - r[0] * w[2]
    out[2] += r[0] * w[1] - r[1] * w[0]


cdef inline void schedule_value(ForceSet fs, Py_ssize_t j, double t, Py_ssize_t d,
                                double* out) noexcept nogil:
    # schedule j at time t (the twin's evaluate_schedule), of dimension d (the schedule's own:
    # 3 for a force or torque, 1 for a motor; given by the caller so that the compiler knows it
    # and can unroll the loops over it)
    cdef const Py_ssize_t* row = fs.p_sched + 4 * j
    cdef Py_ssize_t m = row[1], c0 = row[2]
    cdef const double* br = fs.p_breaks + row[0]
    cdef const double* cf
    cdef Py_ssize_t i = 0, lo, hi, mid, c
    cdef double tt = t, s
    if m == 1:  # a constant: its polynomial's other coefficients are zeros
        for c in range(d):
            out[c] = fs.p_coef[c0 + 4 * c]
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
        cf = fs.p_coef + c0 + 4 * (i * d + c)
        out[c] = cf[0] + s * (cf[1] + s * (cf[2] + s * cf[3]))


cdef inline void add_potential_wrench(ForceSet fs, const double* A, const double* a,
                               double* f, double* tau) noexcept nogil:
    # f, tau += the wrench of the springs and the field (tau in the body frame)
    cdef double Ar[3]
    cdef double d[3]
    cdef double force[3]
    cdef double body[3]
    cdef double length, scale
    cdef const double* sp
    cdef Py_ssize_t j
    cdef int i
    for i in range(3):
        f[i] += fs.field[i]
    for j in range(fs.n_springs):
        sp = fs.p_springs + 8 * j
        matvec3(A, sp, Ar)
        for i in range(3):
            d[i] = a[i] + Ar[i] - sp[3 + i]
        length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        if length == 0.0:
            continue
        scale = -sp[6] * (length - sp[7]) / length
        for i in range(3):
            force[i] = scale * d[i]
            f[i] += force[i]
        matTvec3(A, force, body)
        add_cross(sp, body, tau)

cdef inline void add_loads(ForceSet fs, double t, const double* A, double* f,
                           double* tau) noexcept nogil:
    # f, tau += the wrench of the forces and torques at time t (tau in the body frame)
    cdef double value[3]
    cdef double force[3]
    cdef double body[3]
    cdef const Py_ssize_t* row
    cdef Py_ssize_t j
    cdef int i
    for j in range(fs.n_forces):
        row = fs.p_force_rows + 4 * j
        schedule_value(fs, row[0], t, 3, value)
        if row[1] == FRAME_BODY:
            matvec3(A, value, force)
        else:
            for i in range(3):
                force[i] = value[i]
        for i in range(3):
            f[i] += force[i]
        if row[2]:
            matTvec3(A, force, body)
            add_cross(fs.p_force_points + 3 * j, body, tau)
    for j in range(fs.n_torques):
        row = fs.p_torque_rows + 2 * j
        schedule_value(fs, row[0], t, 3, value)
        if row[1] == FRAME_SPACE:
            matTvec3(A, value, body)
            for i in range(3):
                tau[i] += body[i]
        else:
            for i in range(3):
                tau[i] += value[i]


cdef inline void add_motor_torques(ForceSet fs, double t, double* tau) noexcept nogil:
    # tau += the motors' torques at time t (body frame)
    cdef double value[1]
    cdef double amount
    cdef const Py_ssize_t* row
    cdef const double* mv
    cdef Py_ssize_t j
    cdef int i
    for j in range(fs.n_motors):
        row = fs.p_motor_rows + 3 * j
        mv = fs.p_motor_values + 5 * j
        amount = 0.0
        if row[0] >= 0:
            schedule_value(fs, row[0], t, 1, value)
            amount += value[0]
        if row[1] >= 0:
            schedule_value(fs, row[1], t, 1, value)
            amount += mv[3] * value[0]
        for i in range(3):
            tau[i] += amount * mv[i]


cdef inline void add_applied_wrench(ForceSet fs, double t, const double* A, const double* a,
                                    double* f, double* tau) noexcept nogil:
    # f, tau += the wrench of the forces, torques and motors at time t (tau in the body frame)
    add_loads(fs, t, A, f, tau)
    add_motor_torques(fs, t, tau)
