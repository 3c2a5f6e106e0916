# Variational retraction integrator for a rigid body with a fixed point under a left-invariant
# constraint Omega in d (Suslov, m = 2) or none (free body, m = 3): the whole time loop.
#
# Design: the per-step arithmetic (discrete Legendre transforms, their Jacobian, a small Newton
# solve) is in `cdef inline ... noexcept nogil` functions; retraction_run() is the loop. The
# derivation and the specification are in nhphys/twins/suslov.py (same names, same results).

cimport cython
from libc.math cimport sqrt, fabs, isfinite, M_PI

from nhphys_ext.so3 cimport cross3, norm3, exp3, cay3
from nhphys_ext.dense cimport matmul3, solve_small
from nhphys_ext.rigid cimport momentum_minus, momentum_minus_jacobian, reorthonormalize



cdef inline bint retraction_step(const double* I, const double* B, int m, const double* p,
                                 double* y, double h, int map_code, double newton_tol,
                                 int max_newton, double* xi, double* p_new) noexcept nogil:
    # Newton on F(y) = B^T Pi^-(B y) - p; then p_new = p - B^T (xi x I xi) / h
    cdef double M[3]
    cdef double G[3]
    cdef double D[9]
    cdef double DB[9]
    cdef double Jm[9]
    cdef double F[3]
    cdef double xIx[3]
    cdef double ny, ndy, s
    cdef int it, a, b, i, j
    cdef bint converged = False
    for it in range(max_newton):
        for i in range(3):
            xi[i] = 0.0
            for a in range(m):
                xi[i] += B[m * i + a] * y[a]
        momentum_minus(xi, I, h, map_code, M, G)
        momentum_minus_jacobian(xi, I, h, map_code, D)
        for i in range(3):           # DB = D B (3 x m)
            for b in range(m):
                DB[m * i + b] = (D[3 * i] * B[b] + D[3 * i + 1] * B[m + b]
                                 + D[3 * i + 2] * B[2 * m + b])
        for a in range(m):           # Jm = B^T D B, F = B^T G - p
            F[a] = B[a] * G[0] + B[m + a] * G[1] + B[2 * m + a] * G[2] - p[a]
            for b in range(m):
                Jm[m * a + b] = (B[a] * DB[b] + B[m + a] * DB[m + b]
                                 + B[2 * m + a] * DB[2 * m + b])
        if not solve_small(m, Jm, F):
            return False
        ny = 0.0
        ndy = 0.0
        for a in range(m):
            y[a] -= F[a]
            ny += y[a] * y[a]
            ndy += F[a] * F[a]
        if not isfinite(ny):
            return False
        if sqrt(ndy) <= newton_tol * sqrt(ny):
            converged = True
            break
    if not converged:
        return False
    for i in range(3):
        xi[i] = 0.0
        for a in range(m):
            xi[i] += B[m * i + a] * y[a]
    if map_code == 0 and norm3(xi) >= M_PI:
        return False  # a turn of pi or more per step: a spurious root of a far branch
    for i in range(3):
        M[i] = I[3 * i] * xi[0] + I[3 * i + 1] * xi[1] + I[3 * i + 2] * xi[2]
    cross3(xi, M, xIx)
    for a in range(m):
        s = B[a] * xIx[0] + B[m + a] * xIx[1] + B[2 * m + a] * xIx[2]
        p_new[a] = p[a] - s / h
    return True


@cython.boundscheck(False)
@cython.wraparound(False)
def retraction_run(const double[:, ::1] inertia, const double[:, ::1] basis,
                   double[:, ::1] R, double[::1] p, double[::1] y, double h,
                   const double[::1] substeps, Py_ssize_t n_steps, Py_ssize_t save_every,
                   int map_code, double newton_tol, int max_newton,
                   double[:, :, ::1] out_R, double[:, ::1] out_p):
    """Advance ``n_steps`` steps, saving every ``save_every``-th state (see the twin).

    Parameters
    ----------
    inertia : (3, 3) IN; basis : (3, m) IN; R : (3, 3) IN/OUT; p : (m,) IN/OUT;
    y : (m,) IN/OUT; h : float; substeps : (k,) fractions of h; n_steps, save_every : int;
    map_code : 0 exp, 1 Cayley;
    newton_tol : float; max_newton : int; out_R : (n_steps // save_every, 3, 3) OUT;
    out_p : (n_steps // save_every, m) OUT.

    Returns
    -------
    int
        0 on success, ``k + 1`` if a Newton solve of step ``k`` failed (state left at the
        start of the failing sub-step).
    """
    cdef int m = basis.shape[1]
    cdef double xi[3]
    cdef double p_new[3]
    cdef double y_try[3]
    cdef double Q[9]
    cdef double Rn[9]
    cdef Py_ssize_t k, j, n_sub = substeps.shape[0]
    cdef int i, a
    cdef int status = 0
    cdef double h_last = h * substeps[n_sub - 1], hj
    with nogil:
        for k in range(n_steps):
            for j in range(n_sub):
                hj = h * substeps[j]
                for a in range(m):
                    y[a] *= hj / h_last  # the warm start belongs to the last sub-step
                    y_try[a] = y[a]
                h_last = hj
                if not retraction_step(&inertia[0, 0], &basis[0, 0], m, &p[0], y_try, hj,
                                       map_code, newton_tol, max_newton, xi, p_new):
                    status = <int>(k + 1)
                    break
                if map_code == 0:
                    exp3(xi, Q)
                else:
                    cay3(xi, Q)
                matmul3(&R[0, 0], Q, Rn)
                reorthonormalize(Rn)
                for i in range(9):
                    R[i // 3, i % 3] = Rn[i]
                for a in range(m):
                    p[a] = p_new[a]
                    y[a] = y_try[a]
            if status:
                break
            if (k + 1) % save_every == 0:
                j = (k + 1) // save_every - 1
                for i in range(9):
                    out_R[j, i // 3, i % 3] = R[i // 3, i % 3]
                for a in range(m):
                    out_p[j, a] = p[a]
    return status
