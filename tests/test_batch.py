"""nhphys.batch.run_batch and the rolling_ensemble kernel: every run of a batch equals the same
run made alone with nhphys.simulate, bit for bit, whatever the threads and the grouping; a run
that fails is reported while the others complete; bad input is refused before any step.

The twins cost about 5 ms per rattleback step: their runs here are a few dozen steps."""

import importlib
import warnings

import numpy as np
import pytest

import nhphys
from nhphys import _backend, batch
from nhphys import forces as fe
from nhphys.batch import run_batch
from nhphys.lie import so3
from nhphys.scenes.rattleback import INERTIA, MASS, ground, rattleback
from nhphys.shapes import Disk
from nhphys.surfaces import Ellipsoid, Plane, Sphere
from nhphys.systems import KnifeEdge, RollingBody, Suslov
from nhphys.twins.rolling import FRAME_SIZE
from test_interrupt import trap_bowl

DT = 1e-3
STEPS = {"python": 14, "cython": 400}  # rattleback steps per run (400 % 3 == 1: a last rest)
RATTLEBACK = RollingBody(rattleback, ground)


def starts(n):
    """n rattleback starts of varied tilt and spin."""
    tilts = np.linspace(0.004, 0.02, n)
    spins = np.linspace(-5.0, 5.0, n)
    return [{"orientation": so3.exp([t, 0.7 * t, 0.0]), "omega": [0.0, 0.0, w]}
            for t, w in zip(tilts, spins)]


def assert_run_equal(result, i, traj):
    """Run ``i`` of ``result`` is ``traj``, bit for bit, field for field."""
    assert np.array_equal(result.t, traj.t)
    assert set(result.fields) == set(traj.fields) - {"t"}
    for key, value in result.fields.items():
        assert np.array_equal(value[i], traj[key]), key
    assert result.status[i] == "ok" and np.isnan(result.fail_time[i])
    assert result.message[i] == ""
    assert result.steps_done[i] == round(traj.t[-1] / traj.meta["dt"])


def check_against_simulate(systems, ics, t_final, backend, **kw):
    result = run_batch(systems, ics, t_final, DT, backend=backend, **kw)
    systems = systems if isinstance(systems, list) else [systems] * len(ics)
    for i, (system, ic) in enumerate(zip(systems, ics)):
        traj = nhphys.simulate(system, t_final, DT, backend=backend,
                               integrator=kw.get("integrator"),
                               save_every=kw.get("save_every", 1), **ic)
        assert_run_equal(result, i, traj)
    return result


def test_rattlebacks_equal_simulate_run_by_run(backend):
    result = check_against_simulate(RATTLEBACK, starts(5), STEPS[backend] * DT, backend,
                                    save_every=3, threads=2)
    assert result.backend == backend
    assert result.fields["omega"].shape == (5, len(result.t), 3)
    # the spins really differ: the runs are not copies of one another
    assert len({float(w[-1, 2]) for w in result.fields["omega"]}) == 5


def test_mass_and_inertia_vary_within_one_kernel_call(backend, monkeypatch):
    scale = [0.5, 1.0, 2.0]
    twist = [1.0, 1.1, 0.9]
    systems = []
    for m, k in zip(scale, twist):
        inertia = m * INERTIA * np.array([[1.0, k, 1.0], [k, 1.0, 1.0], [1.0, 1.0, k]])
        body = nhphys.RigidBody(m * MASS, inertia, rattleback.shape, com=rattleback.com)
        systems.append(RollingBody(body, ground))
    calls = []
    monkeypatch.setattr(batch._Group, "step", record_calls(batch._Group.step, calls))
    check_against_simulate(systems, starts(3), STEPS[backend] * DT, backend, threads=2)
    assert calls == [3]  # one group of three runs, one kernel call


def record_calls(step, calls):
    def wrapped(self, *args, **kw):
        calls.append(len(self.runs))
        return step(self, *args, **kw)
    return wrapped


def test_compositions(backend):
    steps = {"python": 4, "cython": 150}[backend]  # exp4: three sub-steps a step
    check_against_simulate(RATTLEBACK, starts(3), steps * DT, backend, integrator="exp4",
                           save_every=2)


def test_force_elements(backend):
    forces = [fe.LinearDrag(0.4), fe.AngularDamping(2e-4),
              fe.Spring(4.0, anchor=[0.3, 0.1, 0.2], point=[0.02, 0.0, 0.03],
                        rest_length=0.1)]
    system = RollingBody(rattleback, ground, forces=forces)
    result = check_against_simulate(system, starts(3), STEPS[backend] * DT, backend)
    assert np.abs(result.fields["work"][:, -1]).min() > 0  # the drag did work


def test_moving_ground(backend):
    a, b, c = 0.1, 0.08, 0.06
    body = nhphys.RigidBody(1.0, 0.2 * np.array([b * b + c * c, a * a + c * c, a * a + b * b]),
                            Ellipsoid([a, b, c]))
    system = RollingBody(body, Plane().moving(rate=1.5))
    ics = [{"orientation": so3.exp([0.2 * k, -0.1, 0.3 * k]), "omega": [0.5, -0.3 * k, 1.0],
                "position": [0.05 * k, 0.0, 0.0]} for k in range(3)]
    check_against_simulate(system, ics, {"python": 10, "cython": 300}[backend] * DT, backend)


def test_suslov_and_knife_edge_through_threads(backend):
    top = Suslov(inertia=[1.0, 10.0, 100.0], axis=[0, 0, 1])
    check_against_simulate(top, [{"omega": [1.0, 0.1 * k, 0.0]} for k in range(4)],
                           {"python": 0.05, "cython": 2.0}[backend], backend,
                           integrator="cayley", threads=2, save_every=4)
    sleigh = KnifeEdge(mass=1.0, inertia=0.5, offset=0.5)
    ics = [{"position": [0.2, -0.1], "heading": 0.3 * k, "velocity": 0.1, "turning_rate": 1.0 - 0.2 * k}
           for k in range(4)]
    check_against_simulate(sleigh, ics, {"python": 0.05, "cython": 2.0}[backend], backend,
                           threads=2)


def test_one_and_two_threads_agree(backend):
    t_final = STEPS[backend] * DT
    one = run_batch(RATTLEBACK, starts(4), t_final, DT, backend=backend, threads=1)
    two = run_batch(RATTLEBACK, starts(4), t_final, DT, backend=backend, threads=2)
    for key in one.fields:
        assert np.array_equal(one.fields[key], two.fields[key]), key


def test_short_kernel_calls_and_chunks_change_nothing(backend, monkeypatch):
    """Chunks of the driver (their fields computed chunk by chunk) and a group's kernel calls
    much shorter than its chunks: still simulate's runs (with simulate's own chunks)."""
    monkeypatch.setattr(batch, "CHUNK_STEPS", 7)
    monkeypatch.setattr(batch, "BODY_STEPS_PER_CALL", 5)
    monkeypatch.setattr(importlib.import_module("nhphys.simulate"), "CHUNK_STEPS", 7)
    check_against_simulate(RATTLEBACK, starts(2), {"python": 11, "cython": 60}[backend] * DT,
                           backend, save_every=2)


# -- failures ------------------------------------------------------------------------------------

def disk_starts():
    """Two upright rolling disks, and one leaning 60 degrees from vertical that falls flat."""
    upright = so3.exp([np.pi / 2, 0.0, 0.0])  # the disk's axis (body z) horizontal
    return [{"orientation": upright, "omega": [0.0, 0.0, 20.0]},
            {"orientation": so3.exp([np.radians(30), 0.0, 0.0])},
            {"orientation": upright, "omega": [0.0, 0.0, -15.0]}]


def test_a_failing_run_is_reported_and_the_others_complete(backend):
    disk = RollingBody(nhphys.RigidBody(1.0, Disk.solid_inertia(1.0, 0.1), Disk(0.1)), Plane())
    ics = disk_starts()
    done = []
    result = run_batch(disk, ics, 0.3, DT, backend=backend, save_every=5,
                       progress=lambda runs, failed: done.append((runs, failed)))
    assert list(result.status) == ["ok", "flat", "ok"]
    assert done[-1] == (3, 1)
    for i in (0, 2):
        assert_run_equal(result, i, nhphys.simulate(disk, 0.3, DT, backend=backend,
                                                    save_every=5, **ics[i]))
    with pytest.raises(nhphys.errors.ContactEvent) as info:
        nhphys.simulate(disk, 0.3, DT, backend=backend, save_every=5, **ics[1])
    err = info.value
    assert result.fail_time[1] == err.time and result.message[1] == str(err)
    assert "fell flat" in result.message[1]
    assert result.steps_done[1] == err.step
    kept = len(err.trajectory)
    assert 0 < kept < len(result.t)
    for key, value in result.fields.items():
        assert np.array_equal(value[1, :kept], err.trajectory[key]), key
        assert np.isnan(value[1, kept:]).all(), key


def test_serial_fallback_warns_once(backend, monkeypatch):
    """Where the kernel has no OpenMP, the first batch on several threads says so, once (the
    twin never does: it is a plain loop by definition)."""
    if backend == "cython":
        monkeypatch.setattr(_backend.implementation("rolling", "cython"), "OPENMP", False)
    monkeypatch.setattr(batch, "_warned_serial", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            run_batch(RATTLEBACK, starts(2), 3 * DT, DT, backend=backend, threads=2)
    said = [w for w in caught if "without OpenMP" in str(w.message)]
    assert len(said) == (1 if backend == "cython" else 0)


def bowl(trap=None):
    """The paraboloid bowl ``z = (x^2 + y^2) / 2`` from Python callables; ``point`` raises a
    ``ValueError`` beyond ``x = trap["x"]`` once ``trap["armed"]`` is set."""
    return trap_bowl(trap, beyond=trap["x"] if trap else 0.0,
                     error=lambda u: ValueError(f"boom at u = {u:.4f}"))


BALL = nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1))
BOWL_STARTS = [{"omega": [0.0, -2.0, 0.0], "position": [-0.02, 0.0, 0.0002]},
               {"omega": [0.0, 2.0, 0.0], "position": [0.048, 0.0, 0.001152]},
               {"omega": [0.0, -2.0, 0.0], "position": [0.0, 0.01, 0.00005]}]


def test_a_python_ground_steps_run_by_run(backend):
    """A ground of Python callables cannot be shared by threads in the kernel: its runs take
    the thread path, one Run each, and still equal simulate's."""
    check_against_simulate(RollingBody(BALL, bowl()), BOWL_STARTS,
                           {"python": 20, "cython": 200}[backend] * DT, backend, threads=2)


def test_a_raising_callback_stops_its_run_only(backend):
    trap = {"armed": False, "x": 0.05}
    system = RollingBody(BALL, bowl(trap))
    place, placed = system.place, []

    def place_then_arm(*args, **kwargs):  # placing projects points all over the chart
        state = place(*args, **kwargs)
        placed.append(1)
        trap["armed"] = len(placed) == len(BOWL_STARTS)
        return state

    system.place = place_then_arm
    result = run_batch(system, BOWL_STARTS, 0.03, DT, backend=backend, threads=2)
    assert list(result.status) == ["ok", "error", "ok"]
    assert result.message[1].startswith("ValueError: boom at u = 0.05")
    assert 0 < result.steps_done[1] < 30 and result.fail_time[1] > 0
    assert np.isnan(result.fields["energy"][1, -1])
    assert np.isfinite(result.fields["energy"][[0, 2]]).all()


def test_ctrl_c_keeps_what_was_computed(backend, monkeypatch):
    """Ctrl-C (here raised by the progress callback after the second kernel call) is re-raised
    with the frames computed so far, each equal to simulate's."""
    monkeypatch.setattr(batch, "BODY_STEPS_PER_CALL", 4)  # two runs: two steps a call
    calls = []

    def progress(done, failed):
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        run_batch(RATTLEBACK, starts(2), 10 * DT, DT, backend=backend, progress=progress)
    result = info.value.result
    assert list(result.status) == ["interrupted"] * 2
    assert list(result.steps_done) == [4, 4]
    assert result.message[0] == "interrupted by KeyboardInterrupt"
    for i, ic in enumerate(starts(2)):
        traj = nhphys.simulate(RATTLEBACK, 4 * DT, DT, backend=backend, **ic)
        for key, value in result.fields.items():
            assert np.array_equal(value[i, :5], traj[key]), key
            assert np.isnan(value[i, 5:]).all()


# -- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("systems, ics, error, match", [
    (RATTLEBACK, [], ValueError, "at least one run"),
    ([RATTLEBACK] * 2, [{}] * 3, ValueError, "2 systems for 3"),
    (RATTLEBACK, {"omega": [0, 0, 1]}, TypeError, "list of N dicts"),
    (RATTLEBACK, [{}, [0, 0, 1]], TypeError, r"initial_conditions\[1\]"),
    (RATTLEBACK, [{}, {"omgea": [0, 0, 1]}], TypeError, "Run 1: Unexpected.*omgea"),
    (RATTLEBACK, [{"omega": [0, 0, np.nan]}], ValueError, "Run 0.*omega"),
])
def test_bad_input_is_refused(systems, ics, error, match):
    with pytest.raises(error, match=match):
        run_batch(systems, ics, 0.01, DT)


@pytest.mark.parametrize("kw, match", [
    ({"threads": 0}, "threads"), ({"dt": -1.0}, "dt"), ({"save_every": 0}, "save_every"),
    ({"t_final": 0.0105}, "whole number"), ({"backend": "fortran"}, "backend"),
    ({"progress": 3}, "progress"),
])
def test_bad_arguments_are_refused(kw, match):
    args = {"t_final": 0.01, "dt": DT} | kw
    with pytest.raises((ValueError, TypeError), match=match):
        run_batch(RATTLEBACK, starts(2), **args)


def test_ensemble_kernel_checks_its_arrays(backend):
    kernel = _backend.implementation("rolling", backend)
    run = nhphys.integrators.Retraction().start(RATTLEBACK, DT, backend, R0=np.eye(3))
    n = 2
    state = {name: np.ascontiguousarray(np.stack([getattr(run, name)] * n))
             for name in ("A", "a", "Pi", "p", "s", "n", "F", "xi", "z", "clock", "history")}
    chart = np.zeros(n, dtype=np.intp)
    filled = np.zeros(n, dtype=np.intp)
    mass = np.ones(n)
    inertia = np.stack([run.inertia] * n)
    out = np.empty((n, 1, FRAME_SIZE))
    info = np.zeros((n + 1, 3), dtype=np.intp)  # one row too many
    with pytest.raises(ValueError, match="`info` of shape"):
        kernel.rolling_ensemble(
            run.shape, run.ground, run.motion, run.forces, mass, inertia, inertia,
            9.81, run.up, DT, run.substeps, 1, 1, 0, 1e-12, 30, state["A"], state["a"],
            state["Pi"], state["p"], state["s"], state["n"], state["F"], state["xi"], chart,
            state["z"], state["clock"], out, info, run.options, state["history"], filled, 1)


def test_ensemble_of_a_python_ground(backend):
    """The kernel refuses a ground of Python callables (its error flag would be shared by the
    threads); the twin, a plain loop, steps it like its rolling_run."""
    kernel = _backend.implementation("rolling", backend)
    run = nhphys.integrators.Retraction().start(RollingBody(BALL, bowl()), DT, backend,
                                                omega0=[0.0, 1.0, 0.0])
    n = 2
    state = {name: np.ascontiguousarray(np.stack([getattr(run, name)] * n))
             for name in ("A", "a", "Pi", "p", "s", "n", "F", "xi", "z", "clock", "history")}
    arrays = (np.ones(n), np.stack([run.inertia] * n), np.stack([run.inertia_inv] * n),
              9.81, run.up, DT, run.substeps, 2, 1, 0, 1e-12, 30, state["A"], state["a"],
              state["Pi"], state["p"], state["s"], state["n"], state["F"], state["xi"],
              np.zeros(n, dtype=np.intp), state["z"], state["clock"],
              np.empty((n, 2, FRAME_SIZE)), np.zeros((n, 3), dtype=np.intp), run.options,
              state["history"], np.zeros(n, dtype=np.intp), 2)
    if backend == "cython":
        with pytest.raises(ValueError, match="calls back into Python"):
            kernel.rolling_ensemble(run.shape, run.ground, run.motion, run.forces, *arrays)
    else:
        assert kernel.rolling_ensemble(run.shape, run.ground, run.motion, run.forces,
                                       *arrays) == 0
        assert np.array_equal(state["clock"][:, 0], [2 * DT, 2 * DT])
