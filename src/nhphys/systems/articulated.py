r"""Articulated systems: rigid bodies joined in a tree by revolute and prismatic joints, with
wheels (thin disks) rolling without slipping on the horizontal plane ``z = 0``.

The formulation is the joint tree of :mod:`nhphys.twins.multibody` (generalized coordinates:
one per joint; the derivations are there). Each :class:`Joint` moves one body relative to the
body of its parent joint (or the ground); each :class:`Wheel` is a disk fixed in one body that
rolls on the plane. Build the tree so that it can stand on its wheels: the configurations the
joints allow should put each wheel on the ground, either by construction (a wheel whose ground
point is given by the root joints, ``held=False``) or by a holonomic constraint that the
integrators keep (``held=True``: its height above the ground is held at zero, and the rows count
one more constraint). The constraint rows must be independent (a two-wheeled axle on a planar
chassis has two equal sideways rows: that tree is not accepted).

:class:`Articulated` is the system (initial conditions ``q``, ``v``; :meth:`Articulated.rates`
completes a velocity from chosen components). ``nhphys.systems.Bicycle`` is one.

Examples
--------
A disk rolling upright on the plane (a rolling coin held vertical by a slider): the contact
point's position and heading are coordinates, the disk turns on its axle.

>>> import numpy as np, nhphys
>>> from nhphys.systems.articulated import Articulated, Joint, Wheel
>>> coin = Articulated([
...     Joint(-1, "prismatic", (1, 0, 0)),                   # 0: x of the contact point
...     Joint(0, "prismatic", (0, 1, 0)),                    # 1: y
...     Joint(1, "revolute", (0, 0, 1)),                     # 2: heading
...     Joint(2, "revolute", (0, 1, 0), offset=(0, 0, 0.1),  # 3: the coin, on its axle
...           mass=0.01, inertia=np.diag([2.5e-5, 5e-5, 2.5e-5]))],
...     [Wheel(3, radius=0.1)])
>>> v = coin.rates(np.zeros(4), {2: 0.5, 3: 10.0})           # turning and rolling
>>> traj = nhphys.simulate(coin, 1.0, 1e-3, integrator="dla", q=np.zeros(4), v=v)
>>> bool(traj.constraint_residual.max() < 1e-12)
True
"""

from dataclasses import dataclass, field

import numpy as np

from nhphys.conditions import ARTICULATED
from nhphys.twins.multibody import PRISMATIC, REVOLUTE

KINDS = {"revolute": REVOLUTE, "prismatic": PRISMATIC}


def _twin():
    from nhphys.twins import multibody

    return multibody


def _vector(value, name, unit=False):
    x = np.asarray(value, dtype=float)
    if x.shape != (3,) or not np.all(np.isfinite(x)):
        raise ValueError(f"Expected `{name}` to be a finite 3-vector, got {value!r}.")
    if unit:
        norm = float(np.linalg.norm(x))
        if norm < 1e-12:
            raise ValueError(f"Expected `{name}` to be a direction, got a vector of length "
                             f"{norm:.3g}.")
        x = x / norm
    return x


@dataclass(frozen=True)
class Joint:
    """One joint and the body it moves.

    Parameters
    ----------
    parent : int
        Index of the parent joint (whose body this joint is attached to), ``-1`` for the ground.
    kind : {"revolute", "prismatic", "fixed"}
        A fixed joint has no coordinate: its body is welded to its parent's, with the parent's
        axes, at ``offset`` (the tree merges the two bodies; see :func:`tree_arguments`).
    axis : array_like, shape (3,)
        Direction of the axis in the parent body's frame (normalised); unused by a fixed
        joint.
    offset : array_like, shape (3,)
        The joint's origin in the parent body's frame; the moved body's frame has its origin
        there and the parent's axes when the joint's coordinate is zero.
    mass : float
        Of the moved body (0 for a bookkeeping body with nothing on it).
    com : array_like, shape (3,)
        Its centre of mass, in its frame.
    inertia : array_like, shape (3, 3)
        About the centre of mass, in its frame.
    name : str
    """

    parent: int
    kind: str
    axis: tuple = ()
    offset: tuple = (0.0, 0.0, 0.0)
    mass: float = 0.0
    com: tuple = (0.0, 0.0, 0.0)
    inertia: object = field(default_factory=lambda: np.zeros((3, 3)))
    name: str = ""


@dataclass(frozen=True)
class Wheel:
    """A thin disk fixed in the body of joint ``body``, rolling on the plane ``z = 0``.

    Parameters
    ----------
    body : int
    radius : float
    centre : array_like, shape (3,)
        In the body's frame.
    axis : array_like, shape (3,)
        The disk's axis in the body's frame (normalised).
    held : bool
        ``True``: the integrators hold its height above the ground at zero (a holonomic
        constraint); ``False``: the tree keeps it on the ground by construction (checked).
    sideways : bool
        ``True``: its ground point may neither roll nor slip sideways (two rows); ``False``:
        only its rolling (one row), for a wheel whose sideways row another wheel already gives
        (the second wheel of a rigid axle).
    """

    body: int
    radius: float
    centre: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 1.0, 0.0)
    held: bool = False
    sideways: bool = True


@dataclass(frozen=True)
class EllipsoidHull:
    """A convex body rolling without slipping: the ellipsoid of semi-axes ``semi_axes`` along
    the axes of the body of joint ``body``, centred at ``centre`` (its frame); a ball when the
    three are equal (a ball caster, a marble on a mount, a rattleback's hull).

    Parameters
    ----------
    body : int
    semi_axes : array_like, shape (3,)
        Positive.
    centre : array_like, shape (3,)
    held : bool
        ``True``: the integrators hold its gap to the ground at zero (a holonomic constraint);
        ``False``: the tree keeps it on the ground by construction (checked).
    """

    body: int
    semi_axes: tuple = (1.0, 1.0, 1.0)
    centre: tuple = (0.0, 0.0, 0.0)
    held: bool = True


@dataclass(frozen=True)
class Blade:
    """A knife edge fixed in the body of joint ``body``: the point ``point`` (on the ground)
    may move along the blade's ``direction`` (both in the body's frame), not across it.

    The tree must keep the point on the ground and the blade level (a planar body: slides
    along ``x`` and ``y`` and a turn about ``z``); the start checks the point's height.
    """

    body: int
    point: tuple = (0.0, 0.0, 0.0)
    direction: tuple = (1.0, 0.0, 0.0)


@dataclass(frozen=True)
class SuslovConstraint:
    """A Suslov constraint on the body of joint ``body``: its angular velocity has no component
    along ``axis`` (in the body's frame, normalised), as the Suslov top's
    (:class:`nhphys.systems.Suslov`). Its row ``a . J_omega`` (``a`` the axis in space) is
    nonholonomic: it holds at each step's midpoint and at its end, as a blade's does."""

    body: int
    axis: tuple = (0.0, 0.0, 1.0)


def _checked_joint(j, joint):
    """Joint ``j`` as a dict of checked values (``axis`` None for a fixed joint)."""
    if not isinstance(joint, Joint):
        raise TypeError(f"Expected joints[{j}] to be a Joint, got {joint!r}.")
    p = joint.parent
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"Expected joints[{j}].parent to be an int, got {p!r}.")
    if p == j:
        raise ValueError(f"joints[{j}] is attached to its own body: a joint joins a body to "
                         "its parent's.")
    if not -1 <= p < j:
        raise ValueError(
            f"joints[{j}].parent is {p}: expected -1 (the ground) or an earlier joint. "
            "A joint tree lists parents first and gives each body one parent, so closed "
            "kinematic loops cannot be built."
        )
    if joint.kind not in KINDS and joint.kind != "fixed":
        raise ValueError(f"Expected joints[{j}].kind in {sorted(KINDS) + ['fixed']}, got "
                         f"{joint.kind!r}.")
    m = float(joint.mass)
    if not np.isfinite(m) or m < 0:
        raise ValueError(f"Expected joints[{j}].mass to be finite and >= 0, got {m!r}.")
    I = np.asarray(joint.inertia, dtype=float)
    if I.shape != (3, 3) or not np.all(np.isfinite(I)) or np.max(np.abs(I - I.T)) > 1e-12 * \
            max(1.0, np.max(np.abs(I))):
        raise ValueError(f"Expected joints[{j}].inertia to be a symmetric 3x3 matrix.")
    eig = np.linalg.eigvalsh(I)
    scale = max(1.0, eig[-1])
    if eig[0] < -1e-14 * scale or eig[0] + eig[1] < eig[2] - 1e-12 * scale:
        raise ValueError(f"Expected joints[{j}].inertia to be a body's (positive "
                         f"semi-definite, triangle inequality), got moments {eig.tolist()}.")
    axis = None if joint.kind == "fixed" else _vector(joint.axis, f"joints[{j}].axis", unit=True)
    return {"parent": int(p), "kind": joint.kind, "axis": axis,
            "offset": _vector(joint.offset, f"joints[{j}].offset"), "mass": m,
            "com": _vector(joint.com, f"joints[{j}].com"), "inertia": I}


def _shifted(d, x):
    """``x + d``, and ``x`` itself (its zeros' signs kept) when ``d`` is zero."""
    return x + d if d.any() else x


def merge_fixed(checked):
    """The moving joints of a tree whose ``checked`` joints (dicts of :func:`_checked_joint`)
    may be fixed, each fixed joint's body merged into the body it is welded to.

    A fixed joint ``j`` on the body of joint ``p`` puts its body's frame at ``offset_j`` in
    ``p``'s frame, with ``p``'s axes; so every point ``x`` of ``j``'s frame is ``x +
    offset_j`` in ``p``'s (and on up a chain of fixed joints, to the first moving body or the
    ground). The merged body has the total mass, the mass-weighted centre of mass ``c``, and
    the inertia about ``c`` by the parallel-axis theorem, ``sum_i I_i + m_i (|d_i|^2 1 - d_i
    d_i^T)`` with ``d_i = c_i - c``. Joints on a fixed joint's body hang from the merged body at
    their offsets shifted the same way. A body with nothing fixed to it keeps its values as
    given, bit for bit.

    Returns
    -------
    moving : list of dict
        The revolute and prismatic joints, re-indexed (parents, offsets and mass properties
        in the merged bodies).
    host : list of int
        For every joint, the index among ``moving`` of the body its body is part of (``-1``:
        welded to the ground).
    shift : list of ndarray, shape (3,)
        For every joint, where its body frame's origin is in that body's frame.
    """
    moving, host, shift = [], [], []
    parts = []  # per moving body: (mass, com, inertia) of the bodies merged into it
    for joint in checked:
        p = joint["parent"]
        above = host[p] if p >= 0 else -1
        base = shift[p] if p >= 0 else np.zeros(3)
        if joint["kind"] == "fixed":
            host.append(above)
            shift.append(base + joint["offset"])
            if above >= 0:
                parts[above].append((joint["mass"], shift[-1] + joint["com"], joint["inertia"]))
            continue
        host.append(len(moving))
        shift.append(np.zeros(3))
        moving.append(dict(joint, parent=above, offset=_shifted(base, joint["offset"])))
        parts.append([(joint["mass"], joint["com"], joint["inertia"])])
    for body, pieces in zip(moving, parts):
        if len(pieces) == 1:
            continue
        total = sum(m for m, _, _ in pieces)
        c = (sum(m * x for m, x, _ in pieces) / total if total > 0 else pieces[0][1])
        inertia = np.zeros((3, 3))
        for m, x, I in pieces:
            d = x - c
            inertia += I + m * (d @ d * np.eye(3) - np.outer(d, d))
        body.update(mass=total, com=c, inertia=inertia)
    return moving, host, shift


def tree_arguments(joints, wheels, gravity, blades=(), suslov=(), hulls=()):
    """The validated arguments of :class:`~nhphys.twins.multibody.JointTree`, fixed joints
    merged away (:func:`merge_fixed`): the tree's bodies and coordinates are the revolute and
    prismatic joints', in order; wheels, hulls, blades and Suslov constraints on a fixed joint's
    body go to the body it is welded to.

    Raises
    ------
    ValueError
        A joint attached to itself or to a later joint (a closed loop or an unordered tree:
        each body has one parent, listed before it), an unknown kind, a zero axis, a negative
        mass, an inertia that is not a body's, a wheel on a missing body, on a body welded to
        the ground or of radius <= 0, no moving joint.
    """
    joints, wheels = list(joints), list(wheels)
    if not joints:
        raise ValueError("Expected at least one joint.")
    checked = [_checked_joint(j, joint) for j, joint in enumerate(joints)]
    moving, host, shift = merge_fixed(checked)
    n = len(moving)
    if n == 0:
        raise ValueError("Expected at least one revolute or prismatic joint (the others are "
                         "fixed: nothing moves).")
    parent = [m["parent"] for m in moving]
    kind = [KINDS[m["kind"]] for m in moving]
    axis = [m["axis"] for m in moving]
    offset = [m["offset"] for m in moving]
    mass = [m["mass"] for m in moving]
    com = [m["com"] for m in moving]
    inertia = [m["inertia"] for m in moving]

    def moved(body, what, k):
        """The moving body carrying joint ``body``'s body, and the shift of its frame there."""
        if isinstance(body, bool) or not isinstance(body, (int, np.integer)) \
                or not 0 <= body < len(joints):
            raise ValueError(f"Expected {what}[{k}].body in [0, {len(joints)}), got {body!r}.")
        if host[body] < 0:
            raise ValueError(f"{what}[{k}] is on a body fixed to the ground: it cannot move.")
        return host[body], shift[body]

    blades, suslov, hulls = list(blades), list(suslov), list(hulls)
    if not wheels and not blades and not suslov and not hulls:
        raise ValueError("Expected at least one Wheel, EllipsoidHull, Blade or "
                         "SuslovConstraint.")
    disks = []
    for k, wheel in enumerate(wheels):
        if not isinstance(wheel, Wheel):
            raise TypeError(f"Expected wheels[{k}] to be a Wheel, got {wheel!r}.")
        body, d = moved(wheel.body, "wheels", k)
        r = float(wheel.radius)
        if not np.isfinite(r) or r <= 0:
            raise ValueError(f"Expected wheels[{k}].radius > 0, got {r!r}.")
        disks.append((body, _shifted(d, _vector(wheel.centre, f"wheels[{k}].centre")),
                      _vector(wheel.axis, f"wheels[{k}].axis", unit=True), r,
                      bool(wheel.held), bool(wheel.sideways)))
    shells = []
    for k, hull in enumerate(hulls):
        if not isinstance(hull, EllipsoidHull):
            raise TypeError(f"Expected hulls[{k}] to be an EllipsoidHull, got {hull!r}.")
        body, d = moved(hull.body, "hulls", k)
        axes = _vector(hull.semi_axes, f"hulls[{k}].semi_axes")
        if not np.all(axes > 0):
            raise ValueError(f"Expected hulls[{k}].semi_axes > 0, got {axes.tolist()}.")
        shells.append((body, _shifted(d, _vector(hull.centre, f"hulls[{k}].centre")), axes,
                       bool(hull.held)))
    knives = []
    for k, blade in enumerate(blades):
        if not isinstance(blade, Blade):
            raise TypeError(f"Expected blades[{k}] to be a Blade, got {blade!r}.")
        body, d = moved(blade.body, "blades", k)
        direction = _vector(blade.direction, f"blades[{k}].direction", unit=True)
        if np.hypot(direction[0], direction[1]) < 1e-6:
            raise ValueError(f"Expected blades[{k}].direction to be level (along the plane), "
                             f"got {direction.tolist()}.")
        knives.append((body, _shifted(d, _vector(blade.point, f"blades[{k}].point")),
                       direction))
    spins = []
    for k, item in enumerate(suslov):
        if not isinstance(item, SuslovConstraint):
            raise TypeError(f"Expected suslov[{k}] to be a SuslovConstraint, got {item!r}.")
        body, _ = moved(item.body, "suslov", k)
        spins.append((body, _vector(item.axis, f"suslov[{k}].axis", unit=True)))
    g = np.asarray(gravity, dtype=float)
    if g.ndim == 0:
        g = float(g)
        if not np.isfinite(g) or g < 0:
            raise ValueError(f"Expected `gravity` to be finite and >= 0, got {gravity!r}.")
    elif g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"Expected `gravity` to be a number (g along -z) or a finite "
                         f"3-vector, got {gravity!r}.")
    return {"parent": parent, "kind": kind, "axis": axis, "offset": offset, "mass": mass,
            "com": com, "inertia": inertia, "disks": disks, "gravity": g, "blades": knives,
            "suslov": spins, "hulls": shells}


def check_tree_ground(ground, arguments):
    """``ground`` (None, or a graph surface the tree's wheels may roll on), checked against
    the tree's validated ``arguments`` (:func:`tree_arguments`).

    Raises
    ------
    TypeError
        Not a ``Paraboloid`` or a ``HeightField`` (the graphs ``z = f(x, y)`` whose chart is
        ``(x, y)``).
    ValueError
        A rotated ground, one whose bodies are below it, a wheel not held, a blade, or gravity
        not along ``-z``.
    """
    if ground is None:
        return None
    from nhphys.surfaces import HeightField, Paraboloid

    if not isinstance(ground, (Paraboloid, HeightField)):
        raise TypeError(f"Expected `ground` to be None (the plane z = 0), a Paraboloid or a "
                        f"HeightField (a graph z = f(x, y)), got {ground!r}.")
    if not np.array_equal(ground.rotation, np.eye(3)):
        raise ValueError("Expected `ground` not rotated (a graph over the tree's (x, y); "
                         "move it with `center`).")
    if ground.orientation != 1:
        raise ValueError("Expected `ground` with its bodies above it (orientation "
                         "\"outward\", the side its normal points to).")
    for what, items in (("wheels", arguments["disks"]), ("hulls", arguments["hulls"])):
        for k, item in enumerate(items):
            if not item[4 if what == "wheels" else 3]:
                raise ValueError(f"{what}[{k}] is not held: on a curved ground every wheel and "
                                 "hull is held (its `held` set), its gap a constraint; the tree "
                                 "cannot keep it on the ground by construction.")
    if arguments["blades"]:
        raise ValueError("Blades slide on the plane z = 0: a tree with blades takes no curved "
                         "`ground`.")
    g = np.asarray(arguments["gravity"], dtype=float)
    if g.ndim != 0:
        if g[0] != 0.0 or g[1] != 0.0 or g[2] > 0.0:
            raise ValueError(f"On a curved `ground` gravity is along -z: expected a number g "
                             f"or the vector (0, 0, -g), got {g.tolist()}.")
        arguments["gravity"] = float(-g[2])
    return ground


def check_joint_forces(forces, names):
    """The validated tuple of :class:`~nhphys.forces.JointMotor` and
    :class:`~nhphys.forces.JointSpring` elements of a tree whose coordinates have the
    ``names`` (n,), and the index of each one's coordinate (the elements are not changed: one
    may act on two systems).

    Raises
    ------
    TypeError
        Another force element (articulated systems take joint motors and springs).
    ValueError
        An element on a joint the tree does not have (or a fixed one: it has no coordinate).
    """
    from nhphys.forces import JointMotor, JointSpring, check_forces

    forces = check_forces(forces)
    n = len(names)
    indices = []
    for i, element in enumerate(forces):
        if not isinstance(element, (JointMotor, JointSpring)):
            raise TypeError(f"Expected `forces[{i}]` to be a JointMotor or a JointSpring "
                            f"(articulated systems take joint elements), got {element!r}.")
        kind = type(element).__name__
        if isinstance(element.joint, str):
            if element.joint not in names:
                raise ValueError(f"{kind} on the joint {element.joint!r}, but the joints "
                                 f"are named {[x for x in names if x]}.")
            indices.append(names.index(element.joint))
        elif element.joint >= n:
            raise ValueError(f"{kind} on joint {element.joint}, but the tree has joints "
                             f"0 .. {n - 1}.")
        else:
            indices.append(element.joint)
    return forces, indices


class Articulated:
    """An articulated system: a joint tree with rolling wheels (see the module's notes).

    Parameters
    ----------
    joints : sequence of Joint
    wheels : sequence of Wheel
        The rolling disks.
    gravity : float or array_like, shape (3,)
        ``g`` along ``-z``, or the gravity vector: a ground plane tilted under gravity (a hill).
    name : str, optional
    forces : sequence of nhphys.forces.JointMotor, optional
        Drives on joints (constant, scheduled or speed-controlled); trajectories then carry
        their ``work``, and ``energy - work`` is conserved to the method's order.
    blades : sequence of Blade, optional
        Knife edges (a sleigh's runner, a trailer's).
    suslov : sequence of SuslovConstraint, optional
        Bodies whose angular velocity has no component along an axis fixed in them.
    hulls : sequence of EllipsoidHull, optional
        Convex bodies (ellipsoids, balls) rolling without slipping.
    ground : nhphys.surfaces.Paraboloid or nhphys.surfaces.HeightField, optional
        A curved ground for the wheels (a bowl, a saddle, a terrain): a graph ``z = f(x, y)``
        in the tree's frame (not rotated; its bodies above it), under gravity along ``-z``.
        Every wheel is then held (``held=True``: the tree does not keep it on a curved
        ground) and the tree has no blades. None: the plane ``z = 0``.

    Notes
    -----
    Integrators: ``DLA()`` (``"dla"``) and its compositions (order 2, 4, ...; the symmetric
    discrete Lagrange-d'Alembert step, kernel ``nhphys_ext.multibody``) and ``Reference``.
    Initial conditions ``q`` and ``v`` (each (n,)): every wheel and every blade's point on the
    ground and ``v`` on the constraints, to 1e-10. At most 12 joints, 4 wheels, 4 blades, 4 Suslov
    constraints, and 16 joints plus constraint rows.
    """

    initial_conditions = ARTICULATED

    def __init__(self, joints, wheels=(), gravity=9.81, name=None, forces=None, blades=(),
                 suslov=(), ground=None, hulls=()):
        self.joints, self.wheels, self.blades = tuple(joints), tuple(wheels), tuple(blades)
        self.suslov, self.hulls = tuple(suslov), tuple(hulls)
        self._tree_arguments = tree_arguments(joints, wheels, gravity, blades, suslov, hulls)
        self.ground = check_tree_ground(ground, self._tree_arguments)
        named = [joint.name for joint in joints if joint.name]
        # the coordinates' names: those of the moving joints (a fixed joint has none)
        self.joint_names = [joint.name for joint in joints if joint.kind != "fixed"]
        if len(set(named)) != len(named):
            raise ValueError(f"Expected the joints' names to be unique, got {named}.")
        from nhphys.forces import JointSpring

        self.forces, indices = check_joint_forces(forces, self.joint_names)
        self._motors = [(e, j) for e, j in zip(self.forces, indices)
                        if not isinstance(e, JointSpring)]
        self._tree_arguments["springs"] = [(j, e.stiffness, e.rest)
                                           for e, j in zip(self.forces, indices)
                                           if isinstance(e, JointSpring)]
        self.tree = self.joint_tree(_twin())
        self.name = name or type(self).__name__
        self.n = self.tree.n
        self.m = self.tree.m
        self._twin_drives = self.joint_drives(_twin())
        if self.n + self.m > 16 or self.n > 12 or len(self.tree.disks) > 4 \
                or len(self.tree.blades) > 4 or len(self.tree.suslov) > 4 \
                or len(self.tree.hulls) > 4:
            raise ValueError(
                f"Expected at most 12 joints, 4 wheels, 4 hulls, 4 blades, 4 Suslov constraints "
                f"and 16 joints plus constraint rows (the step's Newton problem), got {self.n} "
                f"joints, {len(self.tree.disks)} wheels, {len(self.tree.hulls)} hulls, "
                f"{len(self.tree.blades)} blades, {len(self.tree.suslov)} Suslov constraints "
                f"and {self.n} + {self.m}."
            )
        if self.m >= self.n:
            raise ValueError(f"The {self.m} constraint rows leave no motion to {self.n} joints: "
                             "expected fewer rows than joints.")

    def __repr__(self):
        return f"{self.name}(joints={self.n}, constraint rows={self.m})"

    def joint_tree(self, module):
        """The joint tree as ``module.JointTree`` (the kernel's or the twin's), with its ground
        evaluated by the same backend."""
        if self.ground is None:
            return module.JointTree(**self._tree_arguments)
        backend = "python" if module is _twin() else "cython"
        return module.JointTree(**self._tree_arguments,
                                ground=self.ground.with_backend(backend).kernel)

    def joint_drives(self, module):
        """The joint motors as ``module.JointDrives``, or None without any."""
        if not self._motors:
            return None
        from nhphys.forces import build_joint_drives

        motors, joints = zip(*self._motors)
        return build_joint_drives(motors, joints, module)

    # -- states -----------------------------------------------------------------------------
    def check_configuration(self, q):
        """``q`` (n,) as a float array, its wheels on the ground (to 1e-10 m) and the
        constraint rows independent there.

        Raises
        ------
        ValueError
            A wheel off the ground (named, with its height), a wheel lying flat, or dependent
            constraint rows.
        """
        q = np.asarray(q, dtype=float)
        if q.shape != (self.n,) or not np.all(np.isfinite(q)):
            raise ValueError(f"Expected `q` to be finite of shape ({self.n},), got {q!r}.")
        tilt = self.tree.tilt(q)
        if not tilt > 1e-3:
            raise ValueError("A wheel lies flat on the ground at `q` (its axis is along the "
                             "ground's normal).")
        gaps = self.tree.gaps(q) if self.tree.disks or self.tree.hulls else []
        for k, gap in enumerate(gaps):
            name = f"Wheel {k}" if k < len(self.tree.disks) else \
                f"Hull {k - len(self.tree.disks)}"
            if not np.isfinite(gap):
                raise ValueError(
                    f"{name}'s contact with the ground is not found at `q`: no point of it "
                    "touches the ground with the body on its side there (a ground curving "
                    "along the rim more tightly than the wheel, or a body far from it).")
            if abs(gap) > 1e-10:
                raise ValueError(f"{name} does not touch the ground at `q`: its lowest point "
                                 f"is {gap:.6g} m from it.")
        kin = self.tree.kinematics(q, np.zeros(self.n), bias=False)
        for k in range(len(self.tree.blades)):
            height = self.tree.blade_contact(kin, k)[0][2]
            if abs(height) > 1e-10:
                raise ValueError(f"Blade {k} does not touch the ground at `q`: its point is "
                                 f"{height:.6g} m from it.")
        A = self.tree.constraint_matrix(q)
        sv = np.linalg.svd(A, compute_uv=False)
        if sv[-1] <= 1e-10 * sv[0]:
            raise ValueError(
                f"The constraint rows are dependent at `q` (singular values "
                f"{np.array2string(sv, precision=3)}): two wheels constrain the same motion."
            )
        return q

    def rates(self, q, given):
        """The velocity (n,) on the constraints at ``q`` with the components ``given``
        (``{index: value}``, as many as the degrees of freedom, ``n - m``), the others solved
        from the constraint rows.

        Raises
        ------
        ValueError
            The wrong number of given components, or ones that do not fix the others.
        """
        q = np.asarray(q, dtype=float)
        given = {int(k): float(v) for k, v in dict(given).items()}
        if len(given) != self.n - self.m or not all(0 <= k < self.n for k in given):
            raise ValueError(f"Expected {self.n - self.m} given components (indices in [0, "
                             f"{self.n})), got {sorted(given)}.")
        A = self.tree.constraint_matrix(q)
        free = [i for i in range(self.n) if i not in given]
        fixed = sorted(given)
        v = np.zeros(self.n)
        v[fixed] = [given[k] for k in fixed]
        block = A[:, free]
        if np.linalg.matrix_rank(block) < len(free):
            raise ValueError(f"The components {fixed} do not fix the others through the "
                             "constraints; give another set.")
        v[free] = np.linalg.solve(block, -A[:, fixed] @ v[fixed])
        return v

    def state(self, q=None, v=None):
        """Validated ``(q, v)``: see :meth:`check_configuration`; ``v`` on the constraints to
        1e-10 relative."""
        if q is None or v is None:
            raise ValueError("Expected the initial conditions `q` and `v`.")
        q = self.check_configuration(q)
        v = np.asarray(v, dtype=float)
        if v.shape != (self.n,) or not np.all(np.isfinite(v)):
            raise ValueError(f"Expected `v` to be finite of shape ({self.n},), got {v!r}.")
        residual = self.tree.constraint_matrix(q) @ v
        if np.max(np.abs(residual)) > 1e-10 * max(1.0, np.max(np.abs(v))):
            raise ValueError(f"Expected `v` on the constraints A(q) v = 0, got A(q) v = "
                             f"{np.array2string(residual, precision=3)}; `rates` completes a "
                             "velocity.")
        return q, v

    # -- the continuous equations -------------------------------------------------------------
    def energy(self, q, v):
        """Kinetic plus gravitational energy."""
        return self.tree.energy(q, v)

    def residuals(self, q, v, kin=None):
        """``(|A v|_inf, the largest height of a wheel's lowest point or a blade's point above
        the ground; 0 without either)`` of a state (``kin``: its kinematics, if computed)."""
        kin = self.tree.kinematics(q, v, bias=False) if kin is None else kin
        A = self.tree.constraint_matrix(q, kin)  # the rows depend on the positions only
        heights = [0.0] + [self.tree.disk_contact(kin, k)[6]
                           for k in range(len(self.tree.disks))]
        heights += [self.tree.hull_contact(kin, k)[4] for k in range(len(self.tree.hulls))]
        heights += [self.tree.blade_contact(kin, k)[0][2] for k in range(len(self.tree.blades))]
        return float(np.max(np.abs(A @ v))), float(np.max(np.abs(heights)))

    def accelerations(self, q, v, t=0.0):
        """``dv/dt`` (n,) and the constraint forces (m,), with the joint motors at time
        ``t``."""
        drives = self._twin_drives
        Q = None if drives is None else drives.force(self.n, t, v)
        return self.tree.accelerations(q, v, Q)

    def reference_state(self, **conditions):
        """``(q, v, W)`` (2 n + 1,) from the keywords of :meth:`state`: ``W`` the motors'
        work, 0 at the start."""
        q, v = self.state(**conditions)
        return np.concatenate([q, v, [0.0]])

    def reference_rhs(self, t, y):
        """``d(q, v, W)/dt`` (2 n + 1,): ``dW/dt = Q . v``."""
        n = self.n
        q, v = y[:n], y[n:2 * n]
        drives = self._twin_drives
        Q = None if drives is None else drives.force(n, t, v)
        power = 0.0 if Q is None else Q @ v
        return np.concatenate([v, self.tree.accelerations(q, v, Q)[0], [power]])

    def reference_unpack(self, states, times=None):
        """``{"q", "v", "work"}`` of flat states (k, 2 n + 1)."""
        n = self.n
        return {"q": states[:, :n], "v": states[:, n:2 * n], "work": states[:, 2 * n]}

    def observables(self, saved):
        """``q``, ``v`` (k, n), ``energy``, ``work`` (of the joint motors), ``constraint_residual``
        (the larger of ``|A v|`` and the gaps) and ``contacts`` (k, wheels + hulls + blades, 3):
        the wheels' ground points, then the hulls', then the blades' points."""
        q = np.asarray(saved["q"], dtype=float)
        v = np.asarray(saved["v"], dtype=float)
        k = len(q)
        energy, residual = np.empty(k), np.empty(k)
        disks, hulls = len(self.tree.disks), len(self.tree.hulls)
        points = disks + hulls + len(self.tree.blades)
        contacts = np.empty((k, points, 3))
        for i in range(k):  # one evaluation of the tree per frame
            kin = self.tree.kinematics(q[i], v[i], bias=False)
            energy[i] = self.tree.energy(q[i], v[i], kin)
            residual[i] = max(self.residuals(q[i], v[i], kin))
            for w in range(disks):
                contacts[i, w] = self.tree.disk_contact(kin, w)[4]
            for w in range(hulls):
                contacts[i, disks + w] = self.tree.hull_contact(kin, w)[2]
            for w in range(len(self.tree.blades)):
                contacts[i, disks + hulls + w] = self.tree.blade_contact(kin, w)[0]
        work = saved.get("work")
        work = np.zeros(k) if work is None else np.asarray(work, dtype=float)
        return {"q": q, "v": v, "energy": energy, "work": work,
                "constraint_residual": residual, "contacts": contacts}
