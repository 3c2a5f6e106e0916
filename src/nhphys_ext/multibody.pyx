# Joint trees with disks rolling on a plane (nhphys.systems.Bicycle), and the whole time loop of
# their symmetric discrete Lagrange-d'Alembert step and its compositions.
#
# The specification, with every derivation (the tree's kinematics, dT/dq, the contact rows, the
# step and why it is symmetric), is nhphys/twins/multibody.py: the same names, arguments and
# results. Sizes: n <= TREE_JOINTS joints, at most TREE_DISKS disks, n + m <= TREE_UNKNOWNS (the
# step's Newton problem, within newton.pxd's NEWTON_MAX).

cimport cython
from cpython.ref cimport PyObject
from libc.math cimport INFINITY, M_PI, NAN, cos, fabs, isfinite, sin, sqrt
from libc.string cimport memcpy, memset

from nhphys_ext.dense cimport solve_small
from nhphys_ext.forces cimport ForceSet
from nhphys_ext.so3 cimport cross3, rotation_about
from nhphys_ext.surfaces cimport ChartSurface, forms_of, normal_of, weingarten_of
from nhphys_ext.newton cimport INFO_COMMITTED, INFO_SIZE, INFO_STATUS
from nhphys_ext.newton cimport (CONTACT_FAILED, FLAT, NewtonRule, OK, SINGULAR_JACOBIAN,
                                newton_solve)

import numpy as np

DEF TREE_JOINTS = 12
DEF TREE_DISKS = 4
DEF TREE_HULLS = 4
DEF TREE_BLADES = 4
DEF TREE_SUSLOV = 4
DEF TREE_SPRINGS = 12
DEF TREE_ROWS = 16
DEF TREE_UNKNOWNS = 16
DEF REVOLUTE = 0
DEF DIFFERENCE_STEP = 1.5e-8  # as the twin's
DEF FLAT_TILT = 1e-3  # as the twin's
DEF CONTACT_ITERATIONS = 30  # as the twin's
DEF CONTACT_TOL = 1e-11  # as the twin's
DEF CONTACT_SAMPLES = 16  # as the twin's
DEF COORDINATE_FLOOR = 1e-3  # as the twin's


cdef struct TreeData:
    int n
    int m
    int n_disks
    int parent[TREE_JOINTS]
    int kind[TREE_JOINTS]
    double axis[TREE_JOINTS][3]
    double offset[TREE_JOINTS][3]
    double mass[TREE_JOINTS]
    double com[TREE_JOINTS][3]
    double inertia[TREE_JOINTS][9]
    bint massive[TREE_JOINTS]
    bint ancestor[TREE_JOINTS][TREE_JOINTS]  # [b][j]: joint j moves body b (j == b included)
    int disk_body[TREE_DISKS]
    double disk_centre[TREE_DISKS][3]
    double disk_axis[TREE_DISKS][3]
    double disk_radius[TREE_DISKS]
    bint disk_held[TREE_DISKS]
    bint disk_sideways[TREE_DISKS]
    int n_blades
    int blade_body[TREE_BLADES]
    double blade_point[TREE_BLADES][3]
    double blade_direction[TREE_BLADES][3]
    int n_suslov
    int suslov_body[TREE_SUSLOV]
    double suslov_axis[TREE_SUSLOV][3]
    int n_springs
    int spring_joint[TREE_SPRINGS]
    double spring_stiffness[TREE_SPRINGS]
    double spring_rest[TREE_SPRINGS]
    int n_nonholonomic
    int nonholonomic_rows[TREE_ROWS]
    int n_holonomic
    int holonomic_rows[TREE_ROWS]
    int n_hulls
    int hull_body[TREE_HULLS]
    double hull_centre[TREE_HULLS][3]
    double hull_axes[TREE_HULLS][3]
    bint hull_held[TREE_HULLS]
    int held_contacts[TREE_DISKS + TREE_HULLS]  # into the disks, then the hulls
    bint free_translation[TREE_JOINTS]  # the twin's free_translations
    double gravity_vector[3]
    double weight
    PyObject* ground  # a curved ground (ChartSurface, borrowed from the JointTree), or NULL


cdef struct Kinematics:
    double R[TREE_JOINTS][9]
    double o[TREE_JOINTS][3]
    double X[TREE_JOINTS][3]
    double a[TREE_JOINTS][3]
    double omega[TREE_JOINTS][3]
    double vo[TREE_JOINTS][3]


cdef inline double dot(const double* u, const double* v) noexcept nogil:
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


cdef inline void rotate(const double* R, const double* x, double* out) noexcept nogil:
    # out = R x (R row-major 3 x 3)
    cdef int i
    for i in range(3):
        out[i] = R[3 * i] * x[0] + R[3 * i + 1] * x[1] + R[3 * i + 2] * x[2]


cdef void kinematics(const TreeData* T, const double* q, const double* v,
                     Kinematics* K) noexcept nogil:
    cdef double zero[3]
    cdef double eye[9]
    cdef double Rj[9]
    cdef double r[3]
    cdef double s[3]
    cdef double tmp[3]
    cdef const double* Rp
    cdef const double* op
    cdef const double* wp
    cdef const double* vp
    cdef int j, p, i, k
    memset(zero, 0, sizeof(zero))
    memset(eye, 0, sizeof(eye))
    eye[0] = eye[4] = eye[8] = 1.0
    for j in range(T.n):
        p = T.parent[j]
        if p < 0:
            Rp = eye
            op = zero
            wp = zero
            vp = zero
        else:
            Rp = K.R[p]
            op = K.o[p]
            wp = K.omega[p]
            vp = K.vo[p]
        rotate(Rp, T.axis[j], K.a[j])
        rotate(Rp, T.offset[j], r)
        for i in range(3):
            K.X[j][i] = op[i] + r[i]
        cross3(wp, r, tmp)
        if T.kind[j] == REVOLUTE:
            rotation_about(T.axis[j], q[j], Rj)
            for i in range(3):
                for k in range(3):
                    K.R[j][3 * i + k] = (Rp[3 * i] * Rj[k] + Rp[3 * i + 1] * Rj[3 + k]
                                         + Rp[3 * i + 2] * Rj[6 + k])
            for i in range(3):
                K.o[j][i] = K.X[j][i]
                K.omega[j][i] = wp[i] + K.a[j][i] * v[j]
                K.vo[j][i] = vp[i] + tmp[i]
        else:
            memcpy(K.R[j], Rp, 9 * sizeof(double))
            for i in range(3):
                s[i] = K.a[j][i] * q[j]
                K.o[j][i] = K.X[j][i] + s[i]
                K.omega[j][i] = wp[i]
            cross3(wp, s, r)
            for i in range(3):
                K.vo[j][i] = vp[i] + tmp[i] + r[i] + K.a[j][i] * v[j]


cdef void point_jacobian(const TreeData* T, const Kinematics* K, int body, const double* P,
                         double* J, int rows) noexcept nogil:
    # the first `rows` rows of J_P (3, n), row-major with stride n
    cdef double d[3]
    cdef double col[3]
    cdef int j, i
    for j in range(T.n):
        if not T.ancestor[body][j]:
            for i in range(rows):
                J[T.n * i + j] = 0.0
            continue
        if T.kind[j] == REVOLUTE:
            for i in range(3):
                d[i] = P[i] - K.X[j][i]
            cross3(K.a[j], d, col)
        else:
            memcpy(col, K.a[j], 3 * sizeof(double))
        for i in range(rows):
            J[T.n * i + j] = col[i]


cdef void centre_of_mass(const TreeData* T, const Kinematics* K, int b, double* c) noexcept nogil:
    cdef double r[3]
    cdef int i
    rotate(K.R[b], T.com[b], r)
    for i in range(3):
        c[i] = K.o[b][i] + r[i]


cdef void lagrangian_gradients(const TreeData* T, const Kinematics* K, const double* q,
                               double* M, double* dT, double* dV) noexcept nogil:
    # M (n, n) row-major, dT/dq (n,) at fixed v, grad V (n,): the twin's formulas
    cdef int n = T.n
    cdef double Jc[3 * TREE_JOINTS]
    cdef double Jw[3 * TREE_JOINTS]
    cdef double IJ[3 * TREE_JOINTS]
    cdef double Is[TREE_JOINTS][9]
    cdef double cen[TREE_JOINTS][3]
    cdef double vc[TREE_JOINTS][3]
    cdef double spin[TREE_JOINTS][3]
    cdef double RI[9]
    cdef double d[3]
    cdef double dc[3]
    cdef double Vi[3]
    cdef double t1[3]
    cdef double t2[3]
    cdef const double* a
    cdef const double* wp
    cdef double zero[3]
    cdef double m
    cdef int b, i, j, k, l, p
    memset(zero, 0, sizeof(zero))
    memset(M, 0, n * n * sizeof(double))
    memset(dT, 0, n * sizeof(double))
    memset(dV, 0, n * sizeof(double))
    for b in range(n):
        if not T.massive[b]:
            continue
        m = T.mass[b]
        centre_of_mass(T, K, b, cen[b])
        # I^s = R I R^T
        for i in range(3):
            for j in range(3):
                RI[3 * i + j] = 0.0
                for k in range(3):
                    RI[3 * i + j] += K.R[b][3 * i + k] * T.inertia[b][3 * k + j]
        for i in range(3):
            for j in range(3):
                Is[b][3 * i + j] = 0.0
                for k in range(3):
                    Is[b][3 * i + j] += RI[3 * i + k] * K.R[b][3 * j + k]
        rotate(Is[b], K.omega[b], spin[b])
        for i in range(3):
            d[i] = cen[b][i] - K.o[b][i]
        cross3(K.omega[b], d, t1)
        for i in range(3):
            vc[b][i] = K.vo[b][i] + t1[i]
        point_jacobian(T, K, b, cen[b], Jc, 3)
        for j in range(n):
            for i in range(3):
                Jw[n * i + j] = K.a[j][i] if (T.ancestor[b][j] and T.kind[j] == REVOLUTE) else 0.0
        for i in range(3):  # IJ = I^s Jw
            for j in range(n):
                IJ[n * i + j] = (Is[b][3 * i] * Jw[j] + Is[b][3 * i + 1] * Jw[n + j]
                                 + Is[b][3 * i + 2] * Jw[2 * n + j])
        for k in range(n):
            for l in range(n):
                M[n * k + l] += (m * (Jc[k] * Jc[l] + Jc[n + k] * Jc[n + l]
                                      + Jc[2 * n + k] * Jc[2 * n + l])
                                 + Jw[k] * IJ[l] + Jw[n + k] * IJ[n + l]
                                 + Jw[2 * n + k] * IJ[2 * n + l])
    for i in range(n):
        a = K.a[i]
        p = T.parent[i]
        for b in range(n):
            if not (T.massive[b] and T.ancestor[b][i]):
                continue
            m = T.mass[b]
            if T.kind[i] == REVOLUTE:
                for k in range(3):
                    d[k] = cen[b][k] - K.X[i][k]
                cross3(a, d, dc)
                for k in range(3):
                    d[k] = cen[b][k] - K.o[i][k]
                cross3(K.omega[i], d, t1)
                for k in range(3):
                    Vi[k] = vc[b][k] - (K.vo[i][k] + t1[k])
                cross3(K.omega[i], dc, t1)
                cross3(a, Vi, t2)
                for k in range(3):
                    t1[k] += t2[k]
                cross3(spin[b], K.omega[i], t2)
                dT[i] += m * dot(vc[b], t1) + dot(a, t2)
            else:
                memcpy(dc, a, 3 * sizeof(double))
                if p >= 0:
                    wp = K.omega[p]
                else:
                    wp = zero
                cross3(wp, a, t1)
                dT[i] += m * dot(vc[b], t1)
            dV[i] -= m * dot(T.gravity_vector, dc)
    for k in range(T.n_springs):  # the joint springs' k (q_j - rest)
        dV[T.spring_joint[k]] += T.spring_stiffness[k] * (q[T.spring_joint[k]]
                                                          - T.spring_rest[k])


cdef struct Support:
    # a body's point farthest along -n, relative to its centre: a disk's rim (hull False: axis
    # a, radius) or an ellipsoid (hull True: A = R diag(axes^2) R^T)
    bint hull
    double a[3]
    double radius
    double A[9]


cdef double support_of(const Support* B, const double* n, double* S, double* dS) noexcept nogil:
    # the twin's support(n) of JointTree.ground_contact (a disk) and hull_contact (a hull):
    # S (3,) and dS/dn (3, 3) row-major; returns a disk's tilt |w| (1 for a hull)
    cdef double w[3]
    cdef double t[3]
    cdef double na, s, f
    cdef int i, j
    if B.hull:
        for i in range(3):
            w[i] = B.A[3 * i] * n[0] + B.A[3 * i + 1] * n[1] + B.A[3 * i + 2] * n[2]
        s = sqrt(dot(n, w))
        for i in range(3):
            S[i] = w[i] / s
        for i in range(3):
            for j in range(3):
                dS[3 * i + j] = (B.A[3 * i + j] - S[i] * S[j]) / s
        return 1.0
    na = dot(n, B.a)
    for i in range(3):
        w[i] = n[i] - na * B.a[i]
    s = sqrt(dot(w, w))
    for i in range(3):
        w[i] /= s  # d
        S[i] = B.radius * w[i]
    cross3(B.a, w, t)
    f = B.radius / s
    for i in range(3):
        for j in range(3):
            dS[3 * i + j] = f * t[i] * t[j]
    return s


cdef void ground_point(const TreeData* T, const double* u, double* r, double* J, double* H,
                       double* n, double* L) noexcept nogil:
    # the twin's geometry() of JointTree.ground_newton: the ground at the chart point u
    cdef double G[4]
    cdef double II[4]
    (<ChartSurface>T.ground).evaluate(0, u[0], u[1], r, J, H)
    normal_of(J, (<ChartSurface>T.ground).normal_sign(0), n)
    forms_of(J, H, n, G, II)
    weingarten_of(G, II, L)


cdef inline void below(const TreeData* T, const double* x, double* u) noexcept nogil:
    # the chart point below x: the first two of rot^T (x - ctr)
    cdef int i, k
    for k in range(2):
        u[k] = 0.0
        for i in range(3):
            u[k] += ((<ChartSurface>T.ground).rot[3 * i + k]
                     * (x[i] - (<ChartSurface>T.ground).ctr[i]))


cdef double rim_height(const TreeData* T, const double* C, const double* e1, const double* e2,
                       double radius, double theta, double* u) noexcept nogil:
    # the twin's height() of JointTree.rim_start: the rim point at theta above the graph point
    # below it, in the ground's frame; u (2,) gets that chart point
    cdef double p[3]
    cdef double r[3]
    cdef double J[6]
    cdef double H[12]
    cdef double local, ground
    cdef int i
    for i in range(3):
        p[i] = C[i] + radius * (cos(theta) * e1[i] + sin(theta) * e2[i])
    below(T, p, u)
    (<ChartSurface>T.ground).evaluate(0, u[0], u[1], r, J, H)
    local = 0.0
    ground = 0.0
    for i in range(3):
        local += (<ChartSurface>T.ground).rot[3 * i + 2] * (p[i] - (<ChartSurface>T.ground).ctr[i])
        ground += (<ChartSurface>T.ground).rot[3 * i + 2] * (r[i] - (<ChartSurface>T.ground).ctr[i])
    return local - ground


cdef void rim_start(const TreeData* T, const double* C, const double* a, double radius,
                    double* u) noexcept nogil:
    # the twin's JointTree.rim_start: below the rim's lowest point above the ground
    cdef double e1[3]
    cdef double e2[3]
    cdef double ez[3]
    cdef double h[CONTACT_SAMPLES]
    cdef double step = 2.0 * M_PI / CONTACT_SAMPLES, size, lo, hi, curve, shift
    cdef int k, best = 0
    ez[0] = 0.0
    ez[1] = 0.0
    ez[2] = 1.0
    cross3(a, ez, e1)
    if dot(e1, e1) < 1e-12:
        ez[0] = 1.0
        ez[2] = 0.0
        cross3(a, ez, e1)
    size = sqrt(dot(e1, e1))
    for k in range(3):
        e1[k] /= size
    cross3(a, e1, e2)
    for k in range(CONTACT_SAMPLES):
        h[k] = rim_height(T, C, e1, e2, radius, k * step, u)
        if h[k] < h[best]:
            best = k
    lo = h[(best + CONTACT_SAMPLES - 1) % CONTACT_SAMPLES]
    hi = h[(best + 1) % CONTACT_SAMPLES]
    curve = lo - 2.0 * h[best] + hi
    shift = 0.5 * (lo - hi) / curve if curve > 0.0 else 0.0
    shift = -0.5 if shift < -0.5 else (0.5 if shift > 0.5 else shift)
    rim_height(T, C, e1, e2, radius, (best + shift) * step, u)


cdef double ground_newton(const TreeData* T, const double* C, const Support* B, double* u,
                          double reach, double* P, double* n, double* gap) noexcept nogil:
    # the twin's JointTree.ground_newton: Newton's method on F(u) = J^T (P - r) = 0, P = C -
    # S(n(u)), from u (IN), corrections no longer than reach; returns the support's tilt, with
    # P and the gap NaN when it fails (no convergence, an iterate not finite, or a point that is
    # not a proper contact)
    cdef double r[3]
    cdef double J[6]
    cdef double H[12]
    cdef double L[4]
    cdef double S[3]
    cdef double dS[9]
    cdef double JL[6]
    cdef double dP[6]
    cdef double Pr[3]
    cdef double F[2]
    cdef double DF[4]
    cdef double s, last = INFINITY, det, step0, step1, size, s00, s01, s11
    cdef int it, i, j, x, y
    ground_point(T, u, r, J, H, n, L)
    s = support_of(B, n, S, dS)
    for it in range(CONTACT_ITERATIONS + 1):
        if not (isfinite(u[0]) and isfinite(u[1])):
            break
        ground_point(T, u, r, J, H, n, L)
        s = support_of(B, n, S, dS)
        for i in range(3):
            P[i] = C[i] - S[i]
            Pr[i] = P[i] - r[i]
        for i in range(3):  # J L (3, 2), then dP/du = dS/dn J L
            for y in range(2):
                JL[2 * i + y] = J[2 * i] * L[y] + J[2 * i + 1] * L[2 + y]
        for i in range(3):
            for y in range(2):
                dP[2 * i + y] = 0.0
                for j in range(3):
                    dP[2 * i + y] += dS[3 * i + j] * JL[2 * j + y]
        for x in range(2):
            F[x] = 0.0
            for i in range(3):
                F[x] += J[2 * i + x] * Pr[i]
            for y in range(2):
                DF[2 * x + y] = 0.0
                for i in range(3):
                    DF[2 * x + y] += (H[4 * i + 2 * x + y] * Pr[i]
                                      + J[2 * i + x] * (dP[2 * i + y] - J[2 * i + y]))
        size = fabs(u[0]) if fabs(u[0]) > fabs(u[1]) else fabs(u[1])
        if last <= CONTACT_TOL * (1.0 + size):
            s00 = -DF[0]  # the symmetric part of -dF/du: positive definite at a proper contact
            s01 = -0.5 * (DF[1] + DF[2])
            s11 = -DF[3]
            if s00 > 0.0 and s00 * s11 - s01 * s01 > 0.0:
                gap[0] = dot(n, Pr)
                return s
            break
        det = DF[0] * DF[3] - DF[1] * DF[2]
        step0 = -(DF[3] * F[0] - DF[1] * F[1]) / det
        step1 = -(DF[0] * F[1] - DF[2] * F[0]) / det
        size = fabs(step0) if fabs(step0) > fabs(step1) else fabs(step1)
        if size > reach:  # no longer than the body's size
            step0 *= reach / size
            step1 *= reach / size
        u[0] += step0
        u[1] += step1
        last = fabs(step0) if fabs(step0) > fabs(step1) else fabs(step1)
    for i in range(3):
        P[i] = NAN
    gap[0] = NAN
    return s


cdef double ground_contact(const TreeData* T, const double* C, const double* a, double radius,
                           double* P, double* n, double* gap) noexcept nogil:
    # the twin's JointTree.ground_contact: a disk's ground_newton from rim_start; returns the
    # tilt s = |n - (n . a) a|
    cdef Support B
    cdef double u[2]
    cdef int i
    B.hull = False
    for i in range(3):
        B.a[i] = a[i]
    B.radius = radius
    rim_start(T, C, a, radius, u)
    return ground_newton(T, C, &B, u, radius, P, n, gap)


cdef void hull_contact(const TreeData* T, const Kinematics* K, int k, double* C, double* P,
                       double* n, double* gap) noexcept nogil:
    # the twin's JointTree.hull_contact: centre C, contact point P of hull k, the ground's
    # normal n there and the gap (space)
    cdef int b = T.hull_body[k]
    cdef Support B
    cdef double r[3]
    cdef double J[6]
    cdef double H[12]
    cdef double L[4]
    cdef double S[3]
    cdef double dS[9]
    cdef double u[2]
    cdef double reach = 0.0
    cdef int i, j, l
    rotate(K.R[b], T.hull_centre[k], r)
    for i in range(3):
        C[i] = K.o[b][i] + r[i]
        if T.hull_axes[k][i] > reach:
            reach = T.hull_axes[k][i]
    B.hull = True
    for i in range(3):  # A = R diag(axes^2) R^T
        for j in range(3):
            B.A[3 * i + j] = 0.0
            for l in range(3):
                B.A[3 * i + j] += (K.R[b][3 * i + l] * T.hull_axes[k][l] * T.hull_axes[k][l]
                                   * K.R[b][3 * j + l])
    if T.ground == NULL:
        n[0] = 0.0
        n[1] = 0.0
        n[2] = 1.0
        support_of(&B, n, S, dS)
        for i in range(3):
            P[i] = C[i] - S[i]
        gap[0] = P[2]
        return
    below(T, C, u)
    ground_point(T, u, r, J, H, n, L)
    support_of(&B, n, S, dS)
    for i in range(3):
        r[i] = C[i] - S[i]
    below(T, r, u)
    ground_newton(T, C, &B, u, reach, P, n, gap)


cdef double disk_contact(const TreeData* T, const Kinematics* K, int k, double* C, double* a,
                         double* P, double* n, double* gap) noexcept nogil:
    # centre C, axis a and contact point P of disk k, the ground's normal n there and the gap
    # (space); returns the tilt s (sqrt(1 - a_z^2) on the plane)
    cdef int b = T.disk_body[k]
    cdef double r[3]
    cdef double s
    cdef int i
    rotate(K.R[b], T.disk_centre[k], r)
    for i in range(3):
        C[i] = K.o[b][i] + r[i]
    rotate(K.R[b], T.disk_axis[k], a)
    if T.ground != NULL:
        return ground_contact(T, C, a, T.disk_radius[k], P, n, gap)
    s = sqrt(1.0 - a[2] * a[2])
    for i in range(3):
        P[i] = C[i] - T.disk_radius[k] * ((1.0 if i == 2 else 0.0) - a[2] * a[i]) / s
        n[i] = 1.0 if i == 2 else 0.0
    gap[0] = P[2]
    return s


cdef inline void project_row(const double* e, const double* J, int n, double* row) noexcept nogil:
    # row (n,) = e . J for J (3, n) row-major
    cdef int j
    for j in range(n):
        row[j] = e[0] * J[j] + e[1] * J[n + j] + e[2] * J[2 * n + j]


cdef inline void unit_horizontal(double x, double y, double* e) noexcept nogil:
    # e = (x, y, 0) / |(x, y)|
    cdef double size = sqrt(x * x + y * y)
    e[0] = x / size
    e[1] = y / size
    e[2] = 0.0


cdef void constraint_matrix(const TreeData* T, const Kinematics* K, double* A) noexcept nogil:
    # A (m, n) row-major, the twin's rows: per disk e_x . J_P, e_y . J_P (or its rolling
    # direction a x n alone), then n . J_P if held (n the ground's normal, e_z on the plane);
    # per hull the same (both horizontal rows); per blade its sideways e_z x d
    cdef double C[3]
    cdef double a[3]
    cdef double P[3]
    cdef double e[3]
    cdef double r[3]
    cdef double nrm[3]
    cdef double gap, size
    cdef double J[3 * TREE_JOINTS]
    cdef int k, i, row = 0, n = T.n, b
    for k in range(T.n_disks):
        disk_contact(T, K, k, C, a, P, nrm, &gap)
        point_jacobian(T, K, T.disk_body[k], P, J, 3)
        if T.disk_sideways[k]:
            memcpy(A + n * row, J, 2 * n * sizeof(double))
            row += 2
        else:
            cross3(a, nrm, e)  # a x n
            size = sqrt(dot(e, e))
            for i in range(3):
                e[i] /= size
            project_row(e, J, n, A + n * row)
            row += 1
        if T.disk_held[k]:
            project_row(nrm, J, n, A + n * row)
            row += 1
    for k in range(T.n_hulls):  # e_x . J_P, e_y . J_P, then n . J_P if held
        hull_contact(T, K, k, C, P, nrm, &gap)
        point_jacobian(T, K, T.hull_body[k], P, J, 3)
        memcpy(A + n * row, J, 2 * n * sizeof(double))
        row += 2
        if T.hull_held[k]:
            project_row(nrm, J, n, A + n * row)
            row += 1
    for k in range(T.n_blades):
        b = T.blade_body[k]
        rotate(K.R[b], T.blade_point[k], r)
        for i in range(3):
            P[i] = K.o[b][i] + r[i]
        rotate(K.R[b], T.blade_direction[k], a)
        unit_horizontal(-a[1], a[0], e)  # e_z x d
        point_jacobian(T, K, b, P, J, 3)
        project_row(e, J, n, A + n * row)
        row += 1
    for k in range(T.n_suslov):  # a_s . J_omega: the revolute ancestors' axes
        b = T.suslov_body[k]
        rotate(K.R[b], T.suslov_axis[k], a)
        for i in range(n):
            A[n * row + i] = dot(a, K.a[i]) if T.ancestor[b][i] and T.kind[i] == REVOLUTE \
                else 0.0
        row += 1


cdef void held_gaps(const TreeData* T, const Kinematics* K, double* out) noexcept nogil:
    cdef double C[3]
    cdef double a[3]
    cdef double P[3]
    cdef double nrm[3]
    cdef int i, c
    for i in range(T.n_holonomic):  # the held disks, then the held hulls
        c = T.held_contacts[i]
        if c < T.n_disks:
            disk_contact(T, K, c, C, a, P, nrm, &out[i])
        else:
            hull_contact(T, K, c - T.n_disks, C, P, nrm, &out[i])


cdef class JointTree:
    """A tree of rigid bodies with rolling disks: the twin's ``JointTree``, same arguments."""

    cdef TreeData data
    cdef readonly int n
    cdef readonly int m
    cdef readonly object ground  # keeps data.ground alive

    def __init__(self, parent, kind, axis, offset, mass, com, inertia, disks, gravity,
                 blades=(), suslov=(), springs=(), ChartSurface ground=None, hulls=()):
        cdef int n = len(parent)
        cdef int j, b, k, i, row, p, horizontal
        if len(springs) > TREE_SPRINGS:
            raise ValueError(f"Expected at most {TREE_SPRINGS} joint springs, got "
                             f"{len(springs)}.")
        if n > TREE_JOINTS or len(disks) > TREE_DISKS or len(blades) > TREE_BLADES \
                or len(suslov) > TREE_SUSLOV or len(hulls) > TREE_HULLS:
            raise ValueError(f"Expected at most {TREE_JOINTS} joints, {TREE_DISKS} disks, "
                             f"{TREE_HULLS} hulls, {TREE_BLADES} blades and {TREE_SUSLOV} "
                             f"Suslov rows, got {n}, {len(disks)}, {len(hulls)}, "
                             f"{len(blades)} and {len(suslov)}.")
        rows = (sum((2 if d[5] else 1) + bool(d[4]) for d in disks)
                + sum(2 + bool(x[3]) for x in hulls) + len(blades) + len(suslov))
        if n + rows > TREE_UNKNOWNS:  # before the rows' tables are filled
            raise ValueError(f"Expected n + m <= {TREE_UNKNOWNS} (joints and contact rows), "
                             f"got {n} + {rows}.")
        axis = np.asarray(axis, dtype=float)
        offset = np.asarray(offset, dtype=float)
        com = np.asarray(com, dtype=float)
        inertia = np.asarray(inertia, dtype=float)
        mass = np.asarray(mass, dtype=float)
        memset(&self.data, 0, sizeof(TreeData))
        self.data.n = n
        self.ground = ground
        if ground is not None:
            self.data.ground = <PyObject*>ground
        g = np.asarray(gravity, dtype=float)
        g = np.array([0.0, 0.0, -float(g)]) if g.ndim == 0 else g
        for i in range(3):
            self.data.gravity_vector[i] = g[i]
        self.data.weight = float(np.linalg.norm(g)) * float(np.sum(mass))
        for j in range(n):
            if not -1 <= int(parent[j]) < j:
                raise ValueError(f"Expected parent[{j}] in [-1, {j}) (parents first), got "
                                 f"{parent[j]!r}.")
            self.data.parent[j] = int(parent[j])
            self.data.kind[j] = int(kind[j])
            self.data.mass[j] = mass[j]
            for i in range(3):
                self.data.axis[j][i] = axis[j, i]
                self.data.offset[j][i] = offset[j, i]
                self.data.com[j][i] = com[j, i]
            for i in range(9):
                self.data.inertia[j][i] = inertia[j].reshape(9)[i]
            self.data.massive[j] = mass[j] != 0.0 or bool(np.any(inertia[j]))
        for b in range(n):
            j = b
            while j >= 0:
                self.data.ancestor[b][j] = True
                j = self.data.parent[j]
        sprung = {int(joint) for joint, _, _ in springs}
        self.data.n_springs = len(springs)
        for k, (joint, stiffness, rest) in enumerate(springs):
            if not 0 <= int(joint) < n:
                raise ValueError(f"Expected springs[{k}] on a joint in [0, {n}), got {joint!r}.")
            self.data.spring_joint[k] = int(joint)
            self.data.spring_stiffness[k] = float(stiffness)
            self.data.spring_rest[k] = float(rest)
        for j in range(n):
            p = self.data.parent[j]
            self.data.free_translation[j] = (ground is None and self.data.kind[j] != REVOLUTE
                                             and axis[j, 2] == 0.0
                                             and j not in sprung
                                             and (p < 0 or self.data.free_translation[p]))
        row = 0
        self.data.n_disks = len(disks)
        for k, (body, centre, daxis, radius, held, sideways) in enumerate(disks):
            self.data.disk_body[k] = int(body)
            for i in range(3):
                self.data.disk_centre[k][i] = float(centre[i])
                self.data.disk_axis[k][i] = float(daxis[i])
            self.data.disk_radius[k] = float(radius)
            self.data.disk_held[k] = bool(held)
            self.data.disk_sideways[k] = bool(sideways)
            horizontal = 2 if sideways else 1
            for i in range(horizontal):
                self.data.nonholonomic_rows[self.data.n_nonholonomic] = row + i
                self.data.n_nonholonomic += 1
            row += horizontal
            if held:
                self.data.holonomic_rows[self.data.n_holonomic] = row
                self.data.held_contacts[self.data.n_holonomic] = k
                self.data.n_holonomic += 1
                row += 1
        self.data.n_hulls = len(hulls)
        for k, (body, centre, axes, held) in enumerate(hulls):
            self.data.hull_body[k] = int(body)
            for i in range(3):
                self.data.hull_centre[k][i] = float(centre[i])
                self.data.hull_axes[k][i] = float(axes[i])
            self.data.hull_held[k] = bool(held)
            for i in range(2):
                self.data.nonholonomic_rows[self.data.n_nonholonomic] = row + i
                self.data.n_nonholonomic += 1
            row += 2
            if held:
                self.data.holonomic_rows[self.data.n_holonomic] = row
                self.data.held_contacts[self.data.n_holonomic] = len(disks) + k
                self.data.n_holonomic += 1
                row += 1
        self.data.n_blades = len(blades)
        for k, (body, point, direction) in enumerate(blades):
            self.data.blade_body[k] = int(body)
            for i in range(3):
                self.data.blade_point[k][i] = float(point[i])
                self.data.blade_direction[k][i] = float(direction[i])
            self.data.nonholonomic_rows[self.data.n_nonholonomic] = row
            self.data.n_nonholonomic += 1
            row += 1
        self.data.n_suslov = len(suslov)
        for k, (body, saxis) in enumerate(suslov):
            self.data.suslov_body[k] = int(body)
            for i in range(3):
                self.data.suslov_axis[k][i] = float(saxis[i])
            self.data.nonholonomic_rows[self.data.n_nonholonomic] = row
            self.data.n_nonholonomic += 1
            row += 1
        self.data.m = row
        if n + row > TREE_UNKNOWNS:
            raise ValueError(f"Expected n + m <= {TREE_UNKNOWNS} (joints and contact rows), "
                             f"got {n} + {row}.")
        self.n = n
        self.m = row

    def lagrangian_gradients(self, const double[::1] q, const double[::1] v):
        """``(M (n, n), dT/dq (n,), grad V (n,))``, as the twin's."""
        cdef Kinematics K
        if q.shape[0] != self.n or v.shape[0] != self.n:
            raise ValueError(f"Expected q and v of shape ({self.n},).")
        M = np.empty((self.n, self.n))
        dT = np.empty(self.n)
        dV = np.empty(self.n)
        cdef double[:, ::1] Mv = M
        cdef double[::1] dTv = dT
        cdef double[::1] dVv = dV
        kinematics(&self.data, &q[0], &v[0], &K)
        lagrangian_gradients(&self.data, &K, &q[0], &Mv[0, 0], &dTv[0], &dVv[0])
        return M, dT, dV

    def gaps(self, const double[::1] q):
        """The gaps (k,) of the disks, then of the hulls, above the ground, as the twin's
        ``gaps``."""
        cdef Kinematics K
        cdef double zero[TREE_JOINTS]
        cdef double C[3]
        cdef double a[3]
        cdef double P[3]
        cdef double nrm[3]
        cdef int k
        if q.shape[0] != self.n:
            raise ValueError(f"Expected q of shape ({self.n},).")
        memset(zero, 0, sizeof(zero))
        out = np.empty(self.data.n_disks + self.data.n_hulls)
        cdef double[::1] outv = out
        kinematics(&self.data, &q[0], zero, &K)
        for k in range(self.data.n_disks):
            disk_contact(&self.data, &K, k, C, a, P, nrm, &outv[k])
        for k in range(self.data.n_hulls):
            hull_contact(&self.data, &K, k, C, P, nrm, &outv[self.data.n_disks + k])
        return out

    def constraint_matrix(self, const double[::1] q):
        """``A(q)`` (m, n), the rows of the twin's ``constraints``."""
        cdef Kinematics K
        if q.shape[0] != self.n:
            raise ValueError(f"Expected q of shape ({self.n},).")
        cdef double zero[TREE_JOINTS]
        memset(zero, 0, sizeof(zero))
        A = np.empty((self.m, self.n))
        cdef double[:, ::1] Av = A
        kinematics(&self.data, &q[0], zero, &K)
        constraint_matrix(&self.data, &K, &Av[0, 0])
        return A


# -- drives on joints ----------------------------------------------------------------------------

cdef class JointDrives:
    """The joint motors of a tree: the twin's ``JointDrives``, same arguments."""

    cdef ForceSet schedules  # only its schedule table is used
    cdef Py_ssize_t[:, ::1] rows
    cdef double[::1] gains
    cdef Py_ssize_t k

    def __init__(self, breaks, coef, sched, rows, gains):
        self.schedules = ForceSet(
            np.ascontiguousarray(breaks, dtype=float), np.ascontiguousarray(coef, dtype=float),
            np.ascontiguousarray(sched, dtype=np.intp).reshape(-1, 4),
            np.zeros((0, 4), dtype=np.intp), np.zeros((0, 3)), np.zeros((0, 2), dtype=np.intp),
            np.zeros((0, 8)), np.zeros(3), np.zeros((0, 5)), np.zeros((0, 3), dtype=np.intp),
            0.0, 0.0, 0.0, 0.0)
        self.rows = np.ascontiguousarray(rows, dtype=np.intp).reshape(-1, 3)
        self.gains = np.ascontiguousarray(gains, dtype=float)
        self.k = self.rows.shape[0]


cdef void drive_force(JointDrives drives, int n, double t, const double* rates,
                      double* Q) noexcept nogil:
    # the twin's JointDrives.force: Q (n,) at time t and joint rates `rates`
    cdef double value[1]
    cdef Py_ssize_t i, joint
    for i in range(n):
        Q[i] = 0.0
    for i in range(drives.k):
        joint = drives.rows[i, 0]
        if drives.rows[i, 1] >= 0:
            drives.schedules.evaluate(drives.rows[i, 1], t, value)
            Q[joint] += value[0]
        if drives.rows[i, 2] >= 0:
            drives.schedules.evaluate(drives.rows[i, 2], t, value)
            Q[joint] += drives.gains[i] * (value[0] - rates[joint])


# -- the step ------------------------------------------------------------------------------------

cdef struct StepProblem:
    const TreeData* T
    double h
    double q0[TREE_JOINTS]
    double p0[TREE_JOINTS]
    double A0[TREE_ROWS * TREE_JOINTS]
    double F[TREE_UNKNOWNS]
    double J[TREE_UNKNOWNS * TREE_UNKNOWNS]
    double floor[TREE_UNKNOWNS]
    void* drives  # a JointDrives, or NULL
    double t_mid
    bint have_jacobian


cdef void step_residual(const TreeData* T, const double* q0, const double* p0, const double* A0,
                        const double* delta, const double* lam, double h, void* drives,
                        double t_mid, double* F, double* p_end) noexcept nogil:
    # F (n + m,) and p_end (n,) (or NULL) of the twin's step_residual; delta = q1 - q0
    cdef int n = T.n, m = T.m
    cdef double qm[TREE_JOINTS]
    cdef double w[TREE_JOINTS]
    cdef double M[TREE_JOINTS * TREE_JOINTS]
    cdef double dT[TREE_JOINTS]
    cdef double dV[TREE_JOINTS]
    cdef double Am[TREE_ROWS * TREE_JOINTS]
    cdef double gaps[TREE_DISKS + TREE_HULLS]
    cdef double zero[TREE_JOINTS]
    cdef Kinematics K
    cdef double Mw, force, acc
    cdef int i, j, r
    cdef double q1[TREE_JOINTS]
    for i in range(n):
        qm[i] = q0[i] + 0.5 * delta[i]
        w[i] = delta[i] / h
        q1[i] = q0[i] + delta[i]
    cdef double Q[TREE_JOINTS]
    kinematics(T, qm, w, &K)
    lagrangian_gradients(T, &K, qm, M, dT, dV)
    constraint_matrix(T, &K, Am)
    if drives != NULL:
        drive_force(<JointDrives>drives, n, t_mid, w, Q)
    else:
        memset(Q, 0, n * sizeof(double))
    for i in range(n):
        Mw = 0.0
        for j in range(n):
            Mw += M[n * i + j] * w[j]
        force = 0.5 * h * (dT[i] - dV[i] + Q[i])
        acc = 0.0
        for r in range(m):
            acc += A0[n * r + i] * lam[r]
        F[i] = Mw - force - p0[i] - 0.5 * h * acc
        if p_end != NULL:
            p_end[i] = Mw + force
    for r in range(T.n_nonholonomic):
        acc = 0.0
        for j in range(n):
            acc += Am[n * T.nonholonomic_rows[r] + j] * w[j]
        F[n + r] = acc
    memset(zero, 0, sizeof(zero))
    kinematics(T, q1, zero, &K)
    held_gaps(T, &K, gaps)
    for r in range(T.n_holonomic):
        F[n + T.n_nonholonomic + r] = gaps[r]


cdef double tilt(const TreeData* T, const double* q) noexcept nogil:
    # the smallest s = sqrt(1 - a_z^2) of the disks at q
    cdef double zero[TREE_JOINTS]
    cdef double C[3]
    cdef double a[3]
    cdef double P[3]
    cdef double nrm[3]
    cdef double s, gap, low = 1.0
    cdef Kinematics K
    cdef int k
    memset(zero, 0, sizeof(zero))
    kinematics(T, q, zero, &K)
    for k in range(T.n_disks):
        s = disk_contact(T, &K, k, C, a, P, nrm, &gap)
        if s != s:  # NaN: past flat
            return s
        if s < low:
            low = s
    return low


cdef int problem_residual(void* problem, double* x, double* F, double* F_scale) noexcept nogil:
    cdef StepProblem* P = <StepProblem*>problem
    cdef double q1[TREE_JOINTS]
    cdef int i
    for i in range(P.T.n):
        q1[i] = P.q0[i] + x[i]
    if not tilt(P.T, q1) >= FLAT_TILT:  # NaN too: past flat
        return FLAT
    step_residual(P.T, P.q0, P.p0, P.A0, x, x + P.T.n, P.h, P.drives, P.t_mid, F, NULL)
    for i in range(P.T.n + P.T.m):
        P.F[i] = F[i]
        F_scale[i] = 1.0
        if P.T.ground != NULL and not isfinite(F[i]):
            return CONTACT_FAILED  # a contact with the curved ground not found
    return OK


cdef int problem_jacobian(void* problem, const double* x, double* J) noexcept nogil:
    # forward differences in q1 once per step (the chord method after that), the exact
    # -(h/2) A0^T in lam: the twin's step_jacobian
    cdef StepProblem* P = <StepProblem*>problem
    cdef const TreeData* T = P.T
    cdef int n = T.n, N = T.n + T.m
    cdef double shifted[TREE_UNKNOWNS]
    cdef double Fd[TREE_UNKNOWNS]
    cdef double d
    cdef int i, j
    if not P.have_jacobian:
        memset(P.J, 0, N * N * sizeof(double))
        for j in range(n):
            memcpy(shifted, x, N * sizeof(double))
            d = DIFFERENCE_STEP * (fabs(x[j]) + P.floor[j])
            shifted[j] += d
            step_residual(T, P.q0, P.p0, P.A0, shifted, shifted + n, P.h, P.drives, P.t_mid,
                          Fd, NULL)
            for i in range(N):
                P.J[N * i + j] = (Fd[i] - P.F[i]) / d
        for i in range(n):
            for j in range(T.m):
                P.J[N * i + n + j] = -0.5 * P.h * P.A0[n * j + i]
        P.have_jacobian = True
    memcpy(J, P.J, N * N * sizeof(double))
    return OK


cdef int end_velocity(const TreeData* T, const double* q1, const double* p_end,
                      double* v1) noexcept nogil:
    cdef int n = T.n, m = T.m, N = T.n + T.m
    cdef double Kmat[TREE_UNKNOWNS * TREE_UNKNOWNS]
    cdef double rhs[TREE_UNKNOWNS]
    cdef double M[TREE_JOINTS * TREE_JOINTS]
    cdef double dT[TREE_JOINTS]
    cdef double dV[TREE_JOINTS]
    cdef double A[TREE_ROWS * TREE_JOINTS]
    cdef double zero[TREE_JOINTS]
    cdef Kinematics K
    cdef int i, j
    memset(zero, 0, sizeof(zero))
    kinematics(T, q1, zero, &K)
    lagrangian_gradients(T, &K, q1, M, dT, dV)
    constraint_matrix(T, &K, A)
    memset(Kmat, 0, N * N * sizeof(double))
    for i in range(n):
        for j in range(n):
            Kmat[N * i + j] = M[n * i + j]
        for j in range(m):
            Kmat[N * i + n + j] = A[n * j + i]
            Kmat[N * (n + j) + i] = A[n * j + i]
        rhs[i] = p_end[i]
    for j in range(m):
        rhs[n + j] = 0.0
    if not solve_small(N, Kmat, rhs):
        return SINGULAR_JACOBIAN
    for i in range(n):
        v1[i] = rhs[i]
    return OK


cdef int tree_step(const TreeData* T, double* q, double* v, double* lam, double h,
                   NewtonRule rule, void* drives, double* clock) noexcept nogil:
    # the twin's tree_step: IN/OUT q, v (n,), lam (m,), clock (2,) (t, work), changed only on
    # success; drives a JointDrives or NULL
    cdef int n = T.n, m = T.m, N = T.n + T.m
    cdef StepProblem P
    cdef double M[TREE_JOINTS * TREE_JOINTS]
    cdef double dT[TREE_JOINTS]
    cdef double dV[TREE_JOINTS]
    cdef double x[TREE_UNKNOWNS]
    cdef double floor[TREE_UNKNOWNS]
    cdef double p_end[TREE_JOINTS]
    cdef double v1[TREE_JOINTS]
    cdef double q1[TREE_JOINTS]
    cdef double F[TREE_UNKNOWNS]
    cdef double lam_size = 0.0
    cdef double p_size = 0.0, m_size = 0.0, q_size = 0.0, move
    cdef double v_size = 0.0
    cdef Kinematics K
    cdef int i, j, st
    cdef double Q[TREE_JOINTS]
    cdef double w[TREE_JOINTS]
    cdef double power = 0.0
    P.T = T
    P.h = h
    P.have_jacobian = False
    P.drives = drives
    P.t_mid = clock[0] + 0.5 * h
    for i in range(n):  # the tree with its free translations at zero: the same M, A, gaps
        P.q0[i] = 0.0 if T.free_translation[i] else q[i]
    kinematics(T, P.q0, v, &K)
    lagrangian_gradients(T, &K, P.q0, M, dT, dV)
    constraint_matrix(T, &K, P.A0)
    for i in range(n):
        P.p0[i] = 0.0
        for j in range(n):
            P.p0[i] += M[n * i + j] * v[j]
        x[i] = h * v[i]
        if fabs(v[i]) > v_size:
            v_size = fabs(v[i])
    for i in range(n):  # the twin's floor: the step's motion and the coordinates' round-off
        if fabs(P.q0[i]) > q_size:
            q_size = fabs(P.q0[i])
    move = fabs(h) * (v_size + 1.0) + COORDINATE_FLOOR * (1.0 + q_size)
    for i in range(n):
        floor[i] = move
    for j in range(m):
        if fabs(lam[j]) > lam_size:
            lam_size = fabs(lam[j])
    for i in range(n):  # (h/2) lam balances momenta: the impulse moving q by the floor
        if fabs(P.p0[i]) > p_size:
            p_size = fabs(P.p0[i])
    for i in range(n * n):
        if fabs(M[i]) > m_size:
            m_size = fabs(M[i])
    p_size = 2.0 * (p_size / fabs(h) + m_size * move / (h * h))
    for j in range(m):
        x[n + j] = lam[j]
        floor[n + j] = lam_size + T.weight + p_size
    memcpy(P.floor, floor, N * sizeof(double))
    st = newton_solve(problem_residual, problem_jacobian, &P, N, x, floor, rule)
    if st != OK:
        return st
    step_residual(T, P.q0, P.p0, P.A0, x, x + n, h, drives, P.t_mid, F, p_end)
    for i in range(n):
        q1[i] = P.q0[i] + x[i]
    st = end_velocity(T, q1, p_end, v1)
    if st != OK:
        return st
    if drives != NULL:
        for i in range(n):
            w[i] = x[i] / h
        drive_force(<JointDrives>drives, n, P.t_mid, w, Q)
        for i in range(n):
            power += Q[i] * x[i]
        clock[1] += power
    clock[0] += h
    for i in range(n):
        q[i] = q[i] + x[i]
        v[i] = v1[i]
    for j in range(m):
        lam[j] = x[n + j]
    return OK


def tree_run(JointTree tree, double[::1] q, double[::1] v, double[::1] lam,
             const double[::1] fractions, double dt, Py_ssize_t n_steps, Py_ssize_t save_every,
             double[:, ::1] out_q, double[:, ::1] out_v, Py_ssize_t[::1] info,
             double newton_tol, int max_newton, JointDrives drives=None,
             double[::1] clock=None, double[::1] out_work=None):
    """The time loop (see the twin): ``n_steps`` steps of the composition ``fractions``.

    Returns 0, or ``k + 1`` for a failure in step ``k`` (its status in ``info[0]``; the state
    left at the start of that step).
    """
    cdef const TreeData* T = &tree.data
    cdef int n = T.n, m = T.m
    cdef int s = fractions.shape[0]
    cdef double qs[TREE_JOINTS]
    cdef double vs[TREE_JOINTS]
    cdef double ls[TREE_ROWS]
    cdef NewtonRule rule
    cdef Py_ssize_t k, row
    cdef int i, st = OK, failed = 0
    cdef double cl[2]
    cdef double cs[2]
    cdef void* pdrives = NULL
    cdef bint keep_work = out_work is not None
    if drives is not None:
        pdrives = <void*>drives
    if q.shape[0] != n or v.shape[0] != n or lam.shape[0] != m or info.shape[0] < INFO_SIZE:
        raise ValueError(f"Expected q, v of shape ({n},), lam of shape ({m},) and info of "
                         f"shape ({INFO_SIZE},).")
    if save_every < 1 or n_steps < 0:
        raise ValueError("Expected save_every >= 1 and n_steps >= 0.")
    if out_q.shape[0] < n_steps // save_every or out_v.shape[0] < n_steps // save_every \
            or out_q.shape[1] != n or out_v.shape[1] != n:
        raise ValueError(f"Expected out_q, out_v of shape (saved steps, {n}).")
    if keep_work and out_work.shape[0] < n_steps // save_every:
        raise ValueError("Expected out_work with a row per saved step.")
    if clock is not None and clock.shape[0] != 2:
        raise ValueError("Expected clock of shape (2,): (t, work).")
    cl[0] = clock[0] if clock is not None else 0.0
    cl[1] = clock[1] if clock is not None else 0.0
    rule.correction_tol = newton_tol
    rule.residual_tol = 0.0
    rule.max_iter = max_newton
    with nogil:
        for k in range(n_steps):
            memcpy(qs, &q[0], n * sizeof(double))
            memcpy(vs, &v[0], n * sizeof(double))
            memcpy(ls, &lam[0], m * sizeof(double))
            cs[0] = cl[0]
            cs[1] = cl[1]
            for i in range(s):
                st = tree_step(T, qs, vs, ls, fractions[i] * dt, rule, pdrives, cs)
                if st != OK:
                    break
            if st != OK:
                info[INFO_STATUS] = st
                failed = <int>(k + 1)
                break
            memcpy(&q[0], qs, n * sizeof(double))
            memcpy(&v[0], vs, n * sizeof(double))
            memcpy(&lam[0], ls, m * sizeof(double))
            cl[0] = cs[0]
            cl[1] = cs[1]
            if clock is not None:
                clock[0] = cl[0]
                clock[1] = cl[1]
            if (k + 1) % save_every == 0:
                row = (k + 1) // save_every - 1
                for i in range(n):
                    out_q[row, i] = q[i]
                    out_v[row, i] = v[i]
                if keep_work:
                    out_work[row] = cl[1]
            info[INFO_COMMITTED] = k + 1
    return failed
