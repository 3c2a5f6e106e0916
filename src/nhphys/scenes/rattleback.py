"""The rattleback: a tilted, spinning ellipsoid that reverses its spin.

Kane & Levinson's (1982) rattleback: semi-axes 20, 3 and 2 cm, centre of mass 1 cm below the
ellipsoid's centre, inertia per unit mass A, B, C = 2, 16, 17 cm^2 with the product D = -0.2 cm^2,
on a horizontal plane. Spun at 5 rad/s about the vertical with tilts of 0.5 degrees, it slows,
rocks, and turns the other way; spun the other way it reverses sooner. Figures: the vertical spin
against time for both senses (``spin.png``, with the eq.-29 reference when ``--reference`` is
given, which takes a minute or two), and energy error, residuals and contact path
(``diagnostics.png``).

Run ``python -m nhphys.scenes.rattleback [--out DIR] [--reference]``: writes PNGs into
``out/rattleback/`` and prints their paths. ``nhphys view rattleback`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.lie import so3
from nhphys.surfaces import Ellipsoid, Plane
from nhphys.systems import RollingBody

MASS = 1.0
INERTIA = MASS * 1e-4 * np.array([[2.0, -0.2, 0.0], [-0.2, 16.0, 0.0], [0.0, 0.0, 17.0]])
TILT = np.deg2rad(0.5)
R0 = so3.exp([TILT, TILT, 0.0])
SPIN = 5.0

rattleback = nhphys.RigidBody(MASS, INERTIA, Ellipsoid([0.2, 0.03, 0.02]), com=[0, 0, -0.01],
                              name="rattleback")
ground = Plane(extent=0.4)

scene = Scene(name="rattleback", camera=(0.3, -0.6, 0.45))
scene.add_ground(ground, color="#d8d2c4")
scene.add_body(rattleback, RollingContact(ground), color="#2f6f8f", position=[0.0, 0.0, 0.0],
               orientation=R0, omega=[0.0, 0.0, SPIN], resolution=64)

defaults = {"t_final": 20.0, "dt": 1e-3, "integrator": "exp", "fps": 15.0, "speed": 2.0,
            "size": (480, 360)}


def vertical_spin(traj):
    """Spatial angular velocity about the vertical, (n,)."""
    return np.einsum("nij,nj->ni", traj.R, traj.omega)[:, 2]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "rattleback"))
    parser.add_argument("--t-final", type=float, default=30.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--reference", action="store_true",
                        help="also integrate eq. 29 with DOP853 (slow) and overlay it")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.integrators import Reference
    from nhphys.viz import plots

    system = RollingBody(rattleback, ground)
    save = max(1, round(0.01 / args.dt))
    runs = {s: nhphys.simulate(system, args.t_final, args.dt, orientation=R0, omega=[0, 0, s],
                               save_every=save) for s in (SPIN, -SPIN)}
    paths = [os.path.join(args.out, "spin.png"), os.path.join(args.out, "diagnostics.png")]
    fig, ax = plt.subplots(figsize=(8, 4))
    for s, traj in runs.items():
        ax.plot(traj.t, vertical_spin(traj), lw=1, label=f"spun at {s:+g} rad/s")
        flips = np.flatnonzero(np.sign(vertical_spin(traj)[:-1]) != np.sign(
            vertical_spin(traj)[1:]))
        first = f"{traj.t[flips[0]]:.2f} s" if flips.size else "none"
        print(f"spun at {s:+g} rad/s: first reversal at {first}; max |dE/E| "
              f"{np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; max residual "
              f"{traj.constraint_residual.max():.1e}")
    if args.reference:
        ref = nhphys.simulate(system, args.t_final, 0.05, Reference(rtol=1e-10, atol=1e-12),
                              orientation=R0, omega=[0, 0, SPIN])
        ax.plot(ref.t, vertical_spin(ref), "k.", ms=2, label="eq. 29 reference (DOP853)")
        mine = vertical_spin(runs[SPIN])[:: round(0.05 / (args.dt * save))]
        print(f"largest difference from the reference: {np.abs(mine - vertical_spin(ref)).max():.2e}")
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("vertical spin [rad/s]")
    ax.set_title(f"rattleback, Retraction('exp'), h = {args.dt:g} s")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    plt.close(plots.diagnostics(runs[SPIN], paths[1], title="rattleback spun at +5 rad/s"))
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
