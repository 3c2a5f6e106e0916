"""A billiard ball struck with back and side spin: it slides on a parabola, then rolls straight.

A homogeneous billiard ball (0.17 kg, radius 0.0286 m, ``I = 0.4 m r^2``) is struck on a plane
with Coulomb friction (``RollingBody(..., lift_off=True, mu=0.2)``, ``docs/contact-modes.md``):
its centre moves at ``v_0`` = 2 m/s along x, and it spins against rolling about y (back spin,
"draw") and about x (side spin). Its contact point slips at ``u_0 = v_0 + omega_0 x (-r k)``;
friction ``-mu m g u_0 / |u_0|`` slows the slip along its own direction at ``(7/2) mu g``, so
the direction stays fixed, the centre moves on a parabola (a constant acceleration across its
velocity) and the slip stops at ``t* = 2 |u_0| / (7 mu g)`` with the centre at
``v* = v_0 - mu g t* u_0 / |u_0|``. From there the ball rolls straight on at ``v*``, and
friction has taken ``m |u_0|^2 / 7`` of its energy. The script prints the located stick event
and the velocity there against these closed forms. Figure: the path ``(x, y)`` of the centre,
sliding and rolling parts in different colours, against the closed form, with the slip speed
against time (``path.png``).

Run ``python -m nhphys.scenes.billiard [--out DIR] [--mu MU] [--speed V] [--draw W]
[--side W]``: writes ``path.png`` into ``out/billiard/`` and prints its path.
``nhphys view billiard`` shows it live.
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

MASS, RADIUS, G = 0.17, 0.0286, 9.81
MU, SPEED = 0.2, 2.0
DRAW, SIDE = 60.0, 40.0  # rad/s: back spin (about -y, against rolling) and side spin (about x)
START = (-0.85, 0.2, 0.0)
ball = nhphys.RigidBody(MASS, [0.4 * MASS * RADIUS**2] * 3, Sphere(RADIUS), name="ball")
table = Plane(extent=1.0)

scene = Scene(name="billiard", camera=(0.0, -0.6, 1.0))
scene.add_ground(table, color="#2f7d4a")
scene.add_body(ball, RollingContact(table, lift_off=True, mu=MU), color="#f2efe6",
               resolution=32, position=START, velocity=[SPEED, 0.0, 0.0],
               omega=[SIDE, -DRAW, 0.0])

defaults = {"t_final": 1.5, "dt": 1e-3, "integrator": "exp", "fps": 30.0, "size": (480, 360)}


def closed_form(velocity, omega, mu, radius=RADIUS, g=G):
    """The slide of a ball struck on a level plane: ``(u_0, t*, v*)``, the slip velocity of the
    contact point at the start (3,), the time the slip stops and the centre's velocity then
    (3,)."""
    u0 = np.asarray(velocity, float) + np.cross(omega, [0.0, 0.0, -radius])
    t_stick = 2 * np.linalg.norm(u0) / (7 * mu * g)
    return u0, t_stick, velocity - mu * g * t_stick * u0 / np.linalg.norm(u0)


def closed_path(t, start, velocity, omega, mu):
    """The centre's closed-form ground track (n, 2) at times ``t`` (n,): the parabola while it
    slides, then the straight line at ``v*``."""
    u0, t_stick, v_stick = closed_form(velocity, omega, mu)
    a = -mu * G * u0 / np.linalg.norm(u0)
    tau = np.minimum(t, t_stick)[:, None]
    path = np.asarray(start, float) + velocity * tau + 0.5 * a * tau**2
    path = path + v_stick * np.maximum(t - t_stick, 0.0)[:, None]
    return path[:, :2]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "billiard"))
    parser.add_argument("--t-final", type=float, default=1.5)
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--mu", type=float, default=MU)
    parser.add_argument("--speed", type=float, default=SPEED, help="m/s, along x")
    parser.add_argument("--draw", type=float, default=DRAW,
                        help="back spin, rad/s about -y (against rolling)")
    parser.add_argument("--side", type=float, default=SIDE, help="side spin, rad/s about x")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    mu = args.mu
    velocity = np.array([args.speed, 0.0, 0.0])
    omega = np.array([args.side, -args.draw, 0.0])

    system = RollingBody(ball, table, gravity=G, lift_off=True, mu=mu)
    traj = nhphys.simulate(system, args.t_final, args.dt, position=START, velocity=velocity,
                           omega=omega)
    u0, t_stick, v_stick = closed_form(velocity, omega, mu)
    print(f"billiard ball struck at {args.speed:g} m/s, omega = {omega} rad/s, mu = {mu:g}, "
          f"h = {args.dt:g} s, {args.t_final:g} s ({traj.meta['backend']}): "
          f"{len(traj.events)} events")
    print(f"slip at the start u0 = [{u0[0]:.6f}, {u0[1]:.6f}] m/s, |u0| = "
          f"{np.linalg.norm(u0):.6f} m/s")
    for ev in traj.events:
        print(f"  {ev['kind']} at t = {ev['t']:.12f} s ({ev['before']} -> {ev['after']}), "
              f"impulse {ev['impulse']:.1e} N s")
    sticks = [ev for ev in traj.events if ev["kind"] == "stick"]
    if sticks:
        t_found = sticks[0]["t"]
        print(f"stick located at {t_found:.12f} s, closed form 2|u0|/(7 mu g) = "
              f"{t_stick:.12f} s, difference {t_found - t_stick:+.1e} s")
    rolling = traj.mode == 0
    if rolling.any():
        v_roll = traj.velocity[rolling]
        print(f"velocity while rolling [{v_roll[0, 0]:.12f}, {v_roll[0, 1]:.12f}] m/s, closed "
              f"form v0 - mu g t* u0/|u0| = [{v_stick[0]:.12f}, {v_stick[1]:.12f}] m/s "
              f"(largest difference over the rolling frames "
              f"{np.abs(v_roll - v_stick).max():.1e} m/s)")
    balance = traj.energy - traj.work
    print(f"friction work {traj.work[-1]:.12f} J, closed form -m |u0|^2 / 7 = "
          f"{-MASS * (u0 @ u0) / 7:.12f} J; energy - work changes by at most "
          f"{np.abs(balance - balance[0]).max():.1e} J")
    path = traj.position[:, :2]
    exact = closed_path(traj.t, START, velocity, omega, mu)
    distance = np.linalg.norm(path - exact, axis=1).max()
    print(f"path: largest distance from the closed form {distance:.1e} m; final mode {('rolling', 'flight', 'sliding')[traj.mode[-1]]}, final position "
          f"[{path[-1, 0]:.6f}, {path[-1, 1]:.6f}] m")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.2), width_ratios=(1.8, 1))
    sliding = traj.mode == 2
    # each part drawn with the frame where the other begins, so the path has no gap
    last_slide = np.flatnonzero(sliding)[-1] + 2 if sliding.any() else 0
    ax0.plot(path[:last_slide, 0], path[:last_slide, 1], lw=3, color="#d1495b",
             label="sliding")
    ax0.plot(path[max(last_slide - 1, 0):, 0], path[max(last_slide - 1, 0):, 1], lw=3,
             color="#2e86ab", label="rolling")
    fine = np.linspace(0.0, traj.t[-1], 400)
    ax0.plot(*closed_path(fine, START, velocity, omega, mu).T, "k--", lw=0.8,
             label="closed form")
    if sticks:
        here = closed_path(np.array([t_stick]), START, velocity, omega, mu)[0]
        ax0.plot(*here, "ko", ms=5, mfc="none", label=f"stick, t* = {t_stick:.4f} s")
    ax0.plot(*path[0], "k^", ms=6, label="struck")
    ax0.set_aspect("equal", adjustable="datalim")
    ax0.set_xlabel("x [m]")
    ax0.set_ylabel("y [m]")
    ax0.set_title(f"path of the centre: v0 = {args.speed:g} m/s, omega = "
                  f"({omega[0]:g}, {omega[1]:g}, 0) rad/s, mu = {mu:g}")
    ax0.legend(loc="lower left", fontsize=8)
    ax1.plot(traj.t, traj.slip_speed, color="#d1495b", lw=2, label="slip speed")
    ax1.plot(fine, np.maximum(np.linalg.norm(u0) - 3.5 * mu * G * fine, 0.0), "k--", lw=0.8,
             label="|u0| - (7/2) mu g t")
    ax1.plot(traj.t, np.linalg.norm(traj.velocity, axis=1), color="#2e86ab", lw=1.2,
             label="speed of the centre")
    ax1.axvline(t_stick, color="k", lw=0.6, ls=":")
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("[m/s]")
    ax1.legend(fontsize=8)
    for ax in (ax0, ax1):
        ax.grid(True, alpha=0.3)
    return save_figure(fig, args.out, "path.png")


if __name__ == "__main__":
    sys.exit(main())
