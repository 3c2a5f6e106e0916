"""A knife edge on an inclined plane, contact under the centre of mass: it does not slide down.

With ``offset = 0`` the turning rate is constant and the blade traces cycloid-like loops that
drift sideways across the slope (x is downhill):
``x = g sin(a) sin^2(wt) / (2 w^2)``, ``y = g sin(a) (wt - sin(wt) cos(wt)) / (2 w^2)``.
Figures: the path against the closed form, and the position error of Newmark members and DLA.

Run ``python -m nhphys.scenes.inclined_knife_edge [--out DIR]``; it prints where the PNGs are.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys.integrators import DLA, Composition, Newmark
from nhphys.systems import KnifeEdge

EDGE = KnifeEdge(mass=2.0, inertia=0.3, offset=0.0, incline=0.4)
POSE0 = (0.0, 0.0, 0.0)  # (x, y, heading)
IC = {"position": POSE0[:2], "heading": POSE0[2], "velocity": 0.0, "turning_rate": 1.5}
METHODS = {
    "Newmark 0,0,1/2": Newmark(0.0, 0.0, 0.5),
    "Newmark 1/6,1/6,1/2": Newmark(1 / 6, 1 / 6, 0.5),
    "Newmark 0,0,0 (explicit)": Newmark(0.0, 0.0, 0.0),
    "F001(h/2) o F000(h/2)": Composition.symmetric(Newmark(0.0, 0.0, 0.0)),
    "DLA midpoint": DLA("midpoint"),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "inclined_knife_edge"))
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 5))
    t = np.linspace(0, 10, 2001)
    exact, _ = EDGE.inclined_closed_form(t, POSE0, IC["velocity"], IC["turning_rate"])
    ax0.plot(exact[:, 1], exact[:, 0], "k", lw=1, label="closed form")
    for name, method in METHODS.items():
        traj = nhphys.simulate(EDGE, 10.0, args.dt, integrator=method, save_every=10, **IC)
        pose, _ = EDGE.inclined_closed_form(traj.t, POSE0, IC["velocity"], IC["turning_rate"])
        err = np.linalg.norm(traj.pose[:, :2] - pose[:, :2], axis=1)
        ax1.semilogy(traj.t[1:], err[1:], label=name)
        print(f"{name:28s} max position error over 10 s: {err.max():.2e}")
        if name == "Newmark 1/6,1/6,1/2":
            ax0.plot(traj.pose[::40, 1], traj.pose[::40, 0], "o", ms=3, label=name)
    ax0.invert_yaxis()
    ax0.set_xlabel("y (across the slope)")
    ax0.set_ylabel("x (downhill)")
    ax0.set_title("contact point on the inclined plane")
    ax0.legend()
    ax1.set_xlabel("t [s]")
    ax1.set_title(f"position error against the closed form, h = {args.dt:g}")
    ax1.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(args.out, "inclined.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(path)
    return [path]


if __name__ == "__main__":
    main(sys.argv[1:])
