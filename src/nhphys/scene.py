"""``Scene``: grounds, bodies and their contacts, simulated together and shown together.

A scene holds static *grounds* (surfaces, with a colour) and *bodies*, each with exactly one
*contact* that turns it into a mechanical system:

* :class:`Rolling` ``(ground)``: the body's shape rolls without slipping on a ground surface
  (:class:`nhphys.systems.RollingBody`);
* :class:`KnifeEdge` ``(plane, offset=...)``: the body slides on a plane on a blade that cannot
  move sideways (:class:`nhphys.systems.KnifeEdge`);
* :class:`Suslov` ``(axis, pivot=...)``: the body turns about its centre of mass, held at a fixed
  pivot, with no angular velocity along a body axis (:class:`nhphys.systems.Suslov`).

Bodies are independent: **they do not collide with each other**, nor with grounds other than
their own contact's, and several bodies in one scene are simply several systems stepped side by
side with the same time step. :meth:`Scene.simulate` returns one :class:`~nhphys.Trajectory`
holding every body, with a body axis after the time axis (``position`` (n, B, 3), ``R``
(n, B, 3, 3), ...), and the scene's display description, so that a saved run can be shown again
without the script that made it.

Nothing here imports PyVista: display meshes are NumPy arrays (``Surface.mesh_arrays``) and
:mod:`nhphys.viz` turns them into actors.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from nhphys import _backend
from nhphys._validation import as_float_array, as_positive_scalar, as_rotation, as_vector3
from nhphys.errors import NewtonError
from nhphys.trajectory import TrajectoryWriter

BODY_FIELDS = ("position", "R", "omega", "contact_point", "energy", "constraint_residual")
INTEGRATOR_NAMES = ("exp", "cayley", "newmark", "dla", "reference")
PALETTE = ("#d1495b", "#2e86ab", "#edae49", "#66a182", "#8e6c8a", "#00798c", "#f18f01",
           "#6a4c93")
GROUND_COLOR = "#c9c3b8"
CHUNK_STEPS = 20_000  # steps per body per call: bounds the latency of progress and Ctrl-C


def integrator_from_name(value, name="integrator"):
    """An integrator object from a name (``"exp"``, ``"cayley"``, ``"newmark"``, ``"dla"``,
    ``"reference"``) or the object itself; ``None`` stays ``None`` (each contact's default)."""
    if value is None or not isinstance(value, str):
        if value is not None and not hasattr(value, "start"):
            raise TypeError(
                f"Expected `{name}` to be an integrator from nhphys.integrators or one of "
                f"{INTEGRATOR_NAMES}, got {value!r}."
            )
        return value
    from nhphys import integrators

    key = value.strip().lower()
    if key in ("exp", "cayley"):
        return integrators.Retraction(key)
    if key == "newmark":
        return integrators.Newmark()
    if key == "dla":
        return integrators.DLA()
    if key == "reference":
        return integrators.Reference()
    raise ValueError(f"Expected `{name}` to be one of {INTEGRATOR_NAMES}, got {value!r}.")


def as_orientation(value, name="orientation"):
    """A rotation from a 3x3 matrix or a unit quaternion ``(w, x, y, z)``; ``None`` -> identity."""
    if value is None:
        return np.eye(3)
    arr = as_float_array(value, name)
    if arr.shape == (4,):
        norm = np.linalg.norm(arr)
        if abs(norm - 1.0) > 1e-9:
            raise ValueError(f"Expected `{name}` to be a unit quaternion, got norm {norm:.12g}.")
        w, x, y, z = arr
        return np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ])
    return as_rotation(arr, name)


def _as_name(value, name):
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"Expected `{name}` to be a non-empty string, got {value!r}.")
    return value.strip()


def _as_color(value, name="color"):
    """A colour as ``#rrggbb`` (from a name matplotlib knows, a hex string or an RGB triple)."""
    if isinstance(value, str) and len(value) == 7 and value.startswith("#"):
        try:
            int(value[1:], 16)
            return value.lower()
        except ValueError:
            pass
    if not isinstance(value, str):
        rgb = as_float_array(value, name)
        if rgb.shape != (3,) or np.any(rgb < 0) or np.any(rgb > 1):
            raise ValueError(f"Expected `{name}` to be 3 numbers in [0, 1], got {value!r}.")
        return "#" + "".join(f"{round(255 * c):02x}" for c in rgb)
    from matplotlib import colors  # only for named colours; not imported by `import nhphys`

    try:
        return colors.to_hex(value)
    except ValueError:
        raise ValueError(f"Expected `{name}` to be a colour name or '#rrggbb', got {value!r}.") \
            from None


# -- display meshes (NumPy only) -------------------------------------------------------------

def mesh_from(value, name="mesh"):
    """``(points (m, 3), faces (k, 3))`` from a PyVista mesh or a ``(points, faces)`` pair."""
    if hasattr(value, "points") and hasattr(value, "faces"):
        poly = value.triangulate() if hasattr(value, "triangulate") else value
        points = np.asarray(poly.points, dtype=float)
        flat = np.asarray(poly.faces, dtype=np.int64)
        if len(flat) % 4 or np.any(flat[::4] != 3):
            raise ValueError(f"Expected `{name}` to triangulate into triangles only.")
        return points, flat.reshape(-1, 4)[:, 1:].copy()
    try:
        points, faces = value
    except (TypeError, ValueError):
        raise TypeError(
            f"Expected `{name}` to be a PyVista mesh or a (points, faces) pair, got {value!r}."
        ) from None
    points = as_float_array(points, f"{name} points", (3,)).reshape(-1, 3)
    faces = np.asarray(faces)
    if faces.ndim != 2 or faces.shape[1] != 3 or not np.issubdtype(faces.dtype, np.integer):
        raise ValueError(f"Expected `{name}` faces to be integers of shape (k, 3), got "
                         f"{faces.shape} {faces.dtype}.")
    if faces.size and (faces.min() < 0 or faces.max() >= len(points)):
        raise ValueError(f"Expected `{name}` faces to index its {len(points)} points.")
    return points, faces.astype(np.int64)


def two_tone(points, color, center=None):
    """Per-vertex RGB (m, 3) uint8: ``color`` with a darker shade on alternate octants, so that
    a spinning or rolling body visibly turns."""
    base = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
    p = points - (points.mean(axis=0) if center is None else center)
    odd = (p[:, 0] > 0) ^ (p[:, 1] > 0) ^ (p[:, 2] > 0)
    rgb = np.where(odd[:, None], 0.72 * base, 0.3 * 255 + 0.7 * base)
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)


class SceneDisplay:
    """What a viewer needs to draw a scene: meshes (body meshes in body frames) and colours.

    Built by :meth:`Scene.display`, stored in every trajectory that :meth:`Scene.simulate`
    returns (``meta["scene"]`` and its static arrays), and read back by
    :meth:`SceneDisplay.from_trajectory`, so a saved run can be shown without its scene file.

    Attributes
    ----------
    grounds, bodies : list of dict
        Each with ``name``, ``color`` (``#rrggbb``), ``points`` (m, 3), ``faces`` (k, 3) and
        optionally ``colors`` (m, 3) uint8; bodies also have ``contact`` (a short description)
        and, for pivots, ``pivot`` (3,).
    """

    def __init__(self, grounds, bodies, name="scene", camera=None):
        self.grounds = grounds
        self.bodies = bodies
        self.name = name
        self.camera = None if camera is None else np.asarray(camera, dtype=float)

    @property
    def body_names(self):
        return [b["name"] for b in self.bodies]

    def to_meta(self):
        """``(meta dict, static arrays dict)``: JSON description and the mesh arrays."""
        static = {}
        desc = {"name": self.name, "grounds": [], "bodies": []}
        if self.camera is not None:
            desc["camera"] = self.camera.tolist()
        for kind, items in (("grounds", self.grounds), ("bodies", self.bodies)):
            for i, item in enumerate(items):
                key = f"{kind}.{i}"
                entry = {k: v for k, v in item.items() if k not in ("points", "faces", "colors")}
                for k in ("pivot",):
                    if k in entry:
                        entry[k] = np.asarray(entry[k]).tolist()
                entry["mesh"] = key
                desc[kind].append(entry)
                static[f"{key}.points"] = np.asarray(item["points"], dtype=float)
                static[f"{key}.faces"] = np.asarray(item["faces"], dtype=np.int64)
                if item.get("colors") is not None:
                    static[f"{key}.colors"] = np.asarray(item["colors"], dtype=np.uint8)
        return desc, static

    @classmethod
    def from_trajectory(cls, trajectory):
        """The display stored in a trajectory made by :meth:`Scene.simulate`.

        For a trajectory of a single system (from :func:`nhphys.simulate`), a plain display:
        one grey box per body.
        """
        desc = trajectory.meta.get("scene")
        if desc is None:
            return cls.default_for(trajectory)
        static = trajectory.static
        out = {}
        for kind in ("grounds", "bodies"):
            out[kind] = []
            for entry in desc[kind]:
                key = entry["mesh"]
                item = {k: v for k, v in entry.items() if k != "mesh"}
                item["points"] = static[f"{key}.points"]
                item["faces"] = static[f"{key}.faces"]
                item["colors"] = static.get(f"{key}.colors")
                if "pivot" in item:
                    item["pivot"] = np.asarray(item["pivot"], dtype=float)
                out[kind].append(item)
        return cls(out["grounds"], out["bodies"], desc.get("name", "scene"), desc.get("camera"))

    @classmethod
    def default_for(cls, trajectory):
        """A box per body (and a floor), for trajectories without a stored scene."""
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)],
                           dtype=float) * np.array([0.3, 0.2, 0.1])
        faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                          [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
        names = trajectory.body_names
        bodies = [{"name": n, "color": PALETTE[i % len(PALETTE)], "points": corners,
                   "faces": faces, "colors": two_tone(corners, PALETTE[i % len(PALETTE)]),
                   "contact": "none"} for i, n in enumerate(names)]
        return cls([], bodies, trajectory.meta.get("system", "trajectory"))


# -- contacts --------------------------------------------------------------------------------

class Contact:
    """Base of the contacts: builds a body's system and reads its frames in common fields."""

    default_integrator = "exp"
    ground = None

    def system(self, body, gravity):
        raise NotImplementedError

    def initial_conditions(self, body, system, conditions):
        """Validated keyword arguments for ``integrator.start`` from natural terms."""
        raise NotImplementedError

    def fields(self, body, system, saved):
        """Common fields (``BODY_FIELDS``) from the system's saved frames."""
        raise NotImplementedError

    def integrator(self, system):
        return integrator_from_name(self.default_integrator)

    def display_extra(self):
        return {}


def _take(conditions, allowed, body_name):
    unknown = set(conditions) - set(allowed)
    if unknown:
        raise TypeError(
            f"Unexpected initial condition(s) {sorted(unknown)} for body {body_name!r}; "
            f"expected some of {list(allowed)}."
        )
    return dict(conditions)


class Suslov(Contact):
    """The body turns about its centre of mass, held at ``pivot``, with ``axis . Omega = 0``.

    Parameters
    ----------
    axis : array_like, shape (3,)
        Nonzero body-fixed vector (body frame).
    pivot : array_like, shape (3,)
        Where the centre of mass is held, in space.

    Initial conditions: ``orientation`` (3x3 rotation or quaternion (w, x, y, z), default the
    identity) and exactly one of ``omega`` (body angular velocity, satisfying the constraint)
    and ``momentum`` (body angular momentum; its part along the constraint force is ignored).
    """

    def __init__(self, axis, pivot=(0.0, 0.0, 0.0)):
        self.axis = as_vector3(axis, "axis")
        if not np.linalg.norm(self.axis) > 0:
            raise ValueError(f"Expected `axis` to be a nonzero vector, got {self.axis}.")
        self.pivot = as_vector3(pivot, "pivot")

    def __repr__(self):
        return f"Suslov(axis={self.axis.tolist()}, pivot={self.pivot.tolist()})"

    def system(self, body, gravity):
        from nhphys.systems import Suslov as SuslovSystem

        return SuslovSystem(body.inertia, self.axis)

    def initial_conditions(self, body, system, conditions):
        c = _take(conditions, ("orientation", "omega", "momentum"), body.name)
        R0 = as_orientation(c.get("orientation"))
        omega0 = system.initial_omega(omega0=c.get("omega"), momentum0=c.get("momentum"))
        return {"R0": R0, "omega0": omega0}

    def fields(self, body, system, saved):
        n = len(saved["R"])
        pivot = np.broadcast_to(self.pivot, (n, 3)).copy()
        return {"position": pivot, "R": saved["R"], "omega": saved["omega"],
                "contact_point": pivot.copy(), "energy": saved["energy"],
                "constraint_residual": saved["constraint_residual"]}

    def display_extra(self):
        return {"pivot": self.pivot}


class KnifeEdge(Contact):
    """The body slides on a plane on a blade along its body ``x`` axis that cannot move sideways.

    The body's ``z`` axis stays along the plane's normal; the blade touches the plane under the
    body at its lowest point, and the centre of mass is ``offset`` ahead of the contact point
    along the blade. On an inclined plane gravity pulls the body downhill.

    Parameters
    ----------
    plane : nhphys.surfaces.Plane
        The ground (added to the scene if it is not there yet); the body is on the side of its
        normal (times its orientation).
    offset : float
        Distance of the centre of mass ahead of the blade's contact point.

    Initial conditions: ``position`` (x, y) of the contact point in the plane's coordinates
    (``x`` downhill on an inclined plane, the space ``x`` axis on a level one), ``heading`` (angle
    of the blade from the plane's ``x`` axis), ``velocity`` (speed of the contact point along the
    blade) and ``omega`` (turning rate), all default 0.
    """

    def __init__(self, plane, offset=0.0):
        from nhphys.surfaces import Plane

        if not isinstance(plane, Plane):
            raise TypeError(f"Expected `plane` to be an nhphys.surfaces.Plane, got {plane!r}.")
        if isinstance(offset, bool) or not isinstance(offset, numbers.Real) \
                or not np.isfinite(offset):
            raise TypeError(f"Expected `offset` to be a finite real number, got {offset!r}.")
        self.ground = plane
        self.offset = float(offset)
        n = plane.unit_normal * plane.orientation
        up = np.array([0.0, 0.0, 1.0])
        cos_incline = float(np.clip(n @ up, -1.0, 1.0))
        if cos_incline < 0:
            raise ValueError(
                f"Expected the plane's normal to point up (the body rests on it), got {n.tolist()}."
            )
        self.incline = float(np.arccos(cos_incline))
        downhill = -(up - cos_incline * n)
        if np.linalg.norm(downhill) < 1e-12:
            e1 = np.array([1.0, 0.0, 0.0]) - n[0] * n
        else:
            e1 = downhill
        e1 = e1 / np.linalg.norm(e1)
        self.frame = np.column_stack([e1, np.cross(n, e1), n])  # plane coordinates -> space
        self.origin = plane.point0
        self._heights = {}

    def __repr__(self):
        return f"KnifeEdge(plane={self.ground!r}, offset={self.offset})"

    @property
    def default_integrator(self):
        return "exp" if self.incline == 0.0 else "newmark"

    def integrator(self, system):
        return integrator_from_name("exp" if system.level else "newmark")

    def system(self, body, gravity):
        from nhphys.systems import KnifeEdge as KnifeEdgeSystem

        return KnifeEdgeSystem(body.mass, body.inertia[2, 2], self.offset, incline=self.incline,
                               gravity=gravity)

    def height(self, body):
        """Height of the centre of mass above the plane: the depth of the shape's lowest point."""
        key = id(body)
        if key not in self._heights:
            self._heights[key] = self._height(body)
        return self._heights[key]

    def _height(self, body):
        if body.shape is None:
            return 0.0
        if getattr(body.shape, "strictly_convex", False):
            low = body.shape.point(body.shape.support_point([0.0, 0.0, -1.0]))
            return float(body.com[2] - low[2])
        points = body.shape.mesh_arrays(64)[0]
        return float(body.com[2] - points[:, 2].min())

    def initial_conditions(self, body, system, conditions):
        c = _take(conditions, ("position", "heading", "velocity", "omega"), body.name)
        xy = as_float_array(c.get("position", (0.0, 0.0)), "position")
        if xy.shape != (2,):
            raise ValueError(f"Expected `position` to have shape (2,), got {xy.shape}.")
        heading = float(as_float_array(c.get("heading", 0.0), "heading"))
        pose0, v0, w0 = system.initial_state([xy[0], xy[1], heading], c.get("velocity", 0.0),
                                             c.get("omega", 0.0))
        return {"pose0": pose0, "velocity0": v0, "omega0": w0}

    def fields(self, body, system, saved):
        pose = saved["pose"]
        x, y, th = pose[:, 0], pose[:, 1], pose[:, 2]
        c, s = np.cos(th), np.sin(th)
        E, o = self.frame, self.origin
        zeros = np.zeros_like(th)
        contact_local = np.stack([x, y, zeros], -1)
        com_local = np.stack([x + self.offset * c, y + self.offset * s,
                              np.full_like(th, self.height(body))], -1)
        turn = np.zeros((len(th), 3, 3))
        turn[:, 0, 0], turn[:, 0, 1], turn[:, 1, 0], turn[:, 1, 1] = c, -s, s, c
        turn[:, 2, 2] = 1.0
        omega = np.stack([zeros, zeros, saved["omega"]], -1)
        return {"position": o + com_local @ E.T, "R": E @ turn, "omega": omega,
                "contact_point": o + contact_local @ E.T, "energy": saved["energy"],
                "constraint_residual": saved["constraint_residual"]}


class Rolling(Contact):
    """The body's shape rolls without slipping on ``ground`` (:class:`nhphys.systems.RollingBody`).

    Parameters
    ----------
    ground : nhphys.surfaces.Surface
        Added to the scene if it is not there yet.

    Initial conditions: ``position`` (a point on the ground where the body touches it),
    ``orientation`` (3x3 rotation or quaternion (w, x, y, z)), ``omega`` (body angular
    velocity); other keywords go to the system unchanged.
    """

    def __init__(self, ground):
        if not hasattr(ground, "mesh_arrays"):
            raise TypeError(f"Expected `ground` to be an nhphys.surfaces Surface, got {ground!r}.")
        self.ground = ground

    def __repr__(self):
        return f"Rolling(ground={self.ground!r})"

    def system(self, body, gravity):
        from nhphys import systems

        if not hasattr(systems, "RollingBody"):
            raise NotImplementedError("nhphys.systems.RollingBody is not available in this build.")
        if body.shape is None:
            raise ValueError(f"Expected body {body.name!r} to have a `shape` to roll on.")
        return systems.RollingBody(body, self.ground, gravity=gravity)

    def initial_conditions(self, body, system, conditions):
        c = dict(conditions)
        out = {}
        if "orientation" in c:
            out["R0"] = as_orientation(c.pop("orientation"))
        if "omega" in c:
            out["omega0"] = as_vector3(c.pop("omega"), "omega")
        if "position" in c:
            out["ground_point"] = as_vector3(c.pop("position"), "position")
        out.update(c)
        if hasattr(system, "place"):  # a body that cannot be put on the ground fails here
            system.place(out.get("R0", np.eye(3)), out.get("omega0", np.zeros(3)),
                         out.get("ground_point", np.zeros(3)))
        return out

    def fields(self, body, system, saved):
        return {k: saved[k] for k in BODY_FIELDS}


# -- the scene -------------------------------------------------------------------------------

class SceneBody:
    """A body placed in a scene: the body, its contact, system, initial conditions and looks."""

    def __init__(self, body, contact, system, conditions, name, color, mesh, integrator):
        self.body = body
        self.contact = contact
        self.system = system
        self.conditions = conditions
        self.name = name
        self.color = color
        self.mesh = mesh
        self.integrator = integrator

    def __repr__(self):
        return f"<SceneBody {self.name!r}: {self.contact!r}>"


class Scene:
    """Grounds and bodies with contacts, simulated together and shown together.

    Bodies do not collide with each other: each is an independent system (see the module
    documentation).

    Parameters
    ----------
    gravity : float
        ``g`` >= 0, pulling along ``-z``.
    name : str
        Used for window titles and default output names.
    camera : array_like, shape (3,), optional
        The direction from which views look at the bodies (default ``(1, -1.5, 1.5)``: from
        the front right, 45 degrees up).

    Examples
    --------
    >>> import nhphys
    >>> from nhphys.scene import Scene, Suslov
    >>> from nhphys.surfaces import Ellipsoid
    >>> scene = Scene()
    >>> top = nhphys.RigidBody(1.0, [1.0, 2.0, 3.0], Ellipsoid([0.5, 0.35, 0.2]), name="top")
    >>> _ = scene.add_body(top, Suslov(axis=[0, 0, 1], pivot=[0, 0, 1]), omega=[1.0, 0.5, 0.0])
    >>> traj = scene.simulate(1.0, 0.01)
    >>> traj.R.shape, traj.body_names
    ((101, 1, 3, 3), ['top'])
    """

    def __init__(self, gravity=9.81, name="scene", camera=None):
        if isinstance(gravity, bool) or not isinstance(gravity, numbers.Real) \
                or not np.isfinite(gravity) or gravity < 0:
            raise ValueError(f"Expected `gravity` to be a finite number >= 0, got {gravity!r}.")
        self.gravity = float(gravity)
        self.name = _as_name(name, "name")
        self.camera = None
        if camera is not None:
            self.camera = as_vector3(camera, "camera")
            if not np.linalg.norm(self.camera) > 0:
                raise ValueError(f"Expected `camera` to be a nonzero vector, got {self.camera}.")
        self.grounds = []
        self.bodies = []

    def __repr__(self):
        return (f"<Scene {self.name!r}: {len(self.grounds)} ground(s), "
                f"{len(self.bodies)} body(ies)>")

    # -- building ----------------------------------------------------------------------------
    def add_ground(self, surface, color=GROUND_COLOR, name=None, resolution=96, opacity=1.0):
        """Add a static surface; returns it (pass it to a contact).

        Parameters
        ----------
        surface : nhphys.surfaces.Surface
            Placed by its own parameters (``center``, ``rotation``, ``point``, ``normal``).
        color : str or (3,) floats
        name : str, optional
        resolution : int
            Vertices along the longest direction of the display mesh.
        opacity : float
            In (0, 1].
        """
        if not hasattr(surface, "mesh_arrays"):
            raise TypeError(f"Expected `surface` to be an nhphys.surfaces Surface, got {surface!r}.")
        for g in self.grounds:
            if g["surface"] is surface:
                return surface
        name = f"ground{len(self.grounds)}" if name is None else _as_name(name, "name")
        opacity = as_positive_scalar(opacity, "opacity")
        if opacity > 1:
            raise ValueError(f"Expected `opacity` to be in (0, 1], got {opacity}.")
        self.grounds.append({"surface": surface, "name": name, "color": _as_color(color),
                             "resolution": resolution, "opacity": opacity})
        return surface

    def add_body(self, body, contact=None, *, name=None, color=None, mesh=None, integrator=None,
                 resolution=48, **initial_conditions):
        """Add a body with its contact and initial conditions (in the contact's natural terms).

        Parameters
        ----------
        body : nhphys.RigidBody
            Mass, inertia about the centre of mass, shape.
        contact : Rolling, KnifeEdge or Suslov
            Required: a body without a contact is an error.
        name : str, optional
            Default: the body's name, else ``body<i>``; names are unique in a scene.
        color : str or (3,) floats, optional
        mesh : pyvista mesh or (points, faces), optional
            Display mesh in the shape frame, instead of the shape's.
        integrator : str or integrator, optional
            For this body only (overrides :meth:`simulate`'s).
        resolution : int
            Of the shape's display mesh.
        **initial_conditions
            See the contact's documentation (e.g. ``omega=...`` for :class:`Suslov`).

        Returns
        -------
        SceneBody
        """
        for attr in ("mass", "inertia"):
            if not hasattr(body, attr):
                raise TypeError(f"Expected `body` to be an nhphys.RigidBody, got {body!r}.")
        if contact is None:
            raise ValueError(
                f"Expected a `contact` for body {getattr(body, 'name', None) or body!r}: every "
                "body needs one (Rolling(ground), KnifeEdge(plane), Suslov(axis)); bodies do "
                "not collide with each other or with grounds they have no contact with."
            )
        if not isinstance(contact, Contact):
            raise TypeError(
                f"Expected `contact` to be Rolling, KnifeEdge or Suslov, got {contact!r}."
            )
        taken = {b.name for b in self.bodies}
        if name is None:
            name = getattr(body, "name", None) or "body"
            base, k = name, len(self.bodies)
            while name in taken:  # several bodies left with the same default name
                name, k = f"{base}{k}", k + 1
        name = _as_name(name, "name")
        if name in taken:
            raise ValueError(f"Expected a new body name, got {name!r} twice.")
        color = _as_color(PALETTE[len(self.bodies) % len(PALETTE)] if color is None else color)
        integrator = integrator_from_name(integrator)
        system = contact.system(body, self.gravity)
        shell = _BodyView(body, name)
        conditions = contact.initial_conditions(shell, system, initial_conditions)
        if contact.ground is not None:
            self.add_ground(contact.ground)
        com = np.asarray(getattr(body, "com", np.zeros(3)), dtype=float)
        if mesh is not None:
            points, faces = mesh_from(mesh)
        elif getattr(body, "shape", None) is not None:
            points, faces, _ = body.shape.mesh_arrays(resolution)
        else:
            raise ValueError(f"Expected body {name!r} to have a `shape` or a display `mesh`.")
        points = np.asarray(points, dtype=float) - com
        entry = SceneBody(body, contact, system, conditions, name, color,
                          (points, np.asarray(faces, dtype=np.int64)), integrator)
        self.bodies.append(entry)
        return entry

    @property
    def body_names(self):
        return [b.name for b in self.bodies]

    def display(self):
        """The :class:`SceneDisplay` of this scene (meshes as arrays)."""
        grounds = []
        for g in self.grounds:
            points, faces, _ = g["surface"].mesh_arrays(g["resolution"])
            grounds.append({"name": g["name"], "color": g["color"], "opacity": g["opacity"],
                            "points": points, "faces": faces})
        bodies = []
        for b in self.bodies:
            points, faces = b.mesh
            item = {"name": b.name, "color": b.color, "points": points, "faces": faces,
                    "colors": two_tone(points, b.color, center=np.zeros(3)),
                    "contact": type(b.contact).__name__}
            item.update(b.contact.display_extra())
            bodies.append(item)
        return SceneDisplay(grounds, bodies, self.name, self.camera)

    # -- stepping ----------------------------------------------------------------------------
    def start(self, dt, integrator=None, backend="auto"):
        """Validate and start every body: a :class:`SceneRun` (used by :meth:`simulate` and
        the live viewer)."""
        return SceneRun(self, dt, integrator, backend)

    def simulate(self, t_final, dt, integrator=None, backend="auto", save_every=1,
                 progress=None, out=None):
        """Step every body from t = 0 to ``t_final``; returns one :class:`Trajectory`.

        Parameters
        ----------
        t_final, dt : float
            As for :func:`nhphys.simulate` (``t_final`` a whole number of steps).
        integrator : str, integrator or None
            For every body without its own; ``None`` takes each contact's default (the
            exponential retraction, or Newmark on an inclined plane).
        backend : {"auto", "cython", "python"}
        save_every : int
        progress : bool or None
            A progress bar (tqdm); ``None`` shows one for long runs on a terminal.
        out : str or path, optional
            An ``.npz`` file written as the run goes: frames are streamed chunk by chunk to
            ``out + ".part"`` (which :meth:`Trajectory.load` reads if the process is killed) and
            the finished file replaces ``out`` atomically at the end, or on Ctrl-C.

        Returns
        -------
        Trajectory
            Fields ``t`` (n,), ``position`` (n, B, 3), ``R`` (n, B, 3, 3), ``omega`` (n, B, 3),
            ``contact_point`` (n, B, 3), ``energy`` (n, B), ``constraint_residual`` (n, B);
            ``meta["bodies"]`` names the bodies and ``meta["scene"]`` describes the display.
            Interrupted with Ctrl-C: the frames so far, ``meta["interrupted"] = True``.
        """
        from nhphys.simulate import drive, number_of_steps

        t_final = as_positive_scalar(t_final, "t_final")
        dt = as_positive_scalar(dt, "dt")
        if isinstance(save_every, bool) or not isinstance(save_every, numbers.Integral) \
                or save_every < 1:
            raise ValueError(f"Expected `save_every` to be an integer >= 1, got {save_every!r}.")
        n_steps = number_of_steps(t_final, dt)
        if not self.bodies:
            raise ValueError("Expected the scene to have at least one body; add one with "
                             "scene.add_body(body, contact, ...).")
        writer = TrajectoryWriter(out) if out is not None else None  # checks `out` early
        try:
            run = self.start(dt, integrator, backend)
        except BaseException:
            if writer is not None:
                writer.discard()
            raise
        meta = dict(run.meta, save_every=int(save_every))
        display_meta, static = self.display().to_meta()
        meta["scene"] = display_meta
        return drive(run, n_steps, dt, save_every, meta, progress=progress, writer=writer,
                     static=static, chunk_steps=max(1, CHUNK_STEPS // len(self.bodies)),
                     work_per_step=len(self.bodies), desc=self.name)

    # -- viewing -----------------------------------------------------------------------------
    def show(self, dt=0.01, integrator=None, backend="auto", **options):
        """Open a window and step the scene live (see :func:`nhphys.viz.show`)."""
        from nhphys import viz

        return viz.show(self, dt=dt, integrator=integrator, backend=backend, **options)

    def render(self, trajectory, path, **options):
        """Render a trajectory of this scene to a GIF, MP4 or PNG (see :func:`nhphys.viz.render`)."""
        from nhphys import viz

        return viz.render(self, trajectory, path, **options)


class _BodyView:
    """The body with its scene name, for messages during validation."""

    def __init__(self, body, name):
        self._body = body
        self.name = name

    def __getattr__(self, attr):
        return getattr(self._body, attr)


class SceneRun:
    """Every body of a scene started with the same step: advances them side by side.

    ``initial()`` and ``advance(n_steps, save_every)`` return the common fields stacked over
    bodies (leading axes (k, B)); ``steps_done`` counts the steps taken.
    """

    def __init__(self, scene, dt, integrator=None, backend="auto"):
        self.scene = scene
        self.dt = as_positive_scalar(dt, "dt")
        default = integrator_from_name(integrator)
        self.backend = _backend.resolve(backend)
        self.runs = []
        integrators = []
        for b in scene.bodies:
            chosen = b.integrator or default or b.contact.integrator(b.system)
            integrators.append(chosen)
            try:
                self.runs.append(chosen.start(b.system, self.dt, self.backend, **b.conditions))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"Body {b.name!r}: {exc}") from exc
        self.steps_done = 0
        self.meta = {
            "bodies": scene.body_names,
            "systems": [repr(b.system) for b in scene.bodies],
            "integrators": [repr(i) for i in integrators],
            "integrator": repr(integrators[0]) if len(set(map(repr, integrators))) == 1
            else "mixed",
            "dt": self.dt,
            "backend": self.backend,
            "gravity": scene.gravity,
        }

    def _stack(self, per_body):
        return {k: np.stack([f[k] for f in per_body], axis=1) for k in BODY_FIELDS}

    def initial(self):
        return self._stack([b.contact.fields(b.body, b.system, r.initial())
                            for b, r in zip(self.scene.bodies, self.runs)])

    def advance(self, n_steps, save_every=None):
        """Take ``n_steps`` steps on every body; the frames saved every ``save_every`` steps
        (default: only the last)."""
        save_every = n_steps if save_every is None else save_every
        out = []
        for b, r in zip(self.scene.bodies, self.runs):
            try:
                saved = r.advance(n_steps, save_every)
            except NewtonError as err:
                err.args = (f"Body {b.name!r}: {err.args[0]}",)
                raise
            out.append(b.contact.fields(b.body, b.system, saved))
        self.steps_done += n_steps
        return self._stack(out)


def load_scene_file(path):
    """Run a scene file and return its namespace's ``scene`` and ``defaults`` (a dict).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file defines no ``scene`` (a :class:`Scene`), or ``defaults`` is not a dict.
    """
    import runpy

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No scene file {path!r}.")
    namespace = runpy.run_path(path, run_name="nhphys_scene")
    scene = namespace.get("scene")
    if not isinstance(scene, Scene):
        raise ValueError(
            f"Expected {path} to define `scene = nhphys.Scene(...)`, got "
            f"{'no `scene`' if scene is None else type(scene).__name__}."
        )
    defaults = namespace.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ValueError(f"Expected `defaults` in {path} to be a dict, got {defaults!r}.")
    return scene, defaults
