"""Moving grounds in the viewer, the off-screen renderer and the exports: each frame carries the
ground's mesh to its pose at that frame's time (checked against the closed form of a steady
rotation), grounds at rest stay put, and the bundled turntable scene is viewable."""

import numpy as np
import pytest

import nhphys
from nhphys import RollingContact, Scene, viz
from nhphys.scene_display import MARK_COLOR
from nhphys.surfaces import Plane, Sphere
from nhphys.viz.view import SceneView

RATE = 2.0 * np.pi  # one turn a second
AXIS = np.array([0.2, -0.1, 1.0]) / np.linalg.norm([0.2, -0.1, 1.0])
CENTER = np.array([0.1, -0.05, 0.0])


def rotation_about(axis, angle):
    """Rodrigues' formula, written out (the closed form the poses are checked against)."""
    k = np.asarray(axis, dtype=float)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def closed_form_pose(t, rate=RATE, axis=AXIS, center=CENTER):
    """4x4 transform of a rotation by ``rate t`` about ``axis`` through ``center``."""
    Q = rotation_about(axis, rate * t)
    m = np.eye(4)
    m[:3, :3] = Q
    m[:3, 3] = center - Q @ center
    return m


def as_array(vtk_matrix):
    return np.array([[vtk_matrix.GetElement(i, j) for j in range(4)] for i in range(4)])


def ball_scene(ground, name="table"):
    scene = Scene(name=name)
    scene.add_ground(ground, resolution=41)
    ball = nhphys.RigidBody(0.3, [0.4 * 0.3 * 0.05**2] * 3, Sphere(0.05), name="ball")
    scene.add_body(ball, RollingContact(ground), position=[0.25, 0.0, 0.0],
                   omega=[0.0, 2.0, 0.5], resolution=12)
    return scene


@pytest.fixture(scope="module")
def tilted():
    """A table tilted off +z, turning about its normal through a point off the origin."""
    ground = Plane(point=CENTER, normal=AXIS, extent=0.5).moving(rate=RATE, axis=AXIS,
                                                                   center=CENTER)
    scene = ball_scene(ground, "tilted table")
    return scene, scene.simulate(0.5, 1e-3, save_every=10)


@pytest.fixture
def recorded(monkeypatch):
    """(t, the ground actors' user matrices (4x4 each, None at rest)) after every
    ``SceneView.set_ground_time``: what the frame shows, read back from VTK."""
    calls = []
    original = SceneView.set_ground_time

    def spy(self, t):
        original(self, t)
        matrices = [None if a.GetUserMatrix() is None else as_array(a.GetUserMatrix())
                    for a in self.ground_actors]
        calls.append((float(t), matrices))

    monkeypatch.setattr(SceneView, "set_ground_time", spy)
    return calls


def test_rendered_frames_carry_the_ground_to_its_closed_form_pose(tilted, recorded, tmp_path):
    scene, traj = tilted
    info = viz.render(scene, traj, tmp_path / "a.gif", fps=20, size=(96, 72), text=False)
    expected_times = traj.resample(20, 1.0).t
    assert info["frames"] == len(expected_times) == len(recorded) == 11
    for (t, (matrix,)), t_frame in zip(recorded, expected_times):
        assert t == t_frame
        assert np.abs(matrix - closed_form_pose(t)).max() < 1e-12
    assert np.abs(recorded[10][1][0][:3, :3] - np.eye(3)).max() > 1.5  # half a turn: moved


def test_a_saved_run_renders_its_ground_moving_without_the_scene(tilted, recorded, tmp_path):
    _, traj = tilted
    path = traj.save(str(tmp_path / "run.npz"))
    saved = nhphys.Trajectory.load(path)
    viz.render(None, saved, tmp_path / "b.png", time=0.37, size=(96, 72))
    ((t, (matrix,)),) = recorded
    assert t == saved.t[37]
    assert np.abs(matrix - closed_form_pose(t)).max() < 1e-12


def test_live_view_and_replay_carry_the_ground_at_each_frame(tilted, recorded):
    scene, traj = tilted
    dt, fps = 1e-3, 25.0
    viz.show(scene, dt=dt, fps=fps, frames=6, off_screen=True, size=(96, 72))
    steps = round(1.0 / (fps * dt))  # 40 steps a frame at speed 1
    assert [t for t, _ in recorded] == [k * steps * dt for k in range(6)]
    for t, (matrix,) in recorded:
        assert np.abs(matrix - closed_form_pose(t)).max() < 1e-12
    recorded.clear()
    viz.play(traj, scene, fps=10, frames=4, off_screen=True, size=(96, 72), loop=False)
    times = [t for t, _ in recorded]
    assert len(times) == 4 and set(times) <= set(traj.t.tolist()) and np.all(np.diff(times) > 0)
    assert np.abs(np.array(times) - 0.1 * np.arange(4)).max() <= 0.01 + 1e-12  # a frame each
    for t, (matrix,) in recorded:
        assert np.abs(matrix - closed_form_pose(t)).max() < 1e-12


def test_a_ground_at_rest_keeps_the_identity(recorded, tmp_path):
    resting = Plane(extent=0.5)
    scene = ball_scene(resting, "resting")
    scene.add_ground(Plane(point=[0, 0, -0.2], extent=0.2).moving(rate=1.0), name="below")
    traj = scene.simulate(0.2, 1e-3, save_every=50)
    viz.render(scene, traj, tmp_path / "c.gif", fps=10, size=(96, 72))
    assert len(recorded) == 3
    for t, (rest, below) in recorded:
        assert rest is None or np.array_equal(rest, np.eye(4))  # never moved
        assert np.abs(below - closed_form_pose(t, 1.0, [0, 0, 1.0], np.zeros(3))).max() < 1e-12


def test_a_ground_carried_by_a_callable_moves_with_its_scene_and_warns_without(recorded,
                                                                                tmp_path):
    def slide(t):  # a floor moving along x at 0.3 m/s, given as a callable
        return np.eye(3), np.array([0.3 * t, 0, 0]), np.zeros(3), np.array([0.3, 0, 0])

    scene = ball_scene(Plane(extent=0.5).moving(slide), "slide")
    traj = scene.simulate(0.1, 1e-3, save_every=50, backend="python")
    viz.render(scene, traj, tmp_path / "d.png", size=(96, 72))
    ((t, (matrix,)),) = recorded
    assert t == traj.t[-1] and np.isclose(matrix[0, 3], 0.03, rtol=0, atol=1e-15)
    recorded.clear()
    with pytest.warns(UserWarning, match="drawn at rest"):
        viz.render(None, traj, tmp_path / "e.png", size=(96, 72))
    assert recorded[0][1][0] is None or np.array_equal(recorded[0][1][0], np.eye(4))


def marked(image):
    """Pixels of the turntable's marker sector (its hue, whatever the shading and blending)."""
    r, g, b = (image[..., k].astype(float) for k in range(3))
    return (r > 60) & (r > 1.5 * g) & (r > 1.5 * b)


def test_rendered_turntable_turns_its_marker(tmp_path):
    import imageio.v3 as iio

    from nhphys.scenes.turntable import scene

    traj = scene.simulate(2.0, 1e-3, save_every=50)
    images = {}
    for t in (0.0, 0.25, 2.0):  # a quarter turn, and two whole turns
        viz.render(scene, traj, tmp_path / f"{t}.png", time=t, size=(240, 180), text=False,
                   trails=False)
        images[t] = iio.imread(tmp_path / f"{t}.png")[..., :3]
    masks = {t: marked(im) for t, im in images.items()}
    assert int(MARK_COLOR[1:3], 16) > 150  # the marker is red, what `marked` looks for
    area = masks[0.0].sum()
    assert area > 0.02 * masks[0.0].size  # a 30-degree sector of the table shows
    # a quarter turn later the sector is elsewhere: the two hardly overlap ...
    assert (masks[0.0] & masks[0.25]).sum() < 0.05 * area
    assert 0.7 < masks[0.25].sum() / area < 1.4
    # ... and the images differ where it was and where it is (beyond antialiased edges)
    changed = np.abs(images[0.0].astype(int) - images[0.25]).max(axis=2) > 40
    for t in (0.0, 0.25):
        assert (changed & masks[t]).sum() > 0.95 * masks[t].sum()
    # after two whole turns the sector is back where it started (the ball is not)
    union = (masks[0.0] | masks[2.0]).sum()
    assert (masks[0.0] & masks[2.0]).sum() > 0.95 * union


def test_turntable_scene_circles_the_axis_on_each_backend(backend):
    from nhphys.scenes.turntable import ORBIT, scene
    from nhphys.scenes.turntable import RATE as W

    traj = scene.simulate(0.2, 1e-3, save_every=20, backend=backend)
    assert traj.meta["backend"] == backend
    x = traj.position[:, 0]
    # the closed form: the centre goes round the axis on a circle of ORBIT at 2 W / 7
    angle = 2 * W / 7 * traj.t
    exact = np.stack([ORBIT * np.cos(angle), ORBIT * np.sin(angle), np.full_like(angle, 0.05)],
                     axis=1)
    assert np.abs(x - exact).max() < 1e-7  # 2.3e-8 measured: the order-2 step's phase error
    assert traj.constraint_residual.max() < 1e-12


def test_turntable_is_listed_as_viewable():
    from nhphys.cli import bundled_scenes

    assert "turntable" in bundled_scenes()


def test_pvd_series_carries_the_moving_ground(tilted, tmp_path):
    import pyvista as pv

    from nhphys import export

    scene, traj = tilted
    path = export.to_pvd(traj, str(tmp_path / "run.pvd"), scene)
    reader = pv.get_reader(path)
    ground = scene.display().grounds[0]["points"]
    for i in (0, 3, len(traj) - 1):
        reader.set_active_time_value(traj.t[i])
        blocks = reader.read()
        assert blocks.n_blocks == 2  # the ball and the table, at this frame
        m = closed_form_pose(traj.t[i])
        assert np.abs(blocks[1].points - (ground @ m[:3, :3].T + m[:3, 3])).max() < 1e-12


def test_usd_stage_carries_the_moving_ground(tilted, tmp_path):
    Usd = pytest.importorskip("pxr.Usd")
    from pxr import UsdGeom

    from nhphys import export

    _, traj = tilted
    path = export.to_usd(traj, str(tmp_path / "run.usda"), fps=10)
    stage = Usd.Stage.Open(path)
    prim = stage.GetPrimAtPath("/World/Grounds/ground0")
    assert prim.IsValid() and stage.GetPrimAtPath("/World/Grounds/ground0/mesh").IsValid()
    xform = UsdGeom.Xformable(prim)
    times = traj.resample(10, 1.0).t
    for i, t in enumerate(times):
        m = np.array(xform.ComputeLocalToWorldTransform(Usd.TimeCode(i)))
        assert np.abs(m.T - closed_form_pose(t)).max() < 1e-12  # USD's row vectors
