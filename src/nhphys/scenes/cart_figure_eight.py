"""A two-wheeled cart driven along a figure eight by its wheel motors.

An articulated system (``nhphys.systems.Articulated``): a chassis moving on the plane, two
wheels on a rigid axle, each driven by a speed-controlled ``JointMotor``, and a caster wheel on
a swivel behind. The motors' target rates follow schedules: the right wheel faster for one
circle (the cart turns left), then the left wheel faster for another (it turns right). On each
circle the turning rate is ``r (w_R - w_L) / (2 b)`` and the radius ``b (w_L + w_R) /
(w_R - w_L)`` about the axle's centre (``r`` the wheels' radius, ``2 b`` the track), which the
script compares with the run. The caster swings round at each change of direction.

Figure: ``figure_eight.png`` (the path of the axle's centre and of the caster's ground point,
the wheel rates against their targets, the turning rate against the closed form).

Run ``python -m nhphys.scenes.cart_figure_eight [--out DIR] [--dt H] [--gif]``: writes the PNG
(and with ``--gif`` an animation, rendered off screen) into ``out/cart_figure_eight/`` and prints
their paths.

``nhphys view cart_figure_eight`` steps the cart live (``scene``).
"""

import argparse
import os

import numpy as np

import nhphys
from nhphys.forces import JointMotor, Schedule
from nhphys.integrators import DLA
from nhphys.surfaces import Plane
from nhphys.systems import Articulated, Joint, Wheel

RADIUS, HALF_TRACK, CASTER = 0.05, 0.15, 0.03
SLOW, FAST = 8.0, 12.0  # wheel rates, rad/s
GAIN = 50.0  # N m s: the speed control's stiffness
TURNING = RADIUS * (FAST - SLOW) / (2 * HALF_TRACK)
CIRCLE = 2 * np.pi / TURNING  # the time of one circle
SWITCH = 0.2  # s, the ramp between the two circles


def cart():
    """The cart (coordinates: x, y, heading, left, right, swivel, caster), motors included."""
    ramp = [0.0, CIRCLE - SWITCH, CIRCLE + SWITCH, 3 * CIRCLE]
    left = Schedule(ramp, [SLOW, SLOW, FAST, FAST])
    right = Schedule(ramp, [FAST, FAST, SLOW, SLOW])
    wheel = {"mass": 0.1, "inertia": np.diag([6.25e-5, 1.25e-4, 6.25e-5])}
    joints = [
        Joint(-1, "prismatic", (1, 0, 0), name="x"),
        Joint(0, "prismatic", (0, 1, 0), name="y"),
        Joint(1, "revolute", (0, 0, 1), mass=2.0, com=(-0.05, 0, 0.1),
              inertia=np.diag([0.02, 0.03, 0.04]), name="heading"),
        Joint(2, "revolute", (0, 1, 0), offset=(0, HALF_TRACK, RADIUS), name="left", **wheel),
        Joint(2, "revolute", (0, 1, 0), offset=(0, -HALF_TRACK, RADIUS), name="right", **wheel),
        Joint(2, "revolute", (0, 0, 1), offset=(-0.25, 0, 0.08), mass=0.02,
              inertia=np.diag([1e-6, 1e-6, 1e-6]), name="swivel"),
        Joint(5, "revolute", (0, 1, 0), offset=(-0.02, 0, CASTER - 0.08), mass=0.02,
              inertia=np.diag([5e-6, 9e-6, 5e-6]), name="caster"),
    ]
    # the axle's sideways row is given once, by the left wheel
    wheels = [Wheel(3, RADIUS), Wheel(4, RADIUS, sideways=False), Wheel(6, CASTER)]
    motors = [JointMotor("left", target_speed=left, gain=GAIN),
              JointMotor("right", target_speed=right, gain=GAIN)]
    return Articulated(joints, wheels, forces=motors, name="cart"), left, right


def _viewable():
    """The scene ``nhphys view`` shows: the cart from rest on its wheels' target rates."""
    system = cart()[0]
    shown = nhphys.Scene(name="cart_figure_eight", camera=(0.3, -1.0, 1.4))
    shown.add_ground(Plane(extent=1.9), resolution=129)
    shown.add_articulated(system, name="cart", q=np.zeros(7),
                          v=system.rates(np.zeros(7), {3: SLOW, 4: FAST}))
    return shown


scene = _viewable()
defaults = {"t_final": round(2 * CIRCLE, 1), "dt": 1e-3, "fps": 25.0, "size": (480, 400)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "cart_figure_eight"))
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--t-final", type=float, default=round(2 * CIRCLE, 1))
    parser.add_argument("--gif", action="store_true", help="also render figure_eight.gif")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    system, left, right = cart()
    v0 = system.rates(np.zeros(7), {3: SLOW, 4: FAST})
    traj = nhphys.simulate(system, args.t_final, args.dt, integrator=DLA(), q=np.zeros(7),
                           v=v0, save_every=max(1, round(0.01 / args.dt)))
    t = traj.t
    steady = (np.abs(t - CIRCLE) > 1.0) & (t > 1.0)
    expected = np.where(t < CIRCLE, TURNING, -TURNING)
    print(f"turning rate on the circles: largest |error| "
          f"{np.max(np.abs(traj.v[steady, 2] - expected[steady])):.1e} rad/s of {TURNING:.4f}")
    balance = traj.energy - traj.work
    print(f"largest constraint residual {traj.constraint_residual.max():.1e}; energy - work "
          f"moves by {np.ptp(balance):.1e} J (the motors' work at the end {traj.work[-1]:+.2e} J)")

    path = os.path.join(args.out, "figure_eight.png")
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    axes[0].plot(traj.q[:, 0], traj.q[:, 1], label="axle's centre")
    axes[0].plot(traj.contacts[:, 2, 0], traj.contacts[:, 2, 1], lw=0.8, label="caster")
    axes[0].set_aspect("equal")
    axes[0].set_title("paths [m]")
    axes[0].legend(fontsize=8)
    axes[1].plot(t, traj.v[:, 3], label="left")
    axes[1].plot(t, traj.v[:, 4], label="right")
    axes[1].plot(t, [left(x) for x in t], "k:", lw=0.8, label="targets")
    axes[1].plot(t, [right(x) for x in t], "k:", lw=0.8)
    axes[1].set_title("wheel rates [rad/s]")
    axes[1].legend(fontsize=8)
    axes[2].plot(t, traj.v[:, 2], label="run")
    axes[2].plot(t, expected, "k--", lw=0.8, label="r (w_R - w_L) / 2b")
    axes[2].set_title("turning rate [rad/s]")
    axes[2].legend(fontsize=8)
    for ax in axes[1:]:
        ax.set_xlabel("t [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"a cart on an axle with a caster, DLA(), h = {args.dt:g} s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(path)
    if args.gif:
        from nhphys.viz import render_articulated

        print(render_articulated(system, traj, os.path.join(args.out, "figure_eight.gif"),
                                 fps=20, speed=2.0)["path"])


if __name__ == "__main__":
    main()
