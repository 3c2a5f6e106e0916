"""Trajectory files and conversions: lossless npz, atomic writes, CSV, resampling, streaming."""

import os

import numpy as np
import pytest

import nhphys
from nhphys import Trajectory
from nhphys.lie import so3
from nhphys.trajectory import TrajectoryWriter, atomic_path


def rotating(n=41, bodies=2):
    """Bodies turning at constant rates about fixed axes while moving in straight lines."""
    t = np.linspace(0.0, 2.0, n)
    rates = np.array([[0.3, -1.2, 0.8], [2.0, 0.5, -0.1]])[:bodies]
    R = so3.exp(t[:, None, None] * rates[None])
    position = np.array([0.1, -0.2, 0.3]) + t[:, None, None] * np.array([[1.0, 0.5, 0.0],
                                                                           [-0.3, 0.0, 0.2]])[:bodies]
    fields = {"t": t, "position": position, "R": R,
              "omega": np.broadcast_to(rates, (n, bodies, 3)).copy(),
              "contact_point": position - [0, 0, 0.3],
              "energy": 1.0 + 1e-9 * np.sin(t)[:, None] * np.ones(bodies),
              "constraint_residual": np.zeros((n, bodies))}
    meta = {"bodies": ["a", "b"][:bodies], "dt": 0.05}
    return Trajectory(fields, meta, {"mesh.points": np.eye(3)}), rates


def no_temporaries(folder):
    return [f for f in os.listdir(folder) if ".tmp" in f or f.startswith(".nhphys")]


def test_npz_round_trip_is_bit_exact_with_meta_and_static(tmp_path):
    traj, _ = rotating()
    path = traj.save(tmp_path / "run")  # suffix added like numpy.savez
    assert path.endswith("run.npz")
    back = Trajectory.load(path)
    assert back.fields == traj.fields
    for name in traj.fields:
        assert back[name].dtype == traj[name].dtype
        assert np.array_equal(back[name], traj[name])  # bit for bit, not approximately
    assert back.meta == traj.meta
    assert np.array_equal(back.static["mesh.points"], np.eye(3))
    assert no_temporaries(tmp_path) == []


def test_save_is_atomic_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    traj, _ = rotating()
    path = traj.save(tmp_path / "run.npz")
    before = open(path, "rb").read()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        Trajectory(traj._fields, {"changed": True}).save(path)
    assert open(path, "rb").read() == before
    assert no_temporaries(tmp_path) == []


def test_atomic_path_gives_files_the_usual_permissions(tmp_path):
    with atomic_path(tmp_path / "x.txt") as tmp:
        open(tmp, "w").write("x")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(tmp_path / "x.txt").st_mode & 0o777 == 0o666 & ~umask


def test_csv_rereads_to_the_same_poses(tmp_path):
    traj, _ = rotating()
    traj.to_csv(tmp_path / "run.csv")
    header = open(tmp_path / "run.csv").readline().strip()
    assert header == "t,body,x,y,z,qw,qx,qy,qz"
    t, names, position, quaternion = Trajectory.read_csv(tmp_path / "run.csv")
    assert names == ["a", "b"]
    assert np.array_equal(t, traj.t)
    assert np.array_equal(position, traj.position)  # 17 significant digits read back exactly
    w, x, y, z = np.moveaxis(quaternion, -1, 0)
    R = np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)
    assert np.abs(R - traj.R).max() < 1e-14
    assert np.all(quaternion[..., 0] >= 0)


def test_resample_follows_geodesics_and_keeps_saved_frames():
    traj, rates = rotating(n=41)
    out = traj.resample(fps=7.0)
    step = 1.0 / 7.0
    assert np.allclose(np.diff(out.t), step)
    assert out.t[-1] <= traj.t[-1] and traj.t[-1] - out.t[-1] < step
    # constant-rate rotations and straight lines are interpolated exactly
    exact = so3.exp(out.t[:, None, None] * rates[None])
    assert np.abs(out.R - exact).max() < 1e-12
    assert np.abs(out.position - (traj.position[0] + out.t[:, None, None]
                                  * (traj.position[1] - traj.position[0]) / 0.05)).max() < 1e-12
    orth = np.swapaxes(out.R, -1, -2) @ out.R - np.eye(3)
    assert np.abs(orth).max() < 1e-14
    same = traj.resample(fps=20.0)  # the saved rate: every frame reproduced as it was
    assert np.array_equal(same.R, traj.R)
    faster = traj.resample(fps=10.0, speed=2.0)
    assert np.allclose(np.diff(faster.t), 0.2)


def test_body_selection_and_poses_of_single_systems():
    traj, _ = rotating()
    b = traj.body("b")
    assert b.R.shape == (41, 3, 3) and np.array_equal(b.R, traj.R[:, 1])
    assert np.array_equal(traj.body(-1).position, b.position)
    with pytest.raises(ValueError, match="one of \\['a', 'b'\\]"):
        traj.body("c")
    suslov = nhphys.simulate(nhphys.systems.Suslov([1, 2, 3], [0, 0, 1]), 0.1, 0.01,
                             omega=[1, 1, 0])
    position, R = suslov.body_poses()
    assert position.shape == (11, 1, 3) and np.all(position == 0)
    assert np.array_equal(R[:, 0], suslov.R)
    planar = Trajectory({"t": np.zeros(2), "pose": np.array([[1.0, 2.0, 0.0],
                                                             [1.0, 2.0, np.pi / 2]])})
    position, R = planar.body_poses()
    assert np.allclose(position[:, 0], [[1, 2, 0], [1, 2, 0]])
    assert np.allclose(R[1, 0] @ [1, 0, 0], [0, 1, 0])


def test_streamed_chunks_are_recovered_from_the_part_folder(tmp_path):
    traj, _ = rotating()
    writer = TrajectoryWriter(tmp_path / "run.npz")
    writer.begin(traj.meta, traj.static)
    fields = {k: traj[k] for k in traj.fields}
    writer.append({k: v[:10] for k, v in fields.items()})
    writer.append({k: v[10:25] for k, v in fields.items()})
    # the process dies here: no finish(); everything appended is on disk
    back = Trajectory.load(tmp_path / "run.npz.part")
    assert len(back) == 25 and back.meta["interrupted"]
    for name in traj.fields:
        assert np.array_equal(back[name], traj[name][:25])
    assert np.array_equal(back.static["mesh.points"], np.eye(3))
    assert not (tmp_path / "run.npz").exists()


def test_simulate_streams_to_out_and_ctrl_c_keeps_everything(tmp_path, monkeypatch):
    import sys

    from nhphys.integrators.retraction import FixedPointRun

    sim = sys.modules["nhphys.simulate"]

    body = nhphys.systems.Suslov([1.0, 2.0, 3.0], [0, 0, 1])
    monkeypatch.setattr(sim, "CHUNK_STEPS", 10)
    original = FixedPointRun.advance
    calls = []

    def interrupted(self, n_steps, save_every):
        calls.append(n_steps)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return original(self, n_steps, save_every)

    monkeypatch.setattr(FixedPointRun, "advance", interrupted)
    with pytest.warns(RuntimeWarning, match="Interrupted"):
        traj = nhphys.simulate(body, 1.0, 0.01, omega=[1, 1, 0], out=tmp_path / "run.npz")
    assert traj.meta["interrupted"] and len(traj) == 31
    on_disk = Trajectory.load(tmp_path / "run.interrupted.npz")
    assert np.array_equal(on_disk.R, traj.R) and on_disk.meta["interrupted"]
    assert not (tmp_path / "run.npz.part").exists()
    assert no_temporaries(tmp_path) == []


def test_simulate_out_is_checked_before_stepping(tmp_path):
    body = nhphys.systems.Suslov([1.0, 2.0, 3.0], [0, 0, 1])
    with pytest.raises(ValueError, match="existing folder"):
        nhphys.simulate(body, 1.0, 0.01, omega=[1, 1, 0], out=tmp_path / "no" / "run.npz")
    with pytest.raises(ValueError, match="file path"):
        nhphys.simulate(body, 1.0, 0.01, omega=[1, 1, 0], out=tmp_path)
