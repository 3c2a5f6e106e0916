"""The vertical rolling disk: the contact point runs round circles of radius
R |spin / turning rate|.

Figures: the contact point's path for a few turning rates, and, for the retraction integrator
(exp, Cayley) and Newmark, the error of the discrete circle's radius and angular rate against
the exact ones as the step shrinks (second order), with the constraint residual.

Run ``python -m nhphys.scenes.vertical_disk [--out DIR]``; it prints where the PNGs are.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys.integrators import Newmark, Retraction
from nhphys.systems import VerticalDisk

DISK = VerticalDisk(mass=1.0, radius=0.5, inertia_axial=0.125, inertia_diametral=0.0625)
POSE0 = np.array([0.3, -0.2, 0.4])
METHODS = {"retraction (exp)": Retraction("exp"), "retraction (Cayley)": Retraction("cayley"),
           "Newmark 0,0,1/2": Newmark(0.0, 0.0, 0.5)}


def fit_circle(p):
    A = np.column_stack([p[:, 0], p[:, 1], np.ones(len(p))])
    D, E, F = np.linalg.lstsq(A, -(p[:, 0] ** 2 + p[:, 1] ** 2), rcond=None)[0]
    c = -0.5 * np.array([D, E])
    return c, np.sqrt(c @ c - F)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "vertical_disk"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 5))
    for w0 in (0.5, 1.3, 3.0):
        traj = nhphys.simulate(DISK, 2 * np.pi / w0, np.pi / w0 / 200, position=POSE0[:2],
                               heading=POSE0[2], turning_rate=w0, spin=2.0)
        ax0.plot(traj.pose[:, 0], traj.pose[:, 1], label=f"turning rate {w0}, spin 2")
    ax0.set_aspect("equal")
    ax0.set_title("contact point paths (retraction)")
    ax0.legend()

    w0, s0 = 1.3, 2.0
    _centre, rho, rate = DISK.circle(POSE0, w0, s0)
    hs = np.array([1.6e-2, 8e-3, 4e-3, 2e-3, 1e-3])
    for name, method in METHODS.items():
        errs = []
        for h in hs:
            traj = nhphys.simulate(DISK, round(10 / h) * h, h, integrator=method,
                                   position=POSE0[:2], heading=POSE0[2], turning_rate=w0,
                                   spin=s0)
            c, r = fit_circle(traj.pose[:, :2])
            ang = np.unwrap(np.arctan2(traj.pose[:, 1] - c[1], traj.pose[:, 0] - c[0]))
            errs.append((abs(r - rho) / rho, abs(np.polyfit(traj.t, ang, 1)[0] - rate) / rate))
        errs = np.array(errs)
        ax1.loglog(hs, errs[:, 0], "o-", label=f"{name}: radius")
        ax1.loglog(hs, errs[:, 1], "s--", label=f"{name}: rate")
        print(f"{name:22s} h = {hs[-1]:g}: radius rel. error {errs[-1, 0]:.2e}, "
              f"rate rel. error {errs[-1, 1]:.2e}")
    ax1.loglog(hs, 0.1 * hs**2, "k:", label="h^2")
    ax1.set_xlabel("h")
    ax1.set_title(f"exact circle: radius {rho:g}, rate {rate:g}")
    ax1.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(args.out, "circles.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(path)
    return [path]


if __name__ == "__main__":
    main(sys.argv[1:])
