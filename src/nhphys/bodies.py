"""``RigidBody``: mass, inertia about the centre of mass, and a shape."""

import numpy as np

from nhphys._validation import as_inertia, as_positive_scalar, as_vector3


class RigidBody:
    """A rigid body with a convex shape.

    Parameters
    ----------
    mass : float
        Mass, > 0.
    inertia : array_like, shape (3, 3) or (3,)
        Inertia tensor about the centre of mass, in the shape's axes (symmetric positive
        definite; products of inertia allowed; a length-3 vector is a diagonal).
    shape : nhphys.surfaces.Surface or nhphys.shapes.Shape
        A closed, strictly convex surface in the body's own frame (e.g. an ellipsoid centred at
        the origin; its orientation flag does not matter: the body always uses the normal
        pointing into itself), or a support-function shape: ``nhphys.shapes.Disk``, ``Wheel``
        or ``Cylinder`` (axis along the frame's z).
    com : array_like, shape (3,)
        The centre of mass in the shape's frame; it must lie inside the shape (for a thin
        ``Disk``: on the disk). The body frame is
        the shape's frame moved to the centre of mass.
    name : str, optional

    Examples
    --------
    >>> import nhphys
    >>> from nhphys.surfaces import Sphere
    >>> ball = nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1), name="ball")
    """

    def __init__(self, mass, inertia, shape, com=(0.0, 0.0, 0.0), name="body"):
        from nhphys.shapes import Shape
        from nhphys.surfaces import Surface

        self.mass = as_positive_scalar(mass, "mass")
        self.inertia = as_inertia(inertia, "inertia")
        if isinstance(shape, Shape):
            self._init_rest(shape, com, name)
            if not shape.contains(self.com):
                raise ValueError(f"Expected `com` to lie inside the shape, got {self.com}.")
            return
        if not isinstance(shape, Surface):
            raise TypeError(
                f"Expected `shape` to be an nhphys.surfaces.Surface or an nhphys.shapes shape "
                f"(Disk, Wheel, Cylinder), got {shape!r}."
            )
        if not (shape.closed and shape.strictly_convex):
            raise ValueError(
                f"Expected `shape` to be a closed, strictly convex surface, got "
                f"{type(shape).__name__}."
            )
        self._init_rest(shape, com, name)
        # inside a convex shape: strictly below its support plane in every sampled direction
        dirs = np.vstack([np.eye(3), -np.eye(3), _fibonacci_directions(64)])
        loc = shape.support_point(dirs)
        depth = np.einsum("ij,ij->i", shape.point(loc.uv, loc.chart) - self.com, dirs)
        if depth.min() <= 0:
            raise ValueError(f"Expected `com` to lie inside the shape, got {self.com}.")

    def _init_rest(self, shape, com, name):
        self.shape = shape
        self.com = as_vector3(com, "com")
        if not isinstance(name, str):
            raise TypeError(f"Expected `name` to be a string, got {name!r}.")
        self.name = name

    def __repr__(self):
        return (f"RigidBody(mass={self.mass}, inertia={self.inertia.tolist()}, "
                f"shape={self.shape!r}, com={self.com.tolist()}, name={self.name!r})")


def _fibonacci_directions(n):
    """``n`` roughly uniform unit vectors (n, 3)."""
    i = np.arange(n) + 0.5
    z = 1 - 2 * i / n
    phi = np.pi * (1 + 5**0.5) * i
    r = np.sqrt(1 - z * z)
    return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])
