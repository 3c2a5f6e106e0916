"""nhphys: structure-preserving simulation of nonholonomic mechanical systems.

>>> import nhphys
>>> body = nhphys.systems.Suslov(inertia=[1.0, 10.0, 100.0], axis=[0, 0, 1])
>>> traj = nhphys.simulate(body, t_final=1.0, dt=0.01, momentum=[1.0, 1.0, 0.0])
>>> traj.R.shape
(101, 3, 3)

The subpackages ``systems``, ``forces``, ``integrators``, ``surfaces``, ``shapes``, ``lie``, ``viz`` and
``export`` are attributes of ``nhphys`` after ``import nhphys``; none of them imports scipy,
sympy, PyVista, matplotlib or tqdm until it is used. ``ensemble`` and ``sweep`` are imported
on first use too: ``import nhphys`` never imports xarray, Zarr or Dask.
"""

from nhphys import forces, integrators, lie, shapes, surfaces, systems
from nhphys.bodies import RigidBody
from nhphys.contacts import KnifeEdgeContact, RollingContact, SuslovContact
from nhphys.errors import ContactEvent, NewtonError
from nhphys.scene import Scene
from nhphys.simulate import simulate
from nhphys.trajectory import Trajectory

# neither imports PyVista, matplotlib or USD until it is used
from nhphys import export, viz  # noqa: E402  (after the physics they read)

__version__ = "0.1.0"

__all__ = [
    "ContactEvent", "KnifeEdgeContact", "NewtonError", "RigidBody", "RollingContact", "Scene",
    "SuslovContact", "Trajectory", "ensemble", "export", "forces", "integrators", "lie", "shapes",
    "simulate", "surfaces", "sweep", "systems", "viz",
]

# nhphys.ensemble and nhphys.sweep are functions, each in the module of the same name, which
# imports xarray (and Dask) when first used. Importing a submodule binds the package attribute
# to the module, so the function is put back after the import (and the modules themselves are
# callable, for a program that imported `nhphys.ensemble` as a module first).
_LAZY = {"ensemble": "nhphys.ensemble", "sweep": "nhphys.sweep"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        function = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = function
        return function
    raise AttributeError(f"module 'nhphys' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
