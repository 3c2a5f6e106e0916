"""Suslov top: an ellipsoid on a pivot that may not spin about its own short axis.

The body turns about its centre of mass, held at the top of a pivot, with no angular velocity
along its body axis e3 (the Suslov constraint). With a non-principal inertia the motion drifts
towards a steady rotation; the constraint holds to round-off and the energy error stays bounded.

Run ``python -m nhphys.scenes.suslov_top`` (or ``nhphys run suslov_top``): writes out/suslov_top.npz and
out/suslov_top.gif and prints where they are. ``nhphys view suslov_top`` opens a live window.
"""

import sys

import nhphys
from nhphys import Scene, SuslovContact
from nhphys.surfaces import Ellipsoid, Plane

scene = Scene(name="suslov_top")
scene.add_ground(Plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), extent=1.2))
top = nhphys.RigidBody(
    mass=1.0,
    inertia=[[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]],
    shape=Ellipsoid([0.6, 0.4, 0.22]),
    name="top",
)
scene.add_body(top, SuslovContact(axis=[0.0, 0.0, 1.0], pivot=[0.0, 0.0, 0.75]), omega=[2.0, 1.0, 0.0])

defaults = {"t_final": 8.0, "dt": 0.01, "integrator": "exp", "fps": 20.0, "size": (480, 360)}

if __name__ == "__main__":
    from nhphys.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
