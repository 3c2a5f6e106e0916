# The one Newton solver of the kernels, and the one table of step statuses.
#
# Every implicit step and every contact solve calls newton_solve() with its own residual and
# Jacobian (function pointers over a problem struct of the caller's) and its own NewtonRule.
# It is `cdef inline` so that each kernel module gets its own copy, in which the compiler sees
# the constant callbacks and inlines them: no indirect call per iteration on the fast path.
# The specification, with the stopping rule written out, is nhphys/twins/newton.py; the
# statuses below must match its STATUS table (tests/test_newton.py checks it through
# nhphys_ext.newton.status_table()).

from libc.math cimport fabs, isfinite

from nhphys_ext.dense cimport solve_small

DEF NEWTON_MAX = 16  # unknowns of the largest Newton problem (Newmark: n + r <= 12)

cdef enum Status:
    OK = 0
    NOT_CONVERGED = 1      # max_iter corrections without meeting the rule
    SINGULAR_JACOBIAN = 2  # the Newton matrix has a zero pivot
    NOT_FINITE = 3         # an iterate or a residual left the finite numbers
    FAR_BRANCH = 4         # a rotation step of pi or more: a spurious root of a far branch
    CONTACT_FAILED = 5     # the contact point could not be found
    SINGULAR_CONTACT = 6   # body and ground curvatures match (Lambda singular)
    SUPPORT_FAILED = 7     # the body's support point could not be found
    FLAT = 8               # contact event: a disk's or cylinder's face lies flat
    RIM_TO_SIDE = 9        # contact event: a cylinder rolls onto its side
    INNER_CONTACT = 10     # contact event: the inner part of a wheel's tube would touch
    CALLBACK_RAISED = 11   # a Python callback raised (the run re-raises its exception)


# The slots of a time loop's info array (twin: INFO_* of nhphys/twins/newton.py)
cdef enum:  # anonymous: plain int constants, usable as memoryview indices
    INFO_STATUS = 0        # the status of the failed step (OK when none failed)
    INFO_EVALUATIONS = 1   # residual evaluations of every Newton solve (where counted)
    INFO_COMMITTED = 2     # steps committed to the IN/OUT state in this call
    INFO_SIZE = 3


cdef struct NewtonRule:
    double correction_tol  # converged when every |dx_i| <= correction_tol (|x_i| + x_floor_i)
    double residual_tol    # ... or, before a correction, every |F_i| <= residual_tol F_scale_i
                           # (0 turns the residual test off)
    int max_iter           # corrections before NOT_CONVERGED


# residual(problem, x, F, F_scale): the residual F (n,) at x and the size F_scale (n,) that each
# equation's terms have (for the residual test). It may replace x by an equivalent point (a
# change of chart) before evaluating. Returns OK or a status, which newton_solve passes up.
ctypedef int (*residual_fn)(void* problem, double* x, double* F,
                            double* F_scale) noexcept nogil
# jacobian(problem, x, J): dF/dx (n x n, row-major) at the x of the residual call just made
# (it may use what that call stored in the problem). Returns OK or a status.
ctypedef int (*jacobian_fn)(void* problem, const double* x, double* J) noexcept nogil


cdef inline int newton_solve(residual_fn residual, jacobian_fn jacobian, void* problem, int n,
                             double* x, const double* x_floor, NewtonRule rule) noexcept nogil:
    # x: IN first guess / OUT solution; x_floor (n,): the size below which x_i counts as zero.
    cdef double F[NEWTON_MAX]
    cdef double F_scale[NEWTON_MAX]
    cdef double J[NEWTON_MAX * NEWTON_MAX]
    cdef int it, i, st
    cdef bint small
    for it in range(rule.max_iter):
        st = residual(problem, x, F, F_scale)
        if st != OK:
            return st
        if rule.residual_tol > 0.0:
            small = True
            for i in range(n):
                if not isfinite(F[i]):
                    return NOT_FINITE
                if fabs(F[i]) > rule.residual_tol * F_scale[i]:
                    small = False
            if small:
                return OK
        st = jacobian(problem, x, J)
        if st != OK:
            return st
        if not solve_small(n, J, F):
            return SINGULAR_JACOBIAN
        small = True
        for i in range(n):
            x[i] -= F[i]
            if not isfinite(x[i]):
                return NOT_FINITE
            if fabs(F[i]) > rule.correction_tol * (fabs(x[i]) + x_floor[i]):
                small = False
        if small:
            return OK
    return NOT_CONVERGED
