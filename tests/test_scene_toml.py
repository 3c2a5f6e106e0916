"""Declarative scene files (.toml): exact round trips, every kind of bad field, no code runs.

* Every bundled scene that a scene file can describe is written (`Scene.to_toml`), read back
  (`Scene.from_toml`) and run: the arrays are identical, bit for bit, to the original scene's, on
  both backends; so are the runs of every surface type and body shape.
* A run stores the scene file that repeats it; `nhphys scene-file RUN.npz` writes it and
  `nhphys run` of that file repeats the run bit for bit.
* Every kind of bad field is a `SceneFileError` (a ValueError) naming the field's path.
* The bundled scene files hold what their descriptions say (closed forms, or the reference
  integrator), and are installed with the package.
* Fuzzing: TOML text and tables built to be nearly right give only ValueError/TypeError, never
  another exception or a hang (`NHPHYS_FUZZ_EXAMPLES` examples per target).
"""

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from fuzzing import FUZZ, Outcomes
from hypothesis import example, given
from hypothesis import strategies as st

import nhphys
import nhphys.scenes
from nhphys import Scene, cli
from nhphys.scene_file import load_scene_file
from nhphys.scenefile import SceneFileError, dumps, run_scene_toml
from nhphys.scenefile.read import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENE_DIR = os.path.dirname(nhphys.scenes.__file__)
PY_SCENES = sorted(name for name, path in cli.bundled_scenes().items() if path.endswith(".py"))
TOML_SCENES = ("ball_in_tube", "rattleback_pair")
# bundled .py scenes a scene file cannot describe, and why (the message of to_toml)
NOT_DESCRIBABLE = {}
STEPS = 200
# 100 bodies: on the Python twins 200 steps would take minutes; the kernels run all 200
FEWER_STEPS_ON_TWINS = {"marbles": 4}



def same_run(a, b):
    """Fields, static arrays and metadata identical, bit for bit (dtypes too)."""
    assert sorted(a.fields) == sorted(b.fields)
    for key in a.fields:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        assert a[key].tobytes() == b[key].tobytes(), f"field {key!r} differs"
    assert sorted(a.static) == sorted(b.static)
    for key in a.static:
        assert a.static[key].tobytes() == b.static[key].tobytes(), f"static {key!r} differs"
    assert a.meta == b.meta


_loaded = {}


def bundled(name):
    """``(scene, defaults)`` of a bundled scene (each loaded once)."""
    if name not in _loaded:
        _loaded[name] = load_scene_file(cli.bundled_scenes()[name])
    return _loaded[name]


# -- round trips of the bundled scenes ------------------------------------------------------------

@pytest.mark.parametrize("name", PY_SCENES)
def test_every_bundled_scene_reads_back_to_the_same_run(name, backend):
    scene, defaults = bundled(name)
    if name in NOT_DESCRIBABLE:
        with pytest.raises(ValueError, match=NOT_DESCRIBABLE[name]):
            scene.to_toml()
        return
    text = scene.to_toml()
    again = Scene.from_toml(text)
    assert again.to_toml() == text  # the file is a fixed point of reading and writing
    assert again.defaults == {k: list(v) if k == "size" else v for k, v in defaults.items()}
    dt = defaults["dt"]
    steps = FEWER_STEPS_ON_TWINS.get(name, STEPS) if backend == "python" else STEPS
    a = scene.simulate(steps * dt, dt, backend=backend, progress=False)
    b = again.simulate(steps * dt, dt, backend=backend, progress=False)
    assert len(a) == steps + 1
    assert "scene_toml" in a.meta
    same_run(a, b)


def test_the_bundled_python_scenes_are_all_described():
    """A new bundled scene that a scene file cannot describe must be named here, with why."""
    assert len(PY_SCENES) - len(NOT_DESCRIBABLE) >= 18
    for name in PY_SCENES:
        if name not in NOT_DESCRIBABLE:
            assert bundled(name)[0].to_toml()


# -- every surface and shape ----------------------------------------------------------------------

def _ball(name="ball", radius=0.05):
    return nhphys.RigidBody(1.0, [0.4 * radius**2] * 3, nhphys.surfaces.Sphere(radius), name=name)


def every_kind_scene():
    """A scene with a ground of every kind and a body of every shape, placed off the defaults
    (centres, rotations, inward orientations, odd numbers) so that nothing is left implicit."""
    from nhphys.lie import so3
    from nhphys.shapes import Cylinder, Disk, Wheel
    from nhphys.surfaces import (
        Ellipsoid,
        HeightField,
        Paraboloid,
        ParametricSurface,
        Plane,
        Sphere,
        SurfaceOfRevolution,
        Torus,
    )

    turn = so3.exp([0.1, -0.2, 0.3])
    scene = Scene(gravity=9.80665, name="every kind", camera=(1.0, -2.0, 0.5))
    scene.description = "Every ground and shape.\nWith a \"quoted\" line and a tab\there."
    scene.defaults = {"t_final": 0.05, "dt": 0.001, "save_every": 5, "integrator": "cayley",
                      "fps": 12.5, "speed": 0.25, "size": (320, 240)}
    plane = Plane(point=[0.1, -0.2, 0.3], normal=[0.1, 0.2, 0.9], extent=2.0)
    bowl = Sphere(1.0, center=[5.0, 0.0, 1.0], rotation=turn).as_ground("inside")
    pipe = Torus(1.0, 0.4, center=[-5.0, 0.0, 0.0]).as_ground("inside")
    dish = Paraboloid(1.1, 1.3, center=[0.0, 5.0, 0.0], extent=0.9)
    saddle = Paraboloid(2.0, 3.0, kind="hyperbolic", center=[0.0, -5.0, 0.0])
    egg = Ellipsoid([1.0, 0.8, 0.6], center=[10.0, 0.0, 0.0], rotation=turn)
    terrain = HeightField.from_function("0.05*sin(2*x)*cos(y) + 0.01*x", (-2, 2), (-1.5, 1.5),
                                        samples=(21, 17), center=[0.0, 10.0, 0.0])
    rng = np.random.default_rng(7)
    grid = HeightField(0.02 * rng.standard_normal((6, 5)), (-1.0, 1.0), (-1.0, 0.5),
                       center=[0.0, -10.0, 0.0])
    tube = SurfaceOfRevolution("0.3 + 0.05*cos(t)", "t", (-1.0, 1.0), knots=257,
                               center=[10.0, 10.0, 0.0]).as_ground("inside")
    t = np.linspace(0.0, 1.0, 9)
    vase = SurfaceOfRevolution.from_samples(t, 0.5 + 0.1 * t**2, t, knots=300,
                                            center=[-10.0, 10.0, 0.0]).as_ground("inside")
    sheet = ParametricSurface.from_expressions("a", "b", "0.1*sin(a)*cos(b) - 7", variables=(
        "a", "b"), u_range=(-2.0, 2.0), v_range=(-2.0, 2.0))
    for i, (surface, options) in enumerate([
            (plane, {"color": "steelblue", "opacity": 0.5}), (bowl, {"resolution": 33}),
            (pipe, {}), (dish, {}), (saddle, {}), (egg, {}), (terrain, {}), (grid, {}),
            (tube, {}), (vase, {}), (sheet, {"color": (0.1, 0.2, 0.3)})]):
        scene.add_ground(surface, name=f"g{i}", **options)
    on_bowl = bowl.center + np.array([0.3, 0.0, -np.sqrt(1 - 0.09)])
    scene.add_body(_ball("ball"), nhphys.RollingContact(bowl), position=on_bowl,
                   omega=[0.5, -1.0, 2.0], color="#123456", resolution=20)
    scene.add_body(_ball("on terrain"), nhphys.RollingContact(terrain),
                   position=terrain.point(terrain.project([0.3, 10.2, 0.1])), omega=[1.0, 0, 0])
    scene.add_body(_ball("on sheet"), nhphys.RollingContact(sheet),
                   position=sheet.point(sheet.project([0.2, 0.1, -6.9])), omega=[0.0, 2.0, 0])
    scene.add_body(_ball("in tube"), nhphys.RollingContact(tube),
                   position=[10.35, 10.0, 0.0], omega=[0.0, 0.0, -30.0])
    scene.add_body(_ball("on the dish"), nhphys.RollingContact(dish), position=[0.0, 5.0, 0.0],
                   omega=[1.0, 0.0, 0.0], orientation=[np.cos(0.2), 0.0, 0.0, np.sin(0.2)])
    scene.add_body(nhphys.RigidBody(1.0, [1e-3, 2e-3, 2.5e-3], Ellipsoid([0.2, 0.1, 0.08],
                                                                        rotation=turn),
                                    com=[0.01, 0.0, -0.01], name="egg"),
                   nhphys.RollingContact(plane), name="egg", position=plane.point0,
                   omega=[0.0, 0.0, 3.0], integrator="exp")
    disk = nhphys.RigidBody(1.0, Disk.solid_inertia(1.0, 0.1), Disk(0.1, flat_angle=0.02),
                            name="disk")
    upright = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    scene.add_body(disk, nhphys.RollingContact(egg), name="disk",
                   position=egg.center + egg.rotation @ [0.0, 0.0, 0.6],
                   orientation=egg.rotation @ upright, omega=[0.0, 0.0, -5.0])
    flat = Plane(extent=3.0)
    scene.add_ground(flat, name="flat")
    wheel = nhphys.RigidBody(2.0, Wheel.solid_inertia(2.0, 0.3, 0.05), Wheel(0.3, 0.05),
                             name="wheel")
    scene.add_body(wheel, nhphys.RollingContact(flat), name="wheel", orientation=upright,
                   position=[1.0, 1.0, 0.0], omega=[0.0, 0.0, 4.0])
    can = nhphys.RigidBody(1.0, Cylinder.solid_inertia(1.0, 0.1, 0.2),
                           Cylinder(0.1, 0.2, flat_angle=0.03, side_angle=0.04), name="can")
    lean = nhphys.lie.so3.exp([0.0, 0.6, 0.0]) @ upright
    scene.add_body(can, nhphys.RollingContact(flat), name="can", orientation=lean,
                   position=[-1.0, 1.0, 0.0], omega=[0.0, 0.0, 3.0])
    scene.add_body(nhphys.RigidBody(2.0, [0.01, 0.02, 0.02], Sphere(0.1), name="sled"),
                   nhphys.KnifeEdgeContact(plane, offset=-0.05), name="sled",
                   position=[0.5, -0.25], heading=0.3, velocity=0.7, turning_rate=-0.4,
                   integrator="newmark")
    scene.add_body(nhphys.RigidBody(1.0, [[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]],
                                    Ellipsoid([0.6, 0.4, 0.22]), name="top"),
                   nhphys.SuslovContact(axis=[0.1, 0.0, 1.0], pivot=[0.0, 0.0, 0.75]),
                   name="top", momentum=[1.0, 1.0, 0.0], orientation=turn)
    return scene


@pytest.fixture(scope="module")
def every_kind():
    return every_kind_scene()


def test_every_surface_shape_and_contact_reads_back_exactly(every_kind, backend):
    scene = every_kind
    text = scene.to_toml()
    again = Scene.from_toml(text)
    assert again.to_toml() == text
    data = tomllib.loads(text)
    kinds = {g["surface"]["type"] for g in data["grounds"]}
    assert kinds == {"plane", "sphere", "torus", "paraboloid", "ellipsoid", "height_field",
                     "surface_of_revolution", "parametric"}
    assert {b["shape"]["type"] for b in data["bodies"]} == {"sphere", "ellipsoid", "disk",
                                                            "wheel", "cylinder"}
    assert {b["contact"]["type"] for b in data["bodies"]} == {"rolling", "knife_edge", "suslov"}
    assert again.description == scene.description and again.camera.tolist() == [1, -2, 0.5]
    for g, h in zip(scene.grounds, again.grounds, strict=True):
        assert (g["name"], g["color"], g["resolution"], g["opacity"]) == \
            (h["name"], h["color"], h["resolution"], h["opacity"])
    a = scene.simulate(0.02, 0.001, backend=backend, progress=False)
    b = again.simulate(0.02, 0.001, backend=backend, progress=False)
    assert "scene_toml" in a.meta
    same_run(a, b)


def test_a_file_that_leaves_defaults_out_builds_the_same_scene_as_python():
    """The defaults of the format are the constructors' own: a short file and the script that
    passes no options make the same scene, to the bit."""
    from nhphys.surfaces import Paraboloid

    text = """
[[grounds]]
surface = { type = "paraboloid", a = 1.2, b = 1.2 }
[[bodies]]
mass = 1
inertia = "uniform"
shape = { type = "sphere", radius = 0.12 }
contact = { type = "rolling" }
initial = { position = [0.0, 0.0, 0.0], omega = [1, 2, 0] }
"""
    scene = Scene()
    bowl = scene.add_ground(Paraboloid(1.2, 1.2))
    scene.add_body(_ball("body0", 0.12), nhphys.RollingContact(bowl), omega=[1.0, 2.0, 0.0],
                   position=[0.0, 0.0, 0.0])
    from_file = Scene.from_toml(text)
    assert from_file.to_toml() == scene.to_toml()
    same_run(scene.simulate(0.1, 0.01, progress=False), from_file.simulate(0.1, 0.01,
                                                                           progress=False))


def test_what_a_scene_file_cannot_describe_is_a_value_error_naming_it():
    from nhphys.integrators import Newmark
    from nhphys.surfaces import ParametricSurface, Plane, SurfaceOfRevolution

    def made_from_functions():
        return ParametricSurface(lambda u, v: [u, v, 0.0],
                                 lambda u, v: [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]],
                                 lambda u, v: np.zeros((3, 2, 2)))

    scene = Scene()
    scene.add_ground(made_from_functions(), name="python floor")
    with pytest.raises(ValueError, match="ground 'python floor': a parametric surface made from "
                                         "Python functions"):
        scene.to_toml()
    scene = Scene()
    vase = SurfaceOfRevolution(lambda t: 1.0 + 0 * t, lambda t: t, (-1.0, 1.0))
    scene.add_ground(vase, name="vase")
    with pytest.raises(ValueError, match="ground 'vase': a surface of revolution made from"):
        scene.to_toml()
    scene = Scene()
    floor = Plane()
    scene.add_body(_ball(), nhphys.RollingContact(floor), mesh=_ball().shape.mesh_arrays(8)[:2])
    with pytest.raises(ValueError, match="body 'ball': a custom display mesh"):
        scene.to_toml()
    scene = Scene()
    scene.add_body(_ball(), nhphys.RollingContact(floor), integrator=Newmark(0.25, 0.25, 0.5))
    with pytest.raises(ValueError, match="body 'ball': its integrator Newmark"):
        scene.to_toml()
    scene = Scene()
    scene.add_body(_ball(), nhphys.RollingContact(floor),
                   forces=[nhphys.forces.LinearDrag(0.1),
                           nhphys.forces.Force(lambda t, state: np.zeros(3))])
    with pytest.raises(ValueError, match=r"body 'ball' \(forces\[1\]\): a Python callable "
                                         "cannot be written as data"):
        scene.to_toml()
    assert "scene_toml" not in scene.simulate(0.02, 0.01, progress=False).meta
    scene = Scene()
    scene.add_body(_ball(), nhphys.RollingContact(floor))
    with pytest.raises(ValueError, match="the run's integrator"):
        scene.to_toml(run={"integrator": Newmark(0.25, 0.25, 0.5)})
    with pytest.raises(ValueError, match="run.fps: expected a number in"):
        scene.to_toml(run={"fps": 1e6})
    # a terrain sampled from a Python function is described by its heights, exactly
    from nhphys.surfaces import HeightField

    scene = Scene()
    hills = HeightField.from_function(lambda x, y: 0.1 * np.sin(x) * y, (-1, 1), (-1, 1),
                                      samples=8)
    scene.add_body(_ball(), nhphys.RollingContact(hills), position=[0.0, 0.0, 0.0])
    again = Scene.from_toml(scene.to_toml())
    assert again.grounds[0]["surface"].heights.tobytes() == hills.heights.tobytes()
    same_run(scene.simulate(0.05, 0.01, progress=False), again.simulate(0.05, 0.01,
                                                                        progress=False))


def _every_force_element():
    """One of each force element, with constants and linear and cubic schedules."""
    f = nhphys.forces
    cubic = f.Schedule([0.0, 0.01, 0.03], [[0, 0, 0], [0.2, 0, 0], [0, 0.1, 0]], "cubic")
    return [f.Force([0.1, 0.0, -0.0]), f.Force(cubic, point=[0, 0, 0.05], frame="body"),
            f.Torque([0, 0, 1e-3], frame="space"),
            f.Torque(f.Schedule([0.0, 0.02], [[0, 0, 0], [0, 1e-3, 0]])),
            f.Spring(2.0, [0.3, 0.0, 0.5], point=[0, 0.01, 0], rest_length=0.2),
            f.UniformField([0.3, 0.1, 0.0]), f.LinearDrag(0.05), f.AngularDamping(1e-3),
            f.SpinFriction(2e-3), f.RollingResistance(1e-3),
            f.Motor(torque=f.Schedule([0.0, 0.02], [0.0, 1e-3]), axis=[1, 2, 3],
                    target_speed=5.0, gain=1e-3)]


def test_every_force_element_reads_back_to_the_same_run(backend):
    scene = Scene(name="pushed")
    elements = _every_force_element()
    scene.add_body(_ball(), nhphys.RollingContact(nhphys.surfaces.Plane()), forces=elements,
                   omega=[1.0, 2.0, 0.5])
    text = scene.to_toml()
    assert text.count("[[bodies.forces]]") == len(elements)
    again = Scene.from_toml(text)
    assert again.to_toml() == text
    assert repr(again.bodies[0].system.forces) == repr(scene.bodies[0].system.forces)
    same_run(scene.simulate(0.05, 1e-3, backend=backend, progress=False),
             again.simulate(0.05, 1e-3, backend=backend, progress=False))


def test_a_scene_file_with_force_elements_runs_as_the_closed_form_says(backend):
    """A constant horizontal force F on a ball rolling on a plane accelerates its centre at
    F / (m (1 + k)), k = I / (m r^2) = 2/5."""
    text = BASE + "[[bodies.forces]]\ntype = 'force'\nvalue = [0.7, 0, 0]\n"
    traj = Scene.from_toml(text).simulate(0.5, 1e-3, backend=backend, progress=False)
    x = traj.body("a").position[:, 0]
    t = traj.t
    assert np.max(np.abs(x - x[0] - 0.5 * 0.7 / 1.4 * t**2)) < 1e-12


@pytest.mark.parametrize("motion", [dict(rate=1.3), dict(rate=-0.7, axis=[0.1, 0.2, 1.0],
                                                                 center=[0.3, -0.1, 0.0]),
                                    dict(velocity=[0.2, -0.1, 0.0])])
def test_a_moving_ground_reads_back_to_the_same_run(motion, backend):
    scene = Scene(name="moving")
    table = nhphys.surfaces.Plane().moving(**motion)
    scene.add_body(_ball(), nhphys.RollingContact(table), position=[0.25, 0.0, 0.0],
                   omega=[0.0, 0.0, 0.0])
    text = scene.to_toml()
    assert "[grounds.motion]" in text
    again = Scene.from_toml(text)
    assert again.to_toml() == text
    same_run(scene.simulate(0.05, 1e-3, backend=backend, progress=False),
             again.simulate(0.05, 1e-3, backend=backend, progress=False))


def test_a_turntable_scene_file_runs_as_the_closed_form_says(backend):
    """A ball on a turntable turning at W: its centre turns at 2 W / 7 about the centre
    ``c = x0 + k x v0 / (2 W / 7)`` fixed by its start (here the ball is set down without spin,
    carried by the table: ``v0 = W k x x0``)."""
    rate = 2.0
    text = _with('surface = { type = "plane" }', f'surface = {{ type = "plane" }}\n'
                                                 f'motion = {{ rate = {rate} }}')
    text += "initial = { position = [0.3, 0, 0] }\n"
    traj = Scene.from_toml(text).simulate(1.0, 1e-3, integrator="exp4", backend=backend,
                                          progress=False)
    ball = traj.body("a")
    turn = 2 * rate / 7
    x0, v0 = ball.position[0], np.array([0.0, rate * 0.3, 0.0])  # no spin, no slip
    c = x0 + np.cross([0.0, 0.0, 1.0], v0) / turn
    angle = turn * traj.t
    exact = c[:2] + np.stack([np.cos(angle) * (x0 - c)[0] - np.sin(angle) * (x0 - c)[1],
                              np.sin(angle) * (x0 - c)[0] + np.cos(angle) * (x0 - c)[1]], axis=1)
    assert np.max(np.abs(ball.position[:, :2] - exact)) < 1e-9 * np.linalg.norm(x0 - c)


def test_a_prescribed_ground_motion_is_not_describable():
    def motion(t):
        return np.eye(3), np.array([t, 0.0, 0.0]), np.zeros(3), np.array([1.0, 0.0, 0.0])

    scene = Scene()
    scene.add_body(_ball(), nhphys.RollingContact(nhphys.surfaces.Plane().moving(motion)))
    with pytest.raises(ValueError, match="ground 'ground0': a PrescribedMotion"):
        scene.to_toml()


def test_to_toml_writes_the_file_atomically(tmp_path):
    scene = bundled("suslov_top")[0]
    path = tmp_path / "top.toml"
    text = scene.to_toml(path)
    assert path.read_text(encoding="utf-8") == text
    assert Scene.from_toml(path).to_toml() == text  # a PathLike
    assert Scene.from_toml(str(path)).to_toml() == text  # a str ending with .toml
    assert sorted(os.listdir(tmp_path)) == ["top.toml"]
    with pytest.raises(FileNotFoundError):
        Scene.from_toml(str(tmp_path / "missing.toml"))
    with pytest.raises(SceneFileError, match="expected a path ending with .toml or the text"):
        Scene.from_toml("scenes/top")


# -- a run reproduces its scene file --------------------------------------------------------------

def test_a_run_stores_the_scene_file_that_repeats_it(backend, tmp_path):
    scene = bundled("rattleback")[0]
    run = scene.simulate(0.3, 0.002, integrator="cayley", save_every=10, backend=backend,
                         progress=False, out=tmp_path / "run.npz")
    text = run_scene_toml(tmp_path / "run.npz")
    assert text == run.meta["scene_toml"]
    settings_ = tomllib.loads(text)["run"]
    assert settings_["t_final"] == 0.3 and settings_["dt"] == 0.002
    assert settings_["integrator"] == "cayley" and settings_["save_every"] == 10
    again = Scene.from_toml(text)
    repeat = again.simulate(settings_["t_final"], settings_["dt"], settings_["integrator"],
                            backend=backend, save_every=settings_["save_every"], progress=False)
    same_run(nhphys.Trajectory.load(tmp_path / "run.npz"), repeat)


def test_scene_file_command_then_run_repeats_a_run_bit_for_bit(backend, tmp_path, monkeypatch,
                                                               capsys):
    monkeypatch.chdir(tmp_path)
    common = ["--backend", backend, "--no-progress", "--t-final", "0.2", "--save-every", "4"]
    assert cli.main(["run", "bowl", "--out", "first.npz", "--dt", "0.005", *common]) == 0
    assert cli.main(["scene-file", "first.npz", "-o", "again.toml"]) == 0
    assert "again.toml" in capsys.readouterr().out
    # the file carries dt, t_final and save_every: no option repeats them
    assert cli.main(["run", "again.toml", "--out", "second.npz", "--backend", backend,
                     "--no-progress"]) == 0
    first, second = (nhphys.Trajectory.load(p) for p in ("first.npz", "second.npz"))
    assert len(first) == 11
    first.meta.pop("playback"), second.meta.pop("playback")
    same_run(first, second)
    assert sorted(os.listdir(tmp_path)) == ["again.toml", "first.npz", "second.npz"]


def test_scene_file_command_prints_a_scene_and_refuses_what_it_cannot(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["scene-file", "suslov_top"]) == 0
    text = capsys.readouterr().out
    data = tomllib.loads(text)
    assert data["description"].startswith("Suslov top:") and data["run"]["dt"] == 0.01
    single = nhphys.simulate(nhphys.systems.Suslov([1, 2, 3], [0, 0, 1]), 0.05, 0.01,
                             omega=[1, 1, 0])
    single.save(tmp_path / "single.npz")
    assert cli.main(["scene-file", "single.npz"]) == 2
    assert "holds no scene file: a run of a single system" in capsys.readouterr().err
    (tmp_path / "python.py").write_text(
        "import nhphys\nfrom nhphys.surfaces import ParametricSurface\n"
        "scene = nhphys.Scene()\n"
        "floor = ParametricSurface(lambda u, v: [u, v, 0.0], lambda u, v: [[1, 0], [0, 1], "
        "[0, 0]], lambda u, v: [[[0, 0], [0, 0]]] * 3)\n"
        "ball = nhphys.RigidBody(1.0, [1e-3] * 3, nhphys.surfaces.Sphere(0.05))\n"
        "scene.add_body(ball, nhphys.RollingContact(floor))\n")
    assert cli.main(["scene-file", "python.py", "-o", "x.toml"]) == 2
    assert "cannot be written as a scene file: ground 'ground0'" in capsys.readouterr().err
    scene = load_scene_file(str(tmp_path / "python.py"))[0]
    run = scene.simulate(0.02, 0.01, progress=False, out=tmp_path / "python.npz")
    assert "scene_toml" not in run.meta
    assert cli.main(["scene-file", "python.npz"]) == 2
    assert "holds no scene file: its scene holds something" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["python.npz", "python.py", "single.npz"]


def test_a_run_keeps_no_copy_of_a_large_grid():
    """A terrain given as a large array of heights is not copied into every run (to_toml still
    writes it, and it reads back exactly)."""
    from nhphys.scenefile.write import MAX_RUN_DATA
    from nhphys.surfaces import HeightField

    x = np.linspace(-1, 1, 300)
    heights = 0.05 * np.sin(3 * x)[:, None] * np.cos(2 * x)[None, :]
    assert heights.size > MAX_RUN_DATA
    scene = Scene()
    terrain = HeightField(heights, (-1, 1), (-1, 1))
    scene.add_body(_ball(), nhphys.RollingContact(terrain), position=[0.0, 0.0, 0.0])
    run = scene.simulate(0.02, 0.01, progress=False)
    assert "scene_toml" not in run.meta
    again = Scene.from_toml(scene.to_toml())
    assert again.grounds[0]["surface"].heights.tobytes() == heights.tobytes()
    small = Scene()
    small.add_body(_ball(), nhphys.RollingContact(HeightField(heights[::5, ::5], (-1, 1),
                                                              (-1, 1))), position=[0, 0, 0])
    assert "scene_toml" in small.simulate(0.02, 0.01, progress=False).meta


def test_a_damaged_stored_scene_file_is_a_value_error(tmp_path):
    scene = bundled("suslov_top")[0]
    run = scene.simulate(0.05, 0.01, progress=False)
    run.meta["scene_toml"] = run.meta["scene_toml"].replace("mass = 1.0", "mass = -1.0")
    with pytest.raises(ValueError, match=r"its scene file\): bodies\[0\].mass: expected a number "
                                         r"> 0, got -1.0"):
        run_scene_toml(run)
    run.meta["scene_toml"] = 42
    with pytest.raises(ValueError, match="must be the text of a scene file"):
        run_scene_toml(run)


# -- bad fields --------------------------------------------------------------------------------

BASE = """
name = "t"
[[grounds]]
name = "floor"
surface = { type = "plane" }
[[bodies]]
name = "a"
mass = 1.0
inertia = "uniform"
shape = { type = "sphere", radius = 0.1 }
contact = { type = "rolling", ground = "floor" }
"""
THREE = BASE + BASE[BASE.index("[[bodies]]"):].replace('"a"', '"b"') + \
    BASE[BASE.index("[[bodies]]"):].replace('"a"', '"c"').replace("radius = 0.1", "radius = -1")
SUSLOV = BASE.replace('{ type = "rolling", ground = "floor" }', '{ type = "suslov", axis = '
                                                              '[0, 0, 1] }')


def _with(old, new, base=BASE):
    assert old in base, old
    return base.replace(old, new, 1)


def _surface(text):
    return _with('surface = { type = "plane" }', f"surface = {{ {text} }}")


BAD = {  # kind: (text, field, fragments of the message)
    # wrong types
    "a string for a number": (_with("mass = 1.0", 'mass = "heavy"'), "bodies[0].mass",
                              ['expected a number > 0, got "heavy"']),
    "a boolean for a number": (_with("mass = 1.0", "mass = true"), "bodies[0].mass",
                               ["expected a number > 0, got true"]),
    "a table for a vector": (BASE + "initial = { omega = { x = 1 } }", "bodies[0].initial.omega",
                             ["expected an array of 3 numbers [x, y, z], got a table {x}"]),
    "a short vector": (BASE + "initial = { omega = [1, 2] }", "bodies[0].initial.omega",
                       ["expected an array of 3 numbers [x, y, z], got [1, 2]"]),
    "a string in a vector": (BASE + 'initial = { omega = [1, "2", 3] }',
                             "bodies[0].initial.omega[1]", ['expected a number, got "2"']),
    "a date": (_with('name = "t"', "name = 1979-05-27"), "name",
               ["expected a non-empty string, got a date/time 1979-05-27"]),
    "a number for a table": (_with('shape = { type = "sphere", radius = 0.1 }', "shape = 3"),
                             "bodies[0].shape", ["expected a table (a body shape, with a `type`)"]),
    "one table for an array of tables": (_with("[[grounds]]", "[grounds]"), "grounds",
                                         ["expected an array of tables ([[grounds]]"]),
    "a float for an integer": (BASE + "resolution = 32.0", "bodies[0].resolution",
                               ["expected an integer in [4, 2048], got 32.0"]),
    "a bad colour": (BASE + 'color = "notacolour"', "bodies[0].color",
                     ['expected a colour: "#rrggbb", a colour name or [r, g, b]']),
    # out of range
    "a negative radius": (THREE, "bodies[2].shape.radius", ["expected a number > 0, got -1"]),
    "a negative gravity": (_with('name = "t"', "gravity = -9.81"), "gravity",
                           ["expected a number >= 0, got -9.81"]),
    "an integer beyond the floats": (_with("mass = 1.0", "mass = 1" + "0" * 400), "bodies[0].mass",
                                     ["expected a finite number"]),
    "nan": (_with("mass = 1.0", "mass = nan"), "bodies[0].mass", ["got nan"]),
    "inf": (_with("mass = 1.0", "mass = inf"), "bodies[0].mass", ["got inf"]),
    "an opacity above 1": (_with('name = "floor"', 'name = "floor"\nopacity = 1.5'),
                           "grounds[0].opacity", ["expected a number in (0, 1], got 1.5"]),
    "a zero axis": (_with("axis = [0, 0, 1]", "axis = [0, 0, 0]", SUSLOV),
                    "bodies[0].contact.axis", ["expected a nonzero vector"]),
    "a direction too long to normalise": (_surface('type = "plane", normal = [1e200, 0, 0]'),
                                          "grounds[0].surface.normal",
                                          ["a direction whose largest component is between"]),
    "fps out of range": (BASE + "[run]\nfps = 1000", "run.fps",
                         ["expected a number in [0.1, 240], got 1000"]),
    "an image too small": (BASE + "[run]\nsize = [10, 10]", "run.size[0]",
                           ["expected an integer in [16, 8192], got 10"]),
    "t_final not a whole number of steps": (BASE + "[run]\nt_final = 1.0\ndt = 0.3", "run",
                                            ["is not a whole number of steps"]),
    "a huge grid": (_surface('type = "height_field", function = "x", x_range = [-1, 1], '
                             'y_range = [-1, 1], samples = 100000'),
                    "grounds[0].surface.samples", ["expected an integer in [4, 2049]"]),
    "a huge mesh": (BASE + "resolution = 100000", "bodies[0].resolution",
                    ["expected an integer in [4, 2048]"]),
    "an empty interval": (_surface('type = "height_field", function = "x", x_range = [1, -1], '
                                   'y_range = [-1, 1]'),
                          "grounds[0].surface.x_range", ["lo < hi"]),
    "a ragged grid": (_surface('type = "height_field", x_range = [-1, 1], y_range = [-1, 1], '
                               'heights = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0], [0, 0, 0, 0]]'),
                      "grounds[0].surface.heights[2]", ["expected a row of 4 numbers"]),
    "a non-rotation": (BASE + "initial = { orientation = [[1, 0, 0], [0, 1, 0], [0, 0, 2]] }",
                       "bodies[0].initial.orientation", ["to be a rotation matrix"]),
    "a non-unit quaternion": (BASE + "initial = { orientation = [1, 1, 0, 0] }",
                              "bodies[0].initial.orientation", ["unit quaternion, got norm 1.414"]),
    "an unknown integrator": (BASE + 'integrator = "rk4"', "bodies[0].integrator",
                              ['expected one of "exp", "cayley", "newmark", "dla", "reference"']),
    "a newer format": (_with('name = "t"', "format = 2"), "format", ["reads format 1, got 2"]),
    # unknown keys
    "an unknown body key": (_with("mass = 1.0", "mass = 1.0\nshpe = 1"), "bodies[0].shpe",
                            ["unknown key (did you mean `shape`?); a body accepts name, mass, "
                             "inertia, com, shape, contact, initial, color, resolution"]),
    "an unknown top-level key": (_with('name = "t"', "colour = 1"), "colour",
                                 ["unknown key; a scene file accepts format, name, description"]),
    "a key of another surface": (_surface('type = "plane", radius = 1'),
                                 "grounds[0].surface.radius",
                                 ["unknown key; a plane accepts type, point, normal, extent"]),
    "an initial condition of another contact": (BASE + "initial = { heading = 1.0 }",
                                                "bodies[0].initial.heading",
                                                ["the initial conditions of a rolling body "
                                                 "accepts position, orientation, omega"]),
    "an old spelling": (BASE + "initial = { omega0 = [1, 0, 0] }", "bodies[0].initial.omega0",
                        ["unknown key (did you mean `omega`?)"]),
    "an unknown surface type": (_with('type = "sphere"', 'type = "spere"'),
                                "bodies[0].shape.type", ['got "spere" (did you mean "sphere"?)']),
    "an unknown run setting": (BASE + "[run]\nsteps = 10", "run.steps",
                               ["the run settings accepts t_final, dt"]),
    # force elements
    "a force element without its stiffness": (BASE + "[[bodies.forces]]\ntype = 'spring'\n"
                                              "anchor = [0, 0, 1]\n", "bodies[0].forces[0].stiffness",
                                              ["missing; a linear spring needs stiffness, anchor"]),
    "an unknown force element": (BASE + "[[bodies.forces]]\ntype = 'sprung'\n",
                                 "bodies[0].forces[0].type", ['got "sprung" (did you mean '
                                                              '"spring"?)']),
    "one force table for an array": (BASE + "[bodies.forces]\ntype = 'spring'\n",
                                     "bodies[0].forces", ["expected an array of tables"]),
    "a negative damping coefficient": (BASE + "[[bodies.forces]]\ntype = 'linear_drag'\n"
                                       "coefficient = -0.1\n",
                                       "bodies[0].forces[0].coefficient",
                                       ["expected a number >= 0, got -0.1"]),
    "a key of another force element": (BASE + "[[bodies.forces]]\ntype = 'torque'\n"
                                       "value = [0, 0, 1]\npoint = [0, 0, 1]\n",
                                       "bodies[0].forces[0].point",
                                       ["unknown key; a torque accepts type, value, frame"]),
    "a schedule with unsorted times": (BASE + "[[bodies.forces]]\ntype = 'force'\nvalue = { "
                                       "times = [0, 2, 1], values = [[0, 0, 0], [1, 0, 0], "
                                       "[0, 0, 0]] }\n", "bodies[0].forces[0].value",
                                       ["expected `times` to be strictly increasing"]),
    "a schedule with a value missing": (BASE + "[[bodies.forces]]\ntype = 'force'\nvalue = { "
                                        "times = [0, 1], values = [[0, 0, 0]] }\n",
                                        "bodies[0].forces[0].value.values",
                                        ["expected an array of 2 values (one per time)"]),
    "a schedule value of the wrong size": (BASE + "[[bodies.forces]]\ntype = 'motor'\ntorque = "
                                           "{ times = [0, 1], values = [[0, 0, 0], [1, 0, 0]] }"
                                           "\n", "bodies[0].forces[0].torque.values[0]",
                                           ["expected a number, got [0, 0, 0]"]),
    "a motor with nothing to do": (BASE + "[[bodies.forces]]\ntype = 'motor'\n",
                                   "bodies[0].forces[0]", ["expected a `torque`, a "
                                                           "`target_speed`, or both"]),
    "a speed target without gain": (BASE + "[[bodies.forces]]\ntype = 'motor'\n"
                                    "target_speed = 3\n", "bodies[0].forces[0]",
                                    ["a `target_speed` needs a `gain` > 0"]),
    # missing keys
    "no mass": (_with("mass = 1.0\n", ""), "bodies[0].mass",
                ["missing; a body needs mass, inertia, shape, contact"]),
    "no bodies": ('name = "empty"\n', "bodies", ["missing; a scene file needs bodies"]),
    "an empty bodies array": ("bodies = []\n", "bodies", ["expected at least one body"]),
    "no surface type": (_surface("radius = 1"), "grounds[0].surface.type",
                        ["missing; a ground surface needs a type: plane, sphere"]),
    "no ground range": (_surface('type = "height_field", function = "x", x_range = [-1, 1]'),
                        "grounds[0].surface.y_range", ["missing; a height field needs"]),
    "no suslov axis": (_with(", axis = [0, 0, 1]", "", SUSLOV), "bodies[0].contact.axis",
                       ["missing; a Suslov contact needs axis"]),
    "which ground": (_with("[[bodies]]", '[[grounds]]\nname = "wall"\nsurface = { type = '
                                         '"plane", point = [5, 0, 0] }\n[[bodies]]')
                     .replace(', ground = "floor"', ""), "bodies[0].contact.ground",
                     ["missing; a rolling contact needs the name of its ground (2 grounds"]),
    # references and names
    "an unknown ground": (_with('ground = "floor"', 'ground = "flor"'),
                          "bodies[0].contact.ground", ['no ground named "flor" (the grounds: '
                                                       '"floor")']),
    "a knife edge on a turntable": (_with('surface = { type = "plane" }', 'surface = { type = '
                                          '"plane" }\nmotion = { rate = 1.0 }')
                                    .replace('"rolling"', '"knife_edge"'),
                                    "bodies[0].contact.ground",
                                    ['"floor" is a moving ground']),
    "a ground motion that is both": (_with('surface = { type = "plane" }', 'surface = { type = '
                                           '"plane" }\nmotion = { rate = 1.0, velocity = '
                                           '[1, 0, 0] }'), "grounds[0].motion",
                                     ["a steady rotation (`rate`, with `axis` and `center`) or a "
                                      "uniform translation (`velocity`), one of the two"]),
    "a translation about an axis": (_with('surface = { type = "plane" }', 'surface = { type = '
                                          '"plane" }\nmotion = { velocity = [1, 0, 0], axis = '
                                          '[0, 0, 1] }'), "grounds[0].motion.axis",
                                    ["a uniform translation takes only `velocity`"]),
    "a turntable about no axis": (_with('surface = { type = "plane" }', 'surface = { type = '
                                        '"plane" }\nmotion = { rate = 1.0, axis = [0, 0, 0] }'),
                                  "grounds[0].motion.axis", ["expected a nonzero vector"]),
    "an unknown motion key": (_with('surface = { type = "plane" }', 'surface = { type = '
                                    '"plane" }\nmotion = { rate = 1.0, centre = [0, 0, 0] }'),
                              "grounds[0].motion.centre", ["did you mean `center`?"]),
    "a knife edge on a sphere": (_surface('type = "sphere", radius = 1').replace('"rolling"',
                                                                                 '"knife_edge"'),
                                 "bodies[0].contact.ground", ["a knife edge slides on a plane at rest"]),
    "two bodies with one name": (BASE + BASE[BASE.index("[[bodies]]"):], "bodies[1].name",
                                 ['the name "a" is taken by bodies[0]']),
    "a name with a control character": (_with('name = "a"', 'name = "a\\u001b[31m"'),
                                        "bodies[0].name", ["printable characters"]),
    # expressions
    "code in an expression": (_surface('type = "height_field", x_range = [-1, 1], y_range = '
                                       '[-1, 1], function = "__import__(\'os\').system(\'touch '
                                       'PWNED\')"'),
                              "grounds[0].surface.function", ["calls __import__"]),
    "a huge power": (_surface('type = "height_field", function = "9**9**9", x_range = [-1, 1], '
                              'y_range = [-1, 1]'),
                     "grounds[0].surface.function", ["a power beyond 1e300"]),
    "an unknown variable": (_surface('type = "parametric", x = "u", y = "v", z = "w"'),
                            "grounds[0].surface.z", ["only the variables u, v", "also uses w"]),
    "an expression that is not one": (_surface('type = "surface_of_revolution", radius = '
                                               '"1 +", height = "t", t_range = [0, 1]'),
                                      "grounds[0].surface.radius", ["does not parse"]),
    "a kink": (_surface('type = "parametric", x = "u", y = "v", z = "abs(u)"'),
               "grounds[0].surface.z", ["smooth expression", "Abs"]),
    "a variable that is a keyword": (_surface('type = "parametric", x = "u", y = "v", z = "0", '
                                              'variables = ["lambda", "v"]'),
                                     "grounds[0].surface.variables[0]", ["a variable name"]),
    "a profile reaching the axis": (_surface('type = "surface_of_revolution", radius = "t", '
                                             'height = "t", t_range = [-1, 1]'),
                                    "grounds[0].surface", ["`radius` to be > 0"]),
    # refusals of the library, under the table that made them
    "com outside the shape": (_with('inertia = "uniform"', "inertia = [1, 1, 1]\ncom = [0, 0, "
                                                           "0.5]"),
                              "bodies[0]", ["expected `com` to lie inside the shape"]),
    "uniform inertia off centre": (_with('inertia = "uniform"', 'inertia = "uniform"\ncom = [0, '
                                                                '0, 0.05]'),
                                   "bodies[0].inertia", ['"uniform" is about the shape']),
    "an inertia that is not positive": (_with('inertia = "uniform"', "inertia = [[1, 0, 0], "
                                                                     "[0, 1, 0], [0, 0, -1]]"),
                                        "bodies[0].inertia", ["positive definite"]),
    "a self-intersecting torus": (_surface('type = "torus", major_radius = 1, minor_radius = 2'),
                                  "grounds[0].surface", ["the torus would intersect itself"]),
    "a velocity violating the constraint": (SUSLOV + "initial = { omega = [0, 0, 1] }",
                                            "bodies[0].initial.omega",
                                            ["expected `omega` to satisfy the constraint"]),
    "omega and momentum": (SUSLOV + "initial = { omega = [1, 0, 0], momentum = [1, 0, 0] }",
                           "bodies[0].initial", ["give one of `omega` and `momentum`"]),
    "a ball bigger than its bowl": (_surface('type = "sphere", radius = 0.05, orientation = '
                                             '"inward"'),
                                    "bodies[0]", ["expected the body to fit the ground"]),
}


@pytest.mark.parametrize("kind", list(BAD))
def test_every_kind_of_bad_field_names_its_path(kind, tmp_path, monkeypatch):
    text, field, fragments = BAD[kind]
    monkeypatch.chdir(tmp_path)  # an expression that ran would write here
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SceneFileError) as info:
        Scene.from_toml(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.field == field, str(err)
    message = str(err)
    assert message.startswith(f"{path}: {field}: "), message
    for fragment in fragments:
        assert fragment in message, message
    assert "\n" not in message
    assert os.listdir(tmp_path) == ["bad.toml"]


def test_a_small_file_cannot_ask_for_unbounded_sizes(monkeypatch):
    """Each table's sizes are bounded (BAD above), and so are their sums over the file: a short
    file repeating a large table is refused before it is built."""
    from nhphys.scenefile import read

    fine = _with('surface = { type = "plane" }', 'resolution = 2048\nsurface = { type = "plane" }')
    with pytest.raises(SceneFileError) as info:  # 2048^2 for the ground, then 48^2 for the body
        Scene.from_toml(fine)
    assert info.value.field == "bodies[0].resolution"
    assert "more than 4,194,304 display mesh vertices" in str(info.value)
    grid = '[[grounds]]\nname = "g{i}"\nsurface = {{ type = "height_field", function = "x", ' \
           'x_range = [-1, 1], y_range = [-1, 1], samples = {n} }}\n'
    knots = '[[grounds]]\nname = "k{i}"\nsurface = {{ type = "surface_of_revolution", ' \
            'radius = "1", height = "t", t_range = [0, 1], knots = {n} }}\n'
    monkeypatch.setitem(read.TOTALS, "height-field samples", 1000)
    monkeypatch.setitem(read.TOTALS, "profile knots", 1000)
    monkeypatch.setitem(read.TOTALS, "schedule times (summed over every force schedule)", 1000)
    times = list(range(300))
    schedule = (f"[[bodies.forces]]\ntype = 'torque'\nvalue = {{ times = {times}, values = {[[0, 0, float(i)] for i in times]} }}\n"
                )
    with pytest.raises(SceneFileError) as info:
        Scene.from_toml(BASE + schedule * 4)
    assert info.value.field == "bodies[0].forces[3].value.times"
    assert "more than 1,000 schedule times" in str(info.value)
    for table, n, field, what in [(grid, 20, "grounds[3].surface.samples", "height-field"),
                                  (knots, 300, "grounds[4].surface.knots", "profile knots")]:
        text = BASE + "".join(table.format(i=i, n=n) for i in range(10))
        with pytest.raises(SceneFileError) as info:
            Scene.from_toml(text)
        assert info.value.field == field and f"more than 1,000 {what}" in str(info.value)


def test_the_example_of_the_issue_is_the_message():
    with pytest.raises(SceneFileError) as info:
        Scene.from_toml(THREE)
    assert str(info.value) == "bodies[2].shape.radius: expected a number > 0, got -1"


@pytest.mark.parametrize("text, line", [
    (BASE.replace("mass = 1.0", "mass = = 1.0"), 8),
    ('name = "t"\n[[bodies]\n', 2),
    ('name = "t"\nname = "u"\n', 2),
    ('a = 1\nb = "unterminated\n', 2),
    ("x = [1, 2,\n\n  3 4]\n", 3),
])
def test_malformed_toml_names_the_line(text, line):
    with pytest.raises(SceneFileError) as info:
        Scene.from_toml(text)
    assert info.value.field is None
    assert re.search(rf"not valid TOML: .*\(at line {line}, column \d+\)", str(info.value)), \
        str(info.value)


def test_text_that_is_not_a_scene_file_at_all(tmp_path):
    for raw, fragment in [(b"\xff\xfe bad = 1", "not UTF-8 text"),
                          ("x = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
                          (b"import os\nos.system('touch PWNED')\n", "not valid TOML")]:
        with pytest.raises(SceneFileError, match=fragment):
            nhphys.scenefile.loads(raw)
    with pytest.raises(TypeError, match="scene file text"):
        nhphys.scenefile.loads(42)
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(nhphys.scenefile.read.MAX_TEXT_BYTES + 1)
    with pytest.raises(SceneFileError, match="larger than"):
        Scene.from_toml(big)


# -- the command line -----------------------------------------------------------------------------

def test_run_a_scene_file_by_path_and_by_bundled_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with open(os.path.join(SCENE_DIR, "ball_in_tube.toml"), encoding="utf-8") as f:
        text = f.read().replace("t_final = 4.0", "t_final = 0.05")
    (tmp_path / "tube.toml").write_text(text, encoding="utf-8")
    assert cli.main(["run", "tube.toml", "--no-progress", "--out", "tube.npz"]) == 0
    out = capsys.readouterr().out
    assert "ball_in_tube: 1 body(ies), t_final = 0.05 s, dt = 0.001 s (tube.toml)" in out
    assert len(nhphys.Trajectory.load("tube.npz")) == 51
    assert cli.main(["run", "rattleback_pair", "--t-final", "0.02", "--no-progress",
                     "--no-render"]) == 0
    assert "rattleback_pair: 2 body(ies)" in capsys.readouterr().out
    # a scene file of the current folder is never run by a bare name
    (tmp_path / "rattleback_pair.toml").write_text("this = 'is not the bundled one'\n")
    assert cli.main(["run", "rattleback_pair", "--t-final", "0.02", "--no-progress",
                     "--no-render"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["rattleback_pair.toml", "tube.npz", "tube.toml"]


def test_a_bad_scene_file_is_a_usage_error_naming_the_field(tmp_path):
    (tmp_path / "bad.toml").write_text(THREE)
    (tmp_path / "broken.toml").write_text("name = \n")
    (tmp_path / "notes.txt").write_text(BASE)
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    for args, fragments in [
            (["run", "bad.toml"], ["nhphys run: error: bad.toml: bodies[2].shape.radius: "
                                   "expected a number > 0, got -1"]),
            (["view", "bad.toml", "--off-screen"], ["bodies[2].shape.radius"]),
            (["run", "broken.toml"], ["broken.toml: not valid TOML", "line 1"]),
            (["run", "notes.txt"], ["is not a scene file", "or a declarative scene file ending "
                                                         "with .toml"]),
            (["run", "missing.toml"], ["no scene file 'missing.toml'"]),
            (["scene-file", "bad.toml"], ["bodies[2].shape.radius"])]:
        result = subprocess.run([sys.executable, "-m", "nhphys", *args], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        for fragment in fragments:
            assert fragment in lines[0], lines[0]
    assert sorted(os.listdir(tmp_path)) == ["bad.toml", "broken.toml", "notes.txt"]


def test_view_and_render_take_a_scene_file(tmp_path):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    path = os.path.join(SCENE_DIR, "ball_in_tube.toml")
    result = subprocess.run([sys.executable, "-m", "nhphys", "view", path, "--frames", "2",
                             "--size", "96x64", "--record", "live.gif", "--off-screen"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path)) == ["live.gif"]


def test_list_shows_the_scene_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    user = tmp_path / "mine"
    user.mkdir()
    (user / "good.toml").write_text('description = "My scene.\\nMore."\n' + BASE)
    (user / "broken.toml").write_text("[[[\n")
    monkeypatch.setenv("NHPHYS_SCENES", str(user))
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"ball_in_tube +A ball rolling round the inside of a vertical tube does not "
                     r"fall: it swings up and down\.  \(scene file, \.toml\)", out)
    assert re.search(r"rattleback_pair +Two rattlebacks", out)
    assert re.search(r"good +My scene\.  \(scene file, \.toml\)", out)
    assert "broken" not in out
    assert cli.bundled_scenes()["good"] == os.path.realpath(user / "good.toml")


def test_the_bundled_scene_files_are_package_data():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert "*.toml" in project["tool"]["setuptools"]["package-data"]["nhphys.scenes"]
    assert "tomli>=1.1; python_version < '3.11'" in project["project"]["dependencies"]
    from importlib import resources

    names = {p.name for p in resources.files("nhphys.scenes").iterdir()}
    assert {f"{n}.toml" for n in TOML_SCENES} <= names
    for name in TOML_SCENES:
        assert cli.bundled_scenes()[name].endswith(f"{name}.toml")


# -- what the bundled scene files say ---------------------------------------------------------

def test_ball_in_tube_swings_as_the_closed_form_says(backend):
    """A ball (I = 2/5 m r^2) rolling inside a vertical tube: its centre turns about the axis
    at a constant rate Omega, and its height is harmonic with angular frequency
    Omega sqrt(I / (I + m r^2)) = Omega sqrt(2/7), starting at rest at its top, with
    acceleration -g m r^2 / (I + m r^2) = -5 g / 7 there: it swings down by
    2 (5 g / 7) / (2/7 Omega^2) = 5 g / Omega^2 (derivation in docs/scene-files.md)."""
    scene = Scene.from_toml(os.path.join(SCENE_DIR, "ball_in_tube.toml"))
    period = 2 * np.pi / (12.0 * np.sqrt(2 / 7))
    traj = scene.simulate(1.2, 0.001, backend=backend, save_every=1, progress=False)
    p = traj.position[:, 0]
    phi = np.unwrap(np.arctan2(p[:, 1], p[:, 0]))
    assert np.abs(np.diff(phi) / 0.001 - 12.0).max() < 1e-3 * 12  # Omega: constant
    np.testing.assert_allclose(np.hypot(p[:, 0], p[:, 1]), 0.25, rtol=0, atol=1e-12)
    z = p[:, 2]
    g = scene.gravity
    np.testing.assert_allclose(z, -2.5 * g / 144 * (1 - np.cos(2 * np.pi * traj.t / period)),
                               rtol=0, atol=2e-4)  # 0.34 m of swing, h^2 error
    low = np.argmin(z)
    assert abs(traj.t[low] - period / 2) < 2e-3 and abs(z[low] + 5 * g / 144) < 1e-4


def _spin_about_vertical(traj):
    return np.einsum("nbij,nbj->nbi", traj.R, traj.omega)[..., 2]


@pytest.mark.kernels_only("10.5 s of two rattlebacks: 21,000 rolling steps, about 150 s on "
                          "the twins")
def test_rattleback_pair_reverses_as_its_description_says(backend):
    scene = Scene.from_toml(os.path.join(SCENE_DIR, "rattleback_pair.toml"))
    assert scene.body_names == ["counter-clockwise", "clockwise"]
    traj = scene.simulate(10.5, 0.001, backend=backend, save_every=100, progress=False)
    w = _spin_about_vertical(traj)
    np.testing.assert_allclose(w[0], [5.0, -5.0], rtol=1e-3)  # the tilt turns the axis a little
    reversal = traj.t[np.argmax(w[:, 1] > 0)]
    assert 2.0 < reversal < 3.0 and w[-1, 1] > 0
    assert np.all(w[:, 0] > 0)  # counter-clockwise: still turning the same way at t_final
    rel = np.abs(traj.energy / traj.energy[0] - 1)
    assert rel.max() < 3e-3  # measured 1.4e-3, while the clockwise one reverses


@pytest.mark.slow
def test_rattleback_pair_reversal_matches_the_reference_integrator():
    """The reversal is the physics', not the step's: DOP853 on the rolling equations (15 s)."""
    from nhphys.integrators import Reference

    scene = Scene.from_toml(os.path.join(SCENE_DIR, "rattleback_pair.toml"))
    body = scene.bodies[1]
    ref = nhphys.simulate(body.system, 3.5, 0.5, Reference(rtol=1e-6, atol=1e-10),
                          **body.conditions)
    w = np.einsum("nij,nj->ni", ref.R, ref.omega)[:, 2]
    assert np.all(w[:6] < 0) and np.all(w[6:] > 0)  # reverses between 2.5 and 3 s
    run = scene.simulate(3.5, 0.001, save_every=500, progress=False)
    assert np.abs(_spin_about_vertical(run)[:, 1] - w).max() < 0.15  # of a 5 rad/s spin


def test_the_worked_example_of_the_docs_reads_and_runs():
    with open(os.path.join(ROOT, "docs", "scene-files.md"), encoding="utf-8") as f:
        doc = f.read()
    blocks = re.findall(r"```toml\n(.*?)```", doc, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        if "# not a whole scene" in block:
            continue
        scene = Scene.from_toml(block)
        settings_ = scene.defaults
        run = scene.simulate(20 * settings_.get("dt", 0.01), settings_.get("dt", 0.01),
                             progress=False)
        assert np.all(np.isfinite(run.position))


# -- the TOML writer ---------------------------------------------------------------------------

floats = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@FUZZ
@given(value=st.recursive(
    st.one_of(floats, st.integers(-2**63, 2**63 - 1), st.booleans(), texts),
    lambda inner: st.lists(inner, max_size=4), max_leaves=20),
    key=texts)
@example(value=[-0.0, 5e-324, 1.7976931348623157e308, 1e16, 0.1], key="a b")
def test_the_writer_reads_back_to_the_same_values(value, key):
    back = tomllib.loads(dumps({"k": value, "table": {key: value}}))
    # json spells floats with repr: equal text is equal bits, the sign of zero included
    assert json.dumps(back["k"]) == json.dumps(value)
    assert json.dumps(back["table"][key]) == json.dumps(value)


# -- fuzzing ----------------------------------------------------------------------------------

def read_or_refuse(text, outcomes):
    """Read ``text``; only a scene (which writes back to a file that reads back to the same
    text) or a ValueError / TypeError may come out."""
    with outcomes.example():
        try:
            scene = nhphys.scenefile.loads(text)
        except (ValueError, TypeError) as exc:
            outcomes.counts[type(exc).__name__] += 1
            return
        outcomes.counts["read"] += 1
        written = scene.to_toml()
        assert Scene.from_toml(written).to_toml() == written


_seeds = []


def seeds():
    """Valid scene files to mutate: small ones, the bundled ones, and every kind of table."""
    if not _seeds:
        _seeds.extend([BASE, THREE, SUSLOV, every_kind_scene().to_toml()])
        for name in TOML_SCENES:
            with open(os.path.join(SCENE_DIR, f"{name}.toml"), encoding="utf-8") as f:
                _seeds.append(f.read())
    return _seeds


TOKENS = ["=", "[", "]", "{", "}", ",", '"', "'", "\n", ".", "-", "1e999", "nan", "-0", "0",
          "1e-320", "true", "[[bodies]]", "[[grounds]]", "[run]", "type", "radius", "mass",
          "\"x**x**x\"", "\"__import__('os')\"", "[1, 2, 3]", "\"uniform\"", "inward", "#"]


@pytest.fixture(scope="module")
def text_outcomes():
    outcomes = Outcomes("scene file: mutated text")
    yield outcomes
    outcomes.report()


@FUZZ
@given(data=st.data())
def test_fuzz_mutated_scene_file_text(data, text_outcomes):
    text = data.draw(st.sampled_from(seeds()), label="seed")
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        at = data.draw(st.integers(0, len(text)), label="at")
        kind = data.draw(st.sampled_from(["delete", "insert", "replace", "token", "swap"]))
        if kind == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 12)):]
        elif kind == "insert":
            text = text[:at] + data.draw(st.text(max_size=6)) + text[at:]
        elif kind == "token":
            text = text[:at] + data.draw(st.sampled_from(TOKENS)) + text[at:]
        elif kind == "replace":
            number = data.draw(st.sampled_from(["-1", "0", "1e308", "-1e-300", "3", "2049",
                                                "100000", '"a"', "[]", "{}"]))
            text = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", number, text, count=1) if at % 2 else \
                text[:at] + number + text[at + 1:]
        else:
            lines = text.splitlines(keepends=True)
            i, j = (data.draw(st.integers(0, max(0, len(lines) - 1))) for _ in range(2))
            lines[i], lines[j] = lines[j], lines[i]
            text = "".join(lines)
    read_or_refuse(text, text_outcomes)


def _mutate_tree(data, tree, depth=0):
    """``tree`` (the tables of a scene file) with one value somewhere replaced, removed or
    given a neighbour."""
    if isinstance(tree, dict) and tree:
        key = data.draw(st.sampled_from(sorted(tree)))
        if depth > 0 and data.draw(st.integers(0, 3)) == 0 or not isinstance(
                tree[key], (dict, list)):
            action = data.draw(st.sampled_from(["replace", "remove", "add"]))
            if action == "remove":
                del tree[key]
            elif action == "add":
                tree[data.draw(st.sampled_from(["forces", "radius", "x", "type", "extra",
                                                "orientation", "omega", "name"]))] = \
                    data.draw(VALUES)
            else:
                tree[key] = data.draw(VALUES)
        else:
            _mutate_tree(data, tree[key], depth + 1)
    elif isinstance(tree, list) and tree:
        i = data.draw(st.integers(0, len(tree) - 1))
        if isinstance(tree[i], (dict, list)) and data.draw(st.booleans()):
            _mutate_tree(data, tree[i], depth + 1)
        else:
            tree[i] = data.draw(VALUES)


VALUES = st.recursive(
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**63, 2**63 - 1),
              st.booleans(), st.sampled_from(["", "x", "sphere", "plane", "rolling", "suslov",
                                              "knife_edge", "inward", "uniform", "floor", "t",
                                              "1/x", "sqrt(-1)", "exp(1000)", "log(0)",
                                              "sin(u)*v", "#ff0000", "exp"]),
              st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(st.sampled_from(["type", "radius", "rotation_vector",
                                                             "x", "t"]), inner,
                                            max_size=3)),
    max_leaves=12)


@pytest.fixture(scope="module")
def tree_outcomes():
    outcomes = Outcomes("scene file: mutated tables")
    yield outcomes
    outcomes.report()


@FUZZ
@given(data=st.data())
def test_fuzz_mutated_scene_file_tables(data, tree_outcomes):
    tree = tomllib.loads(data.draw(st.sampled_from(seeds()), label="seed"))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        _mutate_tree(data, tree)
    read_or_refuse(_toml(tree), tree_outcomes)


NON_FINITE = {"nan": "\x00nan", "inf": "\x00inf", "-inf": "\x00-inf"}


def _toml(tree):
    """TOML text of ``tree``, non-finite floats included (TOML spells them ``nan``, ``inf``;
    the writer refuses them, so they go in as placeholders)."""
    def swap(value):
        if isinstance(value, float) and not math.isfinite(value):
            return NON_FINITE[repr(value)]
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        return value

    text = dumps(swap(tree))
    for word, placeholder in NON_FINITE.items():
        text = text.replace(json.dumps(placeholder), word)
    return text
