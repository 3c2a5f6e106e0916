"""The ``nhphys`` command: run, view and render scenes, list the bundled ones, time rendering.

::

    nhphys run SCENE [--t-final T] [--dt H] [--integrator NAME] [--backend B] [--save-every N]
                     [--out RUN.npz] [--resume] [--gif OUT.gif] [--mp4 OUT.mp4] [--fps F]
                     [--size WxH]
    nhphys view SCENE [--dt H] [--speed S] [--frames N] [--record OUT.gif] [--off-screen]
    nhphys render RUN.npz [--gif OUT.gif | --mp4 OUT.mp4 | --png OUT.png] [--scene SCENE]
    nhphys scene-file (RUN.npz | SCENE) [-o OUT.toml]
    nhphys list
    nhphys bench [SCENE] [--frames N]

``SCENE`` is a declarative scene file (``.toml``, read as data: no code in it runs; see
``docs/scene-files.md``), a Python file (``.py``) that sets ``scene = nhphys.Scene(...)`` (and
optionally a dict ``defaults`` with ``t_final``, ``dt``, ``integrator``, ``fps``, ``speed``,
``save_every``, ``size``), or the name of a bundled scene (``nhphys list``). ``scene-file``
writes the scene file of a saved run (the scene and run settings that repeat it) or of a scene.
``run`` with no output option writes
``out/NAME.npz`` and ``out/NAME.gif``. Every file is written under a temporary name and renamed
when complete, and only a complete run replaces ``--out``: a run that fails is kept in
``NAME.failed.npz`` beside it (and an interrupted one in ``NAME.interrupted.npz``), and the
command says where.

Every argument, scene default and output path is checked before anything is computed or
written: numbers must be finite, ``--fps`` in [``FPS_RANGE``], sizes in [``SIZE_RANGE``] pixels,
an animation at most ``MAX_ANIMATION_FRAMES`` frames. Exit status: 0 on success, 1 when the
simulation fails, 2 for usage errors (one line on stderr naming the problem; nothing is
written), 130 when interrupted (what was computed is written first). ``run --resume`` continues
the killed or interrupted run of its ``--out`` (its ``.part`` folder, ``NAME.interrupted.npz``
or ``NAME.killed.npz``) to the same file, bit for bit, as if it had never stopped.
"""

import argparse
import ast
import contextlib
import math
import os
import sys
import time
from types import SimpleNamespace

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
FALLBACK_DEFAULTS = {"t_final": 10.0, "dt": 0.01, "integrator": None, "fps": 25.0,
                     "speed": 1.0, "save_every": 1, "size": (640, 480)}
FPS_RANGE = (0.1, 240.0)  # frames per second of an animation
SIZE_RANGE = (16, 8192)  # pixels, each side
MAX_ANIMATION_FRAMES = 100_000  # an hour of animation at 25 fps: more is a mistyped --speed


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


def describe_toml_scene(path):
    """The first line of a ``.toml`` scene file's ``description``, read without building it;
    ``None`` when the file is not TOML."""
    from nhphys.scenefile import read_description

    try:
        return read_description(path)
    except (ValueError, OSError):
        return None


def _scene_entries(folder):
    """``(name, path, first line, runnable)`` of the scene files of ``folder``, by name: the
    ``.py`` files (runnable when they define ``scene``; the others are scripts) and the
    ``.toml`` files that are TOML."""
    entries = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith("_") or not os.path.isfile(path):
            continue
        if name.endswith(".py"):
            try:
                line, defines = describe_scene_file(path)
            except (SyntaxError, OSError, UnicodeDecodeError, ValueError):
                continue
            entries.append((name[:-3], path, line, defines))
        elif name.endswith(".toml"):
            line = describe_toml_scene(path)
            if line is not None:
                entries.append((name[:-5], path, line, True))
    return entries


def bundled_scenes():
    """``{name: path}`` of the scenes in :func:`scene_dirs`: the ``.py`` files that define
    ``scene`` and the ``.toml`` scene files (a name found twice: the first folder's, and in one
    folder the ``.py``)."""
    found = {}
    for d in scene_dirs():
        for name, path, _, runnable in _scene_entries(d):
            if runnable:
                found.setdefault(name, path)
    return found


def resolve_scene(arg):
    """A scene file path from a path or a bundled scene's name."""
    if os.path.isfile(arg):
        return arg
    if not arg.endswith((".py", ".toml")) and os.sep not in arg:
        scenes = bundled_scenes()
        if arg in scenes:
            return scenes[arg]
        raise UsageError(f"no scene file or bundled scene {arg!r}; bundled: "
                         f"{', '.join(scenes) or 'none found'} (see `nhphys list`)")
    raise UsageError(f"no scene file {arg!r}")


def load_scene(arg):
    """``(scene, options, path)``: the scene of a scene file or bundled name, and its
    ``defaults`` over ``FALLBACK_DEFAULTS``, each checked."""
    from nhphys.scene_file import load_scene_file

    path = resolve_scene(arg)
    if not path.endswith((".py", ".toml")):
        raise UsageError(f"{arg!r} is not a scene file: expected a Python file ending with .py "
                         f"that sets `scene = nhphys.Scene(...)`, or a declarative scene file "
                         f"ending with .toml")
    try:
        scene, defaults = load_scene_file(path)
    except SyntaxError as exc:
        raise UsageError(f"{path} is not a valid scene file: line {exc.lineno}: {exc.msg}") \
            from None
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    options = dict(FALLBACK_DEFAULTS)
    unknown = set(defaults) - set(options)
    if unknown:
        raise UsageError(f"unknown keys {sorted(unknown)} in `defaults` of {path}; expected some "
                         f"of {sorted(options)}")
    for key, value in defaults.items():
        check = DEFAULT_CHECKS.get(key)
        if check is not None:
            try:
                value = check(value)
            except (ValueError, TypeError) as exc:
                raise UsageError(f"`defaults[{key!r}]` in {path}: {exc}") from None
        options[key] = value
    return scene, options, path


# -- argument helpers --------------------------------------------------------------------------
# Each check takes a value (from the command line or a scene's `defaults`) and returns it, or
# raises ValueError saying what was expected; argparse types wrap them for text.

def _number(value, low=None, high=None, integer=False):
    """A finite number (an integer with ``integer``) in [``low``, ``high``]; ``low`` is
    exclusive when it is 0 (``> 0``)."""
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (integer and not isinstance(value, int)):
        raise ValueError(f"expected {kind}, got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    if low == 0 and not value > 0:
        raise ValueError(f"expected {kind} > 0, got {_show(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f">= {low:g}" if high is None else f"in [{low:g}, {high:g}]"
        raise ValueError(f"expected {kind} {bounds}, got {_show(value)}")
    return value


def _show(value, width=60):
    """``repr(value)`` cut to ``width`` characters (an argument may be anything)."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[:width - 3] + "..."


def _positive_value(value):
    return float(_number(value, 0))


def _count_value(value):
    return _number(value, 1, integer=True)


def _fps_value(value):
    return float(_number(value, *FPS_RANGE))


def _size_value(value):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"expected (WIDTH, HEIGHT), got {value!r}")
    return tuple(_number(v, *SIZE_RANGE, integer=True) for v in value)


def _integrator_value(value):
    from nhphys.integrators import integrator_from_name

    integrator_from_name(value)  # a name or an integrator object
    return value


DEFAULT_CHECKS = {"t_final": _positive_value, "dt": _positive_value, "fps": _fps_value,
                  "speed": _positive_value, "save_every": _count_value, "size": _size_value,
                  "integrator": _integrator_value}


def _parsed(kind, check):
    """An argparse type: text -> ``kind`` -> ``check``."""
    def parse(text):
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") from None
        try:
            return check(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def _size(text):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT (e.g. 640x480), got {text!r}") \
            from None
    try:
        return _size_value((w, h))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: each side {exc}") from None


def _positive(kind):
    """An argparse type for a finite number > 0 (or an integer >= 1)."""
    return _parsed(kind, _count_value if kind is int else _positive_value)


def _finite(text):
    return _parsed(float, _number)(text)


def _animation_frames(duration, fps, speed):
    """Frames of an animation of ``duration`` simulated seconds, or UsageError if too many."""
    frames = math.floor(duration / speed * fps * (1 + 1e-12)) + 1 if duration > 0 else 1
    if frames > MAX_ANIMATION_FRAMES:
        raise UsageError(
            f"an animation of {duration:g} s at --fps {fps:g} and --speed {speed:g} would have "
            f"{frames:.3g} frames, more than {MAX_ANIMATION_FRAMES}: raise --speed or lower --fps")
    return frames


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


def _default_folder(name="out"):
    """``name`` in the current folder for the default outputs: checked (it exists and is
    writable, or it can be made) but not made. Returns whether it must be made."""
    from nhphys.trajectory import check_writable

    if os.path.isdir(name):
        probe = os.path.join(name, "probe")
    elif os.path.exists(name):
        raise UsageError(f"cannot write the default outputs into {os.path.abspath(name)}: it is "
                         f"a file; give --out / --gif / --mp4")
    else:
        probe = name
    try:
        check_writable(probe, name)
    except ValueError as exc:
        raise UsageError(f"cannot write the default outputs into {os.path.abspath(name)}/ "
                         f"({str(exc).rsplit(': ', 1)[-1].rstrip('.')}); give --out / --gif / "
                         f"--mp4, or run from a writable folder") from None
    return not os.path.isdir(name)


@contextlib.contextmanager
def _made_folder(name, make):
    """Make the folder ``name`` if ``make``; remove it again (if still empty) when the block
    ends with a usage error, so a refused command leaves nothing behind."""
    if make:
        try:
            os.makedirs(name)
        except OSError as exc:
            raise UsageError(f"cannot make {os.path.abspath(name)}/: {exc.strerror}") from None
    try:
        yield
    except UsageError:
        if make:
            with contextlib.suppress(OSError):
                os.rmdir(name)  # only if empty
        raise


def _integrator(name):
    from nhphys.integrators import integrator_from_name

    if name is None:
        return None
    try:
        return integrator_from_name(name)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--integrator: {exc}") from None


def _print_written(paths):
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))


# -- commands ----------------------------------------------------------------------------------

def plan_run(args):
    """Everything ``run`` will do, from its arguments and the scene's defaults, each checked;
    nothing is computed or written here.

    Returns
    -------
    types.SimpleNamespace
        ``scene``, ``path``, ``t_final``, ``dt``, ``n_steps``, ``integrator``, ``fps``,
        ``speed``, ``size``, ``save_every``, ``out``, ``gif``, ``mp4``, ``frames`` (of the
        animation) and ``make_folder`` (the default ``out/`` folder, to be made).

    Raises
    ------
    UsageError
    """
    from nhphys.simulate import number_of_steps

    scene, options, path = load_scene(args.scene)
    plan = SimpleNamespace(scene=scene, path=path, make_folder=None)
    plan.t_final = args.t_final or options["t_final"]
    plan.dt = args.dt or options["dt"]
    plan.integrator = _integrator(args.integrator) if args.integrator else \
        _integrator(options["integrator"]) if isinstance(options["integrator"], str) \
        else options["integrator"]
    plan.fps = args.fps or options["fps"]
    plan.speed = args.speed or options["speed"]
    plan.size = args.size or tuple(options["size"])
    plan.save_every = args.save_every or options["save_every"]
    try:
        plan.n_steps = number_of_steps(float(plan.t_final), float(plan.dt))
    except ValueError as exc:
        raise UsageError(f"--t-final / --dt: {exc}") from None
    except OverflowError:  # t_final / dt beyond the floats
        raise UsageError(f"--t-final / --dt: t_final = {plan.t_final:g} is too many steps "
                         f"dt = {plan.dt:g}") from None
    if plan.save_every > plan.n_steps:
        raise UsageError(f"--save-every {plan.save_every} keeps no step of a run of "
                         f"{plan.n_steps} steps: give at most {plan.n_steps}")
    plan.out, plan.gif, plan.mp4 = args.out, args.gif, args.mp4
    if plan.out is None and plan.gif is None and plan.mp4 is None and not args.no_render:
        plan.make_folder = ("out", _default_folder("out"))
        plan.out = os.path.join("out", scene.name + ".npz")
        plan.gif = os.path.join("out", scene.name + ".gif")
    elif plan.out is not None:
        _output(plan.out, "--out", (".npz",))
    for target, flag, suffix in ((plan.gif, "--gif", ".gif"), (plan.mp4, "--mp4", ".mp4")):
        if target is not None and plan.make_folder is None:
            _output(target, flag, (suffix,))
    plan.frames = None
    if plan.gif is not None or plan.mp4 is not None:
        plan.frames = _animation_frames(float(plan.t_final), plan.fps, plan.speed)
    return plan


def cmd_run(args):
    import numpy as np

    from nhphys import NewtonError

    plan = plan_run(args)
    scene, out = plan.scene, plan.out
    print(f"{scene.name}: {len(scene.body_names)} body(ies), t_final = {plan.t_final:g} s, "
          f"dt = {plan.dt:g} s ({os.path.relpath(plan.path)})")
    folder, make = plan.make_folder or (None, False)
    start = time.perf_counter()
    with _made_folder(folder, make):
        try:
            traj = scene.simulate(float(plan.t_final), float(plan.dt), integrator=plan.integrator,
                                  backend=args.backend, save_every=int(plan.save_every),
                                  progress=not args.no_progress, out=out,
                                  resume=bool(getattr(args, "resume", False)))
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None
        except NewtonError as exc:
            print(f"nhphys: simulation failed: {exc}", file=sys.stderr)
            kept = exc.trajectory
            if out is not None and kept is not None and kept.file is not None:
                _keep_playback(kept, plan)
                print(f"kept the {len(kept)} frames before the failure in "
                      f"{os.path.abspath(kept.file)}"
                      + (f"; {os.path.abspath(out)} is unchanged"
                         if os.path.abspath(kept.file) != os.path.abspath(out) else ""))
            return EXIT_FAILURE
    written = []
    if out is not None:
        # how to show it again: `nhphys render` reads these when not told otherwise
        _keep_playback(traj, plan)
        written.append(traj.file)
    energy0 = np.where(traj.energy[0] != 0, np.abs(traj.energy[0]), 1.0)
    # with force elements or a moving ground, energy - work is the conserved quantity
    balance = traj.energy - traj.work if "work" in traj.fields else traj.energy
    what = "|d(E - W)/E|" if "work" in traj.fields and np.any(traj.work) else "|dE/E|"
    print(f"simulated {len(traj)} frames in {time.perf_counter() - start:.2f} s: "
          f"max {what} {np.max(np.abs(balance - balance[0]) / energy0):.2e}, "
          f"max constraint residual {np.max(traj.constraint_residual):.2e}")
    if traj.meta.get("interrupted"):
        # an interrupted run is not rendered: its frames are kept, and `render` shows them
        kept = f"; kept {len(traj)} frames in {os.path.abspath(traj.file)}" \
            if out is not None else ""
        print(f"interrupted at t = {traj.t[-1]:.6g} s{kept}")
        return EXIT_INTERRUPTED
    from nhphys import viz

    for target in (plan.gif, plan.mp4):
        if target is None:
            continue
        info = viz.render(scene, traj, target, fps=plan.fps, speed=plan.speed, size=plan.size)
        print(f"rendered {info['frames']} frames in {info['seconds']:.1f} s")
        written.append(target)
    _print_written(written)
    return 0


def _keep_playback(traj, plan):
    """Store how to show the run (``nhphys render`` reads it) in its file, where the run's
    writer put it (``traj.file``)."""
    traj.meta["playback"] = {"fps": float(plan.fps), "speed": float(plan.speed),
                             "size": list(plan.size)}
    traj.save(traj.file or plan.out)


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
    make = False
    if off_screen and record is None:  # with no window, the frames are only worth keeping
        make = _default_folder("out")
        record = os.path.join("out", f"{scene.name}-live.gif")
    elif record is not None:
        _output(record, "--record", (".gif",))
    if off_screen and args.frames is None:
        print(f"no display: stepping {frames} frames off screen (--frames N to change)")
    with _made_folder("out", make):
        try:
            images = viz.show(scene, dt=float(dt), integrator=integrator, backend=args.backend,
                              fps=args.fps or options["fps"],
                              speed=args.speed or options["speed"], frames=frames,
                              off_screen=off_screen, size=args.size or (1024, 768),
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


def plan_render(args):
    """What ``render`` will draw, checked, before anything is rendered or written.

    Returns
    -------
    types.SimpleNamespace
        ``trajectory``, ``scene`` (or None), ``targets`` (list of paths), ``fps``, ``speed``,
        ``size``, ``time``, ``frames`` (of an animation).
    """
    from nhphys import Trajectory

    source = args.trajectory
    if not os.path.isfile(source) and not os.path.isdir(source):
        raise UsageError(f"no trajectory file {source!r}")
    try:
        traj = Trajectory.load(source)
    except ValueError as exc:
        raise UsageError(f"cannot read the run: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {source!r}: {exc.strerror or exc}") from None
    if len(traj) == 0:
        raise UsageError(f"the run in {source!r} has no frames")
    if "R" not in traj.fields and "pose" not in traj.fields:
        raise UsageError(f"the run in {source!r} has no poses to draw (no field `R` or `pose`)")
    scene = load_scene(args.scene)[0] if args.scene else None
    if scene is not None and len(scene.body_names) != len(traj.body_names):
        raise UsageError(f"--scene has {len(scene.body_names)} bodies; the run has "
                         f"{len(traj.body_names)} ({traj.body_names})")
    targets = [(p, flag, suffix) for p, flag, suffix in
               ((args.gif, "--gif", ".gif"), (args.mp4, "--mp4", ".mp4"),
                (args.png, "--png", ".png")) if p is not None]
    if not targets:
        stem = os.path.splitext(os.path.basename(source.rstrip(os.sep)))[0]
        folder = os.path.dirname(os.path.abspath(source))
        targets = [(os.path.join(folder, stem + ".gif"), "--gif", ".gif")]
    for p, flag, suffix in targets:
        _output(p, flag, (suffix,))
    playback = traj.meta.get("playback", {})

    def setting(given, key, check, flag, fallback):
        if given is not None:
            return given
        value = playback.get(key, fallback)
        try:
            return check(value)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"the run's stored playback {key} is unusable ({exc}); give "
                             f"{flag}") from None

    plan = SimpleNamespace(trajectory=traj, scene=scene, targets=[p for p, _, _ in targets],
                           time=args.time)
    plan.fps = setting(args.fps, "fps", _fps_value, "--fps", 25.0)
    plan.speed = setting(args.speed, "speed", _positive_value, "--speed", 1.0)
    plan.size = setting(args.size, "size", _size_value, "--size", (640, 480))
    plan.frames = None
    if any(not p.lower().endswith(".png") for p in plan.targets):
        plan.frames = _animation_frames(float(traj.t[-1] - traj.t[0]), plan.fps, plan.speed)
    return plan


def cmd_render(args):
    from nhphys import viz

    plan = plan_render(args)
    written = []
    for p in plan.targets:
        try:
            info = viz.render(plan.scene, plan.trajectory, p, fps=plan.fps, speed=plan.speed,
                              size=plan.size, time=plan.time)
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
        for name, path, line, runnable in _scene_entries(d):
            if path.endswith(".toml"):
                tag = "  (scene file, .toml)"
            else:
                tag = "" if runnable else f"  (script: python -m nhphys.scenes.{name})"
            print(f"  {name:<20s} {line}{tag}")
    return 0


def cmd_scene_file(args):
    """Write the scene file (TOML) of a saved run, or of a scene file or bundled scene."""
    from nhphys.scenefile import run_scene_toml

    source = args.source
    if args.out is not None:
        _output(args.out, "--out", (".toml",))
    if source.endswith((".npz", ".part")) or os.path.isdir(source):
        if not os.path.exists(source):
            raise UsageError(f"no run file {source!r}")
        from nhphys import Trajectory

        try:
            traj = Trajectory.load(source)
        except ValueError as exc:
            raise UsageError(f"cannot read the run: {exc}") from None
        except OSError as exc:
            raise UsageError(f"cannot read {source!r}: {exc.strerror or exc}") from None
        try:
            text = run_scene_toml(traj)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    else:
        scene, options, path = load_scene(source)
        if not scene.description and path.endswith(".py"):
            scene.description = describe_scene_file(path)[0]
        run = {k: v for k, v in options.items()
               if v is not None and (k in scene.defaults or v != FALLBACK_DEFAULTS[k])}
        try:
            text = scene.to_toml(run=run)
        except ValueError as exc:
            raise UsageError(f"{path} cannot be written as a scene file: {exc}") from None
    if args.out is None:
        sys.stdout.write(text)
        return 0
    from nhphys.trajectory import atomic_path

    with atomic_path(args.out) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    _print_written([args.out])
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
    print(f"{scene.name}: {len(scene.body_names)} body(ies)")
    print(f"  stepping: {steps} body-steps in {sim:.3f} s ({steps / sim:,.0f} body-steps/s)")
    print(f"  rendering: {info['frames']} frames at {info['size'][0]}x{info['size'][1]} in "
          f"{info['seconds']:.2f} s ({1000 * info['seconds'] / info['frames']:.1f} ms/frame)")
    return 0


# -- parser ------------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (with where to find help) instead of the usage text."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {' '.join(message.split())} "
                              f"(see `{self.prog} --help`)\n")


def build_parser():
    parser = _Parser(
        prog="nhphys", description="Run, view and render nonholonomic mechanics scenes.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def common(p):
        p.add_argument("--dt", type=_positive(float), help="step size [s]")
        p.add_argument("--integrator", help="exp, cayley, newmark, dla or reference; exp4, "
                       "exp6, exp8, cayley4, cayley6, cayley8: the retraction composed to "
                       "order 4, 6 or 8; dop853 (adaptive, projected), dop853-energy (the "
                       "same, holding the energy)")
        p.add_argument("--backend", default="auto", choices=("auto", "cython", "python"))
        p.add_argument("--fps", type=_parsed(float, _fps_value), help="frames per second")
        p.add_argument("--speed", type=_positive(float),
                       help="simulated seconds per second of animation")
        p.add_argument("--size", type=_size, help="WIDTHxHEIGHT in pixels")

    p = sub.add_parser("run", help="simulate a scene; save the run and render a GIF/MP4")
    p.add_argument("scene", help="scene file (.toml or .py) or bundled scene name")
    p.add_argument("--t-final", type=_positive(float), help="end time [s]")
    p.add_argument("--save-every", type=_positive(int), help="keep every N-th step")
    p.add_argument("--out", help="trajectory file (.npz), streamed while running")
    p.add_argument("--resume", action="store_true",
                   help="continue the killed or interrupted run of --out (same settings)")
    p.add_argument("--gif", help="animated GIF to render")
    p.add_argument("--mp4", help="MP4 video to render")
    p.add_argument("--no-render", action="store_true",
                   help="with no output option, write nothing but print the summary")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    common(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("view", help="open a window stepping the scene live")
    p.add_argument("scene", help="scene file (.toml or .py) or bundled scene name")
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
    p.add_argument("--time", type=_finite, help="time of the PNG frame (default: the last)")
    p.add_argument("--fps", type=_parsed(float, _fps_value))
    p.add_argument("--speed", type=_positive(float))
    p.add_argument("--size", type=_size)
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("scene-file", help="write the scene file (.toml) that repeats a saved "
                                          "run, or of a scene")
    p.add_argument("source", help="a run (.npz) written by `nhphys run` or Scene.simulate, or a "
                                  "scene file or bundled scene name")
    p.add_argument("-o", "--out", help="the .toml file to write (default: print it)")
    p.set_defaults(func=cmd_scene_file)

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
        message = " ".join(str(exc).split())  # one line, whatever the message held
        print(f"nhphys {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("nhphys: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of the output left (`nhphys list | head`): nothing more to say; stdout
        # goes to devnull so that the interpreter's own flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
