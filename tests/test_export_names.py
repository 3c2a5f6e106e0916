"""Names that become file names in an export: sanitised, unique, never outside the folder."""

import os

import numpy as np

import nhphys
from nhphys import export
from nhphys.export.paraview import unique_stems
from nhphys.surfaces import Ellipsoid, Plane


def test_unique_stems_are_safe_and_distinct():
    stems = unique_stems(["ball 1", "ball_1", "BALL_1", "../../x", "", "a/b\\c", "é"])
    assert len(set(s.lower() for s in stems)) == len(stems)
    for stem in stems:
        assert stem and all(c.isascii() and (c.isalnum() or c in "-_") for c in stem)


def test_pvd_export_stays_in_its_folder_and_keeps_every_body(tmp_path):
    import pyvista as pv

    scene = nhphys.Scene(name="names")
    scene.add_ground(Plane(extent=1.0), name="../../escape")
    inertia = [[1, 0, 0.2], [0, 2, 0.3], [0.2, 0.3, 3]]
    from nhphys import scene as scene_module

    pivot_contact = getattr(scene_module, "SuslovContact", None) or scene_module.Suslov
    for i, name in enumerate(("ball 1", "ball_1", "BALL_1")):
        body = nhphys.RigidBody(1.0, inertia, Ellipsoid([0.4, 0.25, 0.15]), name=name)
        scene.add_body(body, pivot_contact([0, 0, 1], pivot=[i, 0.0, 0.6]),
                       omega=[0.5 * (i + 1), 1.0, 0.0], resolution=8)
    traj = scene.simulate(0.2, 0.01, save_every=10)
    target = tmp_path / "a" / "b"
    target.mkdir(parents=True)
    before = set(p for p in tmp_path.rglob("*"))
    path = export.to_pvd(traj, str(target / "run.pvd"))
    written = set(tmp_path.rglob("*")) - before
    assert written and all(str(p).startswith(str(target)) for p in written)
    files = os.listdir(target / "run_files")
    assert sum(f.startswith("ground_") for f in files) == 1
    assert len(files) == 3 * len(traj) + 1  # three bodies per frame, none overwritten
    reader = pv.get_reader(path)
    reader.set_active_time_value(traj.t[-1])
    blocks = reader.read()
    display = scene.display()
    for b, body in enumerate(display.bodies):
        expected = body["points"] @ traj.R[-1, b].T + traj.position[-1, b]
        assert np.abs(blocks[b].points - expected).max() < 1e-12
