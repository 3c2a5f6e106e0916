r"""Trees of rigid bodies joined by revolute and prismatic joints, with disks and convex hulls
rolling on a plane or a curved ground.

The specification of nhphys's articulated systems (``nhphys.systems.Bicycle``): kinematics,
mass matrix, bias forces and the rolling constraints of a *joint tree* in its joint
coordinates ``q`` (n,), and the continuous equations they give.

The tree
--------
Joint ``j`` (``j = 0 .. n-1``, parents before children) moves body ``j`` relative to its
parent body ``p(j)`` (``-1``: the ground, at rest with its origin at the origin). Body ``j``'s
frame has the parent's axes at ``q_j = 0`` and its origin at the joint's origin ``X_j``, the
point ``offset_j`` of the parent's frame. A *revolute* joint turns the body by ``q_j`` about the
axis ``axis_j`` (a unit vector of the parent's frame) through ``X_j``; a *prismatic* joint slides
it by ``q_j`` along ``axis_j``. With ``R_b`` the rotation of body ``b`` (body to space), ``o_b``
its origin and ``a_j = R_p(j) axis_j`` the joint's axis in space::

    revolute:   R_j = R_p Rot(axis_j, q_j),  o_j = X_j = o_p + R_p offset_j
    prismatic:  R_j = R_p,                   o_j = X_j + a_j q_j

Velocities and Jacobians
------------------------
The angular velocity of body ``b`` is ``omega_b = sum_j a_j v_j`` over its revolute ancestors
(``b`` included). A point ``P`` fixed in body ``b`` has the velocity ``J_P(q) v``, the columns
of its Jacobian being, over the ancestors ``j`` of ``b`` (others are zero)::

    revolute:  a_j x (P - X_j)          prismatic:  a_j

and ``J_omega`` has the columns ``a_j`` of the revolute ancestors.

Accelerations: the bias ``dJ/dt v``
----------------------------------
The acceleration of ``P`` is ``J_P dv/dt + beta_P`` and the angular acceleration of ``b`` is
``J_omega dv/dt + gamma_b``, with the *bias* terms ``beta``, ``gamma`` (what the accelerations
are with ``dv/dt = 0``). An axis carried by the parent turns with it, ``da_j/dt = omega_p x
a_j``, so recursively, parents first (the ground has ``omega = gamma = beta = 0``)::

    gamma_j = gamma_p + (omega_p x a_j) v_j                      (revolute; gamma_p if prismatic)
    beta(X_j) = beta_p + gamma_p x r + omega_p x (omega_p x r),  r = X_j - o_p   (X_j fixed in p)
    beta_j = beta(X_j)                                          (revolute)
    beta_j = beta(X_j) + gamma_p x s + omega_p x (omega_p x s) + 2 omega_p x a_j v_j,  s = a_j q_j
                                                                (prismatic: the slider's Coriolis)

where ``beta_j`` is the bias of body ``j``'s origin; a point ``P`` fixed in ``b`` then has
``beta_P = beta_b + gamma_b x (P - o_b) + omega_b x (omega_b x (P - o_b))``.

The equations of motion
-----------------------
Body ``b`` has mass ``m_b``, centre of mass ``c_b`` (its frame) and inertia ``I_b`` about it
(its frame; in space ``I^s_b = R_b I_b R_b^T``). d'Alembert's principle with the virtual
displacements ``J delta q`` (Kane's equations, which for these coordinates are Lagrange's)::

    M(q) dv/dt + h(q, v) = A(q)^T lambda,
    M = sum_b m_b J_c^T J_c + J_omega^T I^s_b J_omega,
    h = sum_b m_b J_c^T (beta_c + g e_z) + J_omega^T (I^s_b gamma_b + omega_b x I^s_b omega_b),

gravity ``g`` along ``-e_z`` (written ``- g e_z`` below; with a gravity vector ``g_vec``, a plane
tilted under gravity, ``g e_z`` is ``-g_vec`` throughout). ``h`` holds the Coriolis and
centrifugal terms and the gradient of the potential ``V = g sum_b m_b (c_b)_z``; that ``h - grad V = (dM/dt) v - dT/dq`` with
``T = 1/2 v.M v`` is checked against finite differences of ``M`` in the tests.

Disks rolling on the plane ``z = 0``
------------------------------------
A disk of radius ``r`` fixed in body ``b``, centre ``C``, unit axis ``a`` (in space), touches
the plane at its lowest point. With ``s = sqrt(1 - a_z^2)`` (``s > 0``: the disk is not flat)::

    d = (e_z - a_z a) / s,      P = C - r d,      gap(q) = P_z = C_z - r s.

Rolling without slipping is ``J_P v = 0`` for the material point at ``P``: its horizontal rows
are nonholonomic. Its vertical row is the derivative of the gap: ``P`` is the lowest point of
the rim, so by the envelope theorem ``d gap/dt`` is the vertical velocity of the material point
there. A contact that the tree keeps by construction (the rear wheel of the bicycle: its ground
point is a coordinate) has that row zero and contributes its horizontal rows only (two, or its
rolling row alone when another wheel gives its sideways row); a
*holonomic* contact contributes all three, the third being ``d gap/dt = 0``, and the gap itself
is held at zero.

Differentiating ``v_C + omega x (P - C) = 0`` along the motion, with ``dP/dt - v_C = -r dd/dt``,
gives the acceleration constraint ``J_P dv/dt + b_P = 0`` with the bias::

    b_P = beta_C + gamma_b x (P - C) - r omega_b x dd/dt,
    dd/dt = (dw/dt - d (d . dw/dt)) / s,    dw/dt = -((da/dt)_z a + a_z da/dt),  da/dt = omega_b x a.

Stacking the contacts' rows gives ``A(q)`` (m, n) and ``b(q, v)`` (m,); with ``A v = 0`` the
accelerations and multipliers solve::

    [ M   A^T ] [ dv/dt   ]   [ -h ]
    [ A   0   ] [ -lambda ] = [ -b ]

The multipliers are the contact forces (in the rows' directions) the ground exerts.

Disks rolling on a curved ground
--------------------------------
A tree may roll on a graph surface ``z = f(x, y)`` instead (``ground``: a chart surface of
:mod:`nhphys.twins.surfaces` whose one chart is ``(u, v) = (x, y)``, such as a paraboloid bowl
or a height field): the surface point ``r(u)``, its tangents ``J = dr/du`` (3, 2), its unit
normal ``n(u)`` (upward) and its Weingarten map ``L`` (2, 2), with ``dn/du = -J L`` (because
``n . J = 0`` gives ``dn/du_a . J_b = -II_ab`` and ``g L = II``). Every disk is then held.

*The contact.* For a ground normal ``n``, the rim point farthest along ``-n`` is
``P = C - r d`` with ``d = w / |w|``, ``w = n - (n . a) a`` (``|w| = sqrt(1 - (n . a)^2)``, the
disk's tilt against the ground, 0 when it lies flat). The contact is the surface point ``u``
where ``P - r(u)`` is along ``n(u)``: the two equations ``F(u) = J^T (P - r) = 0``, solved by
Newton's method from the point below ``C``. With ``t = a x d`` (the rim's tangent at ``P``;
``a, d, t`` orthonormal), ``dd/dn`` is ``t t^T / |w|`` (``d`` turns only about ``a``), so::

    dP/du = -(r / |w|) t (t^T dn/du),
    dF/du = H . (P - r) + J^T (dP/du - J)          (H = d^2 r/du^2 contracted on its first index)

and the gap is ``gap(q) = n . (P - r)``, the distance of the rim from the ground along the normal.

*Its rate is the material point's normal velocity.* ``d gap/dt = dn/dt . (P - r) + n . (dP/dt -
dr/dt)``. The first term is ``gap dn/dt . n = 0``; ``n . dr/dt = 0`` (a tangent); and ``dP/dt``
is the velocity ``J_P v`` of the material point at ``P`` plus ``R (ds/dt)``, the rate of the rim
point along the rim, which is along ``t``: normal to ``n``, since ``n = (n . a) a + |w| d``
lies in the plane of ``a`` and ``d``. So the held row is ``n . J_P``, and the envelope argument
of the plane carries over.

*The rows.* A sideways wheel gives ``e_x . J_P``, ``e_y . J_P`` (nonholonomic) and, held,
``n . J_P``; since ``n_z > 0`` on a graph, the three span ``J_P v = 0``. A wheel without its
sideways row gives its rolling direction ``f = a x n / |a x n|`` (tangent to the ground and to
the rim) and ``n . J_P``.

*The bias* (the continuous equations only; the steps need rows and gaps). Differentiating ``P =
C - r d`` along the motion with ``d = D(n, a)``::

    dd/dt = t (t . dn/dt) / |w| + dd_a,
    dd_a = (-(n . da/dt) a - (n . a) (da/dt - d (d . da/dt))) / |w|,   da/dt = omega x a,

the first part from the ground turning under the contact, the second from the disk turning
(on the plane ``dn/dt = 0``, and ``dd_a`` is the plane's ``dd/dt``). The contact moves on the
ground, ``dP/dt = J du/dt``, and ``dP/dt = v_C - r dd/dt``, ``dn/dt = -J L du/dt``, so::

    (J - (r / |w|) t (t^T J L)) du/dt = v_C - r dd_a

(three equations, consistent on the constraints: solved in the least-squares sense), and the
material point's bias is, as on the plane, ``b_P = beta_C + gamma_b x (P - C) - r omega_b x
dd/dt``. The row ``n . J_P`` has the bias ``n . b_P + dn/dt . v_P`` and ``f`` the rate
``(g' - f (f . g')) / |a x n|`` with ``g' = da/dt x n + a x dn/dt``.

Convex hulls
------------
A body may also roll on an ellipsoid fixed in it (``hulls``: centre ``c`` and semi-axes
``(a1, a2, a3)`` along its axes; a ball when they are equal). With ``A = R diag(a_i^2) R^T`` (space)
its point farthest along ``-n`` is ``C - S(n)``,::

    S(n) = A n / k,   k = sqrt(n . A n),   dS/dn = (A - S S^T) / k

(the maximiser of ``n . x`` on ``(x - C) . A^-1 (x - C) = 1``, by a Lagrange multiplier). The
disk is the same construction with ``S(n) = r d``, ``dS/dn = (r / |w|) t t^T``, so the contact
on a curved ground is the same Newton solve (``ground_newton``) with ``dP/du = dS/dn J L``, and
on the plane ``P = C - S(e_z)``. The gap's rate is again the material point's normal velocity
``n . (v_C - omega x S)``: ``n . dS/dn = (k S - k S)^T / k = 0``, and at a fixed ``n`` the
normal part of ``dS/dt`` is the rate of the support function ``n . S = k``, ``n . dA/dt n /
(2 k) = omega . (S x n) = n . (omega x S)`` (with ``dA/dt`` below). So a hull's rows are
``e_x . J_P``, ``e_y . J_P`` and, held, ``n . J_P`` (or the first two only, when the tree keeps
the hull on the ground: a ball caster in a socket of a planar cart).

Its bias: at a fixed ``n`` the body turns ``A`` as ``dA/dt = [omega x, A]``, so::

    dS/dt|_n = (dA/dt n) / k - S (n . dA/dt n) / (2 k^2),

on a curved ground ``(J - dS/dn J L) du/dt = v_C - dS/dt|_n`` gives ``dn/dt = -J L du/dt`` and
``dS/dt = dS/dn dn/dt + dS/dt|_n``, and since ``P - C = -S``, ``b_P = beta_C + gamma_b x (P - C)
- omega_b x dS/dt`` (for the disk ``dS/dt = r dd/dt``, the formula above).
"""

import numpy as np

from nhphys.twins.so3 import rotation_about
from nhphys.twins.surfaces import forms_of, normal_of, weingarten_of

REVOLUTE = 0
PRISMATIC = 1

# the contact with a curved ground: Newton's method stops after a step of at most CONTACT_TOL
# (relative to the chart point), where the next one would be below round-off (it converges
# quadratically); one that has not by CONTACT_ITERATIONS steps gives a NaN gap
CONTACT_ITERATIONS = 30
CONTACT_TOL = 1e-11
CONTACT_SAMPLES = 16  # the rim's points sampled for the solve's start (JointTree.rim_start)

E_Z = np.array([0.0, 0.0, 1.0])


def cross(u, v):
    """``u x v`` of two 3-vectors (what ``numpy.cross`` gives, without its overhead per call)."""
    return np.array([u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                     u[0] * v[1] - u[1] * v[0]])


class JointTree:
    """A tree of rigid bodies, one per joint, with disks rolling on the plane ``z = 0``.

    Parameters
    ----------
    parent : sequence of int, length n
        ``parent[j]`` is the body joint ``j`` is attached to, ``-1`` for the ground; parents come
        before their children (``parent[j] < j``).
    kind : sequence of int, length n
        ``REVOLUTE`` or ``PRISMATIC``.
    axis : array_like, shape (n, 3)
        Unit axes of the joints in their parents' frames.
    offset : array_like, shape (n, 3)
        Joint origins in their parents' frames.
    mass : array_like, shape (n,)
        Masses (0 for the tree's bookkeeping bodies).
    com : array_like, shape (n, 3)
        Centres of mass in the bodies' frames.
    inertia : array_like, shape (n, 3, 3)
        Inertias about the centres of mass, in the bodies' frames.
    disks : sequence of (body, centre (3,), axis (3,), radius, holonomic, sideways)
        The rolling disks: body index, centre and unit axis in that body's frame, radius,
        whether the contact is held by the constraint (``True``) or by the tree (``False``),
        and whether it gives its sideways row (``False``: its rolling row only).
    gravity : float or array_like, shape (3,)
        ``g`` along ``-z``, or the gravity vector (a hill: the plane tilted under gravity).
    blades : sequence of (body, point (3,), direction (3,))
        The knife edges: body index, the point on the ground and the unit direction of the
        blade in that body's frame (the direction level).
    suslov : sequence of (body, axis (3,))
        Suslov constraints: the body's angular velocity has no component along the unit
        ``axis`` fixed in it.
    springs : sequence of (joint, stiffness, rest)
        Linear springs on coordinates: the potential ``stiffness (q_j - rest)^2 / 2`` each,
        part of ``V`` (its gradient in :meth:`lagrangian_gradients`, its value in
        :meth:`energy`).
    ground : ChartSurface, optional
        A curved ground for the disks (a graph over ``(x, y)``, one chart, its normal up; see
        the module's notes): every disk is then held. None: the plane ``z = 0``.
    """

    def __init__(self, parent, kind, axis, offset, mass, com, inertia, disks, gravity,
                 blades=(), suslov=(), springs=(), ground=None, hulls=()):
        self.ground = ground
        self.parent = np.asarray(parent, dtype=int)
        self.kind = np.asarray(kind, dtype=int)
        self.axis = np.asarray(axis, dtype=float)
        self.offset = np.asarray(offset, dtype=float)
        self.mass = np.asarray(mass, dtype=float)
        self.com = np.asarray(com, dtype=float)
        self.inertia = np.asarray(inertia, dtype=float)
        self.disks = [(int(b), np.asarray(c, dtype=float), np.asarray(a, dtype=float),
                       float(r), bool(hol), bool(side)) for b, c, a, r, hol, side in disks]
        self.blades = [(int(b), np.asarray(p, dtype=float), np.asarray(d, dtype=float))
                       for b, p, d in blades]
        self.hulls = [(int(b), np.asarray(c, dtype=float), np.asarray(x, dtype=float),
                       bool(hol)) for b, c, x, hol in hulls]
        self.suslov = [(int(b), np.asarray(a, dtype=float)) for b, a in suslov]
        self.springs = [(int(j), float(k), float(r)) for j, k, r in springs]
        g = np.asarray(gravity, dtype=float)
        self.gravity_vector = np.array([0.0, 0.0, -float(g)]) if g.ndim == 0 else g.copy()
        self.gravity = float(np.linalg.norm(self.gravity_vector))
        self.n = len(self.parent)
        self.ancestors = []
        for b in range(self.n):
            chain, j = [], b
            while j >= 0:
                chain.append(j)
                j = self.parent[j]
            self.ancestors.append(chain)
        self.descendants = [[b for b in range(self.n) if j in self.ancestors[b]]
                            for j in range(self.n)]
        # the constraint rows: per disk its two horizontal rows (or its rolling row alone),
        # then its vertical one if held; per hull its two horizontal rows, then its vertical
        # one if held; then one row per blade and per Suslov constraint
        self.nonholonomic_rows, self.holonomic_rows, row = [], [], 0
        for horizontal, holonomic in ([(2 if disk[5] else 1, disk[4]) for disk in self.disks]
                                      + [(2, hull[3]) for hull in self.hulls]):
            self.nonholonomic_rows += list(range(row, row + horizontal))
            row += horizontal
            if holonomic:
                self.holonomic_rows.append(row)
                row += 1
        rows = len(self.blades) + len(self.suslov)
        self.nonholonomic_rows += list(range(row, row + rows))
        self.m = row + rows
        # the held contacts, as indices into gaps(): the disks', then the hulls'
        self.held_contacts = ([k for k, disk in enumerate(self.disks) if disk[4]]
                              + [len(self.disks) + k for k, hull in enumerate(self.hulls)
                                 if hull[3]])
        # horizontal slides of the whole tree (prismatic joints along the plane, from the
        # ground): nothing but the positions depends on them, so the steps evaluate the tree
        # with them at zero, where no large coordinate spoils its differences of positions
        self.free_translations = []
        for j in range(self.n if ground is None else 0):  # a curved ground: nothing is free
            if (self.kind[j] == PRISMATIC and self.axis[j][2] == 0.0
                    and not any(joint == j for joint, _, _ in self.springs)
                    and (self.parent[j] < 0 or self.parent[j] in self.free_translations)):
                self.free_translations.append(j)

    # -- kinematics ------------------------------------------------------------------------------
    def kinematics(self, q, v, bias=True):
        """Poses, velocities and bias accelerations of every body.

        Parameters
        ----------
        q, v : ndarray, shape (n,)
        bias : bool
            Whether to compute ``gamma`` and ``beta`` (the steps do not need them).

        Returns
        -------
        dict of ndarray
            ``R`` (n, 3, 3) rotations, ``o`` (n, 3) origins, ``X`` (n, 3) joint origins,
            ``a`` (n, 3) joint axes in space, ``omega`` (n, 3), ``vo`` (n, 3) velocities of the
            origins, ``gamma`` (n, 3) and ``beta`` (n, 3) the bias accelerations (angular, and
            of the origins; zero without ``bias``).
        """
        n = self.n
        R = np.empty((n, 3, 3))
        o, X, a, omega, vo = (np.empty((n, 3)) for _ in range(5))
        gamma, beta = np.zeros((n, 3)), np.zeros((n, 3))
        zero = np.zeros(3)
        for j in range(n):
            p = self.parent[j]
            if p < 0:
                Rp, op, wp, vp, gp, bp = np.eye(3), zero, zero, zero, zero, zero
            else:
                Rp, op, wp, vp, gp, bp = R[p], o[p], omega[p], vo[p], gamma[p], beta[p]
            r = Rp @ self.offset[j]
            X[j] = op + r
            a[j] = Rp @ self.axis[j]
            vX = vp + cross(wp, r)
            if self.kind[j] == REVOLUTE:
                R[j] = Rp @ rotation_about(self.axis[j], q[j])
                o[j] = X[j]
                omega[j] = wp + a[j] * v[j]
                vo[j] = vX
            else:
                s = a[j] * q[j]
                R[j] = Rp
                o[j] = X[j] + s
                omega[j] = wp
                vo[j] = vX + cross(wp, s) + a[j] * v[j]
            if not bias:
                continue
            bX = bp + cross(gp, r) + cross(wp, cross(wp, r))
            if self.kind[j] == REVOLUTE:
                gamma[j] = gp + cross(wp, a[j]) * v[j]
                beta[j] = bX
            else:
                gamma[j] = gp
                beta[j] = (bX + cross(gp, s) + cross(wp, cross(wp, s))
                           + 2.0 * cross(wp, a[j]) * v[j])
        return {"R": R, "o": o, "X": X, "a": a, "omega": omega, "vo": vo, "gamma": gamma,
                "beta": beta}

    def point_jacobian(self, kin, body, P):
        """``J_P`` (3, n): the velocity of the point ``P`` (3,) (in space) fixed in ``body``."""
        J = np.zeros((3, self.n))
        for j in self.ancestors[body]:
            if self.kind[j] == REVOLUTE:
                J[:, j] = cross(kin["a"][j], P - kin["X"][j])
            else:
                J[:, j] = kin["a"][j]
        return J

    def angular_jacobian(self, kin, body):
        """``J_omega`` (3, n) of ``body``."""
        J = np.zeros((3, self.n))
        for j in self.ancestors[body]:
            if self.kind[j] == REVOLUTE:
                J[:, j] = kin["a"][j]
        return J

    @staticmethod
    def point_bias(kin, body, P):
        """``beta_P`` (3,): the acceleration of ``P`` fixed in ``body`` when ``dv/dt = 0``."""
        r = P - kin["o"][body]
        w = kin["omega"][body]
        return kin["beta"][body] + cross(kin["gamma"][body], r) + cross(w, cross(w, r))

    # -- dynamics --------------------------------------------------------------------------------
    def massive_bodies(self, kin):
        """For each body with mass or inertia: ``(b, c, v_c, I^s, J_c, J_omega)`` (its centre of
        mass and the velocity there, its inertia in space, and their Jacobians (3, n))."""
        for b in range(self.n):
            if self.mass[b] == 0.0 and not self.inertia[b].any():
                continue
            R = kin["R"][b]
            c = kin["o"][b] + R @ self.com[b]
            vc = kin["vo"][b] + cross(kin["omega"][b], c - kin["o"][b])
            yield (b, c, vc, R @ self.inertia[b] @ R.T, self.point_jacobian(kin, b, c),
                   self.angular_jacobian(kin, b))

    def mass_matrix_and_bias(self, q, v, kin=None):
        """``M(q)`` (n, n) and ``h(q, v)`` (n,) of ``M dv/dt + h = A^T lambda``."""
        kin = self.kinematics(q, v) if kin is None else kin
        M = np.zeros((self.n, self.n))
        h = np.zeros(self.n)
        for b, c, _, Is, Jc, Jw in self.massive_bodies(kin):
            m, w = self.mass[b], kin["omega"][b]
            M += m * (Jc.T @ Jc) + Jw.T @ Is @ Jw
            h += m * (Jc.T @ (self.point_bias(kin, b, c) - self.gravity_vector))
            h += Jw.T @ (Is @ kin["gamma"][b] + cross(w, Is @ w))
        for j, k, rest in self.springs:
            h[j] += k * (q[j] - rest)
        return M, h

    def lagrangian_gradients(self, q, v, kin=None):
        """``M(q)`` (n, n), ``dT/dq`` (n,) at fixed ``v`` and ``grad V`` (n,).

        Turning joint ``i`` by ``delta`` turns its whole subtree about ``a_i`` through ``X_i``
        (sliding it along ``a_i`` for a prismatic joint). For a body ``b`` of the subtree, with
        centre of mass ``c`` and ``V_i(c) = v_o_i + omega_i x (c - o_i)`` the velocity ``c``
        would have fixed in body ``i``::

            dc/dq_i       = a_i x (c - X_i)                               (prismatic: a_i)
            dv_c/dq_i     = omega_i x (a_i x (c - X_i)) + a_i x (v_c - V_i(c))
                                                                (prismatic: omega_p(i) x a_i)
            domega_b/dq_i = a_i x (omega_b - omega_i)                      (prismatic: 0)
            dI^s_b/dq_i   = [a_i]x I^s_b - I^s_b [a_i]x                    (prismatic: 0)

        (the first two terms of ``dv_c/dq_i``: ``c`` moves under the velocity field of body
        ``i``; the last: the velocities relative to body ``i`` turn with the subtree). The
        rotational energy's derivative collapses, by the cyclic rule of the triple product, to
        ``a_i . (I^s_b omega_b x omega_i)``, so that::

            dT/dq_i = sum_b m_b v_c . dv_c/dq_i + a_i . (I^s_b omega_b x omega_i),
            dV/dq_i = -sum_b m_b g_vec . dc/dq_i     (g sum_b m_b (dc/dq_i)_z on level ground),

        plus ``k (q_j - rest)`` for each spring on coordinate ``j``.
        """
        kin = self.kinematics(q, v, bias=False) if kin is None else kin
        n = self.n
        M = np.zeros((n, n))
        dT = np.zeros(n)
        dV = np.zeros(n)
        centres, spins, vcs = {}, {}, {}
        for b, c, vc, Is, Jc, Jw in self.massive_bodies(kin):
            M += self.mass[b] * (Jc.T @ Jc) + Jw.T @ Is @ Jw
            centres[b], spins[b], vcs[b] = c, Is @ kin["omega"][b], vc
        for i in range(n):
            a, Xi, p = kin["a"][i], kin["X"][i], self.parent[i]
            for b in self.descendants[i]:
                if b not in centres:
                    continue
                c, vc, m = centres[b], vcs[b], self.mass[b]
                if self.kind[i] == REVOLUTE:
                    wi = kin["omega"][i]
                    dc = cross(a, c - Xi)
                    Vi = kin["vo"][i] + cross(wi, c - kin["o"][i])
                    dvc = cross(wi, dc) + cross(a, vc - Vi)
                    dT[i] += m * (vc @ dvc) + a @ cross(spins[b], wi)
                else:
                    dc = a
                    wp = kin["omega"][p] if p >= 0 else np.zeros(3)
                    dT[i] += m * (vc @ cross(wp, a))
                dV[i] -= m * (self.gravity_vector @ dc)
        for j, k, rest in self.springs:
            dV[j] += k * (q[j] - rest)
        return M, dT, dV

    def weight(self):
        """``g`` times the total mass: the size of the contact forces (N)."""
        return self.gravity * float(np.sum(self.mass))

    def energy(self, q, v, kin=None):
        """Kinetic plus potential energy (float); ``kin`` the kinematics at ``(q, v)``, if
        already computed."""
        kin = self.kinematics(q, v, bias=False) if kin is None else kin
        T = 0.0
        V = 0.0
        for b, c, vc, Is, _, _ in self.massive_bodies(kin):
            w = kin["omega"][b]
            T += 0.5 * self.mass[b] * (vc @ vc) + 0.5 * (w @ Is @ w)
            V -= self.mass[b] * (self.gravity_vector @ c)
        for j, k, rest in self.springs:
            V += 0.5 * k * (q[j] - rest) ** 2
        return T + V

    # -- the rolling disks and the blades ---------------------------------------------------------
    def disk_contact(self, kin, k):
        """Disk ``k``'s centre ``C``, axis ``a``, tilt ``s``, ``d``, contact point ``P``, the
        ground's normal ``n`` there and the gap (space); on a curved ground also ``ground``,
        the contact's ``(r, J, L)`` (see :meth:`ground_contact`)."""
        body, centre, axis, radius, *_ = self.disks[k]
        R = kin["R"][body]
        C = kin["o"][body] + R @ centre
        a = R @ axis
        if self.ground is not None:
            s, d, P, n, gap, ground = self.ground_contact(C, a, radius)
            return C, a, s, d, P, n, gap, ground
        s = np.sqrt(1.0 - a[2] ** 2)
        d = (E_Z - a[2] * a) / s
        P = C - radius * d
        return C, a, s, d, P, E_Z, P[2], None

    def ground_contact(self, C, a, radius):
        """The contact of a disk (centre ``C`` (3,), unit axis ``a`` (3,), ``radius``) with the
        curved ground: :meth:`ground_newton` with the rim's support ``S(n) = radius d``,
        ``dS/dn = (radius / |w|) t t^T``, from :meth:`rim_start`.

        Returns
        -------
        s : float
            The tilt ``|w| = sqrt(1 - (n . a)^2)``.
        d, P, n : ndarray, shape (3,)
            The rim's direction to the contact, the rim point, the ground's unit normal there.
        gap : float
            ``n . (P - r)``; NaN (with ``P``) when the solve fails.
        ground : tuple
            ``(r (3,), J (3, 2), L (2, 2))`` of the ground at the contact.
        """
        def support(n):
            w = n - (n @ a) * a
            s = np.sqrt(w @ w)
            d = w / s
            t = cross(a, d)
            return radius * d, (radius / s) * np.outer(t, t), (s, d)

        P, n, gap, ground, (s, d) = self.ground_newton(C, support,
                                                       self.rim_start(C, a, radius), radius)
        return s, d, P, n, gap, ground

    def ground_newton(self, C, support, u, reach):
        """The contact of a convex body with the curved ground, by Newton's method on ``F(u) =
        J^T (P - r) = 0`` (the module's notes), ``P = C - S(n(u))``.

        ``support(n) -> (S (3,), dS/dn (3, 3), info)``: the body's point farthest along
        ``-n``, relative to ``C``, and its derivative; so ``dP/du = dS/dn J L``. The solve
        starts at the chart point ``u`` (2,), and no correction is longer than ``reach`` (the
        body's size), so that an iterate does not wander to another part of a terrain. It
        fails when it has not converged after ``CONTACT_ITERATIONS`` corrections, when an
        iterate is not finite, or when the point it finds is not a proper contact: the
        symmetric part of ``-dF/du`` must be positive definite, which says that the body stays
        on its side of the ground near the point. (On a plane ``-dF/du`` is the metric ``J^T
        J``; a ground curving along the rim by more than ``|w| / radius``, a trench narrower
        than a wheel, gives a point where the rim crosses the ground, which this refuses.)

        Returns
        -------
        P, n : ndarray, shape (3,)
            The contact point (NaN when the solve fails) and the ground's normal there.
        gap : float
            ``n . (P - r)`` (NaN when the solve fails).
        ground : tuple
            ``(r (3,), J (3, 2), L (2, 2))`` of the ground at the last iterate.
        info : tuple
            ``support``'s own, at the last iterate.
        """
        g = self.ground

        def geometry(u):
            r, J, H = g.evaluate(0, u[0], u[1])
            n, _ = normal_of(J, g.normal_sign(0))
            return r, J, H, n, weingarten_of(*forms_of(J, H, n))

        r, J, H, n, L = geometry(u)
        info = support(n)[2]
        last = np.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            for iteration in range(CONTACT_ITERATIONS + 1):
                if not np.all(np.isfinite(u)):
                    break
                r, J, H, n, L = geometry(u)
                S, dS, info = support(n)
                P = C - S
                DF = np.einsum("iab,i->ab", H, P - r) + J.T @ (dS @ J @ L - J)
                if last <= CONTACT_TOL * (1.0 + np.abs(u).max()):
                    sym = -0.5 * (DF + DF.T)
                    if sym[0, 0] > 0.0 and sym[0, 0] * sym[1, 1] - sym[0, 1] ** 2 > 0.0:
                        return P, n, n @ (P - r), (r, J, L), info
                    break  # a point where the body crosses the ground
                F = J.T @ (P - r)
                det = DF[0, 0] * DF[1, 1] - DF[0, 1] * DF[1, 0]
                step = np.array([-(DF[1, 1] * F[0] - DF[0, 1] * F[1]) / det,
                                 -(DF[0, 0] * F[1] - DF[1, 0] * F[0]) / det])
                size = np.abs(step).max()
                if size > reach:  # no longer than the body's size
                    step *= reach / size
                u = u + step
                last = np.abs(step).max()
        return np.full(3, np.nan), n, np.nan, (r, J, L), info

    # -- convex hulls -----------------------------------------------------------------------------
    def hull_contact(self, kin, k):
        """Hull ``k``'s centre ``C``, its matrix ``A = R diag(axes^2) R^T`` (space), its contact
        point ``P``, the ground's normal ``n`` there, the gap, and on a curved ground its
        ``(r, J, L)`` there (else None).

        The ellipsoid ``(x - C) . A^-1 (x - C) = 1`` has the point ``C - S(n)`` farthest along
        ``-n``, ``S(n) = A n / k``, ``k = sqrt(n . A n)`` (the maximiser of ``-n . x`` on it,
        by a Lagrange multiplier), with ``dS/dn = (A - S S^T) / k``. On the plane ``n = e_z``;
        on a curved ground :meth:`ground_newton` from below ``C - S(n0)``, ``n0`` the ground's
        normal below ``C``."""
        body, centre, axes, _ = self.hulls[k]
        R = kin["R"][body]
        C = kin["o"][body] + R @ centre
        A = (R * axes**2) @ R.T

        def support(n):
            An = A @ n
            size = np.sqrt(n @ An)
            S = An / size
            return S, (A - np.outer(S, S)) / size, (size,)

        if self.ground is None:
            P = C - support(E_Z)[0]
            return C, A, P, E_Z, P[2], None
        g = self.ground
        u = (g.rot.T @ (C - g.ctr))[:2]
        r, J, H = g.evaluate(0, u[0], u[1])
        n0, _ = normal_of(J, g.normal_sign(0))
        u = (g.rot.T @ (C - support(n0)[0] - g.ctr))[:2]
        P, n, gap, ground, _ = self.ground_newton(C, support, u, float(np.max(axes)))
        return C, A, P, n, gap, ground

    def rim_start(self, C, a, radius):
        """The chart point (2,) below the rim's lowest point above the ground, the start of
        :meth:`ground_contact`'s solve.

        "Lowest" is in the ground's graph coordinates: the height ``h(theta)`` of the rim point
        ``C + radius (cos theta e1 + sin theta e2)`` above the graph point below it (``e1 =
        a x e_z / |a x e_z|``, ``e2 = a x e1``; ``e_x`` in place of ``e_z`` for a disk lying
        level). When the disk touches the ground its contact is where ``h`` is least (zero
        there, positive elsewhere), wherever the point below the centre is. ``h`` is sampled
        at ``CONTACT_SAMPLES`` angles and the least sample refined by the parabola through it
        and its neighbours."""
        g = self.ground
        e1 = cross(a, E_Z)
        if e1 @ e1 < 1e-12:
            e1 = cross(a, np.array([1.0, 0.0, 0.0]))
        e1 = e1 / np.sqrt(e1 @ e1)
        e2 = cross(a, e1)
        step = 2.0 * np.pi / CONTACT_SAMPLES

        def height(theta):
            local = g.rot.T @ (C + radius * (np.cos(theta) * e1 + np.sin(theta) * e2) - g.ctr)
            return local[2] - (g.rot.T @ (g.evaluate(0, local[0], local[1])[0] - g.ctr))[2]

        h = [height(k * step) for k in range(CONTACT_SAMPLES)]
        k = int(np.argmin(h))
        below, above = h[k - 1], h[(k + 1) % CONTACT_SAMPLES]
        curve = below - 2.0 * h[k] + above
        shift = 0.5 * (below - above) / curve if curve > 0.0 else 0.0
        theta = (k + min(max(shift, -0.5), 0.5)) * step
        return (g.rot.T @ (C + radius * (np.cos(theta) * e1 + np.sin(theta) * e2) - g.ctr))[:2]

    def gaps(self, q, kin=None):
        """The gaps (k,) of the disks, then of the hulls, above the ground (on the plane the
        heights of their lowest points)."""
        kin = self.kinematics(q, np.zeros(self.n), bias=False) if kin is None else kin
        return np.array([self.disk_contact(kin, k)[6] for k in range(len(self.disks))]
                        + [self.hull_contact(kin, k)[4] for k in range(len(self.hulls))])

    def tilt(self, q):
        """The smallest tilt ``s`` of the disks against the ground (``sqrt(1 - a_z^2)`` on the
        plane) at ``q``: 0 when one lies flat (1 without disks)."""
        kin = self.kinematics(q, np.zeros(self.n), bias=False)
        return float(np.min([1.0] + [self.disk_contact(kin, k)[2]
                                     for k in range(len(self.disks))]))

    @staticmethod
    def horizontal_normal(g, gdot):
        """The unit vector ``e = g / |g|`` and its rate ``(gdot - e (e . gdot)) / |g|``."""
        size = np.sqrt(g @ g)
        e = g / size
        return e, (gdot - e * (e @ gdot)) / size

    def blade_contact(self, kin, k):
        """Blade ``k``'s point ``P`` and its sideways direction ``e = e_z x d / |e_z x d|``
        (space), with ``de/dt`` for the body's angular velocity."""
        body, point, direction = self.blades[k]
        R = kin["R"][body]
        d = R @ direction
        e, edot = self.horizontal_normal(cross(E_Z, d), cross(E_Z, cross(kin["omega"][body], d)))
        return kin["o"][body] + R @ point, e, edot

    def constraint_matrix(self, q, kin=None):
        """``A(q)`` (m, n): the rows of :meth:`constraints` alone."""
        return self.constraints(q, np.zeros(self.n), kin, bias=False)[0]

    def constraints(self, q, v, kin=None, bias=True):
        """``A(q)`` (m, n) and the bias ``b(q, v)`` (m,) of ``A dv/dt + b = 0``.

        The rows of a disk are ``e . J_P`` for ``e = e_x, e_y`` (or only its rolling direction
        ``f = a x n / |a x n|``, when its sideways row is left to another wheel), then ``n``
        (the ground's normal, ``e_z`` on the plane) if held; a hull's are ``e_x, e_y``, then
        ``n`` if held; a blade's is ``e . J_P`` for its sideways direction ``e``; a Suslov
        constraint's is ``a . J_omega`` for its axis ``a`` in space. With ``b_P``
        the acceleration bias of the material point at ``P``, a row's bias is ``e . b_P +
        de/dt . v_P`` (``v_P = J_P v``: zero when all of ``P``'s rows hold, not when the
        sideways row is left out).
        """
        kin = (self.kinematics(q, v, bias=bias) if kin is None else kin)
        rows, out = [], []
        for k, (body, _, _, radius, holonomic, sideways) in enumerate(self.disks):
            C, a, s, d, P, n, _, ground = self.disk_contact(kin, k)
            J = self.point_jacobian(kin, body, P)
            w = kin["omega"][body]
            adot = cross(w, a)
            b, ndot = np.zeros(3), np.zeros(3)
            if bias:
                ddot = (-(n @ adot) * a - (n @ a) * (adot - d * (d @ adot))) / s  # dd_a
                if ground is not None:  # the ground turns under the moving contact
                    _, Jg, Lg = ground
                    t = cross(a, d)
                    vC = self.point_jacobian(kin, body, C) @ v
                    udot = np.linalg.lstsq(Jg - (radius / s) * np.outer(t, t @ Jg @ Lg),
                                           vC - radius * ddot, rcond=None)[0]
                    ndot = -Jg @ Lg @ udot
                    ddot = ddot + t * (t @ ndot) / s
                b = (self.point_bias(kin, body, C) + cross(kin["gamma"][body], P - C)
                     - radius * cross(w, ddot))
            if sideways:
                directions = [(np.eye(3)[0], np.zeros(3)), (np.eye(3)[1], np.zeros(3))]
            else:
                directions = [self.horizontal_normal(cross(a, n),
                                                     cross(adot, n) + cross(a, ndot))]
            if holonomic:
                directions.append((n, ndot))
            self._contact_rows(rows, out, J, v, b, directions)
        for k, (body, _, _, held) in enumerate(self.hulls):
            C, A, P, n, _, ground = self.hull_contact(kin, k)
            J = self.point_jacobian(kin, body, P)
            w = kin["omega"][body]
            b, ndot = np.zeros(3), np.zeros(3)
            if bias:
                # the rate of S = A n / k at a fixed n, dA/dt = [omega x, A]
                S, size = C - P, np.sqrt(n @ A @ n)
                An_dot = cross(w, A @ n) - A @ cross(w, n)
                Sdot = An_dot / size - S * (n @ An_dot) / (2.0 * size * size)
                if ground is not None:  # the ground turns under the moving contact
                    _, Jg, Lg = ground
                    dS = (A - np.outer(S, S)) / size
                    vC = self.point_jacobian(kin, body, C) @ v
                    udot = np.linalg.lstsq(Jg - dS @ Jg @ Lg, vC - Sdot, rcond=None)[0]
                    ndot = -Jg @ Lg @ udot
                    Sdot = Sdot + dS @ ndot
                b = (self.point_bias(kin, body, C) + cross(kin["gamma"][body], P - C)
                     - cross(w, Sdot))
            directions = [(np.eye(3)[0], np.zeros(3)), (np.eye(3)[1], np.zeros(3))]
            if held:
                directions.append((n, ndot))
            self._contact_rows(rows, out, J, v, b, directions)
        for k, (body, _, _) in enumerate(self.blades):
            P, e, edot = self.blade_contact(kin, k)
            J = self.point_jacobian(kin, body, P)
            rows.append(e @ J)
            out.append((e @ self.point_bias(kin, body, P) if bias else 0.0) + edot @ (J @ v))
        for body, axis in self.suslov:
            # a . omega = 0 with a = R axis: its rate (omega x a) . omega + a . domega/dt
            # = a . (J_omega dv/dt + gamma), the first term zero
            a = kin["R"][body] @ axis
            rows.append(a @ self.angular_jacobian(kin, body))
            out.append(a @ kin["gamma"][body] if bias else 0.0)
        return np.vstack(rows), np.array(out)

    @staticmethod
    def _contact_rows(rows, out, J, v, b, directions):
        """Append a contact point's rows ``e . J`` and their biases ``e . b + de/dt . J v``
        (``J`` (3, n) its Jacobian, ``b`` (3,) its bias) for each ``(e, de/dt)`` of
        ``directions``."""
        vP = J @ v
        for e, edot in directions:
            rows.append(e @ J)
            out.append(e @ b + edot @ vP)

    def accelerations(self, q, v, Q=None):
        """``dv/dt`` (n,) and the multipliers ``lambda`` (m,) of the constrained equations,
        with the generalized force ``Q`` (n,) of the joint motors, if given."""
        kin = self.kinematics(q, v)
        M, h = self.mass_matrix_and_bias(q, v, kin)
        if Q is not None:
            h = h - Q
        A, b = self.constraints(q, v, kin)
        n, m = self.n, len(b)
        K = np.zeros((n + m, n + m))
        K[:n, :n] = M
        K[:n, n:] = A.T
        K[n:, :n] = A
        sol = np.linalg.solve(K, np.concatenate([-h, -b]))
        return sol[:n], -sol[n:]


# -- drives on joints -----------------------------------------------------------------------------

class JointDrives:
    """The joint motors of a tree (``nhphys.forces.JointMotor``, built by
    ``nhphys.forces.build_joint_drives``): on joint ``j`` the generalized force ``T(t) +
    gain (w(t) - dq_j/dt)``.

    Parameters
    ----------
    breaks, coef : ndarray
        The schedules' table (as :mod:`nhphys.twins.forces`).
    sched : ndarray, shape (s, 4), intp
    rows : ndarray, shape (k, 3), intp
        Per motor: its joint, the schedule of ``T`` and that of ``w`` (-1: none).
    gains : ndarray, shape (k,)
    """

    def __init__(self, breaks, coef, sched, rows, gains):
        self.breaks = np.ascontiguousarray(breaks, dtype=float)
        self.coef = np.ascontiguousarray(coef, dtype=float)
        self.sched = np.ascontiguousarray(sched, dtype=np.intp).reshape(-1, 4)
        self.rows = np.ascontiguousarray(rows, dtype=np.intp).reshape(-1, 3)
        self.gains = np.ascontiguousarray(gains, dtype=float)

    def force(self, n, t, rates):
        """The generalized force ``Q`` (n,) at time ``t`` and joint rates ``rates`` (n,)."""
        from nhphys.twins.forces import evaluate_schedule

        Q = np.zeros(n)
        value = np.zeros(1)
        for (joint, torque, target), gain in zip(self.rows, self.gains):
            if torque >= 0:
                evaluate_schedule(self.breaks, self.coef, self.sched, torque, t, value)
                Q[joint] += value[0]
            if target >= 0:
                evaluate_schedule(self.breaks, self.coef, self.sched, target, t, value)
                Q[joint] += gain * (value[0] - rates[joint])
        return Q


# -- the discrete Lagrange-d'Alembert step --------------------------------------------------------

def step_residual(tree, q0, p0, A0, delta, lam, h, drives=None, t_mid=0.0):
    r"""The equations of one step (see :func:`tree_step`) and the end momentum they give.

    Parameters
    ----------
    q0, p0 : ndarray, shape (n,)
        The start and its momentum ``M(q0) v0``.
    A0 : ndarray, shape (m, n)
        ``A(q0)``.
    delta : ndarray, shape (n,)
        ``q1 - q0``, the unknown (so that ``w = delta / h`` carries no cancellation when the
        coordinates are large: a bicycle far from the origin, wheels that turned many times).
    lam : ndarray, shape (m,)
        ``Lambda``.
    h : float
    drives : JointDrives or None
        Their force ``Q(t_mid, w)`` enters both ends as the discrete forces ``h/2 Q`` of the
        symmetric Lagrange-d'Alembert pair.
    t_mid : float
        The step's midpoint in time.

    Returns
    -------
    F : ndarray, shape (n + m,)
        The momentum balance at ``q0`` (n), the nonholonomic rows at the midpoint and the held
        contacts' gaps at ``q1``.
    p_end : ndarray, shape (n,)
        ``D2 L_d``: the end momentum before the end's constraint impulse.
    """
    n = tree.n
    qm = q0 + 0.5 * delta
    w = delta / h
    kin_m = tree.kinematics(qm, w, bias=False)
    M, dT, dV = tree.lagrangian_gradients(qm, w, kin_m)
    Am = tree.constraint_matrix(qm, kin_m)
    q1 = q0 + delta
    gaps = tree.gaps(q1, tree.kinematics(q1, np.zeros(n), bias=False))
    force = 0.5 * h * (dT - dV)
    if drives is not None:
        force = force + 0.5 * h * drives.force(n, t_mid, w)
    F = np.concatenate([M @ w - force - p0 - 0.5 * h * (A0.T @ lam),
                        Am[tree.nonholonomic_rows] @ w, gaps[tree.held_contacts]])
    return F, M @ w + force


def step_jacobian(tree, q0, p0, A0, delta, lam, h, F, floor, drives=None, t_mid=0.0):
    """The Newton matrix (n + m, n + m) of :func:`step_residual` at ``(delta, lam)``, where it
    is ``F``: forward differences in ``delta`` (step ``DIFFERENCE_STEP (|delta_j| +
    floor_j)``), and the exact ``-(h/2) A0^T`` in ``lam`` (the equations are linear in it).
    The differencing error changes only the rate of the chord iteration, not its root; the
    iteration stops on the correction test, leaving an error of about rho / (1 - rho) times the
    last correction (rho, the contraction factor, is small for these steps)."""
    n = tree.n
    J = np.zeros((n + tree.m, n + tree.m))
    for j in range(n):
        d = DIFFERENCE_STEP * (abs(delta[j]) + floor[j])
        shifted = delta.copy()
        shifted[j] += d
        J[:, j] = (step_residual(tree, q0, p0, A0, shifted, lam, h, drives, t_mid)[0] - F) / d
    J[:n, n:] = -0.5 * h * A0.T
    return J


# A disk whose axis is this close to vertical (``s = sqrt(1 - a_z^2)``) lies flat: the step
# reports the contact event FLAT (its rolling contact ends; a bicycle has fallen over)
FLAT_TILT = 1e-3

# A coordinate change of COORDINATE_FLOOR times the correction tolerance (1e-15 (1 + |q|) for the
# default 1e-12) counts as round-off in the step's Newton test (see tree_step)
COORDINATE_FLOOR = 1e-3

# The relative step of the Newton matrix's forward differences (about the square root of the
# machine epsilon 2.2e-16: the differences are then accurate to about 1e-8)
DIFFERENCE_STEP = 1.5e-8


def end_velocity(tree, q1, p_end):
    """The velocity ``v1`` (n,) with ``M(q1) v1 = p_end + (h/2) A(q1)^T mu``, ``A(q1) v1 = 0``."""
    n, m = tree.n, tree.m
    kin = tree.kinematics(q1, np.zeros(n), bias=False)
    M = tree.lagrangian_gradients(q1, np.zeros(n), kin)[0]
    A = tree.constraint_matrix(q1, kin)
    K = np.zeros((n + m, n + m))
    K[:n, :n] = M
    K[:n, n:] = A.T
    K[n:, :n] = A
    return np.linalg.solve(K, np.concatenate([p_end, np.zeros(m)]))[:n]


def tree_step(tree, q, v, lam, h, rule, drives=None, clock=None):
    r"""One step ``h`` of the symmetric discrete Lagrange-d'Alembert (RATTLE-type) method.

    The discrete Lagrangian is the midpoint rule ``L_d(q0, q1) = h L(qm, w)``, ``qm = (q0 +
    q1)/2``, ``w = (q1 - q0)/h``, so ``D1 L_d = h/2 dL/dq - dL/dv`` and ``D2 L_d = h/2 dL/dq +
    dL/dv`` at ``(qm, w)``, with ``dL/dv = M(qm) w`` and ``dL/dq = dT/dq - grad V``
    (:meth:`JointTree.lagrangian_gradients`). The node momenta are ``p = M(q) v`` and the
    constraint impulses act half at each node (``A`` the contacts' rows, ``Lambda``, ``mu``
    (m,) multipliers)::

        M(q0) v0 + h/2 A(q0)^T Lambda = -D1 L_d(q0, q1)                  (n)
        A_nh(qm) (q1 - q0) = 0,    gap(q1) = 0                           (m)
        M(q1) v1 = D2 L_d(q0, q1) + h/2 A(q1)^T mu,    A(q1) v1 = 0      (n + m)

    The first two lines are solved by Newton for ``(q1 - q0, Lambda)`` (from ``h v0`` and the
    last step's ``Lambda``, with the matrix of :func:`step_jacobian` taken once per step); the
    last is then linear in ``(v1, mu)``. The held contacts' gaps vanish at every node to the
    Newton tolerance (1e-12 of the step's motion by default), and every constraint row holds
    on the node velocities to the round-off of a linear solve.

    **Symmetry.** The step from ``(q1, v1)`` with ``-h`` solves the same equations with the
    roles of ``(q0, Lambda)`` and ``(q1, mu)`` exchanged (``L_d^{-h}(q1, q0) = -L_d^h(q0, q1)``
    for the midpoint rule, so ``-D1 L_d^{-h}(q1, q0) = D2 L_d^h(q0, q1)``; the impulse ``-h/2
    A(q1)^T Lambda'`` of the reversed step is the forward end's ``h/2 A(q1)^T mu`` moved across:
    ``Lambda' = mu``, and likewise ``mu' = Lambda``; the midpoint rows are the same), with
    the conditions ``gap(q0) = 0`` and ``A(q0) v0 = 0``, which the start satisfies: so it
    returns to ``(q0, v0)``. A symmetric consistent method has even order, here 2, and the
    symmetric compositions of :mod:`nhphys.integrators.coefficients` raise it to 4, 6, 8.

    Parameters
    ----------
    tree : JointTree
    q, v : ndarray, shape (n,)
        IN the start, OUT the end (only when the step succeeds).
    lam : ndarray, shape (m,)
        IN the warm start of ``Lambda``, OUT its value.
    h : float
    rule : NewtonRule
    drives : JointDrives or None
        Joint motors: the discrete forces ``h/2 Q(t + h/2, (q1 - q0)/h)`` at both ends (the
        midpoint's time and rates, so that the step stays symmetric), doing the work
        ``h Q . (q1 - q0)/h``.
    clock : ndarray, shape (2,) or None
        IN/OUT ``(t, work)``: advanced by ``h`` and by the drives' work (only on success).

    Returns
    -------
    int
        ``OK``, Newton's status, ``FLAT`` when an iterate lays a disk flat (its ``s``
        below ``FLAT_TILT``), or ``CONTACT_FAILED`` when a contact with a curved ground is
        not found at an iterate (:meth:`JointTree.ground_contact`).
    """
    from nhphys.twins.newton import CONTACT_FAILED, FLAT, OK, newton_solve

    n = tree.n
    q_start = q.copy()  # the tree with its free translations at zero: the same M, A, gaps
    q_start[tree.free_translations] = 0.0
    kin0 = tree.kinematics(q_start, v, bias=False)
    M0 = tree.lagrangian_gradients(q_start, v, kin0)[0]
    A0 = tree.constraint_matrix(q_start, kin0)
    p0 = M0 @ v
    x = np.concatenate([h * v, lam])
    # the size below which an unknown counts as zero. For delta: the step's largest motion
    # h (|v| + 1) (the round-off of the momenta, of order eps |p0|, moves every coordinate by
    # about that much), plus COORDINATE_FLOOR (1 + |q|): the coordinates' own round-off (about
    # eps |q|; the gaps' round-off moves q1 by as much) is otherwise above the correction
    # tolerance times the motion when the step is short (1e-16 for h = 1e-4 near rest, where
    # the corrections then stall at round-off). For Lambda: the contact forces' size, the
    # weight, and 2 (|p0| / h + |M0| move / h^2), the impulse that moves the coordinates by
    # delta's floor ((h/2) Lambda balances the momenta M delta / h).
    move = abs(h) * (np.max(np.abs(v)) + 1.0) + COORDINATE_FLOOR * (
        1.0 + np.max(np.abs(q_start)))
    floor = np.concatenate([np.full(n, move), np.full(
        tree.m, np.max(np.abs(lam)) + tree.weight()
        + 2.0 * (np.max(np.abs(p0)) / abs(h) + np.max(np.abs(M0)) * move / (h * h)))])
    last = {}

    t_mid = (0.0 if clock is None else clock[0]) + 0.5 * h

    def residual(x):
        if not tree.tilt(q_start + x[:n]) >= FLAT_TILT:  # NaN too: past flat
            return FLAT, None, None
        last["F"] = step_residual(tree, q_start, p0, A0, x[:n], x[n:], h, drives, t_mid)[0]
        if tree.ground is not None and not np.all(np.isfinite(last["F"])):
            return CONTACT_FAILED, None, None  # a contact with the curved ground not found
        return OK, last["F"], np.ones_like(last["F"])

    def jacobian(x):  # once per step, at the first guess: the chord method after that
        if "J" not in last:
            last["J"] = step_jacobian(tree, q_start, p0, A0, x[:n], x[n:], h, last["F"],
                                      floor, drives, t_mid)
        return OK, last["J"]

    # an iterate that overflows (a bicycle falling flat) ends the solve with the status of
    # non-finite numbers, as the kernel's does: not with numpy's warnings on the way
    with np.errstate(over="ignore", invalid="ignore"):
        status = newton_solve(residual, jacobian, x, floor, rule)
    if status != OK:
        return status
    p_end = step_residual(tree, q_start, p0, A0, x[:n], x[n:], h, drives, t_mid)[1]
    v[:] = end_velocity(tree, q_start + x[:n], p_end)
    if clock is not None:
        if drives is not None:
            clock[1] += drives.force(n, t_mid, x[:n] / h) @ x[:n]
        clock[0] += h
    q[:] = q + x[:n]
    lam[:] = x[n:]
    return OK


def tree_run(tree, q, v, lam, fractions, dt, n_steps, save_every, out_q, out_v, info,
             newton_tol, max_newton, drives=None, clock=None, out_work=None):
    """The time loop: ``n_steps`` steps of the composition with sub-step ``fractions`` (s,),
    saving every ``save_every``-th step's ``q`` and ``v`` into ``out_q``, ``out_v`` (k, n) and
    the work into ``out_work`` (k,) when given.

    ``q``, ``v`` (n,), ``lam`` (m,) and ``clock`` (2,) ``(t, work)`` are IN/OUT; a step is
    committed only when every sub-step succeeded. ``drives``: the joint motors (or None).
    Returns 0, or ``k + 1`` for a failure in step ``k`` (its status in ``info[INFO_STATUS]``).
    """
    from nhphys.twins.newton import INFO_COMMITTED, INFO_STATUS, OK, NewtonRule

    rule = NewtonRule(newton_tol, 0.0, max_newton)
    clock = np.zeros(2) if clock is None else clock
    for k in range(n_steps):
        qs, vs, ls, cs = q.copy(), v.copy(), lam.copy(), clock.copy()
        for fraction in fractions:
            status = tree_step(tree, qs, vs, ls, fraction * dt, rule, drives, cs)
            if status != OK:
                info[INFO_STATUS] = status
                return k + 1
        q[:], v[:], lam[:], clock[:] = qs, vs, ls, cs
        if (k + 1) % save_every == 0:
            row = (k + 1) // save_every - 1
            out_q[row] = q
            out_v[row] = v
            if out_work is not None:
                out_work[row] = clock[1]
        info[INFO_COMMITTED] = k + 1
    return 0
