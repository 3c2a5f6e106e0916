"""A ball over a hump: it leaves the hump on its far side, flies, lands and rolls on.

A homogeneous ball (1 kg, radius r = 0.05 m, ``I = 0.4 m r^2``) rolls at ``v0`` along x on flat
ground towards a smooth hump across its path, with a unilateral contact
(``RollingBody(..., lift_off=True, restitution=0.3)``, ``docs/contact-modes.md``). The hump is
a skewed Gaussian in x only,

    z = H exp(-x^2 / w(x)^2),    w(x) = W0 - DW tanh(x / S),

0.3 m high, with a gentle approach (``w`` -> 1.8 m for x < 0) and a steep far side (``w`` ->
0.2 m for x > 0), sampled into a :class:`~nhphys.surfaces.HeightField`. The ball climbs the
approach rolling; where the far side falls away faster than its path, the normal force would
turn negative and it lifts off, flies over the steep side on a parabola, lands at the hump's
foot with a rough impact (restitution ``e``), bounces a few times lower and lower (the last,
shorter than a step, made plastic) and rolls on along the flat. (On a hump symmetric in x the
ball would leave on the near side: the normal force of a rolling ball depends only on where it
is, its speed being fixed by energy, so it would meet the mirror of any lift-off point on the
far side first.) The script prints the lift-off point and speed (taken back from the first
flight frame along the flight's exact parabola), the flight time, the landing impact (impulse
against ``m (1 + e) v_n``, energy lost) and the bounces. Figure: the centre's height against x
over the hump's profile, coloured by mode, with a close view of the jump, and the height of
the ball's lowest point above the ground against time (``jump.png``).

Run ``python -m nhphys.scenes.hump [--out DIR] [--v0 V] [--restitution E]``: writes
``jump.png`` into ``out/hump/`` and prints its path. ``nhphys view hump`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.scenes._figures import save_figure
from nhphys.surfaces import HeightField, Sphere
from nhphys.systems import RollingBody

MASS, RADIUS, G = 1.0, 0.05, 9.81
HUMP, W0, DW, S = 0.3, 1.0, 0.8, 0.4  # z = H exp(-x^2 / w^2), w = W0 - DW tanh(x / S)
V0, RESTITUTION, X0 = 3.4, 0.3, -4.5  # rolling speed and start, far out on the flat
PROFILE = f"{HUMP}*exp(-x**2/({W0} - {DW}*tanh(x/{S}))**2)"
ball = nhphys.RigidBody(MASS, [0.4 * MASS * RADIUS**2] * 3, Sphere(RADIUS), name="ball")
# a bump in x only: the bicubic spline of heights constant in y is itself constant in y
ground = HeightField.from_function(PROFILE, (-5.0, 4.0), (-0.6, 0.6), samples=(901, 7))
START = ground.point([X0, 0.0])

scene = Scene(name="hump", camera=(0.25, -1.0, 0.3))
scene.add_ground(ground, color="#c9c3b8", resolution=160)
scene.add_body(ball, RollingContact(ground, lift_off=True, restitution=RESTITUTION),
               color="#b0413e", resolution=32, position=START, omega=[0.0, V0 / RADIUS, 0.0])

defaults = {"t_final": 2.5, "dt": 1e-3, "integrator": "exp", "fps": 30.0, "size": (640, 360)}

MODES = {0: ("rolling", "#2e86ab"), 1: ("flight", "#b0413e"), 2: ("sliding", "#e09f3e")}
UP = np.array([0.0, 0.0, 1.0])


def curvature_x(x):
    """The ground's curvature along x on the line y = 0, 1/m: positive where it is concave
    (a valley), negative on the hump's top."""
    k, _ = ground.principal_curvatures(np.stack([x, np.zeros_like(x)], -1))
    return k.sum(-1)  # the curvature along y is 0


def along_parabola(traj, k, t):
    """The centre and its velocity at time ``t``, from flight frame ``k`` along the flight's
    exact parabola."""
    dt = t - traj.t[k]
    velocity = traj.velocity[k] - G * dt * UP
    centre = traj.position[k] + dt * traj.velocity[k] - 0.5 * G * dt**2 * UP
    return centre, velocity


def ground_below(centre):
    """The ground point nearest ``centre`` and the ground's normal there."""
    loc = ground.project(centre)
    return ground.point(loc), ground.normal(loc)


def mode_runs(mode):
    """``(start, stop, mode)`` of each run of equal modes, ``stop`` past its end by one frame
    (so that the plotted runs join)."""
    edges = np.flatnonzero(np.diff(mode)) + 1
    starts = np.concatenate([[0], edges])
    stops = np.concatenate([edges, [len(mode)]])
    return [(a, min(b + 1, len(mode)), int(mode[a])) for a, b in zip(starts, stops)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "hump"))
    parser.add_argument("--t-final", type=float, default=defaults["t_final"])
    parser.add_argument("--dt", type=float, default=defaults["dt"])
    parser.add_argument("--v0", type=float, default=V0, help="rolling speed on the flat [m/s]")
    parser.add_argument("--restitution", type=float, default=RESTITUTION)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    e, v0 = args.restitution, args.v0

    x = np.linspace(-5.0, 4.0, 9001)
    concave = curvature_x(x).max()
    print(f"ball of radius {RADIUS:g} m rolling at v0 = {v0:g} m/s from x = {X0:g} m towards a "
          f"hump {HUMP:g} m high (z = {PROFILE}); restitution {e:g}, h = {args.dt:g} s")
    print(f"the ground's radius of curvature: {1 / -curvature_x(np.zeros(1))[0]:.4f} m over the "
          f"top, at least {1 / concave:.4f} m in the valleys (> r = {RADIUS:g} m)")

    system = RollingBody(ball, ground, gravity=G, lift_off=True, restitution=e)
    traj = nhphys.simulate(system, args.t_final, args.dt, position=START,
                           omega=[0.0, v0 / RADIUS, 0.0])
    print(f"{len(traj.events)} events ({traj.meta['backend']}):")
    for ev in traj.events:
        print(f"  {ev['kind']:9s} at t = {ev['t']:.9f} s ({ev['before']} -> {ev['after']}), "
              f"impulse {ev['impulse']:.6f} N s, energy change {ev['energy_change']:+.6f} J")

    lift = [ev for ev in traj.events if ev["kind"] == "lift-off"]
    touchdowns = [ev for ev in traj.events if ev["kind"] == "touchdown"]
    # each event's state: from the flight frame next to it along the flight's exact parabola
    lift_at = [along_parabola(traj, np.flatnonzero((traj.t > ev["t"]) & (traj.mode == 1))[0],
                              ev["t"]) for ev in lift]
    land_at = [along_parabola(traj, np.flatnonzero((traj.t < ev["t"]) & (traj.mode == 1))[-1],
                              ev["t"]) for ev in touchdowns]
    if lift:
        centre, velocity = lift_at[0]
        lift_point, n = ground_below(centre)
        speed = np.linalg.norm(velocity)
        rolled = np.sqrt(v0**2 - 10 / 7 * G * (centre[2] - traj.position[0, 2]))
        print(f"lift-off at t = {lift[0]['t']:.6f} s, {lift_point[0]:.4f} m past the top: contact "
              f"point at z = {lift_point[2]:.4f} m, the ground sloping down at "
              f"{np.degrees(np.arctan2(n[0], n[2])):.2f} deg; centre speed {speed:.4f} m/s "
              f"(rolling from v0 by energy: {rolled:.4f} m/s), heading "
              f"{np.degrees(np.arctan2(velocity[2], velocity[0])):+.2f} deg")
    if lift and touchdowns and touchdowns[0]["t"] > lift[0]["t"]:
        land = touchdowns[0]
        centre, velocity = land_at[0]
        point, n = ground_below(centre)
        v_n = -n @ velocity  # a ball's contact point moves along the normal as its centre does
        k = np.flatnonzero(traj.t < land["t"])[-1]  # its spin is that of the flight's frames
        kinetic = 0.5 * MASS * velocity @ velocity \
            + 0.5 * traj.omega[k] @ system.inertia @ traj.omega[k]
        u = velocity + np.cross(traj.R[k] @ traj.omega[k], -RADIUS * n)  # the contact point's
        slip = np.linalg.norm(u - (u @ n) * n)
        print(f"flight: {land['t'] - lift[0]['t']:.6f} s over {point[0] - lift_point[0]:.4f} m "
              f"along x, the lowest point at most "
              f"{traj.gap[(traj.t > lift[0]['t']) & (traj.t < land['t'])].max() * 1e3:.1f} mm "
              f"above the ground")
        print(f"landing at t = {land['t']:.6f} s at x = {point[0]:.4f} m, where the ground is "
              f"{point[2] * 1e3:.2f} mm high and slopes down at "
              f"{np.degrees(np.arctan2(n[0], n[2])):.2f} deg, coming down at {v_n:.4f} m/s "
              f"along the normal: impulse {land['impulse']:.6f} N s "
              f"(m (1 + e) v_n = {MASS * (1 + e) * v_n:.6f}), energy change "
              f"{land['energy_change']:+.6f} J of the {kinetic:.6f} J it had "
              f"({-land['energy_change'] / kinetic:.1%}): (1 - e^2) m v_n^2 / 2 = "
              f"{(1 - e**2) * MASS * v_n**2 / 2:.6f} J of its normal motion and "
              f"m u_t^2 / 7 = {MASS * slip**2 / 7:.1e} J of its slip u_t = {slip:.2e} m/s")
        bounces = touchdowns[1:]
        if bounces:
            plastic = bounces[-1]["after"] == "rolling"
            print(f"then {len(bounces)} more touchdowns, the last at t = {bounces[-1]['t']:.6f} s"
                  f" at x = {land_at[-1][0][0]:.4f} m{' made plastic' if plastic else ''}, "
                  f"taking {-sum(ev['energy_change'] for ev in bounces):.6f} J")
    rolling_on = np.flatnonzero(traj.mode == 0)
    end = rolling_on[-1] if rolling_on.size and rolling_on[-1] == len(traj) - 1 else None
    if end is not None:
        print(f"at t = {traj.t[-1]:g} s it rolls at {np.linalg.norm(traj.velocity[-1]):.6f} m/s at "
              f"x = {traj.position[-1, 0]:.4f} m (|y| <= {np.abs(traj.position[:, 1]).max():.1e} m "
              f"throughout)")
    balance = traj.energy - traj.work
    print(f"the impacts take {-traj.work[-1]:.6f} J; energy - work changes by at most "
          f"{np.abs(balance - balance[0]).max():.1e} J; constraint residual while rolling at most "
          f"{traj.constraint_residual[traj.mode == 0].max():.1e}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(11, 7.5))
    grid = fig.add_gridspec(2, 2, width_ratios=(1.5, 1), height_ratios=(1, 1))
    top = fig.add_subplot(grid[0, :])
    zoom = fig.add_subplot(grid[1, 0])
    gap = fig.add_subplot(grid[1, 1])
    profile = ground.point(np.stack([x, np.zeros_like(x)], -1))
    for ax in (top, zoom):
        ax.fill_between(profile[:, 0], profile[:, 2], -0.05, color="#c9c3b8", lw=0,
                        label="ground")
        ax.plot(profile[:, 0], profile[:, 2], color="#8a8377", lw=0.8)
        shown = set()
        for a, b, m in mode_runs(traj.mode):
            name, color = MODES[m]
            ax.plot(traj.position[a:b, 0], traj.position[a:b, 2], color=color, lw=1.6,
                    label=f"centre, {name}" if m not in shown else None)
            shown.add(m)
    q = np.linspace(0.0, 2 * np.pi, 100)
    if lift:
        centre, _ = lift_at[0]
        zoom.plot(centre[0] + RADIUS * np.cos(q), centre[2] + RADIUS * np.sin(q), "k-", lw=0.7)
        for ax in (top, zoom):
            ax.plot(centre[0], centre[2], "^", color="k", ms=6,
                    label=f"lift-off (t = {lift[0]['t']:.3f} s)")
    if touchdowns:
        centre, _ = land_at[0]
        zoom.plot(centre[0] + RADIUS * np.cos(q), centre[2] + RADIUS * np.sin(q), "k-", lw=0.7)
        hits = np.array([c for c, _ in land_at])
        for ax in (top, zoom):
            ax.plot(hits[:, 0], hits[:, 2], "v", color="k", ms=5, mfc="none",
                    label=f"touchdowns ({len(hits)})")
    top.set_xlim(x[0], x[-1])
    top.set_ylim(-0.05, HUMP + 0.25)
    top.set_title(f"v0 = {v0:g} m/s, e = {e:g}, h = {args.dt:g} s: the centre over the hump "
                  "(vertical scale stretched)")
    top.legend(loc="upper left", fontsize=8)
    zoom.set_aspect("equal")
    zoom.set_xlim(-0.4, 1.4)
    zoom.set_ylim(-0.03, HUMP + 0.12)
    zoom.set_title("the jump, to scale (ball at lift-off and landing)")
    for ax in (top, zoom):
        ax.set_xlabel("x [m]")
        ax.set_ylabel("z [m]")
    window = (traj.t > (lift[0]["t"] - 0.1 if lift else 0.0))
    if touchdowns:
        window &= traj.t < touchdowns[-1]["t"] + 0.15
    for a, b, m in mode_runs(traj.mode):
        keep = np.arange(a, b)[window[a:b]]
        name, color = MODES[m]
        gap.plot(traj.t[keep], traj.gap[keep] * 1e3, color=color, lw=1.4)
    for ev in traj.events:
        gap.axvline(ev["t"], color="k", lw=0.5, ls=":" if ev["kind"] == "touchdown" else "--")
    gap.set_xlabel("t [s]")
    gap.set_ylabel("gap [mm]")
    gap.set_title("lowest point above the ground\n(dashed: lift-off, dotted: touchdowns)")
    for ax in (top, zoom, gap):
        ax.grid(True, alpha=0.3)
    return save_figure(fig, args.out, "jump.png")


if __name__ == "__main__":
    sys.exit(main())
