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

from nhphys_ext.dense cimport solve_small
from nhphys_ext.newton cimport OK, SINGULAR_JACOBIAN, NOT_FINITE


cdef inline bint node_velocity(const double* reduced, const double* B, int d, int m,
                               const double* p, double* z, double* xi) noexcept nogil:
    # z = (B^T I B)^-1 p, xi = B z
    cdef double R[36]
    cdef int i, a
    for i in range(m * m):
        R[i] = reduced[i]
    for a in range(m):
        z[a] = p[a]
    if not solve_small(m, R, z):
        return False
    for i in range(d):
        xi[i] = 0.0
        for a in range(m):
            xi[i] += B[m * i + a] * z[a]
    return True


cdef inline double dot_row(const double* M, int i, int d, const double* x) noexcept nogil:
    # (M x)_i, M (d, d) row-major
    cdef double s = M[d * i] * x[0]
    cdef int j
    for j in range(1, d):
        s += M[d * i + j] * x[j]
    return s


cdef inline double dot_column(const double* B, int a, int d, int m,
                              const double* x) noexcept nogil:
    # (B^T x)_a, B (d, m) row-major
    cdef double s = B[a] * x[0]
    cdef int i
    for i in range(1, d):
        s += B[m * i + a] * x[i]
    return s


cdef inline double start_kick(int d, int m, const double* B, double h, const double* Cg,
                              bint damps, bint powered, const double* Fa, const double* xi0,
                              double* F0, const double* p, double* p_eff) noexcept nogil:
    # F0 <- F0 - C_g xi0 (the force at the start), p_eff = p + h/2 B^T F0; returns the power
    # (F_a - C_g xi0) . xi0 (0 when nothing is powered: no applied element, no damping)
    cdef double Cxi
    cdef double power = 0.0
    cdef int i, a
    if damps:
        for i in range(d):
            Cxi = dot_row(Cg, i, d, xi0)
            power += (Fa[i] - Cxi) * xi0[i]
            F0[i] = F0[i] - Cxi
    elif powered:
        for i in range(d):
            power += Fa[i] * xi0[i]
    for a in range(m):
        p_eff[a] = p[a] + 0.5 * h * dot_column(B, a, d, m, F0)
    return power


cdef inline int end_kick(int d, int m, const double* B, const double* reduced, double h,
                         const double* Cg, bint damps, bint powered, const double* Fa,
                         const double* F0, const double* p_plus, double* p_new, double* xi1,
                         double* power) noexcept nogil:
    # p_new = p_plus + h/2 B^T F0, then with damping solved implicitly for the node velocity:
    # (reduced + h/2 B^T C_g B) z = p_new, p_new <- reduced z; xi1 the node velocity of p_new
    # (computed when powered: the next start's power and damping need it) and power its
    # power. Returns OK, SINGULAR_JACOBIAN or NOT_FINITE.
    cdef double CB[36]
    cdef double K[36]
    cdef double z[6]
    cdef double s
    cdef bint damped = False
    cdef int i, j, a, b
    for a in range(m):
        p_new[a] = p_plus[a] + 0.5 * h * dot_column(B, a, d, m, F0)
    if damps:
        for i in range(d * d):
            if Cg[i] != 0.0:
                damped = True
    if damped:
        for i in range(d):       # CB = C_g B (d x m)
            for b in range(m):
                s = Cg[d * i] * B[b]
                for j in range(1, d):
                    s += Cg[d * i + j] * B[m * j + b]
                CB[m * i + b] = s
        for a in range(m):       # K = B^T I B + h/2 B^T C_g B
            for b in range(m):
                s = B[a] * CB[b]
                for i in range(1, d):
                    s += B[m * i + a] * CB[m * i + b]
                K[m * a + b] = reduced[m * a + b] + 0.5 * h * s
        for a in range(m):
            z[a] = p_new[a]
        if not solve_small(m, K, z):
            return SINGULAR_JACOBIAN
        for a in range(m):
            p_new[a] = 0.0
            for b in range(m):
                p_new[a] += reduced[m * a + b] * z[b]
    power[0] = 0.0
    if powered:
        if not node_velocity(reduced, B, d, m, p_new, z, xi1):
            return SINGULAR_JACOBIAN
        for i in range(d):
            if damps:
                power[0] += (Fa[i] - dot_row(Cg, i, d, xi1)) * xi1[i]
            else:
                power[0] += Fa[i] * xi1[i]
    for a in range(m):
        if not isfinite(p_new[a]):
            return NOT_FINITE
    return OK
