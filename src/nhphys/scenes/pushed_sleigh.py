"""A sleigh pushed by a force schedule: two Chaplygin sleighs on a level plane, each pushed
along its blade by a force that ramps up, holds, lets go and brakes, against a viscous drag.

The first starts running straight: its speed follows the closed form ``m dv/dt = F(t) - c v``
(integrated exactly, below). The second starts turning; the push straightens it out sooner than
a free sleigh would (the centre of mass is ahead of the blade). The push is given in the body
frame (it turns with the sleigh, like a thruster); the blade constraint holds to round-off, and
``energy - work`` (the work of the push and of the drag) is conserved to second order.

Figures: ``push.png`` (the force, the speeds against the closed form and the Reference, the
turning rate, the paths) and ``diagnostics.png`` (energy, work and their balance; constraint
residual).

Run ``python -m nhphys.scenes.pushed_sleigh [--out DIR] [--dt H]``: writes the PNGs into
``out/pushed_sleigh/`` and prints their paths. ``nhphys view pushed_sleigh`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import KnifeEdgeContact, Scene
from nhphys import forces as fe
from nhphys.surfaces import Ellipsoid, Plane
from nhphys.systems import KnifeEdge

MASS = 1.0
INERTIA = [0.004, 0.02, 0.02]  # about the centre of mass; the sleigh turns about z
OFFSET = 0.15
DRAG = 0.4
# the push along the blade (newtons, body frame): ramp up, hold, let go, brake, let go
TIMES = [0.0, 0.5, 1.5, 2.0, 2.5, 3.0, 3.5]
PUSH = [0.0, 1.0, 1.0, 0.0, 0.0, -0.6, 0.0]
STARTS = {"straight": {"position": (-1.8, 1.2), "heading": -0.2, "velocity": 0.1,
                       "turning_rate": 0.0},
          "turning": {"position": (-1.6, -0.6), "heading": -1.4, "velocity": 0.1,
                      "turning_rate": 2.5}}


def push():
    """The force elements of each sleigh: the scheduled push along the blade, and drag."""
    schedule = fe.Schedule(TIMES, np.outer(PUSH, [1.0, 0.0, 0.0]))
    return [fe.Force(schedule, frame="body"), fe.LinearDrag(DRAG)]


scene = Scene(name="pushed_sleigh", camera=(0.0, -1.2, 1.4))
floor = scene.add_ground(Plane(extent=2.5), color="#cfd6dc")
for name, start in STARTS.items():
    hull = nhphys.RigidBody(MASS, INERTIA, Ellipsoid([0.3, 0.12, 0.07]), name=name)
    scene.add_body(hull, KnifeEdgeContact(floor, offset=OFFSET), forces=push(), **start)

defaults = {"t_final": 5.0, "dt": 0.01, "integrator": "exp", "fps": 15.0, "size": (480, 360)}


def straight_speed(t, v0):
    """The closed form of ``m dv/dt = F(t) - c v`` for the piecewise linear push, integrated
    exactly piece by piece (``F = a + b s`` on each piece gives ``v`` in closed form)."""
    t = np.asarray(t, dtype=float)
    k = DRAG / MASS
    out = np.empty_like(t)
    knots = list(TIMES) + [np.inf]
    values = list(PUSH) + [PUSH[-1]]
    v_start, t_start = v0, 0.0
    for i in range(len(knots) - 1):
        lo, hi = knots[i], knots[i + 1]
        slope = 0.0 if not np.isfinite(hi) else (values[i + 1] - values[i]) / (hi - lo)
        a = values[i] / MASS
        b = slope / MASS

        def v(s, v_start=v_start, a=a, b=b):
            # v' = a + b s - k v, v(0) = v_start
            steady = (a - b / k) / k + b * s / k
            return steady + (v_start - (a - b / k) / k) * np.exp(-k * s)

        inside = (t >= lo) & (t <= hi)
        out[inside] = v(t[inside] - lo)
        if np.isfinite(hi):
            v_start = v(hi - lo)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "pushed_sleigh"))
    parser.add_argument("--t-final", type=float, default=5.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.integrators import Reference

    sleigh = KnifeEdge(MASS, INERTIA[2], OFFSET, forces=push())
    free = KnifeEdge(MASS, INERTIA[2], OFFSET, forces=[fe.LinearDrag(DRAG)])
    save = max(1, round(0.01 / args.dt))
    runs = {name: nhphys.simulate(sleigh, args.t_final, args.dt, save_every=save, **start)
            for name, start in STARTS.items()}
    unpushed = nhphys.simulate(free, args.t_final, args.dt, save_every=save,
                               **STARTS["turning"])
    reference = nhphys.simulate(sleigh, args.t_final, 0.05, Reference(rtol=1e-10, atol=1e-12),
                                **STARTS["turning"])
    straight, turning = runs["straight"], runs["turning"]
    exact = straight_speed(straight.t, STARTS["straight"]["velocity"])
    print("straight sleigh: largest |v - closed form| "
          f"{np.abs(straight.velocity - exact).max():.2e}")
    mine = turning.velocity[:: round(0.05 / (args.dt * save))]
    print(f"turning sleigh: largest |v - Reference| {np.abs(mine - reference.velocity).max():.2e}")
    for name, traj in runs.items():
        balance = traj.energy - traj.work
        print(f"{name}: work {traj.work[-1]:+.4f} J, largest |energy - work - E0| "
              f"{np.abs(balance - balance[0]).max():.1e}, largest constraint residual "
              f"{traj.constraint_residual.max():.1e}")

    paths = [os.path.join(args.out, "push.png"), os.path.join(args.out, "diagnostics.png")]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    t = straight.t
    force = np.interp(t, TIMES, PUSH)
    axes[0, 0].plot(t, force, "k")
    axes[0, 0].set_title("push along the blade, F(t) [N] (body frame)")
    axes[0, 1].plot(t, exact, "k", lw=3, alpha=0.3, label="closed form (straight)")
    axes[0, 1].plot(t, straight.velocity, label="straight")
    axes[0, 1].plot(t, turning.velocity, label="turning")
    axes[0, 1].plot(reference.t, reference.velocity, "k.", ms=3, label="Reference (turning)")
    axes[0, 1].plot(t, unpushed.velocity, "--", label="turning, not pushed")
    axes[0, 1].set_title("speed of the blade's contact point [m/s]")
    axes[0, 1].legend(fontsize=8)
    axes[1, 0].plot(t, turning.turning_rate, label="pushed")
    axes[1, 0].plot(t, unpushed.turning_rate, "--", label="not pushed")
    axes[1, 0].set_title("turning rate of the turning sleigh [rad/s]")
    axes[1, 0].set_xlabel("t [s]")
    axes[1, 0].legend(fontsize=8)
    for name, traj in runs.items():
        axes[1, 1].plot(traj.pose[:, 0], traj.pose[:, 1], label=name)
    axes[1, 1].plot(unpushed.pose[:, 0], unpushed.pose[:, 1], "--", label="turning, not pushed")
    axes[1, 1].set_aspect("equal")
    axes[1, 1].set_title("paths of the contact points [m]")
    axes[1, 1].legend(fontsize=8)
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"pushed sleighs, Retraction('exp'), h = {args.dt:g} s")
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for name, traj in runs.items():
        axes[0].plot(traj.t, traj.energy, label=f"energy ({name})")
        axes[0].plot(traj.t, traj.work, "--", label=f"work ({name})")
        balance = traj.energy - traj.work
        axes[1].semilogy(traj.t[1:], np.abs(balance[1:] - balance[0]) + 1e-17, label=name)
        axes[2].semilogy(traj.t, traj.constraint_residual + 1e-18, label=name)
    axes[0].set_title("energy and work of push and drag [J]")
    axes[1].set_title("|energy - work - E0|")
    axes[2].set_title("constraint residual (sideways speed) [m/s]")
    for ax in axes:
        ax.set_xlabel("t [s]")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
