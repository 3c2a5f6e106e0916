"""An Euler disk falls flat, lands on its face, slides and spins on it, and comes to rest.

The disk of ``nhphys.scenes.euler_disk`` (radius 37.5 mm, 450 g, released at a lean of 60
degrees turning at 2 rad/s about the vertical) here has a unilateral contact with Coulomb
friction (``RollingBody(..., lift_off=True, mu=0.3)``, ``docs/contact-modes.md``). It goes down
as in ``euler_disk`` (sliding where rolling would need more friction than ``mu N``), and where
its plane comes within its flat angle (0.02 rad) of the ground it lands on its face: the
normal velocities of the face are taken out, and the face keeps its motion along the ground.
It then slides and spins on its face against the friction of the whole face (uniform
pressure), and the sliding and the spin die out together. The script prints the events and the
state at the end; with ``--mu inf`` the face is rough and the disk stops where it lands.

Figures: the height of the centre and the lean from the vertical, and the speed of the centre
and the spin about the normal on the face, against time, with the events marked
(``to_rest.png``).

Run ``python -m nhphys.scenes.euler_disk_to_rest [--out DIR] [--mu MU]``: writes the PNG into
``out/euler_disk_to_rest/`` and prints its path. ``nhphys view euler_disk_to_rest`` shows it
live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.scenes._figures import save_figure
from nhphys.scenes.euler_disk import GRAVITY, START, disk, ground, lean_and_turning_rate
from nhphys.systems import RollingBody

MU = 0.3

scene = Scene(name="euler_disk_to_rest", camera=(0.0, -0.2, 0.12))
scene.add_ground(ground, color="#3b3b3b")
scene.add_body(disk, RollingContact(ground, lift_off=True, mu=MU), color="#d7d7d7",
               resolution=64, **START)

defaults = {"t_final": 0.25, "dt": 1e-4, "integrator": "exp", "fps": 30.0, "size": (480, 360),
            "speed": 0.1}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "euler_disk_to_rest"))
    parser.add_argument("--t-final", type=float, default=0.25)
    parser.add_argument("--dt", type=float, default=1e-4)
    parser.add_argument("--mu", type=float, default=MU)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    system = RollingBody(disk, ground, gravity=GRAVITY, lift_off=True, mu=args.mu)
    traj = nhphys.simulate(system, args.t_final, args.dt, save_every=max(1, round(1e-4 / args.dt)),
                           **START)
    print(f"Euler disk, mu = {args.mu:g}, h = {args.dt:g} s ({traj.meta['backend']}): "
          f"{len(traj.events)} events")
    for ev in traj.events:
        print(f"  {ev['kind']:9s} at t = {ev['t']:.9f} s: {ev['before']} -> {ev['after']}, "
              f"energy change {ev['energy_change']:+.3e} J")
    flat = traj.mode == 3
    balance = traj.energy - traj.work
    print(f"at t = {traj.t[-1]:g} s: mode {'flat' if flat[-1] else traj.mode[-1]}, centre "
          f"{np.round(traj.position[-1], 6).tolist()} m, speed "
          f"{np.linalg.norm(traj.velocity[-1]):.3g} m/s, spin {traj.omega[-1, 2]:.3g} rad/s; "
          f"energy - work changes by {np.ptp(balance):.1e} J (of {traj.energy[0]:.4f} J)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lean, _ = lean_and_turning_rate(traj)
    spin = np.einsum("ni,ni->n", np.einsum("nij,nj->ni", traj.R, traj.omega),
                     traj.ground_normal)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    ax0.plot(traj.t, 1e3 * traj.position[:, 2], color="#2e86ab", label="centre height [mm]")
    ax0.plot(traj.t, np.degrees(lean), color="#b0413e", label="lean from vertical [deg]")
    ax0.set_xlabel("t [s]")
    ax0.set_title("the fall")
    ax1.plot(traj.t[flat], 1e3 * np.linalg.norm(traj.velocity[flat], axis=1),
             color="#2e86ab", label="speed of the centre [mm/s]")
    ax1.plot(traj.t[flat], 1e3 * np.abs(spin[flat]) * disk.shape.radius, color="#e07a1f",
             label="|spin| x radius [mm/s]")
    ax1.set_xlabel("t [s]")
    ax1.set_title("on its face, to rest")
    for ax in (ax0, ax1):
        for ev in traj.events:
            ax.axvline(ev["t"], color="k", lw=0.6, ls=":")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Euler disk with mu = {args.mu:g}: "
                 + ", ".join(f"{ev['kind']} at {ev['t']:.4f} s" for ev in traj.events),
                 fontsize=9)
    return save_figure(fig, args.out, "to_rest.png")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
