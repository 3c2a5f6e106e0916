"""Energy behaviour of the nonholonomic Newmark family on the contact oscillator and on its
non-reversible variant (Modin & Verdier).

Members shown: the symmetric second-order ones (beta = beta', alpha = 1/2), the explicit
F^{0,0,0} and its adjoint F^{0,0,1}, a non-symmetric beta != beta', the composition
F^{0,0,1}_{h/2} o F^{0,0,0}_{h/2}, and DLA (midpoint and trapezoidal). On the reversible
problem every symmetric method keeps the energy error bounded; the first-order members drift.
The non-reversible variant adds the gauge term -v . grad S: Newmark, built on the second-order
equation, gives exactly the same steps as on the reversible problem, so its members behave as
there (and the composition stays bounded), while DLA, which discretises the gauge term, drifts.

Run ``python -m nhphys.scenes.contact_oscillator [--out DIR] [--steps N]``; it prints where the PNGs are.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys.integrators import DLA, Composition, Newmark
from nhphys.systems import ContactOscillator, NonReversibleContactOscillator

IC = {"q0": [1.0, 1.0, 0.5], "v0": [-0.5, 0.0, 0.5]}
H = 0.1
METHODS = {
    "F^{0,0,1/2}": Newmark(0.0, 0.0, 0.5),
    "F^{1/4,1/4,1/2}": Newmark(0.25, 0.25, 0.5),
    "F^{0,0,0} (explicit)": Newmark(0.0, 0.0, 0.0),
    "F^{0,0,1}": Newmark(0.0, 0.0, 1.0),
    "F^{0,1/4,1/2}": Newmark(0.0, 0.25, 0.5),
    "F^{0,0,1}_{h/2} o F^{0,0,0}_{h/2}": Composition.symmetric(Newmark(0.0, 0.0, 0.0)),
    "DLA midpoint": DLA("midpoint"),
    "DLA trapezoidal": DLA("trapezoidal"),
}


def energy_error(system, method, steps, save_every, name):
    try:
        traj = nhphys.simulate(system, steps * H, H, integrator=method, save_every=save_every,
                               **IC)
    except nhphys.NewtonError as err:
        # the energy of this member grows until Newton fails: keep the run up to that step
        print(f"  {name}: {err}")
        kept = (err.step // save_every) * save_every
        traj = nhphys.simulate(system, kept * H, H, integrator=method, save_every=save_every,
                               **IC)
    return traj.t, traj.energy - traj.energy[0]


def windowed_max(t, x, windows=200):
    """Envelope of ``x``: its maximum over consecutive windows, at the windows' ends."""
    size = max(1, len(x) // windows)
    n = (len(x) // size) * size
    if n == 0:
        return t, x
    return t[size - 1:n:size], x[:n].reshape(-1, size).max(axis=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "contact_oscillator"))
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--epsilon", type=float, default=0.1)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = {"reversible": ContactOscillator(args.epsilon),
               "non-reversible": NonReversibleContactOscillator(args.epsilon)}
    save_every = max(1, args.steps // 4000)
    fig, axes = plt.subplots(2, 1, figsize=(11, 9), sharex=True)
    for ax, (label, system) in zip(axes, systems.items()):
        print(f"{label} contact oscillator, epsilon = {args.epsilon}, h = {H}, "
              f"{args.steps} steps:")
        for name, method in METHODS.items():
            t, dE = energy_error(system, method, args.steps, save_every, name)
            n = len(dE)
            drift = dE[-max(1, n // 10):].mean() - dE[:max(1, n // 10)].mean()
            print(f"  {name:36s} max |E - E0| = {np.abs(dE).max():.2e}, drift = {drift:+.2e}")
            tw, envelope = windowed_max(t, np.abs(dE))
            ax.semilogy(tw, envelope + 1e-16, lw=1.2, label=name)
        ax.set_title(f"{label} contact oscillator: max |E - E0| over windows of "
                     f"{args.steps * H / 200:g} time units, h = {H}")
        ax.set_ylim(1e-7, 10)
        ax.legend(fontsize=7, ncol=2, loc="lower right")
    axes[1].set_xlabel("t")
    fig.tight_layout()
    path = os.path.join(args.out, "energy.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(path)
    return [path]


if __name__ == "__main__":
    main(sys.argv[1:])
