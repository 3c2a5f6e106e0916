"""The ``nhphys`` command: run, view and render scenes, list the bundled ones, time rendering.

::

    nhphys run SCENE [--t-final T] [--dt H] [--integrator NAME] [--backend B] [--save-every N]
                     [--out RUN.npz] [--gif OUT.gif] [--mp4 OUT.mp4] [--fps F] [--size WxH]
    nhphys view SCENE [--dt H] [--speed S] [--frames N] [--record OUT.gif] [--off-screen]
    nhphys render RUN.npz [--gif OUT.gif | --mp4 OUT.mp4 | --png OUT.png] [--scene SCENE]
    nhphys list
    nhphys bench [SCENE] [--frames N]

``SCENE`` is a Python file that sets ``scene = nhphys.Scene(...)`` (and optionally a dict
``defaults`` with ``t_final``, ``dt``, ``integrator``, ``fps``, ``speed``, ``save_every``), or the
name of a bundled scene (``nhphys list``). ``run`` with no output option writes
``out/NAME.npz`` and ``out/NAME.gif``. Every file is written under a temporary name and renamed
when complete. Exit status: 0 on success, 1 when the simulation fails, 2 for usage errors (bad
arguments, a scene file without ``scene``, unknown integrators, outputs that cannot be written),
130 when interrupted (what was computed is written first).
"""

import argparse
import ast
import os
import sys
import time

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
FALLBACK_DEFAULTS = {"t_final": 10.0, "dt": 0.01, "integrator": None, "fps": 25.0,
                     "speed": 1.0, "save_every": 1, "size": (640, 480)}


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


# -- scenes ------------------------------------------------------------------------------------

def scene_dirs():
    """Folders searched for scenes by name: the bundled ``nhphys/scenes`` first, then
    ``$NHPHYS_SCENES`` (a user's folder). The current folder is never searched: a bare name
    runs the bundled scene whatever folder it is typed in; a user's file is given by its path."""
    import nhphys.scenes

    dirs = [os.path.dirname(nhphys.scenes.__file__)]
    if os.environ.get("NHPHYS_SCENES"):
        dirs.append(os.environ["NHPHYS_SCENES"])
    seen, out = set(), []
    for d in dirs:
        real = os.path.realpath(d)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            out.append(real)
    return out


def describe_scene_file(path):
    """``(first docstring line, defines a scene)`` of a scene file, read without running it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    defines = any(isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == "scene"
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
        for node in tree.body)
    return (doc[0] if doc else ""), defines


def bundled_scenes():
    """``{name: path}`` of the scene files in :func:`scene_dirs` that define ``scene``."""
    found = {}
    for d in scene_dirs():
        for name in sorted(os.listdir(d)):
            if name.endswith(".py") and not name.startswith("_"):
                path = os.path.join(d, name)
                try:
                    _, defines = describe_scene_file(path)
                except (SyntaxError, OSError, UnicodeDecodeError):
                    continue
                if defines:
                    found.setdefault(name[:-3], path)
    return found


def resolve_scene(arg):
    """A scene file path from a path or a bundled scene's name."""
    if os.path.isfile(arg):
        return arg
    if not arg.endswith(".py") and os.sep not in arg:
        scenes = bundled_scenes()
        if arg in scenes:
            return scenes[arg]
        raise UsageError(f"no scene file or bundled scene {arg!r}; bundled: "
                         f"{', '.join(scenes) or 'none found'} (see `nhphys list`)")
    raise UsageError(f"no scene file {arg!r}")


def load_scene(arg):
    from nhphys.scene_file import load_scene_file

    path = resolve_scene(arg)
    try:
        scene, defaults = load_scene_file(path)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    options = dict(FALLBACK_DEFAULTS)
    unknown = set(defaults) - set(options)
    if unknown:
        raise UsageError(f"unknown keys {sorted(unknown)} in `defaults` of {path}; expected some "
                         f"of {sorted(options)}")
    options.update(defaults)
    return scene, options, path


# -- argument helpers --------------------------------------------------------------------------

def _size(text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        if w < 16 or h < 16:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT (e.g. 640x480), got {text!r}") \
            from None
    return (w, h)


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
        return value
    return parse


def _output(path, flag, suffixes):
    """Check an output path before any work: suffix, existing folder, writable."""
    from nhphys.trajectory import check_writable

    if not path.lower().endswith(suffixes):
        raise UsageError(f"{flag} {path!r}: expected a file ending with {' or '.join(suffixes)}")
    try:
        check_writable(path, flag)
    except ValueError as exc:
        raise UsageError(f"{flag} {path!r} cannot be written: {exc}") from None
    return path


def _integrator(name):
    from nhphys.integrators import integrator_from_name

    if name is None:
        return None
    try:
        return integrator_from_name(name)
    except ValueError as exc:
        raise UsageError(f"--integrator: {exc}") from None


def _print_written(paths):
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))


# -- commands ----------------------------------------------------------------------------------

def cmd_run(args):
    import numpy as np

    from nhphys import NewtonError

    scene, options, path = load_scene(args.scene)
    t_final = args.t_final or options["t_final"]
    dt = args.dt or options["dt"]
    integrator = _integrator(args.integrator) if args.integrator else \
        _integrator(options["integrator"]) if isinstance(options["integrator"], str) \
        else options["integrator"]
    fps = args.fps or options["fps"]
    speed = args.speed or options["speed"]
    size = args.size or tuple(options["size"])
    save_every = args.save_every or options["save_every"]
    from nhphys.simulate import number_of_steps

    try:
        number_of_steps(float(t_final), float(dt))
    except ValueError as exc:
        raise UsageError(f"--t-final / --dt: {exc}") from None
    out, gif, mp4 = args.out, args.gif, args.mp4
    if out is None and gif is None and mp4 is None and not args.no_render:
        os.makedirs("out", exist_ok=True)
        out = os.path.join("out", scene.name + ".npz")
        gif = os.path.join("out", scene.name + ".gif")
    if out is not None:
        _output(out, "--out", (".npz",))
    if gif is not None:
        _output(gif, "--gif", (".gif",))
    if mp4 is not None:
        _output(mp4, "--mp4", (".mp4",))

    print(f"{scene.name}: {len(scene.bodies)} body(ies), t_final = {t_final:g} s, "
          f"dt = {dt:g} s ({os.path.relpath(path)})")
    start = time.perf_counter()
    written = []
    status = 0
    try:
        traj = scene.simulate(float(t_final), float(dt), integrator=integrator,
                              backend=args.backend, save_every=int(save_every),
                              progress=not args.no_progress, out=out)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    except NewtonError as exc:
        print(f"nhphys: simulation failed: {exc}", file=sys.stderr)
        if out is not None and exc.trajectory is not None:
            _print_written([out])
        return EXIT_FAILURE
    if out is not None:
        # how to show it again: `nhphys render` reads these when not told otherwise
        traj.meta["playback"] = {"fps": float(fps), "speed": float(speed), "size": list(size)}
        traj.save(out)
        written.append(out)
    if traj.meta.get("interrupted"):
        status = EXIT_INTERRUPTED
        print(f"interrupted at t = {traj.t[-1]:.6g} s; keeping {len(traj)} frames")
    energy0 = np.where(traj.energy[0] != 0, np.abs(traj.energy[0]), 1.0)
    print(f"simulated {len(traj)} frames in {time.perf_counter() - start:.2f} s: "
          f"max |dE/E| {np.max(np.abs(traj.energy - traj.energy[0]) / energy0):.2e}, "
          f"max constraint residual {np.max(traj.constraint_residual):.2e}")
    from nhphys import viz

    for target in (gif, mp4):
        if target is None:
            continue
        info = viz.render(scene, traj, target, fps=fps, speed=speed, size=size)
        print(f"rendered {info['frames']} frames in {info['seconds']:.1f} s")
        written.append(target)
    _print_written(written)
    return status


def cmd_view(args):
    from nhphys import viz

    scene, options, _ = load_scene(args.scene)
    dt = args.dt or options["dt"]
    integrator = _integrator(args.integrator) if args.integrator else \
        _integrator(options["integrator"]) if isinstance(options["integrator"], str) \
        else options["integrator"]
    off_screen = args.off_screen or viz.headless()
    frames, record = args.frames, args.record
    if off_screen and frames is None:
        frames = 60
    if off_screen and record is None:  # with no window, the frames are only worth keeping
        os.makedirs("out", exist_ok=True)
        record = os.path.join("out", f"{scene.name}-live.gif")
    if record is not None:
        _output(record, "--record", (".gif",))
    if off_screen and args.frames is None:
        print(f"no display: stepping {frames} frames off screen (--frames N to change)")
    try:
        images = viz.show(scene, dt=float(dt), integrator=integrator, backend=args.backend,
                          fps=args.fps or options["fps"], speed=args.speed or options["speed"],
                          frames=frames, off_screen=off_screen, size=args.size or (1024, 768),
                          record=record)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    except RuntimeError as exc:  # no window could be opened
        print(f"nhphys view: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if images is not None:
        print(f"stepped and rendered {len(images)} frames "
              f"{'off screen' if off_screen else 'in a window'}")
        if record:
            _print_written([record])
    return 0


def cmd_render(args):
    from nhphys import Trajectory, viz

    if not os.path.isfile(args.trajectory) and not os.path.isdir(args.trajectory):
        raise UsageError(f"no trajectory file {args.trajectory!r}")
    try:
        traj = Trajectory.load(args.trajectory)
    except (ValueError, OSError) as exc:
        raise UsageError(f"cannot read {args.trajectory!r}: {exc}") from None
    scene = load_scene(args.scene)[0] if args.scene else None
    targets = [(p, flag, suffix) for p, flag, suffix in
               ((args.gif, "--gif", ".gif"), (args.mp4, "--mp4", ".mp4"),
                (args.png, "--png", ".png")) if p is not None]
    if not targets:
        stem = os.path.splitext(os.path.basename(args.trajectory.rstrip(os.sep)))[0]
        folder = os.path.dirname(os.path.abspath(args.trajectory))
        targets = [(os.path.join(folder, stem + ".gif"), "--gif", ".gif")]
    for p, flag, suffix in targets:
        _output(p, flag, (suffix,))
    playback = traj.meta.get("playback", {})
    written = []
    for p, _, _ in targets:
        try:
            info = viz.render(scene, traj, p, fps=args.fps or playback.get("fps", 25.0),
                              speed=args.speed or playback.get("speed", 1.0),
                              size=args.size or tuple(playback.get("size", (640, 480))),
                              time=args.time)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        print(f"rendered {info['frames']} frame(s) in {info['seconds']:.1f} s")
        written.append(p)
    _print_written(written)
    return 0


def cmd_list(args):
    dirs = scene_dirs()
    if not dirs:
        print("no scenes folder found")
        return 0
    for d in dirs:
        print(f"{d}:")
        for name in sorted(os.listdir(d)):
            if not name.endswith(".py") or name.startswith("_"):
                continue
            try:
                line, defines = describe_scene_file(os.path.join(d, name))
            except (SyntaxError, OSError, UnicodeDecodeError):
                continue
            tag = "" if defines else f"  (script: python -m nhphys.scenes.{name[:-3]})"
            print(f"  {name[:-3]:<20s} {line}{tag}")
    return 0


def cmd_bench(args):
    """Time stepping and off-screen rendering of a scene (ms per frame)."""
    import tempfile

    from nhphys import viz

    scene, options, _ = load_scene(args.scene)
    dt = options["dt"]
    fps = 25.0
    frames = args.frames
    t_final = dt * max(1, round(frames / fps / dt))
    start = time.perf_counter()
    traj = scene.simulate(t_final, dt, progress=False)
    sim = time.perf_counter() - start
    steps = round(t_final / dt) * len(scene.bodies)
    with tempfile.TemporaryDirectory() as tmp:
        info = viz.render(scene, traj, os.path.join(tmp, "bench.gif"), fps=fps,
                          size=args.size or (640, 480), max_frames=frames)
    print(f"{scene.name}: {len(scene.bodies)} body(ies)")
    print(f"  stepping: {steps} body-steps in {sim:.3f} s ({steps / sim:,.0f} body-steps/s)")
    print(f"  rendering: {info['frames']} frames at {info['size'][0]}x{info['size'][1]} in "
          f"{info['seconds']:.2f} s ({1000 * info['seconds'] / info['frames']:.1f} ms/frame)")
    return 0


# -- parser ------------------------------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(
        prog="nhphys", description="Run, view and render nonholonomic mechanics scenes.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def common(p):
        p.add_argument("--dt", type=_positive(float), help="step size [s]")
        p.add_argument("--integrator", help="exp, cayley, newmark, dla or reference")
        p.add_argument("--backend", default="auto", choices=("auto", "cython", "python"))
        p.add_argument("--fps", type=_positive(float), help="frames per second")
        p.add_argument("--speed", type=_positive(float),
                       help="simulated seconds per second of animation")
        p.add_argument("--size", type=_size, help="WIDTHxHEIGHT in pixels")

    p = sub.add_parser("run", help="simulate a scene; save the run and render a GIF/MP4")
    p.add_argument("scene", help="scene file (.py) or bundled scene name")
    p.add_argument("--t-final", type=_positive(float), help="end time [s]")
    p.add_argument("--save-every", type=_positive(int), help="keep every N-th step")
    p.add_argument("--out", help="trajectory file (.npz), streamed while running")
    p.add_argument("--gif", help="animated GIF to render")
    p.add_argument("--mp4", help="MP4 video to render")
    p.add_argument("--no-render", action="store_true",
                   help="with no output option, write nothing but print the summary")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    common(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("view", help="open a window stepping the scene live")
    p.add_argument("scene", help="scene file (.py) or bundled scene name")
    p.add_argument("--frames", type=_positive(int), help="stop after N frames")
    p.add_argument("--off-screen", action="store_true", help="render without a window")
    p.add_argument("--record", help="off screen: save the frames as a GIF")
    common(p)
    p.set_defaults(func=cmd_view)

    p = sub.add_parser("render", help="render a saved run (.npz) to GIF, MP4 or PNG")
    p.add_argument("trajectory", help="a .npz written by `nhphys run` or Trajectory.save")
    p.add_argument("--scene", help="scene file, if the run has no stored scene")
    p.add_argument("--gif")
    p.add_argument("--mp4")
    p.add_argument("--png", help="one frame (see --time)")
    p.add_argument("--time", type=float, help="time of the PNG frame (default: the last)")
    p.add_argument("--fps", type=_positive(float))
    p.add_argument("--speed", type=_positive(float))
    p.add_argument("--size", type=_size)
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("list", help="the bundled scenes, one line each")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("bench", help="time stepping and rendering of a scene")
    p.add_argument("scene", nargs="?", default="suslov_top")
    p.add_argument("--frames", type=_positive(int), default=50)
    p.add_argument("--size", type=_size)
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv=None):
    """Entry point of the ``nhphys`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 on bad arguments
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"nhphys {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("nhphys: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
