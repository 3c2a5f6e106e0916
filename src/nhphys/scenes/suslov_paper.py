"""The Suslov problem: the retraction-integrator figures, reproduced and extended.

Figure 1: the constraint-adapted retraction integrators (exp and Cayley) on the principal-axis
data (inertia diag(1, 10, 100), Pi(0) = (1, 1, 0), R(0) = I, h = 0.01 s) for 30 minutes
(180,000 steps): energy error, constraint residual |a . Omega|, orthogonality error |R^T R - I|,
and the rotation error against the exact solution R(t) = exp(t hat(Omega0)).

Figure 2: the unconstrained (Lie-Poisson) integrator on the same data for 18 s: it conserves the
free body's invariants but not the Suslov constraint.

Figure 3: a non-principal inertia, where the motion tends to a steady rotation; the retraction
integrators against the reference (scipy DOP853 at rtol 1e-11).

Run ``python -m nhphys.scenes.suslov_paper [--out DIR] [--minutes M]``; it prints where the PNGs are.
"""

import argparse
import os
import sys
import time

import numpy as np

import nhphys
from nhphys.integrators import LiePoisson, Reference, Retraction
from nhphys.lie import so3
from nhphys.systems import Suslov

INERTIA = np.diag([1.0, 10.0, 100.0])
MOMENTUM0 = np.array([1.0, 1.0, 0.0])
OMEGA0 = np.array([1.0, 0.1, 0.0])  # I^-1 Pi(0), on the constraint plane
STEP = 0.01
NON_PRINCIPAL = np.array([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]])
COLORS = {"exp": "tab:blue", "cayley": "tab:orange", "reference": "black"}


def diagnostics(traj):
    """Error curves of a principal-axis run: dict of name -> (n,) arrays."""
    R = traj.R
    exact = so3.exp(traj.t[:, None] * OMEGA0)
    return {
        "energy": np.abs(traj.energy / traj.energy[0] - 1),
        "constraint": traj.constraint_residual,
        "orthogonality": np.abs(np.swapaxes(R, 1, 2) @ R - np.eye(3)).max(axis=(1, 2)),
        "rotation": np.linalg.norm(R - exact, axis=(1, 2)),
    }


def plot_panels(runs, title, path, time_unit=1.0, time_label="t [s]"):
    """Four log-scale panels of ``diagnostics`` for each named run; writes ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {
        "energy": "relative energy error",
        "constraint": r"constraint residual $|a\cdot\Omega|$",
        "orthogonality": r"$\max|R^TR - I|$",
        "rotation": r"$\|R - \exp(t\,\hat\Omega_0)\|_F$",
    }
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for ax, key in zip(axes.ravel(), labels):
        exact_zero = []
        for name, traj in runs.items():
            values = diagnostics(traj)[key]
            if key == "rotation":  # linear axes show the linear growth
                ax.plot(traj.t / time_unit, values, lw=1, color=COLORS.get(name), label=name)
            elif np.all(values == 0):
                exact_zero.append(name)
            else:
                ax.semilogy(traj.t / time_unit, np.maximum(values, 1e-18), lw=1,
                            color=COLORS.get(name), label=name)
        if exact_zero:
            ax.text(0.5, 0.5, " and ".join(exact_zero) + ":\nexactly 0 at every step",
                    transform=ax.transAxes, ha="center", va="center")
            if not ax.lines:
                ax.set_yticks([])
        ax.set_title(labels[key], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel(time_label)
    axes[1, 1].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_non_principal(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for name, traj in runs.items():
        style = "--" if name == "reference" else "-"
        for i in range(2):
            ax1.plot(traj.t, traj.omega[:, i], style, color=COLORS[name], lw=1,
                     label=name if i == 0 else None)
        if name != "reference":
            ax2.semilogy(traj.t, np.maximum(np.abs(traj.energy / traj.energy[0] - 1), 1e-18),
                         color=COLORS[name], lw=1, label=name)
    ax1.set_xlabel("t [s]")
    ax1.set_title(r"$\Omega_1$, $\Omega_2$ tend to a steady rotation")
    ax1.legend(fontsize=8)
    ax2.set_xlabel("t [s]")
    ax2.set_title("relative energy error (h = 0.01 s)")
    ax2.legend()
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
    fig.suptitle("Suslov problem, non-principal inertia [[1,0,.2],[0,2,.3],[.2,.3,3]], a = e3")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "suslov_paper"),
                        help="folder for the PNG figures (default: out/suslov_paper)")
    parser.add_argument("--minutes", type=float, default=30.0,
                        help="simulated time of figure 1 in minutes (default: 30)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    body = Suslov(INERTIA, axis=[0, 0, 1])
    written = []

    t_final = 60.0 * args.minutes
    runs = {}
    for name in ("exp", "cayley"):
        start = time.perf_counter()
        runs[name] = nhphys.simulate(body, t_final, STEP, Retraction(name), momentum0=MOMENTUM0,
                                     save_every=10, progress=True)
        d = diagnostics(runs[name])
        print(f"{name:7s} {round(t_final / STEP):,} steps in {time.perf_counter() - start:.2f} s:"
              f" energy {d['energy'].max():.1e}, |a.Omega| {d['constraint'].max():.1e},"
              f" |R^T R - I| {d['orthogonality'][-1]:.1e}, rotation error at 18 s"
              f" {d['rotation'][180]:.2e}, at the end {d['rotation'][-1]:.2e}")
    path = os.path.join(args.out, "fig1_suslov_retraction.png")
    plot_panels(runs, f"Suslov problem, constraint-adapted retraction integrators, h = {STEP} s",
                path, time_unit=60.0, time_label="t [min]")
    written.append(path)

    lp = {"exp": nhphys.simulate(body, 18.0, STEP, LiePoisson("exp"), momentum0=MOMENTUM0)}
    d = diagnostics(lp["exp"])
    print(f"Lie-Poisson 18 s: |a.Omega| reaches {d['constraint'].max():.2e}")
    path = os.path.join(args.out, "fig2_lie_poisson.png")
    plot_panels(lp, "Unconstrained (Lie-Poisson) exp integrator on the Suslov data", path)
    written.append(path)

    body2 = Suslov(NON_PRINCIPAL, axis=[0, 0, 1])
    omega0 = [1.0, 0.5, 0.0]
    runs2 = {name: nhphys.simulate(body2, 300.0, STEP, Retraction(name), omega0=omega0,
                                   save_every=10) for name in ("exp", "cayley")}
    runs2["reference"] = nhphys.simulate(body2, 300.0, 0.5, Reference(), omega0=omega0)
    for name in ("exp", "cayley"):
        err = np.abs(runs2[name].omega[::5] - runs2["reference"].omega).max()
        print(f"non-principal {name}: max |Omega - Omega_ref| {err:.1e}, final Omega "
              f"{np.round(runs2[name].omega[-1], 6)}")
    path = os.path.join(args.out, "fig3_non_principal.png")
    plot_non_principal(runs2, path)
    written.append(path)

    print("wrote:")
    for p in written:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
