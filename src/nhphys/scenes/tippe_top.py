"""A tippe top: spun on its heavy end, it slides, turns over and ends spinning on its light end.

The top is a sphere (radius ``R`` = 0.02 m, 0.015 kg) whose centre of mass sits ``alpha R``
from its geometric centre along the body's z axis (``alpha`` = 0.3), with
``I_1 = 0.4 m R^2`` and ``I_3 = 0.8 I_1`` about the centre of mass: ``1 - alpha < I_3 / I_1 <
1 + alpha``, the classical condition for a spherical tippe top to invert. It is put on a plane
with Coulomb friction (``RollingBody(..., lift_off=True, mu=0.05)``,
``docs/contact-modes.md``) with its centre of mass below the sphere's centre, the axis tilted
0.1 rad from the downward vertical, spinning at 180 rad/s about its axis and its centre at rest,
so its contact point slips and it starts sliding. The friction of the slipping contact point
torques the top over: the axis rises through the horizontal, the centre of mass climbs by up to
``2 alpha R``, and the top ends up spinning on the end its centre of mass is nearer to. It does
so only while it slides: with ``--mu 0.1`` the slip stops early (0.12 s) and the top rolls on
upright, without inverting. The sphere's centre stays at ``R`` above the plane while it touches,
so the centre of mass is at ``R + alpha R e_3 . k``, ``e_3 . k`` the vertical component of the
body axis.

The script prints the inversion time (the first saved frame where ``e_3 . k`` passes 0,
interpolated between frames), the events by kind, the time spent in each mode and the largest
change of ``energy - work``. Figure: the height of the centre of mass and the tilt of the body
axis from the upward vertical against time, over the mode as a coloured band, with the events
marked (``inversion.png``).

Run ``python -m nhphys.scenes.tippe_top [--out DIR] [--t-final T] [--dt H] [--mu MU]
[--spin W] [--tilt A]``: writes ``inversion.png`` into ``out/tippe_top/`` and prints its path.
``nhphys view tippe_top`` shows it live.
"""

import argparse
import os
import sys
from collections import Counter

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.lie import so3
from nhphys.scenes._figures import save_figure
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import RollingBody

MASS, RADIUS, ALPHA, G = 0.015, 0.02, 0.3, 9.81
I1 = 0.4 * MASS * RADIUS**2
I3 = 0.8 * I1
MU, SPIN, TILT = 0.05, 180.0, 0.1  # friction, rad/s about the body axis, rad from straight down
top = nhphys.RigidBody(MASS, [I1, I1, I3], Sphere(RADIUS), com=[0.0, 0.0, ALPHA * RADIUS],
                       name="tippe_top")
table = Plane(extent=0.5)


def start_orientation(tilt=TILT):
    """The centre of mass below the sphere's centre, the body axis ``tilt`` rad from the
    downward vertical: the rotation by ``pi - tilt`` about x."""
    return so3.exp([np.pi - tilt, 0.0, 0.0])


scene = Scene(name="tippe_top", camera=(0.0, -0.45, 0.25))
scene.add_ground(table, color="#c9b79c")
scene.add_body(top, RollingContact(table, lift_off=True, mu=MU), color="#b0413e",
               resolution=48, orientation=start_orientation(), omega=[0.0, 0.0, SPIN],
               velocity=[0.0, 0.0, 0.0])

defaults = {"t_final": 12.0, "dt": 1e-4, "integrator": "exp", "fps": 30.0, "size": (480, 360)}

MODES = ("rolling", "flight", "sliding")
COLORS = {"rolling": "#2e86ab", "flight": "#f6ae2d", "sliding": "#d1495b"}


def mode_intervals(traj):
    """The modes between the events: a list of ``(start, end, mode name)``, from the run's start
    mode to its end, read off the located event times (exact, not the saved frames)."""
    times = [traj.t[0]] + [ev["t"] for ev in traj.events] + [traj.t[-1]]
    modes = [MODES[traj.mode[0]]] + [ev["after"] for ev in traj.events]
    return [(a, b, m) for a, b, m in zip(times[:-1], times[1:], modes) if b > a]


def inversion_time(t, axis_up):
    """The first time the axis's vertical component ``axis_up`` (n,) passes 0 upward, linear
    between saved frames; None if it does not."""
    up = np.flatnonzero((axis_up[:-1] < 0.0) & (axis_up[1:] >= 0.0))
    if not len(up):
        return None
    i = up[0]
    return t[i] + (t[i + 1] - t[i]) * (-axis_up[i]) / (axis_up[i + 1] - axis_up[i])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "tippe_top"))
    parser.add_argument("--t-final", type=float, default=12.0)
    parser.add_argument("--dt", type=float, default=1e-4)
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument("--mu", type=float, default=MU)
    parser.add_argument("--spin", type=float, default=SPIN, help="rad/s about the body axis")
    parser.add_argument("--tilt", type=float, default=TILT,
                        help="rad, of the axis from the downward vertical at the start")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    mu = args.mu

    system = RollingBody(top, table, gravity=G, lift_off=True, mu=mu)
    traj = nhphys.simulate(system, args.t_final, args.dt, orientation=start_orientation(args.tilt),
                           omega=[0.0, 0.0, args.spin], velocity=[0.0, 0.0, 0.0],
                           save_every=args.save_every)
    axis_up = traj.R[:, 2, 2]  # the vertical component of the body axis e_3
    tilt = np.degrees(np.arccos(np.clip(axis_up, -1.0, 1.0)))
    height = traj.position[:, 2]
    print(f"tippe top: R = {RADIUS:g} m, m = {MASS:g} kg, alpha = {ALPHA:g}, I3/I1 = "
          f"{I3 / I1:g}, mu = {mu:g}, spin {args.spin:g} rad/s, tilt {args.tilt:g} rad; "
          f"h = {args.dt:g} s, {args.t_final:g} s ({traj.meta['backend']}): "
          f"{len(traj.events)} events")
    print(f"start: {MODES[traj.mode[0]]}, slip speed {traj.slip_speed[0]:.6f} m/s, axis "
          f"vertical component {axis_up[0]:+.6f} (tilt {tilt[0]:.2f} deg from up), centre of "
          f"mass at {height[0] * 1e3:.4f} mm")
    kinds = Counter((ev["kind"], ev["before"], ev["after"]) for ev in traj.events)
    print("events by kind:" + ("" if traj.events else " none"))
    for (kind, before, after), count in sorted(kinds.items()):
        first = next(ev["t"] for ev in traj.events
                     if (ev["kind"], ev["before"], ev["after"]) == (kind, before, after))
        print(f"  {kind:9s} {before:8s} -> {after:8s} {count:5d}   first at t = {first:.6f} s")
    for ev in traj.events:
        if ev["kind"] in ("lift-off", "touchdown"):
            print(f"  {ev['kind']} at t = {ev['t']:.6f} s ({ev['before']} -> {ev['after']}), "
                  f"impulse {ev['impulse']:.3e} N s, energy change {ev['energy_change']:+.3e} J")
    spans = mode_intervals(traj)
    spent = {m: sum(b - a for a, b, name in spans if name == m) for m in MODES}
    print("time in each mode: " + ", ".join(f"{m} {spent[m]:.4f} s" for m in MODES))
    t_inv = inversion_time(traj.t, axis_up)
    if t_inv is None:
        print(f"no inversion within {args.t_final:g} s: the axis's vertical component goes from "
              f"{axis_up[0]:+.6f} to {axis_up[-1]:+.6f} (largest {axis_up.max():+.6f})")
    else:
        print(f"inversion (the axis's vertical component passes 0) at t = {t_inv:.3f} s "
              f"(between saved frames {traj.t[1] - traj.t[0]:g} s apart); it goes from "
              f"{axis_up[0]:+.6f} to {axis_up[-1]:+.6f} (tilt {tilt[-1]:.2f} deg from up)")
    balance = traj.energy - traj.work
    print(f"energy {traj.energy[0]:.9f} J -> {traj.energy[-1]:.9f} J, friction and impacts "
          f"{traj.work[-1]:+.9f} J; energy - work changes by at most "
          f"{np.abs(balance - balance[0]).max():.1e} J")
    print(f"final mode {MODES[traj.mode[-1]]}, centre of mass at {height[-1] * 1e3:.4f} mm, "
          f"largest constraint residual {traj.constraint_residual.max():.1e}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1, ax2) = plt.subplots(3, 1, figsize=(11, 7.5), sharex=True,
                                        height_ratios=(3, 3, 1.6))
    for ax in (ax0, ax1):
        for a, b, name in spans:
            ax.axvspan(a, b, color=COLORS[name], alpha=0.13, lw=0)
    ax0.plot(traj.t, height * 1e3, color="k", lw=1.1, label="centre of mass")
    for level, text in ((RADIUS - ALPHA * RADIUS, "R - alpha R (heavy end down)"),
                        (RADIUS + ALPHA * RADIUS, "R + alpha R (inverted)")):
        ax0.axhline(level * 1e3, color="0.4", lw=0.8, ls="--")
        ax0.text(traj.t[-1], level * 1e3, text + " ", ha="right",
                 va="bottom" if level > RADIUS else "top", fontsize=8, color="0.3")
    ax0.axhline(RADIUS * 1e3, color="0.6", lw=0.6, ls=":")
    hops = [ev for ev in traj.events if ev["kind"] in ("lift-off", "touchdown")]
    for ev in hops:
        ax0.plot(ev["t"], np.interp(ev["t"], traj.t, height) * 1e3,
                 "^" if ev["kind"] == "lift-off" else "v", color=COLORS["flight"], mec="k",
                 ms=7, label=ev["kind"])
    ax0.set_ylim((RADIUS - 1.25 * ALPHA * RADIUS) * 1e3, (RADIUS + 1.25 * ALPHA * RADIUS) * 1e3)
    ax0.set_ylabel("height [mm]")
    ax0.set_title(f"tippe top: R = {RADIUS * 1e3:g} mm, alpha = {ALPHA:g}, I3/I1 = "
                  f"{I3 / I1:g}, mu = {mu:g}, spin {args.spin:g} rad/s, h = {args.dt:g} s")
    ax0.legend(loc="upper left", fontsize=8)
    ax1.plot(traj.t, tilt, color="k", lw=1.1)
    ax1.axhline(90.0, color="0.4", lw=0.8, ls="--")
    ax1.set_ylabel("axis tilt from up [deg]")
    ax1.set_ylim(0.0, 180.0)
    ax1.set_yticks([0, 45, 90, 135, 180])
    if t_inv is not None:
        for ax in (ax0, ax1):
            ax.axvline(t_inv, color="k", lw=0.7, ls=":")
        ax1.annotate(f"inversion, t = {t_inv:.2f} s", (t_inv, 90.0), xytext=(8, 8),
                     textcoords="offset points", fontsize=8)
    # the band: the mode between events (exact times); below it, the events by kind
    rows = [("slip", "sliding"), ("stick", "rolling"), ("stick", "sliding"),
            ("stick", "flight"), ("lift-off", "flight"), ("touchdown", "sliding"),
            ("touchdown", "rolling"), ("touchdown", "flight")]
    rows = [r for r in rows if any((ev["kind"], ev["after"]) == r for ev in traj.events)]
    for name in MODES:
        bars = [(a, b - a) for a, b, m in spans if m == name]
        if bars:
            ax2.broken_barh(bars, (len(rows) + 0.1, 0.8), color=COLORS[name], label=name)
    for y, (kind, after) in enumerate(reversed(rows)):
        t_ev = [ev["t"] for ev in traj.events if (ev["kind"], ev["after"]) == (kind, after)]
        ax2.plot(t_ev, np.full(len(t_ev), y + 0.5), "|", color=COLORS[after], ms=9, mew=0.8)
    ax2.set_yticks([y + 0.5 for y in range(len(rows))] + [len(rows) + 0.5])
    ax2.set_yticklabels([f"{k} -> {a}" for k, a in reversed(rows)] + ["mode"], fontsize=8)
    ax2.set_ylim(0.0, len(rows) + 1.0)
    ax2.set_xlabel("t [s]")
    ax2.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax2.set_xlim(0.0, traj.t[-1])
    for ax in (ax0, ax1):
        ax.grid(True, alpha=0.3)
    ax2.grid(True, axis="x", alpha=0.3)
    return save_figure(fig, args.out, "inversion.png")


if __name__ == "__main__":
    sys.exit(main())
