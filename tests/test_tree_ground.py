"""Joint trees whose wheels roll on a curved ground (``Articulated(..., ground=...)``).

A thin disk carried by a free tree (slides along x, y, z, then yaw about z, roll about x and
its spin about y) rolls inside the paraboloid bowl ``z = (x^2 + y^2) / 4``. The same disk as a
single rolling body (``nhphys.systems.RollingBody`` with a ``Disk`` shape) is an independent
formulation: its contact by the shape's support map, its equations the rolling field on the
rotation group. The tree's ``Reference`` (its constrained equations in joint coordinates, with
the contact rows' biases derived in ``nhphys.twins.multibody``) is compared with it, and
``DLA()`` and its order-4 composition with the tree's ``Reference`` at their orders. The
contact itself is checked against a brute-force search along the rim. Every run test runs on
the kernel and on the twin.
"""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import nhphys
from nhphys.integrators import DLA, Composition, Reference
from nhphys.integrators.coefficients import composition
from nhphys.shapes import Disk
from nhphys.surfaces import HeightField, Paraboloid, Plane, Sphere
from nhphys.systems import Articulated, Joint, RollingBody, Wheel
from nhphys.scenes import tree_in_bowl
from nhphys.scenes.tree_in_bowl import I_AXIAL, I_DIAMETRAL, MASS, RADIUS, TO_DISK
from nhphys.systems.articulated import Blade

BOWL = Paraboloid(2.0, 2.0)  # z = (x^2 + y^2) / 4: curvature 1/2 at the bottom
ORDER4 = Composition([(DLA(), w) for w in composition(4)])


def free_disk(ground=BOWL, held=True):
    """The scene's disk (mass 1 kg, radius 0.1 m) on a free tree: x, y, z, yaw, roll, spin."""
    return tree_in_bowl.free_disk(ground, held)


def on_ground(system, q):
    """``q`` with its height ``q[2]`` moved so that the disk touches the ground."""
    q = np.array(q, dtype=float)
    for _ in range(30):  # the gap is along the normal n: lowering by gap / n_z cancels it
        kin = system.tree.kinematics(q, np.zeros(system.n), bias=False)
        contact = system.tree.disk_contact(kin, 0)
        q[2] -= contact[6] / contact[5][2]
    return q


def start(system=None, spin=-10.0):
    """The disk 0.3 m from the bowl's axis, leaning 0.1 rad, rolling with its yaw rate 0.5."""
    system = free_disk() if system is None else system
    q = on_ground(system, [0.3, 0.0, 0.0, 0.2, 0.1, 0.0])
    return {"q": q, "v": system.rates(q, {3: 0.5, 4: 0.0, 5: spin})}


T_FINAL = 1.0
TIGHT = Reference(rtol=1e-12, atol=1e-13)


@pytest.fixture(scope="module")
def tree_reference():
    system = free_disk()
    return nhphys.simulate(system, T_FINAL, 0.05, integrator=TIGHT, **start(system))


def test_the_trees_reference_is_the_rolling_disks(tree_reference):
    """(The continuous equations, ``Reference``, are the twin's: no kernel computes them.)"""
    system = free_disk()
    ic = start(system)
    kin = system.tree.kinematics(ic["q"], ic["v"], bias=False)
    R = kin["R"][5]
    disk = nhphys.RigidBody(MASS, np.diag([I_DIAMETRAL, I_DIAMETRAL, I_AXIAL]), Disk(RADIUS))
    rolling = nhphys.simulate(
        RollingBody(disk, BOWL), T_FINAL, 0.05, integrator=TIGHT, orientation=R @ TO_DISK,
        omega=TO_DISK.T @ (R.T @ kin["omega"][5]),
        position=system.tree.disk_contact(kin, 0)[4])
    zero = np.zeros(6)
    kins = [system.tree.kinematics(q, zero, bias=False) for q in tree_reference.q]
    centres = np.array([k["o"][5] for k in kins])
    rotations = np.array([k["R"][5] @ TO_DISK for k in kins])
    assert abs(rolling.energy[0] - tree_reference.energy[0]) < 1e-14 * rolling.energy[0]
    assert np.abs(centres - rolling.position).max() < 1e-9
    assert np.abs(rotations - rolling.R).max() < 1e-9
    assert np.abs(tree_reference.contacts[:, 0] - rolling.contact_point).max() < 1e-9
    assert np.ptp(tree_reference.energy) < 1e-10 * tree_reference.energy[0]


@pytest.mark.parametrize("integrator, order, steps", [(DLA(), 2, (100, 200, 400)),
                                                      (ORDER4, 4, (50, 100))])
def test_the_steps_converge_at_their_orders(backend, integrator, order, steps):
    system = free_disk()
    T = 0.25
    reference = nhphys.simulate(system, T, T, integrator=TIGHT, **start(system))
    errors = []
    for n in steps:
        traj = nhphys.simulate(system, T, T / n, integrator=integrator, save_every=n,
                               backend=backend, **start(system))
        errors.append(np.abs(traj.q[-1] - reference.q[-1]).max())
        assert traj.constraint_residual.max() < 1e-13
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(np.abs(np.log2(ratios) - order) < 0.1), (errors, ratios)


@pytest.mark.parity
def test_kernel_and_twin_agree_step_for_step():
    system = free_disk()
    ic = start(system)
    runs = [nhphys.simulate(system, 0.6, 2e-3, integrator=DLA(), save_every=10, backend=b, **ic)
            for b in ("cython", "python")]
    assert np.abs(runs[0].q - runs[1].q).max() < 1e-10
    assert np.abs(runs[0].v - runs[1].v).max() < 1e-10


def test_energy_stays_bounded_and_the_contact_exact(backend):
    """Upright, 0.3 m off the bowl's axis, its axis along the radius, spinning at 20 rad/s: it
    rolls across the bowl's wall and back (its contact 0.32 m up each side, where the wall's
    slope is 0.54; it turns every 1.83 s), on the ground's curved, tilted part. 10^4 steps on
    the kernel (11 crossings of the bottom), 500 on the twin (its contact solves cost about
    10 ms a step)."""
    system = free_disk()
    q = on_ground(system, [0.3, 0.0, 0.0, np.pi / 2, 0.0, 0.0])
    steps = 10_000 if backend == "cython" else 500
    traj = nhphys.simulate(system, steps * 2e-3, 2e-3, integrator=DLA(), save_every=10,
                           backend=backend, q=q, v=system.rates(q, {3: 0.0, 4: 0.0, 5: -20.0}))
    assert np.ptp(traj.q[:, 1]) > (2.0 if backend == "cython" else 1.0)  # it crosses
    error = np.abs(traj.energy / traj.energy[0] - 1)
    assert error.max() < 1e-5
    assert traj.constraint_residual.max() < 1e-13
    # the contact points lie on the bowl
    P = traj.contacts[:, 0]
    assert np.abs(P[:, 2] - (P[:, 0] ** 2 + P[:, 1] ** 2) / 4).max() < 1e-13


def rim_heights(system, q):
    """The rim's lowest point above the graph, by a search along the rim independent of the
    contact solve: ``min over theta of z(theta) - f(x(theta), y(theta))`` (a vertical
    distance: zero exactly when the rim touches), and that rim point."""
    kin = system.tree.kinematics(q, np.zeros(system.n), bias=False)
    R = kin["R"][5]
    C, e1, e2 = kin["o"][5], R[:, 0], R[:, 2]  # the disk's plane: body x and z

    def point(theta):
        return C + RADIUS * (np.cos(theta) * e1 + np.sin(theta) * e2)

    def height(theta):
        p = point(theta)
        return p[2] - BOWL.point(p[None, :2])[0, 2]

    grid = np.linspace(-np.pi, np.pi, 721)
    start_angle = grid[np.argmin([height(t) for t in grid])]
    best = minimize_scalar(height, bracket=(start_angle - 0.01, start_angle, start_angle + 0.01),
                           tol=1e-12)
    return best.fun, point(best.x)


@pytest.mark.parametrize("q", [[0.3, 0.0, 0.0, 0.2, 0.1, 0.0], [-0.5, 0.4, 0.0, 1.3, -0.4, 2.0],
                               [0.0, 0.0, 0.0, 0.0, 0.0, 0.7]])
def test_the_contact_is_the_rims_lowest_point_on_the_ground(q, backend):
    """The contact the twin finds is the rim's lowest point; the backend's gaps (kernel or
    twin) vanish there, their gradient is the backend's gap row, and a lifted disk's gap is
    its distance along the normal."""
    system = free_disk()
    q = on_ground(system, q)
    gap, point = rim_heights(system, q)
    assert abs(gap) < 1e-13
    kin = system.tree.kinematics(q, np.zeros(6), bias=False)
    assert np.abs(system.tree.disk_contact(kin, 0)[4] - point).max() < 1e-6
    tree = system.joint_tree(_module(backend))
    assert abs(tree.gaps(q)[0]) < 1e-15
    # the gap's row is its gradient (central differences, h = 1e-6)
    A = tree.constraint_matrix(q)
    h = 1e-6
    grad = np.array([(tree.gaps(q + h * e)[0] - tree.gaps(q - h * e)[0]) / (2 * h)
                     for e in np.eye(6)])
    assert np.abs(A[2] - grad).max() < 1e-8
    # a lifted disk: the gap is the normal distance to the ground
    lifted = q + np.array([0.0, 0.0, 1e-3, 0.0, 0.0, 0.0])
    n = system.tree.disk_contact(kin, 0)[5]
    assert abs(tree.gaps(lifted)[0] - 1e-3 * n[2]) < 1e-7


def _module(backend):
    from nhphys import _backend

    return _backend.implementation("multibody", backend)


def test_the_rows_biases_are_the_rows_rates():
    """``d/dt (A(q) v) = A dv/dt + b`` along the motion (central differences of the tree's
    own accelerations, Richardson-extrapolated), for the rows of a held and of a rolling-only
    wheel (a disk whose sideways row is left out). (The biases are the twin's: they serve the
    continuous equations only.)"""
    for sideways in (True, False):
        joints = free_disk().joints
        system = Articulated(joints, [Wheel(5, RADIUS, held=True, sideways=sideways)],
                             ground=BOWL)
        q = on_ground(system, [0.2, -0.3, 0.0, 0.4, 0.2, 0.3])
        given = {3: 0.5, 4: 0.3, 5: -8.0} if sideways else {0: 0.4, 3: 0.5, 4: 0.3, 5: -8.0}
        check_rows_rates(system, q, system.rates(q, given))


def check_rows_rates(system, q, v):
    """``d/dt (A(q) v)`` along the motion from ``(q, v)`` (central differences of ``A(q(t))
    v(t)`` with ``q(t) = q + t v + t^2/2 a``, Richardson-extrapolated) equals ``A a + b`` to
    1e-7, and the accelerations ``a`` keep the rows (``A a + b = 0`` to 1e-10)."""
    acc, _ = system.tree.accelerations(q, v)
    A, b = system.tree.constraints(q, v)

    def rows_times_v(t):
        return system.tree.constraint_matrix(q + t * v + t * t / 2 * acc) @ (v + t * acc)

    def central(h):
        return (rows_times_v(h) - rows_times_v(-h)) / (2 * h)

    rate = (4 * central(1e-4) - central(2e-4)) / 3
    assert np.abs(rate - (A @ acc + b)).max() < 1e-7
    assert np.abs(A @ acc + b).max() < 1e-10


def test_refusals():
    joints = free_disk().joints
    with pytest.raises(ValueError, match="not held"):
        free_disk(held=False)
    with pytest.raises(TypeError, match="Paraboloid or a HeightField"):
        free_disk(ground=Sphere(1.0).as_ground("inside"))
    with pytest.raises(TypeError, match="Paraboloid or a HeightField"):
        free_disk(ground=Plane())
    with pytest.raises(ValueError, match="not rotated"):
        free_disk(ground=Paraboloid(2.0, 2.0, rotation=[[0, -1, 0], [1, 0, 0], [0, 0, 1]]))
    with pytest.raises(ValueError, match="above it"):
        free_disk(ground=BOWL.as_ground("inside"))
    with pytest.raises(ValueError, match="Blades"):
        Articulated(joints, [Wheel(5, RADIUS, held=True)], blades=[Blade(5)], ground=BOWL)
    with pytest.raises(ValueError, match="gravity is along -z"):
        Articulated(joints, [Wheel(5, RADIUS, held=True)], gravity=[0.0, 1.0, -9.8],
                    ground=BOWL)
    with pytest.raises(ValueError, match="does not touch"):
        free_disk().state(q=[0.3, 0.0, 0.5, 0.0, 0.0, 0.0], v=np.zeros(6))


def test_a_terrain(backend):
    """A height field: the disk's contact points lie on it, the rows hold to round-off, and the
    energy error is small, as on the bowl."""
    x = np.linspace(-2, 2, 41)
    heights = 0.05 * np.sin(2 * x)[:, None] * np.cos(1.5 * x)[None, :]
    terrain = HeightField(heights, (-2, 2), (-2, 2))
    system = free_disk(ground=terrain)
    ic = start(system, spin=-12.0)
    traj = nhphys.simulate(system, 0.4, 2e-3, integrator=DLA(), save_every=5, backend=backend,
                           **ic)
    P = traj.contacts[:, 0]
    assert np.abs(P[:, 2] - terrain.point(P[:, :2])[:, 2]).max() < 1e-12
    assert traj.constraint_residual.max() < 1e-13
    assert np.abs(traj.energy / traj.energy[0] - 1).max() < 1e-4


def test_in_a_scene_and_its_file(backend):
    """In a scene the tree rides its own bowl in the scene's frame: the links' fields are the
    lone run's, the wheel's ground point is on the bowl, and the scene file names the bowl and
    reads back to the same run bit for bit."""
    from test_scene_articulated import round_trip

    system = free_disk()
    ic = start(system)
    scene = nhphys.Scene(name="bowl")
    scene.add_ground(BOWL, name="bowl")
    scene.add_articulated(system, name="disk", **ic)
    traj = scene.simulate(0.05, 1e-3, backend=backend)
    lone = nhphys.simulate(system, 0.05, 1e-3, integrator=DLA(), backend=backend, **ic)
    centres = np.array([system.tree.kinematics(q, np.zeros(6), bias=False)["o"][5]
                        for q in lone.q])
    assert traj.body_names == ["disk.spin"]
    assert np.abs(traj.position[:, 0] - centres).max() < 1e-15
    P = traj.contact_point[:, 0]
    assert np.abs(P[:, 2] - (P[:, 0] ** 2 + P[:, 1] ** 2) / 4).max() < 1e-14
    text = round_trip(scene, backend)
    assert 'ground = "bowl"' in text
    with pytest.raises(ValueError, match="its own ground"):
        nhphys.Scene().add_articulated(system, ground=Plane(), **ic)


def documented_example(heading, namespace):
    """Run the first Python example after ``heading`` in docs/multibody.md (our own
    documentation's code) in ``namespace``, and return the namespace."""
    import re
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "multibody.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc[doc.index(heading):], re.S).group(1)
    exec(compile(code, "multibody.md", "exec"), namespace)
    return namespace


def test_the_documented_example_runs():
    """The example of docs/multibody.md, "On a curved ground"."""
    namespace = documented_example("### On a curved ground", {
        "np": np, "nhphys": nhphys, "Articulated": Articulated, "Joint": Joint,
        "Wheel": Wheel})
    traj = namespace["traj"]
    assert traj.constraint_residual.max() < 1e-13
    assert np.abs(traj.energy / traj.energy[0] - 1).max() < 1e-5


def test_a_wheel_that_does_not_fit_the_ground_is_refused(backend):
    """A bowl curving more tightly than the wheel (``z = (x^2 + y^2) / 0.09``: curvature
    radius 0.045 m at the bottom, the wheel's radius 0.1 m). Upright with its rim's bottom at
    the bowl's, the rim's sides are inside the bowl: its height above the bowl, ``0.1 (1 -
    cos t) - sin(t)^2 / 9``, is least at ``cos t = 0.45`` (-3.4 cm). The contact found is where
    the rim is deepest along the bowl's normal, a negative gap (the same on both backends),
    and the start is refused with it."""
    tight = Paraboloid(0.3, 0.3)
    system = free_disk(ground=tight)
    q = np.array([0.0, 0.0, 0.1, 0.0, 0.0, 0.0])
    gaps = [system.joint_tree(_module(b)).gaps(q)[0] for b in (backend, "python")]
    assert -0.034 < gaps[0] < -0.01 and abs(gaps[0] - gaps[1]) < 1e-15
    assert far_side_height(system, q, tight) < -0.03
    with pytest.raises(ValueError, match="does not touch the ground"):
        system.state(q=q, v=np.zeros(6))


def far_side_height(system, q, ground):
    """The least height above ``ground`` (a graph) of the rim's points on the far side of the
    centre from the contact (of its upper half when the contact is not found), by a
    brute-force sample of 3600 rim points."""
    kin = system.tree.kinematics(q, np.zeros(system.n), bias=False)
    R, C = kin["R"][5], kin["o"][5]
    P = system.tree.disk_contact(kin, 0)[4]
    P = np.where(np.isfinite(P), P, C - [0.0, 0.0, RADIUS])
    theta = np.linspace(-np.pi, np.pi, 3600, endpoint=False)
    rim = C + RADIUS * (np.cos(theta)[:, None] * R[:, 0] + np.sin(theta)[:, None] * R[:, 2])
    far = (rim - C) @ (P - C) <= 0
    return np.min(rim[far, 2] - ground.point(rim[far, :2])[:, 2])


def test_a_lost_contact_ends_the_run_with_its_status(backend):
    """A trench ``z = x^2/4 + y^2/0.09``. Released upright at rest on its wall (its centre at
    ``y = 0.1``, its axis along ``x``, so that it rolls down along ``y``), the wheel rolls
    down until its rim reaches the trench's other wall (the contact then at ``y = 0.09``):
    a second contact, beyond which the rim would cross the ground. The single contact is lost
    there, and the run stops with the contact failure's message, keeping its frames; at the
    last frame, one step (2 mm of travel) before, the far side of the rim is within 2 mm of
    the other wall (5 cm at the start)."""
    trench = Paraboloid(2.0, 0.3)
    system = free_disk(ground=trench)
    q = on_ground(system, [0.0, 0.1, 0.0, np.pi / 2, 0.0, 0.0])
    v = system.rates(q, {3: 0.0, 4: 0.0, 5: 0.0})
    assert far_side_height(system, q, trench) > 0.05
    with pytest.raises(nhphys.NewtonError, match="contact point could not be found") as info:
        nhphys.simulate(system, 2.0, 1e-3, integrator=DLA(), save_every=1, backend=backend,
                        q=q, v=v)
    traj = info.value.trajectory
    assert 0.2 < traj.t[-1] < 0.5
    assert 0.085 < traj.contacts[-1, 0, 1] < 0.095
    assert 0.0 < far_side_height(system, traj.q[-1], trench) < 2e-3
    assert np.linalg.norm(traj.v[-1, :3]) * 1e-3 > 1.5e-3  # a step's travel


def test_a_steep_terrain(backend):
    """A terrain of slopes up to 1.5 (``0.1 sin(15 x) cos(15 y)``): the contact is found where
    it lies centimetres from the point below the centre, and the run goes on with the contact
    on the terrain."""
    x = np.linspace(-1, 1, 201)
    heights = 0.1 * np.sin(15 * x)[:, None] * np.cos(15 * x)[None, :]
    terrain = HeightField(heights, (-1, 1), (-1, 1))
    system = free_disk(ground=terrain)
    q = on_ground(system, [0.05, 0.0, 0.0, 0.3, 0.05, 0.0])
    v = system.rates(q, {3: 0.0, 4: 0.0, 5: -30.0})
    traj = nhphys.simulate(system, 0.05, 2e-3, integrator=DLA(), save_every=1, backend=backend,
                           q=q, v=v)
    P = traj.contacts[:, 0]
    assert np.abs(P[:, 2] - terrain.point(P[:, :2])[:, 2]).max() < 1e-12
    assert traj.constraint_residual.max() < 1e-13
