"""Off-screen rendering of articulated systems (nhphys.viz.render_articulated)."""

import numpy as np
import pytest

import nhphys
from nhphys.systems import Bicycle
from nhphys.viz import render_articulated


@pytest.fixture(scope="module")
def riding():
    bike = Bicycle()
    return bike, nhphys.simulate(bike, 1.0, 1e-3, integrator="dla", speed=5.0, roll=0.05,
                                 save_every=10)


def test_gif_frames_move_with_the_bicycle(riding, tmp_path):
    import imageio.v3 as iio

    bike, traj = riding
    info = render_articulated(bike, traj, tmp_path / "ride.gif", fps=10, size=(320, 240))
    frames = iio.imread(tmp_path / "ride.gif", index=None)
    assert info["frames"] == len(frames) == 11
    assert frames.shape[1:3] == (240, 320)
    # the bicycle is drawn (dark wheel rims on the light ground) and the wheels turn: the
    # frames differ although the camera follows the bicycle
    dark = (frames[..., :3].astype(float).mean(axis=-1) < 90).mean(axis=(1, 2))
    assert np.all(dark > 0.002)
    assert np.abs(frames[0].astype(float) - frames[-1].astype(float)).mean() > 1.0


def test_png_of_a_cart_and_errors_leave_nothing_behind(riding, tmp_path):
    import imageio.v3 as iio

    from nhphys.scenes.cart_figure_eight import cart

    system, _, _ = cart()
    v = system.rates(np.zeros(7), {3: 8.0, 4: 12.0})
    traj = nhphys.simulate(system, 0.5, 1e-3, integrator="dla", q=np.zeros(7), v=v,
                           save_every=100)
    render_articulated(system, traj, tmp_path / "cart.png", size=(320, 240))
    image = iio.imread(tmp_path / "cart.png")
    assert np.std(image[..., :3]) > 5.0
    bike, ride = riding
    with pytest.raises(ValueError, match="trajectory of"):
        render_articulated(system, ride, tmp_path / "wrong.gif")
    with pytest.raises(ValueError, match="end with one of"):
        render_articulated(bike, ride, tmp_path / "ride.avi")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cart.png"]


def test_scene_scripts_render_their_animations(tmp_path):
    import os
    import subprocess
    import sys

    import imageio.v3 as iio

    import nhphys.scenes

    script = os.path.join(os.path.dirname(nhphys.scenes.__file__), "towed_trailer.py")
    out = subprocess.run([sys.executable, script, "--out", str(tmp_path), "--t-final", "1",
                          "--gif"], capture_output=True, text=True, check=True, timeout=300)
    path = tmp_path / "towing.gif"
    assert str(path) in out.stdout
    assert len(iio.imread(path, index=None)) == 21


def test_replay_window_runs_headless_and_records(riding, tmp_path):
    import imageio.v3 as iio

    from nhphys.viz import play_articulated

    bike, traj = riding
    images = play_articulated(bike, traj, fps=10, frames=6, off_screen=True, size=(320, 240),
                              record=tmp_path / "replay.gif")
    assert len(images) == 6
    assert np.abs(images[0].astype(float) - images[-1].astype(float)).mean() > 1.0
    assert len(iio.imread(tmp_path / "replay.gif", index=None)) == 6
    with pytest.raises(ValueError, match="frames"):
        play_articulated(bike, traj, off_screen=True)
