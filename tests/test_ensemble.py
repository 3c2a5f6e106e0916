"""nhphys.ensemble: N runs in one call, as an xarray Dataset equal to the runs made one by one."""

import functools
import subprocess
import sys

import numpy as np
import pytest

import nhphys
from nhphys.lie import so3
from nhphys.shapes import Disk
from nhphys.surfaces import Plane
from nhphys.systems import KnifeEdge, RollingBody, Suslov

xr = pytest.importorskip("xarray", reason="nhphys.ensemble needs the `ensemble` extra")

TOP = Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1])
OMEGA = np.array([[1.0, 0.5, 0.0], [0.3, -1.2, 0.0], [2.0, 0.1, 0.0]])
SUSLOV = functools.partial(Suslov, axis=[0, 0, 1])
INERTIA = np.array([[1.0, 2.0, 3.0], [1.5, 2.0, 5.0], [2.0, 1.0, 3.0]])


def disk_on_plane():
    """A thin disk of 1 kg and radius 0.1 m on a plane."""
    return RollingBody(nhphys.RigidBody(1.0, Disk.solid_inertia(1.0, 0.1), Disk(0.1)), Plane())


def upright(lean):
    """A disk standing on its rim, its plane ``lean`` rad from the vertical."""
    return so3.exp([np.pi / 2 - lean, 0.0, 0.0])


def assert_run_equals(ds, i, traj):
    """Run ``i`` of ``ds`` holds ``traj``'s frames bit for bit (NaN after the last)."""
    n = len(traj)
    assert np.array_equal(ds.time.values[:n], traj.t)
    for name in traj.fields:
        if name == "t":
            continue
        got = ds[name].values[i]
        assert got.dtype == traj[name].dtype, name
        assert np.array_equal(got[:n], traj[name]), name
        assert np.isnan(got[n:]).all(), name


def test_a_shared_system_equals_the_runs_one_by_one(backend):
    ds = nhphys.ensemble(TOP, 0.1, 0.01, "cayley", backend=backend, omega=OMEGA)
    assert ds.sizes == {"run": 3, "time": 11, "i": 3, "j": 3}
    assert ds.R.dims == ("run", "time", "i", "j") and ds.omega.dims == ("run", "time", "i")
    assert ds.energy.dims == ("run", "time")
    for i, omega in enumerate(OMEGA):
        traj = nhphys.simulate(TOP, 0.1, 0.01, "cayley", backend=backend, omega=omega)
        assert_run_equals(ds, i, traj)
    assert list(ds.status.values) == ["ok"] * 3
    assert np.isnan(ds.fail_time.values).all() and list(ds.message.values) == [""] * 3
    assert list(ds.steps_done.values) == [10] * 3
    assert ds.attrs["backend"] == backend
    assert ds.attrs["integrator"] == repr(nhphys.integrators.Retraction("cayley"))
    assert ds.attrs["dt"] == 0.01 and ds.attrs["nhphys_version"] == nhphys.__version__
    assert np.array_equal(ds.initial_omega.values, OMEGA)
    assert ds.initial_omega.dims == ("run", "i")


def test_parameters_build_each_runs_system(backend):
    ds = nhphys.ensemble(SUSLOV, 0.1, 0.01, parameters={"inertia": INERTIA},
                         backend=backend, save_every=3, omega=OMEGA)
    assert np.array_equal(ds.time.values, [0.0, 0.03, 0.06, 0.09, 0.1])
    for i in range(3):
        traj = nhphys.simulate(SUSLOV(inertia=INERTIA[i]), 0.1, 0.01, backend=backend,
                               save_every=3, omega=OMEGA[i])
        assert_run_equals(ds, i, traj)
    assert np.array_equal(ds.inertia.values, INERTIA) and ds.inertia.dims == ("run", "i")
    assert ds.attrs["system"] == ("factory functools.partial(<class "
                                  "'nhphys.systems.suslov.Suslov'>, axis=[0, 0, 1])")


def test_scalar_parameters_and_conditions_are_coordinates_along_run(backend):
    """A factory returning (system, initial conditions); scalars as Python numbers."""
    seen = []

    def sleigh(mass, offset):
        seen.append((type(mass), type(offset)))
        return KnifeEdge(mass, 0.1, offset), {"velocity": 1.0}

    heading = np.array([0.0, 0.5])
    ds = nhphys.ensemble(sleigh, 0.05, 0.01, "newmark", backend=backend,
                         parameters={"mass": [1.0, 2.0], "offset": [0.1, 0.2]},
                         heading=heading, turning_rate=[0.3, -0.3])
    assert seen == [(float, float)] * 2
    assert ds.mass.dims == ("run",) and np.array_equal(ds.initial_heading.values, heading)
    assert ds.pose.dims == ("run", "time", "i")
    for i in range(2):
        traj = nhphys.simulate(KnifeEdge([1.0, 2.0][i], 0.1, [0.1, 0.2][i]), 0.05, 0.01,
                               "newmark", backend=backend, heading=heading[i],
                               turning_rate=[0.3, -0.3][i], velocity=1.0)
        assert_run_equals(ds, i, traj)


def test_a_failing_run_is_reported_while_the_others_complete(backend):
    """A disk leaning 1.2 rad falls flat at step 98 (a contact event); the others roll on."""
    lean = np.array([0.1, 1.2, 0.2])
    system = disk_on_plane()
    done = []
    ds = nhphys.ensemble(system, 0.12, 1e-3, backend=backend,
                         orientation=[upright(a) for a in lean], omega=np.zeros((3, 3)),
                         progress=lambda *counts: done.append(counts))
    # the engine reports as runs finish (all three stepped together here): counts only grow
    assert done[-1] == (3, 1)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(done, done[1:]))
    assert list(ds.status.values) == ["ok", "flat", "ok"]
    assert list(ds.steps_done.values) == [120, 98, 120]
    assert ds.fail_time.values[1] == pytest.approx(0.098) and np.isnan(ds.fail_time.values[[0, 2]]).all()
    assert "fell flat" in ds.message.values[1]
    with pytest.raises(nhphys.ContactEvent) as info:
        nhphys.simulate(system, 0.12, 1e-3, backend=backend, orientation=upright(1.2))
    assert ds.message.values[1] == str(info.value)
    assert_run_equals(ds, 1, info.value.trajectory)  # the frames up to the event, then NaN
    for i in (0, 2):
        assert_run_equals(ds, i, nhphys.simulate(system, 0.12, 1e-3, backend=backend,
                                                 orientation=upright(lean[i])))


def test_a_newton_failure_is_named_by_its_status(backend):
    omega = np.array([[1.0, 0.5, 0.0], [2000.0, 0.0, 0.0]])  # 20 rad per step: too large
    ds = nhphys.ensemble(TOP, 0.05, 0.01, backend=backend, omega=omega)
    assert list(ds.status.values) == ["ok", "far_branch"]
    assert ds.fail_time.values[1] == 0.0 and ds.steps_done.values[1] == 0
    assert np.array_equal(ds.omega.values[1, 0], omega[1]) and np.isnan(ds.omega.values[1, 1:]).all()


def test_bad_input_is_refused_before_any_step():
    def never(**params):
        raise AssertionError("no run may start")

    with pytest.raises(ValueError, match=r"same number of runs.*parameter inertia: 3.*omega: 2"):
        nhphys.ensemble(SUSLOV, 0.1, 0.01, parameters={"inertia": INERTIA}, omega=OMEGA[:2])
    with pytest.raises(ValueError, match="0 runs"):
        nhphys.ensemble(TOP, 0.1, 0.01, omega=np.zeros((0, 3)))
    with pytest.raises(ValueError, match="needs its runs"):
        nhphys.ensemble(TOP, 0.1, 0.01)
    with pytest.raises(ValueError, match="leading batch axis"):
        nhphys.ensemble(TOP, 0.1, 0.01, omega=OMEGA, heading=0.5)
    with pytest.raises(TypeError, match=r"Run 0: .*omgea"):
        nhphys.ensemble(TOP, 0.1, 0.01, omgea=OMEGA)
    # a state that the system refuses when its run starts: named by the engine
    with pytest.raises(ValueError, match=r"Run 2\b.*constraint"):
        nhphys.ensemble(TOP, 0.1, 0.01, omega=[[1.0, 0, 0], [1, 0, 0], [1, 0, 1]])
    with pytest.raises(TypeError, match="not callable"):
        nhphys.ensemble(TOP, 0.1, 0.01, parameters={"mass": [1.0]}, omega=OMEGA[:1])
    with pytest.raises(TypeError, match=r"does not take the parameters \['inertia', 'mas'\]"):
        nhphys.ensemble(SUSLOV, 0.1, 0.01, parameters={"inertia": INERTIA, "mas": [1, 2, 3]},
                        omega=OMEGA)
    with pytest.raises(ValueError, match=r"raised for run 1 \(inertia=\[-1\.5, -2\. *, -5\. *\]\)"
                       r": ValueError: .*positive definite"):
        nhphys.ensemble(SUSLOV, 0.1, 0.01, parameters={"inertia": INERTIA * [[1], [-1], [1]]},
                        omega=OMEGA)
    with pytest.raises(ValueError, match=r"raised for run 0 \(spin=0\.5\): AssertionError"):
        nhphys.ensemble(never, 0.1, 0.01, parameters={"spin": [0.5]})
    with pytest.raises(ValueError, match="dt"):
        nhphys.ensemble(TOP, 0.1, -0.01, omega=OMEGA)


def test_an_ensemble_too_large_for_memory_is_refused(backend, monkeypatch):
    # 3 runs of 11 frames of 18 numbers (R, omega, momentum, energy, work, residual)
    monkeypatch.setenv("NHPHYS_MAX_RUN_BYTES", str(3 * 11 * 18 * 8 - 1))
    with pytest.raises(ValueError, match=r"3 runs of 11 frames of 144 bytes.*nhphys.sweep"):
        nhphys.ensemble(TOP, 0.1, 0.01, backend=backend, omega=OMEGA)
    monkeypatch.setenv("NHPHYS_MAX_RUN_BYTES", str(3 * 11 * 18 * 8))
    assert nhphys.ensemble(TOP, 0.1, 0.01, backend=backend, omega=OMEGA).sizes["run"] == 3


def test_import_nhphys_imports_no_xarray_nor_dask_and_both_spellings_run():
    code = (
        "import sys, numpy as np, nhphys\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('xarray', 'dask', 'distributed', 'zarr')]\n"
        "assert not heavy, heavy\n"
        "import nhphys.ensemble, nhphys.sweep\n"  # binds the modules: they still run
        "top = nhphys.systems.Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1])\n"
        "ds = nhphys.ensemble(top, 0.02, 0.01, omega=np.ones((2, 3)) * [1, 1, 0])\n"
        "assert ds.sizes['run'] == 2\n"
        "from nhphys import ensemble, sweep\n"
        "assert callable(ensemble) and callable(sweep)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
