"""A ball on a turntable: it circles at 2/7 of the table's rate instead of flying off.

A homogeneous ball (radius 5 cm, 0.3 kg) is set down on a table turning at one turn a second,
with some spin and no velocity relative to the table. On the flat table its centre goes round a
fixed circle at 2/7 of the table's rate, the classic nonholonomic result (``W k / (1 + k)`` with
``k = I / (m r^2) = 2/5``). On a turntable tilted by 5 degrees it does not roll down the slope:
it circles while it drifts across the slope, horizontally, at ``5 g sin(beta) / (2 W)`` (the
steady solution of ``dv/dt = (2W/7) e_z x v + (5/7) g_t``, with ``g_t`` gravity along the
table).
Figures: the paths of the centre in space over ten turns of the table (``paths.png``), and
the distance from the 2/7 circle and the balance ``energy - work`` (``accuracy.png``).

Run ``python -m nhphys.scenes.turntable [--out DIR] [--turns N]``: writes PNGs into
``out/turntable/`` and prints their paths.

``nhphys view turntable`` shows the flat table live (``scene``): the ball is set rolling on a
circle of 0.25 m about the table's axis (spin ``ORBIT_SPIN`` about the radial direction), which
it goes round at 2/7 of the table's rate, 3.5 times slower than the table's red sector. The
tilted table is left to the figures: its ball drifts across the slope at 0.34 m/s, off any
table drawn at the flat one's scale within two seconds.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.integrators import Retraction
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import RollingBody

MASS, RADIUS, RATE = 0.3, 0.05, 2 * np.pi
ball = nhphys.RigidBody(MASS, [0.4 * MASS * RADIUS**2] * 3, Sphere(RADIUS), name="ball")
TILT = np.radians(5.0)
TABLE = Plane().moving(rate=RATE)  # turning about its own normal, +z
UP = {"flat turntable": [0.0, 0.0, 1.0],  # a tilted table is the table under tilted gravity
      "tilted turntable": [np.sin(TILT), 0.0, np.cos(TILT)]}
START = {"omega": [0.0, 4.0, 1.0], "ground_point": [0.25, 0.0, 0.0]}

# The viewable scene: a ball rolling round the table's axis at ORBIT = 0.25 m. Its centre moves
# at (2 W / 7) ORBIT along +y; no slip gives it W ORBIT - RADIUS omega_x, hence the spin about x.
ORBIT = 0.25
ORBIT_SPIN = (RATE - 2 * RATE / 7) * ORBIT / RADIUS  # rad/s about +x (the radial direction)
SHOWN_TABLE = Plane(extent=0.4).moving(rate=RATE)
scene = Scene(name="turntable", camera=(0.6, -1.2, 1.3))
scene.add_ground(SHOWN_TABLE, color="#c9c3b8", name="turntable", resolution=161)
scene.add_body(ball, RollingContact(SHOWN_TABLE), color="#2e86ab", resolution=32,
               position=[ORBIT, 0.0, 0.0], omega=[ORBIT_SPIN, 0.0, 0.0])

defaults = {"t_final": 7.0, "dt": 1e-3, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def closed_form(traj, rate, drift=np.zeros(3)):
    """The closed-form path (n, 3) through the start: ``x - drift t`` turns about a fixed
    centre at ``rate`` (``v = drift + Rot(rate t) (v0 - drift)``)."""
    x0, v0 = traj.position[0], traj.velocity[0] - drift
    c = x0 + np.cross([0.0, 0.0, 1.0], v0) / rate
    rel = x0 - c
    th = rate * traj.t
    return c + np.outer(traj.t, drift) + np.stack([
        np.cos(th) * rel[0] - np.sin(th) * rel[1], np.sin(th) * rel[0] + np.cos(th) * rel[1],
        np.full_like(th, rel[2])], axis=1)


def drift_velocity(up, gravity=9.81):
    """``5 / (2 W) e_z x g_t`` (3,): the mean drift across a tilted table."""
    g_t = -gravity * np.array([up[0], up[1], 0.0])
    return 5.0 / (2.0 * RATE) * np.cross([0.0, 0.0, 1.0], g_t)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "turntable"))
    parser.add_argument("--turns", type=float, default=10.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t_final = args.turns * 2 * np.pi / RATE
    save = max(1, round(0.01 / args.dt))
    runs = {name: nhphys.simulate(RollingBody(ball, TABLE, up=up), t_final, args.dt,
                                  Retraction(order=4), save_every=save, **START)
            for name, up in UP.items()}
    distance = {}
    for name, traj in runs.items():
        exact = closed_form(traj, 2 * RATE / 7, drift_velocity(UP[name]))
        distance[name] = np.linalg.norm(traj.position - exact, axis=1)
        balance = traj.energy - traj.work
        print(f"{name}: the centre stays within {distance[name].max():.1e} m of the closed "
              f"form after {args.turns:g} turns; max residual "
              f"{traj.constraint_residual.max():.1e}; work of the table {traj.work[-1]:+.4f} "
              f"J; energy - work drifts by {np.abs(balance - balance[0]).max():.1e} J")
    paths = [os.path.join(args.out, "paths.png"), os.path.join(args.out, "accuracy.png")]
    fig, ax = plt.subplots(figsize=(6, 6))
    for name, traj in runs.items():
        ax.plot(traj.position[:, 0], traj.position[:, 1], lw=1, label=name)
    ax.plot(0, 0, "k+", ms=10, label="table's axis")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend()
    ax.grid(True, alpha=0.3)
    ax.set_title(f"ball on a turntable, {args.turns:g} turns")
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    for name, traj in runs.items():
        ax0.semilogy(traj.t[1:], np.maximum(distance[name][1:], 1e-17), lw=1, label=name)
    ax0.set_xlabel("t [s]")
    ax0.set_ylabel("distance from the closed form [m]")
    ax0.legend()
    for name, traj in runs.items():
        balance = traj.energy - traj.work
        ax1.plot(traj.t, balance - balance[0], lw=1, label=name)
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("(energy - work) drift [J]")
    ax1.legend()
    for ax in (ax0, ax1):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"Retraction(order=4), h = {args.dt:g} s")
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
