r"""A rigid body with a convex surface rolling without slipping on a ground surface.

The continuous model is the Lagrange-d'Alembert vector field of the rolling body (the seed's
eq. 29, in nhphys's conventions):

    A n_M(s) = n_H(x),      Lambda ds/dt = Omega x n_M(s),      dx/dt = A ds/dt,
    Lambda = L_M(s) - A^T L_H(x) A,      I~ = I - m hat(s)^2,      dA/dt = A hat(Omega),
    I~ dOmega/dt = (I~ Omega) x Omega + m s x (ds/dt x Omega + g A^T k),
    E = 1/2 Omega . I~ Omega + m g (x - A s) . k,

with ``s`` the contact point on the body from the centre of mass (body frame), ``x`` the contact
point on the ground, the body's normal into the body and the ground's toward the body, and the
centre of mass at ``a = x - A s`` moving with ``da/dt = -A (Omega x s)`` (no slip).

In :meth:`RollingBody.reference_rhs` the state is ``(A, z, Omega)`` with ``z`` the ground's chart
coordinates of ``x``; ``s`` is slaved to it as the body's support point in the direction
``-A^T n_H(z)``, so the holonomic contact condition holds by construction. On the tangent plane
at ``s`` (orthonormal basis ``E``), ``L_M = (E^T S' E)^-1`` where ``S'`` is the derivative of the
support map (see :mod:`nhphys.twins.rolling`), and ``A^T L_H A`` is
``E^T A^T J_H W_H g_H^-1 J_H^T A E`` with ``W_H = g_H^-1 II_H`` the ground's Weingarten matrix on
chart velocities.

On a moving ground (:mod:`nhphys.surfaces.moving`) ``z`` are the contact's coordinates on the
ground's own chart (material coordinates of the ground), ``x`` and ``n`` the ground's point and
normal carried to space by its pose at the time, and eq. (29) gains the acceleration of the
ground's material point at the contact and the ground's work ``F . V(x)``: the derivation is in
:meth:`RollingBody._rates`.

For a body given by its support map only (a disk, wheel or cylinder, :mod:`nhphys.shapes`),
``L_M`` does not exist (``S'`` is singular on a disk's rim), and the reference uses the same
equation multiplied through by ``S'``: differentiating ``s = S(-A^T n)`` along the motion gives
``(I - S' A^T L_H A) ds/dt = S' (Omega x A^T n)``, which is eq. (29)'s contact equation when
``S'`` is invertible on the tangent plane, and a regular 3 x 3 system for a disk. A contact
event of the shape (see :class:`nhphys.errors.ContactEvent`) stops a run of the kernels at the
step that would cross it.

The model, as the integrators read it:

* configuration group ``group = "SO(3) x R^3"``: orientation ``A`` and centre of mass ``a``
  of a free rigid body, the contact located on the ground's charts;
* Lagrangian ``1/2 Omega . I Omega + 1/2 m |da/dt|^2 - V(a)``: ``mass``, ``inertia`` (about
  the centre of mass) and the potential ``potential(a) = m g a . up`` (``gravity``, ``up``);
* constraint: the contact of the body's convex ``shape`` (its support map, through
  :meth:`RollingBody.contact_shape`) with the ``ground``, rolling without slipping;
* ``observables(saved)``: the trajectory fields from the saved states (the arrays of
  :data:`nhphys.twins.rolling.FRAME_FIELDS`, leading axis n).

:meth:`RollingBody.place` refuses a pose where the contact is not regular (``Lambda``
singular) or where the body cannot fit (``Lambda`` not positive definite: the body's radius of
curvature exceeds the ground's there, as for a ball bigger than the bowl it sits in).
"""

import numpy as np

from nhphys._validation import as_float_array, as_rotation, as_vector3
from nhphys.bodies import RigidBody
from nhphys.twins import rolling as spec
from nhphys.twins.newton import FLAT, INNER_CONTACT, RIM_TO_SIDE, SINGULAR_CONTACT
from nhphys.twins.suslov import cross  # numpy.cross costs 20 times more a call

# contact events (nhphys.shapes): the name a ContactEvent carries and what happened
EVENTS = {
    FLAT: ("flat", (
        "the {shape} fell flat: its {face} came within {angle:g} rad of the ground's tangent "
        "plane, so the contact is no longer a point")),
    RIM_TO_SIDE: ("rim-to-side", (
        "the {shape} rolled from its rim onto its side: its axis came within {angle:g} rad of "
        "the ground's tangent plane, so the contact is becoming a line")),
    INNER_CONTACT: ("inner contact", (
        "the {shape}'s contact reached the top of its tube (its plane within {angle:g} rad of "
        "the ground's tangent plane): beyond it the inner part of the tube would touch the "
        "ground")),
}
AT_START = {
    FLAT: "the {shape} lies flat on the ground (its {face} within {angle:g} rad of the "
          "ground's tangent plane)",
    RIM_TO_SIDE: "the {shape} lies on its side (its axis within {angle:g} rad of the "
                 "ground's tangent plane)",
    INNER_CONTACT: "the {shape} lies flat on the ground (its plane within {angle:g} rad "
                   "of the ground's tangent plane): the contact is not on the tube's "
                   "outer half",
}


def event_message(code, shape, at_start=False):
    """``(name, message)`` of a contact event ``code`` for the body shape ``shape``."""
    name, text = EVENTS[code]
    if at_start:
        text = AT_START[code]
    kind = type(shape).__name__.lower()
    if code == RIM_TO_SIDE:
        angle = shape.side_angle
    else:
        angle = shape.flat_angle
    face = "plane" if kind in ("disk", "wheel") else "end face"
    return name, text.format(shape=kind, face=face, angle=angle)


def check_modes(lift_off, restitution, mu, system):
    """``(lift_off, restitution, mu)`` checked for ``system`` (a :class:`RollingBody`, or
    ``None`` for a contact's settings before its system exists)."""
    if not isinstance(lift_off, (bool, np.bool_)):
        raise TypeError(f"Expected `lift_off` to be True or False, got {lift_off!r}.")
    restitution = float(as_float_array(restitution, "restitution"))
    if not 0.0 <= restitution <= 1.0:
        raise ValueError(f"Expected `restitution` in [0, 1], got {restitution}.")
    if restitution and not lift_off:
        raise ValueError("Expected `restitution` only with `lift_off=True`: a bilateral contact "
                         "has no impacts.")
    if isinstance(mu, bool) or not isinstance(mu, (int, float, np.integer, np.floating)):
        raise TypeError(f"Expected the friction coefficient `mu` to be a number, got {mu!r}.")
    mu = float(mu)  # inf is allowed: the contact never slides
    if not mu >= 0.0:
        raise ValueError(f"Expected the friction coefficient `mu` >= 0 (inf: no sliding), "
                         f"got {mu}.")
    if mu != np.inf and not lift_off:
        raise ValueError("Expected a finite `mu` only with `lift_off=True`: sliding comes with "
                         "the unilateral contact.")
    if system is None:
        return bool(lift_off), restitution, mu
    if lift_off and system.motion is not None:
        raise ValueError("`lift_off=True` does not yet support a moving ground.")
    return bool(lift_off), restitution, mu


def check_impact(impact, lift_off):
    """The impact law's name, checked (``"rough"`` or ``"coulomb"``)."""
    if impact not in ("rough", "coulomb"):
        raise ValueError(f"Expected `impact` to be 'rough' or 'coulomb', got {impact!r}.")
    if impact != "rough" and not lift_off:
        raise ValueError("Expected `impact` only with `lift_off=True`: a bilateral contact has "
                         "no impacts.")
    return impact


def rolling_shape(body, module, backend):
    """The contact shape of ``body`` in ``module`` (the kernel or its twin).

    A support-function shape (:mod:`nhphys.shapes`) names its own class; a chart surface is a
    ``ChartShape`` over the surface's kernel for ``backend``.
    """
    from nhphys.shapes import Shape

    if isinstance(body.shape, Shape):
        return body.shape.rolling_shape(module, body.com)
    return module.ChartShape(body.shape.with_backend(backend).kernel, body.com)


class RollingBody:
    """A convex rigid body rolling without slipping on a ground surface under gravity.

    Parameters
    ----------
    body : RigidBody
    ground : nhphys.surfaces.Surface or nhphys.surfaces.MovingGround
        Any surface, with its normal pointing toward the side the body is on (e.g.
        ``Plane()``, ``Sphere(1.0).as_ground("inside")`` for a bowl), at rest or under a
        prescribed rigid motion (``Plane().moving(rate=2.0)``: a turntable; see
        :mod:`nhphys.surfaces.moving`). On a moving ground the no-slip condition moves the
        body's material contact point with the ground's, and the ground's work through the
        contact force is part of ``work``.
    gravity : float
        Acceleration of gravity, >= 0, along ``-up``.
    up : array_like, shape (3,)
        The direction opposite to gravity (default +z).
    forces : list of nhphys.forces elements, optional
        Applied forces, torques, springs, fields, damping and motors (:mod:`nhphys.forces`).
        The potentials of springs and fields are part of ``energy``; the work of every other
        element is the trajectory's ``work``, so that ``energy - work`` is conserved.
    allow_negative_normal_force : bool
        Start the body even where the ground would have to pull it (a negative normal contact
        force at the start, where a real body would leave the ground); by default that is a
        ``ValueError``. On a moving ground it is not checked.
    lift_off : bool
        Make the contact unilateral (:mod:`nhphys.twins.modes`, ``docs/contact-modes.md``): the
        body leaves the ground where the ground would have to pull it, flies, and lands with an
        impact; the trajectory gains ``mode`` and ``gap``, and ``traj.events`` lists the mode
        changes. It takes the start keywords ``height`` (start that far above the ground, along
        its normal at ``ground_point``) and ``velocity0`` (the centre's velocity in flight).
        Default False: the contact is bilateral, as it always was. Force elements act in every
        mode (``docs/contact-modes.md``, "Force elements"); not yet available on a moving
        ground.
    restitution : float
        Newton's coefficient of restitution ``e`` in [0, 1] of the rough impact at touchdown
        (0: the body lands and rolls; 1: it bounces back at the speed it came in). Only with
        ``lift_off``.
    mu : float
        Coulomb's friction coefficient, >= 0: the body rolls while the friction force rolling
        needs stays inside the cone ``|F_t| <= mu N``, and slides (the contact point slipping
        against a friction force ``mu N``) where it would leave it, until the slip stops.
        Default ``inf``: it never slides. Only with ``lift_off``; a body on the ground with a
        ``velocity`` whose contact point slips starts sliding.
    impact : {"rough", "coulomb"}
        The impact law at touchdown: ``"rough"`` brings the contact point's tangential
        velocity to zero whatever impulse that takes; ``"coulomb"`` bounds the tangential
        impulse by ``mu`` times the normal one, so that a body landing with a fast slip slides
        through the impact. Only with ``lift_off``.

    Examples
    --------
    >>> import numpy as np, nhphys
    >>> from nhphys.surfaces import Plane, Sphere
    >>> ball = nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1))
    >>> system = nhphys.systems.RollingBody(ball, Plane())
    >>> traj = nhphys.simulate(system, 0.1, 0.01, omega0=[0, 1.0, 0], ground_point=[0, 0, 0])
    >>> bool(np.allclose(traj.position[-1], [0.01, 0, 0.1]))
    True
    """

    group = "SO(3) x R^3"  # the configuration group (see the module docstring)
    reference_times = True  # reference_unpack takes the states' times (scheduled forces)

    @property
    def start_keywords(self):
        """Retraction.start's own names (a unilateral contact also starts in flight)."""
        names = ("R0", "omega0", "ground_point")
        return names + ("height", "velocity0") if self.lift_off else names

    def __init__(self, body, ground, gravity=9.81, up=(0.0, 0.0, 1.0), forces=None,
                 allow_negative_normal_force=False, lift_off=False, restitution=0.0,
                 mu=np.inf, impact="rough"):
        from nhphys.forces import check_forces
        from nhphys.surfaces import Surface

        if not isinstance(body, RigidBody):
            raise TypeError(f"Expected `body` to be a RigidBody, got {body!r}.")
        from nhphys.surfaces.moving import MovingGround

        self.motion = None  # a GroundMotion, or None for a ground at rest
        if isinstance(ground, MovingGround):
            ground, self.motion = ground.surface, ground.motion
        if not isinstance(ground, Surface):
            raise TypeError(f"Expected `ground` to be an nhphys.surfaces.Surface or a "
                            f"MovingGround, got {ground!r}.")
        gravity = float(as_float_array(gravity, "gravity"))
        if gravity < 0:
            raise ValueError(f"Expected `gravity` to be >= 0, got {gravity}.")
        up = as_vector3(up, "up")
        if np.linalg.norm(up) == 0:
            raise ValueError("Expected `up` to be a nonzero vector.")
        self.body = body
        self.ground = ground
        self.gravity = gravity
        self.up = up / np.linalg.norm(up)
        self.mass = body.mass
        self.inertia = body.inertia
        self.inertia_inv = np.linalg.inv(body.inertia)
        self.forces = check_forces(forces)
        self.allow_negative_normal_force = bool(allow_negative_normal_force)
        self.lift_off, self.restitution, self.mu = check_modes(lift_off, restitution, mu, self)
        self.impact = check_impact(impact, self.lift_off)

    def __repr__(self):
        extra = f", forces={list(self.forces)!r}" if self.forces else ""
        extra += f", motion={self.motion!r}" if self.motion is not None else ""
        return (f"RollingBody(body={self.body!r}, ground={self.ground!r}, "
                f"gravity={self.gravity}{extra})")

    # -- geometry through the twin (used for placement and the reference) ----------------------
    @property
    def support_shape(self):
        """True when the body is a support-function shape (disk, wheel, cylinder)."""
        from nhphys.shapes import Shape

        return isinstance(self.body.shape, Shape)

    def potential(self, position, orientation=None):
        """The potential energy of centre-of-mass positions (..., 3) -> (...): gravity's
        ``m g a . up``, plus the springs and fields of ``forces`` (which need the body's
        ``orientation`` (..., 3, 3) when there are springs)."""
        position = np.asarray(position, dtype=float)
        V = self.mass * self.gravity * (position @ self.up)
        if any(element.potential for element in self.forces):
            from nhphys.forces import build_force_set
            from nhphys.twins import forces as twin

            potentials = build_force_set(self.forces, twin)
            A = np.broadcast_to(np.eye(3) if orientation is None else orientation,
                                position.shape[:-1] + (3, 3))
            flat_A, flat_a = A.reshape(-1, 3, 3), position.reshape(-1, 3)
            V = V + np.array([potentials.potential(R, a) for R, a in zip(flat_A, flat_a)]
                             ).reshape(position.shape[:-1])
        return V

    def contact_shape(self, module, backend):
        """The body's contact shape in ``module`` (``nhphys_ext.rolling`` or its twin
        ``nhphys.twins.rolling``), over surface kernels of ``backend``."""
        return rolling_shape(self.body, module, backend)

    def _twins(self):
        """The contact shape and the ground as the twins evaluate them, made once for the
        body, shape and ground this system holds (``reference_rhs`` asks at every call)."""
        key = (self.body, self.body.shape, self.ground)
        cached = getattr(self, "_twin_cache", None)
        if cached is None or any(a is not b for a, b in zip(cached[0], key)) \
                or not np.array_equal(cached[1], self.body.com):
            twins = (self.contact_shape(spec, "python"),
                     self.ground.with_backend("python").kernel)
            cached = self._twin_cache = (key, np.array(self.body.com, dtype=float), twins)
        return cached[2]

    def place(self, R0, omega0, ground_point):
        """Initial state touching the ground near ``ground_point`` with orientation ``R0``.

        Returns a dict ``A, a, Pi, p, s, chart, z`` (the contact is exact: the body's support
        point in the direction ``-R0^T n`` is put on the ground point closest to
        ``ground_point``, and the centre of mass velocity follows from no slip).
        """
        R0 = as_rotation(R0, "R0")
        omega0 = as_vector3(omega0, "omega0")
        ground_point = as_vector3(ground_point, "ground_point")
        if self.motion is not None:  # place the body in the ground's frame at t = 0
            Q0, d0, _, _ = self.motion_twin().at(0.0)
            state = self._place(Q0.T @ R0, omega0, Q0.T @ (ground_point - d0))
            c = state["contact"]
            c.x, c.n, c.ds_da = Q0 @ c.x + d0, Q0 @ c.n, c.ds_da @ Q0.T
            V = spec.ground_velocity(self.motion_twin().at(0.0), c.x)
            state.update(A=R0.copy(), a=Q0 @ state["a"] + d0,
                         p=self.mass * (V - R0 @ np.cross(omega0, c.s)))
            return state
        return self._place(R0, omega0, ground_point)

    def motion_twin(self):
        """The ground's motion as the twin evaluates it (:class:`nhphys.twins.rolling.GroundMotion`)."""
        if self.motion is None:
            return spec.GroundMotion()
        return self.motion.build(spec)

    def _place(self, R0, omega0, ground_point):
        """:meth:`place` on the ground at rest (or in the moving ground's frame)."""
        loc = self.ground.project(ground_point)
        chart, z = int(loc.chart), np.array(loc.uv, dtype=float)
        shape, ground = self._twins()
        x, J, H, n, W = spec.ground_geometry(ground, chart, z)
        off = float(np.linalg.norm(ground_point - x))
        if off > self.size:
            raise ValueError(
                f"Expected `ground_point` on the ground (or within the body's size "
                f"{self.size:.4g} of it), but {np.round(ground_point, 6).tolist()} is {off:.4g} "
                f"from the ground's nearest point {np.round(x, 6).tolist()}: give a point where "
                "the body should touch the ground."
            )
        status, s, Sp, n_M = shape.support(-R0.T @ n)
        if status in EVENTS:
            _, what = event_message(status, self.body.shape, at_start=True)
            raise ValueError(f"Expected `R0` to put the body on one contact point, but {what}.")
        if status:
            raise ValueError("Could not find the body's contact point for `R0`.")
        a = x - R0 @ s
        st, c = spec.contact(shape, ground, R0, a, chart, z, 1e-14, 50)
        if st == SINGULAR_CONTACT:
            raise ValueError(
                "Expected a regular contact at the initial pose: body and ground curvatures "
                "match there (Lambda is singular)."
            )
        if st:
            raise ValueError(f"Could not place the body on the ground near {ground_point}.")
        self._check_regular(shape, ground, R0, c)
        if self.motion is None and not (self.allow_negative_normal_force or self.lift_off):
            self._check_pressing(R0, c, omega0)  # a unilateral contact flies off instead
        return {
            "A": R0.copy(), "a": a, "Pi": self.inertia @ omega0,
            "p": -self.mass * (R0 @ np.cross(omega0, c.s)), "s": c.s,
            "chart": c.chart, "z": c.z, "contact": c,
        }

    @property
    def size(self):
        """The body's size: the largest distance (m) from its centre of mass to a point of its
        surface, over the support points in 26 directions."""
        if getattr(self, "_size", None) is None:
            shape, _ = self._twins()
            dirs = np.array([(i, j, k) for i in (-1, 0, 1) for j in (-1, 0, 1)
                             for k in (-1, 0, 1) if (i, j, k) != (0, 0, 0)], dtype=float)
            sizes = []
            for d in dirs:
                status, s, _, _ = shape.support(d / np.linalg.norm(d))
                if status == 0:
                    sizes.append(np.linalg.norm(s))
            self._size = max(sizes)
        return self._size

    def _check_pressing(self, R0, c, omega0):
        """Refuse a start where the ground would have to pull the body (negative normal force):
        a real body would leave the ground at once, and the rolling model would hold it."""
        from nhphys.forces import build_force_set
        from nhphys.twins import forces as twin

        self._reference_chart = c.chart
        self._reference_forces = build_force_set(self.forces, twin)
        normal_force = self._rates(R0, c.z, omega0, 0.0)[7]
        if normal_force < 0:
            raise ValueError(
                f"Expected the ground to push the body at the start, but the normal contact "
                f"force there is {normal_force:.4g} N < 0 (the ground would pull it: a real body "
                "would leave the ground at once). Start it elsewhere or slower, or pass "
                "RollingBody(..., allow_negative_normal_force=True) to run it anyway."
            )

    def _check_regular(self, shape, ground, A, c):
        """Refuse a contact that is not regular (``Lambda`` singular) or where the body does not
        fit (``Lambda`` not positive definite)."""
        if self.support_shape:
            # the support-map form of Lambda: where S' is invertible on the tangent plane,
            # I - S' A^T L_H A = L_M^-1 Lambda there. Its eigenvalues are those of
            # I - S'^(1/2) K S'^(1/2) (K = A^T L_H A symmetric, S' positive semi-definite): real,
            # and all positive exactly when the body is more curved than the ground in every
            # tangent direction (a direction across a disk's rim, where S' vanishes, counts as
            # infinitely curved)
            operator = self._contact_operator(A, c.Sp, ground, c.chart, c.z)
            sv = np.linalg.svd(operator, compute_uv=False)
            if sv[-1] <= 1e-9 * sv[0]:
                raise ValueError(
                    "Expected a regular contact at the initial pose: the body's and the "
                    f"ground's curvatures match there (I - S' A^T L_H A has singular values {sv})."
                )
            lowest = float(np.linalg.eigvals(operator).real.min())
            name = "I - S' A^T L_H A"
        else:
            E = spec.tangent_basis(A.T @ c.n)
            lam = self._lambda(E, A, c.Sp, ground, c.chart, c.z)
            sv = np.linalg.svd(lam, compute_uv=False)
            if sv[-1] <= 1e-9 * sv[0]:
                raise ValueError(
                    "Expected a regular contact at the initial pose: body and ground curvatures "
                    f"match there (Lambda has singular values {sv})."
                )
            lowest = float(np.linalg.eigvalsh(0.5 * (lam + lam.T)).min())
            name = "Lambda = L_M - A^T L_H A"
        if lowest < 0:
            raise ValueError(
                "Expected the body to fit the ground where it is placed, but the body does not "
                "fit: its radius of curvature exceeds the ground's there (it is less curved than "
                f"the ground in some direction: {name} has the eigenvalue {lowest:.3g} < 0), so "
                "it would cut through the ground around the contact point."
            )

    @staticmethod
    def _lambda(E, A, Sp, ground, chart, z):
        """``Lambda`` on the tangent plane at ``s`` in the basis ``E`` (3, 2): (2, 2)."""
        x, J, H, n, W = spec.ground_geometry(ground, chart, z)
        L_M = np.linalg.inv(E.T @ Sp @ E)
        L_H = E.T @ A.T @ J @ W @ np.linalg.solve(J.T @ J, J.T) @ A @ E
        return L_M - L_H

    @staticmethod
    def _contact_operator(A, Sp, ground, chart, z):
        """``I - S' A^T L_H A`` (3, 3): the support-map form of ``Lambda`` (see ``_rates``)."""
        x, J, H, n, W = spec.ground_geometry(ground, chart, z)
        L_H = J @ W @ np.linalg.solve(J.T @ J, J.T)  # space vectors: -dn = L_H dx
        return np.eye(3) - Sp @ A.T @ L_H @ A

    # -- observables -----------------------------------------------------------------------------
    def observables(self, saved):
        """Trajectory fields from the saved states.

        Parameters
        ----------
        saved : dict
            The arrays of :data:`nhphys.twins.rolling.FRAME_FIELDS` with leading axis n:
            ``A`` (n, 3, 3), ``a``, ``Pi``, ``p``, ``s``, ``x``, ``n``, ``n_M`` (n, 3), ``gap``,
            ``normal_force``, ``work`` and ``t`` (n,).

        Returns
        -------
        dict
            ``R``, ``omega`` (body), ``position``, ``velocity``, ``contact_point``,
            ``body_contact``, ``ground_normal``, ``energy`` (kinetic, gravity's and the force
            elements' potentials), ``work`` (of the other force elements), ``normal_force``,
            ``contact_residual``, ``slip_residual``, ``constraint_residual``.
        """
        A, a, Pi, p = saved["A"], saved["a"], saved["Pi"], saved["p"]
        s, x, n, n_M = saved["s"], saved["x"], saved["n"], saved["n_M"]
        gap, normal_force = saved["gap"], saved["normal_force"]
        omega = Pi @ self.inertia_inv
        An_M = np.einsum("nij,nj->ni", A, n_M)
        slip = p / self.mass + np.einsum("nij,nj->ni", A, np.cross(omega, s))
        if self.motion is not None:  # relative to the ground's material point
            motion = self.motion_twin()
            slip = slip - np.array([spec.ground_velocity(motion.at(t), xi)
                                    for t, xi in zip(saved["t"], x)]).reshape(slip.shape)
        contact = np.maximum(np.linalg.norm(An_M - n, axis=1), np.abs(gap))
        energy = (0.5 * np.einsum("ni,ni->n", omega, Pi)
                  + 0.5 * np.einsum("ni,ni->n", p, p) / self.mass
                  + self.potential(a, A))
        return {
            "R": A, "omega": omega, "position": a, "velocity": p / self.mass,
            "contact_point": x, "body_contact": s, "ground_normal": n,
            "energy": energy, "work": saved["work"], "normal_force": normal_force, "contact_residual": contact,
            "slip_residual": np.linalg.norm(slip, axis=1),
            "constraint_residual": np.maximum(contact, np.linalg.norm(slip, axis=1)),
        }

    def momentum_map(self, traj):
        """The momentum map of a horizontal plane ground (the seed's eq. 43).

        Returns ``(J_rot, J_trans)``: the vertical angular momentum about the space origin,
        ``k . (A I~ Omega - m x x A (Omega x s))`` (n,), and the linear momentum
        ``-m A (Omega x s)`` (n, 3). Their evolution: ``dJ_trans/dt = F_contact - m g k`` and
        ``dJ_rot/dt = k . (x x F_contact)``; on a horizontal plane only the friction part of
        the contact force changes them, so for a homogeneous ball both are constant.
        """
        k = self.up
        A, omega, s, x = traj.R, traj.omega, traj.body_contact, traj.contact_point
        ws = np.einsum("nij,nj->ni", A, np.cross(omega, s))
        I_tilde_omega = omega @ self.inertia - self.mass * np.cross(s, np.cross(s, omega))
        J_rot = (np.einsum("nij,nj->ni", A, I_tilde_omega) - self.mass * np.cross(x, ws)) @ k
        return J_rot, -self.mass * ws

    # -- the continuous vector field, for `Reference` ------------------------------------------
    def reference_state(self, R0=None, omega0=None, ground_point=(0.0, 0.0, 0.0)):
        """Validated initial conditions packed as ``(A.ravel(), z, Omega, W)``, shape (15,)
        (``W`` the work of the applied forces and of a moving ground, 0 at the start).

        ``z`` are the chart coordinates of the contact on the ground's own (ground-fixed) chart,
        on a moving ground too; the chart is kept for the whole reference run.
        """
        if self.lift_off:
            raise ValueError("`Adaptive` does not yet support `lift_off=True` (it integrates "
                             "the bilateral contact); use `Retraction` or `Reference`.")
        from nhphys.forces import build_force_set
        from nhphys.twins import forces as twin

        R0 = np.eye(3) if R0 is None else R0
        omega0 = np.zeros(3) if omega0 is None else omega0
        state = self.place(R0, omega0, ground_point)
        self._reference_chart = state["chart"]
        self._reference_forces = build_force_set(self.forces, twin)
        self._reference_motion = None if self.motion is None else self.motion_twin()
        return np.concatenate([state["A"].ravel(), state["z"], self.inertia_inv @ state["Pi"],
                               [0.0]])

    def _ground_motion(self, t):
        """``(Q, c, w, v, dw/dt, dv/dt)`` of the moving ground at ``t`` (module
        :mod:`nhphys.surfaces.moving`): its pose, velocities (the twin's, as the step sees them)
        and accelerations."""
        motion = getattr(self, "_reference_motion", None)
        if motion is None:
            motion = self._reference_motion = self.motion_twin()
        Q, c, w, v = motion.at(t)
        w_dot, v_dot = self.motion.acceleration(t)
        return Q, c, w, v, w_dot, v_dot

    def _reference_geometry(self, B, z, t=None):
        """The contact at ground chart coordinates ``z`` for the body attitude ``B`` relative to
        the ground: ``x, J, n, W`` in the ground's frame, and ``s, S', n_M`` (body frame)."""
        shape, ground = self._twins()
        chart = self._reference_chart
        x, J, H, n, W = spec.ground_geometry(ground, chart, z)
        status, s, Sp, n_M = shape.support(-B.T @ n)
        if status in EVENTS:
            when = "" if t is None else f" near t = {t:.6g}"
            raise RuntimeError(
                f"The reference integration reached a contact event{when}: "
                f"{event_message(status, self.body.shape)[1]}."
            )
        return shape, ground, chart, x, J, n, W, s, Sp, n_M

    def _rates(self, A, z, omega, t=0.0):
        r"""The rates of eq. (29) at ``(A, z, Omega)`` and time ``t``, with the applied forces
        and the ground's motion.

        Parameters
        ----------
        A : ndarray, shape (3, 3)
            Body to space.
        z : ndarray, shape (2,)
            The contact's coordinates on the ground's chart ``self._reference_chart``
            (ground-fixed: material coordinates of a moving ground).
        omega : ndarray, shape (3,)
            Body angular velocity ``Omega``.
        t : float
            Time (scheduled forces, the ground's motion).

        Returns
        -------
        s, x, n, n_M : ndarray, shape (3,)
            The contact on the body (body frame, from the centre of mass), the contact point
            and ground normal (space), and the body's into-body normal at ``s``.
        s_dot, z_dot, omega_dot : ndarray, shapes (3,), (2,), (3,)
            ``ds/dt``, ``dz/dt``, ``dOmega/dt``.
        N : float
            The normal contact force ``n . F``.
        power : float
            ``dW/dt``: the power of the non-potential force elements plus, on a moving ground,
            that of the ground, ``F . V(x)``.
        velocity : ndarray, shape (3,)
            The centre of mass velocity ``da/dt``.

        Notes
        -----
        **Applied forces.** The forces add to the torque about the contact point: with ``f``
        (space, at the centre of mass) and ``tau`` (body) the applied wrench, Newton's law gives
        the contact force ``A^T F = m A^T a'' + m g A^T k - A^T f``, so Euler's equation about
        the centre of mass gains ``tau - s x A^T f``. Rolling resistance ``-mu N P_t Omega``
        depends on the normal force ``N = n . (m a'' + m g k - f)``, and ``a''`` on
        ``dOmega/dt``: ``N = N_0 - m (s x n_b) . dOmega/dt`` (``n_b = A^T n``, ``N_0`` the
        rest), so the equation stays linear in ``dOmega/dt``:
        ``(I~ - mu m w (s x n_b)^T) dOmega/dt = rhs - mu N_0 w``, ``w = P_t Omega``. As in the
        step (:mod:`nhphys.twins.rolling`), the elements see the body's own velocities
        (``da/dt``, ``Omega``), not those relative to a moving ground.

        **Moving ground** (derived here from the continuous model, independently of the
        step). The ground's pose ``(Q(t), c(t))`` maps its material (chart) points to space,
        ``x = Q x_g(z) + c``, ``n = Q n_g(z)``; ``dQ/dt = hat(w) Q``, ``v = dc/dt``, so the
        ground's material point at ``x`` moves at ``V(x) = w x (x - c) + v`` and accelerates at
        ``dw/dt x r + w x (w x r) + dv/dt``, ``r = x - c``
        (:meth:`nhphys.surfaces.moving.GroundMotion.acceleration`). The state keeps the
        ground-fixed ``z``, so the contact stays on the same chart however the ground turns.

        1. Contact kinematics in the ground's frame. With ``B = Q^T A`` (the body's attitude
           relative to the ground), ``dB/dt = Q^T (-hat(w) A + A hat(Omega)) = B hat(Omega_r)``,
           ``Omega_r = Omega - A^T w``. In the ground's frame the ground is at rest, the body
           turns at ``Omega_r``, and no slip means its material contact point is at rest there.
           That is the rolling body on a ground at rest, so its contact equations hold with
           ``(B, Omega_r)`` for ``(A, Omega)``: ``s = S(-B^T n_g)`` (``B^T n_g = A^T n``),
           ``Lambda ds/dt = Omega_r x n_M(s)`` with ``Lambda = L_M - B^T L_H B``,
           ``dx_g/dt = B ds/dt`` and ``dz/dt = g_H^-1 J_H^T B ds/dt``. (For a support-map
           shape, ``(I - S' B^T L_H B) ds/dt = S' (Omega_r x B^T n_g)``.) In space the contact
           point moves at ``dx/dt = w x (x - c) + v + Q dx_g/dt = V(x) + A ds/dt``.
        2. The centre ``a = x - A s``: ``da/dt = dx/dt - A (Omega x s) - A ds/dt``, i.e. no slip,
           ``da/dt = V(x) - A (Omega x s)``: the body's material contact point moves with the
           ground's.
        3. Differentiating, with ``dV(x)/dt = dw/dt x r + w x (dx/dt - v) + dv/dt``:
           ``a'' = a_V - A (Omega x (Omega x s) + dOmega/dt x s + Omega x ds/dt)``,
           ``a_V = dw/dt x r + w x (w x r) + dv/dt + w x (A ds/dt)``: the acceleration of the
           ground's material point at ``x`` (angular, centripetal, translational) and a
           Coriolis-like term from the contact point moving over the ground.
        4. Newton-Euler with the contact force ``F`` as the Lagrange multiplier of no slip:
           ``m a'' = F + f - m g k``, ``I dOmega/dt = (I Omega) x Omega + s x A^T F + tau``.
           Eliminating ``F`` (``-m s x (dOmega/dt x s) = -m hat(s)^2 dOmega/dt`` joins ``I``, and
           ``(I Omega) x Omega - m s x (Omega x (Omega x s)) = (I~ Omega) x Omega``):
           ``I~ dOmega/dt = (I~ Omega) x Omega + m s x (ds/dt x Omega + g A^T k + A^T a_V)
           + tau - s x A^T f``: eq. (29) with ``m s x A^T a_V`` more, and ``ds/dt`` from step 1.
           The normal force is ``N = n . F`` with ``F = m a'' + m g k - f``; ``a_V`` joins
           ``N_0`` above.
        5. Energy. With ``E = 1/2 Omega . I Omega + 1/2 m |da/dt|^2 + m g a . k (+ potentials)``,
           ``dE/dt = Omega . (s x A^T F) + da/dt . F + P_forces = F . (A (Omega x s) + da/dt)
           + P_forces = F . V(x) + P_forces``: the ground does work at the rate ``F . V(x)``
           (the power of the contact force on the ground's material point), which joins ``W``,
           so that ``E - W`` is conserved. On a ground at rest ``V = a_V = 0`` and everything
           above is the rest-ground equation.
        """
        moving = self.motion is not None
        if moving:
            Q, c, w, v_ground, w_dot, v_dot = self._ground_motion(t)
            B = Q.T @ A
            omega_rel = omega - A.T @ w
        else:
            B, omega_rel = A, omega
        shape, ground, chart, x, J, n, W, s, Sp, n_M = self._reference_geometry(B, z, t)
        if self.support_shape:
            # s = S(d) with d = -B^T n: ds/dt = S' dd/dt, dd/dt = Omega_r x B^T n + B^T L_H B ds/dt
            s_dot = np.linalg.solve(self._contact_operator(B, Sp, ground, chart, z),
                                    Sp @ cross(omega_rel, B.T @ n))
        else:
            E = spec.tangent_basis(B.T @ n)
            lam = self._lambda(E, B, Sp, ground, chart, z)
            s_dot = E @ np.linalg.solve(lam, E.T @ cross(omega_rel, B.T @ n))
        z_dot = np.linalg.solve(J.T @ J, J.T @ (B @ s_dot))
        if moving:  # the contact in space; the ground point's velocity and acceleration
            x, n = Q @ x + c, Q @ n
            r = x - c
            V = cross(w, r) + v_ground
            a_V = (cross(w_dot, r) + cross(w, cross(w, r)) + v_dot
                   + cross(w, A @ s_dot))
        m, g = self.mass, self.gravity
        S = spec.hat(s)
        I_tilde = self.inertia - m * S @ S
        rhs = cross(I_tilde @ omega, omega) + m * cross(
            s, cross(s_dot, omega) + g * (A.T @ self.up))
        forces = getattr(self, "_reference_forces", None)
        nb = A.T @ n
        # a'' = a_V - A (Omega x (Omega x s) + dOmega/dt x s + Omega x ds/dt): its known part
        acc_0 = -A @ (cross(omega, cross(omega, s)) + cross(omega, s_dot))
        v = -A @ cross(omega, s)
        if moving:
            rhs = rhs + m * cross(s, A.T @ a_V)
            acc_0 = acc_0 + a_V
            v = v + V
        if forces is None or forces.empty:
            omega_dot = np.linalg.solve(I_tilde, rhs)
            F = m * (acc_0 - A @ cross(omega_dot, s) + g * self.up)
            power = F @ V if moving else 0.0
            return s, x, n, n_M, s_dot, z_dot, omega_dot, n @ F, power, v
        a = x - A @ s
        f_pot, tau_pot, f_app, tau_app, D, drag = forces.wrench(t, A, a, n, v, omega)
        f_np, tau_np = f_app - drag * v, tau_app - D @ omega
        f, tau = f_pot + f_np, tau_pot + tau_np
        w_roll = forces.rolling * (np.eye(3) - np.outer(nb, nb)) @ omega
        N_0 = n @ (m * acc_0 + m * g * self.up - f)
        lhs = I_tilde - m * np.outer(w_roll, cross(s, nb))
        omega_dot = np.linalg.solve(lhs, rhs + tau - cross(s, A.T @ f) - N_0 * w_roll)
        N = N_0 - m * cross(s, nb) @ omega_dot
        power = f_np @ v + (tau_np - N * w_roll) @ omega
        if moving:
            power += (m * (acc_0 - A @ cross(omega_dot, s) + g * self.up) - f) @ V
        return s, x, n, n_M, s_dot, z_dot, omega_dot, N, power, v

    def reference_rhs(self, t, state):
        """Eq. (29) for the packed state ``(A, z, Omega, W)``, with the applied forces and the
        ground's motion (:meth:`_rates`)."""
        A = state[:9].reshape(3, 3)
        omega = state[11:14]
        *_, z_dot, omega_dot, _, power, _ = self._rates(A, state[9:11], omega, t)
        A_dot = np.cross(A, omega)  # row r of A hat(Omega) is r x Omega
        return np.concatenate([A_dot.ravel(), z_dot, omega_dot, [power]])

    def reference_unpack(self, states, times=None):
        """Packed reference states (n, 15) -> the saved states of :meth:`observables`.

        The normal force is ``n . (m d2a/dt2 + m g k - f)`` with ``f`` the applied force and
        ``d2a/dt2 = a_V - A (Omega x (Omega x s) + dOmega/dt x s + Omega x ds/dt)`` (``a_V``
        the moving ground's term, :meth:`_rates`); ``times`` (n,) are the states' times, which
        scheduled forces and a moving ground need (default 0).
        """
        frames = []
        times = np.zeros(len(states)) if times is None else times
        for st, t in zip(states, times):
            A = st[:9].reshape(3, 3)
            omega = st[11:14]
            s, x, n, n_M, s_dot, _, omega_dot, normal_force, _, v = self._rates(
                A, st[9:11], omega, t)
            a = x - A @ s
            frames.append(np.concatenate([A.ravel(), a, self.inertia @ omega, self.mass * v, s,
                                          x, n, n_M, [0.0, normal_force, st[14], t]]))
        return spec.unpack_frames(np.array(frames).reshape(-1, spec.FRAME_SIZE))
