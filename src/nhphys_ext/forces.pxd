# The applied forces of a rigid body as data (the twin, and the derivation of how steps use
# them, is nhphys/twins/forces.py): a ForceSet evaluates, without the GIL, the wrench of its
# potential elements, of its time- and pose-dependent elements, and its damping.

cimport cython


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
