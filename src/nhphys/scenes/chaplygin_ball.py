"""The Chaplygin ball: a ball with unequal moments of inertia, centre of mass at its centre.

A sphere of radius 0.1 whose mass is distributed so that its principal moments differ
(diag(1.5, 4, 6) x 1e-3 kg m^2 for 1 kg) rolls without slipping on a horizontal plane. Its centre
drifts along a wobbling path (the spatial angular velocity changes as the unequal moments turn),
while the angular momentum about the contact point,
``A I Omega + m (a - x) x da/dt``, stays constant (the contact force and gravity have no moment
about the contact point, which moves parallel to the centre). Figures: the path of the centre and
the drift of that momentum (``momentum.png``), and energy error, residuals and contact path
(``diagnostics.png``).

Run ``python -m nhphys.scenes.chaplygin_ball [--out DIR]``: writes PNGs into ``out/chaplygin_ball/``
and prints their paths. ``nhphys view chaplygin_ball`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.lie import so3
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import RollingBody

RADIUS = 0.1
ball = nhphys.RigidBody(1.0, [1.5e-3, 4e-3, 6e-3], Sphere(RADIUS), name="chaplygin_ball")
ground = Plane(extent=1.0)
START = dict(orientation=so3.exp([0.3, -0.2, 0.5]), omega=[0.6, 1.2, 12.0], position=[0, 0, 0])

scene = Scene(name="chaplygin_ball", camera=(0.2, -1.0, 0.9))
scene.add_ground(ground, color="#d9d4c7")
scene.add_body(ball, RollingContact(ground), color="#5b7fb0", **START)

defaults = {"t_final": 8.0, "dt": 2e-3, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def contact_momentum(traj, mass):
    """Angular momentum about the contact point, in space: (n, 3)."""
    spin = np.einsum("nij,nj->ni", traj.R, traj.omega @ ball.inertia)
    return spin + mass * np.cross(traj.position - traj.contact_point, traj.velocity)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "chaplygin_ball"))
    parser.add_argument("--t-final", type=float, default=60.0)
    parser.add_argument("--dt", type=float, default=2e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    system = RollingBody(ball, ground)
    traj = nhphys.simulate(system, args.t_final, args.dt, save_every=5, **START)
    K = contact_momentum(traj, ball.mass)
    drift = np.linalg.norm(K - K[0], axis=1) / np.linalg.norm(K[0])
    print(f"momentum about the contact point: max relative drift {drift.max():.1e}; "
          f"energy: max |dE/E| {np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; "
          f"max residual {traj.constraint_residual.max():.1e}")
    paths = [os.path.join(args.out, "momentum.png"), os.path.join(args.out, "diagnostics.png")]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    # the centre drifts along a nearly straight line; its wobble shows across that line
    p = traj.position[:, :2] - traj.position[0, :2]
    along = p[-1] / np.linalg.norm(p[-1])
    ax1.plot(p @ along, 1e3 * (p @ np.array([-along[1], along[0]])), lw=0.8)
    ax1.set_title("path of the centre: across its mean direction, magnified")
    ax1.set_xlabel("along the mean direction [m]")
    ax1.set_ylabel("across [mm]")
    ax2.semilogy(traj.t, np.maximum(drift, 1e-18), lw=1)
    ax2.set_title("angular momentum about the contact point: |K - K0| / |K0|")
    ax2.set_xlabel("t [s]")
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    plt.close(plots.diagnostics(traj, paths[1], title="Chaplygin ball on a plane"))
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
