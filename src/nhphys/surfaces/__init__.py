"""Surface geometry: charts, fundamental forms, Weingarten maps, roles, projection and meshes.

Built-in surfaces evaluate through compiled ``cdef`` classes (``nhphys_ext.surfaces``) with
Python twins (:mod:`nhphys.twins.surfaces`); user-defined ones (:class:`ParametricSurface`) run
on the Python path. Conventions: ``J = dr/du``, ``g = J^T J``, ``II_ab = n . d^2 r/du_a du_b``,
``L = g^-1 II`` with ``J L du/dt = -dn/dt``; a body's surface takes the normal into the body
(:meth:`Surface.as_body`), a ground the normal toward the body's side (:meth:`Surface.as_ground`).

Examples
--------
>>> from nhphys.surfaces import Sphere
>>> ball = Sphere(0.5).as_body()
>>> ball.principal_curvatures([0.3, -0.2])[0].round(12).tolist()
[2.0, 2.0]
"""

from nhphys.surfaces.base import Domain, Location, Surface
from nhphys.surfaces.builtin import Ellipsoid, Paraboloid, Plane, Sphere, Torus
from nhphys.surfaces.graphs import HeightField, SurfaceOfRevolution
from nhphys.surfaces.moving import (
    MovingGround,
    PrescribedMotion,
    SteadyRotation,
    UniformTranslation,
)
from nhphys.surfaces.parametric import ParametricSurface

__all__ = [
    "Surface",
    "Location",
    "Domain",
    "Plane",
    "Sphere",
    "Ellipsoid",
    "Torus",
    "Paraboloid",
    "SurfaceOfRevolution",
    "HeightField",
    "ParametricSurface",
    "MovingGround",
    "SteadyRotation",
    "UniformTranslation",
    "PrescribedMotion",
]
