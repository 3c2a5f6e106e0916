"""Scenes: contacts map each system's frames to common body fields; validation; streaming."""

import os
import subprocess
import sys

import numpy as np
import pytest

import nhphys
from nhphys import KnifeEdgeContact, RollingContact, Scene, SuslovContact, Trajectory
from nhphys.scene import SceneDisplay
from nhphys.surfaces import Ellipsoid, Plane, Sphere

INERTIA = [[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]]


def top(name="top", semi=(0.5, 0.35, 0.2)):
    return nhphys.RigidBody(1.0, INERTIA, Ellipsoid(list(semi)), name=name)


def two_tops():
    scene = Scene(name="tops")
    scene.add_ground(Plane(extent=2.0))
    scene.add_body(top("a"), SuslovContact([0, 0, 1], pivot=[0, 0, 1]), omega=[1.0, 0.5, 0.0])
    scene.add_body(top("b"), SuslovContact([1, 0, 0], pivot=[1, 0, 1]), momentum=[0.0, 1.0, 2.0],
                   orientation=[np.cos(0.3), 0.0, np.sin(0.3), 0.0])
    return scene


def test_import_stays_free_of_display_libraries():
    code = ("import sys, nhphys, nhphys.scene, nhphys.viz, nhphys.export, nhphys.cli;"
            "bad = sorted({m.split('.')[0] for m in sys.modules} & "
            "{'pyvista', 'vtk', 'vtkmodules', 'matplotlib', 'pxr', 'imageio'});"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_several_bodies_each_match_their_own_system(backend):
    scene = two_tops()
    traj = scene.simulate(2.0, 0.01, backend=backend)
    assert traj.body_names == ["a", "b"]
    assert traj.R.shape == (201, 2, 3, 3) and traj.position.shape == (201, 2, 3)
    alone = nhphys.simulate(nhphys.systems.Suslov(INERTIA, [1, 0, 0]), 2.0, 0.01,
                            backend=backend, orientation=scene.bodies[1].conditions["orientation"],
                            momentum=[0.0, 1.0, 2.0])
    assert np.array_equal(traj.R[:, 1], alone.R)  # the same computation, bit for bit
    assert np.array_equal(traj.energy[:, 1], alone.energy)
    assert np.all(traj.position[:, 1] == [1, 0, 1]) and np.all(traj.contact_point[:, 0] == [0, 0, 1])
    assert np.allclose(traj.R[0, 1] @ [1, 0, 0], [np.cos(0.6), 0, -np.sin(0.6)])
    assert traj.constraint_residual.max() < 1e-14
    display = SceneDisplay.from_trajectory(traj)
    assert display.body_names == ["a", "b"] and len(display.grounds) == 1
    assert np.allclose(display.bodies[1]["pivot"], [1, 0, 1])


def test_knife_edge_contact_places_the_body_on_its_plane(backend):
    scene = Scene()
    sleigh = nhphys.RigidBody(2.0, [0.1, 0.3, 0.4], Ellipsoid([0.4, 0.15, 0.1]), name="sleigh")
    plane = Plane(extent=3.0)
    scene.add_body(sleigh, KnifeEdgeContact(plane, offset=0.2), position=[0.5, -0.5],
                   heading=0.3, velocity=0.5, turning_rate=1.0)
    traj = scene.simulate(2.0, 0.01, backend=backend)
    alone = nhphys.simulate(nhphys.systems.KnifeEdge(2.0, 0.4, 0.2), 2.0, 0.01, backend=backend,
                            position=[0.5, -0.5], heading=0.3, velocity=0.5, turning_rate=1.0)
    x, y, th = alone.pose.T
    cp = traj.contact_point[:, 0]
    assert np.allclose(cp, np.column_stack([x, y, np.zeros_like(x)]), atol=1e-15)
    com = np.column_stack([x + 0.2 * np.cos(th), y + 0.2 * np.sin(th), np.full_like(x, 0.1)])
    assert np.allclose(traj.position[:, 0], com, atol=1e-14)  # resting on its lowest point
    blade = traj.R[:, 0] @ [1.0, 0.0, 0.0]
    assert np.allclose(blade, np.column_stack([np.cos(th), np.sin(th), np.zeros_like(th)]))
    assert np.allclose(traj.R[:, 0] @ [0, 0, 1.0], [0, 0, 1])
    assert len(scene.grounds) == 1  # the contact's plane was added as a ground


def test_knife_edge_on_an_inclined_plane_stays_on_it(backend):
    normal = np.array([np.sin(0.2), 0.0, np.cos(0.2)])
    plane = Plane(point=[0, 0, 1.0], normal=normal, extent=3.0)
    scene = Scene()
    sleigh = nhphys.RigidBody(1.0, [0.1, 0.3, 0.4], Ellipsoid([0.4, 0.15, 0.1]))
    contact = KnifeEdgeContact(plane, offset=0.0)
    assert np.isclose(contact.incline, 0.2)
    scene.add_body(sleigh, contact, heading=0.5, velocity=0.3, turning_rate=2.0)
    traj = scene.simulate(1.0, 0.01, backend=backend)
    cp, pos = traj.contact_point[:, 0], traj.position[:, 0]
    assert np.abs((cp - [0, 0, 1.0]) @ normal).max() < 1e-14
    assert np.allclose((pos - cp) @ normal, 0.1)
    assert traj.meta["integrators"][0].startswith("Newmark")


def test_rolling_ball_touches_the_ground_at_its_contact_point(backend):
    scene = Scene()
    ball = nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1), name="ball")
    ground = Plane(extent=2.0)
    scene.add_body(ball, RollingContact(ground), position=[0, 0, 0], omega=[0, 3.0, 0.0])
    traj = scene.simulate(0.5, 0.01, backend=backend)
    cp, pos = traj.contact_point[:, 0], traj.position[:, 0]
    assert np.abs(cp[:, 2]).max() < 1e-14
    assert np.allclose(np.linalg.norm(pos - cp, axis=1), 0.1, atol=1e-14)
    assert np.allclose(pos[-1], [0.1 * 3.0 * 0.5, 0, 0.1])  # rolls 0.15 without slipping
    assert traj.constraint_residual.max() < 1e-12


def test_body_without_contact_and_other_bad_input():
    scene = Scene()
    with pytest.raises(ValueError, match="Expected a `contact` for body 'top'.*do not collide"):
        scene.add_body(top())
    with pytest.raises(TypeError, match="RollingContact, KnifeEdgeContact or SuslovContact"):
        scene.add_body(top(), "rolling")
    with pytest.raises(ValueError, match="Body 'top': .*axis . omega0 = 0"):
        scene.add_body(top(), SuslovContact([0, 0, 1]), omega=[0, 0, 1.0])
    with pytest.raises(TypeError, match="Unexpected initial condition `velocity` for body 'top'"):
        scene.add_body(top(), SuslovContact([0, 0, 1]), velocity=1.0)
    with pytest.raises(ValueError, match="one of \\('exp', 'cayley'"):
        scene.add_body(top(), SuslovContact([0, 0, 1]), omega=[1, 0, 0], integrator="rk4")
    with pytest.raises(ValueError, match="regular contact"):  # ball in a bowl its own size
        from nhphys.surfaces import Sphere as Bowl

        scene.add_body(nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.5)),
                       RollingContact(Bowl(0.5).as_ground("inside")), position=[0, 0, -0.5])
    with pytest.raises(ValueError, match="at least one body"):
        scene.simulate(1.0, 0.1)
    with pytest.raises(TypeError, match="nhphys.surfaces.Plane"):
        KnifeEdgeContact(Sphere(1.0))
    with pytest.raises(ValueError, match="unit quaternion"):
        scene.add_body(top(), SuslovContact([0, 0, 1]), omega=[1, 0, 0], orientation=[1, 1, 0, 0])
    scene.add_body(top(), SuslovContact([0, 0, 1]), omega=[1, 0, 0])
    with pytest.raises(ValueError, match="new body name, got 'top' twice"):
        scene.add_body(top(), SuslovContact([0, 0, 1]), omega=[1, 0, 0], name="top")
    second = scene.add_body(top(), SuslovContact([0, 0, 1]), omega=[1, 0, 0])  # default name deduped
    assert second.name != "top"
    with pytest.raises(ValueError, match="one of \\('exp'"):
        scene.simulate(1.0, 0.1, integrator="euler")
    with pytest.raises(ValueError, match="whole number of steps"):
        scene.simulate(1.0, 0.3)


def test_scene_streams_to_out_and_ctrl_c_returns_what_was_computed(tmp_path, monkeypatch):
    import nhphys.scene as scene_module

    scene = two_tops()
    monkeypatch.setattr(scene_module, "CHUNK_STEPS", 20)  # 10 steps per body per chunk
    original = scene_module.SceneRun.advance
    calls = []

    def interrupted(self, n_steps, save_every=None):
        calls.append(n_steps)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return original(self, n_steps, save_every)

    monkeypatch.setattr(scene_module.SceneRun, "advance", interrupted)
    with pytest.warns(RuntimeWarning, match="Interrupted at t = 0.4"):
        traj = scene.simulate(10.0, 0.01, out=tmp_path / "run.npz")
    assert traj.meta["interrupted"] and len(traj) == 41
    saved = Trajectory.load(tmp_path / "run.interrupted.npz")
    for name in traj.fields:
        assert np.array_equal(saved[name], traj[name])
    assert saved.meta["scene"]["name"] == "tops"
    assert sorted(os.listdir(tmp_path)) == ["run.interrupted.npz"]  # no chunk folder, no temporaries


def test_scene_file_loading(tmp_path):
    from nhphys.scene import load_scene_file

    good = tmp_path / "good.py"
    good.write_text("import nhphys\nfrom nhphys.scene import Scene\nscene = Scene(name='x')\n"
                    "defaults = {'dt': 0.02}\n")
    scene, defaults = load_scene_file(good)
    assert scene.name == "x" and defaults == {"dt": 0.02}
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    with pytest.raises(ValueError, match="define `scene = nhphys.Scene"):
        load_scene_file(bad)


def test_progress_bar_and_quaternions(capsys):
    scene = two_tops()
    traj = scene.simulate(1.0, 0.01, progress=True)
    err = capsys.readouterr().err
    assert "tops" in err and "100/100" in err  # tqdm's bar, on stderr
    q = traj.quaternion
    assert q.shape == (101, 2, 4) and np.allclose(np.linalg.norm(q, axis=-1), 1)
    _, _, y, z = q[50, 1]
    assert np.isclose(1 - 2 * (y * y + z * z), traj.R[50, 1, 0, 0])


def test_custom_display_mesh_replaces_the_shape():
    pv = pytest.importorskip("pyvista")

    scene = Scene()
    cube = pv.Cube(x_length=0.2, y_length=0.2, z_length=0.2)
    entry = scene.add_body(top(), SuslovContact([0, 0, 1]), omega=[1, 0, 0], mesh=cube)
    points, faces = entry.mesh
    assert len(faces) == 12 and np.allclose(np.abs(points), 0.1)
    shown = scene.display().bodies[0]
    assert np.array_equal(shown["points"], points)
