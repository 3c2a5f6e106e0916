"""How the energy errors of each integrator spread over random starts of a rolling ellipsoid.

An ensemble study with :func:`nhphys.ensemble`. The ellipsoid of
:mod:`nhphys.scenes.ellipsoid_plane` starts from ``--runs`` random orientations (uniform on
SO(3)) with random angular velocities (each component uniform in [-4, 4] rad/s), and each
integrator steps every run for ``t_final`` with the same step. The figure
(``energy_errors.png``) is the histogram, over the runs, of the largest relative energy error
``max |E(t) - E(0)| / E(0)`` of each: the second-order exponential and Cayley retractions and
the fourth-order composition. Runs whose step failed are counted and left out.

Run ``python -m nhphys.scenes.energy_errors [--out DIR] [--runs 1000]``: writes
``energy_errors.png`` into ``out/energy_errors/`` and prints the medians and its path.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys.scenes._figures import save_figure
from nhphys.scenes.ellipsoid_plane import egg, ground
from nhphys.systems import RollingBody

INTEGRATORS = ("exp", "cayley", "exp4")


def random_starts(count, seed=20261203):
    """Orientations (count, 3, 3), uniform on SO(3), and angular velocities (count, 3)."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    orientation = Rotation.random(count, random_state=rng).as_matrix()
    return orientation, rng.uniform(-4.0, 4.0, (count, 3))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "energy_errors"))
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--t-final", type=float, default=10.0)
    parser.add_argument("--dt", type=float, default=5e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    orientation, omega = random_starts(args.runs)
    system = RollingBody(egg, ground)
    errors = {}
    for name in INTEGRATORS:
        ds = nhphys.ensemble(system, args.t_final, args.dt, name, orientation=orientation,
                             omega=omega, save_every=10)
        energy = np.asarray(ds.energy)
        ok = np.asarray(ds.status) == "ok"
        relative = np.nanmax(np.abs(energy - energy[:, :1]), axis=1) / np.abs(energy[:, 0])
        errors[name] = relative[ok]
        print(f"{name:7s} median max |dE/E| {np.median(relative[ok]):.2e}, largest "
              f"{relative[ok].max():.2e}; {(~ok).sum()} of {args.runs} runs failed")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    low = min(e.min() for e in errors.values())
    high = max(e.max() for e in errors.values())
    bins = np.logspace(np.log10(low) - 0.1, np.log10(high) + 0.1, 50)
    for name, e in errors.items():
        ax.hist(e, bins=bins, histtype="step", lw=1.5, label=f"{name} (median {np.median(e):.1e})")
    ax.set_xscale("log")
    ax.set_xlabel("max |E(t) - E(0)| / E(0) over the run")
    ax.set_ylabel("runs")
    ax.set_title(f"rolling ellipsoid, {args.runs} random starts, h = {args.dt:g} s, "
                 f"{args.t_final:g} s")
    ax.legend()
    return save_figure(fig, args.out, "energy_errors.png")


if __name__ == "__main__":
    sys.exit(main())
