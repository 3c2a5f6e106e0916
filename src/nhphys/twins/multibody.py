r"""Trees of rigid bodies joined by revolute and prismatic joints, with disks rolling on a plane.

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

gravity ``g`` along ``-e_z``. ``h`` holds the Coriolis and centrifugal terms and the gradient of
the potential ``V = g sum_b m_b (c_b)_z``; that ``h - grad V = (dM/dt) v - dT/dq`` with
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
point is a coordinate) has that row zero and contributes the two horizontal rows only; a
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
"""

import numpy as np

REVOLUTE = 0
PRISMATIC = 1

E_Z = np.array([0.0, 0.0, 1.0])


def axis_rotation(axis, angle):
    """The rotation (3, 3) by ``angle`` about the unit ``axis`` (3,) (Rodrigues' formula)."""
    x, y, z = axis
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


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
    disks : sequence of (body, centre (3,), axis (3,), radius, holonomic)
        The rolling disks: body index, centre and unit axis in that body's frame, radius, and
        whether the contact is held by the constraint (``True``) or by the tree (``False``).
    gravity : float
        ``g`` along ``-z``.
    """

    def __init__(self, parent, kind, axis, offset, mass, com, inertia, disks, gravity):
        self.parent = np.asarray(parent, dtype=int)
        self.kind = np.asarray(kind, dtype=int)
        self.axis = np.asarray(axis, dtype=float)
        self.offset = np.asarray(offset, dtype=float)
        self.mass = np.asarray(mass, dtype=float)
        self.com = np.asarray(com, dtype=float)
        self.inertia = np.asarray(inertia, dtype=float)
        self.disks = [(int(b), np.asarray(c, dtype=float), np.asarray(a, dtype=float),
                       float(r), bool(hol)) for b, c, a, r, hol in disks]
        self.gravity = float(gravity)
        self.n = len(self.parent)
        self.ancestors = []
        for b in range(self.n):
            chain, j = [], b
            while j >= 0:
                chain.append(j)
                j = self.parent[j]
            self.ancestors.append(chain)
        self.m = sum(3 if hol else 2 for *_, hol in self.disks)

    # -- kinematics ------------------------------------------------------------------------------
    def kinematics(self, q, v):
        """Poses, velocities and bias accelerations of every body.

        Parameters
        ----------
        q, v : ndarray, shape (n,)

        Returns
        -------
        dict of ndarray
            ``R`` (n, 3, 3) rotations, ``o`` (n, 3) origins, ``X`` (n, 3) joint origins,
            ``a`` (n, 3) joint axes in space, ``omega`` (n, 3), ``vo`` (n, 3) velocities of the
            origins, ``gamma`` (n, 3) and ``beta`` (n, 3) the bias accelerations (angular, and
            of the origins).
        """
        n = self.n
        R = np.empty((n, 3, 3))
        o, X, a, omega, vo, gamma, beta = (np.empty((n, 3)) for _ in range(7))
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
            vX = vp + np.cross(wp, r)
            bX = bp + np.cross(gp, r) + np.cross(wp, np.cross(wp, r))
            if self.kind[j] == REVOLUTE:
                R[j] = Rp @ axis_rotation(self.axis[j], q[j])
                o[j] = X[j]
                omega[j] = wp + a[j] * v[j]
                vo[j] = vX
                gamma[j] = gp + np.cross(wp, a[j]) * v[j]
                beta[j] = bX
            else:
                s = a[j] * q[j]
                R[j] = Rp
                o[j] = X[j] + s
                omega[j] = wp
                vo[j] = vX + np.cross(wp, s) + a[j] * v[j]
                gamma[j] = gp
                beta[j] = (bX + np.cross(gp, s) + np.cross(wp, np.cross(wp, s))
                           + 2.0 * np.cross(wp, a[j]) * v[j])
        return {"R": R, "o": o, "X": X, "a": a, "omega": omega, "vo": vo, "gamma": gamma,
                "beta": beta}

    def point_jacobian(self, kin, body, P):
        """``J_P`` (3, n): the velocity of the point ``P`` (3,) (in space) fixed in ``body``."""
        J = np.zeros((3, self.n))
        for j in self.ancestors[body]:
            if self.kind[j] == REVOLUTE:
                J[:, j] = np.cross(kin["a"][j], P - kin["X"][j])
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
        return kin["beta"][body] + np.cross(kin["gamma"][body], r) + np.cross(w, np.cross(w, r))

    # -- dynamics --------------------------------------------------------------------------------
    def mass_matrix_and_bias(self, q, v, kin=None):
        """``M(q)`` (n, n) and ``h(q, v)`` (n,) of ``M dv/dt + h = A^T lambda``."""
        kin = self.kinematics(q, v) if kin is None else kin
        M = np.zeros((self.n, self.n))
        h = np.zeros(self.n)
        for b in range(self.n):
            m = self.mass[b]
            if m == 0.0 and not self.inertia[b].any():
                continue
            R = kin["R"][b]
            c = kin["o"][b] + R @ self.com[b]
            Jc = self.point_jacobian(kin, b, c)
            Jw = self.angular_jacobian(kin, b)
            Is = R @ self.inertia[b] @ R.T
            w = kin["omega"][b]
            M += m * (Jc.T @ Jc) + Jw.T @ Is @ Jw
            h += m * (Jc.T @ (self.point_bias(kin, b, c) + self.gravity * E_Z))
            h += Jw.T @ (Is @ kin["gamma"][b] + np.cross(w, Is @ w))
        return M, h

    def energy(self, q, v):
        """Kinetic plus potential energy (float)."""
        kin = self.kinematics(q, v)
        T = 0.0
        V = 0.0
        for b in range(self.n):
            R = kin["R"][b]
            c = kin["o"][b] + R @ self.com[b]
            w = kin["omega"][b]
            vc = kin["vo"][b] + np.cross(w, c - kin["o"][b])
            Is = R @ self.inertia[b] @ R.T
            T += 0.5 * self.mass[b] * (vc @ vc) + 0.5 * (w @ Is @ w)
            V += self.mass[b] * self.gravity * c[2]
        return T + V

    # -- the rolling disks -----------------------------------------------------------------------
    def disk_contact(self, kin, k):
        """Disk ``k``'s centre ``C``, axis ``a``, ``s``, ``d`` and contact point ``P`` (space)."""
        body, centre, axis, radius, _ = self.disks[k]
        R = kin["R"][body]
        C = kin["o"][body] + R @ centre
        a = R @ axis
        s = np.sqrt(1.0 - a[2] ** 2)
        d = (E_Z - a[2] * a) / s
        return C, a, s, d, C - radius * d

    def gaps(self, q):
        """The heights (k,) of the disks' lowest points above the plane."""
        kin = self.kinematics(q, np.zeros(self.n))
        return np.array([self.disk_contact(kin, k)[4][2] for k in range(len(self.disks))])

    def constraints(self, q, v, kin=None):
        """``A(q)`` (m, n) and the bias ``b(q, v)`` (m,) of ``A dv/dt + b = 0``."""
        kin = self.kinematics(q, v) if kin is None else kin
        rows, bias = [], []
        for k, (body, _, _, radius, holonomic) in enumerate(self.disks):
            C, a, s, d, P = self.disk_contact(kin, k)
            w = kin["omega"][body]
            adot = np.cross(w, a)
            wdot = -(adot[2] * a + a[2] * adot)
            ddot = (wdot - d * (d @ wdot)) / s
            b = (self.point_bias(kin, body, C) + np.cross(kin["gamma"][body], P - C)
                 - radius * np.cross(w, ddot))
            J = self.point_jacobian(kin, body, P)
            used = 3 if holonomic else 2
            rows.append(J[:used])
            bias.append(b[:used])
        return np.vstack(rows), np.concatenate(bias)

    def accelerations(self, q, v):
        """``dv/dt`` (n,) and the multipliers ``lambda`` (m,) of the constrained equations."""
        kin = self.kinematics(q, v)
        M, h = self.mass_matrix_and_bias(q, v, kin)
        A, b = self.constraints(q, v, kin)
        n, m = self.n, len(b)
        K = np.zeros((n + m, n + m))
        K[:n, :n] = M
        K[:n, n:] = A.T
        K[n:, :n] = A
        sol = np.linalg.solve(K, np.concatenate([-h, -b]))
        return sol[:n], -sol[n:]
