r"""Python twin of ``nhphys_ext.models``: the built-in mechanical systems in coordinates.

A model is the Lagrangian system

    L(q, v) = 1/2 v . M v - v . grad S(q) - V(q)    on R^n,     mu(q) v = 0,

with a constant symmetric positive-definite mass matrix ``M`` (n x n), a potential ``V``, an
optional gauge function ``S`` and ``r`` linear constraints ``mu(q)`` (r x n, full rank). The
Lagrange-d'Alembert principle gives ``M dv/dt = -grad V(q) + mu(q)^T lambda`` (the gauge term
is a total derivative, ``-dS/dt``: it changes the momentum ``p = M v - grad S``, not the
motion). Differentiating the constraint, ``mu dv/dt + (Dmu[v]) v = 0`` with
``(Dmu[v])_{ai} = sum_j d mu_{ai}/dq_j v_j``, fixes the multipliers::

    lambda = C^-1 (mu M^-1 grad V - (Dmu[v]) v),     C = mu M^-1 mu^T,

and the energy ``E = 1/2 v . M v + V(q)`` is conserved (the constraint forces do no work).

The protocol
------------
:class:`CoordinateModel` is the base; a model overrides the per-point functions

* ``grad_potential(q)`` (n,), ``hessian_potential(q)`` (n, n), ``potential(q)`` (float);
* ``constraint_matrix(q)`` ``mu`` (r, n), ``constraint_matrix_derivative(q)`` ``D`` (r, n, n),
  ``D[a, i, j] = d mu_{ai} / d q_j``;
* ``gauge_gradient(q)`` (n,), ``gauge_hessian(q)`` (n, n), ``gauge_third(q, d)`` (n, n),
  ``T[i, j] = sum_l d^3 S / dq_i dq_j dq_l d_l`` (zero unless ``has_gauge``),

and the base derives from them what the rest of the package uses: :meth:`multiplier`,
:meth:`acceleration` (the ``Reference`` integrator), :meth:`energy`,
:meth:`constraint_residual` and :meth:`observables`. The compiled class of the same name in
``nhphys_ext.models`` has the same constructor and the same per-point functions (as
``noexcept nogil`` methods the time loops call); :meth:`evaluate` returns them all at one point
in both, which is how the two are checked against each other. A model defined in Python only
(a :class:`~nhphys.systems.ConstrainedMechanicalSystem`, a subclass of a built-in model) has
no compiled counterpart and runs on the twins (:func:`compiled_counterpart`).

Models on ``SE(2) x R^k`` (the knife edge, the vertical disk, the rotor sleigh) also describe
the same system on the group, for the retraction integrator: ``group_inertia`` (d x d, the
locked inertia of the reduced Lagrangian ``l(xi) = 1/2 xi . I xi``, d = 3 + k),
``group_basis`` (d x m, a basis of the constraint space) and the maps :meth:`to_group` and
:meth:`from_group` between coordinates ``(q, v)`` and the group's ``(g, xi)``, ``g = (x, y,
theta, phi...)`` and ``xi`` the body velocity.

Force elements: the rigid body of a model
-----------------------------------------
The models of a rigid body moving in a plane (the knife edge, the vertical disk, the rotor
sleigh) also say where the body is, so that the force elements of :mod:`nhphys.forces` can act
on them. :meth:`CoordinateModel.body_frame` gives, at ``q``, the body's orientation ``A``
(body to space) and centre of mass ``a`` in the plane's coordinates (``z`` along the plane's
normal) and the Jacobians of its velocities::

    da/dt = J_v(q) dq/dt,       Omega = J_W(q) dq/dt   (body angular velocity),

and ``J_m`` (3 x n), through which a motor's torque acts (``J_W`` for a motor on the body; the
rotor sleigh's motor drives the rotor relative to the sleigh). A wrench ``(f, tau)`` (``f``
space force at the centre of mass, ``tau`` body torque about it) does the virtual work
``f . da + tau . dOmega``, so its generalized force is

    Q = J_v^T f + J_W^T tau,

and a damping ``-c v`` of the centre of mass with a body-frame angular damping ``-D Omega``
gives ``Q = -C(q) dq/dt`` with the symmetric positive semi-definite

    C = c J_v^T J_v + J_W^T D J_W   (+ J_m^T D_m J_m for the motors' speed control).

:class:`BodyForces` evaluates them (the kernel class of the same name in ``nhphys_ext.models``
does the same arithmetic without the GIL): ``terms(t, q)`` returns the generalized forces of
the potential elements ``Q_c`` (``-dV/dq`` of springs and fields), of the applied elements
``Q_a`` (forces, torques, motors, at time ``t``) and the damping matrix ``C``; the plane sits
in space at ``frame`` (3 x 3, the plane's axes) and ``origin``, so that the elements, given in
space, see ``A = E A_loc``, ``a = o + E a_loc``, ``J_v = E J_v,loc``. Spin friction acts about
the plane's normal ``n = E e_z``; rolling resistance ``-mu N P_t Omega`` takes the normal force
``N`` the system gives (its weight's normal component ``m g cos(incline)``: this model has no
normal force of its own). The discretisation of these forces is in
:mod:`nhphys.twins.newmark` and :mod:`nhphys.twins.se2_retraction`.
"""

import numpy as np


class CoordinateModel:
    """Base of the models: ``V = 0``, ``S = 0``; see the module docstring.

    Parameters
    ----------
    mass_matrix : array_like, shape (n, n)
        Constant, symmetric positive definite (checked by the caller).
    r : int or None
        Number of constraints (None: known only once the constraint is evaluated).

    Attributes
    ----------
    n, r : int
    mass_matrix, mass_inv : ndarray, shape (n, n)
    has_gauge : bool
    parameters : tuple or None
        The constructor's arguments, which the compiled class of the same name takes too.
    group_inertia : ndarray, shape (d, d), or None
        On ``SE(2) x R^k`` only (see the module docstring).
    group_basis : ndarray, shape (d, m), or None
    """

    has_gauge = False
    parameters = None
    group_inertia = None
    group_basis = None

    def __init__(self, mass_matrix, r):
        self.mass_matrix = np.array(mass_matrix, dtype=float)
        self.mass_inv = np.linalg.inv(self.mass_matrix)
        self.n = self.mass_matrix.shape[0]
        self.r = r

    def __repr__(self):
        args = "" if self.parameters is None else ", ".join(repr(p) for p in self.parameters)
        return f"{type(self).__name__}({args})"

    # -- the per-point functions (overridden by a model) -------------------------------------
    def potential(self, q):
        """``V(q)``, float."""
        return 0.0

    def grad_potential(self, q):
        """``grad V(q)``, (n,)."""
        return np.zeros(self.n)

    def hessian_potential(self, q):
        """``Hess V(q)``, (n, n)."""
        return np.zeros((self.n, self.n))

    def constraint_matrix(self, q):  # pragma: no cover - every model overrides it
        """``mu(q)``, (r, n)."""
        raise NotImplementedError

    def constraint_matrix_derivative(self, q):  # pragma: no cover - every model overrides it
        """``D[a, i, j] = d mu_{ai} / d q_j``, (r, n, n)."""
        raise NotImplementedError

    def gauge_gradient(self, q):
        """``grad S(q)``, (n,)."""
        return np.zeros(self.n)

    def gauge_hessian(self, q):
        """``Hess S(q)``, (n, n)."""
        return np.zeros((self.n, self.n))

    def gauge_third(self, q, d):
        """``T[i, j] = sum_l d^3 S / dq_i dq_j dq_l d_l``, (n, n)."""
        return np.zeros((self.n, self.n))

    def evaluate(self, q, d):
        """Every per-point function at ``q`` (n,) (``gauge_third`` along ``d`` (n,)), as a dict:
        what the compiled model's ``evaluate`` returns."""
        q = np.asarray(q, dtype=float)
        return {
            "grad_potential": np.asarray(self.grad_potential(q), dtype=float),
            "hessian_potential": np.asarray(self.hessian_potential(q), dtype=float),
            "constraint_matrix": np.asarray(self.constraint_matrix(q), dtype=float),
            "constraint_matrix_derivative": np.asarray(
                self.constraint_matrix_derivative(q), dtype=float),
            "gauge_gradient": np.asarray(self.gauge_gradient(q), dtype=float),
            "gauge_hessian": np.asarray(self.gauge_hessian(q), dtype=float),
            "gauge_third": np.asarray(self.gauge_third(q, np.asarray(d, dtype=float)),
                                      dtype=float),
        }

    # -- the continuous model, derived ---------------------------------------------------------
    def multiplier(self, q, v, force=None):
        """Constraint multipliers ``lambda`` (r,) of the continuous equations at ``(q, v)``,
        with an applied generalized force ``force`` (n,) (``M dv/dt = -grad V + force +
        mu^T lambda``): ``lambda = C^-1 (mu M^-1 (grad V - force) - (Dmu[v]) v)``."""
        mu = np.asarray(self.constraint_matrix(q), dtype=float)
        dmu = np.asarray(self.constraint_matrix_derivative(q), dtype=float)
        Minv = self.mass_inv
        C = mu @ Minv @ mu.T
        curv = np.einsum("aij,i,j->a", dmu, v, v)  # (Dmu[v]) v
        g = np.asarray(self.grad_potential(q), dtype=float)
        if force is not None:
            g = g - force
        return np.linalg.solve(C, mu @ Minv @ g - curv)

    def acceleration(self, q, v, force=None):
        """``dv/dt`` (n,) of the continuous equations (with the generalized force ``force``
        (n,), when given)."""
        mu = np.asarray(self.constraint_matrix(q), dtype=float)
        total = -np.asarray(self.grad_potential(q), dtype=float)
        if force is not None:
            total = total + force
        return self.mass_inv @ (total + mu.T @ self.multiplier(q, v, force))

    def energy(self, q, v):
        """``1/2 v.Mv + V(q)`` for stacked states ``q``, ``v`` (k, n) -> (k,)."""
        q = np.atleast_2d(q)
        v = np.atleast_2d(v)
        kin = 0.5 * np.einsum("ki,ij,kj->k", v, self.mass_matrix, v)
        return kin + np.array([float(self.potential(qi)) for qi in q])

    def constraint_residual(self, q, v):
        """``|mu(q) v|`` (Euclidean norm over the constraints) for stacked states -> (k,)."""
        q = np.atleast_2d(q)
        v = np.atleast_2d(v)
        return np.array([
            np.linalg.norm(np.asarray(self.constraint_matrix(qi)) @ vi) for qi, vi in zip(q, v)
        ])

    def observables(self, saved):
        """Trajectory fields ``q``, ``v`` (k, n), ``energy``, ``constraint_residual`` (k,) from
        the saved states ``{"q": (k, n), "v": (k, n)}``."""
        q = np.atleast_2d(saved["q"])
        v = np.atleast_2d(saved["v"])
        return {"q": q, "v": v, "energy": self.energy(q, v),
                "constraint_residual": self.constraint_residual(q, v)}

    # -- the rigid body (models of a body in a plane; see the module docstring) --------------
    def body_frame(self, q):
        """The body at ``q`` (n,): ``(A (3, 3), a (3,), J_v (3, n), J_W (3, n), J_m (3, n))``
        in the plane's coordinates, or None for a model that is not one rigid body."""
        return None

    def group_coordinates(self, g):  # pragma: no cover - models on a group override it
        """``(q (n,), T (n, d))``: the coordinates of the group element ``g`` (d,) and the
        matrix with ``dq/dt = T xi`` (``xi`` the body velocity on the group)."""
        raise TypeError(f"{self!r} has no description on a Lie group.")

    # -- on the group (models on SE(2) x R^k) ------------------------------------------------
    def to_group(self, q, v):  # pragma: no cover - models on a group override it
        """``(g, xi)``, each (k, d), of stacked coordinates ``q``, ``v`` (k, n)."""
        raise TypeError(f"{self!r} has no description on a Lie group.")

    def from_group(self, g, xi):  # pragma: no cover - models on a group override it
        """``(q, v)``, each (k, n), of stacked group states ``g``, ``xi`` (k, d)."""
        raise TypeError(f"{self!r} has no description on a Lie group.")


def _sleigh_to_group(q, v, a):
    """Centre of mass ``C = q[:, :2]``, heading ``q[:, 2]`` and their rates -> pose of the blade's
    contact point ``P = C - a e`` and its body velocity ``(v, w, omega)`` in blade axes."""
    th = q[:, 2]
    c, s = np.cos(th), np.sin(th)
    pose = np.column_stack([q[:, 0] - a * c, q[:, 1] - a * s, th])
    # dP/dt = dC/dt - a omega e_perp
    xi = np.column_stack([c * v[:, 0] + s * v[:, 1], -s * v[:, 0] + c * v[:, 1] - a * v[:, 2],
                          v[:, 2]])
    return pose, xi


def _sleigh_from_group(g, xi, a):
    """The inverse of :func:`_sleigh_to_group`: ``dC/dt = v e + (w + a omega) e_perp``."""
    th = g[:, 2]
    c, s = np.cos(th), np.sin(th)
    q = np.column_stack([g[:, 0] + a * c, g[:, 1] + a * s, th])
    side = xi[:, 1] + a * xi[:, 2]
    v = np.column_stack([c * xi[:, 0] - s * side, s * xi[:, 0] + c * side, xi[:, 2]])
    return q, v


def _planar_body(q, n):
    """``(A, a, J_v, J_W)`` of a body at ``(q[0], q[1])`` turned by ``q[2]`` about ``z``."""
    c, s = np.cos(q[2]), np.sin(q[2])
    A = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    Jv = np.zeros((3, n))
    Jv[0, 0] = Jv[1, 1] = 1.0
    JW = np.zeros((3, n))
    JW[2, 2] = 1.0
    return A, np.array([q[0], q[1], 0.0]), Jv, JW


def _sleigh_group_coordinates(g, a, n):
    """``(q, T)`` of a sleigh's group element ``g`` (pose of the contact point first):
    ``C = P + a e`` and ``dC/dt = v e + (w + a omega) e_perp`` (see :func:`_sleigh_from_group`)."""
    c, s = np.cos(g[2]), np.sin(g[2])
    q = np.array(g, dtype=float)
    q[0] = g[0] + a * c
    q[1] = g[1] + a * s
    T = np.eye(n)
    T[:2, :3] = [[c, -s, -a * s], [s, c, a * c]]
    return q, T


class KnifeEdgeModel(CoordinateModel):
    r"""The knife edge (Chaplygin sleigh) on a plane pulled along ``+x`` by ``downhill_force``.

    ``q = (C_x, C_y, theta)``: the centre of mass and the heading; ``M = diag(m, m, I)`` with
    ``I`` about the vertical through the centre of mass; ``V = -f C_x``; the blade's contact
    point ``P = C - a e`` (``e = (cos theta, sin theta)``) cannot slip sideways,
    ``dP/dt . e_perp = 0``, and since ``dP/dt = dC/dt - a omega e_perp``::

        mu(q) = [-sin theta, cos theta, -a].

    On SE(2) (level plane): ``g`` the pose of ``P``, ``xi = (v, w, omega)`` its body velocity,
    ``l = 1/2 m (v^2 + (w + a omega)^2) + 1/2 I omega^2``, the constraint ``w = 0``.

    Parameters
    ----------
    mass, inertia, offset, downhill_force : float
    """

    def __init__(self, mass, inertia, offset, downhill_force):
        self.mass, self.inertia = float(mass), float(inertia)
        self.offset, self.downhill_force = float(offset), float(downhill_force)
        self.parameters = (self.mass, self.inertia, self.offset, self.downhill_force)
        super().__init__(np.diag([self.mass, self.mass, self.inertia]), 1)
        m, a = self.mass, self.offset
        self.group_inertia = np.array([[m, 0.0, 0.0], [0.0, m, m * a],
                                       [0.0, m * a, self.inertia + m * a * a]])
        self.group_basis = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])

    def potential(self, q):
        return -self.downhill_force * q[0]

    def grad_potential(self, q):
        return np.array([-self.downhill_force, 0.0, 0.0])

    def constraint_matrix(self, q):
        return np.array([[-np.sin(q[2]), np.cos(q[2]), -self.offset]])

    def constraint_matrix_derivative(self, q):
        D = np.zeros((1, 3, 3))
        D[0, 0, 2] = -np.cos(q[2])
        D[0, 1, 2] = -np.sin(q[2])
        return D

    def body_frame(self, q):
        """The sleigh: ``A = Rz(theta)``, ``a = (C_x, C_y, 0)``; a motor acts on it."""
        A, a, Jv, JW = _planar_body(q, 3)
        return A, a, Jv, JW, JW.copy()

    def group_coordinates(self, g):
        return _sleigh_group_coordinates(g, self.offset, 3)

    def to_group(self, q, v):
        return _sleigh_to_group(np.atleast_2d(q), np.atleast_2d(v), self.offset)

    def from_group(self, g, xi):
        return _sleigh_from_group(np.atleast_2d(g), np.atleast_2d(xi), self.offset)


class VerticalDiskModel(CoordinateModel):
    r"""The vertical rolling disk.

    ``q = (x, y, theta, phi)``: contact point, heading, rolling angle;
    ``M = diag(m, m, I_d, I_a)``; ``V = 0``; rolling without slipping::

        mu(q) = [[1, 0, 0, -R cos theta], [0, 1, 0, -R sin theta]].

    On SE(2) x R: ``g = q``, ``xi = (v_x, v_y, omega, phi_dot)`` (velocity of the contact point
    in the disk's axes), the constraint space ``v_x = R phi_dot``, ``v_y = 0``.

    Parameters
    ----------
    mass, radius, inertia_axial, inertia_diametral : float
    """

    def __init__(self, mass, radius, inertia_axial, inertia_diametral):
        self.mass, self.radius = float(mass), float(radius)
        self.inertia_axial, self.inertia_diametral = float(inertia_axial), float(
            inertia_diametral)
        self.parameters = (self.mass, self.radius, self.inertia_axial, self.inertia_diametral)
        m = self.mass
        super().__init__(np.diag([m, m, self.inertia_diametral, self.inertia_axial]), 2)
        self.group_inertia = self.mass_matrix.copy()
        R = self.radius
        self.group_basis = np.array([[0.0, R], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])

    def constraint_matrix(self, q):
        R = self.radius
        return np.array([[1.0, 0.0, 0.0, -R * np.cos(q[2])],
                         [0.0, 1.0, 0.0, -R * np.sin(q[2])]])

    def constraint_matrix_derivative(self, q):
        R = self.radius
        D = np.zeros((2, 4, 4))
        D[0, 3, 2] = R * np.sin(q[2])
        D[1, 3, 2] = -R * np.cos(q[2])
        return D

    def body_frame(self, q):
        """The disk: ``A = Rz(theta) Rx(-pi/2) Rz(phi)`` (the body ``z`` axis is the axle,
        ``e_perp`` in space; at ``phi = 0`` body ``x`` points along ``e`` and body ``y``
        down), ``a = (x, y, R)`` above the contact point, ``Omega = phi_dot e_z + theta_dot
        A^T e_z``; a motor acts on the disk."""
        ct, st = np.cos(q[2]), np.sin(q[2])
        cp, sp = np.cos(q[3]), np.sin(q[3])
        A = np.array([[ct * cp, -ct * sp, -st], [st * cp, -st * sp, ct], [-sp, -cp, 0.0]])
        Jv = np.zeros((3, 4))
        Jv[0, 0] = Jv[1, 1] = 1.0
        JW = np.zeros((3, 4))
        JW[:, 2] = [-sp, -cp, 0.0]
        JW[2, 3] = 1.0
        return A, np.array([q[0], q[1], self.radius]), Jv, JW, JW.copy()

    def group_coordinates(self, g):
        c, s = np.cos(g[2]), np.sin(g[2])
        T = np.eye(4)
        T[:2, :2] = [[c, -s], [s, c]]
        return np.array(g, dtype=float), T

    def to_group(self, q, v):
        q, v = np.atleast_2d(q), np.atleast_2d(v)
        c, s = np.cos(q[:, 2]), np.sin(q[:, 2])
        xi = np.column_stack([c * v[:, 0] + s * v[:, 1], -s * v[:, 0] + c * v[:, 1],
                              v[:, 2], v[:, 3]])
        return q.copy(), xi

    def from_group(self, g, xi):
        g, xi = np.atleast_2d(g), np.atleast_2d(xi)
        c, s = np.cos(g[:, 2]), np.sin(g[:, 2])
        v = np.column_stack([c * xi[:, 0] - s * xi[:, 1], s * xi[:, 0] + c * xi[:, 1],
                             xi[:, 2], xi[:, 3]])
        return g.copy(), v


class ContactOscillatorModel(CoordinateModel):
    r"""The contact oscillator, with the gauge term of its non-reversible variant.

    ``q = (x, y, z)``, ``M = I``, ``V = 1/2 |q|^2 + 1/2 epsilon x^2 z^2``, ``mu = [1, 0, y]``
    and ``S = strength cos z`` (``strength = 0``: no gauge term).

    Parameters
    ----------
    epsilon, strength : float
    """

    def __init__(self, epsilon, strength=0.0):
        self.epsilon, self.strength = float(epsilon), float(strength)
        self.parameters = (self.epsilon, self.strength)
        self.has_gauge = self.strength != 0.0
        super().__init__(np.eye(3), 1)

    def potential(self, q):
        return 0.5 * (q @ q) + 0.5 * self.epsilon * q[0] ** 2 * q[2] ** 2

    def grad_potential(self, q):
        eps = self.epsilon
        x, y, z = q
        return np.array([x + eps * x * z * z, y, z + eps * x * x * z])

    def hessian_potential(self, q):
        eps = self.epsilon
        x, _, z = q
        return np.array([[1.0 + eps * z * z, 0.0, 2.0 * eps * x * z], [0.0, 1.0, 0.0],
                         [2.0 * eps * x * z, 0.0, 1.0 + eps * x * x]])

    def constraint_matrix(self, q):
        return np.array([[1.0, 0.0, q[1]]])

    def constraint_matrix_derivative(self, q):
        D = np.zeros((1, 3, 3))
        D[0, 2, 1] = 1.0
        return D

    def gauge_gradient(self, q):
        return np.array([0.0, 0.0, -self.strength * np.sin(q[2])])

    def gauge_hessian(self, q):
        H = np.zeros((3, 3))
        H[2, 2] = -self.strength * np.cos(q[2])
        return H

    def gauge_third(self, q, d):
        T = np.zeros((3, 3))
        T[2, 2] = self.strength * np.sin(q[2]) * d[2]
        return T


class RotorSleighModel(CoordinateModel):
    r"""The Chaplygin sleigh carrying a rotor spinning about the vertical through its centre of
    mass (see :class:`nhphys.systems.RotorSleigh` for the mechanics and closed forms).

    ``q = (C_x, C_y, theta, phi)``: centre of mass, heading, rotor angle relative to the sleigh.
    The kinetic energy ``1/2 m |dC/dt|^2 + 1/2 I_s omega^2 + 1/2 I_r (omega + phi_dot)^2`` gives
    the constant, non-diagonal mass matrix::

        M = [[m, 0, 0,         0  ],
             [0, m, 0,         0  ],
             [0, 0, I_s + I_r, I_r],
             [0, 0, I_r,       I_r]],

    ``V = 0``, and the knife edge ``mu_0 = [-sin theta, cos theta, -a, 0]``; ``locked`` adds
    ``mu_1 = [0, 0, 0, 1]`` (``phi_dot = 0``).

    On SE(2) x R: ``g = (P, theta, phi)`` with ``P = C - a e`` the blade's contact point,
    ``xi = (v, w, omega, phi_dot)`` and the locked inertia of
    ``l = 1/2 m (v^2 + (w + a omega)^2) + 1/2 I_s omega^2 + 1/2 I_r (omega + phi_dot)^2``::

        I = [[m, 0,     0,                   0  ],
             [0, m,     m a,                 0  ],
             [0, m a,   I_s + m a^2 + I_r,   I_r],
             [0, 0,     I_r,                 I_r]],

    the constraint space ``w = 0`` (and ``phi_dot = 0`` when locked).

    Parameters
    ----------
    mass, inertia, rotor_inertia, offset : float
        ``m`` (rotor included), ``I_s`` (rotor excluded), ``I_r``, ``a``.
    locked : bool
    """

    def __init__(self, mass, inertia, rotor_inertia, offset, locked=False):
        self.mass, self.inertia = float(mass), float(inertia)
        self.rotor_inertia, self.offset = float(rotor_inertia), float(offset)
        self.locked = bool(locked)
        self.parameters = (self.mass, self.inertia, self.rotor_inertia, self.offset,
                           self.locked)
        m, Is, Ir, a = self.mass, self.inertia, self.rotor_inertia, self.offset
        super().__init__([[m, 0.0, 0.0, 0.0], [0.0, m, 0.0, 0.0], [0.0, 0.0, Is + Ir, Ir],
                          [0.0, 0.0, Ir, Ir]], 2 if self.locked else 1)
        self.group_inertia = np.array([[m, 0.0, 0.0, 0.0], [0.0, m, m * a, 0.0],
                                       [0.0, m * a, Is + m * a * a + Ir, Ir],
                                       [0.0, 0.0, Ir, Ir]])
        free = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        self.group_basis = free[:, :2].copy() if self.locked else free

    def constraint_matrix(self, q):
        mu = np.zeros((self.r, 4))
        mu[0, :3] = [-np.sin(q[2]), np.cos(q[2]), -self.offset]
        if self.locked:
            mu[1, 3] = 1.0
        return mu

    def constraint_matrix_derivative(self, q):
        D = np.zeros((self.r, 4, 4))
        D[0, 0, 2] = -np.cos(q[2])
        D[0, 1, 2] = -np.sin(q[2])
        return D

    def body_frame(self, q):
        """The sleigh (the force elements act on it): ``A = Rz(theta)``, ``a = (C_x, C_y,
        0)``; a motor drives the rotor relative to the sleigh (its torque ``T`` on the rotor
        and ``-T`` on the sleigh do the work ``T dphi``): ``J_m = e_z phi_dot``."""
        A, a, Jv, JW = _planar_body(q, 4)
        Jm = np.zeros((3, 4))
        Jm[2, 3] = 1.0
        return A, a, Jv, JW, Jm

    def group_coordinates(self, g):
        return _sleigh_group_coordinates(g, self.offset, 4)

    def to_group(self, q, v):
        q, v = np.atleast_2d(q), np.atleast_2d(v)
        pose, xi = _sleigh_to_group(q, v, self.offset)
        return np.column_stack([pose, q[:, 3]]), np.column_stack([xi, v[:, 3]])

    def from_group(self, g, xi):
        g, xi = np.atleast_2d(g), np.atleast_2d(xi)
        q, v = _sleigh_from_group(g, xi, self.offset)
        return np.column_stack([q, g[:, 3]]), np.column_stack([v, xi[:, 3]])


BUILTIN = {cls.__name__: cls for cls in (KnifeEdgeModel, VerticalDiskModel,
                                         ContactOscillatorModel, RotorSleighModel)}


def compiled_counterpart(model, module):
    """The compiled model of ``module`` (``nhphys_ext.models``) equal to the twin ``model``, or
    None when ``model`` is not exactly a built-in model (a user's model, or a subclass of a
    built-in one that may override its functions): those run on the twins."""
    cls = BUILTIN.get(type(model).__name__)
    if cls is None or type(model) is not cls:
        return None
    return getattr(module, cls.__name__)(*model.parameters)


class BodyForces:
    """The force elements of a model's rigid body as generalized forces on its coordinates
    (module docstring, "Force elements").

    Parameters
    ----------
    model : CoordinateModel
        With a :meth:`~CoordinateModel.body_frame`.
    body : nhphys.twins.forces.ForceSet
        Every element but the motors (they act through ``J_v`` and ``J_W``).
    motors : nhphys.twins.forces.ForceSet
        The motors (they act through ``J_m``).
    frame : array_like, shape (3, 3)
        The plane's axes in space (columns); ``frame[:, 2]`` is its normal.
    origin : array_like, shape (3,)
        Where the plane's origin is in space.
    normal_force : float
        ``N`` of rolling resistance.
    """

    def __init__(self, model, body, motors, frame, origin, normal_force):
        if (len(body.motor_rows) or len(motors.force_rows) or len(motors.torque_rows)
                or len(motors.springs)):
            raise ValueError("Expected the motors in `motors` and every other element in "
                             "`body`.")
        self.model, self.body, self.motors = model, body, motors
        self.frame = np.array(frame, dtype=float).reshape(3, 3)
        self.origin = np.array(origin, dtype=float).reshape(3)
        self.normal = self.frame[:, 2].copy()
        self.normal_force = float(normal_force)

    @property
    def empty(self):
        return self.body.empty and self.motors.empty

    @property
    def callables(self):
        return self.body.callables

    def pose(self, q):
        """``(A, a, J_v, J_W, J_m)`` of the body at ``q`` in space."""
        A, a, Jv, JW, Jm = self.model.body_frame(np.asarray(q, dtype=float))
        E = self.frame
        return E @ A, self.origin + E @ a, E @ Jv, JW, Jm

    def potential(self, q):
        """``V(q)`` of the springs and fields (float)."""
        A, a, *_ = self.pose(q)
        return self.body.potential(A, a)

    def terms(self, t, q, v_call=None):
        """``(Q_c, Q_a, C)`` at ``(t, q)``: the generalized forces (n,) of the potential and
        the applied elements and the damping matrix (n, n). A Python callable element sees
        the velocities ``v_call`` (n,) (the start of the step's)."""
        n = self.model.n
        A, a, Jv, JW, Jm = self.pose(q)
        f, tau = np.zeros(3), np.zeros(3)
        self.body.potential_wrench(A, a, f, tau)
        Qc = Jv.T @ f + JW.T @ tau
        f, tau = np.zeros(3), np.zeros(3)
        self.body.applied_wrench(t, A, a, f, tau)
        if self.body.callables:
            v = np.zeros(n) if v_call is None else np.asarray(v_call, dtype=float)
            self.body.callable_wrench(t, A, a, Jv @ v, JW @ v, f, tau)
        Qa = Jv.T @ f + JW.T @ tau
        tau_m = np.zeros(3)
        self.motors.applied_wrench(t, A, a, np.zeros(3), tau_m)
        Qa = Qa + Jm.T @ tau_m
        D = np.zeros((3, 3))
        drag = self.body.damping(A, self.normal, D)
        if self.body.rolling:
            nb = A.T @ self.normal
            D += (self.body.rolling * self.normal_force) * (np.eye(3) - np.outer(nb, nb))
        C = drag * (Jv.T @ Jv) + JW.T @ (D @ JW)
        Dm = np.zeros((3, 3))
        self.motors.damping(A, self.normal, Dm)
        C = C + Jm.T @ (Dm @ Jm)
        return Qc, Qa, C

    # -- the kernel's Python entry points (for the parity tests) ------------------------------
    def py_terms(self, t, q):
        return self.terms(float(t), np.asarray(q, dtype=float))

    def py_potential(self, q):
        return self.potential(np.asarray(q, dtype=float))
