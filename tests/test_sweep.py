"""nhphys.sweep: batches of ensembles on a Dask cluster, streamed to Zarr, continued after a stop.

One LocalCluster of 2 worker processes (1 thread each) serves the whole module: starting one
costs seconds. The builds below are sent to the workers by value (cloudpickle), since the
workers cannot import this test module.
"""

import functools
import os
import signal
import sys
import time

import numpy as np
import pytest

import nhphys
from nhphys.systems import Suslov

xr = pytest.importorskip("xarray", reason="nhphys.sweep needs the `ensemble` extra")
distributed = pytest.importorskip("dask.distributed", reason="nhphys.sweep needs Dask")
zarr = pytest.importorskip("zarr", reason="nhphys.sweep needs Zarr")
cloudpickle = pytest.importorskip("cloudpickle")
cloudpickle.register_pickle_by_value(sys.modules[__name__])

T_FINAL, DT = 0.05, 0.01  # 5 steps: the twins stay fast
GRID = {"i2": [2.0, 4.0], "spin": [0.5, 1.0, 2000.0]}  # spin 2000: 20 rad a step, it fails


def top(i2, spin):
    """A Suslov top with middle inertia ``i2``, spun about its body x axis at ``spin``."""
    return Suslov([1.0, i2, 3.0], axis=[0, 0, 1]), {"omega": [spin, 0.5, 0.0]}


def logged_top(i2, spin, log):
    """``top``, and a line in the file ``log`` for each run built (workers are processes)."""
    with open(log, "a") as f:
        f.write(f"{i2!r} {spin!r}\n")
    return top(i2, spin)


def calls(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [tuple(float(x) for x in line.split()) for line in f]


def reference(build=top, grid=GRID, backend="auto"):
    """The in-process ensemble of every point of ``grid`` (row-major)."""
    names = list(grid)
    mesh = np.meshgrid(*grid.values(), indexing="ij")
    return nhphys.ensemble(build, T_FINAL, DT, parameters={k: m.ravel() for k, m in
                                                           zip(names, mesh)},
                           backend=backend)


def assert_same_runs(ds, ref):
    """Every variable and coordinate of ``ref`` in ``ds``, bit for bit (strings as strings)."""
    ds = ds.load()
    assert set(ds.data_vars) == set(ref.data_vars)
    for name in list(ref.data_vars) + list(ref.coords):
        a, b = ds[name], ref[name]
        assert a.dims == b.dims, name
        if b.dtype.kind in "UO":
            assert [str(x) for x in a.values.ravel()] == [str(x) for x in b.values.ravel()], name
        else:
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a.values, b.values, err_msg=name)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_a_sweep_on_a_local_cluster_equals_the_in_process_ensemble(backend, client, tmp_path):
    out = tmp_path / "study.zarr"
    ds = nhphys.sweep(top, GRID, T_FINAL, DT, out=out, batch_size=2, client=client,
                      backend=backend, progress=False)
    ref = reference(backend=backend)
    assert_same_runs(ds, ref)
    assert os.listdir(tmp_path) == ["study.zarr"]  # nothing written beside the store
    assert ds.attrs["grid_names"] == ["i2", "spin"] and list(ds.attrs["grid_shape"]) == [2, 3]
    assert ds.attrs["backend"] == backend and ds.attrs["dt"] == DT
    # the failing run (spin 2000) is reported; the others complete
    assert list(ds.status.values) == ["ok", "ok", "far_branch"] * 2
    assert list(ds.steps_done.values) == [5, 5, 0] * 2
    assert np.array_equal(zarr.open_group(out, mode="r")["batch_done"][:], [1, 1, 1])
    # in memory, and through the in-process path: the same dataset
    assert_same_runs(nhphys.sweep(top, GRID, T_FINAL, DT, batch_size=4, client=client,
                                  backend=backend, progress=False), ref)
    assert_same_runs(nhphys.sweep(top, GRID, T_FINAL, DT, batch_size=5, client=False,
                                  backend=backend, progress=False), ref)


def interrupted_in_the_second_batch(out, backend):
    """A sweep of GRID into ``out`` (batches of 2, in this process) stopped by Ctrl-C inside its
    second batch, before that is written; returns its build, which records the runs it builds
    in its list ``built``."""
    def counted(i2, spin):
        counted.built.append((i2, spin))
        return top(i2, spin)

    def stop(done, failed):
        if done > 2:  # inside the second batch (before it is written): Ctrl-C
            raise KeyboardInterrupt

    counted.built = []
    with pytest.raises(KeyboardInterrupt):
        nhphys.sweep(counted, GRID, T_FINAL, DT, out=out, batch_size=2, client=False,
                     backend=backend, progress=stop)
    assert np.array_equal(zarr.open_group(out, mode="r")["batch_done"][:], [1, 0, 0])
    return counted


def test_an_interrupted_sweep_recomputes_nothing_written(backend, tmp_path):
    out = tmp_path / "study.zarr"
    counted = interrupted_in_the_second_batch(out, backend)
    built = counted.built
    built.clear()
    ds = nhphys.sweep(counted, GRID, T_FINAL, DT, out=out, client=False, backend=backend,
                      progress=False)  # the batch size is the store's
    assert built == [(2.0, 2000.0), (4.0, 0.5), (4.0, 1.0), (4.0, 2000.0)]  # runs 2..5 only
    assert_same_runs(ds, reference(backend=backend))
    built.clear()
    nhphys.sweep(counted, GRID, T_FINAL, DT, out=out, client=False, backend=backend,
                 progress=False)
    assert built == []  # a finished store: nothing to compute


def test_an_interrupted_sweep_on_the_cluster_recomputes_nothing_written(backend, client,
                                                                         tmp_path):
    out, log = tmp_path / "study.zarr", str(tmp_path / "calls.txt")
    build = functools.partial(logged_top, log=log)
    grid = {"i2": [2.0, 3.0, 4.0, 5.0], "spin": [0.5, 1.0]}
    finished = []

    def stop(done, failed):
        finished.append(set(np.flatnonzero(zarr.open_group(out, mode="r")["batch_done"][:])))
        raise KeyboardInterrupt  # at the first batch written

    with pytest.raises(KeyboardInterrupt):
        nhphys.sweep(build, grid, T_FINAL, DT, out=out, batch_size=2, client=client,
                     backend=backend, progress=stop)
    written = set(np.flatnonzero(zarr.open_group(out, mode="r")["batch_done"][:]))
    assert written == finished[0] and len(written) == 1
    before = calls(log)
    os.remove(log)
    ds = nhphys.sweep(build, grid, T_FINAL, DT, out=out, client=client, backend=backend,
                      progress=False)
    points = [(a, b) for a in grid["i2"] for b in grid["spin"]]
    again = calls(log)
    (b,) = written
    assert not set(points[2 * b:2 * b + 2]) & set(again)  # the written batch: not recomputed
    assert set(again) | set(points[2 * b:2 * b + 2]) == set(points)
    assert set(points[2 * b:2 * b + 2]) <= set(before)
    assert_same_runs(ds, reference(grid=grid, backend=backend))
    assert client.status == "running"  # a given client is left open


def test_a_store_of_another_sweep_or_an_unrelated_path_is_never_written(backend, tmp_path):
    out = tmp_path / "study.zarr"
    nhphys.sweep(top, GRID, T_FINAL, DT, out=out, batch_size=2, client=False, backend=backend,
                 progress=False)
    listing = sorted(p.relative_to(out) for p in out.rglob("*"))
    for change, message in [
            ({"dt": 0.005}, "its dt is 0.01, this sweep's is 0.005"),
            ({"t_final": 0.1}, "its t_final is 0.05, this sweep's is 0.1"),
            ({"integrator": "cayley"}, "its integrator is \"Retraction\\(map='exp'"),
            ({"parameters": {"i2": [2.0, 4.0], "spin": [0.5, 1.0, 3.0]}}, "its parameters"),
            ({"batch_size": 3}, "its batch_size is 2, this sweep's is 3"),
            ({"omega": [1.0, 0.0, 0.0]}, "its fixed is {}")]:
        kwargs = {"t_final": T_FINAL, "dt": DT, "parameters": GRID, **change}
        with pytest.raises(ValueError, match=f"holds another sweep: {message}"):
            nhphys.sweep(top, client=False, out=out, backend=backend, progress=False,
                         **kwargs)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == listing
    # a file, a folder of other things, a Zarr store of something else: refused, untouched
    (tmp_path / "notes.txt").write_text("keep me")
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "a.jpg").write_bytes(b"\xff\xd8")
    xr.Dataset({"x": ("n", np.arange(3))}).to_zarr(tmp_path / "other.zarr", consolidated=False)
    for name, message in [("notes.txt", "it is a file"), ("photos", "not a Zarr store"),
                          ("other.zarr", "nhphys.sweep did not write")]:
        with pytest.raises(ValueError, match=message):
            nhphys.sweep(top, GRID, T_FINAL, DT, out=tmp_path / name, client=False,
                         backend=backend, progress=False)
    assert (tmp_path / "notes.txt").read_text() == "keep me"
    assert os.listdir(tmp_path / "photos") == ["a.jpg"]
    assert xr.open_zarr(tmp_path / "other.zarr", consolidated=False).x.values.tolist() == [0, 1, 2]
    # an empty folder is used
    (tmp_path / "empty.zarr").mkdir()
    ds = nhphys.sweep(top, GRID, T_FINAL, DT, out=tmp_path / "empty.zarr", client=False,
                      backend=backend, progress=False)
    assert list(ds.status.values) == ["ok", "ok", "far_branch"] * 2


def middle(i2):
    """A Suslov top of middle inertia ``i2`` (its initial conditions given to the sweep)."""
    return Suslov([1.0, i2, 3.0], axis=[0, 0, 1])


def test_fixed_initial_conditions_are_shared_by_every_run(backend, client):
    ds = nhphys.sweep(middle, [{"i2": 2.0}, {"i2": 4.0}, {"i2": 5.0}], T_FINAL, DT,
                      batch_size=2, client=client, backend=backend, progress=False,
                      omega=[1.0, 0.5, 0.0])
    ref = nhphys.ensemble(middle, T_FINAL, DT, parameters={"i2": [2.0, 4.0, 5.0]},
                          backend=backend, omega=np.tile([1.0, 0.5, 0.0], (3, 1)))
    assert_same_runs(ds, ref)
    assert ds.initial_omega.dims == ("run", "i")


def test_bad_sweep_arguments_are_refused():
    with pytest.raises(ValueError, match="batch_size"):
        nhphys.sweep(top, GRID, T_FINAL, DT, batch_size=0, client=False)
    with pytest.raises(ValueError, match="grid of `spin`"):
        nhphys.sweep(top, {"i2": [2.0], "spin": []}, T_FINAL, DT, client=False)
    with pytest.raises(ValueError, match="point 1 names"):
        nhphys.sweep(top, [{"i2": 2.0, "spin": 1.0}, {"i2": 2.0}], T_FINAL, DT, client=False)
    with pytest.raises(TypeError, match="does not take the parameters"):
        nhphys.sweep(top, {"mass": [1.0]}, T_FINAL, DT, client=False)
    with pytest.raises(TypeError, match="`build`"):
        nhphys.sweep(Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1]), GRID, T_FINAL, DT, client=False)
    with pytest.raises(TypeError, match="`client`"):
        nhphys.sweep(top, GRID, T_FINAL, DT, client=4)
    with pytest.raises(ValueError, match=r"raised for run 2 \(i2=-1\.0, spin=0\.5\)"):
        nhphys.sweep(top, {"i2": [2.0, -1.0], "spin": [0.5, 1.0]}, T_FINAL, DT, batch_size=1,
                     client=False)  # runs are numbered in the study, not in their batch
    points = [{"i2": 2.0, "spin": 1.0}, {"i2": 4.0, "spin": 0.5}]
    ds = nhphys.sweep(top, points, T_FINAL, DT, client=False, progress=False)
    assert ds.i2.values.tolist() == [2.0, 4.0] and "grid_shape" not in ds.attrs


def killer(spin, log, marker, victim):
    """``top`` with i2 = 2; the run of ``victim`` kills its worker process (SIGKILL), once."""
    with open(log, "a") as f:
        f.write(f"2.0 {spin!r}\n")
    if spin == victim:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            fd = None
        if fd is not None:
            time.sleep(1.0)  # the batches finished meanwhile are written by then
            os.write(fd, repr(time.time()).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
    return top(2.0, spin)


def test_killing_a_worker_mid_sweep_loses_no_finished_batch(backend, client, tmp_path):
    out, log, marker = tmp_path / "study.zarr", str(tmp_path / "calls.txt"), tmp_path / "kill"
    spins = [0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25]
    build = functools.partial(killer, log=log, marker=str(marker), victim=spins[-1])
    finished = []  # (time, batches marked finished in the store then)

    def watch(done, failed):
        index = zarr.open_group(out, mode="r")["batch_done"][:]
        finished.append((time.time(), set(np.flatnonzero(index).tolist())))

    ds = nhphys.sweep(build, {"spin": spins}, T_FINAL, DT, out=out, batch_size=2,
                      client=client, backend=backend, progress=watch)
    killed_at = float(marker.read_text())
    before = set().union(*(b for t, b in finished if t < killed_at))
    assert before and 3 not in before  # the kill fell mid-sweep, after some batches
    count = {s: [c[1] for c in calls(log)].count(s) for s in spins}
    for b in before:  # no finished batch was computed again
        assert count[spins[2 * b]] == count[spins[2 * b + 1]] == 1
    assert count[spins[-1]] == 2  # the killed batch was computed again, on a live worker
    ref = nhphys.ensemble(Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1]), T_FINAL, DT,
                          backend=backend, omega=[[s, 0.5, 0.0] for s in spins])
    for name in ref.data_vars:
        if ref[name].dtype.kind == "U":
            assert [str(x) for x in ds[name].values] == list(ref[name].values)
        else:
            np.testing.assert_array_equal(ds[name].values, ref[name].values, err_msg=name)
    assert list(ds.status.values) == ["ok"] * 8


def test_one_bar_for_the_whole_study_counts_runs_done_and_failed(backend, tmp_path, capsys):
    out = tmp_path / "study.zarr"

    def stop(done, failed):
        # in the second batch, the first written; both runs of a batch may finish before
        # the first count (they step on threads), so the count can go from 2 straight to 4
        if done > 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nhphys.sweep(top, GRID, T_FINAL, DT, out=out, batch_size=2, client=False,
                     backend=backend, progress=stop)
    capsys.readouterr()
    nhphys.sweep(top, GRID, T_FINAL, DT, out=out, client=False, backend=backend,
                 progress=True)
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()
    assert "nhphys sweep" in bar[0] and " 2/6 " in bar[0]  # starts at the runs written
    assert " 6/6 " in bar[-1] and "failed=2" in bar[-1]


DRIVER = """
import sys, time
import numpy as np
import nhphys
from nhphys.systems import Suslov


def build(spin):
    with open(sys.argv[2], "a") as f:
        f.write(f"2.0 {spin!r}\\n")
    time.sleep(0.03)  # slow enough to be killed in the middle
    return Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1]), {"omega": [spin, 0.5, 0.0]}


if __name__ == "__main__":
    nhphys.sweep(build, {"spin": np.linspace(0.5, 2.0, 24)}, 0.05, 0.01, out=sys.argv[1],
                 batch_size=3, client=False, progress=False, backend=sys.argv[3])
"""


def test_a_killed_driver_loses_no_finished_batch_and_the_rerun_computes_the_rest(backend,
                                                                                tmp_path):
    import subprocess

    script, out = tmp_path / "driver.py", tmp_path / "study.zarr"
    script.write_text(DRIVER)
    first, second = str(tmp_path / "first.txt"), str(tmp_path / "second.txt")
    proc = subprocess.Popen([sys.executable, str(script), str(out), first, backend])
    deadline = time.time() + 60
    written = set()
    try:
        while len(written) < 2 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
            try:
                written = set(np.flatnonzero(zarr.open_group(out, mode="r")["batch_done"][:]))
            except (OSError, ValueError, LookupError):  # the store is not there yet
                continue
    finally:
        proc.kill()  # SIGKILL: no cleanup of any kind
        proc.wait()
    written = set(np.flatnonzero(zarr.open_group(out, mode="r")["batch_done"][:]))
    assert 2 <= len(written) < 8, "killed too late: the test proves nothing"
    subprocess.run([sys.executable, str(script), str(out), second, backend], check=True)
    spins = np.linspace(0.5, 2.0, 24)
    done_before = {spins[3 * b + k] for b in written for k in range(3)}
    again = {s for _, s in calls(second)}
    assert not again & done_before  # nothing written is computed again
    assert again | done_before == set(spins)
    ds = xr.open_zarr(out, consolidated=False)
    assert ds.batch_done.values.tolist() == [1] * 8
    ref = nhphys.ensemble(Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1]), 0.05, 0.01, backend=backend,
                          omega=[[s, 0.5, 0.0] for s in spins])
    for name in ("R", "omega", "energy", "steps_done"):
        np.testing.assert_array_equal(ds[name].values, ref[name].values, err_msg=name)


def test_the_own_cluster_shows_the_batches_on_its_dashboard(backend):
    # with bokeh (in the `ensemble` extra) the sweep's own LocalCluster serves Dask's
    # dashboard, whose progress page groups the sweep's tasks under the prefix "nhphys-batch"
    import urllib.request

    pytest.importorskip("bokeh", reason="Dask's dashboard needs bokeh (the `ensemble` extra)")
    from nhphys.sweep import local_cluster

    cluster, dashboard = local_cluster()
    try:
        assert dashboard
        with distributed.Client(cluster) as client:
            ds = nhphys.sweep(top, GRID, T_FINAL, DT, batch_size=2, client=client,
                              backend=backend, progress=False)
            assert list(ds.status.values) == ["ok", "ok", "far_branch"] * 2
            prefixes = client.run_on_scheduler(
                lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
            assert "nhphys-batch" in prefixes
            page = client.dashboard_link.replace("/status", "/individual-progress")
            with urllib.request.urlopen(page, timeout=30) as response:
                assert response.status == 200
                assert b"bokeh" in response.read().lower()
    finally:
        cluster.close()


def test_a_store_being_written_by_another_sweep_is_refused(backend, tmp_path):
    # another process holds the store's lock (as a sweep writing it does): a second sweep on
    # the same store is refused before it computes or writes anything, and continues the store
    # once the holder is gone (its lock goes with it, even killed)
    import subprocess

    pytest.importorskip("fcntl", reason="the store's lock is an flock (not on Windows)")
    out = tmp_path / "study.zarr"
    counted = interrupted_in_the_second_batch(out, backend)  # batch 0 written
    built = counted.built
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); "
         "fcntl.flock(f, fcntl.LOCK_EX); f.truncate(0); f.write('pid 4242 on elsewhere'); "
         "f.flush(); print('held', flush=True); time.sleep(120)",
         str(out / ".nhphys-sweep.lock")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        built.clear()
        with pytest.raises(ValueError, match="being written by another sweep "
                                             r"\(pid 4242 on elsewhere\)"):
            nhphys.sweep(counted, GRID, T_FINAL, DT, out=out, client=False, backend=backend,
                         progress=False)
        assert built == []
        assert np.array_equal(zarr.open_group(out, mode="r")["batch_done"][:], [1, 0, 0])
    finally:
        holder.kill()
        holder.wait()
    ds = nhphys.sweep(counted, GRID, T_FINAL, DT, out=out, client=False, backend=backend,
                      progress=False)
    assert built == [(2.0, 2000.0), (4.0, 0.5), (4.0, 1.0), (4.0, 2000.0)]  # runs 2..5 only
    assert_same_runs(ds, reference(backend=backend))
    assert not (out / ".nhphys-sweep.lock").exists()  # the lock file goes with the sweep
