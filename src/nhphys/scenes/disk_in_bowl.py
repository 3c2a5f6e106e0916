"""A disk rolling on the inside of a bowl: up the wall and back, like a pendulum, upright.

A thin uniform disk (radius 0.1 m, 1 kg) starts upright on the wall of a spherical bowl of
radius 1 m, 0.3 m from its bottom, with its axis horizontal along the radius, spinning at
20 rad/s so that it rolls sideways across the bowl; held upright by its spin, it rolls up the
wall, stops, rolls back across and up the other side, like a pendulum. The contact stays on the
rim, the no-slip condition holds to round-off, and the energy error stays small and bounded.
Figures: ``diagnostics.png`` (energy error, residuals, contact path) and ``wall.png`` (the
contact point's distance from the bowl's axis and the normal contact force along the run).

Run ``python -m nhphys.scenes.disk_in_bowl [--out DIR]``: writes PNGs into ``out/disk_in_bowl/`` and
prints their paths. ``nhphys view disk_in_bowl`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.shapes import Disk
from nhphys.surfaces import Sphere
from nhphys.systems import RollingBody

MASS, RADIUS, SPIN = 1.0, 0.1, -20.0

bowl = Sphere(1.0).as_ground("inside")
disk = nhphys.RigidBody(MASS, Disk.solid_inertia(MASS, RADIUS), Disk(RADIUS), name="disk")

# upright: its axis (body z) along +x, its plane the (y, z) plane; it rolls along y
R0 = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
START = {"orientation": R0, "omega": [0.0, 0.0, SPIN], "position": [0.3, 0.0, -0.95]}

scene = Scene(name="disk_in_bowl", camera=(0.6, -1.6, 0.9))
scene.add_ground(bowl, color="#c9c3b8", resolution=64, opacity=0.35)
scene.add_body(disk, RollingContact(bowl), color="#8c3b2e", resolution=64, **START)

defaults = {"t_final": 6.0, "dt": 1e-3, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "disk_in_bowl"))
    parser.add_argument("--t-final", type=float, default=20.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    system = RollingBody(disk, bowl)
    traj = nhphys.simulate(system, args.t_final, args.dt, save_every=10, **START)
    paths = [os.path.join(args.out, "diagnostics.png"), os.path.join(args.out, "wall.png")]
    plt.close(plots.diagnostics(traj, paths[0], title="disk rolling inside a bowl"))

    s = traj.body_contact
    rim = np.abs(np.hypot(s[:, 0], s[:, 1]) / RADIUS - 1).max()
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    ax0.plot(traj.t, np.hypot(traj.contact_point[:, 0], traj.contact_point[:, 1]))
    ax0.set_xlabel("t [s]")
    ax0.set_ylabel("distance of the contact from the bowl's axis [m]")
    ax1.plot(traj.t[1:], traj.normal_force[1:])
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("normal contact force [N]")
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    print(f"energy error {np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; largest contact "
          f"residual {traj.contact_residual.max():.1e}, slip residual "
          f"{traj.slip_residual.max():.1e}, off the rim {rim:.1e}")
    for p in paths:
        print(p)
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
