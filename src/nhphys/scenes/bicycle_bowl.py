"""The benchmark bicycle riding up the wall of a wide bowl, slowing, and falling over.

The riderless Whipple-Carvallo bicycle (``GroundBicycle``: the benchmark's bodies with both
wheels held on a curved ground) starts 5 m from the bottom of the bowl ``z = (x^2 + y^2) /
400`` at 5 m/s with a 0.01 rad lean, heading across it. Above its weave speed (4.29 m/s) it is
self-stable and rides on upright; climbing the far wall it slows below the weave speed (from
3.5 s) and its lean starts to grow; it stops (7.6 s), rolls back and falls over, where the run
stops (8.07 s: the wheels' contacts are lost). The energy error stays below 1e-7 until the
fall (7.9 s).

Figure: ``bicycle_bowl.png`` (the speed against the weave speed, the roll angle, the path from
above, and the energy error).

Run ``python -m nhphys.scenes.bicycle_bowl [--out DIR] [--dt H]``: writes the PNG into
``out/bicycle_bowl/`` and prints its path. ``nhphys view bicycle_bowl`` shows it live.
"""

import argparse
import os

import numpy as np

import nhphys
from nhphys.integrators import DLA
from nhphys.surfaces import Paraboloid
from nhphys.systems import Bicycle, GroundBicycle

BOWL = Paraboloid(20.0, 20.0, extent=25.0)  # z = (x^2 + y^2) / 400
START = {"speed": 5.0, "roll": 0.01, "position": (-5.0, 0.0)}


def _viewable():
    bike = GroundBicycle(BOWL)
    shown = nhphys.Scene(name="bicycle_bowl", camera=(5.0, -14.0, 6.0))
    shown.add_ground(BOWL, color="#c9c3b8", resolution=96)
    shown.add_articulated(bike, name="bicycle", color="#8c3b2e", **bike.start(**START))
    return shown


scene = _viewable()
defaults = {"t_final": 8.0, "dt": 1e-3, "fps": 25.0, "size": (480, 360)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "bicycle_bowl"))
    parser.add_argument("--t-final", type=float, default=12.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bike = GroundBicycle(BOWL)
    try:
        traj = nhphys.simulate(bike, args.t_final, args.dt, integrator=DLA(), save_every=10,
                               **bike.start(**START))
        ended = f"rode {args.t_final:g} s"
    except nhphys.NewtonError as failure:  # it fell over: keep every frame before it
        traj = failure.trajectory
        ended = f"fell over at t = {traj.t[-1]:.2f} s ({failure})"
    weave = Bicycle().self_stable_speeds()[0]
    q, v = traj.q, traj.v
    speed = v[:, 0] * np.cos(q[:, 3]) + v[:, 1] * np.sin(q[:, 3])
    slow = traj.t[np.argmax(speed < weave)] if np.any(speed < weave) else None
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    axes[0, 0].plot(traj.t, speed)
    axes[0, 0].axhline(weave, color="k", ls="--", lw=1, label=f"weave speed {weave:.2f} m/s")
    axes[0, 0].set_ylabel("speed [m/s]")
    axes[0, 0].legend()
    axes[0, 1].plot(traj.t, q[:, 4])
    axes[0, 1].set_ylabel("roll [rad]")
    axes[1, 0].plot(q[:, 0], q[:, 1])
    axes[1, 0].set_xlabel("x [m]")
    axes[1, 0].set_ylabel("y [m]")
    axes[1, 0].set_aspect("equal", adjustable="datalim")
    axes[1, 1].semilogy(traj.t[1:], np.abs(traj.energy[1:] / traj.energy[0] - 1))
    axes[1, 1].set_ylabel("relative energy error")
    for ax in (axes[0, 0], axes[0, 1], axes[1, 1]):
        ax.set_xlabel("t [s]")
    fig.suptitle("the benchmark bicycle in the bowl z = (x^2 + y^2) / 400")
    fig.tight_layout()
    path = os.path.join(args.out, "bicycle_bowl.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"{ended}; below the weave speed from t = {slow if slow is None else round(slow, 2)} "
          f"s; largest |roll| {np.abs(q[:, 4]).max():.3g} rad; energy error "
          f"{np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; largest constraint residual "
          f"{traj.constraint_residual.max():.1e}")
    print(path)
    return [path]


if __name__ == "__main__":
    main()
