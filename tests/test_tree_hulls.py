"""Convex hulls rolling in joint trees (``Articulated(..., hulls=[EllipsoidHull(...)])``).

Kane and Levinson's rattleback (semi-axes 20, 3 and 2 cm, centre of mass 1 cm below the
ellipsoid's centre, inertia per unit mass 2, 16, 17 cm^2 with the product -0.2 cm^2) is carried
by a free tree (slides along x, y, z, then turns about z, y and x). The same body as a single
rolling body (``RollingBody`` with an ``Ellipsoid`` shape: its contact by the shape's chart and
support map, its equations the rolling field on the rotation group) is an independent
formulation: the tree's ``Reference`` is compared with it on the plane and in a bowl, ``DLA()``
with the tree's ``Reference`` at its order, and the spin reversal with the rolling body's own
integrator. A cart with a ball caster in a socket (a hull on three revolute joints, kept on
the plane by the cart) is checked against its closed form. Every run test runs on the kernel
and on the twin, but for the reversal's 4000 steps (the kernel only).
"""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import DLA, Composition, Reference
from nhphys.integrators.coefficients import composition
from nhphys.surfaces import Ellipsoid, Paraboloid, Plane
from nhphys.systems import Articulated, EllipsoidHull, Joint, RollingBody, Wheel
from test_tree_ground import check_rows_rates, documented_example

MASS = 1.0
INERTIA = MASS * 1e-4 * np.array([[2.0, -0.2, 0.0], [-0.2, 16.0, 0.0], [0.0, 0.0, 17.0]])
AXES = (0.2, 0.03, 0.02)
COM = (0.0, 0.0, -0.01)
BOWL = Paraboloid(3.0, 3.0)  # curvature radius 4.5 m at the bottom (the hull's: 2 m along x)
TIGHT = Reference(rtol=1e-12, atol=1e-13)
ORDER4 = Composition([(DLA(), w) for w in composition(4)])


def rattleback(ground=None):
    joints = [Joint(-1, "prismatic", (1, 0, 0), name="x"),
              Joint(0, "prismatic", (0, 1, 0), name="y"),
              Joint(1, "prismatic", (0, 0, 1), name="z"),
              Joint(2, "revolute", (0, 0, 1), name="yaw"),
              Joint(3, "revolute", (0, 1, 0), name="pitch"),
              Joint(4, "revolute", (1, 0, 0), name="roll", mass=MASS, com=COM, inertia=INERTIA)]
    return Articulated(joints, hulls=[EllipsoidHull(5, AXES)], ground=ground, name="rattleback")


def start(system, spin=5.0, tilt=0.01):
    """Tilted by ``tilt`` about y and x, spinning at ``spin`` about z, lowered onto the
    ground."""
    q = np.array([0.0, 0.0, 0.0, 0.0, tilt, tilt])
    for _ in range(30):  # the gap is along the normal: lowering by gap / n_z cancels it
        kin = system.tree.kinematics(q, np.zeros(6), bias=False)
        contact = system.tree.hull_contact(kin, 0)
        q[2] -= contact[4] / contact[3][2]
    return {"q": q, "v": system.rates(q, {3: spin, 4: 0.0, 5: 0.0})}


def rolling_start(system, q, v):
    kin = system.tree.kinematics(q, v, bias=False)
    R = kin["R"][5]
    return {"orientation": R, "omega": R.T @ kin["omega"][5],
            "position": system.tree.hull_contact(kin, 0)[2]}


def body():
    return nhphys.RigidBody(MASS, INERTIA, Ellipsoid(AXES), com=COM)


@pytest.mark.parametrize("ground", [None, BOWL], ids=["plane", "bowl"])
def test_the_trees_reference_is_the_rolling_bodys(ground):
    """(The continuous equations, ``Reference``, are the twin's: no kernel computes them.)"""
    system = rattleback(ground)
    ic = start(system)
    T = 1.0
    tree = nhphys.simulate(system, T, 0.05, integrator=TIGHT, **ic)
    alone = nhphys.simulate(RollingBody(body(), Plane() if ground is None else ground), T,
                            0.05, integrator=TIGHT, **rolling_start(system, **ic))
    zero = np.zeros(6)
    R = np.array([system.tree.kinematics(q, zero, bias=False)["R"][5] for q in tree.q])
    assert abs(tree.energy[0] - alone.energy[0]) < 1e-14
    assert np.abs(R - alone.R).max() < 1e-10
    assert np.abs(tree.contacts[:, 0] - alone.contact_point).max() < 1e-10
    assert np.ptp(tree.energy) < 1e-11


@pytest.mark.parametrize("ground", [None, BOWL], ids=["plane", "bowl"])
@pytest.mark.parametrize("integrator, order, steps", [(DLA(), 2, (100, 200, 400)),
                                                      (ORDER4, 4, (100, 200, 400))])
def test_the_steps_converge_at_their_orders(backend, ground, integrator, order, steps):
    """Over 0.25 s from 400 steps down to 100 (h = 2.5e-3; the order-4 composition's first
    ratio from 50 steps is 20, still short of its asymptote, and its longest sub-step at 50
    steps is beyond what the step's chord iteration converges on in the bowl, as DLA's at
    h = 1e-2)."""
    system = rattleback(ground)
    ic = start(system)
    T = 0.25
    reference = nhphys.simulate(system, T, T, integrator=TIGHT, **ic)
    errors = []
    for n in steps:
        traj = nhphys.simulate(system, T, T / n, integrator=integrator, save_every=n,
                               backend=backend, **ic)
        errors.append(np.abs(traj.q[-1] - reference.q[-1]).max())
        assert traj.constraint_residual.max() < 1e-13
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(np.abs(np.log2(ratios) - order) < 0.15), (errors, ratios)


@pytest.mark.parity
@pytest.mark.parametrize("ground", [None, BOWL], ids=["plane", "bowl"])
def test_kernel_and_twin_agree_step_for_step(ground):
    system = rattleback(ground)
    ic = start(system)
    runs = [nhphys.simulate(system, 0.5, 1e-3, integrator=DLA(), save_every=10, backend=b,
                            **ic) for b in ("cython", "python")]
    assert np.abs(runs[0].q - runs[1].q).max() < 1e-10
    assert np.abs(runs[0].v - runs[1].v).max() < 1e-10
    for b in ("cython", "python"):
        from nhphys import _backend

        tree = system.joint_tree(_backend.implementation("multibody", b))
        assert np.abs(tree.gaps(runs[0].q[-1]) - system.tree.gaps(runs[0].q[-1])).max() < 1e-15


@pytest.mark.kernels_only("4000 steps with a contact solve each: about 30 s on the twin")
def test_the_rattleback_reverses_as_the_rolling_body_does(backend):
    """Spun at -5 rad/s (the sense that reverses sooner), the tree's rattleback (``DLA()``,
    h = 1e-3) slows, rocks and turns the other way when the rolling body does (its own
    ``"exp"`` integrator, h = 1e-3): measured 2.7569 s and 2.7565 s, where halving the step
    moves each by 2.5 ms (the methods' own errors). Their energy errors are of one size
    (1.46e-3 and 1.56e-3: the rocking before the reversal is fast) and the rows hold."""
    system = rattleback()
    ic = start(system, spin=-5.0, tilt=np.deg2rad(0.5))
    T, h = 4.0, 1e-3
    tree = nhphys.simulate(system, T, h, integrator=DLA(), save_every=5, backend=backend, **ic)
    alone = nhphys.simulate(RollingBody(body(), Plane()), T, h, integrator="exp",
                            save_every=5, backend=backend, **rolling_start(system, **ic))
    spin_tree = np.array([system.tree.kinematics(q, v, bias=False)["omega"][5][2]
                          for q, v in zip(tree.q, tree.v)])
    spin_alone = np.einsum("nij,nj->ni", alone.R, alone.omega)[:, 2]

    def reversal(t, spin):
        i = int(np.argmax(spin > 0))
        assert spin[0] < 0 and i > 0
        return t[i - 1] + (t[i] - t[i - 1]) * spin[i - 1] / (spin[i - 1] - spin[i])

    assert abs(reversal(tree.t, spin_tree) - reversal(alone.t, spin_alone)) < 2e-3
    error_tree = np.abs(tree.energy / tree.energy[0] - 1).max()
    error_alone = np.abs(alone.energy / alone.energy[0] - 1).max()
    assert error_tree < 1.2 * error_alone
    assert tree.constraint_residual.max() < 1e-13


def test_the_rows_biases_are_the_rows_rates():
    """``d/dt (A(q) v) = A dv/dt + b`` along the motion (central differences, Richardson-
    extrapolated), on the plane and in the bowl. (The twin's: the biases serve the continuous
    equations only.)"""
    for ground in (None, BOWL):
        system = rattleback(ground)
        check_rows_rates(system, **start(system, spin=3.0, tilt=0.2))


# -- a cart with a ball caster ------------------------------------------------------------------
R_WHEEL, HALF_AXLE, R_BALL, AHEAD = 0.1, 0.15, 0.05, 0.3


def caster_cart():
    """A chassis (x, y, heading) on an axle of two wheels (the second without its sideways
    row), and ahead on its centre line a ball in a socket (turns about the chassis' z, then
    x, then y), kept on the plane by the chassis: the ball's rows are its two horizontal ones."""
    m, I_ball = 0.2, 2 / 5 * 0.2 * R_BALL**2
    joints = [Joint(-1, "prismatic", (1, 0, 0), name="x"),
              Joint(0, "prismatic", (0, 1, 0), name="y"),
              Joint(1, "revolute", (0, 0, 1), offset=(0, 0, R_WHEEL), mass=2.0,
                    com=(0.1, 0, 0), inertia=np.diag([0.02, 0.03, 0.04]), name="heading"),
              Joint(2, "revolute", (0, 1, 0), offset=(0, HALF_AXLE, 0), mass=0.5,
                    inertia=np.diag([0.001, 0.002, 0.001]), name="left"),
              Joint(2, "revolute", (0, 1, 0), offset=(0, -HALF_AXLE, 0), mass=0.5,
                    inertia=np.diag([0.001, 0.002, 0.001]), name="right"),
              Joint(2, "revolute", (0, 0, 1), offset=(AHEAD, 0, R_BALL - R_WHEEL),
                    name="ball_z"),
              Joint(5, "revolute", (1, 0, 0), name="ball_x"),
              Joint(6, "revolute", (0, 1, 0), mass=m, inertia=I_ball * np.eye(3),
                    name="ball_y")]
    wheels = [Wheel(3, R_WHEEL), Wheel(4, R_WHEEL, sideways=False)]
    return Articulated(joints, wheels, hulls=[EllipsoidHull(7, (R_BALL,) * 3, held=False)],
                       name="cart")


def test_a_ball_caster_rolls_as_its_closed_form(backend):
    """Rolling straight at 0.5 m/s, the cart keeps its speed (no force does work), and the
    ball turns about its axle at ``x / r_ball``; the constraints hold to round-off."""
    cart = caster_cart()
    q = np.zeros(8)
    speed = 0.5
    v = cart.rates(q, {2: 0.0, 3: speed / R_WHEEL, 5: 0.0})
    traj = nhphys.simulate(cart, 1.0, 1e-3, integrator=DLA(), save_every=100, backend=backend,
                           q=q, v=v)
    assert np.abs(traj.q[:, 0] - speed * traj.t).max() < 1e-12
    assert np.abs(traj.q[:, 7] - traj.q[:, 0] / R_BALL).max() < 1e-10
    assert np.abs(traj.q[:, [1, 2, 5, 6]]).max() < 1e-14
    assert traj.constraint_residual.max() < 1e-13
    contact = traj.contacts[:, 2]  # the wheels', then the ball's
    assert np.abs(contact[:, 2]).max() < 1e-15
    assert np.abs(contact[:, 0] - (traj.q[:, 0] + AHEAD)).max() < 1e-12


def test_a_turning_caster_cart_keeps_its_energy(backend):
    """Turning (the wheels at different rates), the ball turns in its socket about the
    vertical too; the energy is conserved (DLA's bounded error) and the rows hold."""
    cart = caster_cart()
    q = np.zeros(8)
    v = cart.rates(q, {2: 0.8, 3: 4.0, 5: 0.0})
    traj = nhphys.simulate(cart, 2.0, 1e-3, integrator=DLA(), save_every=50, backend=backend,
                           q=q, v=v)
    assert np.abs(traj.energy / traj.energy[0] - 1).max() < 1e-5
    assert traj.constraint_residual.max() < 1e-13
    assert np.ptp(traj.q[:, 5]) > 0.5  # the socket's vertical turn follows the heading


def test_hull_refusals():
    joints = rattleback().joints
    with pytest.raises(ValueError, match="semi_axes > 0"):
        Articulated(joints, hulls=[EllipsoidHull(5, (0.2, 0.0, 0.1))])
    with pytest.raises(TypeError, match="EllipsoidHull"):
        Articulated(joints, hulls=[Wheel(5, 0.1)])
    with pytest.raises(ValueError, match="not held"):
        Articulated(joints, hulls=[EllipsoidHull(5, AXES, held=False)], ground=BOWL)
    with pytest.raises(ValueError, match="Hull 0 does not touch"):
        rattleback().state(q=[0, 0, 0.5, 0, 0, 0], v=np.zeros(6))


def test_scene_and_file(backend):
    """A rattleback tree in a scene beside its rolling body: the link's fields are the lone
    run's, its mesh is its ellipsoid, and the scene file reads back bit for bit."""
    from test_scene_articulated import round_trip

    system = rattleback()
    ic = start(system)
    scene = nhphys.Scene(name="rattlebacks")
    floor = scene.add_ground(Plane(extent=1.0), name="floor")
    entry = scene.add_articulated(system, name="tree", **ic)
    scene.add_body(body(), nhphys.RollingContact(floor), **rolling_start(system, **ic))
    points = entry.link_mesh(0)[0] + system.tree.com[5]
    assert np.abs(np.sum((points / np.array(AXES)) ** 2, axis=1) - 1).max() < 1e-12
    traj = scene.simulate(0.05, 1e-3, backend=backend)
    lone = nhphys.simulate(system, 0.05, 1e-3, integrator=DLA(), backend=backend, **ic)
    assert np.abs(traj.contact_point[:, 0] - lone.contacts[:, 0]).max() < 1e-15
    assert np.abs(traj.contact_point[:, 0] - traj.contact_point[:, 1]).max() < 1e-6
    text = round_trip(scene, backend)
    assert "[[bodies.system.hulls]]" in text


def test_the_documented_example_runs():
    """The example of docs/multibody.md, "Convex hulls", with the start of ``start``."""
    namespace = documented_example("### Convex hulls",
                                   {"np": np, "Articulated": Articulated, "Joint": Joint})
    system = namespace["rattleback"]
    traj = nhphys.simulate(system, 0.1, 1e-3, integrator=DLA(), **start(system))
    assert traj.constraint_residual.max() < 1e-13


def test_rows_and_gaps_of_wheels_hulls_blades_and_suslov_together(backend):
    """The bookkeeping of a tree with every kind of contact: a held wheel without its sideways
    row, an off-centre hull on a body welded by a fixed joint, a blade and a Suslov row (and
    two more joints, so that rows are fewer than joints). At random configurations the
    backend's rows and gaps equal the twin's, the held gaps are the wheel's then the hull's,
    and the recorded contacts run wheels, hulls, blades."""
    from nhphys import _backend
    from nhphys.systems import Blade, SuslovConstraint

    small = np.diag([1e-3, 2e-3, 3e-3])
    joints = [Joint(-1, "prismatic", (1, 0, 0)), Joint(0, "prismatic", (0, 1, 0)),
              Joint(1, "revolute", (0, 0, 1), offset=(0, 0, 0.1), mass=2.0,
                    inertia=np.diag([0.1, 0.1, 0.2])),
              Joint(2, "revolute", (0, 1, 0), offset=(0, 0.2, 0), mass=0.3, inertia=small),
              Joint(2, "fixed", offset=(0.3, 0.0, -0.05), mass=0.1, inertia=small),
              Joint(2, "revolute", (1, 0, 0), offset=(-0.2, 0, 0), mass=0.2, inertia=small),
              Joint(5, "revolute", (0, 1, 0), mass=0.1, inertia=small),
              Joint(3, "revolute", (0, 0, 1), offset=(0, 0, 0.3), mass=0.1, inertia=small),
              Joint(7, "revolute", (1, 0, 0), offset=(0, 0, 0.1), mass=0.1, inertia=small)]
    system = Articulated(
        joints, [Wheel(6, 0.08, held=True, sideways=False)],
        hulls=[EllipsoidHull(4, (0.05, 0.04, 0.03), centre=(0.01, -0.02, 0.0))],
        blades=[Blade(2, point=(-0.3, 0, -0.1))], suslov=[SuslovConstraint(5, (0, 0, 1))])
    tree = system.joint_tree(_backend.implementation("multibody", backend))
    assert system.tree.held_contacts == [0, 1]  # the wheel, then the welded hull
    assert system.tree.holonomic_rows == [1, 4]
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.normal(scale=0.3, size=system.n)
        assert np.abs(tree.constraint_matrix(q) - system.tree.constraint_matrix(q)).max() \
            < 1e-14
        assert np.abs(tree.gaps(q) - system.tree.gaps(q)).max() < 1e-15
    q = rng.normal(scale=0.3, size=system.n)
    saved = system.observables({"q": q[None], "v": np.zeros((1, system.n))})
    kin = system.tree.kinematics(q, np.zeros(system.n), bias=False)
    expected = [system.tree.disk_contact(kin, 0)[4], system.tree.hull_contact(kin, 0)[2],
                system.tree.blade_contact(kin, 0)[0]]
    assert np.array_equal(saved["contacts"][0], np.array(expected))
