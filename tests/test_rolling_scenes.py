"""What the rolling-body scenes report (their figures are checked in test_scene_scripts.py)."""

import os
import subprocess
import sys

import numpy as np
import nhphys.scenes

SCENE_DIR = os.path.dirname(nhphys.scenes.__file__)  # the bundled scenes, installed with nhphys

def test_ball_in_bowl_scene_reports_the_period(tmp_path):
    out = subprocess.run(
        [sys.executable, os.path.join(SCENE_DIR, "ball_in_bowl.py"), "--out", str(tmp_path)],
        capture_output=True, text=True, check=True, timeout=300,
    )
    line = next(x for x in out.stdout.splitlines() if x.startswith("period"))
    assert abs(float(line.rsplit(" ", 1)[-1])) < 1e-3


def test_chaplygin_ball_keeps_its_momentum_about_the_contact_point():
    # an independent conserved quantity of the ball with its centre of mass at its centre
    sys.path.insert(0, SCENE_DIR)
    try:
        import chaplygin_ball as scene
    finally:
        sys.path.pop(0)
    import nhphys

    system = nhphys.systems.RollingBody(scene.ball, scene.ground)
    traj = nhphys.simulate(system, 20.0, 2e-3, save_every=50, **scene.START)
    K = scene.contact_momentum(traj, scene.ball.mass)
    assert np.abs(K - K[0]).max() <= 1e-12 * np.linalg.norm(K[0])
    spatial = np.einsum("nij,nj->ni", traj.R, traj.omega)
    assert np.ptp(spatial[:, 0]) > 0.1  # while the angular velocity itself changes
