"""A bouncing ball: touchdown times, rebound heights and the end of the bounces.

A homogeneous ball (1 kg, radius 0.1 m, ``I = 0.4 m r^2``) is dropped from rest 1 m above a
plane (``RollingBody(..., lift_off=True, restitution=0.8)``, ``docs/contact-modes.md``). It falls
on the exact parabola of the flight step, lands, bounces back at ``e`` times the speed it came
in, and so on: the touchdowns are at ``t_1 = sqrt(2 h_0 / g)``,
``t_n+1 = t_n + 2 e^n sqrt(2 h_0 / g)``, the normal impulse of the n-th is
``m (1 + e) v_n`` with ``v_n = e^(n-1) sqrt(2 g h_0)``, and it loses ``(1 - e^2) m v_n^2 / 2``.
When a rebound would last less than a step the impact is made plastic (impulse ``m v_n``,
loss ``m v_n^2 / 2``) and the ball rests (rolls) on the plane. The script prints every
located event against these closed forms and the largest change of ``energy - work``.
Figure: the height of the ball's lowest point above the plane against time, touchdowns
marked, with the rebound heights against ``e^2n h_0`` (``height.png``).

Run ``python -m nhphys.scenes.bouncing_ball [--out DIR] [--restitution E] [--height H]``:
writes ``height.png`` into ``out/bouncing_ball/`` and prints its path.
``nhphys view bouncing_ball`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.scenes._figures import save_figure
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import RollingBody

MASS, RADIUS, G = 1.0, 0.1, 9.81
RESTITUTION, HEIGHT = 0.8, 1.0
ball = nhphys.RigidBody(MASS, [0.4 * MASS * RADIUS**2] * 3, Sphere(RADIUS), name="ball")
floor = Plane(extent=0.5)

scene = Scene(name="bouncing_ball", camera=(0.0, -1.0, 0.35))
scene.add_ground(floor, color="#d9d4c7")
scene.add_body(ball, RollingContact(floor, lift_off=True, restitution=RESTITUTION),
               color="#b0413e", resolution=32, height=HEIGHT)

defaults = {"t_final": 4.5, "dt": 1e-3, "integrator": "exp", "fps": 30.0, "size": (360, 480)}


def closed_form(count, restitution, height, plastic_last=False):
    """The first ``count`` touchdowns of a ball dropped from rest at ``height``: times,
    incoming speeds, normal impulses and energy changes, each (count,); with
    ``plastic_last`` the last impact is plastic (``e = 0``: impulse ``m v``, loss
    ``m v^2 / 2``)."""
    fall = np.sqrt(2 * height / G)
    n = np.arange(count)
    times = fall + 2 * fall * np.concatenate([[0.0], np.cumsum(restitution ** n[1:])])
    speed = restitution**n * np.sqrt(2 * G * height)
    e = np.full(count, restitution)
    if plastic_last and count:
        e[-1] = 0.0
    impulse = MASS * (1 + e) * speed
    change = -(1 - e**2) * 0.5 * MASS * speed**2
    return times, speed, impulse, change


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "bouncing_ball"))
    parser.add_argument("--t-final", type=float, default=5.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--restitution", type=float, default=RESTITUTION)
    parser.add_argument("--height", type=float, default=HEIGHT)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    e, h0 = args.restitution, args.height

    system = RollingBody(ball, floor, gravity=G, lift_off=True, restitution=e)
    traj = nhphys.simulate(system, args.t_final, args.dt, height=h0)
    touchdowns = [ev for ev in traj.events if ev["kind"] == "touchdown"]
    plastic = bool(touchdowns) and touchdowns[-1]["after"] == "rolling"
    times, speed, impulse, change = closed_form(len(touchdowns), e, h0, plastic)
    print(f"ball dropped from {h0:g} m, e = {e:g}, h = {args.dt:g} s, {args.t_final:g} s "
          f"({traj.meta['backend']}): {len(traj.events)} events")
    print("   n  kind       after      t [s]            closed form      difference  "
          "impulse [N s]  closed form  energy change [J]")
    for n, (ev, t, P, dE) in enumerate(zip(touchdowns, times, impulse, change), 1):
        print(f"  {n:2d}  {ev['kind']:9s}  {ev['after']:9s}  {ev['t']:.12f}  {t:.12f}  "
              f"{ev['t'] - t:+.1e}  {ev['impulse']:13.9f}  {P:11.9f}  {ev['energy_change']:+.9f}"
              f" ({dE:+.9f})")
    for ev in traj.events:
        if ev["kind"] != "touchdown":
            print(f"      {ev['kind']} at t = {ev['t']:.12f} s")
    if plastic:
        limit = np.sqrt(2 * h0 / G) * (1 + 2 * e / (1 - e)) if e < 1 else np.inf
        print(f"the bounces end at t = {touchdowns[-1]['t']:.6f} s, touchdown "
              f"{len(touchdowns)} made plastic (rebound speed "
              f"{e * speed[-1]:.2e} m/s < g h / 2 = {G * args.dt / 2:.2e} m/s); the infinite "
              f"series of bounces would end at {limit:.6f} s")
    balance = traj.energy - traj.work
    print(f"energy - work changes by at most {np.abs(balance - balance[0]).max():.1e} J "
          f"(the impacts take {traj.work[-1]:+.6f} J); final mode "
          f"{'rolling' if traj.mode[-1] == 0 else 'flight'}, centre height "
          f"{traj.position[-1, 2]:.12f} m")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4), width_ratios=(2.2, 1))
    ax0.plot(traj.t, traj.gap, lw=1, color="#2e86ab", label="height of the lowest point")
    t_found = np.array([ev["t"] for ev in touchdowns])
    ax0.plot(t_found, np.zeros_like(t_found), "v", color="#b0413e", ms=5,
             label="touchdowns (located)")
    ax0.plot(times, np.full_like(times, -0.04 * h0), "^", color="k", ms=4, mfc="none",
             label="closed form")
    ax0.set_xlabel("t [s]")
    ax0.set_ylabel("height [m]")
    ax0.set_title(f"dropped from {h0:g} m, e = {e:g}, h = {args.dt:g} s")
    ax0.legend(loc="upper right")
    # the apex after touchdown n: the highest saved frame between it and the next event
    ends = list(t_found[1:]) + [traj.t[-1]]
    apex = [traj.gap[(traj.t > a) & (traj.t < b)].max(initial=0.0)
            for a, b in zip(t_found, ends)]
    n = np.arange(1, len(apex) + 1)
    shown = np.array(apex) > 0
    ax1.semilogy(n[shown], np.array(apex)[shown], "o", ms=4, color="#2e86ab",
                 label="highest saved frame")
    bounced = n[:len(n) - 1] if plastic else n  # a plastic impact has no rebound
    ax1.semilogy(bounced, h0 * e ** (2 * bounced), "k-", lw=0.8, label="e^2n h_0")
    ax1.set_xlabel("bounce n")
    ax1.set_ylabel("rebound height [m]")
    ax1.legend()
    for ax in (ax0, ax1):
        ax.grid(True, alpha=0.3)
    return save_figure(fig, args.out, "height.png")


if __name__ == "__main__":
    sys.exit(main())
