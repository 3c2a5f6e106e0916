"""Fuzzing of the inputs a user (or an attacker) controls: run files and the command line.

Each target asserts only documented outcomes -- a loaded run or a ``ValueError`` from
``Trajectory.load``; a checked plan, a ``UsageError`` or argparse's exit status 2 from the CLI's
``run`` / ``render`` -- that nothing is written while checking, and that no example hangs (a hard
limit of ``HANG_SECONDS`` per example, on top of hypothesis' deadline).

The number of examples per target is ``NHPHYS_FUZZ_EXAMPLES`` (default 100, the CI size; the
figures of a run at 10^4 per target are in docs/reliability.md). With ``NHPHYS_FUZZ_REPORT`` set
to a file, each target appends one JSON line counting its outcomes.
"""

import contextlib
import io
import json
import math
import os
import signal
import time
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nhphys
from nhphys import Trajectory, cli
from nhphys.trajectory import META_KEY, STATIC_PREFIX

EXAMPLES = int(os.environ.get("NHPHYS_FUZZ_EXAMPLES", "100"))
HANG_SECONDS = 20.0  # no example may take longer: a hang fails the test instead of the suite
FUZZ = settings(max_examples=EXAMPLES, deadline=10_000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
TINY_SCENE = ("import nhphys\nfrom nhphys import Scene, SuslovContact\n"
              "from nhphys.surfaces import Ellipsoid\nscene = Scene(name='tiny')\n"
              "scene.add_body(nhphys.RigidBody(1.0, [1, 2, 3], Ellipsoid([0.3, 0.2, 0.1])),\n"
              "               SuslovContact([0, 0, 1]), omega=[1.0, 0.0, 0.0])\n"
              "defaults = {'t_final': 1.0, 'dt': 0.01}\n")


BASES = {}  # the bytes of the valid run files (kept out of the examples' printed arguments)


class Hang(Exception):
    """An example ran past HANG_SECONDS."""


@contextlib.contextmanager
def hang_guard(seconds=HANG_SECONDS):
    def alarm(signum, frame):
        raise Hang(f"an example took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Outcomes:
    """Counts of what each example of a target gave, reported when the target ends."""

    def __init__(self, target):
        self.target, self.counts = target, Counter()
        self.first = self.last = None
        self.slowest = 0.0

    @contextlib.contextmanager
    def example(self):
        start = time.perf_counter()
        self.first = start if self.first is None else self.first
        with hang_guard():
            yield
        self.last = time.perf_counter()
        self.slowest = max(self.slowest, self.last - start)

    def report(self):
        path = os.environ.get("NHPHYS_FUZZ_REPORT")
        if path:
            with open(path, "a") as f:
                f.write(json.dumps({"target": self.target, "examples": sum(self.counts.values()),
                                    "outcomes": dict(self.counts),
                                    "seconds": round((self.last or 0) - (self.first or 0), 1),
                                    "slowest_example_s": round(self.slowest, 3)}) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Valid run files to mutate (a scene run with its display, a single system's run, the
    latter compressed too), a tiny scene file, and an empty folder to work in."""
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "tiny.py").write_text(TINY_SCENE)
    scene = cli.load_scene(str(folder / "tiny.py"))[0]
    run = scene.simulate(0.05, 0.01, progress=False)
    run.meta["playback"] = {"fps": 25.0, "speed": 1.0, "size": [64, 48]}
    system = nhphys.simulate(nhphys.systems.Suslov([1, 2, 3], [0, 0, 1]), 0.05, 0.01,
                             omega=[1, 1, 0])
    paths = {"scene": run.save(folder / "scene.npz"), "system": system.save(folder / "one.npz")}
    arrays = {k: system[k] for k in system.fields}
    arrays[META_KEY] = np.array(json.dumps(system.meta))
    np.savez_compressed(folder / "packed.npz", **arrays)
    paths["packed"] = str(folder / "packed.npz")
    BASES.update({k: open(p, "rb").read() for k, p in paths.items()})
    paths["tiny"] = str(folder / "tiny.py")
    work = folder / "work"
    work.mkdir()
    paths["work"] = str(work)
    return paths


def load_checked(path):
    """Load ``path``; a ValueError is the documented refusal. A loaded run must be usable by
    its readers: poses (or a ValueError saying there are none), and its stored display."""
    try:
        traj = Trajectory.load(path)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
        return "ValueError"
    assert all(len(traj[k]) == len(traj) for k in traj.fields)
    assert np.all(np.diff(traj.t) >= 0)
    try:
        traj.body_poses()
    except ValueError:
        pass
    if "scene" in traj.meta:
        from nhphys.scene_display import SceneDisplay

        display = SceneDisplay.from_trajectory(traj)
        assert len(display.bodies) == len(traj.body_names)
    return "loaded"


# -- the file loader ---------------------------------------------------------------------------

@FUZZ
@given(data=st.binary(max_size=2048),
       start=st.sampled_from([b"", b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY\x01\x00"]))
def test_loader_on_random_bytes(files, data, start):
    outcomes = _outcomes("loader: random bytes")
    path = os.path.join(files["work"], "random.npz")
    with open(path, "wb") as f:
        f.write(start + data)
    with outcomes.example():
        outcomes.counts[load_checked(path)] += 1
    os.remove(path)


def _mutate(data, ops):
    data = bytearray(data)
    for kind, where, value in ops:
        if not data:
            break
        i = where % len(data)
        if kind == "flip":
            data[i] ^= 1 << (value % 8)
        elif kind == "set":
            data[i] = value % 256
        elif kind == "truncate":
            del data[i:]
        elif kind == "delete":
            del data[i:i + 1 + value % 64]
        elif kind == "insert":
            data[i:i] = bytes([value % 256]) * (1 + value % 16)
        elif kind == "copy":
            data[i:i] = data[(i + value) % len(data):][:64]
    return bytes(data)


MUTATIONS = st.lists(st.tuples(st.sampled_from(["flip", "set", "truncate", "delete", "insert",
                                                "copy"]),
                               st.integers(0, 2**31), st.integers(0, 2**16)),
                     min_size=1, max_size=6)


@FUZZ
@given(base=st.sampled_from(["scene", "system", "packed"]), ops=MUTATIONS,
       near_end=st.booleans())
@example(base="system", ops=[("flip", 10, 0)], near_end=False)  # a timestamp: still loads
@example(base="scene", ops=[("flip", 2_147_483_631, 2)], near_end=False)  # found: TokenError
def test_loader_on_mutated_valid_files(files, base, ops, near_end):
    """Mutations of real run files; ``near_end`` aims them at the archive's directory and the
    last members, where the structure is."""
    outcomes = _outcomes("loader: mutated run files")
    data = BASES[base]
    if near_end:
        ops = [(kind, len(data) - 1 - where % 4096, value) for kind, where, value in ops]
    path = os.path.join(files["work"], "mutated.npz")
    with open(path, "wb") as f:
        f.write(_mutate(data, ops))
    with outcomes.example():
        outcomes.counts[load_checked(path)] += 1
    os.remove(path)


KEYS = st.sampled_from(["t", "R", "position", "pose", "contact_point", "energy",
                        "constraint_residual", "omega", META_KEY,
                        STATIC_PREFIX + "bodies.0.points", STATIC_PREFIX + "bodies.0.faces",
                        STATIC_PREFIX + "bodies.0.colors", STATIC_PREFIX + "grounds.0.points",
                        STATIC_PREFIX + "grounds.0.faces"])
ARRAYS = st.one_of(
    hnp.arrays(dtype=st.one_of(hnp.floating_dtypes(), hnp.integer_dtypes(),
                               hnp.boolean_dtypes(), hnp.complex_number_dtypes(),
                               hnp.unicode_string_dtypes(max_len=4),
                               hnp.byte_string_dtypes(max_len=4)),
               shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)),
    # Python objects: numpy pickles them on saving, and the loader must refuse them
    st.just(np.array([None, 1], dtype=object)))
JSON = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


@st.composite
def scene_meta(draw):
    """A stored display, most of its entries right and some of them wrong."""
    def entry(kind, i):
        item = {"name": f"{kind}{i}", "mesh": f"{kind}.{i}", "color": "#aabbcc"}
        for key in draw(st.lists(st.sampled_from(["name", "mesh", "color", "pivot",
                                                  "opacity"]), max_size=2)):
            item[key] = draw(JSON)
        return item

    desc = {"name": "fuzz", "grounds": [entry("grounds", i)
                                        for i in range(draw(st.integers(0, 1)))],
            "bodies": [entry("bodies", i) for i in range(draw(st.integers(0, 2)))]}
    for key in draw(st.lists(st.sampled_from(["name", "grounds", "bodies", "camera"]),
                             max_size=1)):
        desc[key] = draw(JSON)
    return desc


@FUZZ
@given(arrays=st.dictionaries(KEYS, ARRAYS, max_size=8),
       meta=st.one_of(st.none(), JSON, st.fixed_dictionaries(
           {}, optional={"bodies": st.one_of(JSON, st.lists(st.sampled_from(["a", "b"]),
                                                            max_size=3)),
                         "scene": st.one_of(JSON, scene_meta()), "playback": JSON})),
       good_times=st.booleans())
@example(arrays={"t": np.zeros(3)}, meta={"note": 1}, good_times=True)  # a valid run
def test_loader_on_random_archives(files, arrays, meta, good_times):
    """Well-formed archives of random arrays and metadata: the checks of the run itself."""
    outcomes = _outcomes("loader: random archives")
    if good_times and "t" in arrays:
        arrays["t"] = np.arange(float(len(arrays["t"]) if arrays["t"].ndim else 1))
    if meta is not None:
        arrays[META_KEY] = np.array(json.dumps(meta))
    path = os.path.join(files["work"], "archive.npz")
    with open(path, "wb") as f:
        np.savez(f, **arrays)  # object arrays are pickled here: the loader must refuse them
    with outcomes.example():
        outcomes.counts[load_checked(path)] += 1
    os.remove(path)


# -- the command line --------------------------------------------------------------------------

PLAUSIBLE = st.one_of(st.floats(min_value=1e-3, max_value=1e3).map(repr),
                      st.integers(1, 100).map(str), st.sampled_from(["0.01", "0.5", "1", "20"]))
NUMBER_TEXT = st.one_of(
    PLAUSIBLE, PLAUSIBLE, PLAUSIBLE, st.floats().map(repr), st.integers(-10**6, 10**15).map(str),
    st.sampled_from(["0", "-0", "1e-9", "1e9", "1e308", "1e-400", "1e400", "nan", "-inf", "inf",
                     "0x10", "1_000", " 5 ", "", "1e3", "\u0661\u0662", "0.01", "0.3", "7",
                     "25", "640x480", "9" * 5000]),
    st.text(max_size=10))
SIZE_TEXT = st.one_of(st.builds("{}x{}".format, st.integers(-10, 10**5),
                                st.integers(-10, 10**5)), NUMBER_TEXT)
NAME = st.text(alphabet="abcxyz._-", max_size=8)
OUTPUT = st.one_of(st.sampled_from(["x.gif", "x.mp4", "x.npz", "x.png", "missing/x.gif",
                                    "x.txt", "", ".", "out", "x.GIF", "work", "x"]),
                   st.builds("{}{}".format, NAME, st.sampled_from(["", ".gif", ".mp4", ".npz",
                                                                    ".png"])))


def _options(spec):
    """argv pieces from ``{flag: strategy of a value, or None for a switch}``."""
    def piece(flag):
        value = spec[flag]
        if value is None:
            return st.just([flag])
        return st.one_of(value.map(lambda v: [flag, v]),
                         value.map(lambda v: [f"{flag}={v}"]))
    return st.lists(st.sampled_from(sorted(spec)).flatmap(piece), max_size=5).map(
        lambda pieces: [p for group in pieces for p in group])


RUN_OPTIONS = _options({
    "--t-final": NUMBER_TEXT, "--dt": NUMBER_TEXT, "--fps": NUMBER_TEXT, "--speed": NUMBER_TEXT,
    "--save-every": NUMBER_TEXT, "--size": SIZE_TEXT, "--out": OUTPUT, "--gif": OUTPUT,
    "--mp4": OUTPUT, "--no-render": None, "--no-progress": None,
    "--integrator": st.one_of(st.sampled_from(["exp", "cayley", "newmark", "dla", "reference",
                                               "rk4", "", "EXP", " exp "]), NAME),
    "--backend": st.one_of(st.sampled_from(["auto", "cython", "python"]), NAME)})
RENDER_OPTIONS = _options({
    "--fps": NUMBER_TEXT, "--speed": NUMBER_TEXT, "--size": SIZE_TEXT, "--time": NUMBER_TEXT,
    "--gif": OUTPUT, "--mp4": OUTPUT, "--png": OUTPUT,
    "--scene": st.sampled_from(["TINY", "suslov_top", "no_such", "x.py"])})
STRAY = st.one_of(st.just([]), st.just([]), st.just([]), st.lists(NAME, min_size=1, max_size=2))


def _parse(argv):
    """``(args, None)``, or ``(None, "exit 2")`` when argparse refuses (one line on stderr)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            return cli.build_parser().parse_args(argv), None
    except SystemExit as exc:
        assert exc.code == cli.EXIT_USAGE, (argv, exc.code)
        assert len(stderr.getvalue().strip().splitlines()) == 1, stderr.getvalue()
        return None, "exit 2"


def _plan(plan_fn, args, work):
    before = sorted(os.listdir(work))
    try:
        plan = plan_fn(args)
    except cli.UsageError as exc:
        assert str(exc)
        outcome = "UsageError"
    else:
        outcome = "accepted"
    assert sorted(os.listdir(work)) == before  # checking writes nothing
    return (plan if outcome == "accepted" else None), outcome


def _finite_positive(x):
    return isinstance(x, float) and math.isfinite(x) and x > 0


def _check_common(plan):
    assert isinstance(plan.fps, float) and cli.FPS_RANGE[0] <= plan.fps <= cli.FPS_RANGE[1]
    assert _finite_positive(plan.speed)
    assert len(plan.size) == 2 and all(isinstance(v, int) and cli.SIZE_RANGE[0] <= v
                                       <= cli.SIZE_RANGE[1] for v in plan.size)
    assert plan.frames is None or 1 <= plan.frames <= cli.MAX_ANIMATION_FRAMES


@contextlib.contextmanager
def working_in(folder):
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


@FUZZ
@given(scene=st.sampled_from(["TINY", "TINY", "TINY", "suslov_top", "rattleback", "no_such",
                              "x.py", "/etc/passwd", "WORK", ""]), options=RUN_OPTIONS,
       stray=STRAY)
@example(scene="TINY", options=[], stray=[])  # the scene's defaults: accepted
def test_cli_run_arguments(files, scene, options, stray):
    outcomes = _outcomes("cli: run arguments")
    scene = {"TINY": files["tiny"], "WORK": files["work"]}.get(scene, scene)
    with working_in(files["work"]), outcomes.example():
        args, outcome = _parse(["run", scene] + options + stray)
        if args is not None:
            plan, outcome = _plan(cli.plan_run, args, files["work"])
            if plan is not None:
                _check_common(plan)
                assert _finite_positive(float(plan.t_final)) and _finite_positive(float(plan.dt))
                assert isinstance(plan.n_steps, int) and plan.n_steps >= 1
                assert abs(plan.n_steps * plan.dt - plan.t_final) <= 1e-9 * plan.t_final
                assert 1 <= plan.save_every <= plan.n_steps
                for path, suffix in ((plan.out, ".npz"), (plan.gif, ".gif"),
                                     (plan.mp4, ".mp4")):
                    assert path is None or path.lower().endswith(suffix)
        outcomes.counts[outcome] += 1


@FUZZ
@given(run=st.sampled_from(["scene", "scene", "system", "packed", "DAMAGED", "missing.npz",
                            "WORK", ""]), options=RENDER_OPTIONS, stray=STRAY)
@example(run="scene", options=[], stray=[])  # the run's stored playback: accepted
def test_cli_render_arguments(files, run, options, stray):
    outcomes = _outcomes("cli: render arguments")
    if run == "DAMAGED":
        path = os.path.join(files["work"], "damaged.npz")
        with open(path, "wb") as f:
            f.write(BASES["scene"][:5000])
        run = path
    run = files.get(run, run) if run in ("scene", "system", "packed") else \
        {"WORK": files["work"]}.get(run, run)
    options = [files["tiny"] if o == "TINY" else o for o in options]
    with working_in(files["work"]), outcomes.example():
        args, outcome = _parse(["render", run] + options + stray)
        if args is not None:
            plan, outcome = _plan(cli.plan_render, args, files["work"])
            if plan is not None:
                _check_common(plan)
                assert len(plan.trajectory) >= 1 and plan.targets
                assert all(p.lower().endswith((".gif", ".mp4", ".png")) for p in plan.targets)
        outcomes.counts[outcome] += 1
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(files["work"], "damaged.npz"))


# -- bookkeeping -------------------------------------------------------------------------------

_OUTCOMES = {}


def _outcomes(target):
    if target not in _OUTCOMES:
        _OUTCOMES[target] = Outcomes(target)
    return _OUTCOMES[target]


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    for outcomes in _OUTCOMES.values():
        outcomes.report()


def test_the_fuzzers_reach_both_outcomes(files):
    """Each target has produced both a refusal and an accepted input (a fuzzer whose inputs
    are all refused tests little; each has an explicit accepted example). Runs after the
    targets above, in file order."""
    if len(_OUTCOMES) != 5:
        pytest.skip("the fuzz targets did not all run before this test")
    for name, outcomes in _OUTCOMES.items():
        accepted = outcomes.counts["loaded"] + outcomes.counts["accepted"]
        if name != "loader: random bytes":  # random bytes are never a valid archive
            assert accepted > 0, (name, outcomes.counts)
        assert sum(outcomes.counts.values()) - accepted > 0, (name, outcomes.counts)
