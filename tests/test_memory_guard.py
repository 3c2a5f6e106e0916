"""The memory guard: ``simulate`` and ``Scene.simulate`` estimate the memory of the frames a run
will return before any step, and refuse a run above the limit (``max_run_bytes``, else
``$NHPHYS_MAX_RUN_BYTES``, else 2 GiB) with the estimate and what lowers it."""

import importlib
import os
import time

import numpy as np
import pytest

import nhphys
from nhphys import SuslovContact
from nhphys.surfaces import Ellipsoid, Sphere
from nhphys.systems import RollingBody, Suslov

driver = importlib.import_module("nhphys.simulate")
TOP = Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1])
OMEGA = [1.0, 0.5, 0.0]


def nbytes(traj):
    return sum(traj[k].nbytes for k in traj.fields)


def tops(n):
    scene = nhphys.Scene(name="tops")
    for i in range(n):
        scene.add_body(nhphys.RigidBody(1.0, [1.0, 2.0, 3.0], Ellipsoid([0.5, 0.35, 0.2])),
                       SuslovContact([0, 0, 1], pivot=[i, 0, 1]), omega=OMEGA)
    return scene


def test_a_long_run_keeping_every_step_is_refused_before_any_step(backend, tmp_path):
    """The issue's case: save_every=1 and t_final=1e6: 10^8 + 1 frames of t, R, omega,
    momentum, energy, work and the constraint residual, 19 float64 numbers (152 bytes) each."""
    began = time.perf_counter()
    with pytest.raises(ValueError) as info:
        nhphys.simulate(TOP, 1e6, 0.01, backend=backend, out=tmp_path / "run.npz",
                        omega=OMEGA)
    assert time.perf_counter() - began < 2.0
    message = str(info.value)
    assert "100,000,001 frames of 152 bytes" in message and "about 14.2 GiB" in message
    assert "limit of 2.0 GiB" in message and "save_every=8" in message  # 10^8 / 8 * 152 < 2 GiB
    assert "max_run_bytes" in message and "NHPHYS_MAX_RUN_BYTES" in message
    assert os.listdir(tmp_path) == []  # nothing written


@pytest.mark.parametrize("save_every, steps", [(1, 100), (7, 100), (100, 100), (3, 1)])
def test_the_estimate_is_the_memory_of_the_frames_returned(backend, save_every, steps):
    run = nhphys.integrators.Retraction().start(TOP, 0.01, backend, omega0=OMEGA)
    first = {"t": np.zeros(1), **run.initial()}
    estimate = driver.check_run_memory(first, steps, save_every, 2**40)
    traj = nhphys.simulate(TOP, steps * 0.01, 0.01, backend=backend, save_every=save_every,
                           omega=OMEGA)
    assert estimate == nbytes(traj)


def test_the_estimate_of_a_scene_counts_every_body(backend):
    traj = tops(3).simulate(0.5, 0.01, backend=backend, save_every=2)
    limit = nbytes(traj)
    assert traj.R.shape[1] == 3
    tops(3).simulate(0.5, 0.01, backend=backend, save_every=2, max_run_bytes=limit)
    with pytest.raises(ValueError, match=f"26 frames of {limit // 26:,} bytes"):
        tops(3).simulate(0.5, 0.01, backend=backend, save_every=2, max_run_bytes=limit - 1)


def test_the_limit_is_an_argument_or_an_environment_variable(backend, monkeypatch):
    system = RollingBody(nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1)),
                         Sphere(1.0).as_ground("inside"))
    ic = {"omega": [1.0, 2.0, 0.5], "position": [0.2, 0, -1]}
    size = nbytes(nhphys.simulate(system, 0.2, 0.01, backend=backend, **ic))
    nhphys.simulate(system, 0.2, 0.01, backend=backend, max_run_bytes=size, **ic)
    with pytest.raises(ValueError, match="more than the limit"):
        nhphys.simulate(system, 0.2, 0.01, backend=backend, max_run_bytes=size - 1, **ic)
    monkeypatch.setenv("NHPHYS_MAX_RUN_BYTES", str(size - 1))
    with pytest.raises(ValueError, match="more than the limit"):
        nhphys.simulate(system, 0.2, 0.01, backend=backend, **ic)
    nhphys.simulate(system, 0.2, 0.01, backend=backend, max_run_bytes=size, **ic)  # wins
    monkeypatch.setenv("NHPHYS_MAX_RUN_BYTES", "lots")
    with pytest.raises(ValueError, match=r"\$NHPHYS_MAX_RUN_BYTES to be a number of bytes"):
        nhphys.simulate(system, 0.2, 0.01, backend=backend, **ic)


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "1000"])
def test_bad_limits_are_refused(bad):
    with pytest.raises(ValueError, match="`max_run_bytes`"):
        nhphys.simulate(TOP, 0.1, 0.01, max_run_bytes=bad, omega=OMEGA)
    with pytest.raises(ValueError, match="`max_run_bytes`"):
        tops(1).simulate(0.1, 0.01, max_run_bytes=bad)


def test_the_suggested_save_every_fits(backend):
    limit = 20_000
    with pytest.raises(ValueError) as info:
        nhphys.simulate(TOP, 100.0, 0.01, backend=backend, max_run_bytes=limit, omega=OMEGA)
    suggest = int(str(info.value).split("save_every=")[1].split(" ")[0].rstrip(")"))
    traj = nhphys.simulate(TOP, 100.0, 0.01, backend=backend, save_every=suggest,
                           max_run_bytes=limit, omega=OMEGA)
    assert nbytes(traj) <= limit
    with pytest.raises(ValueError, match="more than the limit"):  # and it is the smallest
        nhphys.simulate(TOP, 100.0, 0.01, backend=backend, save_every=suggest - 1,
                        max_run_bytes=limit, omega=OMEGA)


def test_nhphys_run_refuses_a_run_too_large_as_a_usage_error(tmp_path, capsys, monkeypatch):
    from nhphys.cli import EXIT_USAGE, main

    monkeypatch.chdir(tmp_path)
    status = main(["run", "suslov_top", "--t-final", "1e6", "--save-every", "1",
                   "--no-progress", "--out", "run.npz"])
    assert status == EXIT_USAGE
    assert "more than the limit of 2.0 GiB" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []  # nothing written
