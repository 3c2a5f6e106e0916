# DOP853 (Dormand and Prince's order-8 pair with Hairer's error estimator) as one inline step
# loop shared by the compiled fields (RollingField, SuslovField, CoordinateField), so that a whole
# output interval runs in C with no Python call per stage. The specification is
# nhphys/twins/dop853.py (`integrate`): scipy's solve_ivp DOP853 step by step, with the optional
# projection after every accepted step.
#
# Design: the field is reached through two C function pointers and an opaque context (the field
# object), not through a cdef base class, so that the fields keep their own modules and no module
# depends on another's class layout. The loop holds the GIL (a field may call a Python ground),
# and a field's status other than 0 ends the interval with the state at the last accepted step.

from libc.math cimport fabs, sqrt, pow, nextafter, INFINITY

cdef enum:
    DOP_STAGES = 12  # stages a step (a 13th: the rates at its end, the next step's first)
    DOP_NMAX = 24    # the largest state a field may have

# the loop's solver codes (the twin's SOLVER_OK, TOO_MANY_STEPS, STEP_TOO_SMALL)
cdef enum:
    SOLVER_OK = 0
    SOLVER_TOO_MANY_STEPS = 1
    SOLVER_STEP_TOO_SMALL = 2

# the field: rates at (t, y) into out, 0 or a status; the projection of y in place, 0 or a status
ctypedef int (*rates_fn)(object field, double t, const double* y, double* out) noexcept
ctypedef int (*project_fn)(object field, double t, double* y) noexcept


cdef struct Dop853Table:
    double A[DOP_STAGES * DOP_STAGES]
    double B[DOP_STAGES]
    double C[DOP_STAGES]
    double E3[DOP_STAGES + 1]
    double E5[DOP_STAGES + 1]


cdef inline void dop853_load(Dop853Table* tab):
    # the coefficients from the twin (scipy's copy of dop853.f's), once per field
    from nhphys.twins.dop853 import dop853_table

    A, B, C, E3, E5 = dop853_table()
    cdef int i, j
    for i in range(DOP_STAGES):
        tab.B[i] = B[i]
        tab.C[i] = C[i]
        for j in range(DOP_STAGES):
            tab.A[DOP_STAGES * i + j] = A[i][j]
    for i in range(DOP_STAGES + 1):
        tab.E3[i] = E3[i]
        tab.E5[i] = E5[i]


cdef inline int dop853_integrate(object field, rates_fn rates, project_fn project,
                                 const Dop853Table* tab, int n, double* y, double t,
                                 double t_bound, double rtol, double atol, double* h_io,
                                 long max_steps, long* steps, long* evaluations,
                                 int* code) noexcept:
    # the twin's integrate: returns 0 or the status of a field call (or projection) that failed;
    # code[0] gets the solver code; h_io in: the first trial step (0: select_initial_step),
    # out: the step to start the next interval with (on a failure: the step reached, as the
    # twin returns). project may be NULL (no projection).
    cdef double K[(DOP_STAGES + 1) * DOP_NMAX]
    cdef double yt[DOP_NMAX]
    cdef double yn[DOP_NMAX]
    cdef double h_abs = h_io[0], h, t_new, min_step, sc, e5, e3, n5, n3, en, factor
    cdef double d0, d1, d2, h0, h1, h_before = 0.0, acc
    cdef bint rejected, truncated = False
    cdef int st, i, j, stage
    code[0] = SOLVER_OK
    evaluations[0] += 1
    st = rates(field, t, y, K)
    if st != 0:
        h_io[0] = h_abs
        return st
    if not h_abs > 0.0:  # the first step: select_initial_step (order 7)
        d0 = 0.0
        d1 = 0.0
        for i in range(n):
            sc = atol + fabs(y[i]) * rtol
            d0 += (y[i] / sc) ** 2
            d1 += (K[i] / sc) ** 2
        d0 = sqrt(d0) / sqrt(<double>n)
        d1 = sqrt(d1) / sqrt(<double>n)
        h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(h0, fabs(t_bound - t))
        for i in range(n):
            yt[i] = y[i] + h0 * K[i]
        evaluations[0] += 1
        st = rates(field, t + h0, yt, yn)
        if st != 0:
            h_io[0] = h_abs
            return st
        d2 = 0.0
        for i in range(n):
            sc = atol + fabs(y[i]) * rtol
            d2 += ((yn[i] - K[i]) / sc) ** 2
        d2 = sqrt(d2) / sqrt(<double>n) / h0
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = max(1e-6, h0 * 1e-3)
        else:
            h1 = pow(0.01 / max(d1, d2), 1.0 / 8.0)
        h_abs = min(100 * h0, min(h1, fabs(t_bound - t)))
    while t < t_bound:
        if steps[0] >= max_steps:
            code[0] = SOLVER_TOO_MANY_STEPS
            h_io[0] = h_abs
            return 0
        min_step = 10 * fabs(nextafter(t, INFINITY) - t)
        if h_abs < min_step:
            h_abs = min_step
        rejected = False
        while True:
            if h_abs < min_step:
                code[0] = SOLVER_STEP_TOO_SMALL
                h_io[0] = h_abs
                return 0
            h = h_abs
            t_new = t + h
            truncated = t_new > t_bound
            if truncated:
                h_before = h_abs
                t_new = t_bound
            h = t_new - t
            h_abs = fabs(h)
            for stage in range(1, DOP_STAGES):
                for i in range(n):
                    acc = 0.0
                    for j in range(stage):
                        acc += K[n * j + i] * tab.A[DOP_STAGES * stage + j]
                    yt[i] = y[i] + acc * h
                evaluations[0] += 1
                st = rates(field, t + tab.C[stage] * h, yt, K + n * stage)
                if st != 0:
                    h_io[0] = h_abs
                    return st
            for i in range(n):
                acc = 0.0
                for j in range(DOP_STAGES):
                    acc += K[n * j + i] * tab.B[j]
                yn[i] = y[i] + h * acc
            evaluations[0] += 1
            st = rates(field, t + h, yn, K + n * DOP_STAGES)
            if st != 0:
                h_io[0] = h_abs
                return st
            n5 = 0.0
            n3 = 0.0
            for i in range(n):
                sc = atol + max(fabs(y[i]), fabs(yn[i])) * rtol
                e5 = 0.0
                e3 = 0.0
                for j in range(DOP_STAGES + 1):
                    e5 += K[n * j + i] * tab.E5[j]
                    e3 += K[n * j + i] * tab.E3[j]
                n5 += (e5 / sc) ** 2
                n3 += (e3 / sc) ** 2
            if n5 == 0.0 and n3 == 0.0:
                en = 0.0
            else:
                en = h_abs * n5 / sqrt((n5 + 0.01 * n3) * n)
            if en < 1.0:
                if en == 0.0:
                    factor = 10.0
                else:
                    factor = min(10.0, 0.9 * pow(en, -0.125))
                if rejected:
                    factor = min(1.0, factor)
                h_abs *= factor
                break
            h_abs *= max(0.2, 0.9 * pow(en, -0.125))
            rejected = True
            truncated = False  # a rejected step is retried from the smaller step
        t = t_new
        if project != NULL:
            st = project(field, t, yn)
            if st != 0:
                h_io[0] = h_abs
                return st
        for i in range(n):
            y[i] = yn[i]
            K[i] = K[n * DOP_STAGES + i]
        steps[0] += 1
    # the step to start the next interval with: the last accepted one's proposal, or, if that
    # step was cut short to end on t_bound, the step it would have taken
    h_io[0] = max(h_abs, h_before) if truncated else h_abs
    return 0


cdef inline tuple dop853_run(object field, rates_fn rates, project_fn projection, bint project,
                             Dop853Table* tab, bint* loaded, int n, double* y, double t0,
                             double t1, double rtol, double atol, double h_abs, long max_steps,
                             long* evaluations):
    # what a field's integrate() does after checking y: the table (loaded on first use), the
    # projection unless project is False, the loop; returns (status, solver code, h_next,
    # steps) as the twin's integrate
    cdef long steps = 0
    cdef int code = SOLVER_OK
    cdef int st
    if not loaded[0]:
        dop853_load(tab)
        loaded[0] = True
    if not project:
        projection = NULL
    st = dop853_integrate(field, rates, projection, tab, n, y, t0, t1, rtol, atol, &h_abs,
                          max_steps, &steps, evaluations, &code)
    return st, code, h_abs, steps
