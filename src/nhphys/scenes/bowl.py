"""Marbles in a bowl: a ball and an egg roll without slipping inside a paraboloid.

The ground is the bowl z = (x^2 + y^2) / 1.44 (radius of curvature 0.72 at the bottom); a ball of
radius 0.12 and an ellipsoidal egg start on its side, spinning, and roll round and across it. The
no-slip constraint holds to round-off and the energy error stays small and bounded; the dark
lines are the paths of the contact points on the bowl.

Run ``python -m nhphys.scenes.bowl`` (or ``nhphys run bowl``): writes out/bowl.npz and out/bowl.gif and
prints where they are. ``nhphys view bowl`` opens a live window.
"""

import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.surfaces import Ellipsoid, Paraboloid, Sphere

scene = Scene(name="bowl", camera=(0.5, -1.0, 1.6))
bowl = scene.add_ground(Paraboloid(1.2, 1.2, extent=0.85), color="#c9c3b8", resolution=64)

r = 0.12
ball = nhphys.RigidBody(1.0, [0.4 * r * r] * 3, Sphere(r), name="ball")
start = bowl.point(bowl.project([0.55, 0.0, 0.3]))
scene.add_body(ball, RollingContact(bowl), position=start, omega=[-2.0, 6.0, 0.0])

semi = np.array([0.14, 0.11, 0.09])
egg_inertia = 0.2 * np.array([semi[1] ** 2 + semi[2] ** 2, semi[0] ** 2 + semi[2] ** 2,
                              semi[0] ** 2 + semi[1] ** 2])
egg = nhphys.RigidBody(1.0, egg_inertia, Ellipsoid(semi), name="egg")
scene.add_body(egg, RollingContact(bowl), position=bowl.point(bowl.project([-0.45, 0.3, 0.3])),
               omega=[0.0, 0.0, 3.0])

defaults = {"t_final": 6.0, "dt": 0.0025, "integrator": "exp", "fps": 15.0, "size": (480, 360)}

if __name__ == "__main__":
    from nhphys.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
