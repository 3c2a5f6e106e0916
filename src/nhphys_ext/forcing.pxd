# The symmetric discrete Lagrange-d'Alembert pair of force elements, shared by the kernels that
# take it: the Newmark/DLA end kick's solves (newmark.pyx) and the two kicks of the group
# retraction steps (se2_retraction.pyx on SE(2) x R^k, suslov.pyx on SO(3): one arithmetic,
# which was two copies). Raw row-major arrays, `cdef inline ... noexcept nogil`. The
# specification is the twins' ForcePair (nhphys/twins/newmark.py) and forced_step
# (nhphys/twins/se2_retraction.py, nhphys/twins/suslov.py).
#
# Group steps (d the algebra's dimension, m = dim of the constraint subspace, basis B (d, m),
# reduced = B^T I B (m, m)): at a node with momentum p (m,) the velocity is xi = B reduced^-1 p;
# the generalized force there is F_0 - C_g xi, of power (F_a - C_g xi) . xi. Sums start at their
# first term, as the 3-term sums of the SO(3) kernel did (a sum from 0.0 gives the same numbers
# up to the sign of an exact zero).

from libc.math cimport fabs, isfinite

from nhphys_ext.dense cimport invert_small, solve_small
from nhphys_ext.newton cimport OK, SINGULAR_JACOBIAN, NOT_FINITE


cdef inline double dot_row(const double* M, int i, int d, const double* x) noexcept nogil:
    # (M x)_i, M row-major with rows of d entries
    cdef double s = M[d * i] * x[0]
    cdef int j
    for j in range(1, d):
        s += M[d * i + j] * x[j]
    return s


cdef inline bint node_velocity(const double* reduced_inv, const double* B, int d, int m,
                               const double* p, const double* Fa, double* z, double* xi,
                               double* power) noexcept nogil:
    # z = (B^T I B)^-1 p, xi = B z, with the inverse formed once per run (invert_small: the
    # twin solves with B^T I B at each node, the same velocity to round-off); with Fa not
    # NULL, power = F_a . xi, summed from 0.0 as each xi_i is formed (reading xi back just
    # after writing it stalled the step). False when B^T I B is singular (reduced_inv NULL)
    cdef double x
    cdef double total = 0.0
    cdef int i, a
    if reduced_inv == NULL:
        return False
    for a in range(m):
        z[a] = dot_row(reduced_inv, a, m, p)
    for i in range(d):
        x = dot_row(B, i, m, z)
        xi[i] = x
        if Fa != NULL:
            total += Fa[i] * x
    if Fa != NULL:
        power[0] = total
    return True


cdef inline double dot_column(const double* B, int a, int d, int m,
                              const double* x) noexcept nogil:
    # (B^T x)_a, B (d, m) row-major
    cdef double s = B[a] * x[0]
    cdef int i
    for i in range(1, d):
        s += B[m * i + a] * x[i]
    return s


cdef inline double node_kick(int d, int m, const double* B, const double* Cg, bint damps,
                             bint powered, const double* Fa, const double* F0,
                             const double* xi, double* kick) noexcept nogil:
    # At a node (the start of a step): kick = B^T (F0 - C_g xi), the start kick's force (its
    # p_eff = p + h/2 kick); returns the power (F_a - C_g xi) . xi (0 when nothing is powered:
    # no applied element, no damping). The end of a step is the next step's start: end_kick
    # gives both for the node it reaches, so each is computed once per step.
    cdef double Fn[6]
    cdef double Cxi
    cdef double power = 0.0
    cdef int i, a
    if damps:
        for i in range(d):
            Cxi = dot_row(Cg, i, d, xi)
            power += (Fa[i] - Cxi) * xi[i]
            Fn[i] = F0[i] - Cxi
        for a in range(m):
            kick[a] = dot_column(B, a, d, m, Fn)
        return power
    if powered:
        for i in range(d):
            power += Fa[i] * xi[i]
    for a in range(m):
        kick[a] = dot_column(B, a, d, m, F0)
    return power


cdef inline void damped_matrix(int d, int m, const double* B, const double* reduced,
                               const double* Cg, double h, double* K) noexcept nogil:
    # K = B^T I B + h/2 B^T C_g B (m x m): the end kick's implicit matrix
    cdef double CB[36]
    cdef double s
    cdef int i, j, a, b
    for i in range(d):       # CB = C_g B (d x m)
        for b in range(m):
            s = Cg[d * i] * B[b]
            for j in range(1, d):
                s += Cg[d * i + j] * B[m * j + b]
            CB[m * i + b] = s
    for a in range(m):
        for b in range(m):
            s = B[a] * CB[b]
            for i in range(1, d):
                s += B[m * i + a] * CB[m * i + b]
            K[m * a + b] = reduced[m * a + b] + 0.5 * h * s


cdef inline bint damping_map(int d, int m, const double* B, const double* reduced,
                             const double* Cg, double h, double* out) noexcept nogil:
    # out = (B^T I B) K^-1 (m x m): the end kick's p_new <- (B^T I B) K^-1 p_new for a C_g and h
    # that do not change; False if K is singular
    cdef double K[36]
    cdef double Kinv[36]
    cdef int a, b, c
    damped_matrix(d, m, B, reduced, Cg, h, K)
    if not invert_small(m, K, Kinv):
        return False
    for a in range(m):
        for b in range(m):
            out[m * a + b] = reduced[m * a] * Kinv[b]
            for c in range(1, m):
                out[m * a + b] += reduced[m * a + c] * Kinv[m * c + b]
    return True


cdef inline int end_kick(int d, int m, const double* B, const double* reduced,
                         const double* reduced_inv, const double* damp_map, double h,
                         const double* Cg, bint damps,
                         bint powered, const double* Fa, const double* F0,
                         const double* p_plus, double* p_new, double* kick,
                         double* power) noexcept nogil:
    # p_new = p_plus + h/2 B^T F0, then with damping solved implicitly for the node velocity:
    # (reduced + h/2 B^T C_g B) z = p_new, p_new <- reduced z (through damp_map, the matrix
    # reduced K^-1, where the caller formed it once for a nonzero C_g: damping_map). At the
    # node reached: node_kick's kick and power (the next step's start: without damping its
    # kick is the B^T F0 above), from its velocity xi1 (when powered; a local). Returns OK,
    # SINGULAR_JACOBIAN or NOT_FINITE.
    cdef double BF[6]
    cdef double K[36]
    cdef double z[6]
    cdef double xi1[6]
    cdef double total
    cdef bint damped = False
    cdef int i, a, b
    for a in range(m):
        BF[a] = dot_column(B, a, d, m, F0)
        p_new[a] = p_plus[a] + 0.5 * h * BF[a]
    if damps and damp_map == NULL:
        for i in range(d * d):
            if Cg[i] != 0.0:
                damped = True
    if damp_map != NULL:  # a nonzero C_g and h the same at every step: formed once
        for a in range(m):
            z[a] = p_new[a]
        for a in range(m):
            p_new[a] = damp_map[m * a] * z[0]
            for b in range(1, m):
                p_new[a] += damp_map[m * a + b] * z[b]
    elif damped:
        damped_matrix(d, m, B, reduced, Cg, h, K)
        for a in range(m):
            z[a] = p_new[a]
        if not solve_small(m, K, z):
            return SINGULAR_JACOBIAN
        for a in range(m):
            p_new[a] = 0.0
            for b in range(m):
                p_new[a] += reduced[m * a + b] * z[b]
    total = 0.0  # (summed in a local: power may alias the arrays for the compiler)
    if powered and not node_velocity(reduced_inv, B, d, m, p_new, Fa, z, xi1, &total):
        return SINGULAR_JACOBIAN
    for a in range(m):
        if not isfinite(p_new[a]):
            return NOT_FINITE
    if damps:
        power[0] = node_kick(d, m, B, Cg, damps, powered, Fa, F0, xi1, kick)
        return OK
    power[0] = total
    for a in range(m):
        kick[a] = BF[a]
    return OK
