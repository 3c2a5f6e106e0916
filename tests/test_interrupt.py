"""Ctrl-C loses nothing computed: the frames of the saved steps a time loop committed before the
interruption are kept by the run, returned by the driver and streamed to ``out``, on every run
type (Suslov, SE(2) retraction, Newmark, rolling) and on scenes, on both backends.

How Ctrl-C is delivered here, deterministically: Python raises ``KeyboardInterrupt`` between two
bytecodes of whatever Python code runs when the signal arrives. In a twin's time loop that can be
any bytecode of a step, so one test raises it from a trace function at every bytecode of a step
in turn (between the assignments that commit a step included). The kernels run their loops
without the interpreter: Ctrl-C reaches them as the loop returns (or inside a Python callback of
a user's ground), which the other tests reproduce by wrapping the kernel's loop or the twin's
step function.
"""

import importlib
import sys

import numpy as np
import pytest

import nhphys
import nhphys.twins.newmark
import nhphys.twins.rolling
import nhphys.twins.se2_retraction
import nhphys.twins.suslov
from nhphys import SuslovContact, Trajectory, _backend, conditions
from nhphys.forces import LinearDrag, Torque
from nhphys.integrators import Newmark, Retraction
from nhphys.surfaces import Ellipsoid, ParametricSurface, Plane, Sphere
from nhphys.systems import KnifeEdge, RollingBody, Suslov
from nhphys.twins.newton import INFO_COMMITTED, INFO_SIZE

driver = importlib.import_module("nhphys.simulate")
scene_module = importlib.import_module("nhphys.scene")


def ball():
    return nhphys.RigidBody(1.0, [0.4 * 0.01] * 3, Sphere(0.1))


# name: (system, integrator, initial conditions, dt, twin module, its step function, kernel loop)
CASES = {
    "suslov": (lambda: Suslov([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]], axis=[0, 0, 1]),
               Retraction(), {"omega": [1.0, 0.5, 0.0]}, 0.01,
               nhphys.twins.suslov, "retraction_step", ("suslov", "retraction_run")),
    "suslov-order4": (lambda: Suslov([1.0, 2.0, 3.0], axis=[0, 1, 1]), Retraction(order=4),
                      {"omega": [1.0, 0.5, -0.5]}, 0.01,
                      nhphys.twins.suslov, "retraction_step", ("suslov", "retraction_run")),
    "se2": (lambda: KnifeEdge(1.0, 0.5, 0.5), Retraction(),
            {"velocity": 0.1, "turning_rate": 1.0}, 0.01,
            nhphys.twins.se2_retraction, "retraction_step", ("se2_retraction", "retraction_run")),
    "newmark": (lambda: KnifeEdge(1.0, 0.5, 0.5), Newmark(0.25, 0.25, 0.5),
                {"velocity": 0.1, "turning_rate": 1.0}, 0.01,
                nhphys.twins.newmark, "newmark_step", ("newmark", "nonholonomic_run")),
    "rolling": (lambda: RollingBody(ball(), Sphere(1.0).as_ground("inside")), Retraction(),
                {"omega": [1.0, 2.0, 0.5], "position": [0.2, 0, -1]}, 0.01,
                nhphys.twins.rolling, "rolling_step", ("rolling", "rolling_run")),
    "rolling-forces": (lambda: RollingBody(ball(), Sphere(1.0).as_ground("inside"),
                                           forces=[LinearDrag(0.3), Torque([0.0, 0.0, 0.02])]),
                       Retraction(), {"omega": [1.0, 2.0, 0.5], "position": [0.2, 0, -1]}, 0.01,
                       nhphys.twins.rolling, "rolling_step", ("rolling", "rolling_run")),
}
LOOPS = {"suslov": nhphys.twins.suslov.retraction_run,
         "suslov-order4": nhphys.twins.suslov.retraction_run,
         "se2": nhphys.twins.se2_retraction.retraction_run,
         "newmark": nhphys.twins.newmark.nonholonomic_run,
         "rolling": nhphys.twins.rolling.rolling_run,
         "rolling-forces": nhphys.twins.rolling.rolling_run}


def start(case, backend):
    make, integrator, ic, dt = CASES[case][:4]
    system = make()
    values = conditions.resolve(system, ic)
    return integrator.start(system, dt, backend, **conditions.start_arguments(system, values))


def run_simulate(case, backend, steps, **options):
    make, integrator, ic, dt = CASES[case][:4]
    return nhphys.simulate(make(), steps * dt, dt, integrator=integrator, backend=backend,
                           **options, **ic)


def assert_same(frames, reference, count=None):
    """``frames`` are the first ``count`` frames of ``reference``, bit for bit."""
    assert set(frames) == set(reference)
    for key, value in frames.items():
        want = reference[key] if count is None else reference[key][:count]
        assert value.shape == want.shape, key
        np.testing.assert_array_equal(value, want, err_msg=key)


def count_of(frames):
    return len(next(iter(frames.values())))


class OpcodeInterrupt:
    """Raise ``KeyboardInterrupt`` in a frame of ``code`` before its ``opcode``-th bytecode of
    the step whose loop variable ``k`` equals ``step`` -- where Ctrl-C can land in Python code.
    ``opcode=None`` only counts the bytecodes of that step (``seen``)."""

    def __init__(self, code, step, opcode=None):
        self.code, self.step, self.opcode = code, step, opcode
        self.seen, self.fired = 0, False

    def __enter__(self):
        self.previous = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(self.previous)

    def _global(self, frame, event, arg):
        if frame.f_code is self.code:
            frame.f_trace_opcodes = True
            return self._local
        return None

    def _local(self, frame, event, arg):
        if event == "opcode" and frame.f_locals.get("k") == self.step:
            if self.seen == self.opcode:
                self.fired = True
                raise KeyboardInterrupt
            self.seen += 1
        return self._local


@pytest.mark.parametrize("case", CASES)
def test_ctrl_c_at_any_bytecode_of_a_twin_step_keeps_exactly_the_committed_frames(case):
    """The twins only (a kernel's loop has no bytecodes): Ctrl-C before each bytecode of step
    K = 1, with a frame saved every 2 steps. Before the step is complete the run keeps the
    frames of the steps before it (none); once the step and its frame are written, that frame
    too; never a frame not completely written, and always bit for bit the uninterrupted run's."""
    K, every, n = 1, 2, 4
    reference = start(case, "python").advance(n, every)
    code = LOOPS[case].__code__
    with OpcodeInterrupt(code, K) as counter:
        start(case, "python").advance(n, every)
    assert counter.seen > 50  # the whole step: its solves, the commit, the frame, the count
    kept = []
    for i in range(counter.seen):
        run = start(case, "python")
        with OpcodeInterrupt(code, K, i) as trap, pytest.raises(KeyboardInterrupt) as info:
            run.advance(n, every)
        assert trap.fired
        frames = info.value.frames
        assert_same(frames, reference, count_of(frames))
        assert run.steps_done in (K, K + 1)
        assert count_of(frames) == run.steps_done // every
        with pytest.raises(RuntimeError, match="start a new one"):
            run.advance(1, 1)  # it may have stopped between two of the commit's assignments
        with pytest.raises(RuntimeError, match="no checkpoint"):
            run.checkpoint()
        kept.append(count_of(frames))
    assert kept == sorted(kept)
    assert kept[0] == K // every and kept[-1] == (K + 1) // every


@pytest.mark.parametrize("case", CASES)
def test_loops_count_the_steps_they_commit(case, backend):
    run = start(case, backend)
    seen = []
    loop = run._loop

    def watched(n_steps, save_every, saved, info):
        assert info.shape == (INFO_SIZE,)
        code = loop(n_steps, save_every, saved, info)
        seen.append((code, int(info[INFO_COMMITTED])))
        return code

    run._loop = watched
    run.advance(7, 2)
    run.advance(3, 3)
    assert seen == [(0, 7), (0, 3)]
    assert run.steps_done == 10


def test_a_failed_step_counts_the_steps_before_it(backend):
    run = Retraction(max_newton=2).start(KnifeEdge(1.0, 0.5, 0.5), 5.0, backend,
                                         pose0=[0.2, -0.1, 0.3], velocity0=0.1, omega0=1.0)
    infos = []
    loop = run._loop
    run._loop = lambda n, every, saved, info: (infos.append(info), loop(n, every, saved, info))[1]
    with pytest.raises(nhphys.NewtonError, match="step 0"):
        run.advance(3, 1)
    assert int(infos[0][INFO_COMMITTED]) == 0


def interrupt_inside_step(monkeypatch, case, call):
    """Ctrl-C inside the twin's ``call``-th step computation (before its commit)."""
    module, name = CASES[case][4:6]
    step = getattr(module, name)
    calls = [0]

    def interrupted(*args, **kwargs):
        calls[0] += 1
        if calls[0] == call + 1:
            raise KeyboardInterrupt
        return step(*args, **kwargs)

    monkeypatch.setattr(module, name, interrupted)


def interrupt_as_the_kernel_returns(monkeypatch, case, call):
    """Ctrl-C arriving while the kernel's ``call``-th loop runs: Python sees it when it
    returns."""
    module, name = CASES[case][6]
    kernel = _backend.kernel_module(module)
    loop = getattr(kernel, name)
    calls = [0]

    def interrupted(*args, **kwargs):
        code = loop(*args, **kwargs)
        calls[0] += 1
        if calls[0] == call + 1:
            raise KeyboardInterrupt
        return code

    monkeypatch.setattr(kernel, name, interrupted)


@pytest.mark.parametrize("case", ["suslov", "se2", "newmark", "rolling", "rolling-forces"])
def test_simulate_returns_and_streams_the_frames_committed_before_ctrl_c(case, backend,
                                                                       monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = run_simulate(case, backend, 40, save_every=2)
    if backend == "python":
        interrupt_inside_step(monkeypatch, case, 25)  # steps 0..24 committed: 12 saved
        expected = 1 + 25 // 2
    else:
        interrupt_as_the_kernel_returns(monkeypatch, case, 2)  # the third chunk, steps 20..29
        expected = 1 + 30 // 2
    out = tmp_path / "run.npz"
    with pytest.warns(RuntimeWarning, match="Interrupted at t = "):
        traj = run_simulate(case, backend, 40, save_every=2, out=out)
    assert traj.meta["interrupted"] is True
    assert len(traj) == expected
    assert_same({k: traj[k] for k in traj.fields}, {k: reference[k] for k in reference.fields},
                expected)
    assert not out.exists()  # an interrupted run never takes the output's name
    assert traj.file == str(tmp_path / "run.interrupted.npz")
    kept = Trajectory.load(traj.file)
    assert_same({k: kept[k] for k in kept.fields}, {k: traj[k] for k in traj.fields})


def two_tops():
    scene = nhphys.Scene(name="tops")
    scene.add_ground(Plane(extent=2.0))
    top = [[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]]
    scene.add_body(nhphys.RigidBody(1.0, top, Ellipsoid([0.5, 0.35, 0.2]), name="a"),
                   SuslovContact([0, 0, 1], pivot=[0, 0, 1]), omega=[1.0, 0.5, 0.0])
    scene.add_body(nhphys.RigidBody(1.0, top, Ellipsoid([0.5, 0.35, 0.2]), name="b"),
                   SuslovContact([1, 0, 0], pivot=[1, 0, 1]), momentum=[0.0, 1.0, 2.0])
    return scene


@pytest.mark.parametrize("where", ["first body", "last body"])
def test_a_scene_keeps_the_frames_every_body_committed_before_ctrl_c(where, backend,
                                                                    monkeypatch, tmp_path):
    """Chunks of 10 steps per body, the bodies one after the other (``threads=1``; side by side
    is tested in test_scene_threads.py): Ctrl-C in the last body's loop keeps the frames it
    committed (every body has them); in the first body's, those of the chunks before."""
    monkeypatch.setattr(scene_module, "CHUNK_STEPS", 20)  # 10 steps per body per chunk
    reference = two_tops().simulate(0.4, 0.01, save_every=2, backend=backend)
    body = 0 if where == "first body" else 1
    if backend == "python":
        # chunk 1 (steps 10..19); the body's 5th step of it: step 14
        interrupt_inside_step(monkeypatch, "suslov", 20 + 10 * body + 4)
        expected = 1 + 10 // 2 + (4 // 2 if body == 1 else 0)
    else:
        interrupt_as_the_kernel_returns(monkeypatch, "suslov", 2 + body)
        expected = 1 + (20 if body == 1 else 10) // 2
    out = tmp_path / "tops.npz"
    with pytest.warns(RuntimeWarning, match="Interrupted at t = "):
        traj = two_tops().simulate(0.4, 0.01, save_every=2, backend=backend, out=out,
                                   threads=1)
    assert traj.meta["interrupted"] is True
    assert len(traj) == expected
    assert_same({k: traj[k] for k in traj.fields}, {k: reference[k] for k in reference.fields},
                expected)
    assert not out.exists()
    kept = Trajectory.load(tmp_path / "tops.interrupted.npz")
    assert_same({k: kept[k] for k in kept.fields}, {k: traj[k] for k in traj.fields})


def test_a_stopped_scene_run_refuses_to_advance(backend, monkeypatch):
    run = two_tops().start(0.01, backend=backend, threads=1)  # the bodies one after the other
    run.advance(4, 2)
    if backend == "python":
        interrupt_inside_step(monkeypatch, "suslov", 4 + 3)  # the second body's 4th step
    else:
        interrupt_as_the_kernel_returns(monkeypatch, "suslov", 1)
    with pytest.raises(KeyboardInterrupt) as info:
        run.advance(4, 2)
    frames = info.value.frames
    assert count_of(frames) == (1 if backend == "python" else 2)
    assert frames["R"].shape[1] == 2  # both bodies
    with pytest.raises(RuntimeError, match="start a new one"):
        run.advance(4, 2)
    with pytest.raises(RuntimeError, match="no checkpoint"):
        run.checkpoint()


def trap_bowl(trap=None, beyond=0.05, error=lambda u: KeyboardInterrupt()):
    """A bowl ``z = (x^2 + y^2) / 2`` of Python callables whose ``point`` raises ``error(u)``
    (Ctrl-C's ``KeyboardInterrupt`` by default) beyond ``x = beyond`` once ``trap["armed"]``
    (never without a trap)."""

    def point(u, v):
        if trap is not None and trap["armed"] and u > beyond:
            raise error(u)
        return [u, v, 0.5 * (u * u + v * v)]

    def jacobian(u, v):
        return [[1.0, 0.0], [0.0, 1.0], [u, v]]

    def hessian(u, v):
        return [[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]]

    return ParametricSurface(point, jacobian, hessian, (-1.0, 1.0), (-1.0, 1.0))


def ctrl_c_in_a_callback(backend):
    """The frames kept when Ctrl-C comes in a Python ground's callback (inside the kernel on
    the compiled backend), and the uninterrupted run's."""
    trap = {"armed": False}
    system = RollingBody(ball(), trap_bowl(trap))
    runs = [Retraction().start(system, 1e-3, backend, omega0=[0.0, 5.0, 0.0]) for _ in "ab"]
    reference = runs[0].advance(200, 1)
    trap["armed"] = True
    with pytest.raises(KeyboardInterrupt) as info:
        runs[1].advance(200, 1)
    return info.value.frames, reference, runs[1]


def test_ctrl_c_in_a_python_callback_keeps_the_committed_frames(backend):
    frames, reference, run = ctrl_c_in_a_callback(backend)
    kept = count_of(frames)
    assert 10 < kept < 200
    assert_same(frames, reference, kept)
    assert frames["contact_point"][:, 0].max() <= 0.05
    assert run.steps_done == kept
    with pytest.raises(RuntimeError, match="start a new one"):
        run.advance(1, 1)


@pytest.mark.parity
def test_ctrl_c_in_a_callback_stops_kernel_and_twin_at_the_same_step():
    kept = {b: count_of(ctrl_c_in_a_callback(b)[0]) for b in ("python", "cython")}
    assert kept["python"] == kept["cython"]


def test_ctrl_c_while_a_chunk_is_streamed_keeps_it(backend, monkeypatch, tmp_path):
    """Ctrl-C in the driver itself, between two chunks (as a chunk's frames are written)."""
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = run_simulate("suslov", backend, 40, save_every=2)
    append = driver.TrajectoryWriter.append
    calls = [0]

    def interrupted(self, frames, checkpoint=None):
        append(self, frames, checkpoint)
        calls[0] += 1
        if calls[0] == 3:  # once the second chunk is on disk (the first call writes t = 0)
            raise KeyboardInterrupt

    monkeypatch.setattr(driver.TrajectoryWriter, "append", interrupted)
    with pytest.warns(RuntimeWarning, match="Interrupted at t = 0.2:"):
        traj = run_simulate("suslov", backend, 40, save_every=2, out=tmp_path / "r.npz")
    assert len(traj) == 1 + 20 // 2
    assert_same({k: traj[k] for k in traj.fields}, {k: reference[k] for k in reference.fields},
                len(traj))
    assert Trajectory.load(tmp_path / "r.interrupted.npz").t[-1] == traj.t[-1]


@pytest.mark.parity
def test_kernels_and_twins_share_the_info_slots():
    from nhphys.twins import newton

    kernel = _backend.kernel_module("newton").info_slots()
    assert kernel == {name: getattr(newton, name) for name in kernel}
    assert kernel["INFO_COMMITTED"] == INFO_COMMITTED and kernel["INFO_SIZE"] == INFO_SIZE


@pytest.mark.parametrize("case", CASES)
def test_loops_refuse_an_info_array_too_short(case, backend):
    """The kernels write info[INFO_COMMITTED] without bounds checks: they check its size."""
    run = start(case, backend)
    saved = run._allocate(1)
    with pytest.raises((ValueError, IndexError)):
        run._loop(1, 1, saved, np.zeros(INFO_SIZE - 1, dtype=np.intp))
