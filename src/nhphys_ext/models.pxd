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
#   Closed forms (models with `closed_forces`: a planar body whose Jacobians J_v, J_W, J_m are
#   constant): body_pose_cs A, a at q with c, s = cos q[2], sin q[2]; group_point q of g;
#   pull_back Q = J_v^T f + J_W^T tau (+ J_m^T tau_m) (n,); group_pull_back F = T^T Q (n,).
#   Each gives the numbers of body_frame / group_coordinates and the products with their zeros
#   and ones (the same operations on the entries that are not 0 or 1), without forming them.
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

from nhphys_ext.forces cimport ForceSet

cdef enum:
    NMAX = 8  # coordinates of the largest model the kernels take
    RMAX = 4  # constraints of the largest model


cdef class CoordinateModel:
    cdef readonly int n           # coordinates
    cdef readonly int r           # constraints
    cdef readonly bint has_gauge  # S != 0: the DLA discrete Lagrangian sees it
    cdef readonly bint closed_forces  # overrides the closed forms below
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
    cdef void body_pose_cs(self, const double* q, double c, double s, double* A,
                           double* a) noexcept nogil
    cdef void group_point(self, const double* g, double c, double s, double* q) noexcept nogil
    cdef void pull_back(self, const double* f, const double* tau, const double* tau_m,
                        double* Q) noexcept nogil
    cdef void group_pull_back(self, double c, double s, const double* Q,
                              double* F) noexcept nogil


cdef class SleighModel(CoordinateModel):
    # a planar body on SE(2) x R^k whose group point is `offset` ahead of its centre along its
    # heading: the closed forms shared by the knife edge and the rotor sleigh
    cdef readonly double offset


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
    cdef readonly bint closed       # the model's closed forms serve (closed_forces, not placed)
    cdef readonly bint constant_C   # the model's constant_damping holds here (not placed)
    cdef double C_const[NMAX * NMAX]   # then C, formed once (models.pxd: constant_damping)
    cdef readonly bint heading_invariant  # constant_C, and T^T C T is the same at every heading
    cdef double Cg_const[NMAX * NMAX]  # then T^T C T, at the group's identity (d = n)

    cdef void form_constant_damping(self)
    cdef void pose(self, const double* q, double* A, double* a, double* Jv, double* JW,
                   double* Jm) noexcept nogil
    cdef void place(self, const double* Al, const double* al, const double* Jl, double* A,
                    double* a, double* Jv) noexcept nogil
    cdef void closed_terms(self, double t, const double* A, const double* a, double* Qc,
                           double* Qa) noexcept nogil
    cdef void group_forces(self, double t, const double* g, double c, double s, double* F0,
                           double* Fa) noexcept nogil
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
