"""A ball rolling off the top of a dome: where it leaves the surface, against the closed form.

A homogeneous ball (1 kg, radius r = 0.1 m, ``I = 0.4 m r^2``) is set rolling at ``v0`` from
the top of a sphere of radius R = 1 (its outer surface the ground), with a unilateral contact
(``RollingBody(..., lift_off=True)``, ``docs/contact-modes.md``). Its centre moves on the
circle of radius ``rho = R + r``; energy gives ``v^2 = v0^2 + (10/7) g rho (1 - cos theta)`` and
the normal force ``N = m g (17 cos theta - 10) / 7 - m v0^2 / rho``, which vanishes at
``cos theta* = (10 + 7 v0^2 / (g rho)) / 17``: there the ball leaves the dome and flies. The
time is ``t* = int_0^theta* rho / v(theta) d theta``. The script prints the located lift-off
against ``theta*``, ``t*`` and the speed ``sqrt(g rho cos theta*)``; the state at lift-off is
taken back from the first flight frame along the flight's exact parabola. Figure: the centre's
path over the dome, and the normal force of the rolling frames against the closed form
(``lift_off.png``).

Run ``python -m nhphys.scenes.dome_lift_off [--out DIR] [--v0 V] [--order K]``: writes
``lift_off.png`` into ``out/dome_lift_off/`` and prints its path.
``nhphys view dome_lift_off`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.integrators import Retraction
from nhphys.scenes._figures import save_figure
from nhphys.surfaces import Sphere
from nhphys.systems import RollingBody

MASS, RADIUS, DOME, G, V0 = 1.0, 0.1, 1.0, 9.81, 0.5
RHO = DOME + RADIUS  # the centre's distance from the dome's centre while it rolls
ball = nhphys.RigidBody(MASS, [0.4 * MASS * RADIUS**2] * 3, Sphere(RADIUS), name="ball")
dome = Sphere(DOME)  # its outer surface is the ground

scene = Scene(name="dome_lift_off", camera=(0.0, -1.0, 0.3))
scene.add_ground(dome, color="#c9c3b8", resolution=64)
scene.add_body(ball, RollingContact(dome, lift_off=True), color="#2e86ab", resolution=32,
               position=[0.0, 0.0, DOME], omega=[0.0, V0 / RADIUS, 0.0])

defaults = {"t_final": 1.4, "dt": 1e-3, "integrator": "exp4", "fps": 30.0, "size": (480, 400)}


def closed_form(v0):
    """``(theta*, t*, speed at lift-off)`` of the ball started at ``v0`` from the top."""
    from scipy.integrate import quad

    theta = np.arccos((10 + 7 * v0**2 / (G * RHO)) / 17)
    t, _ = quad(lambda q: RHO / np.sqrt(v0**2 + 10 / 7 * G * RHO * (1 - np.cos(q))), 0, theta,
                epsabs=1e-13, epsrel=1e-13, limit=200)
    return theta, t, np.sqrt(G * RHO * np.cos(theta))


def normal_force(theta, v0):
    """The closed-form normal force while the ball rolls on the dome, at angle ``theta``."""
    return MASS * G * (17 * np.cos(theta) - 10) / 7 - MASS * v0**2 / RHO


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "dome_lift_off"))
    parser.add_argument("--t-final", type=float, default=1.5)
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--v0", type=float, default=V0)
    parser.add_argument("--order", type=int, default=4, choices=(2, 4, 6, 8))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    v0 = args.v0

    system = RollingBody(ball, dome, gravity=G, lift_off=True)
    traj = nhphys.simulate(system, args.t_final, args.dt, Retraction(order=args.order),
                           position=[0.0, 0.0, DOME], omega=[0.0, v0 / RADIUS, 0.0])
    theta_c, t_c, speed_c = closed_form(v0)
    print(f"ball rolling off a dome of radius {DOME:g} at v0 = {v0:g} m/s, "
          f"Retraction(order={args.order}), h = {args.dt:g} s ({traj.meta['backend']}): "
          f"{len(traj.events)} events")
    for ev in traj.events:
        print(f"  {ev['kind']} at t = {ev['t']:.12f} s ({ev['before']} -> {ev['after']})")
    lift = [ev for ev in traj.events if ev["kind"] == "lift-off"]
    print(f"closed form: cos theta* = {np.cos(theta_c):.12f}, theta* = "
          f"{np.degrees(theta_c):.9f} deg, t* = {t_c:.12f} s, speed {speed_c:.9f} m/s")
    if lift:
        t_lift = lift[0]["t"]
        print(f"located lift-off t = {t_lift:.12f} s: relative difference "
              f"{t_lift / t_c - 1:+.1e}")
        k = np.flatnonzero((traj.t > t_lift) & (traj.mode == 1))
        if k.size:  # the lift-off state, back along the exact parabola of the flight
            k, back = k[0], traj.t[k[0]] - t_lift
            velocity = traj.velocity[k] + G * back * np.array([0.0, 0.0, 1.0])
            centre = (traj.position[k] - back * velocity
                      + 0.5 * G * back**2 * np.array([0.0, 0.0, 1.0]))
            theta = np.arctan2(centre[0], centre[2])
            speed = np.linalg.norm(velocity)
            print(f"at lift-off: theta = {np.degrees(theta):.9f} deg "
                  f"({theta / theta_c - 1:+.1e}), distance from the dome's centre "
                  f"{np.linalg.norm(centre):.12f} m (rho = {RHO:g}), speed "
                  f"{speed:.9f} m/s ({speed / speed_c - 1:+.1e})")
    rolling = traj.mode == 0
    print(f"while rolling: largest constraint residual "
          f"{traj.constraint_residual[rolling].max():.1e}; in flight: smallest gap "
          f"{traj.gap[~rolling].min(initial=np.inf):.2e} m, gap at the end "
          f"{traj.gap[-1]:.4f} m")
    theta = np.arctan2(traj.position[:, 0], traj.position[:, 2])
    shown = rolling & (traj.t > 0)  # the first frame carries no step's contact force
    difference = np.abs(traj.normal_force[shown] - normal_force(theta[shown], v0)).max()
    print(f"the normal force of the rolling frames is within {difference:.1e} N of the closed "
          f"form at their angle")
    balance = traj.energy - traj.work
    print(f"energy - work changes by at most {np.abs(balance - balance[0]).max():.1e} J")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.5))
    q = np.linspace(0.0, 2 * np.pi, 400)
    ax0.fill(DOME * np.sin(q), DOME * np.cos(q), color="#c9c3b8", lw=0, label="dome")
    ax0.plot(RHO * np.sin(q), RHO * np.cos(q), "k:", lw=0.8, label="rolling circle (rho)")
    ax0.plot(traj.position[rolling, 0], traj.position[rolling, 2], lw=1.5, color="#2e86ab",
             label="centre, rolling")
    ax0.plot(traj.position[~rolling, 0], traj.position[~rolling, 2], lw=1.5, color="#b0413e",
             label="centre, flight")
    ax0.plot([0, 1.3 * RHO * np.sin(theta_c)], [0, 1.3 * RHO * np.cos(theta_c)], "k--", lw=0.8,
             label=f"theta* = {np.degrees(theta_c):.3f} deg")
    ax0.set_aspect("equal")
    ax0.set_xlim(-0.2, 1.6)
    ax0.set_ylim(-0.3, 1.3)
    ax0.set_xlabel("x [m]")
    ax0.set_ylabel("z [m]")
    ax0.legend(loc="lower left", fontsize=8)
    ax0.set_title(f"v0 = {v0:g} m/s, Retraction(order={args.order}), h = {args.dt:g} s")
    grid = np.linspace(0.0, theta_c, 200)
    ax1.plot(np.degrees(theta[shown][::20]), traj.normal_force[shown][::20], "o", ms=4,
             mfc="none", color="#2e86ab", label="rolling frames (every 20th)")
    ax1.plot(np.degrees(grid), normal_force(grid, v0), "k-", lw=0.8, label="closed form")
    ax1.axvline(np.degrees(theta_c), color="k", ls="--", lw=0.8)
    ax1.axhline(0.0, color="k", lw=0.5)
    ax1.set_xlabel("theta [deg]")
    ax1.set_ylabel("normal force N [N]")
    ax1.legend()
    ax1.set_title("N = m g (17 cos theta - 10) / 7 - m v0^2 / rho")
    for ax in (ax0, ax1):
        ax.grid(True, alpha=0.3)
    return save_figure(fig, args.out, "lift_off.png")


if __name__ == "__main__":
    sys.exit(main())
