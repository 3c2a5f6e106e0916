"""Body shapes that are convex but not smooth or not strictly convex: disks, wheels, cylinders.

A rolling body enters the contact computation only through its support map: for a direction
``d`` (body frame) the point of the body farthest along ``d``, its derivative ``S' = ds/dd``
and the normal of the supporting plane (see :mod:`nhphys.twins.rolling`). The closed, strictly
convex surfaces of :mod:`nhphys.surfaces` get theirs from their charts; the shapes here write
theirs down directly. Each shape is centred at the origin of its own frame with its axis along
z, and says which kernel class (and Python twin) represents it through :meth:`rolling_shape`.

Where the contact stops being one point (a disk lying flat, a cylinder rolling onto its side, a
wheel whose inner part would touch) the support map reports a contact event and a rolling run
stops there with :class:`nhphys.errors.ContactEvent`; the angles at which this happens are the
``flat_angle`` / ``side_angle`` arguments.

>>> import nhphys
>>> from nhphys.shapes import Disk
>>> coin = nhphys.RigidBody(0.01, Disk.solid_inertia(0.01, 0.012), Disk(0.012), name="coin")
"""

import numpy as np

from nhphys._validation import as_positive_scalar

DEFAULT_FLAT_ANGLE = 1e-2  # rad
DEFAULT_SIDE_ANGLE = 1e-2  # rad
DISPLAY_THICKNESS = 0.02  # half-thickness of a thin disk's display mesh, in radii


def _as_event_angle(value, name):
    value = as_positive_scalar(value, name)
    if not value < 0.5:
        raise ValueError(f"Expected `{name}` to be in (0, 0.5) rad, got {value}.")
    return value


def _grid_faces(nu, nv):
    """Two triangles per cell of an ``nu x nv`` vertex grid periodic in both directions."""
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    i, j = i.ravel(), j.ravel()
    i1, j1 = (i + 1) % nu, (j + 1) % nv
    a, b, c, d = i * nv + j, i1 * nv + j, i1 * nv + j1, i * nv + j1
    return np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).astype(np.int64)


def _fan(n, centre, first, normal_z):
    """Triangles of a circle's fan: ``n`` rim vertices from index ``first`` round ``centre``."""
    k = np.arange(n)
    faces = np.stack([np.full(n, centre), first + k, first + (k + 1) % n], -1)
    return faces if normal_z > 0 else faces[:, ::-1].copy()


class Shape:
    """Base class of the support-function shapes (not a chart surface).

    Attributes
    ----------
    closed : bool
        Always True: a solid body.
    strictly_convex : bool
        False for these shapes: they have flat parts or edges, so the chart-surface machinery
        (support point from the Gauss map) does not apply to them.
    """

    closed = True
    strictly_convex = False

    def rolling_shape(self, module, com):
        """The shape class of ``module`` (``nhphys_ext.rolling`` or its twin
        ``nhphys.twins.rolling``) that represents this shape, built with the centre of mass
        ``com`` (3,) in the shape's frame."""
        raise NotImplementedError

    def contains(self, point) -> bool:
        """True when ``point`` (3,) lies in the solid (for a thin disk: on the disk)."""
        raise NotImplementedError

    def mesh_arrays(self, resolution: int = 64):
        """Triangle mesh for display: ``points`` (m, 3), ``faces`` (k, 3) int, ``normals``
        (m, 3) outward; ``resolution`` vertices round the circumference."""
        if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)):
            raise TypeError(f"Expected `resolution` to be an integer, got {resolution!r}.")
        if resolution < 4:
            raise ValueError(f"Expected `resolution` to be >= 4, got {resolution}.")
        return self._mesh_arrays(int(resolution))

    def mesh(self, resolution: int = 64):
        """A ``pyvista.PolyData`` triangle mesh with point normals (PyVista imported here)."""
        points, faces, normals = self.mesh_arrays(resolution)
        import pyvista  # lazily: needed only to display

        cells = np.hstack([np.full((len(faces), 1), 3, dtype=np.int64), faces]).ravel()
        poly = pyvista.PolyData(points, cells)
        poly.point_data["Normals"] = normals
        poly.point_data.active_normals_name = "Normals"
        return poly

    def _mesh_arrays(self, resolution):
        raise NotImplementedError


class Disk(Shape):
    """A thin disk of radius ``radius`` in the xy plane, axis z; it touches the ground on its rim.

    Parameters
    ----------
    radius : float
        > 0.
    flat_angle : float
        Contact event ``"flat"``: the run stops when the disk's plane comes within this angle
        (rad) of the ground's tangent plane (the contact would become the whole disk).

    Examples
    --------
    >>> import nhphys
    >>> disk = Disk(0.1)
    >>> body = nhphys.RigidBody(1.0, Disk.solid_inertia(1.0, 0.1), disk)
    """

    def __init__(self, radius, flat_angle=DEFAULT_FLAT_ANGLE):
        self.radius = as_positive_scalar(radius, "radius")
        self.flat_angle = _as_event_angle(flat_angle, "flat_angle")

    def __repr__(self):
        return f"Disk(radius={self.radius:g})"

    @staticmethod
    def solid_inertia(mass, radius):
        """Principal inertia (3,) of a uniform thin disk: ``m r^2 (1/4, 1/4, 1/2)``."""
        return mass * radius**2 * np.array([0.25, 0.25, 0.5])

    def rolling_shape(self, module, com):
        return module.Disk(self.radius, np.asarray(com, dtype=float), self.flat_angle)

    def contains(self, point):
        x, y, z = np.asarray(point, dtype=float)
        return bool(abs(z) <= 1e-12 * self.radius and np.hypot(x, y) < self.radius)

    def _mesh_arrays(self, resolution):
        # drawn with a small thickness so its two faces do not fight for the same pixels
        return Cylinder(self.radius, DISPLAY_THICKNESS * self.radius)._mesh_arrays(resolution)


class Cylinder(Shape):
    """A solid circular cylinder of radius ``radius``, axis z, ``|z| <= half_length``.

    It rolls on the rim of one end face; two contact events stop a run: ``"flat"`` (standing on
    an end face, the end plane within ``flat_angle`` of the ground's tangent plane) and
    ``"rim-to-side"`` (the axis within ``side_angle`` of the tangent plane: the contact becomes
    a line along the side, which this single-point model does not describe). With a
    unilateral contact (``lift_off=True``) on a plane, a centred cylinder goes on from both:
    it lies on its end face, or on its side (``docs/contact-modes.md``).

    Parameters
    ----------
    radius, half_length : float
        > 0.
    flat_angle, side_angle : float
        Event angles (rad), in (0, 0.5).
    """

    def __init__(self, radius, half_length, flat_angle=DEFAULT_FLAT_ANGLE,
                 side_angle=DEFAULT_SIDE_ANGLE):
        self.radius = as_positive_scalar(radius, "radius")
        self.half_length = as_positive_scalar(half_length, "half_length")
        self.flat_angle = _as_event_angle(flat_angle, "flat_angle")
        self.side_angle = _as_event_angle(side_angle, "side_angle")

    def __repr__(self):
        return f"Cylinder(radius={self.radius:g}, half_length={self.half_length:g})"

    @staticmethod
    def solid_inertia(mass, radius, half_length):
        """Principal inertia (3,) of a uniform solid cylinder."""
        side = mass * (radius**2 / 4 + half_length**2 / 3)
        return np.array([side, side, mass * radius**2 / 2])

    def rolling_shape(self, module, com):
        return module.Cylinder(self.radius, self.half_length, np.asarray(com, dtype=float),
                               self.flat_angle, self.side_angle)

    def contains(self, point):
        x, y, z = np.asarray(point, dtype=float)
        return bool(abs(z) < self.half_length and np.hypot(x, y) < self.radius)

    def _mesh_arrays(self, resolution):
        n, r, L = resolution, self.radius, self.half_length
        phi = 2 * np.pi * np.arange(n) / n
        ring = np.column_stack([r * np.cos(phi), r * np.sin(phi)])
        radial = np.column_stack([np.cos(phi), np.sin(phi), np.zeros(n)])
        top = np.column_stack([ring, np.full(n, L)])
        bottom = np.column_stack([ring, np.full(n, -L)])
        # side (two rings with radial normals), then the two caps (centre + ring)
        points = np.vstack([bottom, top, [[0, 0, L]], top, [[0, 0, -L]], bottom])
        normals = np.vstack([radial, radial, np.tile([0, 0, 1.0], (n + 1, 1)),
                             np.tile([0, 0, -1.0], (n + 1, 1))])
        k = np.arange(n)
        k1 = (k + 1) % n
        side = np.concatenate([np.stack([k, k1, n + k1], -1), np.stack([k, n + k1, n + k], -1)])
        caps = np.vstack([_fan(n, 2 * n, 2 * n + 1, 1.0),
                          _fan(n, 3 * n + 1, 3 * n + 2, -1.0)])
        return points, np.vstack([side, caps]).astype(np.int64), normals


class Wheel(Shape):
    """A wheel (tyre): a torus whose tube of radius ``tube_radius`` runs round the circle of
    radius ``radius`` in the xy plane, axis z.

    Only the outer half of the tube can touch a ground from outside; the run stops with the
    contact event ``"inner contact"`` when the contact reaches the top of the tube (the wheel's
    plane within ``flat_angle`` of the ground's tangent plane), beyond which the ground would
    touch the inner part of the tube. With a unilateral contact (``lift_off=True``) on a plane,
    a centred wheel goes on from there lying flat on its tube (``docs/contact-modes.md``).

    Parameters
    ----------
    radius : float
        Radius of the tube's centre circle, > 0.
    tube_radius : float
        > 0 and < ``radius``.
    flat_angle : float
        Event angle (rad), in (0, 0.5).
    """

    def __init__(self, radius, tube_radius, flat_angle=DEFAULT_FLAT_ANGLE):
        self.radius = as_positive_scalar(radius, "radius")
        self.tube_radius = as_positive_scalar(tube_radius, "tube_radius")
        if not self.tube_radius < self.radius:
            raise ValueError(
                f"Expected `tube_radius` to be smaller than `radius` ({self.radius:g}), got "
                f"{self.tube_radius:g}."
            )
        self.flat_angle = _as_event_angle(flat_angle, "flat_angle")

    def __repr__(self):
        return f"Wheel(radius={self.radius:g}, tube_radius={self.tube_radius:g})"

    @staticmethod
    def solid_inertia(mass, radius, tube_radius):
        """Principal inertia (3,) of a uniform solid torus."""
        R2, r2 = radius**2, tube_radius**2
        return mass * np.array([R2 / 2 + 5 * r2 / 8, R2 / 2 + 5 * r2 / 8, R2 + 3 * r2 / 4])

    def rolling_shape(self, module, com):
        return module.Wheel(self.radius, self.tube_radius, np.asarray(com, dtype=float),
                            self.flat_angle)

    def contains(self, point):
        x, y, z = np.asarray(point, dtype=float)
        # inside the convex hull: below the top and bottom planes, inside the outer rim
        if abs(z) >= self.tube_radius:
            return False
        return bool(np.hypot(x, y) < self.radius + np.sqrt(self.tube_radius**2 - z * z))

    def _mesh_arrays(self, resolution):
        nu = resolution
        nv = max(8, round(resolution * self.tube_radius / self.radius))
        u = 2 * np.pi * np.arange(nu) / nu
        v = 2 * np.pi * np.arange(nv) / nv
        U, V = np.meshgrid(u, v, indexing="ij")
        U, V = U.ravel(), V.ravel()
        normals = np.column_stack([np.cos(V) * np.cos(U), np.cos(V) * np.sin(U), np.sin(V)])
        centre = np.column_stack([self.radius * np.cos(U), self.radius * np.sin(U),
                                  np.zeros_like(U)])
        points = centre + self.tube_radius * normals
        faces = _grid_faces(nu, nv)
        a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
        flip = (np.cross(b - a, c - a) * normals[faces].sum(1)).sum(-1) < 0
        faces[flip] = faces[flip][:, ::-1]
        return points, faces, normals
