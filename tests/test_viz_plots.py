"""Diagnostic figures: the plotted data are the run's, and the convergence slopes are measured."""

import numpy as np
import pytest

import nhphys
from nhphys import RollingContact, Scene, SuslovContact
from nhphys.surfaces import Ellipsoid, Plane, Sphere
from nhphys.viz import plots

INERTIA = [[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]]


@pytest.fixture(scope="module")
def scene():
    scene = Scene(name="mixed")
    ground = scene.add_ground(Plane(extent=1.0))
    scene.add_body(nhphys.RigidBody(1.0, INERTIA, Ellipsoid([0.4, 0.3, 0.2]), name="top"),
                   SuslovContact([0, 0, 1], pivot=[0, 0, 1]), omega=[1.0, 0.5, 0.0])
    scene.add_body(nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1), name="ball"),
                   RollingContact(ground), position=[0.3, 0, 0], omega=[1.0, 2.0, 0.5])
    return scene


def test_diagnostics_figure_plots_the_run(scene, tmp_path):
    import matplotlib.image as mpimg

    traj = scene.simulate(2.0, 0.01)
    fig = plots.diagnostics(traj, tmp_path / "diag.png")
    energy_ax, residual_ax, paths_ax = fig.axes
    expected = np.abs(traj.energy[:, 1] - traj.energy[0, 1]) / abs(traj.energy[0, 1])
    assert np.allclose(energy_ax.lines[1].get_ydata(), np.maximum(expected, 1e-18))
    assert np.allclose(residual_ax.lines[0].get_ydata(),
                       np.maximum(traj.constraint_residual[:, 0], 1e-18))
    assert np.allclose(paths_ax.lines[2].get_xdata(), traj.contact_point[:, 1, 0])
    image = mpimg.imread(tmp_path / "diag.png")
    assert image.shape[1] > 1000 and np.std(image[..., :3]) > 0.05


def test_integrator_comparison_measures_second_order(scene, tmp_path):
    top_only = Scene(name="top")
    body = scene.bodies[0]
    top_only.add_body(body.body, body.contact, omega=[1.0, 0.5, 0.0])
    fig, results = plots.integrator_comparison(
        top_only, {"exp": "exp", "cayley": "cayley"}, [0.04, 0.02, 0.01], 2.0,
        path=tmp_path / "cmp.png")
    for label in ("exp", "cayley"):
        assert abs(results[label]["order"] - 2.0) < 0.15
        assert results[label]["dt"] == [0.01, 0.02, 0.04]
        assert results[label]["error"][-1] > 10 * results[label]["error"][0]
    assert (tmp_path / "cmp.png").stat().st_size > 10_000
    assert "slope" in fig.axes[0].get_legend().get_texts()[0].get_text()
