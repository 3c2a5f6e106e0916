"""Marbles on a terrain: 100 balls roll without slipping on a height-field landscape.

The ground is a bicubic height field, the basin z = 0.15 sin(1.3 x) cos(1.1 y) + 0.04 (x^2 + y^2)
sampled on a 65 x 65 grid; 100 balls of radius 0.08 start at random places with random spins and roll into the
valleys. Bodies do not collide with each other: each ball is an independent system, stepped side
by side with the others (this scene is the rendering benchmark's many-body case).

Run ``python -m nhphys.scenes.marbles`` (or ``nhphys run marbles``): writes out/marbles.npz and
out/marbles.gif and prints where they are.

``python -m nhphys.scenes.marbles --lift-off [--restitution E] [--drop H]`` makes the balls'
contacts unilateral (``RollingContact(terrain, lift_off=True, restitution=E)``,
``docs/contact-modes.md``): a ball leaves the terrain where it would have to be pulled onto it
(over a crest taken fast enough), flies and lands with an impact; with ``--drop H`` every ball
starts ``H`` above the terrain, in flight, and lands. It prints how many balls left the ground
and the events by kind; ``--out RUN.npz`` and ``--gif FILE.gif`` keep the run. (The balls of
this scene are slow, at most about 2.4 m/s: the crests' radii of curvature are 5.8 m and more,
so a ball would need about 7.6 m/s to leave one, and without ``--drop`` none leaves the ground.)
``--lift-off --jump`` makes the crests sharper, ``0.15 sin(5 x) cos(5 y)`` (radius of curvature
0.27 m at the tops, still larger than a ball's 0.08 m in the valleys), and throws every ball at
2 m/s towards the middle: about half of them jump a crest, fly, land and bounce.
"""

import argparse
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.surfaces import HeightField, Sphere

COUNT = 100
RADIUS = 0.08
RESTITUTION = 0.3  # of the impacts, with --lift-off


WAVES = (1.3, 1.1)  # the terrain's wavenumbers along x and y [1/m]
JUMP_WAVES = (5.0, 5.0)  # --jump: crests of radius 1/(0.15 * 25) = 0.27 m
JUMP_SPEED = 2.0  # --jump: every ball thrown at 2 m/s towards the middle


def build(lift_off=False, restitution=0.0, drop=0.0, waves=WAVES, throw=0.0, count=COUNT):
    """The scene: the balls' contacts bilateral (the default), or unilateral with
    ``lift_off`` (impacts of restitution ``restitution``; every ball starting ``drop`` above
    the terrain, in flight, if ``drop > 0``), on the terrain of wavenumbers ``waves``; with
    ``throw > 0`` every ball starts rolling at that speed towards the middle; the first
    ``count`` of the balls."""
    scene = Scene(name="marbles")
    kx, ky = (float(k) for k in waves)
    terrain = scene.add_ground(
        HeightField.from_function(f"0.15*sin({kx:g}*x)*cos({ky:g}*y) + 0.04*(x**2 + y**2)",
                                  (-3, 3), (-3, 3), samples=65),
        color="#b9c4a3", resolution=96)
    rng = np.random.default_rng(2026)
    start = {"height": drop} if drop > 0 else {}
    for i in range(count):
        ball = nhphys.RigidBody(1.0, [0.4 * RADIUS**2] * 3, Sphere(RADIUS), name=f"ball{i:03d}")
        x, y = rng.uniform(-2.0, 2.0, 2)
        contact = RollingContact(terrain, lift_off=True, restitution=restitution) if lift_off \
            else RollingContact(terrain)
        spin = rng.normal(0.0, 2.0, 3)
        location = terrain.project([x, y, 0.0])
        if throw > 0:  # rolling at `throw` towards the middle: omega = n x v / r
            n = terrain.normal(location)
            inward = -np.array([x, y, 0.0])
            inward -= (inward @ n) * n
            spin = np.cross(n, throw * inward / np.linalg.norm(inward)) / RADIUS
        scene.add_body(ball, contact, position=terrain.point(location), omega=spin,
                       resolution=16, **start)
    return scene


scene = build()

defaults = {"t_final": 4.0, "dt": 0.01, "integrator": "exp", "fps": 10.0, "size": (480, 360)}


def lift_off_parser():
    parser = argparse.ArgumentParser(
        prog="python -m nhphys.scenes.marbles", allow_abbrev=False,
        description=__doc__.splitlines()[0],
        epilog="Without --lift-off the run is `nhphys run marbles` and takes every option of "
               "`nhphys run` (see `nhphys run --help`).")
    parser.add_argument("--lift-off", action="store_true",
                        help="unilateral contacts: a ball leaves the terrain where the ground "
                             "would have to pull it, flies and lands with an impact")
    parser.add_argument("--restitution", type=float, default=RESTITUTION,
                        help=f"with --lift-off: Newton's restitution of the impacts, in [0, 1] "
                             f"(default {RESTITUTION})")
    parser.add_argument("--drop", type=float, default=0.0, metavar="H",
                        help="with --lift-off: start every ball H m above the terrain, in flight "
                             "(default 0: on it)")
    parser.add_argument("--jump", action="store_true",
                        help=f"with --lift-off: sharper crests (wavenumbers {JUMP_WAVES[0]:g}, "
                             f"radius of curvature 0.27 m) and every ball thrown at "
                             f"{JUMP_SPEED:g} m/s towards the middle, so that balls jump the "
                             "crests")
    parser.add_argument("--t-final", type=float, default=defaults["t_final"],
                        help=f"end time [s] (default {defaults['t_final']:g})")
    parser.add_argument("--dt", type=float, default=defaults["dt"],
                        help=f"step size [s] (default {defaults['dt']:g})")
    parser.add_argument("--out", help="with --lift-off: the trajectory file (.npz) to write")
    parser.add_argument("--gif", help="with --lift-off: an animated GIF to render")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--lift-off" not in argv and not {"-h", "--help"} & set(argv):
        from nhphys.cli import main as nhphys_main

        return nhphys_main(["run", __file__, *argv])  # `nhphys run marbles`, as it always was
    parser = lift_off_parser()
    args = parser.parse_args(argv)
    if not args.lift_off:
        parser.error("--restitution, --drop, --out and --gif here need --lift-off")
    if args.drop < 0:
        parser.error(f"--drop: expected a height >= 0, got {args.drop:g}")
    try:
        lifted = build(lift_off=True, restitution=args.restitution, drop=args.drop,
                       **({"waves": JUMP_WAVES, "throw": JUMP_SPEED} if args.jump else {}))
    except ValueError as exc:
        parser.error(str(exc))
    print(f"marbles with unilateral contacts: {COUNT} balls, restitution {args.restitution:g}"
          f"{f', dropped from {args.drop:g} m' if args.drop > 0 else ''}"
          f"{f', thrown at {JUMP_SPEED:g} m/s over sharper crests' if args.jump else ''}, "
          f"t_final = {args.t_final:g} s, dt = {args.dt:g} s")
    traj = lifted.simulate(args.t_final, args.dt, integrator=defaults["integrator"],
                           progress=not args.no_progress, out=args.out)
    from collections import Counter

    kinds = Counter(ev["kind"] for ev in traj.events)
    left = {ev["body"] for ev in traj.events if ev["kind"] == "lift-off"}
    bounced = {ev["body"] for ev in traj.events
               if ev["kind"] == "touchdown" and ev["after"] == "flight"}
    names = traj.body_names
    print(f"{len(left)} of {COUNT} balls left the ground (a lift-off while rolling), "
          f"{len(bounced)} bounced after a touchdown")
    print(f"{len(traj.events)} events: "
          + (", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "none"))
    if left:
        first = Counter(ev["body"] for ev in traj.events if ev["kind"] == "lift-off")
        print("most lift-offs: " + ", ".join(f"{b} ({n})" for b, n in first.most_common(5)))
    speed = np.linalg.norm(np.gradient(traj.position, traj.t, axis=0), axis=-1)
    modes = Counter(int(m) for m in traj.mode[-1])
    print(f"fastest ball (from the saved positions): {speed.max():.2f} m/s ({names[int(np.argmax(speed.max(0)))]}); at "
          f"t = {traj.t[-1]:g} s {modes.get(0, 0)} rolling, {modes.get(1, 0)} in flight, "
          f"{modes.get(2, 0)} sliding")
    written = [traj.file] if args.out is not None else []
    if args.gif is not None:
        from nhphys import viz

        viz.render(lifted, traj, args.gif, fps=defaults["fps"], size=defaults["size"])
        written.append(args.gif)
    if written:
        import os

        print("wrote:")
        for path in written:
            print("  " + os.path.abspath(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
