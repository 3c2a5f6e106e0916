"""Exports read back with independent readers: PyVista's PVD reader, pxr.Usd, the csv module."""

import os
import sys

import numpy as np
import pytest

import nhphys
from nhphys import Scene, SuslovContact, export
from nhphys.surfaces import Ellipsoid, Plane


@pytest.fixture(scope="module")
def run():
    scene = Scene(name="tops")
    scene.add_ground(Plane(extent=1.0))
    inertia = [[1, 0, 0.2], [0, 2, 0.3], [0.2, 0.3, 3]]
    for i, omega in enumerate(([2.0, 1.0, 0.0], [0.0, -1.5, 0.5])):
        body = nhphys.RigidBody(1.0, inertia, Ellipsoid([0.4, 0.25, 0.15]), name=f"top {i}")
        axis = [0, 0, 1] if i == 0 else [1, 0, 0]
        scene.add_body(body, SuslovContact(axis, pivot=[i, 0.5 * i, 0.6]), omega=omega, resolution=12)
    return scene, scene.simulate(1.0, 0.01, save_every=10)


def test_pvd_meshes_reproduce_the_poses(run, tmp_path):
    import pyvista as pv

    scene, traj = run
    path = export.to_pvd(traj, str(tmp_path / "run.pvd"))
    reader = pv.get_reader(path)
    assert np.allclose(reader.time_values, traj.t, rtol=0, atol=1e-15)
    display = scene.display()
    for i in (0, 4, len(traj) - 1):
        reader.set_active_time_value(traj.t[i])
        blocks = reader.read()
        assert blocks.n_blocks == 3  # two bodies and the ground
        for b, body in enumerate(display.bodies):
            mesh = blocks[b]
            expected = body["points"] @ traj.R[i, b].T + traj.position[i, b]
            assert mesh.points.dtype == np.float64
            assert np.abs(mesh.points - expected).max() < 1e-12
        assert np.allclose(blocks[2].points, display.grounds[0]["points"])
    names = sorted(os.listdir(tmp_path / "run_files"))
    assert len(names) == 2 * len(traj) + 1 and names[0] == "ground_ground0.vtp"


def test_pvd_transform_series(run, tmp_path):
    import pyvista as pv

    _, traj = run
    export.to_pvd(traj, str(tmp_path / "poses.pvd"), mode="transform")
    reader = pv.get_reader(str(tmp_path / "poses.pvd"))
    for i in (0, len(traj) - 1):
        reader.set_active_time_value(traj.t[i])
        cloud = reader.read()[0]
        assert np.abs(cloud.points - traj.position[i]).max() < 1e-12
        R = cloud.point_data["rotation"].reshape(-1, 3, 3)
        assert np.abs(R - traj.R[i]).max() < 1e-12
        q = cloud.point_data["quaternion"]
        assert np.allclose(np.abs(q), np.abs(nhphys.lie.so3.to_quaternion(traj.R[i])))


def test_pvd_rewrite_replaces_the_series_and_bad_input(run, tmp_path):
    _, traj = run
    export.to_pvd(traj, str(tmp_path / "run.pvd"), fps=5)
    export.to_pvd(traj, str(tmp_path / "run.pvd"), mode="transform")
    assert sorted(os.listdir(tmp_path)) == ["run.pvd", "run_files"]
    assert all(n.startswith("poses_") for n in os.listdir(tmp_path / "run_files"))
    with pytest.raises(ValueError, match="end with .pvd"):
        export.to_pvd(traj, str(tmp_path / "run.vtp"))
    with pytest.raises(ValueError, match="one of \\('mesh', 'transform'\\)"):
        export.to_pvd(traj, str(tmp_path / "x.pvd"), mode="glyph")


@pytest.mark.parametrize("suffix", [".usda", ".usd"])
def test_usd_time_samples_reproduce_the_poses(run, tmp_path, suffix):
    Usd = pytest.importorskip("pxr.Usd")
    from pxr import UsdGeom

    scene, traj = run
    path = export.to_usd(traj, str(tmp_path / f"run{suffix}"), fps=20)
    frames = traj.resample(20)
    stage = Usd.Stage.Open(path)
    assert stage.GetTimeCodesPerSecond() == 20
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert stage.GetEndTimeCode() == len(frames) - 1
    for b, prim_name in enumerate(("top_0", "top_1")):
        prim = stage.GetPrimAtPath(f"/World/Bodies/{prim_name}")
        xform = UsdGeom.Xformable(prim)
        op = xform.GetOrderedXformOps()[0]
        assert len(op.GetTimeSamples()) == len(frames)
        for i in range(len(frames)):
            M = np.array(xform.GetLocalTransformation(Usd.TimeCode(i)))
            assert np.abs(M[:3, :3].T - frames.R[i, b]).max() < 1e-6
            assert np.abs(M[3, :3] - frames.position[i, b]).max() < 1e-6
        mesh = UsdGeom.Mesh(stage.GetPrimAtPath(f"/World/Bodies/{prim_name}/mesh"))
        points = np.array(mesh.GetPointsAttr().Get())
        assert np.allclose(points, scene.display().bodies[b]["points"], atol=1e-6)
        # a point of the mesh, moved by the time-sampled transform, lands where the body is
        world = np.append(points[0], 1.0) @ np.array(
            xform.GetLocalTransformation(Usd.TimeCode(3)))
        assert np.allclose(world[:3], frames.R[3, b] @ points[0] + frames.position[3, b],
                           atol=1e-6)
    assert stage.GetPrimAtPath("/World/Grounds/ground0").IsValid()
    assert [f for f in os.listdir(tmp_path) if ".tmp" in f] == []


def test_usd_without_usd_core_says_what_to_install(run, tmp_path, monkeypatch):
    _, traj = run
    monkeypatch.setitem(sys.modules, "pxr", None)
    with pytest.raises(ImportError, match=r'pip install "nhphys\[usd\]"'):
        export.to_usd(traj, str(tmp_path / "run.usda"))
    assert os.listdir(tmp_path) == []


def test_npz_and_csv_exports(run, tmp_path):
    _, traj = run
    back = nhphys.Trajectory.load(export.to_npz(traj, tmp_path / "run.npz"))
    assert all(np.array_equal(back[k], traj[k]) for k in traj.fields)
    export.to_csv(traj, tmp_path / "run.csv")
    _, names, position, _ = nhphys.Trajectory.read_csv(tmp_path / "run.csv")
    assert names == ["top 0", "top 1"] and np.array_equal(position, traj.position)
    assert len(open(tmp_path / "run.csv").read().splitlines()) == 1 + 2 * len(traj)
