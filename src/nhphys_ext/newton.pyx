# The step statuses of nhphys_ext/newton.pxd, seen from Python (to check them against the
# twin's table), and the shared Newton solver on a small built-in problem (to check it against
# the twin's solver). The solver itself is `cdef inline` in newton.pxd.

from libc.math cimport fabs

# (newton.pxd, this module's own declarations, is read automatically)


def status_table():
    """``{name: code}`` of the kernels' step statuses."""
    return {
        "OK": OK, "NOT_CONVERGED": NOT_CONVERGED, "SINGULAR_JACOBIAN": SINGULAR_JACOBIAN,
        "NOT_FINITE": NOT_FINITE, "FAR_BRANCH": FAR_BRANCH, "CONTACT_FAILED": CONTACT_FAILED,
        "SINGULAR_CONTACT": SINGULAR_CONTACT, "SUPPORT_FAILED": SUPPORT_FAILED, "FLAT": FLAT,
        "RIM_TO_SIDE": RIM_TO_SIDE, "INNER_CONTACT": INNER_CONTACT,
        "CALLBACK_RAISED": CALLBACK_RAISED, "TOO_MANY_EVENTS": TOO_MANY_EVENTS,
    }



def info_slots():
    """``{name: index}`` of the slots of the kernels' ``info`` arrays, and their size."""
    return {"INFO_STATUS": INFO_STATUS, "INFO_EVALUATIONS": INFO_EVALUATIONS,
            "INFO_COMMITTED": INFO_COMMITTED, "INFO_SIZE": INFO_SIZE}

cdef struct Cubic:
    double target[2]
    int evaluations
    int jacobians


cdef int cubic_residual(void* problem, double* x, double* F, double* F_scale) noexcept nogil:
    # F(x) = (x0^3 + x1 - t0, x1^3 - x0 - t1)
    cdef Cubic* c = <Cubic*>problem
    c.evaluations += 1
    F[0] = x[0] * x[0] * x[0] + x[1] - c.target[0]
    F[1] = x[1] * x[1] * x[1] - x[0] - c.target[1]
    F_scale[0] = fabs(x[0] * x[0] * x[0]) + fabs(x[1]) + fabs(c.target[0])
    F_scale[1] = fabs(x[1] * x[1] * x[1]) + fabs(x[0]) + fabs(c.target[1])
    return OK


cdef int cubic_jacobian(void* problem, const double* x, double* J) noexcept nogil:
    (<Cubic*>problem).jacobians += 1
    J[0] = 3.0 * x[0] * x[0]
    J[1] = 1.0
    J[2] = -1.0
    J[3] = 3.0 * x[1] * x[1]
    return OK


def solve_cubic(target, x0, x_floor, double correction_tol, double residual_tol, int max_iter):
    """Solve ``(x0^3 + x1, x1^3 - x0) = target`` with the shared Newton (see the twin).

    Returns ``(status, x (2,), residual evaluations, Jacobian evaluations)``.
    """
    cdef Cubic c
    cdef double x[2]
    cdef double floor[2]
    cdef NewtonRule rule
    cdef int i, st
    for i in range(2):
        c.target[i] = float(target[i])
        x[i] = float(x0[i])
        floor[i] = float(x_floor[i])
    c.evaluations = 0
    c.jacobians = 0
    rule.correction_tol = correction_tol
    rule.residual_tol = residual_tol
    rule.max_iter = max_iter
    st = newton_solve(cubic_residual, cubic_jacobian, &c, 2, x, floor, rule)
    return st, [x[0], x[1]], c.evaluations, c.jacobians
