"""The scene scripts with figures (rolling bodies, disks, wheels) run as a user runs them, write
their figures, and load as scenes for the viewer."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nhphys.scene import load_scene_file
import nhphys.scenes

SCENE_DIR = os.path.dirname(nhphys.scenes.__file__)  # the bundled scenes, installed with nhphys
SCENES = {  # name: (arguments that keep the run short, figures)
    "coin": (["--t-final", "2"], ["diagnostics.png", "steady.png"]),
    "euler_disk": ([], ["diagnostics.png", "fall.png"]),
    "wheel_terrain": (["--t-final", "2"], ["diagnostics.png", "profile.png"]),
    "disk_in_bowl": (["--t-final", "4"], ["diagnostics.png", "wall.png"]),
    "ball_in_bowl": ([], ["period.png", "diagnostics.png"]),
    "ellipsoid_plane": (["--t-final", "1"], ["accuracy.png", "diagnostics.png"]),
    "rattleback": (["--t-final", "2"], ["spin.png", "diagnostics.png"]),
    "chaplygin_ball": (["--t-final", "2"], ["momentum.png", "diagnostics.png"]),
    "ball_in_pipe": (["--t-final", "2"], ["diagnostics.png", "rocking.png"]),
    "damped_rattleback": (["--t-final", "4"], ["spin.png", "energy.png"]),
    "motor_hill": (["--t-final", "2"], ["climb.png", "energy.png"]),
    "euler_disk_resistance": (["--t-final", "1"], ["spiral.png", "energy.png"]),
    "turntable": (["--turns", "0.5"], ["paths.png", "accuracy.png"]),
    # a unilateral contact: lift-off, flight, impacts and sliding (docs/contact-modes.md)
    "bouncing_ball": ([], ["height.png"]),
    "dome_lift_off": (["--t-final", "1.2"], ["lift_off.png"]),
    "billiard": ([], ["path.png"]),  # sliding with Coulomb friction, then rolling
    "tippe_top": (["--t-final", "0.5"], ["inversion.png"]),  # inverts while it slides
    "hump": (["--t-final", "2"], ["jump.png"]),  # leaves a hump, lands, bounces, rolls on
    "euler_disk_to_rest": ([], ["to_rest.png"]),  # falls flat, slides on its face, stops
    "can_falls_over": (["--t-final", "0.3", "--dt", "1e-3"], ["falls_over.png"]),  # onto its side
    # the benchmark bicycle (docs/multibody.md)
    "bicycle": (["--t-final", "3"], ["eigenvalues.png", "runs.png", "strobe.png",
                                      "diagnostics.png"]),
    "cart_figure_eight": (["--t-final", "2"], ["figure_eight.png"]),
    "towed_trailer": (["--t-final", "1"], ["towing.png"]),
    "tree_in_bowl": (["--t-final", "0.3"], ["tree_in_bowl.png"]),
    "bicycle_bowl": (["--t-final", "0.5"], ["bicycle_bowl.png"]),
    # the ensemble studies (docs/ensembles.md), on tiny grids and in this process
    "rattleback_map": (["--size", "4", "--t-final", "4", "--no-cluster"], ["reversal_map.png"]),
    "coin_fall": (["--size", "4", "--t-final", "0.5", "--no-cluster"], ["fall_map.png"]),
    "energy_errors": (["--runs", "10", "--t-final", "1"], ["energy_errors.png"]),
}
# scripts with figures only, no `scene` for the viewer
SCRIPTS_ONLY = {"rattleback_map", "coin_fall", "energy_errors"}


@pytest.mark.parametrize("name", list(SCENES))
def test_scene_script_writes_its_figures(tmp_path, name):
    args, figures = SCENES[name]
    out = subprocess.run(
        [sys.executable, os.path.join(SCENE_DIR, f"{name}.py"), "--out", str(tmp_path),
         *args], capture_output=True, text=True, check=True, timeout=300,
    )
    import matplotlib.image as mpimg

    for figure in figures:
        path = tmp_path / figure
        assert str(path) in out.stdout
        image = mpimg.imread(path)
        assert np.std(image[..., :3]) > 0.05  # not a blank canvas
    if name == "euler_disk":
        assert "Contact event at step" in out.stdout and "disk fell flat" in out.stdout


def test_the_euler_disk_with_rolling_resistance_comes_to_rest_with_lift_off(tmp_path):
    out = subprocess.run(
        [sys.executable, os.path.join(SCENE_DIR, "euler_disk_resistance.py"), "--out",
         str(tmp_path), "--lift-off", "--t-final", "5.5"],
        capture_output=True, text=True, check=True, timeout=300,
    )
    assert "fall flat at t = 5.2277" in out.stdout and "rolling -> flat" in out.stdout
    assert "lean 30.00 -> 90.00 deg in 5.500 s" in out.stdout
    assert (tmp_path / "spiral.png").exists() and (tmp_path / "energy.png").exists()


@pytest.mark.parametrize("name", [name for name in SCENES if name not in SCRIPTS_ONLY])
def test_scene_file_loads_and_steps(name):
    scene, defaults = load_scene_file(os.path.join(SCENE_DIR, f"{name}.py"))
    traj = scene.simulate(50 * defaults["dt"], defaults["dt"])
    assert traj.constraint_residual.max() <= 1e-13
    assert np.isfinite(traj.energy).all()
