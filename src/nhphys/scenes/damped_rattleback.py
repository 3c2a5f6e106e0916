"""A damped rattleback: spun the "wrong" way, it reverses once and comes to rest.

The rattleback of ``nhphys.scenes.rattleback`` (Kane & Levinson's) with two dissipative force
elements: viscous spin friction about the contact normal (``SpinFriction(1e-4)``, N m s) and
rolling resistance (``RollingResistance(5e-5)``, m s: a torque ``-mu N Omega_t`` opposing the
rocking and rolling rates). Spun at -5 rad/s with tilts of 0.5 degrees, it rocks, reverses
once (about 2.4 s), and the reversed spin then dies away, as a real rattleback's does; without
the damping it would reverse back and forth for ever. Figures: the vertical spin against time
with and without damping (``spin.png``), and the energy, the work of the damping and their
difference, which the integrator conserves to its order (``energy.png``).

Run ``python -m nhphys.scenes.damped_rattleback [--out DIR] [--t-final T]``: writes PNGs into
``out/damped_rattleback/`` and prints their paths. ``nhphys view damped_rattleback`` shows it
live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys import forces as fe
from nhphys.scenes.rattleback import R0, ground, rattleback, vertical_spin
from nhphys.systems import RollingBody

SPIN = -5.0
DAMPING = (fe.SpinFriction(1e-4), fe.RollingResistance(5e-5))

scene = Scene(name="damped_rattleback", camera=(0.3, -0.6, 0.45))
scene.add_ground(ground, color="#d8d2c4")
scene.add_body(rattleback, RollingContact(ground), color="#8f4a2f", position=[0.0, 0.0, 0.0],
               orientation=R0, omega=[0.0, 0.0, SPIN], resolution=64, forces=list(DAMPING))

defaults = {"t_final": 20.0, "dt": 1e-3, "integrator": "exp", "fps": 15.0, "speed": 2.0,
            "size": (480, 360)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "damped_rattleback"))
    parser.add_argument("--t-final", type=float, default=60.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    save = max(1, round(0.01 / args.dt))
    runs = {}
    for label, forces in (("damped", DAMPING), ("undamped", ())):
        system = RollingBody(rattleback, ground, forces=list(forces))
        runs[label] = nhphys.simulate(system, args.t_final, args.dt, orientation=R0,
                                      omega=[0, 0, SPIN], save_every=save)
    damped = runs["damped"]
    spin = vertical_spin(damped)
    flips = np.flatnonzero(np.sign(spin[:-1]) != np.sign(spin[1:]))
    balance = damped.energy - damped.work
    print(f"damped: {flips.size} reversal(s)"
          + (f", at t = {damped.t[flips[0]]:.2f} s" if flips.size else "")
          + f"; vertical spin at the end {spin[-1]:+.3f} rad/s; work of the damping "
          f"{damped.work[-1]:.4f} J; energy - work drifts by at most "
          f"{np.abs(balance - balance[0]).max():.1e} J; max residual "
          f"{damped.constraint_residual.max():.1e}")
    paths = [os.path.join(args.out, "spin.png"), os.path.join(args.out, "energy.png")]
    fig, ax = plt.subplots(figsize=(8, 4))
    for label, traj in runs.items():
        ax.plot(traj.t, vertical_spin(traj), lw=1, label=label)
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("vertical spin [rad/s]")
    ax.set_title(f"rattleback spun at {SPIN:+g} rad/s: spin friction and rolling resistance")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    plt.close(plots.energy_balance(damped, paths[1], work_label="work of the damping",
                                   title=f"damped rattleback, Retraction('exp'), h = {args.dt:g} s"))
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
