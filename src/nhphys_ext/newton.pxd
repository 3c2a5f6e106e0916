# The one Newton solver of the kernels, and the one table of step statuses.
#
# Every implicit step and every contact solve calls newton_solve() with its own residual and
# Jacobian (function pointers over a problem struct of the caller's) and its own NewtonRule.
# It is `cdef inline` so that each kernel module gets its own copy, in which the compiler sees
# the constant callbacks and inlines them: no indirect call per iteration on the fast path.
# The specification, with the stopping rule written out, is nhphys/twins/newton.py; the
# statuses below must match its STATUS table (tests/test_newton.py checks it through
# nhphys_ext.newton.status_table()).

from libc.float cimport DBL_MIN
from libc.math cimport fabs, fmax, isfinite, INFINITY

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
    TOO_MANY_EVENTS = 12   # more mode changes in one step than a step may hold


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
            # (the floor never below the smallest normal double: the twin's stopping rule)
            if fabs(F[i]) > rule.correction_tol * (fabs(x[i]) + fmax(x_floor[i], DBL_MIN)):
                small = False
        if small:
            return OK
    return NOT_CONVERGED


# The globalised rule (twin: newton_solve_damped, MAX_HALVINGS, ARMIJO of nhphys/twins/newton.py)
DEF MAX_HALVINGS = 12
DEF ARMIJO = 1e-4


cdef inline double scaled_merit(int n, const double* F, const double* weight) noexcept nogil:
    # sum (F_i weight_i)^2, or inf off the finite numbers
    cdef double m = 0.0, r
    cdef int i
    for i in range(n):
        r = F[i] * weight[i]
        m += r * r
    return m if isfinite(m) else INFINITY


cdef inline int newton_solve_damped(residual_fn residual, jacobian_fn jacobian, void* problem,
                                    int n, double* x, const double* x_floor,
                                    NewtonRule rule) noexcept nogil:
    # newton_solve with step halving (a backtracking line search on the scaled residual): the
    # same stopping rule; each correction is halved (at most MAX_HALVINGS times) until
    # sum (F_i(y) / F_scale_i(x))^2 decreases by the factor (1 - 2 ARMIJO lam); the
    # correction test only after a full-length correction. The arithmetic is the twin's.
    cdef double F[NEWTON_MAX]
    cdef double F_scale[NEWTON_MAX]
    cdef double dx[NEWTON_MAX]
    cdef double y[NEWTON_MAX]
    cdef double weight[NEWTON_MAX]
    cdef double J[NEWTON_MAX * NEWTON_MAX]
    cdef double merit, lam
    cdef int it, i, st, halving
    cdef bint small, accepted, finite
    st = residual(problem, x, F, F_scale)
    if st != OK:
        return st
    for it in range(rule.max_iter):
        for i in range(n):
            if not isfinite(F[i]):
                return NOT_FINITE
        if rule.residual_tol > 0.0:
            small = True
            for i in range(n):
                if fabs(F[i]) > rule.residual_tol * F_scale[i]:
                    small = False
            if small:
                return OK
        st = jacobian(problem, x, J)
        if st != OK:
            return st
        for i in range(n):
            dx[i] = F[i]
            weight[i] = 1.0 / (F_scale[i] if F_scale[i] > 0.0 else 1.0)
        if not solve_small(n, J, dx):
            return SINGULAR_JACOBIAN
        merit = scaled_merit(n, F, weight)
        lam = 1.0
        accepted = False
        for halving in range(MAX_HALVINGS + 1):
            finite = True
            for i in range(n):
                y[i] = x[i] - lam * dx[i]
                if not isfinite(y[i]):
                    finite = False
            if finite:
                st = residual(problem, y, F, F_scale)  # may re-chart y
                if st == OK and scaled_merit(n, F, weight) <= (1.0 - 2.0 * ARMIJO * lam) * merit:
                    accepted = True
                    break
            lam *= 0.5
        if not accepted:
            return NOT_CONVERGED
        small = lam == 1.0
        for i in range(n):
            x[i] = y[i]
            if fabs(dx[i]) > rule.correction_tol * (fabs(x[i]) + fmax(x_floor[i], DBL_MIN)):
                small = False
        if small:
            return OK
    return NOT_CONVERGED
