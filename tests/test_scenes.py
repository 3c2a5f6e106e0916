"""The bundled scenes run as a user runs them and write what they say they write."""

import os
import subprocess
import sys

import numpy as np
import nhphys.scenes

SCENE_DIR = os.path.dirname(nhphys.scenes.__file__)  # the bundled scenes, installed with nhphys


def test_suslov_paper_scene_writes_its_figures(tmp_path):
    out = subprocess.run(
        [sys.executable, os.path.join(SCENE_DIR, "suslov_paper.py"), "--out", str(tmp_path),
         "--minutes", "0.5"],
        capture_output=True, text=True, check=True, timeout=300,
    )
    import matplotlib.image as mpimg

    for name in ("fig1_suslov_retraction.png", "fig2_lie_poisson.png", "fig3_non_principal.png"):
        path = tmp_path / name
        assert str(path) in out.stdout
        image = mpimg.imread(path)
        assert image.shape[0] > 300 and image.shape[1] > 600
        assert np.std(image[..., :3]) > 0.05  # not a blank canvas
