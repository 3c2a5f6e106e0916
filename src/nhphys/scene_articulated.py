"""Articulated systems in a scene: a joint tree stepped as one system, its links shown as bodies.

:meth:`nhphys.Scene.add_articulated` places an :class:`~nhphys.systems.Articulated` system (a
:class:`~nhphys.systems.Bicycle`, a cart, a sleigh towing a trailer) in a scene, beside bodies
added with :meth:`~nhphys.Scene.add_body`. It is stepped as one system by its own integrator
(:class:`~nhphys.integrators.DLA` or a composition of it), with the scene's step. Each of its
*links* (the bodies of its tree that carry mass, a wheel, a blade or a part of its drawing) is a
body of the scene's trajectory and display, named ``"<system>.<link>"``, with the fields every
scene body has:

``position`` (3,)
    The link's centre of mass (its frame's origin when it has no mass).
``R`` (3, 3)
    The link's rotation, link frame to space.
``omega`` (3,)
    The link's angular velocity in its own frame.
``contact_point`` (3,)
    Its first wheel's ground point, else its first hull's, else its first blade's point, else
    the point of its ground below its centre of mass (the trails show where it went).
``energy``, ``work``, ``constraint_residual``
    The whole system's, the same on each of its links: a link's own energy is not conserved
    (its neighbours work on it through the joints), the system's is, up to its motors' work.

A tree on a curved ground of its own (``Articulated(..., ground=...)``: a bowl, a terrain) rides
it in the scene's frame; the ground is added to the scene's grounds.

A link's display mesh is in its frame, about its centre of mass: wheels as rims with two crossed
spokes (so that their spin shows), hulls as their ellipsoids, blades as thin plates, a system's ``outline_parts`` (the
bicycle's frame, fork and handlebar) as tubes, and otherwise a ball at the centre of mass (sized
by the mass) with a tube to each joint the link carries. Nothing here imports PyVista.

The tree's wheels roll on its plane ``z = 0`` under its gravity; in the scene that plane is a
:class:`~nhphys.surfaces.Plane` ground which fits the gravity, and every pose is carried there
by the rigid map ``x -> p + Q x`` of :func:`ground_frame` (the identity on the
level plane through the origin).
"""

from __future__ import annotations

import numpy as np

from nhphys import mesh_primitives as prim

WHEEL_COLOR = "#2c3e70"
BLADE_COLOR = "#6b6b6b"


def _rgb(color):
    return np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.uint8)


def default_ground(system, scene):
    """The plane an articulated system rides on when none is given: a plane of the scene on
    which its gravity fits, else a new one (``extent`` 25 m) through the origin, tilted so
    that the system's gravity is the scene's (a ``Bicycle(slope=...)``'s hill)."""
    from nhphys.surfaces import Plane

    for g in scene.grounds:
        if isinstance(g["surface"], Plane):
            try:
                ground_frame(system.tree.gravity_vector, scene.gravity, g["surface"])
                return g["surface"]
            except ValueError:
                pass
    gravity = system.tree.gravity_vector
    if not np.any(gravity):  # no gravity: any plane, the level one
        return Plane(extent=25.0)
    return Plane(normal=_turn_onto(gravity, np.array([0.0, 0.0, -1.0]))[:, 2], extent=25.0)


def _turn_onto(a, b):
    """The rotation (3, 3) of least angle taking the direction of ``a`` onto that of ``b``
    (the identity when they agree; a half turn about ``x`` or ``y`` when they are opposite)."""
    a = np.asarray(a, dtype=float) / np.linalg.norm(a)
    b = np.asarray(b, dtype=float) / np.linalg.norm(b)
    axis = np.cross(a, b)
    s, c = np.linalg.norm(axis), a @ b
    if s == 0.0:
        if c > 0:
            return np.eye(3)
        e = np.eye(3)[int(np.argmin(np.abs(a)))]
        u = np.cross(a, e) / np.linalg.norm(np.cross(a, e))
        return 2.0 * np.outer(u, u) - np.eye(3)
    k = axis / s
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def ground_frame(tree_gravity, g, plane):
    """Where an articulated system's frame sits in a scene: ``(Q (3, 3), p (3,))`` taking its
    coordinates ``x`` (wheels on ``z = 0``, gravity ``tree_gravity``) to ``p + Q x`` on
    ``plane``, so that ``Q tree_gravity`` is the scene's gravity ``(0, 0, -g)``.

    ``Q`` takes ``e_z`` to the plane's normal ``n`` and the tree's downhill direction (its
    gravity's part along the plane) to the scene's; on a level plane, and for a tree whose
    gravity is along ``-z`` on a level plane, ``Q`` is the identity. ``p`` is the plane's point.

    Raises
    ------
    ValueError
        The plane does not carry the system: its slope differs from the system's (``|g . n|``
        against the tree's ``-g_z``), its normal points down, or its bodies are on its other
        side (``orientation="inward"``).
    """
    gt = np.asarray(tree_gravity, dtype=float)
    gw = np.array([0.0, 0.0, -g])
    n = plane.unit_normal
    size = max(g, np.linalg.norm(gt), 1e-300)
    if plane.orientation != 1 or not n[2] > 0:
        raise ValueError("its wheels roll on top of a plane whose normal points up and whose "
                         "bodies are on the side it points to; expected such a `ground`.")
    if abs(np.linalg.norm(gt) - g) > 1e-12 * size or abs(gt[2] - gw @ n) > 1e-12 * size:
        raise ValueError(
            f"its gravity {gt.tolist()} does not fit the plane with normal {n.tolist()} under "
            f"the scene's gravity {gw.tolist()}: the normal's part of gravity must be the "
            f"system's z part (a Bicycle(slope=s) rides a plane tilted by s, the default "
            f"ground; a level system a level plane)."
        )
    downhill_t = gt - gt[2] * np.array([0.0, 0.0, 1.0])
    downhill_w = gw - (gw @ n) * n
    if np.linalg.norm(downhill_t) <= 1e-12 * size:  # level: the tree's x, y as the plane's
        Q = _turn_onto([0.0, 0.0, 1.0], n)
    else:
        u_t = downhill_t / np.linalg.norm(downhill_t)
        u_w = downhill_w / np.linalg.norm(downhill_w)
        F_t = np.column_stack([u_t, np.cross([0.0, 0.0, 1.0], u_t), [0.0, 0.0, 1.0]])
        F_w = np.column_stack([u_w, np.cross(n, u_w), n])
        Q = F_w @ F_t.T
    return Q, plane.point0.copy()


class SceneArticulated:
    """An articulated system placed in a scene: its system, initial conditions, links and looks.

    Made by :meth:`nhphys.Scene.add_articulated`.

    Attributes
    ----------
    system : nhphys.systems.Articulated
    conditions : dict
        Its checked initial conditions under their canonical names (:mod:`nhphys.conditions`).
    name : str
    color : str
        Of its frame parts (``#rrggbb``).
    integrator : integrator
        Its own (the scene's integrator does not apply to it).
    links : list of int
        The tree's bodies shown and recorded, in tree order.
    names : list of str
        The links' names in the scene (``"<name>.<link>"``).
    """

    def __init__(self, system, conditions, name, color, integrator, frame=None):
        self.system = system
        # where the system's frame sits in the scene: x -> p + Q x (see ground_frame)
        self.frame = (np.eye(3), np.zeros(3)) if frame is None else frame
        self.conditions = conditions
        self.name = name
        self.color = color
        self.integrator = integrator
        tree = system.tree
        self._wheel_of = {}
        for k, disk in enumerate(tree.disks):
            self._wheel_of.setdefault(disk[0], k)
        self._hull_of = {}  # indices into the contacts: the disks', the hulls', the blades'
        for k, hull in enumerate(tree.hulls):
            self._hull_of.setdefault(hull[0], len(tree.disks) + k)
        self._blade_of = {}
        for k, blade in enumerate(tree.blades):
            self._blade_of.setdefault(blade[0], len(tree.disks) + len(tree.hulls) + k)
        parts = system.outline_parts(rims=False) if hasattr(system, "outline_parts") else {}
        self._outline = {}
        for part, (body, points) in parts.items():
            self._outline.setdefault(body, []).append(np.asarray(points, dtype=float))
        self.links = [b for b in range(tree.n)
                      if tree.mass[b] > 0 or tree.inertia[b].any() or b in self._wheel_of
                      or b in self._hull_of or b in self._blade_of or b in self._outline]
        labels = getattr(system, "link_labels", {})
        self.names = [f"{name}.{labels.get(b) or system.joint_names[b] or f'body{b}'}"
                      for b in self.links]
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"System {name!r}: two of its links would have one name "
                             f"({self.names}); name its joints.")
        self._com = np.array([tree.com[b] for b in self.links], dtype=float).reshape(-1, 3)

    def __repr__(self):
        return f"<SceneArticulated {self.name!r}: {self.system!r}, {len(self.links)} links>"

    # -- fields -------------------------------------------------------------------------------
    def fields(self, saved):
        """The scene's body fields of the links from the system's frames (``q``, ``v``,
        ``energy``, ``work``, ``constraint_residual``, ``contacts``): arrays with a link axis
        after the time axis, ``position`` (k, L, 3), ``R`` (k, L, 3, 3), ..."""
        tree = self.system.tree
        q = np.asarray(saved["q"], dtype=float)
        v = np.asarray(saved["v"], dtype=float)
        k, L = len(q), len(self.links)
        R = np.empty((k, L, 3, 3))
        position, omega, contact = (np.empty((k, L, 3)) for _ in range(3))
        for i in range(k):
            kin = tree.kinematics(q[i], v[i], bias=False)
            R[i] = kin["R"][self.links]
            position[i] = kin["o"][self.links] + np.einsum("lij,lj->li", R[i], self._com)
            omega[i] = np.einsum("lji,lj->li", R[i], kin["omega"][self.links])
        contacts = np.asarray(saved["contacts"], dtype=float).reshape(
            k, len(tree.disks) + len(tree.hulls) + len(tree.blades), 3)
        for j, b in enumerate(self.links):
            index = self._wheel_of.get(b, self._hull_of.get(b, self._blade_of.get(b)))
            if index is None:
                contact[:, j, :2], contact[:, j, 2] = position[:, j, :2], 0.0
                if self.system.ground is not None:  # the ground's point below
                    contact[:, j] = self.system.ground.point(position[:, j, :2]
                                                             - self.system.ground.center[:2])
            else:
                contact[:, j] = contacts[:, index]

        Q, p = self.frame
        if not (np.array_equal(Q, np.eye(3)) and not p.any()):  # onto its ground in the scene
            position = p + position @ Q.T
            contact = p + contact @ Q.T
            R = np.einsum("ij,kljm->klim", Q, R)

        def repeat(name):
            values = np.asarray(saved[name], dtype=float)
            return np.repeat(values[:, None], L, axis=1)

        return {"position": position, "R": R, "omega": omega, "contact_point": contact,
                "energy": repeat("energy"), "work": repeat("work"),
                "constraint_residual": repeat("constraint_residual")}

    # -- display ------------------------------------------------------------------------------
    def link_mesh(self, j):
        """``(points (m, 3), faces (k, 3), colors (m, 3) uint8)`` of link ``j`` (an index into
        :attr:`links`), in its frame about its centre of mass."""
        tree = self.system.tree
        b = self.links[j]
        size = max([disk[3] for disk in tree.disks] + [float(np.max(h[2])) for h in tree.hulls]
                   + [0.1])
        parts = []  # (points, faces, colour)
        for body, centre, axis, radius, *_ in tree.disks:
            if body != b:
                continue
            u, w = prim._frame(axis)
            rim = prim.torus(centre, axis, radius, 0.05 * radius)
            spokes = prim.merge([prim.cylinder(np.asarray(centre) - radius * d,
                                               np.asarray(centre) + radius * d, 0.025 * radius, 8)
                                 for d in (u, w)])
            parts += [(rim, WHEEL_COLOR), (spokes, WHEEL_COLOR)]
        for body, centre, axes, _ in tree.hulls:
            if body != b:
                continue
            ball, faces = prim.sphere(np.zeros(3), 1.0, rings=16, sectors=32)
            parts.append(((ball * axes + centre, faces), self.color))
        for body, point, direction in tree.blades:
            if body != b:
                continue
            plate = prim.box([-1.5 * size, -0.01 * size, 0.0], [1.5 * size, 0.01 * size,
                                                                  0.4 * size])
            angle = np.arctan2(direction[1], direction[0])
            c, s = np.cos(angle), np.sin(angle)
            turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
            parts.append(((plate[0] @ turn.T + np.asarray(point), plate[1]), BLADE_COLOR))
        if b in self._outline:
            parts += [(prim.tube(points, 0.045 * size), self.color)
                      for points in self._outline[b]]
        elif b not in self._wheel_of and b not in self._hull_of:
            heaviest = max(float(np.max(tree.mass)), 1e-12)
            if tree.mass[b] > 0:
                radius = size * (0.15 + 0.25 * (tree.mass[b] / heaviest) ** (1 / 3))
                parts.append((prim.sphere(tree.com[b], radius), self.color))
            for child in range(tree.n):
                if tree.parent[child] == b and np.linalg.norm(tree.offset[child]) > 0:
                    parts.append((prim.tube([np.zeros(3), tree.offset[child]], 0.06 * size),
                                  self.color))
        if not parts:  # a link with inertia only: a small ball, so that it is seen
            parts.append((prim.sphere(tree.com[b], 0.15 * size), self.color))
        points, faces = prim.merge([mesh for mesh, _ in parts])
        colors = np.concatenate([np.repeat(_rgb(color)[None], len(mesh[0]), axis=0)
                                 for mesh, color in parts])
        return points - self._com[j], faces, colors

    def display_items(self):
        """The scene display's body entries of the links (see
        :class:`~nhphys.scene_display.SceneDisplay`)."""
        items = []
        for j, name in enumerate(self.names):
            points, faces, colors = self.link_mesh(j)
            items.append({"name": name, "color": self.color, "points": points, "faces": faces,
                          "colors": colors, "contact": "Articulated"})
        return items
