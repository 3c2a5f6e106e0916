"""Marbles on a terrain: 100 balls roll without slipping on a height-field landscape.

The ground is a bicubic height field, the basin z = 0.15 sin(1.3 x) cos(1.1 y) + 0.04 (x^2 + y^2)
sampled on a 65 x 65 grid; 100 balls of radius 0.08 start at random places with random spins and roll into the
valleys. Bodies do not collide with each other: each ball is an independent system, stepped side
by side with the others (this scene is the rendering benchmark's many-body case).

Run ``python -m nhphys.scenes.marbles`` (or ``nhphys run marbles``): writes out/marbles.npz and
out/marbles.gif and prints where they are.
"""

import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.surfaces import HeightField, Sphere

COUNT = 100
RADIUS = 0.08

scene = Scene(name="marbles")
terrain = scene.add_ground(
    HeightField.from_function("0.15*sin(1.3*x)*cos(1.1*y) + 0.04*(x**2 + y**2)", (-3, 3), (-3, 3),
                              samples=65),
    color="#b9c4a3", resolution=96)
rng = np.random.default_rng(2026)
for i in range(COUNT):
    ball = nhphys.RigidBody(1.0, [0.4 * RADIUS**2] * 3, Sphere(RADIUS), name=f"ball{i:03d}")
    x, y = rng.uniform(-2.0, 2.0, 2)
    scene.add_body(ball, RollingContact(terrain), position=terrain.point(terrain.project([x, y, 0.0])),
                   omega=rng.normal(0.0, 2.0, 3), resolution=16)

defaults = {"t_final": 4.0, "dt": 0.01, "integrator": "exp", "fps": 10.0, "size": (480, 360)}

if __name__ == "__main__":
    from nhphys.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
