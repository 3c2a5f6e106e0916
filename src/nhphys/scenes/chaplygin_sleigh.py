"""The Chaplygin sleigh: a knife edge on a level plane settles into straight-line motion.

The centre of mass is ``offset`` ahead of the blade's contact point; whatever the initial spin,
the turning rate decays like ``sech`` and the speed tends to ``V = sqrt(2E/m)`` like ``tanh``
(closed form in :mod:`nhphys.systems.knife_edge`). Figures: the path of the contact point for
several initial spins; v(t) and the turning rate against the closed form; the errors of the retraction
integrator (exp, Cayley) and of second-order Newmark; energy and constraint residual.

Run ``python -m nhphys.scenes.chaplygin_sleigh [--out DIR] [--dt H]``; it prints where the PNGs are.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys.integrators import Newmark, Retraction
from nhphys.systems import KnifeEdge

SLEIGH = KnifeEdge(mass=1.0, inertia=0.5, offset=0.5)
IC = {"position": [0.0, 0.0], "heading": 0.0, "velocity": 0.1, "turning_rate": 1.0}
T_FINAL = 20.0
METHODS = {
    "retraction (exp)": Retraction("exp"),
    "retraction (Cayley)": Retraction("cayley"),
    "Newmark beta=beta'=0, alpha=1/2": Newmark(0.0, 0.0, 0.5),
    "Newmark beta=beta'=1/4, alpha=1/2": Newmark(0.25, 0.25, 0.5),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "chaplygin_sleigh"))
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    # 1. paths for several initial spins
    fig, ax = plt.subplots(figsize=(7, 5))
    for w0 in (0.5, 1.0, 2.0, 4.0):
        traj = nhphys.simulate(SLEIGH, T_FINAL, 0.01, velocity=0.1, turning_rate=w0)
        ax.plot(traj.pose[:, 0], traj.pose[:, 1], label=f"turning rate {w0}")
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("Chaplygin sleigh: contact point paths (retraction, h = 0.01)")
    ax.legend()
    paths.append(os.path.join(args.out, "paths.png"))
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    # 2. approach to straight-line motion and the closed form
    runs = {name: nhphys.simulate(SLEIGH, T_FINAL, args.dt, integrator=m, save_every=10, **IC)
            for name, m in METHODS.items()}
    t = next(iter(runs.values())).t
    v_exact, w_exact = SLEIGH.sleigh_closed_form(t, IC["velocity"], IC["turning_rate"])
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    axes[0, 0].plot(t, v_exact, "k", label="V tanh(kt + c)")
    axes[0, 0].plot(t, w_exact, "k--", label="omega sech(kt + c)")
    traj = runs["retraction (exp)"]
    axes[0, 0].plot(t[::50], traj.velocity[::50], "o", ms=3, label="v (retraction)")
    axes[0, 0].plot(t[::50], traj.turning_rate[::50], "s", ms=3,
                    label="turning rate (retraction)")
    axes[0, 0].set_title("velocity and turning rate")
    axes[0, 0].legend(fontsize=8)
    for name, traj in runs.items():
        err = np.abs(traj.velocity - v_exact) + np.abs(traj.turning_rate - w_exact)
        axes[0, 1].semilogy(t[1:], err[1:], label=name)
        axes[1, 0].semilogy(t[1:], np.abs(traj.energy[1:] / traj.energy[0] - 1) + 1e-17,
                            label=name)
        axes[1, 1].semilogy(t[1:], traj.constraint_residual[1:] + 1e-18, label=name)
    axes[0, 1].set_title(f"|v - closed form| + |turning rate - closed form|, h = {args.dt:g}")
    axes[1, 0].set_title("relative energy error")
    axes[1, 1].set_title("sideways speed of the contact point")
    for ax in axes[1]:
        ax.set_xlabel("t [s]")
    axes[0, 1].legend(fontsize=7)
    fig.tight_layout()
    paths.append(os.path.join(args.out, "closed_form.png"))
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    for name, traj in runs.items():
        err = max(np.abs(traj.velocity - v_exact).max(), np.abs(traj.turning_rate - w_exact).max())
        print(f"{name:36s} max error vs closed form: {err:.2e}")
    for p in paths:
        print(p)
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
