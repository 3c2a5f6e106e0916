"""A wheel driven up a hill by a speed-controlled motor; without the motor it rolls back.

A wheel of radius 0.3 m with a 5 cm tube (2 kg, a uniform torus) rolls upright at 1.2 m/s toward
a hill 0.6 m high, ``z = 0.3 (1 + tanh(x - 1))`` (slopes up to 0.3). Coasting, it climbs 0.13 m
and rolls back down. With a motor on its axle holding the starting spin,
``Motor(target_speed=w0, gain=2.0)`` (a torque ``gain (w0 - Omega . e)`` about the axle ``e``),
it climbs over the top at almost constant speed; the motor's work equals the energy the wheel
gains, to the integrator's order. Figures: position along the slope and height against time
(``climb.png``), and energy against the motor's work, with the drift of their difference
(``energy.png``).

Run ``python -m nhphys.scenes.motor_hill [--out DIR] [--t-final T]``: writes PNGs into
``out/motor_hill/`` and prints their paths. ``nhphys view motor_hill`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys import forces as fe
from nhphys.shapes import Wheel
from nhphys.surfaces import HeightField
from nhphys.systems import RollingBody

MASS, RADIUS, TUBE, SPEED = 2.0, 0.3, 0.05, 1.2
SPIN = SPEED / (RADIUS + TUBE)  # rad/s about the axle when rolling at SPEED on the flat
MOTOR = fe.Motor(target_speed=SPIN, gain=2.0)

hill = HeightField.from_function("0.3*(1 + tanh(x - 1))", (-5, 8), (-3, 3), samples=261)
wheel = nhphys.RigidBody(MASS, Wheel.solid_inertia(MASS, RADIUS, TUBE), Wheel(RADIUS, TUBE),
                         name="wheel")
# upright, rolling toward +x: the axle (body z) along +y, body y along +x
R0 = np.column_stack([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
START = {"orientation": R0, "omega": [0.0, 0.0, SPIN], "position": [-3.0, 0.0, 0.0]}

scene = Scene(name="motor_hill", camera=(0.5, -6.0, 2.0))
scene.add_ground(hill, color="#8a9a6b", resolution=160)
scene.add_body(wheel, RollingContact(hill), color="#303030", resolution=48, forces=[MOTOR],
               **START)

defaults = {"t_final": 6.0, "dt": 1e-3, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "motor_hill"))
    parser.add_argument("--t-final", type=float, default=6.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    save = max(1, round(0.01 / args.dt))
    runs = {label: nhphys.simulate(RollingBody(wheel, hill, forces=forces), args.t_final,
                                   args.dt, save_every=save, **START)
            for label, forces in (("motor", [MOTOR]), ("coasting", []))}
    driven = runs["motor"]
    balance = driven.energy - driven.work
    for label, traj in runs.items():
        print(f"{label}: contact point up to {traj.contact_point[:, 2].max():.3f} m high, "
              f"x = {traj.position[-1, 0]:+.2f} m at the end; work of the motor "
              f"{traj.work[-1]:.3f} J; max residual {traj.constraint_residual.max():.1e}")
    print(f"motor: energy - work drifts by at most {np.abs(balance - balance[0]).max():.1e} J")
    paths = [os.path.join(args.out, "climb.png"), os.path.join(args.out, "energy.png")]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    for label, traj in runs.items():
        ax0.plot(traj.t, traj.position[:, 0], lw=1, label=label)
        ax1.plot(traj.t, traj.contact_point[:, 2], lw=1, label=label)
    ax0.set_xlabel("t [s]")
    ax0.set_ylabel("x [m]")
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("height of the contact point [m]")
    for ax in (ax0, ax1):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("a wheel and a hill: speed-controlled motor against coasting")
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    plt.close(plots.energy_balance(
        driven, paths[1], work_label="work of the motor",
        title=f"wheel driven up the hill, Retraction('exp'), h = {args.dt:g} s"))
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
