# Small dense linear algebra shared by the kernels: row-major matrices of at most 8 x 8, on
# raw pointers, `cdef inline ... noexcept nogil`. The Python twins use numpy for the same
# operations.

from libc.math cimport fabs

cdef inline bint solve_small(int m, double* A, double* b) noexcept nogil:
    # Gaussian elimination with partial pivoting on an m x m row-major A (m <= 6);
    # the solution overwrites b. Returns False for a singular matrix.
    cdef int col, row, piv, k
    cdef double tmp, f
    for col in range(m):
        piv = col
        for row in range(col + 1, m):
            if fabs(A[m * row + col]) > fabs(A[m * piv + col]):
                piv = row
        if A[m * piv + col] == 0.0:
            return False
        if piv != col:
            for k in range(m):
                tmp = A[m * col + k]
                A[m * col + k] = A[m * piv + k]
                A[m * piv + k] = tmp
            tmp = b[col]
            b[col] = b[piv]
            b[piv] = tmp
        for row in range(col + 1, m):
            f = A[m * row + col] / A[m * col + col]
            for k in range(col, m):
                A[m * row + k] -= f * A[m * col + k]
            b[row] -= f * b[col]
    for row in range(m - 1, -1, -1):
        for k in range(row + 1, m):
            b[row] -= A[m * row + k] * b[k]
        b[row] /= A[m * row + row]
    return True


cdef inline void matmul3(const double* A, const double* B, double* C) noexcept nogil:
    cdef int i, j
    for i in range(3):
        for j in range(3):
            C[3 * i + j] = (A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j]
                            + A[3 * i + 2] * B[6 + j])


cdef inline void matvec3(const double* M, const double* v, double* out) noexcept nogil:
    # out = M v, M (3, 3)
    cdef int i
    for i in range(3):
        out[i] = M[3 * i] * v[0] + M[3 * i + 1] * v[1] + M[3 * i + 2] * v[2]


cdef inline void matTvec3(const double* M, const double* v, double* out) noexcept nogil:
    # out = M^T v
    cdef int i
    for i in range(3):
        out[i] = M[i] * v[0] + M[3 + i] * v[1] + M[6 + i] * v[2]


cdef inline void congruence(int n, int d, const double* C, const double* T,
                            double* out) noexcept nogil:
    # out = T^T C T (d, d), C (n, n), T (n, d), n <= 8: (C T) first, then T^T (C T), each
    # entry summed from 0.0 in index order (the order numpy's products give the twins)
    cdef double CT[64]
    cdef int i, j, k
    for i in range(n):
        for j in range(d):
            CT[d * i + j] = 0.0
            for k in range(n):
                CT[d * i + j] += C[n * i + k] * T[d * k + j]
    for i in range(d):
        for j in range(d):
            out[d * i + j] = 0.0
            for k in range(n):
                out[d * i + j] += T[d * k + i] * CT[d * k + j]


cdef inline double max_abs(const double* x, int k) noexcept nogil:
    # max_i |x_i| over k entries (0 for k = 0)
    cdef double out = 0.0
    cdef int i
    for i in range(k):
        if fabs(x[i]) > out:
            out = fabs(x[i])
    return out


cdef inline bint solve_columns(int n, double* A, double* X, int k) noexcept nogil:
    # A X = B for the k columns of X (n, k) row-major, in place, by Gaussian elimination with
    # partial pivoting: each column gets exactly the numbers solve_small gives it alone (the
    # same pivots, the same operations), with one elimination of A. Returns False if singular.
    cdef int col, row, piv, c, j
    cdef double tmp, f
    for col in range(n):
        piv = col
        for row in range(col + 1, n):
            if fabs(A[n * row + col]) > fabs(A[n * piv + col]):
                piv = row
        if A[n * piv + col] == 0.0:
            return False
        if piv != col:
            for c in range(n):
                tmp = A[n * col + c]
                A[n * col + c] = A[n * piv + c]
                A[n * piv + c] = tmp
            for j in range(k):
                tmp = X[k * col + j]
                X[k * col + j] = X[k * piv + j]
                X[k * piv + j] = tmp
        for row in range(col + 1, n):
            f = A[n * row + col] / A[n * col + col]
            for c in range(col, n):
                A[n * row + c] -= f * A[n * col + c]
            for j in range(k):
                X[k * row + j] -= f * X[k * col + j]
    for row in range(n - 1, -1, -1):
        for j in range(k):
            for c in range(row + 1, n):
                X[k * row + j] -= A[n * row + c] * X[k * c + j]
            X[k * row + j] /= A[n * row + row]
    return True


cdef inline bint invert_small(int n, const double* A, double* out) noexcept nogil:
    # out = A^-1 (n x n row-major, n <= 8) by solve_columns on the identity's columns (each
    # column the numbers solve_small gives it); False if A is singular
    cdef double R[64]
    cdef int i
    for i in range(n * n):
        R[i] = A[i]
        out[i] = 0.0
    for i in range(n):
        out[n * i + i] = 1.0
    return solve_columns(n, R, out, n)
