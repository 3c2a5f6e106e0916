"""The public API is one vocabulary: subpackages after ``import nhphys``, integrators by name,
the same initial conditions alone and in a scene, one meaning of ``omega``, contacts that do
not shadow systems, and run arguments checked in one place."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import nhphys
from nhphys import conditions
from nhphys.integrators import DLA, INTEGRATOR_NAMES, Newmark, Retraction
from nhphys.lie import so3
from nhphys.surfaces import Ellipsoid, Plane, Sphere
from nhphys.systems import ContactOscillator, KnifeEdge, RollingBody, Suslov, VerticalDisk

INERTIA = np.array([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]])


def ball(radius=0.1):
    return nhphys.RigidBody(1.0, [0.4 * radius**2] * 3, Sphere(radius), name="ball")


def top(name="top"):
    return nhphys.RigidBody(1.0, INERTIA, Ellipsoid([0.5, 0.35, 0.2]), name=name)


def sleigh_body():
    return nhphys.RigidBody(1.0, [0.1, 0.3, 0.5], Ellipsoid([0.4, 0.15, 0.1]), name="sleigh")


def same(a, b):
    """Two trajectories hold the same arrays, bit for bit."""
    assert a.fields == b.fields
    for name in a.fields:
        assert np.array_equal(a[name], b[name]), name


# -- subpackages after `import nhphys` --------------------------------------------------------

def test_subpackages_are_attributes_after_a_plain_import():
    # a fresh interpreter: in this one, other tests have imported the subpackages already
    code = (
        "import sys, nhphys\n"
        "print(nhphys.surfaces.Plane.__name__, nhphys.shapes.Disk.__name__,\n"
        "      nhphys.integrators.Retraction.__name__, nhphys.systems.Suslov.__name__)\n"
        "print(sorted(m for m in ('scipy', 'sympy', 'pyvista', 'matplotlib', 'tqdm')\n"
        "             if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split("\n")[:2] == ["Plane Disk Retraction Suslov", "[]"]


# -- integrators by name ------------------------------------------------------------------------

def test_simulate_takes_integrators_by_name(backend):
    body = Suslov(INERTIA, [0, 0, 1])
    by_name = nhphys.simulate(body, 1.0, 0.01, integrator="cayley", backend=backend,
                              omega=[1.0, 0.5, 0.0])
    by_object = nhphys.simulate(body, 1.0, 0.01, integrator=Retraction("cayley"),
                                backend=backend, omega=[1.0, 0.5, 0.0])
    same(by_name, by_object)
    assert by_name.meta["integrator"] == repr(Retraction("cayley"))
    sleigh = KnifeEdge(1.0, 0.5, 0.5, incline=0.3)
    for name, method in (("newmark", Newmark()), ("DLA", DLA()), (" Newmark ", Newmark())):
        same(nhphys.simulate(sleigh, 0.5, 0.01, integrator=name, backend=backend, velocity=0.2),
             nhphys.simulate(sleigh, 0.5, 0.01, integrator=method, backend=backend,
                             velocity=0.2))


def test_an_unknown_integrator_name_lists_the_names():
    body = Suslov(INERTIA, [0, 0, 1])
    scene = nhphys.Scene()
    scene.add_body(top(), nhphys.SuslovContact([0, 0, 1]), omega=[1.0, 0.0, 0.0])
    for run in (lambda: nhphys.simulate(body, 1.0, 0.1, integrator="rk4", omega=[1, 0, 0]),
                lambda: scene.simulate(1.0, 0.1, integrator="rk4"),
                lambda: scene.add_body(top("b"), nhphys.SuslovContact([0, 0, 1]),
                                       integrator="rk4", omega=[1, 0, 0])):
        with pytest.raises(ValueError, match="`integrator`") as info:
            run()
        assert all(repr(name) in str(info.value) for name in INTEGRATOR_NAMES)
    with pytest.raises(TypeError, match="`integrator`"):
        nhphys.simulate(body, 1.0, 0.1, integrator=3, omega=[1, 0, 0])


# -- one vocabulary of initial conditions -------------------------------------------------------

@pytest.mark.parametrize("system, given", [
    (Suslov(INERTIA, [0, 0, 1]), {"omgea": [1.0, 0.0, 0.0]}),
    (RollingBody(ball(), Plane()), {"omega": [0.0, 1.0, 0.0], "ground_piont": [0, 0, 0]}),
    (KnifeEdge(1.0, 0.5, 0.5), {"speed": 1.0}),
    (VerticalDisk(1.0, 0.5, 0.125, 0.0625), {"omega": 1.0}),
    (ContactOscillator(0.3), {"x0": [1.0, 1.0, 0.5]}),
], ids=["Suslov", "RollingBody", "KnifeEdge", "VerticalDisk", "ContactOscillator"])
def test_a_misspelt_initial_condition_names_the_system_and_the_accepted_names(system, given):
    name = type(system).__name__
    with pytest.raises(TypeError, match=f"initial condition.* for {name}; it accepts") as info:
        nhphys.simulate(system, 1.0, 0.1, integrator="newmark" if name in (
            "ContactOscillator",) else None, **given)
    message = str(info.value)
    for accepted in conditions.vocabulary(system).names:
        assert accepted in message
    assert "start_retraction" not in message and "unexpected keyword" not in message


def test_a_misspelt_initial_condition_in_a_scene_names_the_body():
    scene = nhphys.Scene()
    with pytest.raises(TypeError, match=r"`omgea` for body 'top' \(Suslov\); it accepts "
                                        r"orientation, omega, momentum") as info:
        scene.add_body(top(), nhphys.SuslovContact([0, 0, 1]), omgea=[1.0, 0.0, 0.0])
    assert "looks like `omega`" in str(info.value)
    with pytest.raises(TypeError, match=r"'sleigh' \(KnifeEdge\); it accepts position, "
                                        r"heading, velocity, turning_rate"):
        scene.add_body(sleigh_body(), nhphys.KnifeEdgeContact(Plane()), speed=1.0)
    assert scene.bodies == []


def test_the_same_words_start_the_same_motion_alone_and_in_a_scene(backend):
    quarter = [np.cos(0.3), 0.0, np.sin(0.3), 0.0]  # a unit quaternion (w, x, y, z)
    scene = nhphys.Scene()
    scene.add_body(top(), nhphys.SuslovContact([1, 0, 0]), orientation=quarter,
                   momentum=[0.0, 1.0, 2.0])
    scene.add_body(sleigh_body(), nhphys.KnifeEdgeContact(Plane(), offset=0.2),
                   position=[0.5, -0.5], heading=0.3, velocity=0.5, turning_rate=1.0)
    scene.add_body(ball(), nhphys.RollingContact(Plane()), position=[0.2, 0.1, 0.0],
                   orientation=so3.exp([0.1, 0.2, 0.3]), omega=[1.0, -2.0, 0.5])
    traj = scene.simulate(0.5, 0.01, backend=backend)
    alone = [
        nhphys.simulate(Suslov(INERTIA, [1, 0, 0]), 0.5, 0.01, backend=backend,
                        orientation=quarter, momentum=[0.0, 1.0, 2.0]),
        nhphys.simulate(KnifeEdge(1.0, 0.5, 0.2), 0.5, 0.01, backend=backend,
                        position=[0.5, -0.5], heading=0.3, velocity=0.5, turning_rate=1.0),
        nhphys.simulate(RollingBody(ball(), Plane()), 0.5, 0.01, backend=backend,
                        position=[0.2, 0.1, 0.0], orientation=so3.exp([0.1, 0.2, 0.3]),
                        omega=[1.0, -2.0, 0.5]),
    ]
    for i, run in enumerate(alone):
        assert np.array_equal(traj.omega[:, i], run.omega)  # the same computation
        assert np.array_equal(traj.energy[:, i], run.energy)
    assert np.array_equal(traj.R[:, 0], alone[0].R)
    assert np.array_equal(traj.contact_point[:, 1, :2], alone[1].pose[:, :2])
    assert np.array_equal(traj.position[:, 2], alone[2].position)


@pytest.mark.parametrize("system, canonical, old", [
    (Suslov(INERTIA, [0, 0, 1]),
     {"orientation": so3.exp([0.2, 0.0, 0.1]), "momentum": [1.0, 0.5, 0.3]},
     {"R0": so3.exp([0.2, 0.0, 0.1]), "momentum0": [1.0, 0.5, 0.3]}),
    (RollingBody(ball(), Sphere(1.0).as_ground("inside")),
     {"position": [0.2, 0.0, -1.0], "omega": [1.0, 2.0, 0.5]},
     {"ground_point": [0.2, 0.0, -1.0], "omega0": [1.0, 2.0, 0.5]}),
    (KnifeEdge(1.0, 0.5, 0.5),
     {"position": [0.2, -0.1], "heading": 0.3, "velocity": 0.1, "turning_rate": 1.0},
     {"pose0": [0.2, -0.1, 0.3], "velocity0": 0.1, "omega0": 1.0}),
    (KnifeEdge(1.0, 0.5, 0.5),
     {"heading": 0.3, "turning_rate": -1.0},
     {"pose0": [0.0, 0.0, 0.3], "omega": [0.0, 0.0, -1.0]}),
    (VerticalDisk(1.0, 0.5, 0.125, 0.0625),
     {"position": [0.3, -0.2], "heading": 0.4, "phi": 0.1, "turning_rate": 1.3, "spin": 2.0},
     {"pose0": [0.3, -0.2, 0.4], "phi0": 0.1, "omega0": 1.3, "spin0": 2.0}),
], ids=["Suslov", "RollingBody", "KnifeEdge", "KnifeEdge-omega", "VerticalDisk"])
def test_the_earlier_spellings_are_aliases(backend, system, canonical, old):
    integrator = "newmark" if isinstance(system, VerticalDisk) else None
    same(nhphys.simulate(system, 0.3, 0.01, integrator, backend=backend, **canonical),
         nhphys.simulate(system, 0.3, 0.01, integrator, backend=backend, **old))


def test_none_means_the_default(backend):
    rolling = RollingBody(ball(), Plane())
    start = {"omega": [0.0, 2.0, 0.0]}
    plain = nhphys.simulate(rolling, 0.2, 0.01, backend=backend, **start)
    for extra in ({"R0": None}, {"orientation": None}, {"ground_point": None},
                  {"position": None}, {"R0": None, "ground_point": None}):
        same(plain, nhphys.simulate(rolling, 0.2, 0.01, backend=backend, **start, **extra))
    suslov = Suslov(INERTIA, [0, 0, 1])
    same(nhphys.simulate(suslov, 0.2, 0.01, backend=backend, momentum=[1, 1, 0]),
         nhphys.simulate(suslov, 0.2, 0.01, backend=backend, momentum=[1, 1, 0], R0=None,
                         omega=None))
    scene = nhphys.Scene()
    scene.add_body(ball(), nhphys.RollingContact(Plane()), position=None, orientation=None,
                   **start)
    np.testing.assert_array_equal(scene.simulate(0.2, 0.01, backend=backend).R[:, 0], plain.R)
    with pytest.raises(TypeError, match="`orientation`.*got None; leave it out"):
        conditions.as_orientation(None)


def test_a_condition_given_twice_is_refused():
    with pytest.raises(TypeError, match="`orientation` of Suslov given twice, as `R0` and as "
                                        "`orientation`"):
        nhphys.simulate(Suslov(INERTIA, [0, 0, 1]), 1.0, 0.1, R0=np.eye(3),
                        orientation=np.eye(3), omega=[1, 0, 0])
    with pytest.raises(TypeError, match="`heading` of KnifeEdge given twice"):
        nhphys.simulate(KnifeEdge(1.0, 0.5, 0.5), 1.0, 0.1, pose0=[0, 0, 1], heading=1.0)


def test_values_are_checked_under_the_name_given():
    sleigh = KnifeEdge(1.0, 0.5, 0.5)
    with pytest.raises(ValueError, match=r"`position` to have shape \(2,\)"):
        nhphys.simulate(sleigh, 1.0, 0.1, position=[0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"`omega` to be \(0, 0, turning rate\)"):
        nhphys.simulate(sleigh, 1.0, 0.1, omega=[1.0, 0.0, 1.0])
    with pytest.raises(TypeError, match="`turning_rate` to be a real number"):
        nhphys.simulate(sleigh, 1.0, 0.1, turning_rate="fast")
    with pytest.raises(ValueError, match="`orientation` to be a unit quaternion"):
        nhphys.simulate(Suslov(INERTIA, [0, 0, 1]), 1.0, 0.1, orientation=[1, 1, 0, 0],
                        omega=[1, 0, 0])


# -- one meaning of omega ----------------------------------------------------------------------

def _body_rate(R, h):
    """Body angular velocity from orientations (n, 3, 3) by central differences (n-2, 3)."""
    W = np.einsum("nji,njk->nik", R[1:-1], (R[2:] - R[:-2]) / (2 * h))
    return np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=-1)


def test_omega_is_the_body_angular_velocity_everywhere(backend):
    h = 1e-3
    # Suslov and a rolling body: dR/dt = R hat(omega), checked by differences of R
    runs = [
        nhphys.simulate(Suslov(INERTIA, [0.3, -0.5, 0.8]), 0.2, h, backend=backend,
                        orientation=so3.exp([0.3, 0.2, 0.1]), momentum=[1.0, 0.5, -0.2]),
        nhphys.simulate(RollingBody(ball(), Plane()), 0.2, h, backend=backend,
                        orientation=so3.exp([0.3, 0.2, 0.1]), omega=[1.0, -2.0, 3.0]),
    ]
    for traj in runs:
        assert traj.omega.shape == (201, 3)
        np.testing.assert_allclose(_body_rate(traj.R, h), traj.omega[1:-1],
                                   atol=1e-5 * np.abs(traj.omega).max())
    # the knife edge: (0, 0, turning rate) about the plane's normal, alone and in a scene
    sleigh = nhphys.simulate(KnifeEdge(1.0, 0.5, 0.5), 0.2, h, backend=backend, velocity=0.3,
                             turning_rate=2.0)
    assert sleigh.omega.shape == (201, 3) and sleigh.turning_rate.shape == (201,)
    np.testing.assert_array_equal(sleigh.omega[:, :2], 0.0)
    np.testing.assert_array_equal(sleigh.omega[:, 2], sleigh.turning_rate)
    np.testing.assert_allclose(np.gradient(sleigh.pose[:, 2], h)[1:-1],
                               sleigh.turning_rate[1:-1], atol=1e-6)
    scene = nhphys.Scene()
    scene.add_body(sleigh_body(), nhphys.KnifeEdgeContact(Plane(), offset=0.5), velocity=0.3,
                   turning_rate=2.0)
    scene.add_body(top(), nhphys.SuslovContact([0, 0, 1]), omega=[1.0, 0.5, 0.0])
    traj = scene.simulate(0.2, h, backend=backend)
    assert traj.omega.shape == (201, 2, 3)
    for i in range(2):
        np.testing.assert_allclose(_body_rate(traj.R[:, i], h), traj.omega[1:-1, i], atol=1e-5)
    # the vertical disk has two rates and no body frame: no `omega`, and says what it has
    disk = nhphys.simulate(VerticalDisk(1.0, 0.5, 0.125, 0.0625), 0.2, h, "newmark",
                           backend=backend, turning_rate=1.3, spin=2.0)
    assert "omega" not in disk.fields and disk.turning_rate.shape == (201,)
    # (differences of the discrete path agree with the rates to O(h^2): 2.8e-7 measured)
    np.testing.assert_allclose(np.gradient(disk.pose[:, 2], h), disk.turning_rate, atol=1e-6)
    np.testing.assert_allclose(np.gradient(disk.phi, h), disk.spin, atol=1e-6)


# -- contacts do not shadow systems --------------------------------------------------------------

def test_contact_classes_are_named_apart_from_the_systems():
    import nhphys.contacts
    import nhphys.scene

    contacts = (nhphys.RollingContact, nhphys.KnifeEdgeContact, nhphys.SuslovContact)
    assert contacts == nhphys.contacts.CONTACTS[:1] + nhphys.contacts.CONTACTS[1:]
    for contact in contacts:
        assert contact.__name__ not in nhphys.systems.__all__
        assert not hasattr(nhphys, contact.__name__.replace("Contact", ""))
    assert not {"Suslov", "KnifeEdge"} & set(nhphys.scene.__all__)  # `import *` brings neither
    assert nhphys.scene.Rolling is nhphys.RollingContact  # no system is called Rolling
    for old, new in (("Suslov", nhphys.SuslovContact), ("KnifeEdge", nhphys.KnifeEdgeContact)):
        with pytest.warns(DeprecationWarning, match=f"{new.__name__}"):
            assert getattr(nhphys.scene, old) is new
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from nhphys.scene import Scene, SceneDisplay, load_scene_file  # noqa: F401


# -- run arguments: one check for simulate and scenes ----------------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    ({"dt": 0.0}, ValueError, "`dt`"),
    ({"t_final": -1.0}, ValueError, "`t_final`"),
    ({"dt": 0.3}, ValueError, "whole number of steps"),
    ({"save_every": 0}, ValueError, "`save_every`"),
    ({"save_every": 1.5}, ValueError, "`save_every`"),
    ({"integrator": "euler"}, ValueError, "`integrator`"),
    ({"backend": "fortran"}, ValueError, "`backend`"),
])
def test_simulate_and_scenes_refuse_the_same_run_arguments_alike(kwargs, error, match):
    args = dict({"t_final": 1.0, "dt": 0.1}, **kwargs)
    scene = nhphys.Scene()
    scene.add_body(top(), nhphys.SuslovContact([0, 0, 1]), omega=[1.0, 0.0, 0.0])
    with pytest.raises(error, match=match) as alone:
        nhphys.simulate(Suslov(INERTIA, [0, 0, 1]), omega=[1.0, 0.0, 0.0], **args)
    with pytest.raises(error, match=match) as in_scene:
        scene.simulate(**args)
    assert str(alone.value) == str(in_scene.value)
