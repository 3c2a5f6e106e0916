"""An Euler disk with rolling resistance: from a steady spin at 30 degrees, it spirals down.

The disk of ``nhphys.scenes.euler_disk`` (radius 37.5 mm, 450 g) starts in the steady motion in
which its centre stays at rest: leaning 30 degrees from the vertical and turning about the line
from its contact point to its centre at 30.1033 rad/s (the rate at which, without losses, the
lean stays at 30 degrees: found by root finding on the lean, and checked here by the lossless
run, whose lean stays within a small fraction of a degree of 30). With rolling resistance
(``RollingResistance(5e-5)``: a torque ``-mu N Omega_t`` opposing the rolling rate, in
proportion to the normal force), it loses energy, leans further and turns faster, until it
lies flat: the contact event ends the run (:class:`nhphys.errors.ContactEvent`, with every frame
up to it). With ``--lift-off`` its contact is unilateral (``lift_off=True``,
``docs/contact-modes.md``, with ``--mu`` its friction, default ``inf``): where it falls flat it
lands on its face and, with a rough face, stays there at rest (the run goes on to
``--t-final``; the events are printed). Figures: lean and turning rate against time with and
without resistance (``spiral.png``), energy against the work of the resistance, with the drift
of their difference (``energy.png``).

Run ``python -m nhphys.scenes.euler_disk_resistance [--out DIR] [--lift-off [--mu MU]]``:
writes PNGs into
``out/euler_disk_resistance/`` and prints their paths. ``nhphys view euler_disk_resistance``
shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys import forces as fe
from nhphys.errors import ContactEvent
from nhphys.scenes.euler_disk import disk, ground, lean_and_turning_rate, leaning
from nhphys.systems import RollingBody

LEAN = np.radians(30.0)
STEADY_RATE = 30.1033  # rad/s about the contact-centre line (body -x): the centre stays at rest
RESISTANCE = fe.RollingResistance(5e-5)
START = {"orientation": leaning(LEAN), "omega": [-STEADY_RATE, 0.0, 0.0],
         "position": np.zeros(3)}

scene = Scene(name="euler_disk_resistance", camera=(0.0, -0.2, 0.12))
scene.add_ground(ground, color="#3b3b3b")
scene.add_body(disk, RollingContact(ground), color="#d7d7d7", resolution=64,
               forces=[RESISTANCE], **START)

defaults = {"t_final": 5.0, "dt": 1e-4, "integrator": "exp", "fps": 30.0, "size": (480, 360)}


def run(forces, t_final, dt, **contact):
    """The trajectory up to ``t_final`` or to the flat-contact event (``contact``: the
    unilateral contact's settings, ``lift_off=True, mu=...``)."""
    system = RollingBody(disk, ground, forces=forces, **contact)
    try:
        return nhphys.simulate(system, t_final, dt, save_every=max(1, round(1e-3 / dt)),
                               **START)
    except ContactEvent as event:
        print(f"with {len(forces)} force element(s): {event}")
        return event.trajectory


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "euler_disk_resistance"))
    parser.add_argument("--t-final", type=float, default=15.0)
    parser.add_argument("--dt", type=float, default=1e-4)
    parser.add_argument("--lift-off", action="store_true",
                        help="a unilateral contact: the disk lands on its face and rests")
    parser.add_argument("--mu", type=float, default=float("inf"),
                        help="its friction coefficient (with --lift-off; default inf)")
    args = parser.parse_args(argv)
    contact = {"lift_off": True, "mu": args.mu} if args.lift_off else {}
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    runs = {"rolling resistance": run([RESISTANCE], args.t_final, args.dt, **contact),
            "lossless": run([], min(args.t_final, 3.0), args.dt, **contact)}
    for ev in runs["rolling resistance"].events if args.lift_off else ():
        print(f"  {ev['kind']} at t = {ev['t']:.6f} s: {ev['before']} -> {ev['after']}, "
              f"energy change {ev['energy_change']:+.3e} J")
    paths = [os.path.join(args.out, "spiral.png"), os.path.join(args.out, "energy.png")]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    for label, traj in runs.items():
        lean, rate = lean_and_turning_rate(traj)
        ax0.plot(traj.t, np.degrees(lean), lw=1, label=label)
        upright = traj.mode != 3 if args.lift_off else slice(None)  # lying flat: no heading
        ax1.semilogy(traj.t[upright], np.abs(rate[upright]), lw=1, label=label)
        print(f"{label}: lean {np.degrees(lean[0]):.2f} -> {np.degrees(lean[-1]):.2f} deg in "
              f"{traj.t[-1]:.3f} s (range {np.degrees(lean.min()):.2f} .. "
              f"{np.degrees(lean.max()):.2f}); turning rate {abs(rate[0]):.1f} -> "
              f"{abs(rate[-1]):.1f} rad/s; work {traj.work[-1]:.4f} J; max residual "
              f"{traj.constraint_residual.max():.1e}")
    ax0.set_xlabel("t [s]")
    ax0.set_ylabel("lean from vertical [deg]")
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("turning rate of the heading [rad/s]")
    for ax in (ax0, ax1):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("Euler disk: rolling resistance against lossless rolling")
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    damped = runs["rolling resistance"]
    balance = damped.energy - damped.work
    print(f"rolling resistance: energy - work drifts by at most "
          f"{np.abs(balance - balance[0]).max():.1e} J")
    plt.close(plots.energy_balance(
        damped, paths[1], work_label="work of the rolling resistance"
        + (" and of the landing" if args.lift_off else ""),
        title=f"Euler disk with rolling resistance, Retraction('exp'), h = {args.dt:g} s"))
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
