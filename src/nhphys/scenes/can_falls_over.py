"""A can rolling on its rim falls onto its side, slides and turns on it, grips and rolls away.

A solid cylinder the size of a soda can (radius 33 mm, half length 60 mm, 300 g) starts on the
rim of its lower end with its axis 63 degrees from the vertical, turning about its axis at
25 rad/s and rolling on the rim (0.83 m/s), with a unilateral contact and Coulomb friction
(``RollingBody(..., lift_off=True, mu=0.3)``, ``docs/contact-modes.md``). Rolling on as it
leans over would need more friction than ``mu N``, so the rim slides as the can goes down
(this start is itself sliding); where its axis comes within its side angle of
the ground it lands on its side (the velocities out of the plane taken out, a plastic impact of
the whole line). On its side it slides and turns against the Coulomb friction of the line it
touches (uniform pressure), until the line grips (a ``"stick"``); it then rolls on its side, in
a straight line, at the speed the grip left it. With ``--mu inf`` the line is rough and grips
as the can lands. The script prints the events and the state at the end.

Figures: the height of the centre and the axis's angle from the ground, and the speed of the
centre and the slip of the line, against time, with the events marked (``falls_over.png``).

Run ``python -m nhphys.scenes.can_falls_over [--out DIR] [--mu MU] [--t-final T]``: writes the
PNG into ``out/can_falls_over/`` and prints its path. ``nhphys view can_falls_over`` shows it
live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.scenes._figures import save_figure
from nhphys.shapes import Cylinder
from nhphys.surfaces import Plane
from nhphys.systems import RollingBody
from nhphys.twins.modes import MODE_NAMES

MU = 0.3
MASS, RADIUS, HALF_LENGTH = 0.3, 0.033, 0.06
TILT, SPIN = 1.1, 25.0  # the axis from the vertical (rad), the spin about it (rad/s)
can = nhphys.RigidBody(MASS, Cylinder.solid_inertia(MASS, RADIUS, HALF_LENGTH),
                       Cylinder(RADIUS, HALF_LENGTH))
ground = Plane()
START = {"R0": np.array([[1.0, 0.0, 0.0],
                         [0.0, np.cos(TILT), -np.sin(TILT)],
                         [0.0, np.sin(TILT), np.cos(TILT)]]),
         "omega0": [0.0, 0.0, SPIN]}

scene = Scene(name="can_falls_over", camera=(0.3, -1.0, 0.45))
scene.add_ground(ground, color="#3b3b3b")
scene.add_body(can, RollingContact(ground, lift_off=True, mu=MU), color="#c0392b",
               resolution=48, **START)

defaults = {"t_final": 0.4, "dt": 1e-3, "integrator": "exp", "fps": 30.0, "size": (480, 360),
            "speed": 0.25}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "can_falls_over"))
    parser.add_argument("--t-final", type=float, default=1.0)
    parser.add_argument("--dt", type=float, default=1e-4)
    parser.add_argument("--mu", type=float, default=MU)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    system = RollingBody(can, ground, lift_off=True, mu=args.mu)
    traj = nhphys.simulate(system, args.t_final, args.dt,
                           save_every=max(1, round(1e-3 / args.dt)), **START)
    print(f"can, mu = {args.mu:g}, h = {args.dt:g} s ({traj.meta['backend']}): "
          f"{len(traj.events)} events")
    for ev in traj.events:
        print(f"  {ev['kind']:12s} at t = {ev['t']:.9f} s: {ev['before']} -> {ev['after']}, "
              f"energy change {ev['energy_change']:+.3e} J")
    balance = traj.energy - traj.work
    print(f"at t = {traj.t[-1]:g} s: {MODE_NAMES[int(traj.mode[-1])]}, "
          f"centre {np.round(traj.position[-1], 4).tolist()} m, speed "
          f"{np.linalg.norm(traj.velocity[-1]):.4g} m/s; energy - work changes by "
          f"{np.ptp(balance):.1e} J (of {traj.energy[0]:.4f} J)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axis = traj.R[:, :, 2]
    angle = np.degrees(np.arcsin(np.clip(np.abs(np.einsum("ni,ni->n", axis,
                                                          traj.ground_normal)), 0.0, 1.0)))
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    ax0.plot(traj.t, 1e3 * traj.position[:, 2], color="#2e86ab", label="centre height [mm]")
    ax0.plot(traj.t, angle, color="#b0413e", label="axis from the ground [deg]")
    ax0.set_title("the fall")
    ax1.plot(traj.t, np.linalg.norm(traj.velocity, axis=1), color="#2e86ab",
             label="speed of the centre [m/s]")
    ax1.plot(traj.t, traj.slip_speed, color="#e07a1f", label="slip speed [m/s]")
    ax1.set_title("on its side: sliding, then rolling")
    for ax in (ax0, ax1):
        ax.set_xlabel("t [s]")
        for ev in traj.events:
            ax.axvline(ev["t"], color="k", lw=0.6, ls=":")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"a can with mu = {args.mu:g}: "
                 + ", ".join(f"{ev['kind']} at {ev['t']:.4f} s" for ev in traj.events),
                 fontsize=9)
    return save_figure(fig, args.out, "falls_over.png")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
