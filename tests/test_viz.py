"""Off-screen rendering, live stepping and replay with no display (small windows, few frames)."""

import os
import runpy

import numpy as np
import pytest

import nhphys
import nhphys.scenes
from nhphys import RollingContact, Scene, SuslovContact, viz
from nhphys.surfaces import Ellipsoid, Plane, Sphere

SCENE_DIR = os.path.dirname(nhphys.scenes.__file__)  # the bundled scenes, installed with nhphys
BALL_COLOR = "#d1495b"


def reddish(image):
    """Pixels of the ball's colour (both of its tones), not the grey ground or the blue trail."""
    r, g, b = (image[..., k].astype(float) for k in range(3))
    return (r > 20) & (r > 1.4 * g) & (r > 1.3 * b)  # a hue, whatever the shading


def near(mask, pixel, radius):
    col, row = np.round(pixel).astype(int)
    h, w = mask.shape
    if not (0 <= row < h and 0 <= col < w):
        return False
    return bool(mask[max(0, row - radius):row + radius + 1,
                     max(0, col - radius):col + radius + 1].any())


@pytest.fixture(scope="module")
def rolling():
    scene = Scene(name="ball")
    ground = scene.add_ground(Plane(extent=1.0))
    ball = nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1), name="ball")
    scene.add_body(ball, RollingContact(ground), color=BALL_COLOR, position=[-0.3, 0, 0],
                   omega=[0, 4.0, 1.0])
    return scene, scene.simulate(1.2, 0.01)


@pytest.fixture(scope="module")
def spinning():
    scene = Scene(name="top")
    scene.add_ground(Plane(extent=1.0))
    body = nhphys.RigidBody(1.0, [[1, 0, 0.2], [0, 2, 0.3], [0.2, 0.3, 3]],
                            Ellipsoid([0.5, 0.3, 0.2]), name="top")
    scene.add_body(body, SuslovContact([0, 0, 1], pivot=[0, 0, 0.6]), omega=[2.0, 1.0, 0.0])
    return scene, scene.simulate(2.0, 0.01)


def test_gif_frames_move_and_the_ball_stays_on_the_ground(rolling, tmp_path):
    import imageio.v3 as iio

    scene, traj = rolling
    info = viz.render(scene, traj, tmp_path / "ball.gif", fps=5, size=(200, 150),
                             locate=True)
    frames = iio.imread(tmp_path / "ball.gif", index=None)[..., :3]
    assert frames.shape == (7, 150, 200, 3) and info["frames"] == 7
    for a, b in zip(frames[:-1], frames[1:]):
        assert np.abs(a.astype(int) - b).sum(axis=-1).astype(bool).sum() > 50  # it moves
    columns = []
    for image, contact, center in zip(frames, info["contact"][:, 0], info["center"][:, 0]):
        mask = reddish(image)
        assert 30 < mask.sum() < 0.2 * mask.size  # a ball, not a blank or flooded image
        assert near(mask, center, 1)  # drawn where it is
        assert near(mask, contact, 2)  # and touching the ground at its contact point
        below = contact + [0, 12]  # a few radii under the contact point: ground, not ball
        assert not near(mask, below, 1)
        columns.append(np.nonzero(mask)[1].mean())
    assert columns[-1] - columns[0] > 15  # rolls across the picture


def test_png_frame_at_a_time(spinning, tmp_path):
    import imageio.v3 as iio

    scene, traj = spinning
    a = viz.render(scene, traj, tmp_path / "a.png", time=0.0, size=(160, 120))
    b = viz.render(None, traj, tmp_path / "b.png", time=1.0, size=(160, 120))
    assert a["frames"] == b["frames"] == 1
    ia, ib = iio.imread(tmp_path / "a.png"), iio.imread(tmp_path / "b.png")
    assert ia.shape[:2] == (120, 160)
    assert np.std(ia[..., :3]) > 10  # not a blank canvas
    assert np.abs(ia.astype(int) - ib).sum() > 0  # the top has turned


def test_mp4_has_the_frames(rolling, tmp_path):
    import imageio.v2 as imageio

    scene, traj = rolling
    info = viz.render(scene, traj, tmp_path / "ball.mp4", fps=5, size=(150, 100),
                             max_frames=5)
    assert info["size"] == (160, 112)  # rounded up for the codec
    with imageio.get_reader(tmp_path / "ball.mp4", format="FFMPEG") as reader:
        assert reader.count_frames() == 5
        first, last = reader.get_data(0), reader.get_data(4)
    assert first.shape == (112, 160, 3)
    assert np.abs(first.astype(int) - last).mean() > 0.1


def test_live_view_steps_headless_and_frames_differ(rolling, tmp_path):
    import imageio.v3 as iio

    scene, _ = rolling
    images = scene.show(dt=0.01, frames=5, off_screen=True, size=(160, 120), speed=2.0,
                        record=str(tmp_path / "live.gif"))
    assert len(images) == 5
    for a, b in zip(images[:-1], images[1:]):
        assert np.abs(a.astype(int) - b).sum() > 0
    assert iio.imread(tmp_path / "live.gif", index=None).shape[0] == 5


def test_live_session_keys_pause_speed_and_restart(rolling):
    from nhphys.viz._pyvista import pyvista
    from nhphys.viz.live import LiveSession
    from nhphys.viz.view import SceneView

    scene, _ = rolling
    pv = pyvista(off_screen=True)
    plotter = pv.Plotter(off_screen=True, window_size=(64, 48))
    view = SceneView(scene.display(), plotter)
    session = LiveSession(scene, view, 0.01, None, "auto", fps=10, speed=1.0)
    session.tick()
    assert np.isclose(session.t, 0.1)
    session.toggle_pause()
    session.tick()
    assert np.isclose(session.t, 0.1)
    session.toggle_pause()
    session.set_speed(2.0 * session.speed)
    session.tick()
    assert np.isclose(session.t, 0.3)
    x = session.last["position"][0].copy()
    session.restart()
    assert session.t == 0.0 and not np.allclose(session.last["position"][0], x)
    plotter.close()


def test_replay_of_a_saved_run(spinning, tmp_path):
    _, traj = spinning
    traj.save(tmp_path / "run.npz")
    back = nhphys.Trajectory.load(tmp_path / "run.npz")
    images = back.play(frames=4, off_screen=True, size=(120, 90), speed=4.0)
    assert len(images) == 4 and np.abs(images[0].astype(int) - images[-1]).sum() > 0


def test_render_errors_leave_nothing_behind(rolling, spinning, tmp_path, monkeypatch):
    from nhphys.viz.view import SceneView

    scene, traj = rolling
    with pytest.raises(ValueError, match="end with one of"):
        viz.render(scene, traj, tmp_path / "x.avi")
    with pytest.raises(ValueError, match="existing folder"):
        viz.render(scene, traj, tmp_path / "missing" / "x.gif")
    with pytest.raises(ValueError, match="scene's 1 bodies, got 2"):
        viz.render(scene, nhphys.Trajectory(
            {"t": np.zeros(1), "R": np.tile(np.eye(3), (1, 2, 1, 1))}, {"bodies": ["a", "b"]}),
            tmp_path / "x.gif")
    calls = []
    original = SceneView.set_poses

    def failing(self, position, R):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("renderer lost")
        return original(self, position, R)

    monkeypatch.setattr(SceneView, "set_poses", failing)
    with pytest.raises(RuntimeError, match="renderer lost"):
        viz.render(scene, traj, tmp_path / "x.gif", fps=5, size=(64, 48))
    assert os.listdir(tmp_path) == []


def bundled():
    from nhphys.cli import describe_scene_file

    names = []
    for name in sorted(os.listdir(SCENE_DIR)):
        if name.endswith(".py") and describe_scene_file(os.path.join(SCENE_DIR, name))[1]:
            names.append(name)
    return names


@pytest.mark.parametrize("name", bundled())
def test_each_bundled_scene_renders_off_screen(name, tmp_path):
    import imageio.v3 as iio

    namespace = runpy.run_path(os.path.join(SCENE_DIR, name), run_name="nhphys_scene")
    scene, defaults = namespace["scene"], namespace.get("defaults", {})
    dt = defaults.get("dt", 0.01)
    t_final = min(0.4, defaults.get("t_final", 0.4))
    traj = scene.simulate(max(1, round(t_final / dt)) * dt, dt)
    info = viz.render(scene, traj, tmp_path / "s.gif", fps=2.5 / traj.t[-1], size=(160, 120),
                      max_frames=3)  # three frames spread over the run
    frames = iio.imread(tmp_path / "s.gif", index=None)
    assert info["frames"] == 3 and frames.shape[0] == 3
    assert np.std(frames[0][..., :3]) > 5
    assert np.abs(frames[0].astype(int) - frames[-1]).sum() > 0


def test_runs_of_single_systems_render_without_a_scene(tmp_path):
    import imageio.v3 as iio

    suslov = nhphys.simulate(nhphys.systems.Suslov([1, 2, 3], [0, 0, 1]), 1.0, 0.01,
                             omega=[2.0, 1.0, 0.0])
    viz.render(None, suslov, tmp_path / "a.gif", fps=4, size=(96, 72))
    frames = iio.imread(tmp_path / "a.gif", index=None)
    assert frames.shape[0] == 5 and np.abs(frames[0].astype(int) - frames[-1]).sum() > 0
    sleigh = nhphys.simulate(nhphys.systems.KnifeEdge(1.0, 0.5, 0.3), 1.0, 0.01,
                             velocity=0.5, turning_rate=2.0)
    info = viz.render(None, sleigh, tmp_path / "b.png", size=(96, 72), locate=True)
    assert np.all(np.isfinite(info["center"]))
