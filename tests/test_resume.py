"""Checkpoints and resume: a run's checkpoint holds its whole state, a streamed run stores one
with every chunk, and a killed, interrupted or finished run continues from it to the same
arrays, bit for bit, as a run never stopped (every run type, scenes, the command line, both
backends). A run that does not match the one it resumes is refused, naming what differs.

"Killed" here is an exception that no code of nhphys catches, raised as a chunk is about to be
written: what a SIGKILL leaves (tests/test_kill.py kills real processes)."""

import importlib
import os

import numpy as np
import pytest

import nhphys
import nhphys.twins.suslov
from nhphys import RollingContact, SuslovContact, Trajectory, conditions
from nhphys.forces import Force, LinearDrag, Schedule, Torque
from nhphys.integrators import DLA, Composition, Newmark, Reference, Retraction
from nhphys.surfaces import Ellipsoid, Plane, Sphere
from nhphys.systems import KnifeEdge, RollingBody, Suslov
from nhphys.trajectory import TrajectoryWriter, checkpoint_of

driver = importlib.import_module("nhphys.simulate")
scene_module = importlib.import_module("nhphys.scene")
INERTIA = [[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]]


def ball(radius=0.1):
    return nhphys.RigidBody(1.0, [0.4 * radius**2] * 3, Sphere(radius))


CASES = {
    "suslov": (lambda: Suslov(INERTIA, axis=[0, 0, 1]), Retraction(),
               {"omega": [1.0, 0.5, 0.0]}),
    "suslov-cayley-order4": (lambda: Suslov(INERTIA, axis=[0, 1, 1]),
                             Retraction("cayley", order=4), {"omega": [1.0, 0.5, -0.5]}),
    "se2": (lambda: KnifeEdge(1.0, 0.5, 0.5), Retraction(),
            {"velocity": 0.1, "turning_rate": 1.0}),
    "newmark": (lambda: KnifeEdge(1.0, 0.5, 0.5), Newmark(0.25, 0.25, 0.5),
                {"velocity": 0.1, "turning_rate": 1.0}),
    "dla-composition": (lambda: KnifeEdge(1.0, 0.5, 0.5, incline=0.3),
                        Composition.symmetric(DLA("trapezoidal", 0.0)),
                        {"velocity": 0.1, "turning_rate": 1.0}),
    "rolling": (lambda: RollingBody(ball(), Sphere(1.0).as_ground("inside")), Retraction(),
                {"omega": [1.0, 2.0, 0.5], "position": [0.2, 0, -1]}),
    # the forces' clock (time and work) and the contact normal are part of the state
    "rolling-forces": (lambda: RollingBody(
        ball(), Sphere(1.0).as_ground("inside"),
        forces=[LinearDrag(0.3), Torque(Schedule([0.0, 0.1, 0.3], [[0, 0, 0], [0, 0, 0.02],
                                                                   [0.01, 0, 0]]))]),
        Retraction(), {"omega": [1.0, 2.0, 0.5], "position": [0.2, 0, -1]}),
    # a turntable: the ground's pose depends on the clock's time
    "rolling-turntable": (lambda: RollingBody(ball(), Plane().moving(rate=1.5)), Retraction(),
                          {"omega": [1.0, 2.0, 0.0], "position": [0.3, 0.1, 0.1]}),
}
DT = 0.01


class Killed(BaseException):
    """Nothing in nhphys catches it: the process as a SIGKILL leaves it."""


def start(case, backend):
    make, integrator, ic = CASES[case]
    system = make()
    values = conditions.resolve(system, ic)
    return integrator.start(system, DT, backend, **conditions.start_arguments(system, values))


def simulate(case, backend, steps, **options):
    make, integrator, ic = CASES[case]
    return nhphys.simulate(make(), steps * DT, DT, integrator=integrator, backend=backend,
                           **options, **ic)


def assert_same(a, b):
    """Two trajectories (or dicts of frames) with the same arrays, bit for bit."""
    keys = a.fields if isinstance(a, Trajectory) else a.keys()
    other = b.fields if isinstance(b, Trajectory) else b.keys()
    assert set(keys) == set(other)
    for key in keys:
        assert a[key].shape == b[key].shape and a[key].dtype == b[key].dtype, key
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def kill_at_append(monkeypatch, call):
    """The ``call``-th chunk write (0: the initial frame's) never happens: the process dies."""
    append = TrajectoryWriter.append
    calls = [0]

    def killed(self, frames, checkpoint=None):
        calls[0] += 1
        if calls[0] == call + 1:
            raise Killed
        return append(self, frames, checkpoint)

    monkeypatch.setattr(TrajectoryWriter, "append", killed)
    return lambda: monkeypatch.setattr(TrajectoryWriter, "append", append)


# -- the run's checkpoint ------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_a_restored_checkpoint_continues_bit_for_bit(case, backend):
    first = start(case, backend)
    first.advance(6, 2)
    saved = first.checkpoint()
    assert int(saved["steps_done"]) == 6
    ahead = first.advance(10, 2)
    other = start(case, backend)
    other.restore(saved)
    assert other.steps_done == 6
    assert_same(other.advance(10, 2), ahead)
    assert_same(other.checkpoint(), first.checkpoint())
    # the checkpoint is a copy: stepping on does not change it
    assert int(saved["steps_done"]) == 6


@pytest.mark.parametrize("case", CASES)
def test_chunk_boundaries_do_not_change_a_single_bit(case, backend):
    whole = start(case, backend).advance(20, 1)
    run = start(case, backend)
    parts = [run.advance(7, 1), run.advance(13, 1)]
    assert_same({k: np.concatenate([p[k] for p in parts]) for k in whole}, whole)


def test_restore_refuses_a_checkpoint_of_another_run(backend):
    top = start("suslov", backend)
    good = top.checkpoint()
    with pytest.raises(ValueError, match=r"missing \['y'\]"):
        top.restore({k: v for k, v in good.items() if k != "y"})
    with pytest.raises(ValueError, match=r"unexpected \['x'\]"):
        top.restore(dict(good, x=np.zeros(3)))
    free = nhphys.integrators.LiePoisson().start(Suslov(INERTIA, axis=[0, 0, 1]), DT, backend,
                                                 omega0=[1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match=r"'p' has shape \(3,\).*this run's is \(2,\)"):
        top.restore(free.checkpoint())
    with pytest.raises(ValueError, match="'R' is not finite"):
        top.restore(dict(good, R=np.full((3, 3), np.nan)))
    with pytest.raises(ValueError, match="FixedPointRun"):
        top.restore(start("rolling", backend).checkpoint())
    top.restore(good)  # still takes a good one


# -- resuming through the driver -----------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_a_killed_streamed_run_resumes_bit_for_bit(case, backend, monkeypatch, tmp_path):
    """Chunks of 10 steps, 45 steps (the last chunk ends with a final state off the save_every
    schedule), killed as the third chunk was about to be written."""
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = simulate(case, backend, 45, save_every=2)
    out = tmp_path / "run.npz"
    revive = kill_at_append(monkeypatch, 3)
    with pytest.raises(Killed):
        simulate(case, backend, 45, save_every=2, out=out)
    revive()
    assert (tmp_path / "run.npz.part").is_dir() and not out.exists()
    assert len(Trajectory.load(tmp_path / "run.npz.part")) == 1 + 20 // 2
    traj = simulate(case, backend, 45, save_every=2, out=out, resume=True)
    assert_same(traj, reference)
    assert_same(Trajectory.load(out), reference)
    assert traj.meta["resumed_at_step"] == 20 and traj.meta["interrupted"] is False
    assert sorted(os.listdir(tmp_path)) == ["run.npz"]


def test_a_run_killed_before_its_first_chunk_resumes_from_the_start(backend, monkeypatch,
                                                                    tmp_path):
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = simulate("suslov", backend, 30, save_every=3)
    out = tmp_path / "run.npz"
    revive = kill_at_append(monkeypatch, 1)
    with pytest.raises(Killed):
        simulate("suslov", backend, 30, save_every=3, out=out)
    revive()
    traj = simulate("suslov", backend, 30, save_every=3, out=out, resume=True)
    assert traj.meta["resumed_at_step"] == 0
    assert_same(traj, reference)


def interrupt_in_third_chunk(monkeypatch, backend):
    """Ctrl-C inside the Suslov twin's step 25, or as the kernel returns the third chunk."""
    if backend == "python":
        step = nhphys.twins.suslov.retraction_step
        calls = [0]

        def interrupted(*args, **kwargs):
            calls[0] += 1
            if calls[0] == 26:
                raise KeyboardInterrupt
            return step(*args, **kwargs)

        monkeypatch.setattr(nhphys.twins.suslov, "retraction_step", interrupted)
        return lambda: monkeypatch.setattr(nhphys.twins.suslov, "retraction_step", step)
    kernel = nhphys._backend.kernel_module("suslov")
    loop = kernel.retraction_run
    calls = [0]

    def interrupted(*args, **kwargs):
        code = loop(*args, **kwargs)
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return code

    monkeypatch.setattr(kernel, "retraction_run", interrupted)
    return lambda: monkeypatch.setattr(kernel, "retraction_run", loop)


def test_an_interrupted_run_resumes_bit_for_bit(backend, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = simulate("suslov", backend, 40, save_every=2)
    out = tmp_path / "run.npz"
    revive = interrupt_in_third_chunk(monkeypatch, backend)
    with pytest.warns(RuntimeWarning, match="Interrupted"):
        cut = simulate("suslov", backend, 40, save_every=2, out=out)
    revive()
    assert cut.file == str(tmp_path / "run.interrupted.npz")
    # frames past the last checkpoint (the end of the second chunk) were kept
    assert len(cut) > int(checkpoint_of(cut)["frames"]) == 1 + 20 // 2
    traj = simulate("suslov", backend, 40, save_every=2, out=out, resume=True)
    assert_same(traj, reference)
    assert sorted(os.listdir(tmp_path)) == ["run.npz"]  # the interrupted file is superseded


def test_resume_names_a_file_and_needs_no_output(backend, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = simulate("suslov", backend, 40, save_every=2)
    revive = interrupt_in_third_chunk(monkeypatch, backend)
    with pytest.warns(RuntimeWarning, match="Interrupted"):
        simulate("suslov", backend, 40, save_every=2, out=tmp_path / "run.npz")
    revive()
    kept = tmp_path / "run.interrupted.npz"
    assert_same(simulate("suslov", backend, 40, save_every=2, resume=kept), reference)
    assert kept.exists()  # named by the user: left alone
    assert_same(simulate("suslov", backend, 40, save_every=2, resume=str(kept),
                         out=tmp_path / "other.npz"), reference)
    assert_same(Trajectory.load(tmp_path / "other.npz"), reference)


def test_a_killed_run_moved_aside_by_a_new_run_resumes_from_there(backend, monkeypatch,
                                                                  tmp_path):
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = simulate("rolling", backend, 30, save_every=2)
    out = tmp_path / "run.npz"
    revive = kill_at_append(monkeypatch, 2)
    with pytest.raises(Killed):
        simulate("rolling", backend, 30, save_every=2, out=out)
    revive()
    with pytest.warns(RuntimeWarning, match="kept in"):
        TrajectoryWriter(out)  # what a new run does first: the frames go to run.killed.npz
    assert sorted(os.listdir(tmp_path)) == ["run.killed.npz"]
    assert_same(simulate("rolling", backend, 30, save_every=2, out=out, resume=True), reference)
    assert sorted(os.listdir(tmp_path)) == ["run.npz"]


def test_a_finished_run_is_extended_bit_for_bit(backend, monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "CHUNK_STEPS", 10)
    reference = simulate("newmark", backend, 50, save_every=2)
    out = tmp_path / "run.npz"
    simulate("newmark", backend, 24, save_every=2, out=out)
    assert int(checkpoint_of(Trajectory.load(out))["steps_done"]) == 24
    assert_same(simulate("newmark", backend, 50, save_every=2, out=out, resume=True), reference)
    # already there: nothing to step, the same arrays
    assert_same(simulate("newmark", backend, 50, save_every=2, out=out, resume=True), reference)
    with pytest.raises(ValueError, match="past this run's 40 steps"):
        simulate("newmark", backend, 40, save_every=2, out=out, resume=True)
    simulate("newmark", backend, 25, save_every=2, out=out)  # ends on a final state off schedule
    with pytest.raises(ValueError, match="cannot be extended"):
        simulate("newmark", backend, 50, save_every=2, out=out, resume=True)


def test_resume_refuses_a_run_that_differs(backend, tmp_path):
    out = tmp_path / "run.npz"
    simulate("suslov", backend, 20, save_every=2, out=out)
    make, integrator, ic = CASES["suslov"]
    cases = [
        ({"dt": 0.02, "t_final": 0.4}, "its dt is 0.01, this run's is 0.02"),
        ({"save_every": 4}, "its save_every is 2, this run's is 4"),
        ({"integrator": Retraction("cayley")}, "its integrator is"),
        ({"omega": [1.0, 0.4, 0.0]}, "its initial state differs.*field 'omega'"),
        ({"system": Suslov(np.diag([1.0, 2.0, 3.5]), axis=[0, 0, 1])}, "its system is"),
        ({"backend": "python" if backend == "cython" else "cython"}, "its backend is"),
    ]
    for change, match in cases:
        if change.get("backend") == "cython" and not nhphys._backend.extensions_built():
            continue
        args = {"system": make(), "t_final": 0.4, "dt": DT, "integrator": integrator,
                "backend": backend, "save_every": 2, "omega": ic["omega"]}
        args.update(change)
        system, t_final, dt = args.pop("system"), args.pop("t_final"), args.pop("dt")
        with pytest.raises(ValueError, match=match):
            nhphys.simulate(system, t_final, dt, out=out, resume=True, **args)
    assert sorted(os.listdir(tmp_path)) == ["run.npz"]  # nothing written or moved


def test_resume_arguments_are_checked(tmp_path):
    top = CASES["suslov"][0]()
    with pytest.raises(ValueError, match="Expected `out` with resume=True"):
        nhphys.simulate(top, 0.1, DT, resume=True, omega=[1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="existing run file"):
        nhphys.simulate(top, 0.1, DT, resume=tmp_path / "none.npz", omega=[1.0, 0.5, 0.0])
    with pytest.raises(TypeError, match="Expected `resume`"):
        nhphys.simulate(top, 0.1, DT, resume=1, omega=[1.0, 0.5, 0.0])
    # nothing to resume beside `out`: the run starts from the beginning
    traj = nhphys.simulate(top, 0.1, DT, out=tmp_path / "r.npz", resume=True,
                           omega=[1.0, 0.5, 0.0])
    assert "resumed_from" not in traj.meta and len(traj) == 11


def test_reference_runs_cannot_be_resumed(tmp_path):
    top = CASES["suslov"][0]()
    out = tmp_path / "ref.npz"
    traj = nhphys.simulate(top, 0.1, DT, integrator=Reference(), out=out, omega=[1.0, 0.5, 0.0])
    assert checkpoint_of(traj) is None
    with pytest.raises(ValueError, match="holds no checkpoint.*not Reference"):
        nhphys.simulate(top, 0.2, DT, integrator=Reference(), out=out, resume=True,
                        omega=[1.0, 0.5, 0.0])
    simulate("suslov", "python", 10, out=tmp_path / "exp.npz")
    with pytest.raises(ValueError, match="its integrator is"):
        nhphys.simulate(top, 0.2, DT, integrator=Reference(), resume=tmp_path / "exp.npz",
                        omega=[1.0, 0.5, 0.0])


def test_a_checkpoint_that_does_not_match_its_frames_is_refused(tmp_path):
    traj = simulate("suslov", "python", 10)
    bad = Trajectory({k: traj[k] for k in traj.fields}, traj.meta,
                     dict(traj.static, **{"checkpoint.frames": np.array(50)}))
    bad.save(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="follows 50 frames, but the run has 11"):
        simulate("suslov", "python", 10, resume=tmp_path / "bad.npz")


def test_a_run_with_a_python_callable_force_resumes(backend, monkeypatch, tmp_path):
    """A callable steps on the twin whatever the backend; the resumed run has its own callable
    (the repr of a function holds its address, which differs from process to process)."""

    def system():
        def push(t, state):
            return [0.05 * np.cos(5 * t), 0.0, 0.0]
        return RollingBody(ball(), Sphere(1.0).as_ground("inside"), forces=[Force(push)])

    monkeypatch.setattr(driver, "CHUNK_STEPS", 6)
    ic = CASES["rolling"][2]
    reference = nhphys.simulate(system(), 0.2, DT, backend=backend, save_every=2, **ic)
    assert reference.meta["backend"].startswith("python")
    out = tmp_path / "run.npz"
    revive = kill_at_append(monkeypatch, 2)
    with pytest.raises(Killed):
        nhphys.simulate(system(), 0.2, DT, backend=backend, save_every=2, out=out, **ic)
    revive()
    assert_same(nhphys.simulate(system(), 0.2, DT, backend=backend, save_every=2, out=out,
                                resume=True, **ic), reference)


# -- scenes --------------------------------------------------------------------------------------
def mixed_scene(omega=(1.0, 2.0, 0.5)):
    """A ball rolling in a bowl beside a Suslov top."""
    scene = nhphys.Scene(name="mixed")
    bowl = scene.add_ground(Sphere(1.0).as_ground("inside"))
    scene.add_body(ball(), RollingContact(bowl), name="ball", omega=list(omega),
                   position=[0.2, 0.0, -1.0])
    scene.add_ground(Plane(extent=2.0))
    scene.add_body(nhphys.RigidBody(1.0, INERTIA, Ellipsoid([0.5, 0.35, 0.2])),
                   SuslovContact([0, 0, 1], pivot=[1, 0, 1]), name="top", omega=[1.0, 0.5, 0.0])
    return scene


def test_a_killed_scene_resumes_bit_for_bit(backend, monkeypatch, tmp_path):
    monkeypatch.setattr(scene_module, "CHUNK_STEPS", 20)  # 10 steps per body
    reference = mixed_scene().simulate(0.45, DT, save_every=2, backend=backend)
    out = tmp_path / "mixed.npz"
    revive = kill_at_append(monkeypatch, 3)
    with pytest.raises(Killed):
        mixed_scene().simulate(0.45, DT, save_every=2, backend=backend, out=out)
    revive()
    with pytest.raises(ValueError, match="its initial state differs"):
        mixed_scene(omega=(1.0, 2.0, 0.4)).simulate(0.45, DT, save_every=2, backend=backend,
                                                    out=out, resume=True)
    traj = mixed_scene().simulate(0.45, DT, save_every=2, backend=backend, out=out, resume=True)
    assert_same(traj, reference)
    assert_same(Trajectory.load(out), reference)
    assert traj.static.keys() >= reference.static.keys()  # the display is kept


def test_scene_checkpoints_name_the_body_that_does_not_fit(backend):
    run = mixed_scene().start(DT, backend=backend)
    saved = run.checkpoint()
    assert "0.A" in saved and "1.R" in saved
    other = mixed_scene().start(DT, backend=backend)
    with pytest.raises(ValueError, match="Body 'top'"):
        other.restore({k: v for k, v in saved.items() if k != "1.y"})
    with pytest.raises(ValueError, match="scene with 2 bodies"):
        other.restore(dict(saved, **{"2.R": np.eye(3)}))
    other.restore(saved)
    assert_same(other.advance(5, 1), run.advance(5, 1))


# -- the command line ----------------------------------------------------------------------------
def test_nhphys_run_resume_continues_a_killed_run(monkeypatch, tmp_path, capsys):
    from nhphys.cli import main

    monkeypatch.setattr(scene_module, "CHUNK_STEPS", 10)
    argv = ["run", "suslov_top", "--t-final", "0.5", "--dt", "0.01", "--no-progress",
            "--backend", "python"]
    assert main(argv + ["--out", str(tmp_path / "whole.npz")]) == 0
    out = tmp_path / "run.npz"
    revive = kill_at_append(monkeypatch, 2)
    with pytest.raises(Killed):
        main(argv + ["--out", str(out)])
    revive()
    assert main(argv + ["--out", str(out), "--resume"]) == 0
    assert_same(Trajectory.load(out), Trajectory.load(tmp_path / "whole.npz"))
    assert Trajectory.load(out).meta["playback"]["fps"] == 20.0
    assert checkpoint_of(Trajectory.load(out)) is not None  # kept through the playback save
