# The built-in mechanical systems in coordinates, as the Newmark / DLA kernel sees them.
#
# Design: a system is a `cdef class` deriving from CoordinateModel (the pattern of ChartSurface
# and ConvexShape). The model is
#
#     L(q, v) = 1/2 v.M v - v.grad S(q) - V(q)   on R^n,     mu(q) v = 0   (r constraints),
#
# with a constant mass matrix M (stored with its inverse), a potential V and an optional gauge
# function S (a total derivative: it changes the momenta, not the motion). Each model overrides
# the per-point methods below; the base class gives V = 0, S = 0 and no constraint. Every method
# is `noexcept nogil` and writes into the caller's row-major buffers. The kernels hold a model
# by its base type and call these methods through the vtable: adding a system adds one class
# here (and its twin), no branch anywhere else. The specification, with the same class names
# and methods on numpy arrays, is nhphys/twins/models.py.
#
# Layouts (one point q (n,)):
#   grad_potential (n,); hessian_potential (n, n);
#   constraint_matrix mu (r, n); constraint_matrix_derivative D (r, n, n),
#       D[a n n + i n + j] = d mu_{ai} / d q_j;
#   gauge_gradient grad S (n,); gauge_hessian Hess S (n, n);
#   gauge_third T (n, n), T[i n + j] = sum_l d^3 S / dq_i dq_j dq_l d_l for a direction d (n,).
#   body_frame (models of one rigid body in a plane): A (3, 3), a (3,), J_v, J_W, J_m (3, n);
#   group_coordinates (models on SE(2) x R^k): q (n,), T (n, d) with dq/dt = T xi;
#   group_body_frame: both at once (a model may share their work: the same numbers).
#   Closed forms (the sleighs, SleighModel: a planar body whose Jacobians J_v, J_W, J_m are
#   constant), inline functions at the end of this file: planar_pose_cs A, a at q with c, s =
#   cos q[2], sin q[2]; sleigh_group_point q of g; sleigh_pull_back Q = J_v^T f + J_W^T tau
#   (+ J_m^T tau_m) (n,); sleigh_group_pull_back F = T^T Q (n,). Each gives the numbers of
#   body_frame / group_coordinates and the products with their zeros and ones (the same
#   operations on the entries that are not 0 or 1), without forming them. Inline, so that a
#   kernel's step compiles in the force evaluation (closed_group_forces) with no call.
#   constant_damping: the damping matrix C = drag J_v^T J_v + J_W^T D J_W + J_m^T D_m J_m of
#   every built-in element is the same at every q (on a plane at the identity frame), so
#   BodyForces forms it once, at q = 0. Exactly so for a body with constant Jacobians (its D
#   too: the body's normal A^T e_z is e_z); for the vertical disk, whose J_W turns with phi,
#   up to round-off (its entries are sums of sin^2 + cos^2 of phi).
#
# BodyForces: the force elements of a model's rigid body (ForceSet of nhphys_ext.forces) as
# generalized forces on its coordinates (the derivation is in nhphys/twins/models.py). Its
# `terms` takes C = NULL when the caller knows there is no damping (`damps` False).

cimport cython

from nhphys_ext.forces cimport ForceSet, add_loads, add_motor_torques, add_potential_wrench

cdef enum:
    NMAX = 8  # coordinates of the largest model the kernels take
    RMAX = 4  # constraints of the largest model


cdef class CoordinateModel:
    cdef readonly int n           # coordinates
    cdef readonly int r           # constraints
    cdef readonly bint has_gauge  # S != 0: the DLA discrete Lagrangian sees it
    cdef readonly bint constant_damping  # C is the same at every q (see below)
    cdef double M[NMAX * NMAX]     # the mass matrix, row-major (n, n)
    cdef double Minv[NMAX * NMAX]  # its inverse, row-major (n, n)

    cdef void grad_potential(self, const double* q, double* out) noexcept nogil
    cdef void hessian_potential(self, const double* q, double* out) noexcept nogil
    cdef void constraint_matrix(self, const double* q, double* out) noexcept nogil
    cdef void constraint_matrix_derivative(self, const double* q, double* out) noexcept nogil
    cdef void gauge_gradient(self, const double* q, double* out) noexcept nogil
    cdef void gauge_hessian(self, const double* q, double* out) noexcept nogil
    cdef void gauge_third(self, const double* q, const double* d, double* out) noexcept nogil
    cdef bint body_frame(self, const double* q, double* A, double* a, double* Jv, double* JW,
                         double* Jm) noexcept nogil
    cdef void group_coordinates(self, const double* g, double* q, double* T) noexcept nogil
    cdef bint group_body_frame(self, const double* g, double* q, double* T, double* A,
                               double* a, double* Jv, double* JW, double* Jm) noexcept nogil


cdef class SleighModel(CoordinateModel):
    # a planar body on SE(2) x R^k whose group point is `offset` ahead of its centre along its
    # heading: the closed forms shared by the knife edge and the rotor sleigh
    cdef readonly double offset
    cdef readonly int motor_row  # the coordinate a motor's torque about e_z drives (J_m)


cdef class KnifeEdgeModel(SleighModel):
    cdef readonly double mass, inertia, downhill_force


cdef class VerticalDiskModel(CoordinateModel):
    cdef readonly double mass, radius, inertia_axial, inertia_diametral


cdef class ContactOscillatorModel(CoordinateModel):
    cdef readonly double epsilon, strength


cdef class RotorSleighModel(SleighModel):
    cdef readonly double mass, inertia, rotor_inertia
    cdef readonly bint locked


@cython.final
cdef class BodyForces:
    cdef readonly CoordinateModel model
    cdef readonly ForceSet body     # every element but the motors
    cdef readonly ForceSet motors   # the motors (they act through J_m)
    cdef double E[9]                # the plane's axes in space (columns), row-major
    cdef double o[3]                # its origin
    cdef double normal[3]           # E e_z
    cdef readonly double normal_force
    cdef readonly bint empty
    cdef bint has_potential, has_applied, has_damping  # which parts of `body` can be nonzero
    cdef bint motor_gain            # a motor controls its speed (it damps)
    cdef readonly bint damps        # C can be nonzero (has_damping or motor_gain)
    cdef readonly bint applies      # Q_a can be nonzero (applied elements or motors)
    cdef bint placed                # E, o are not the identity and zero: pose transforms
    cdef readonly bint closed       # a sleigh on a plane not placed: its closed forms serve
    cdef SleighModel sleigh         # then the model, as a sleigh (else None)
    cdef readonly bint constant_C   # the model's constant_damping holds here (not placed)
    cdef double C_const[NMAX * NMAX]   # then C, formed once (models.pxd: constant_damping)
    cdef readonly bint heading_invariant  # constant_C, and T^T C T is the same at every heading
    cdef double Cg_const[NMAX * NMAX]  # then T^T C T, at the group's identity (d = n)

    cdef void form_constant_damping(self)
    cdef void pose(self, const double* q, double* A, double* a, double* Jv, double* JW,
                   double* Jm) noexcept nogil
    cdef void place(self, const double* Al, const double* al, const double* Jl, double* A,
                    double* a, double* Jv) noexcept nogil
    cdef void terms_at(self, double t, const double* A, const double* a, const double* Jv,
                       const double* JW, const double* Jm, double* Qc, double* Qa,
                       double* C) noexcept nogil
    cdef void group_terms(self, double t, const double* g, double* q, double* T, double* Qc,
                          double* Qa, double* C) noexcept nogil
    cdef void terms(self, double t, const double* q, double* Qc, double* Qa,
                    double* C) noexcept nogil
    cdef void body_damping(self, const double* A, const double* Jv, const double* JW,
                           double* C) noexcept nogil
    cdef void motor_damping(self, const double* A, const double* Jm, double* C) noexcept nogil
    cdef double potential(self, const double* q) noexcept nogil


# -- the closed forms of the sleighs (inline: a kernel's step compiles them in) ----------------

cdef inline void planar_pose_cs(const double* q, double c, double s, double* A,
                                double* a) noexcept nogil:
    # A and a of planar_body_cs
    A[0] = c
    A[1] = -s
    A[2] = 0.0
    A[3] = s
    A[4] = c
    A[5] = 0.0
    A[6] = 0.0
    A[7] = 0.0
    A[8] = 1.0
    a[0] = q[0]
    a[1] = q[1]
    a[2] = 0.0


cdef inline void planar_pull_back(const double* f, const double* tau, double* Q) noexcept nogil:
    # Q[:3] = J_v^T f + J_W^T tau of planar_body: (f_x, f_y, tau_z)
    Q[0] = f[0]
    Q[1] = f[1]
    Q[2] = tau[2]


cdef inline void sleigh_group_point(const double* g, double off, int n, double c, double s,
                                    double* q) noexcept nogil:
    # q of sleigh_group_coordinates_cs
    cdef int i
    for i in range(n):
        q[i] = g[i]
    q[0] = g[0] + off * c
    q[1] = g[1] + off * s


cdef inline void sleigh_group_pull_back(double off, int n, double c, double s, const double* Q,
                                        double* F) noexcept nogil:
    # F = T^T Q with T of sleigh_group_coordinates_cs (its entries in the same order)
    cdef int i
    F[0] = c * Q[0] + s * Q[1]
    F[1] = -s * Q[0] + c * Q[1]
    F[2] = (-off * s) * Q[0] + (off * c) * Q[1] + Q[2]
    for i in range(3, n):
        F[i] = Q[i]



cdef inline void sleigh_pull_back(SleighModel model, const double* f, const double* tau,
                                  const double* tau_m, double* Q) noexcept nogil:
    # Q = J_v^T f + J_W^T tau (+ J_m^T tau_m) (n,): (f_x, f_y, tau_z), zeros on the other
    # coordinates, and a motor's tau_z on motor_row
    cdef int i
    planar_pull_back(f, tau, Q)
    for i in range(3, model.n):
        Q[i] = 0.0
    if tau_m != NULL:
        Q[model.motor_row] = Q[model.motor_row] + tau_m[2]


cdef inline void closed_terms(BodyForces forces, double t, const double* A, const double* a,
                              double* Qc, double* Qa) noexcept nogil:
    # Q_c, Q_a of BodyForces.terms_at (no damping) through sleigh_pull_back (`forces.closed`):
    # the same numbers without forming the Jacobians
    cdef double f[3]
    cdef double tau[3]
    cdef double tau_m[3]
    cdef int i
    cdef int n = forces.sleigh.n
    if forces.has_potential:
        for i in range(3):
            f[i] = 0.0
            tau[i] = 0.0
        add_potential_wrench(forces.body, A, a, f, tau)
        sleigh_pull_back(forces.sleigh, f, tau, NULL, Qc)
    else:
        for i in range(n):
            Qc[i] = 0.0
    if not forces.applies:
        for i in range(n):
            Qa[i] = 0.0
        return
    for i in range(3):
        f[i] = 0.0
        tau[i] = 0.0
    if forces.has_applied:
        add_loads(forces.body, t, A, f, tau)  # (the body's set has no motors)
    if forces.motors.has_applied:
        for i in range(3):
            tau_m[i] = 0.0
        add_motor_torques(forces.motors, t, tau_m)  # (and the motors' set only motors)
        sleigh_pull_back(forces.sleigh, f, tau, tau_m, Qa)
    else:
        sleigh_pull_back(forces.sleigh, f, tau, NULL, Qa)


cdef inline void total_force(BodyForces forces, int n, const double* Qc, const double* Qa,
                             double* Q0) noexcept nogil:
    # Q_0 = Q_c + Q_a (n,), without adding a part that is zero here (no potential, or nothing
    # applied): the same numbers, up to the sign of a zero, and one addition fewer on the
    # step's critical path
    cdef int i
    if not forces.has_potential:
        for i in range(n):
            Q0[i] = Qa[i]
    elif not forces.applies:
        for i in range(n):
            Q0[i] = Qc[i]
    else:
        for i in range(n):
            Q0[i] = Qc[i] + Qa[i]


cdef inline void closed_group_forces(BodyForces forces, double t, const double* g, double c,
                                     double s, double* F0, double* Fa) noexcept nogil:
    # F_0 = T^T (Q_c + Q_a), F_a = T^T Q_a at the group element g, heading c, s = cos g[2],
    # sin g[2], through the sleigh's closed forms (`forces.closed`)
    cdef double q[NMAX]
    cdef double A[9]
    cdef double a[3]
    cdef double Qc[NMAX]
    cdef double Qa[NMAX]
    cdef double Q0[NMAX]
    cdef int n = forces.sleigh.n
    cdef double off = forces.sleigh.offset
    cdef int i
    if not forces.has_potential and not forces.applies:  # only damping: no force
        for i in range(n):
            F0[i] = 0.0
            Fa[i] = 0.0
        return
    sleigh_group_point(g, off, n, c, s, q)
    planar_pose_cs(q, c, s, A, a)
    closed_terms(forces, t, A, a, Qc, Qa)
    if not forces.has_potential:  # Q_c = 0: F_0 = T^T Q_a = F_a
        sleigh_group_pull_back(off, n, c, s, Qa, Fa)
        for i in range(n):
            F0[i] = Fa[i]
        return
    if not forces.applies:  # Q_a = 0: F_0 = T^T Q_c (total_force), F_a = 0
        sleigh_group_pull_back(off, n, c, s, Qc, F0)
        for i in range(n):
            Fa[i] = 0.0
        return
    for i in range(n):
        Q0[i] = Qc[i] + Qa[i]
    sleigh_group_pull_back(off, n, c, s, Q0, F0)
    sleigh_group_pull_back(off, n, c, s, Qa, Fa)
