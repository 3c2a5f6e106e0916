"""A ball rolling inside a ring-shaped pipe (a torus seen from inside).

A homogeneous ball of radius 0.1 rolls without slipping inside the tube of a torus (ring radius
1, tube radius 0.4), launched along the ring with some sideways spin: it runs round the ring
while rocking from side to side across the tube's curved floor. Figures: energy error, residuals
and contact path (``diagnostics.png``) and the ball's height and normal contact force
(``rocking.png``).

Run ``python -m nhphys.scenes.ball_in_pipe [--out DIR]``: writes PNGs into ``out/ball_in_pipe/`` and
prints their paths. ``nhphys view ball_in_pipe`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.surfaces import Sphere, Torus
from nhphys.systems import RollingBody

ball = nhphys.RigidBody(1.0, [0.4 * 0.1**2] * 3, Sphere(0.1), name="ball")
pipe = Torus(1.0, 0.4).as_ground("inside")
START = dict(omega=[3.0, 12.0, 0.0], position=[1.1, 0.0, -0.38])

scene = Scene(name="ball_in_pipe", camera=(0.0, -1.0, 1.5))
scene.add_ground(pipe, color="#b8c2c9", opacity=0.35, resolution=64)
scene.add_body(ball, RollingContact(pipe), color="#b0413e", **START)

defaults = {"t_final": 8.0, "dt": 1e-3, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "ball_in_pipe"))
    parser.add_argument("--t-final", type=float, default=20.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    system = RollingBody(ball, pipe)
    traj = nhphys.simulate(system, args.t_final, args.dt, save_every=10, **START)
    print(f"max |dE/E| {np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; max residual "
          f"{traj.constraint_residual.max():.1e}; normal force between "
          f"{traj.normal_force[1:].min():.2f} and {traj.normal_force[1:].max():.2f} N")
    paths = [os.path.join(args.out, "diagnostics.png"), os.path.join(args.out, "rocking.png")]
    plt.close(plots.diagnostics(traj, paths[0], title="ball inside a ring-shaped pipe"))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    ax1.plot(traj.t, traj.position[:, 2], lw=1)
    ax1.set_ylabel("height of the centre [m]")
    ax2.plot(traj.t[1:], traj.normal_force[1:], lw=1)
    ax2.set_ylabel("normal contact force [N]")
    for ax in (ax1, ax2):
        ax.set_xlabel("t [s]")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
