"""An Euler disk released at a lean of 60 degrees goes down turning ever faster and falls flat.

A thin uniform disk (radius 37.5 mm, 450 g) leans 60 degrees from the vertical and turns at
2 rad/s about the vertical, without spin. Rolling without slipping and without losses, it leans
further while its heading turns faster and faster (the turning rate grows without bound as the
disk approaches flat: 2 rad/s at the start, 134 rad/s when the run stops). When its plane comes
within 0.02 rad of the ground the contact stops being a point: ``nhphys.simulate`` raises
:class:`nhphys.errors.ContactEvent` saying so, with every frame up to it in ``.trajectory``.

The model has no rolling resistance or air drag, so this is not the slow, many-second spiral of
a real Euler disk (which loses energy as it goes); it is the last, fast part of it: how lean and
turning rate run away together near flat. Figures: ``diagnostics.png`` (energy error, residuals,
contact path) and ``fall.png`` (lean and turning rate against time up to the event).

Run ``python -m nhphys.scenes.euler_disk [--out DIR]``: writes PNGs into ``out/euler_disk/`` and prints
what happened and where the PNGs are.
"""

import argparse
import os
import sys
import textwrap

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.errors import ContactEvent
from nhphys.shapes import Disk
from nhphys.surfaces import Plane
from nhphys.systems import RollingBody

MASS, RADIUS, GRAVITY = 0.45, 0.0375, 9.81
LEAN, TURN = np.radians(60.0), 2.0

disk = nhphys.RigidBody(MASS, Disk.solid_inertia(MASS, RADIUS), Disk(RADIUS, flat_angle=0.02),
                        name="euler disk")
ground = Plane(extent=0.12)


def leaning(lean):
    """Orientation of a disk rolling along +x with its plane ``lean`` rad from the vertical:
    body x the in-plane direction from contact to centre, body y the rolling direction, body z
    the axis, ``lean`` above the horizontal."""
    c, s = np.cos(lean), np.sin(lean)
    return np.column_stack([[0.0, -s, c], [1.0, 0.0, 0.0], [0.0, c, s]])


R0 = leaning(LEAN)
OMEGA0 = R0.T @ np.array([0.0, 0.0, TURN])  # turning about the vertical, no spin
START = {"orientation": R0, "omega": OMEGA0, "position": np.zeros(3)}

scene = Scene(name="euler_disk", camera=(0.0, -0.2, 0.12))
scene.add_ground(ground, color="#3b3b3b")
scene.add_body(disk, RollingContact(ground), color="#d7d7d7", resolution=64, **START)

defaults = {"t_final": 0.07, "dt": 1e-4, "integrator": "exp", "fps": 30.0, "size": (480, 360),
            "speed": 0.05}


def lean_and_turning_rate(traj):
    """Lean from the vertical (rad) and turning rate of the heading (rad/s) per frame; the
    heading is the horizontal direction of the disk's axis."""
    axis = traj.R[:, :, 2]
    lean = np.arctan2(np.abs(axis[:, 2]), np.hypot(axis[:, 0], axis[:, 1]))
    heading = np.unwrap(np.arctan2(-axis[:, 0], axis[:, 1]))
    return lean, np.gradient(heading, traj.t)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "euler_disk"))
    parser.add_argument("--dt", type=float, default=1e-4)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    system = RollingBody(disk, ground, gravity=GRAVITY)
    try:
        traj = nhphys.simulate(system, 1.0, args.dt, **START)
        print("no contact event within 1 s")
    except ContactEvent as event:
        print(event)
        traj = event.trajectory
    paths = [os.path.join(args.out, "diagnostics.png"), os.path.join(args.out, "fall.png")]
    plt.close(plots.diagnostics(traj, paths[0], title="Euler disk, up to the moment it lies flat"))

    lean, rate = lean_and_turning_rate(traj)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    ax0.plot(traj.t, np.degrees(lean))
    ax0.axhline(90 - np.degrees(disk.shape.flat_angle), color="k", ls=":", lw=1,
                label="flat-contact event")
    ax0.set_xlabel("t [s]")
    ax0.set_ylabel("lean from vertical [deg]")
    ax0.legend()
    ax1.semilogy(traj.t, np.abs(rate))
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("turning rate |d heading/dt| [rad/s]")
    fig.suptitle(textwrap.fill(traj.meta.get("event", {}).get("message", ""), 130), fontsize=8)
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    print(f"lean {np.degrees(lean[0]):.1f} -> {np.degrees(lean[-1]):.2f} deg in "
          f"{traj.t[-1]:.4f} s; "
          f"turning rate {abs(rate[0]):.2f} -> {abs(rate[-1]):.0f} rad/s; energy error "
          f"{np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; largest residual "
          f"{traj.constraint_residual.max():.1e}")
    for p in paths:
        print(p)
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
