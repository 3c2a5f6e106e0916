"""A joint tree's wheel rolling in a bowl, beside the same disk as a rolling body.

A thin uniform disk (radius 0.1 m, 1 kg) is carried by a free joint tree (slides along x, y and
z, then yaw, roll and the spin about its axis) whose wheel rolls on the paraboloid bowl ``z =
(x^2 + y^2) / 4`` (``Articulated(..., ground=Paraboloid(2, 2))``: the wheel's height above the
curved ground is held, its ground point neither slips nor skids). Started leaning and turning,
it rolls down and around the bowl. The same disk as a single rolling body
(``RollingBody(..., Disk)``: the rolling field on the rotation group, an independent
formulation) from the same state follows the same path: the figure shows how far apart the
two are, with the tree stepped by ``DLA()`` and by ``Reference``, and the energy errors.

Figure: ``tree_in_bowl.png`` (the contact paths seen from above; the distance between the two
disks' centres; the energy errors).

Run ``python -m nhphys.scenes.tree_in_bowl [--out DIR] [--dt H] [--t-final T]``: writes the PNG
into ``out/tree_in_bowl/`` and prints its path. ``nhphys view tree_in_bowl`` shows the tree's
disk and the rolling body, upright and spinning, rolling across the bowl side by side, each the
other's mirror image.
"""

import argparse
import os

import numpy as np

import nhphys
from nhphys.integrators import DLA, Reference
from nhphys.shapes import Disk
from nhphys.surfaces import Paraboloid
from nhphys.systems import Articulated, Joint, RollingBody, Wheel

MASS, RADIUS = 1.0, 0.1
I_DIAMETRAL, I_AXIAL = MASS * RADIUS**2 / 4, MASS * RADIUS**2 / 2
BOWL = Paraboloid(2.0, 2.0, extent=0.8)
# the tree's disk frame (its axis along y) to the rolling body's (a Disk's axis is its z)
TO_DISK = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def free_disk(ground=BOWL, held=True):
    """The disk on a free tree (coordinates x, y, z, yaw, roll, spin) on ``ground``."""
    joints = [Joint(-1, "prismatic", (1, 0, 0), name="x"),
              Joint(0, "prismatic", (0, 1, 0), name="y"),
              Joint(1, "prismatic", (0, 0, 1), name="z"),
              Joint(2, "revolute", (0, 0, 1), name="yaw"),
              Joint(3, "revolute", (1, 0, 0), name="roll"),
              Joint(4, "revolute", (0, 1, 0), name="spin", mass=MASS,
                    inertia=np.diag([I_DIAMETRAL, I_AXIAL, I_DIAMETRAL]))]
    return Articulated(joints, [Wheel(5, RADIUS, held=held)], ground=ground, name="wheel")


def start(tree, x=0.3, yaw=0.2, lean=0.1, turning=0.5, spin=-10.0):
    """``(q, v)``: ``x`` from the bowl's axis, heading ``yaw``, leaning ``lean``, turning at
    ``turning`` and spinning at ``spin`` (rad/s); its height put on the bowl."""
    q = np.array([x, 0.0, 0.0, yaw, lean, 0.0])
    for _ in range(30):
        q[2] -= tree.tree.gaps(q)[0]
    return q, tree.rates(q, {3: turning, 4: 0.0, 5: spin})


def rolling_start(tree, q, v):
    """The rolling body's start keywords for the tree's state ``(q, v)``."""
    kin = tree.tree.kinematics(q, v, bias=False)
    R = kin["R"][5]
    return {"orientation": R @ TO_DISK, "omega": TO_DISK.T @ (R.T @ kin["omega"][5]),
            "position": tree.tree.disk_contact(kin, 0)[4]}


def disk_body():
    return nhphys.RigidBody(MASS, np.diag([I_DIAMETRAL, I_DIAMETRAL, I_AXIAL]), Disk(RADIUS),
                            name="disk")


def _viewable():
    """Both disks upright, 0.3 m either side of the bowl's axis with their axes along the
    radius, spinning at 20 rad/s: each rolls across the bowl's wall and back, the rolling body
    (blue) the mirror image of the tree's (red)."""
    tree = free_disk()
    shown = nhphys.Scene(name="tree_in_bowl", camera=(0.3, -1.8, 1.3))
    shown.add_ground(BOWL, color="#c9c3b8", resolution=64, opacity=0.6)
    states = [start(tree, x, np.pi / 2, lean=0.0, turning=0.0, spin=-20.0)
              for x in (0.3, -0.3)]
    shown.add_articulated(tree, name="wheel", color="#8c3b2e", q=states[0][0], v=states[0][1])
    shown.add_body(disk_body(), nhphys.RollingContact(BOWL), color="#2c5d8c", resolution=48,
                   **rolling_start(tree, *states[1]))
    return shown


scene = _viewable()
defaults = {"t_final": 2.0, "dt": 1e-3, "fps": 25.0, "size": (480, 400)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "tree_in_bowl"))
    parser.add_argument("--t-final", type=float, default=1.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tree = free_disk()
    q, v = start(tree)
    every = max(1, int(round(0.01 / args.dt)))
    runs = {"DLA": nhphys.simulate(tree, args.t_final, args.dt, integrator=DLA(),
                                   save_every=every, q=q, v=v),
            "Reference": nhphys.simulate(tree, args.t_final, args.dt * every,
                                         integrator=Reference(rtol=1e-12, atol=1e-13), q=q,
                                         v=v)}
    rolling = nhphys.simulate(RollingBody(disk_body(), BOWL), args.t_final, args.dt * every,
                              integrator=Reference(rtol=1e-12, atol=1e-13),
                              **rolling_start(tree, q, v))
    zero = np.zeros(tree.n)
    fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(14, 4))
    ax0.plot(rolling.contact_point[:, 0], rolling.contact_point[:, 1], lw=4, alpha=0.4,
             label="rolling body")
    for label, traj in runs.items():
        centres = np.array([tree.tree.kinematics(qi, zero, bias=False)["o"][5]
                            for qi in traj.q])
        apart = np.linalg.norm(centres - rolling.position, axis=1)
        ax0.plot(traj.contacts[:, 0, 0], traj.contacts[:, 0, 1], label=f"tree, {label}")
        ax1.semilogy(traj.t[1:], apart[1:], label=f"tree ({label}) to rolling body")
        ax2.semilogy(traj.t[1:], np.abs(traj.energy[1:] / traj.energy[0] - 1),
                     label=f"tree, {label}")
        print(f"tree ({label}): centre {apart.max():.1e} m from the rolling body's at most; "
              f"energy error {np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; largest "
              f"constraint residual {traj.constraint_residual.max():.1e}")
    ax0.set_aspect("equal")
    ax0.set_xlabel("x [m]")
    ax0.set_ylabel("y [m]")
    ax0.set_title("contact paths from above")
    ax0.legend(fontsize=8)
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("distance between the centres [m]")
    ax1.legend(fontsize=8)
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("relative energy error")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(args.out, "tree_in_bowl.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(path)
    return [path]


if __name__ == "__main__":
    main()
