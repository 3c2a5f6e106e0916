"""A Chaplygin sleigh towing a trailer: two knife edges joined by a hitch.

An articulated system (``nhphys.systems.Articulated``): the sleigh (its blade at its origin,
its centre of mass ahead of it) moves on the plane; the trailer turns about a hitch behind the
sleigh's blade and rides on a blade of its own. Released moving forward and turning, with the
trailer in line, the trailer swings out behind the sleigh, and then the two straighten out and
run on in line, as a sleigh alone does, with the energy conserved (no friction: the blades'
constraint forces do no work); the run is compared with ``Reference``. A second run has no trailer: the sleigh alone, against its
closed form (``KnifeEdge.sleigh_closed_form``).

Figure: ``towing.png`` (the paths of the blades, the speeds along the sleigh's blade, the
turning rates, the hitch angle, and the energy error against ``Reference``).

Run ``python -m nhphys.scenes.towed_trailer [--out DIR] [--dt H] [--t-final T] [--gif]``:
writes the PNG (and with ``--gif`` an animation, rendered off screen) into
``out/towed_trailer/`` and prints their paths.

``nhphys view towed_trailer`` steps the sleigh and its trailer live (``scene``).
"""

import argparse
import os

import numpy as np

import nhphys
from nhphys.integrators import DLA, Reference
from nhphys.surfaces import Plane
from nhphys.systems import Articulated, Blade, Joint, KnifeEdge

MASS, INERTIA, AHEAD = 1.0, 0.02, 0.15  # the sleigh: centre of mass ahead of its blade
HITCH = 0.2  # behind the sleigh's blade
TRAILER_MASS, TRAILER_INERTIA, TRAILER_BLADE = 0.6, 0.015, 0.45
START = {"speed": 0.1, "turning": 2.5}


def sleigh_joints():
    return [Joint(-1, "prismatic", (1, 0, 0), name="x"),
            Joint(0, "prismatic", (0, 1, 0), name="y"),
            Joint(1, "revolute", (0, 0, 1), mass=MASS, com=(AHEAD, 0, 0),
                  inertia=np.diag([0.01, 0.01, INERTIA]), name="heading")]


def towing():
    """The sleigh and its trailer (coordinates: x, y, heading, hitch angle)."""
    trailer = Joint(2, "revolute", (0, 0, 1), offset=(-HITCH, 0, 0), mass=TRAILER_MASS,
                    com=(-0.3, 0, 0), inertia=np.diag([0.01, 0.01, TRAILER_INERTIA]),
                    name="hitch")
    return Articulated(sleigh_joints() + [trailer],
                       blades=[Blade(2), Blade(3, point=(-TRAILER_BLADE, 0, 0))],
                       name="towing")


def _viewable():
    """The scene ``nhphys view`` shows: the towing run's start."""
    pair = towing()
    shown = nhphys.Scene(name="towed_trailer", camera=(0.2, -1.0, 1.6))
    shown.add_ground(Plane(point=(-1.0, 0.15, 0.0), extent=1.5), resolution=129)
    shown.add_articulated(pair, name="towing", q=np.zeros(4),
                          v=pair.rates(np.zeros(4), {0: START["speed"], 2: START["turning"]}))
    return shown


scene = _viewable()
defaults = {"t_final": 6.0, "dt": 1e-3, "fps": 25.0, "size": (480, 400)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "towed_trailer"))
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--t-final", type=float, default=6.0)
    parser.add_argument("--gif", action="store_true", help="also render towing.gif")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pair = towing()
    alone = Articulated(sleigh_joints(), blades=[Blade(2)], name="sleigh")
    save = max(1, round(0.01 / args.dt))
    # moving along the blade and turning; the trailer's rate follows from its blade
    v_pair = pair.rates(np.zeros(4), {0: START["speed"], 2: START["turning"]})
    v_alone = alone.rates(np.zeros(3), {0: START["speed"], 2: START["turning"]})
    runs = {name: nhphys.simulate(system, args.t_final, args.dt, integrator=DLA(),
                                  save_every=save, q=np.zeros(system.n), v=v)
            for name, system, v in (("towing", pair, v_pair), ("alone", alone, v_alone))}
    reference = nhphys.simulate(pair, args.t_final, 0.1, integrator=Reference(
        rtol=1e-11, atol=1e-13), q=np.zeros(4), v=v_pair)
    towing_run, alone_run = runs["towing"], runs["alone"]
    every = round(0.1 / (args.dt * save))
    difference = np.max(np.abs(towing_run.q[::every] - reference.q))
    print(f"towing: largest |q - Reference| {difference:.1e}, largest constraint residual "
          f"{towing_run.constraint_residual.max():.1e}, relative energy error "
          f"{np.ptp(towing_run.energy) / towing_run.energy[0]:.1e}")
    speed, turning = KnifeEdge(MASS, INERTIA, AHEAD).sleigh_closed_form(
        alone_run.t, START["speed"], START["turning"])
    heading = alone_run.q[:, 2]
    along = alone_run.v[:, 0] * np.cos(heading) + alone_run.v[:, 1] * np.sin(heading)
    print(f"alone: largest |speed - closed form| {np.max(np.abs(along - speed)):.1e} m/s, "
          f"|turning - closed form| {np.max(np.abs(alone_run.v[:, 2] - turning)):.1e} rad/s")

    path = os.path.join(args.out, "towing.png")
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    t = towing_run.t
    axes[0, 0].plot(towing_run.contacts[:, 0, 0], towing_run.contacts[:, 0, 1], label="sleigh")
    axes[0, 0].plot(towing_run.contacts[:, 1, 0], towing_run.contacts[:, 1, 1],
                    label="trailer")
    axes[0, 0].plot(alone_run.q[:, 0], alone_run.q[:, 1], "--", label="sleigh alone")
    axes[0, 0].set_aspect("equal")
    axes[0, 0].set_title("paths of the blades [m]")
    axes[0, 0].legend(fontsize=8)
    pair_heading = towing_run.q[:, 2]
    pair_along = (towing_run.v[:, 0] * np.cos(pair_heading)
                  + towing_run.v[:, 1] * np.sin(pair_heading))
    axes[0, 1].plot(t, pair_along, label="towing")
    axes[0, 1].plot(alone_run.t, along, "--", label="alone")
    axes[0, 1].plot(alone_run.t, speed, "k:", label="alone, closed form")
    axes[0, 1].set_title("speed along the sleigh's blade [m/s]")
    axes[0, 1].legend(fontsize=8)
    axes[1, 0].plot(t, towing_run.v[:, 2], label="sleigh (towing)")
    axes[1, 0].plot(t, towing_run.v[:, 2] + towing_run.v[:, 3], label="trailer")
    axes[1, 0].plot(alone_run.t, alone_run.v[:, 2], "--", label="sleigh alone")
    axes[1, 0].plot(t, towing_run.q[:, 3], ":", label="hitch angle [rad]")
    axes[1, 0].set_title("turning rates [rad/s]")
    axes[1, 0].legend(fontsize=8)
    axes[1, 1].semilogy(t, np.abs(towing_run.energy - towing_run.energy[0])
                        / towing_run.energy[0] + 1e-18, label="towing")
    axes[1, 1].semilogy(alone_run.t, np.abs(alone_run.energy - alone_run.energy[0])
                        / alone_run.energy[0] + 1e-18, label="alone")
    axes[1, 1].set_title("relative energy error")
    axes[1, 1].legend(fontsize=8)
    for ax in axes[1]:
        ax.set_xlabel("t [s]")
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"a sleigh towing a trailer, DLA(), h = {args.dt:g} s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(path)
    if args.gif:
        from nhphys.viz import render_articulated

        print(render_articulated(pair, towing_run, os.path.join(args.out, "towing.gif"),
                                 fps=20)["path"])


if __name__ == "__main__":
    main()
