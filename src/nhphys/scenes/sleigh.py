"""Chaplygin sleighs: three knife-edge bodies on a level plane straighten out their paths.

Each sleigh slides on a blade that cannot move sideways, its centre of mass ahead of the blade's
contact point. Whatever their initial spin, they stop turning and end up moving in straight lines
(the turning rate decays like sech, the speed tends to sqrt(2E/m)). The blade constraint holds to
round-off; the trails are the contact points' paths.

Run ``python -m nhphys.scenes.sleigh`` (or ``nhphys run sleigh``): writes out/sleigh.npz and
out/sleigh.gif and prints where they are.
"""

import sys

import nhphys
from nhphys import KnifeEdgeContact, Scene
from nhphys.surfaces import Ellipsoid, Plane

scene = Scene(name="sleigh", camera=(0.0, -1.0, 1.2))
floor = scene.add_ground(Plane(extent=2.5), color="#cfd6dc")
starts = [((-1.5, 1.0), 0.5, -2.0), ((-1.5, 0.0), -0.4, 1.5), ((-1.5, -1.2), -0.6, 2.0)]
for i, (position, heading, spin) in enumerate(starts):
    hull = nhphys.RigidBody(1.0, [0.004, 0.02, 0.02], Ellipsoid([0.3, 0.12, 0.07]),
                            name=f"sleigh{i}")
    scene.add_body(hull, KnifeEdgeContact(floor, offset=0.15), position=position, heading=heading,
                   velocity=0.3, turning_rate=spin)

defaults = {"t_final": 5.0, "dt": 0.01, "integrator": "exp", "fps": 15.0, "size": (480, 360)}

if __name__ == "__main__":
    from nhphys.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
