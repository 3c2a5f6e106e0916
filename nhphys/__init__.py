"""nhphys: structure-preserving simulation of nonholonomic mechanical systems.

>>> import nhphys
>>> body = nhphys.systems.Suslov(inertia=[1.0, 10.0, 100.0], axis=[0, 0, 1])
>>> traj = nhphys.simulate(body, t_final=1.0, dt=0.01, momentum0=[1.0, 1.0, 0.0])
>>> traj.R.shape
(101, 3, 3)
"""

from nhphys import integrators, lie, systems
from nhphys import shapes  # Disk, Wheel, Cylinder: body shapes given by their support maps
from nhphys.bodies import RigidBody
from nhphys.errors import NewtonError
from nhphys.simulate import simulate
from nhphys.trajectory import Trajectory
from nhphys.scene import Scene
from nhphys import export, viz  # neither imports PyVista, matplotlib or USD until used

__version__ = "0.1.0"

__all__ = [
    "integrators", "lie", "systems", "simulate", "Trajectory", "NewtonError", "RigidBody",
    "Scene", "export", "viz",
]
