"""A ball rolling in a spherical bowl: the small-amplitude period, and a wider swing to watch.

A homogeneous ball of radius 0.1 rolls without slipping inside a spherical bowl of radius 1.
Released at rest a small distance from the bottom it oscillates with the period
``2 pi sqrt(7 (R - r) / (5 g))`` (the 7/5 is the rolling ball's effective mass); the figure
``period.png`` shows the motion and the measured period against that formula, and
``diagnostics.png`` energy error, residuals and the contact path of the wider, spinning swing
that ``nhphys view ball_in_bowl`` shows.

Run ``python -m nhphys.scenes.ball_in_bowl [--out DIR]``: writes PNGs into ``out/ball_in_bowl/`` and
prints their paths.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.surfaces import Sphere
from nhphys.systems import RollingBody

r, R, G = 0.1, 1.0, 9.81
ball = nhphys.RigidBody(1.0, [0.4 * r * r] * 3, Sphere(r), name="ball")
bowl = Sphere(R).as_ground("inside")
SWING = dict(position=[0.45, 0.0, -np.sqrt(R * R - 0.45**2)], omega=[0.0, 0.0, 8.0])

scene = Scene(name="ball_in_bowl", camera=(0.4, -1.0, 1.2))
scene.add_ground(bowl, color="#c9c3b8", resolution=64)
scene.add_body(ball, RollingContact(bowl), color="#b0413e", **SWING)

defaults = {"t_final": 6.0, "dt": 1e-3, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def measured_period(traj):
    """Twice the time between the first two zero crossings of the centre's x coordinate."""
    x = traj.position[:, 0]
    i = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))
    crossings = traj.t[i] - x[i] * (traj.t[i + 1] - traj.t[i]) / (x[i + 1] - x[i])
    return 2.0 * (crossings[1] - crossings[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "ball_in_bowl"))
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    system = RollingBody(ball, bowl, gravity=G)
    angle = 0.01 / R
    small = nhphys.simulate(system, 5.0, args.dt,
                            position=[R * np.sin(angle), 0.0, -R * np.cos(angle)])
    period = measured_period(small)
    expected = 2 * np.pi * np.sqrt(7 * (R - r) / (5 * G))
    print(f"period {period:.6f} s, formula {expected:.6f} s, relative difference "
          f"{period / expected - 1:+.1e}")
    paths = [os.path.join(args.out, "period.png"), os.path.join(args.out, "diagnostics.png")]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(small.t, small.position[:, 0] * 1e3, lw=1)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("centre x [mm]")
    ax.set_title(f"released 0.01 from the bottom: period {period:.5f} s, "
                 f"2 pi sqrt(7 (R - r) / 5 g) = {expected:.5f} s")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    swing = nhphys.simulate(system, 10.0, args.dt, save_every=10, **SWING)
    plt.close(plots.diagnostics(swing, paths[1], title="ball swinging and spinning in the bowl"))
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
