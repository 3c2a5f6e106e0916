"""Articulated systems in a scene (``Scene.add_articulated``): a bicycle beside a rolling ball.

A scene's run is the systems' own runs side by side, so the bicycle's links follow the lone
bicycle's run bit for bit, and their recorded motion is checked against independent facts: the
link rotations' finite differences give the recorded angular velocities, and the links' kinetic
and potential energies from finite differences of their poses add up to the system's energy.
Display meshes, exports, saving, resuming and bad input are checked too. Every run test runs on
the kernel and on the twin.
"""

import numpy as np
import pytest

import nhphys
from nhphys import Scene, export, scene as scene_module
from nhphys.forces import JointMotor
from nhphys.integrators import DLA, Composition, Reference
from nhphys.integrators.coefficients import composition
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import Articulated, Bicycle, Joint, Wheel
from nhphys.trajectory import Trajectory
from test_resume import Killed, assert_same, kill_at_append

DT = 2e-3
START = {"speed": 5.0, "roll": 0.02, "roll_rate": 0.3}
BALL = nhphys.RigidBody(1.0, [4e-3] * 3, Sphere(0.1), name="ball")


def round_trip(scene, backend, t_final=0.05, dt=1e-3):
    """``scene``'s file, checked: it reads back to a scene that writes the same text and
    whose run equals the scene's, every field bit for bit."""
    text = scene.to_toml()
    again = Scene.from_toml(text)
    assert again.to_toml() == text and again.body_names == scene.body_names
    a = scene.simulate(t_final, dt, backend=backend)
    b = again.simulate(t_final, dt, backend=backend)
    for key in a.fields:
        assert a[key].tobytes() == b[key].tobytes(), key
    return text


def park(**bike):
    scene = Scene(name="park")
    floor = scene.add_ground(Plane(extent=20.0))
    entry = scene.add_articulated(Bicycle(**bike), **START)
    scene.add_body(BALL, nhphys.RollingContact(floor), position=[0.0, 2.0, 0.0],
                   omega=[3.0, 0.0, 1.0])
    return scene, entry


def test_links_follow_the_lone_bicycle_bit_for_bit(backend):
    scene, entry = park()
    traj = scene.simulate(40 * DT, DT, backend=backend, save_every=2)
    assert traj.body_names == ["bicycle.rear_frame", "bicycle.rear_wheel",
                               "bicycle.front_frame", "bicycle.front_wheel", "ball"]
    alone = nhphys.simulate(Bicycle(), 40 * DT, DT, integrator=DLA(), backend=backend,
                            save_every=2, **START)
    bike = Bicycle()
    for i in range(len(traj)):
        kin = bike.tree.kinematics(alone.q[i], alone.v[i], bias=False)
        for j, b in enumerate(entry.links):
            com = kin["o"][b] + kin["R"][b] @ bike.tree.com[b]
            np.testing.assert_array_equal(traj.R[i, j], kin["R"][b])
            assert np.abs(traj.position[i, j] - com).max() <= 1e-15 * (1 + np.abs(com).max())
    for j in range(4):  # the system's energy, work and residual on each of its links
        np.testing.assert_array_equal(traj.energy[:, j], alone.energy)
        np.testing.assert_array_equal(traj.constraint_residual[:, j], alone.constraint_residual)
    # the wheels' contact points are the lone run's, on the ground
    np.testing.assert_array_equal(traj.contact_point[:, 1], alone.rear_contact)
    np.testing.assert_array_equal(traj.contact_point[:, 3], alone.front_contact)
    ball = nhphys.simulate(nhphys.RollingContact(Plane()).system(BALL, 9.81), 40 * DT, DT,
                           integrator="exp", backend=backend, save_every=2,
                           position=[0.0, 2.0, 0.0], omega=[3.0, 0.0, 1.0])
    np.testing.assert_array_equal(traj.position[:, 4], ball.position)


def _hat_inverse(W):
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def test_link_motion_against_finite_differences_of_the_poses(backend):
    """omega in the link frame from R^T dR/dt, and sum over links of
    m |dc/dt|^2 / 2 + omega . I omega / 2 + m g z equal to the system's energy."""
    h = 1e-3
    scene = Scene(name="ride")
    entry = scene.add_articulated(Bicycle(), **START)
    traj = scene.simulate(0.2, h, backend=backend)
    tree = entry.system.tree
    for i in (20, 100, 180):
        dR = (traj.R[i + 1] - traj.R[i - 1]) / (2 * h)
        dc = (traj.position[i + 1] - traj.position[i - 1]) / (2 * h)
        energy = 0.0
        for j, b in enumerate(entry.links):
            omega = _hat_inverse(traj.R[i, j].T @ dR[j])
            assert np.abs(omega - traj.omega[i, j]).max() < 1e-4 * (1 + np.abs(omega).max())
            energy += (0.5 * tree.mass[b] * dc[j] @ dc[j]
                       + 0.5 * omega @ tree.inertia[b] @ omega
                       + tree.mass[b] * 9.81 * traj.position[i, j, 2])
        assert abs(energy - traj.energy[i, 0]) < 1e-5 * abs(traj.energy[i, 0])


def cart(forces=None):
    """A body on two wheels of an axle (the second with only its rolling row)."""
    r, b = 0.1, 0.2
    joints = [Joint(-1, "prismatic", (1, 0, 0), name="x"),
              Joint(0, "prismatic", (0, 1, 0), name="y"),
              Joint(1, "revolute", (0, 0, 1), offset=(0, 0, r), mass=2.0, com=(0.05, 0, 0.05),
                    inertia=np.diag([0.02, 0.02, 0.03]), name="heading"),
              Joint(2, "revolute", (0, 1, 0), offset=(0, b, 0), mass=0.3,
                    inertia=np.diag([1.5e-3, 3e-3, 1.5e-3]), name="left"),
              Joint(2, "revolute", (0, 1, 0), offset=(0, -b, 0), mass=0.3,
                    inertia=np.diag([1.5e-3, 3e-3, 1.5e-3]), name="right")]
    return Articulated(joints, [Wheel(3, r), Wheel(4, r, sideways=False)], name="Cart",
                       forces=forces)


def test_a_cart_shows_its_frame_and_wheels(backend):
    """A generic tree pushed by wheel motors: its links are the frame and the two wheels,
    named by their joints."""
    cart_ = cart([JointMotor("left", torque=0.02), JointMotor("right", torque=0.01)])
    scene = Scene(name="yard")
    entry = scene.add_articulated(cart_, q=np.zeros(5),
                                  v=cart_.rates(np.zeros(5), {3: 1.0, 4: 2.0}))
    assert entry.names == ["cart.heading", "cart.left", "cart.right"]
    traj = scene.simulate(0.1, 1e-3, backend=backend, save_every=10)
    assert np.all(traj.work[-1] > 0) and np.all(traj.work[-1] == traj.work[-1, 0])
    conserved = traj.energy[:, 0] - traj.work[:, 0]
    assert np.ptp(conserved) < 1e-6 * abs(conserved[0])
    for j in (1, 2):  # each wheel's contact point is under its centre, on the ground
        assert np.abs(traj.contact_point[:, j, 2]).max() < 1e-13
        assert np.abs(traj.contact_point[:, j, :2] - traj.position[:, j, :2]).max() < 1e-13
    assert np.array_equal(traj.contact_point[:, 0, :2], traj.position[:, 0, :2])


def test_meshes_put_the_rims_on_the_wheels():
    """Each wheel link's mesh, placed by the recorded pose, is a rim of the wheel's radius about
    its centre, touching the ground."""
    scene, entry = park()
    traj = scene.simulate(10 * DT, DT)
    display = scene.display()
    bike = entry.system
    for j, radius in ((1, bike.rear_radius), (3, bike.front_radius)):
        item = display.bodies[j]
        assert item["name"] == entry.names[j] and item["colors"].shape == item["points"].shape
        world = item["points"] @ traj.R[-1, j].T + traj.position[-1, j]
        distance = np.linalg.norm(world - traj.position[-1, j], axis=1)
        assert distance.max() == pytest.approx(1.05 * radius, rel=1e-12)  # the rim's tube
        # no vertex below the smooth rim's lowest point; the lowest vertex within the
        # polygons' sagitta of it (48 segments round the rim, 10 round the tube)
        sagitta = 1.05 * radius * (1 - np.cos(np.pi / 48)) + 0.05 * radius * (1 - np.cos(np.pi / 10))
        assert -0.05 * radius - 1e-12 <= world[:, 2].min() <= -0.05 * radius + sagitta
    assert len(display.bodies) == 5 and display.grounds[0]["name"] == "ground0"


def test_saved_exported_and_replayed(tmp_path):
    scene, entry = park()
    traj = scene.simulate(20 * DT, DT, save_every=5)
    traj.save(tmp_path / "park.npz")
    back = Trajectory.load(tmp_path / "park.npz")
    assert_same(back, traj)
    assert back.body_names == traj.body_names
    from nhphys.scene_display import SceneDisplay

    shown = SceneDisplay.from_trajectory(back)
    assert [b["name"] for b in shown.bodies] == traj.body_names
    import pyvista as pv

    path = export.to_pvd(back, str(tmp_path / "park.pvd"))
    reader = pv.get_reader(path)
    reader.set_active_time_value(back.t[-1])
    blocks = reader.read()
    for j in range(5):
        expected = shown.bodies[j]["points"] @ back.R[-1, j].T + back.position[-1, j]
        assert np.abs(blocks[j].points - expected).max() < 1e-12
    frames = nhphys.viz.play(back, scene=scene, frames=3, off_screen=True)
    assert len(frames) == 3


def test_stepped_live_off_screen():
    scene, _ = park()
    frames = nhphys.viz.show(scene, dt=DT, frames=3, off_screen=True, size=(320, 240))
    assert len(frames) == 3 and frames[-1].shape == (240, 320, 3)


def test_a_killed_scene_run_resumes_bit_for_bit(backend, monkeypatch, tmp_path):
    monkeypatch.setattr(scene_module, "CHUNK_STEPS", 20)  # 10 steps a chunk for two entries
    scene, _ = park()
    reference = scene.simulate(35 * DT, DT, backend=backend, save_every=2)
    out = tmp_path / "park.npz"
    revive = kill_at_append(monkeypatch, 2)
    with pytest.raises(Killed):
        park()[0].simulate(35 * DT, DT, backend=backend, save_every=2, out=out)
    revive()
    traj = park()[0].simulate(35 * DT, DT, backend=backend, save_every=2, out=out, resume=True)
    assert traj.meta["resumed_at_step"] == 10
    assert_same(traj, reference)


def test_its_own_integrator_and_the_composition(backend):
    order4 = Composition([(DLA(), w) for w in composition(4)])
    scene = Scene(name="ride")
    scene.add_articulated(Bicycle(), integrator=order4, **START)
    traj = scene.simulate(10 * DT, DT, integrator="exp", backend=backend)
    alone = nhphys.simulate(Bicycle(), 10 * DT, DT, integrator=order4, backend=backend, **START)
    np.testing.assert_array_equal(traj.energy[:, 0], alone.energy)
    assert "Composition" in traj.meta["integrators"][0]


def test_bad_input_is_refused_by_name():
    scene = Scene(name="park")
    with pytest.raises(TypeError, match="Articulated"):
        scene.add_articulated(BALL, speed=1.0)
    with pytest.raises(ValueError, match="does not fit the plane"):
        Scene(gravity=9.8).add_articulated(Bicycle(), speed=1.0)
    with pytest.raises(ValueError, match="does not fit the plane"):  # a level bicycle, a slope
        scene.add_articulated(Bicycle(), ground=Plane(normal=(0.1, 0, 1)), speed=1.0)
    with pytest.raises(ValueError, match="does not fit the plane"):  # and the other way round
        scene.add_articulated(Bicycle(slope=0.1), ground=Plane(), speed=1.0)
    with pytest.raises(TypeError, match="Plane"):
        scene.add_articulated(Bicycle(), ground=Sphere(1.0), speed=1.0)
    with pytest.raises(ValueError, match="DLA"):
        scene.add_articulated(Bicycle(), integrator="exp", speed=1.0)
    with pytest.raises(TypeError, match="speed"):
        scene.add_articulated(Bicycle(), velocity=1.0)
    with pytest.raises(ValueError, match="'cart'.*on the constraints"):
        scene.add_articulated(cart(), q=np.zeros(5), v=[1.0, 0.0, 0.0, 0.0, 0.0])
    scene.add_articulated(Bicycle(), speed=1.0)
    with pytest.raises(ValueError, match="'bicycle' twice"):
        scene.add_articulated(Bicycle(), speed=1.0)


def test_scene_files_write_and_read_it_back_bit_for_bit(backend):
    """A bicycle with its own parameters and a motor, a ball, and a cart between them: the
    file is a fixed point of reading and writing, and its run equals the scene's bit for bit."""
    scene = Scene(name="park")
    floor = scene.add_ground(Plane(extent=20.0))
    scene.add_articulated(Bicycle({"trail": 0.07, "rear_frame_com": (0.31, -0.88)},
                                  forces=[JointMotor("rear_wheel", torque=2.0)]), **START)
    scene.add_body(BALL, nhphys.RollingContact(floor), position=[0.0, 2.0, 0.0])
    scene.add_articulated(cart([JointMotor(3, target_speed=1.5, gain=0.2)]),
                          q=np.zeros(5), v=cart().rates(np.zeros(5), {3: 1.0, 4: 1.0}))
    text = scene.to_toml()
    assert 'trail = 0.07' in text and 'type = "joint_motor"' in text
    again = Scene.from_toml(text)
    assert again.to_toml() == text and again.body_names == scene.body_names
    a = scene.simulate(10 * DT, DT, backend=backend)
    b = again.simulate(10 * DT, DT, backend=backend)
    for key in a.fields:
        assert a[key].tobytes() == b[key].tobytes(), key
    assert Scene.from_toml(a.meta["scene_toml"]).to_toml().split("[run]")[1] == \
        a.meta["scene_toml"].split("[run]")[1]


BIKE = """
[[grounds]]
surface = { type = "plane", extent = 5.0 }
[[bodies]]
name = "bike"
system = { type = "bicycle" }
initial = { speed = 4.0 }
"""


@pytest.mark.parametrize("edit, field, message", [
    (("{ type = \"bicycle\" }", "{ type = \"tricycle\" }"), "bodies[0].system.type",
     "expected one of \"bicycle\", \"tree\""),
    (("{ type = \"bicycle\" }", "{ type = \"bicycle\", parameters = { trial = 0.1 } }"),
     "bodies[0].system.parameters.trial", "did you mean `trail`"),
    (("{ type = \"bicycle\" }",
      "{ type = \"bicycle\", parameters = { rear_wheel_radius = -0.3 } }"),
     "bodies[0].system.parameters.rear_wheel_radius", "rear_wheel_radius"),
    (("{ speed = 4.0 }", "{ roll = 2.0 }"), "bodies[0].initial.roll", "|roll| < pi/2"),
    (("initial = { speed = 4.0 }", "initial = { speed = 4.0 }\nintegrator = \"exp\""),
     "bodies[0].integrator", "\"dla\" or \"reference\""),
    (("initial = { speed = 4.0 }", "initial = { speed = 4.0 }\nforces = [{ joint = \"steer\" }]"),
     "bodies[0].forces[0].type", "missing"),
    (("{ speed = 4.0 }", "{ speed = 4.0, q = [0.0] }"), "bodies[0].initial.q",
     "unknown key"),
    (("{ speed = 4.0 }", "{ speed = \"fast\" }"), "bodies[0].initial.speed",
     "expected a number"),
    (("initial = { speed = 4.0 }", "initial = { speed = 4.0 }\nground = \"floor\""),
     "bodies[0].ground", "no ground named \"floor\""),
    (("initial = { speed = 4.0 }",
      "initial = { speed = 4.0 }\nforces = [{ type = \"torque\", value = 1.0 }]"),
     "bodies[0].forces[0].type", "joint motors and springs only"),
    (("initial = { speed = 4.0 }",
      "initial = { speed = 4.0 }\nforces = [{ type = \"joint_motor\", joint = \"pedal\", "
      "torque = 1.0 }]"), "bodies[0].forces[0].joint", "no joint \"pedal\""),
    (("name = \"bike\"", "name = \"bike\"\nmass = 1.0"), "bodies[0].mass",
     "an articulated system accepts"),
])
def test_scene_file_errors_name_the_field(edit, field, message):
    from nhphys.scenefile import SceneFileError

    with pytest.raises(SceneFileError) as info:
        Scene.from_toml(BIKE.replace(*edit))
    assert info.value.field == field and message in str(info.value)
    with pytest.raises(SceneFileError, match="9.8.*scene's"):
        Scene.from_toml("gravity = 9.8\n" + BIKE)


TREE = """
[[bodies]]
name = "sleigh"
initial = { q = [0.0, 0.0, 0.0], v = [1.0, 0.0, 0.5] }
[bodies.system]
type = "tree"
blades = [{ body = 2 }]
[[bodies.system.joints]]
parent = -1
kind = "prismatic"
axis = [1, 0, 0]
[[bodies.system.joints]]
parent = 0
kind = "prismatic"
axis = [0, 1, 0]
[[bodies.system.joints]]
parent = 1
kind = "revolute"
axis = [0, 0, 1]
mass = 1.0
com = [0.1, 0, 0]
inertia = [0.01, 0.01, 0.02]
"""


def test_a_joint_tree_from_a_file():
    scene = Scene.from_toml(TREE)
    entry = scene.bodies[0]
    assert entry.names == ["sleigh.body2"] and scene.grounds[0]["surface"].extent == 25.0
    traj = scene.simulate(0.1, 1e-3)
    assert traj.constraint_residual.max() < 1e-14
    from nhphys.scenefile import SceneFileError

    for old, new, field in (("parent = 1", "parent = 2", "bodies[0].system.joints[2].parent"),
                            ("body = 2", "body = 3", "bodies[0].system.blades[0].body"),
                            ("v = [1.0, 0.0, 0.5]", "v = [1.0, 0.0]", "bodies[0].initial.v"),
                            ("v = [1.0, 0.0, 0.5]", "v = [1.0, 1.0, 0.5]", "bodies[0].initial.v"),
                            ("kind = \"revolute\"", "kind = \"ball\"",
                             "bodies[0].system.joints[2].kind")):
        with pytest.raises(SceneFileError) as info:
            Scene.from_toml(TREE.replace(old, new))
        assert info.value.field == field, (old, str(info.value))


def test_a_scene_file_refuses_an_integrator_without_a_name():
    from nhphys.scenefile.write import NotDescribable

    scene = Scene(name="ride")
    scene.add_articulated(Bicycle(), integrator=Composition([(DLA(), w)
                                                             for w in composition(4)]), **START)
    with pytest.raises(NotDescribable, match="system 'bicycle': its integrator"):
        scene.to_toml()
    assert "scene_toml" not in scene.simulate(2 * DT, DT).meta  # the run goes on without it


def test_reference_steps_an_articulated_system_in_a_scene():
    scene = Scene(name="ride")
    scene.add_articulated(Bicycle(), integrator=Reference(rtol=1e-10), **START)
    traj = scene.simulate(0.02, 0.01)
    alone = nhphys.simulate(Bicycle(), 0.02, 0.01, integrator=Reference(rtol=1e-10), **START)
    np.testing.assert_array_equal(traj.energy[:, 0], alone.energy)


def test_review_cases_names_types_colours_and_empty_frames():
    """Link names stay unique in a scene, library values of numpy types write files that read
    back, a refused colour leaves no ground behind, an interrupted call with no frame yet gives
    empty link fields, and an inward plane is no floor."""
    scene, entry = park()
    with pytest.raises(ValueError, match="bicycle.rear_wheel"):
        scene.add_body(BALL, nhphys.RollingContact(scene.grounds[0]["surface"]),
                       name="bicycle.rear_wheel")
    joints = list(cart().joints)
    joints[3] = Joint(np.int64(2), "revolute", (0, 1, 0), offset=(0, 0.2, 0), mass=0.3,
                      inertia=np.diag([1.5e-3, 3e-3, 1.5e-3]), name="body4")
    with pytest.raises(ValueError, match="two of its links would have one name"):
        Scene().add_articulated(Articulated(joints[:4] + [Joint(2, "revolute", (0, 1, 0),
                                                                offset=(0, -0.2, 0),
                                                                mass=0.3, name=None)],
                                            [Wheel(3, 0.1), Wheel(np.int64(4), 0.1,
                                                                  sideways=np.False_)]),
                                q=np.zeros(5), v=np.zeros(5))
    odd = Articulated(joints[:4] + [Joint(2, "revolute", (0, 1, 0), offset=(0, -0.2, 0),
                                          mass=2, inertia=np.eye(3) * 1e-3, name="right")],
                      [Wheel(3, 0.1, held=0), Wheel(np.int64(4), 1 / 10, sideways=np.False_)])
    yard = Scene(name="yard")
    yard.add_articulated(odd, q=np.zeros(5), v=np.zeros(5))
    text = yard.to_toml()
    assert Scene.from_toml(text).to_toml() == text
    before = len(Scene().grounds)
    empty = Scene()
    with pytest.raises(ValueError, match="colour"):
        empty.add_articulated(Bicycle(), color="no-such-colour", speed=1.0)
    assert len(empty.grounds) == before == 0
    fields = entry.fields({k: np.zeros((0,) + s) for k, s in
                           (("q", (8,)), ("v", (8,)), ("energy", ()), ("work", ()),
                            ("constraint_residual", ()), ("contacts", (2, 3)))})
    assert fields["position"].shape == (0, 4, 3) and fields["R"].shape == (0, 4, 3, 3)
    with pytest.raises(ValueError, match="normal points up"):
        Scene().add_articulated(Bicycle(), ground=Plane(orientation="inward"), speed=1.0)


def test_the_cli_renders_a_saved_articulated_run_with_its_scene(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "bike.npz"
    subprocess.run([sys.executable, "-m", "nhphys", "run", "bicycle", "--t-final", "0.2",
                    "--out", str(out), "--no-render", "--no-progress"], check=True,
                   capture_output=True, timeout=300)
    done = subprocess.run([sys.executable, "-m", "nhphys", "render", str(out), "--scene",
                           "bicycle", "--png", str(tmp_path / "bike.png")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "bike.png").stat().st_size > 0


def test_a_file_cannot_ask_for_unbounded_link_meshes():
    from nhphys.scenefile import SceneFileError

    one = "[[bodies]]\nname = \"b{i}\"\nsystem = {{ type = \"bicycle\" }}\n"
    text = "".join(one.format(i=i) for i in range(400))
    with pytest.raises(SceneFileError, match="display mesh vertices"):
        Scene.from_toml(text)


def test_mesh_primitives_are_closed_and_outward():
    from nhphys import mesh_primitives as prim

    def volume(points, faces):
        a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
        return np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6

    # the inscribed n-gon has area (n/2) r^2 sin(2 pi/n): a prism for the cylinder, swept
    # along the inscribed 256-gon of the ring's circle for the torus (exact, to round-off)
    def polygon(n, r):
        return n / 2 * r**2 * np.sin(2 * np.pi / n)

    assert volume(*prim.cylinder([1, 2, 0], [0, 1, 2], 0.5, 64)) == pytest.approx(
        polygon(64, 0.5) * np.sqrt(6.0), rel=1e-12)  # length |(-1, -1, 2)|
    assert volume(*prim.torus([1, 0, 0], [0, 1, 1], 1.0, 0.1, 256, 64)) == pytest.approx(
        polygon(64, 0.1) * 256 * np.sin(2 * np.pi / 256), rel=1e-12)
    assert volume(*prim.sphere([0, 1, 0], 2.0, 128, 256)) == pytest.approx(
        4 / 3 * np.pi * 8, rel=1e-3)
    assert volume(*prim.box([1, 2, 3], [0, 0, 0])) == pytest.approx(6.0)  # corners either way
    with pytest.raises(ValueError, match="nonzero axis"):
        prim.cylinder([1, 1, 1], [1, 1, 1], 0.1)
    with pytest.raises(ValueError, match="rings and sectors >= 3"):
        prim.sphere([0, 0, 0], 1.0, rings=2)


def test_a_fall_keeps_every_bodys_frames_before_it(backend, tmp_path):
    """A bicycle released at rest with a lean falls flat (its step 1345 fails, at 2.69 s):
    the scene's error carries every body's frames up to the bicycle's last saved frame, as the
    lone bicycle's does, stepping one body after the other and side by side; the failed run's
    file keeps them."""
    start = {"speed": 0.0, "roll": 0.3}
    with pytest.raises(nhphys.NewtonError) as lone:
        nhphys.simulate(Bicycle(), 5.0, DT, integrator=DLA(), backend=backend, save_every=10,
                        **start)
    expected = lone.value.trajectory
    ball = nhphys.simulate(nhphys.RollingContact(Plane()).system(BALL, 9.81), 5.0, DT,
                           integrator="exp", backend=backend, save_every=10,
                           position=[0.0, 2.0, 0.0], omega=[3.0, 0.0, 1.0])
    for threads in ((1, 2) if backend == "cython" else (1,)):
        scene = Scene(name="fall")
        floor = scene.add_ground(Plane(extent=5.0))
        scene.add_articulated(Bicycle(), **start)
        scene.add_body(BALL, nhphys.RollingContact(floor), position=[0.0, 2.0, 0.0],
                       omega=[3.0, 0.0, 1.0])
        out = tmp_path / f"fall{threads}.npz"
        # the kernel ends with the `flat` contact event, the twin, whose last Newton iterate
        # at that step is not finite, with a NewtonError: the same step either way
        with pytest.raises(nhphys.NewtonError, match="Body 'bicycle'.*step 1345") as info:
            scene.simulate(5.0, DT, backend=backend, save_every=10, threads=threads, out=out)
        traj = info.value.trajectory
        assert len(traj) == len(expected) > 100
        np.testing.assert_array_equal(traj.energy[:, 0], expected.energy)
        np.testing.assert_array_equal(traj.position[:, 4], ball.position[:len(expected)])
        assert len(Trajectory.load(tmp_path / f"fall{threads}.failed.npz")) == len(expected)


def test_a_bicycle_on_a_hill_rides_its_tilted_plane(backend):
    """``Bicycle(slope=s)`` in a scene rides the plane tilted by ``s`` (its default ground):
    its links are the lone run's carried by the rotation about ``y`` by ``s``, every wheel's
    ground point lies on the tilted plane, it goes downhill in the scene's gravity, and the
    scene file holds the slope; a level bicycle on a raised level plane rides it too."""
    s = 0.05
    scene = Scene(name="hill")
    entry = scene.add_articulated(Bicycle(slope=s), speed=3.0)
    plane = scene.grounds[0]["surface"]
    assert np.allclose(plane.unit_normal, [np.sin(s), 0.0, np.cos(s)], rtol=0, atol=1e-15)
    traj = scene.simulate(0.5, DT, backend=backend, save_every=25)
    alone = nhphys.simulate(Bicycle(slope=s), 0.5, DT, integrator=DLA(), backend=backend,
                            save_every=25, speed=3.0)
    turn = np.array([[np.cos(s), 0.0, np.sin(s)], [0.0, 1.0, 0.0], [-np.sin(s), 0.0, np.cos(s)]])
    kin = [entry.system.tree.kinematics(q, v, bias=False) for q, v in zip(alone.q, alone.v)]
    for j, b in enumerate(entry.links):
        R = np.array([k["R"][b] for k in kin])
        assert np.abs(traj.R[:, j] - turn @ R).max() < 1e-14  # Q and turn differ by round-off
    for j in (1, 3):  # the wheels' ground points on the plane
        assert np.abs(traj.contact_point[:, j] @ plane.unit_normal).max() < 1e-13
    assert np.all(np.diff(traj.contact_point[:, 1, 2]) < 0)  # downhill, in the scene
    np.testing.assert_array_equal(traj.energy[:, 0], alone.energy)
    text = scene.to_toml()
    assert "slope = 0.05" in text and Scene.from_toml(text).to_toml() == text
    raised = Scene(name="raised")
    raised.add_articulated(Bicycle(), ground=Plane(point=(0.0, 0.0, 0.4)), **START)
    up = raised.simulate(4 * DT, DT, backend=backend)
    assert np.abs(up.contact_point[:, [1, 3], 2] - 0.4).max() < 1e-14
