"""A coin rolling in a steady circle: lean, turning rate and the contact circle stay put.

A thin uniform coin (radius 12.75 mm, 8.5 g) leans 0.35 rad from the vertical and turns at
6 rad/s; its spin is the one of the steady circular motion, from Kane's equations of the rolling
disk (``nhphys.validation.kane_disk.steady_spin``, in closed form). Started there, it keeps its
lean and turning rate and its contact point runs round one circle. Figures: energy error,
residuals and contact path (``diagnostics.png``), and the relative deviation of lean and turning
rate from the steady values with the second-order step and its fourth-order composition
(``steady.png``).

Run ``python -m nhphys.scenes.coin [--out DIR]``: writes PNGs into ``out/coin/`` and prints their paths.
``nhphys view coin`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.integrators import Retraction
from nhphys.shapes import Disk
from nhphys.surfaces import Plane
from nhphys.systems import RollingBody

MASS, RADIUS, GRAVITY = 0.0085, 0.01275, 9.81
LEAN, TURN = 0.35, 6.0  # rad from vertical, rad/s


def steady_start():
    """Initial conditions of the steady circle (imports sympy for Kane's equations)."""
    from nhphys.validation import kane_disk

    spin = kane_disk.steady_spin(LEAN, TURN, MASS, GRAVITY, RADIUS)
    state = np.array([0.0, LEAN, 0.0, 0.0, spin, TURN * np.cos(LEAN), 0.0, 0.0])
    return kane_disk.to_nhphys(state)


coin = nhphys.RigidBody(MASS, Disk.solid_inertia(MASS, RADIUS), Disk(RADIUS), name="coin")
ground = Plane(extent=0.15)
START = steady_start()

scene = Scene(name="coin", camera=(0.0, -0.25, 0.15))
scene.add_ground(ground, color="#d9d4c7")
scene.add_body(coin, RollingContact(ground), color="#c8a23c", resolution=64,
               **START)  # `R0`, `omega0`, `ground_point`: the older names, accepted too

defaults = {"t_final": 3.0, "dt": 2e-4, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "coin"))
    parser.add_argument("--t-final", type=float, default=20.0)
    parser.add_argument("--dt", type=float, default=2e-4)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.validation import kane_disk
    from nhphys.viz import plots

    system = RollingBody(coin, ground, gravity=GRAVITY)
    traj = nhphys.simulate(system, args.t_final, args.dt, save_every=10, **START)
    paths = [os.path.join(args.out, "diagnostics.png"), os.path.join(args.out, "steady.png")]
    plt.close(plots.diagnostics(traj, paths[0], title="coin on its steady circle"))

    fig, ax = plt.subplots(figsize=(7, 4))
    for order, run in ((2, traj), (4, None)):
        if run is None:
            run = nhphys.simulate(system, args.t_final, args.dt, Retraction("exp", order=4),
                                  save_every=10, **START)
        state = kane_disk.from_nhphys(run.R, run.omega, run.contact_point)
        lean_dev = np.abs(state[:, 1] / LEAN - 1)
        turn_dev = np.abs(state[:, 5] / np.cos(state[:, 1]) / TURN - 1)
        ax.semilogy(run.t, np.maximum(lean_dev, 1e-17), lw=1, label=f"lean, order {order}")
        ax.semilogy(run.t, np.maximum(turn_dev, 1e-17), lw=1, label=f"turning rate, order {order}")
        print(f"order {order}: lean deviation {lean_dev.max():.2e}, turning-rate deviation "
              f"{turn_dev.max():.2e}, energy error "
              f"{np.abs(run.energy / run.energy[0] - 1).max():.2e}, largest residual "
              f"{run.constraint_residual.max():.1e}")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("relative deviation from the steady circle")
    ax.set_title(f"h = {args.dt:g} s: bounded wobbles of order h^2 and h^4, no drift")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    for p in paths:
        print(p)
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
