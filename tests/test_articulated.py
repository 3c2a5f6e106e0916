"""Articulated systems built by a user: a joint tree with wheels, its closed forms on both
backends, and the clear errors for trees that cannot be stepped."""

import numpy as np
import pytest

import nhphys
from nhphys.forces import JointMotor, Schedule
from nhphys.integrators import DLA, Reference
from nhphys.systems.articulated import Articulated, Blade, Joint, Wheel

R = 0.1
MASS = 0.01
I_AXLE, I_DIAM = 0.5 * MASS * R**2, 0.25 * MASS * R**2


def upright_coin(forces=None):
    """A coin held vertical, rolling on the plane: contact point (x, y), heading, spin."""
    return Articulated([
        Joint(-1, "prismatic", (1, 0, 0)),
        Joint(0, "prismatic", (0, 1, 0)),
        Joint(1, "revolute", (0, 0, 1)),
        Joint(2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=MASS,
              inertia=np.diag([I_DIAM, I_AXLE, I_DIAM]), name="spin"),
    ], [Wheel(3, radius=R)], name="coin", forces=forces)


def test_upright_coin_follows_its_closed_form(backend):
    """Heading rate and spin are constant, and the contact point runs on a circle of radius
    R spin / turning rate (the vertical rolling disk)."""
    coin = upright_coin()
    turning, spin = 0.5, 10.0
    v = coin.rates(np.zeros(4), {2: turning, 3: spin})
    assert v[0] == pytest.approx(R * spin) and v[1] == pytest.approx(0.0, abs=1e-15)
    traj = nhphys.simulate(coin, 4.0, 1e-2, integrator=DLA(), backend=backend, q=np.zeros(4),
                           v=v)
    t = traj.t
    assert np.max(np.abs(traj.v[:, 2] - turning)) < 1e-12
    assert np.max(np.abs(traj.v[:, 3] - spin)) < 1e-11
    radius = R * spin / turning
    expected = np.column_stack([radius * np.sin(turning * t), radius * (1 - np.cos(turning * t))])
    # the second-order method's error in the position along the circle
    assert np.max(np.abs(traj.q[:, :2] - expected)) < 1e-4
    assert np.max(traj.constraint_residual) < 1e-13
    assert np.max(np.abs(traj.energy - traj.energy[0])) < 1e-14


def test_reference_runs_an_articulated_system():
    coin = upright_coin()
    v = coin.rates(np.zeros(4), {2: 0.5, 3: 10.0})
    traj = nhphys.simulate(coin, 1.0, 0.1, integrator=Reference(rtol=1e-12, atol=1e-14),
                           q=np.zeros(4), v=v)
    expected = 2.0 * np.array([np.sin(0.5), 1 - np.cos(0.5)])
    assert np.max(np.abs(traj.q[-1, :2] - expected)) < 1e-10


def base(*extra, **kw):
    return [Joint(-1, "prismatic", (1, 0, 0)), Joint(0, "prismatic", (0, 1, 0)),
            Joint(1, "revolute", (0, 0, 1)), *extra]


@pytest.mark.parametrize("joints, wheels, match", [
    (base(Joint(3, "revolute", (0, 1, 0), offset=(0, 0, R), mass=1.0)), [Wheel(3, R)],
     "attached to its own body"),
    (base(Joint(4, "revolute", (0, 1, 0), offset=(0, 0, R), mass=1.0),
          Joint(2, "revolute", (0, 1, 0))), [Wheel(3, R)], "closed kinematic loops"),
    (base(Joint(2, "revolute", (0, 0, 0), offset=(0, 0, R), mass=1.0)), [Wheel(3, R)],
     "direction"),
    (base(Joint(2, "hinge", (0, 1, 0), offset=(0, 0, R), mass=1.0)), [Wheel(3, R)], "kind"),
    (base(Joint(2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=-1.0)), [Wheel(3, R)],
     "mass"),
    (base(Joint(2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=1.0,
                inertia=np.diag([1.0, 1.0, 3.0]))), [Wheel(3, R)], "inertia"),
    (base(Joint(2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=1.0)), [Wheel(7, R)],
     "body"),
    (base(Joint(2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=1.0)), [Wheel(3, 0.0)],
     "radius"),
    (base(Joint(2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=1.0)), [], "Wheel"),
])
def test_trees_that_cannot_be_built_are_refused_with_a_message(joints, wheels, match):
    with pytest.raises(ValueError, match=match):
        Articulated(joints, wheels)


def test_a_wheel_off_the_ground_is_refused_before_any_step():
    coin = Articulated(base(Joint(2, "revolute", (0, 1, 0), offset=(0, 0, 0.15), mass=1.0,
                                  inertia=np.eye(3) * 0.01)), [Wheel(3, R)])
    with pytest.raises(ValueError, match="Wheel 0 does not touch the ground.*0.05 m"):
        nhphys.simulate(coin, 0.1, 0.01, integrator="dla", q=np.zeros(4), v=np.zeros(4))


def test_dependent_constraints_are_refused():
    """Two wheels on one axle of a chassis that cannot roll: both forbid the same sideways
    motion."""
    cart = Articulated(base(
        Joint(2, "revolute", (0, 1, 0), offset=(0, 0.2, R), mass=1.0, inertia=np.eye(3) * 0.01),
        Joint(2, "revolute", (0, 1, 0), offset=(0, -0.2, R), mass=1.0,
              inertia=np.eye(3) * 0.01)), [Wheel(3, R), Wheel(4, R)])
    with pytest.raises(ValueError, match="dependent"):
        nhphys.simulate(cart, 0.1, 0.01, integrator="dla", q=np.zeros(5), v=np.zeros(5))


def test_velocities_off_the_constraints_are_refused_and_rates_completes_them():
    coin = upright_coin()
    with pytest.raises(ValueError, match="on the constraints"):
        nhphys.simulate(coin, 0.1, 0.01, integrator="dla", q=np.zeros(4),
                        v=np.array([0.0, 0.1, 0.0, 0.0]))
    with pytest.raises(ValueError, match="Expected 2 given components"):
        coin.rates(np.zeros(4), {3: 1.0})
    with pytest.raises(ValueError, match="do not fix the others"):
        coin.rates(np.zeros(4), {0: 1.0, 3: 1.0})


# -- drives on joints ------------------------------------------------------------------------
I_ROLL = I_AXLE + MASS * R**2  # the coin's inertia about its ground point, rolling


def test_a_constant_motor_torque_spins_the_coin_up_at_its_closed_form_rate(backend):
    """spin(t) = spin0 + T t / (I_axle + m R^2) at the nodes, to round-off; energy - work is
    conserved to second order (the work is T times the step's rotation, the energy change T h
    times the mean of the node rates: they differ at O(h^3) a step)."""
    torque = 2e-4
    coin = upright_coin([JointMotor("spin", torque=torque)])
    v = coin.rates(np.zeros(4), {2: 0.5, 3: 10.0})
    drift = []
    for h in (1e-2, 5e-3):
        traj = nhphys.simulate(coin, 2.0, h, integrator=DLA(), backend=backend, q=np.zeros(4),
                               v=v)
        expected = 10.0 + torque * traj.t / I_ROLL
        assert np.max(np.abs(traj.v[:, 3] - expected)) < 1e-11
        assert np.max(np.abs(traj.v[:, 2] - 0.5)) < 1e-12
        assert traj.work[-1] == pytest.approx(torque * (traj.q[-1, 3] - traj.q[0, 3]),
                                              rel=1e-12)
        balance = traj.energy - traj.work
        drift.append(np.max(np.abs(balance - balance[0])) / traj.energy[0])
    assert drift[0] < 1e-6 and 3.5 < drift[0] / drift[1] < 4.5, drift


@pytest.mark.parametrize("h", [2e-2, 1e-2])
def test_a_speed_controlled_motor_drives_the_spin_to_its_target(backend, h):
    """spin(t) = w + (spin0 - w) exp(-gain t / I_roll): second order, and energy - work
    conserved to second order (the controller dissipates)."""
    gain, target = 1e-3, 20.0
    coin = upright_coin([JointMotor(3, target_speed=target, gain=gain)])
    v = coin.rates(np.zeros(4), {2: 0.5, 3: 10.0})
    traj = nhphys.simulate(coin, 2.0, h, integrator=DLA(), backend=backend, q=np.zeros(4), v=v)
    expected = target + (10.0 - target) * np.exp(-gain * traj.t / I_ROLL)
    error = np.max(np.abs(traj.v[:, 3] - expected))
    assert error < 0.02 * (h / 1e-2) ** 2, error
    balance = traj.energy - traj.work
    assert np.max(np.abs(balance - balance[0])) < 5e-6 * (h / 1e-2) ** 2


def test_scheduled_motor_matches_reference():
    push = Schedule([0.0, 0.5, 1.0], [0.0, 3e-4, -1e-4], kind="cubic")
    coin = upright_coin([JointMotor("spin", torque=push), JointMotor(2, target_speed=0.0,
                                                                       gain=1e-4)])
    v = coin.rates(np.zeros(4), {2: 0.5, 3: 10.0})
    ref = nhphys.simulate(coin, 1.0, 0.05, integrator=Reference(rtol=1e-12, atol=1e-14),
                          q=np.zeros(4), v=v)
    errors = []
    for h in (1e-2, 5e-3):
        traj = nhphys.simulate(coin, 1.0, h, integrator=DLA(), q=np.zeros(4), v=v,
                               save_every=round(0.05 / h))
        errors.append(max(np.max(np.abs(traj.v - ref.v)), np.max(np.abs(traj.work - ref.work))))
    assert errors[1] < 1e-5 * 10.0 and 3.5 < errors[0] / errors[1] < 4.5, errors  # spin ~ 10


@pytest.mark.parity
def test_motors_kernel_and_twin_agree():
    push = Schedule([0.0, 0.5, 1.0], [0.0, 3e-4, -1e-4])
    coin = upright_coin([JointMotor("spin", torque=push, target_speed=12.0, gain=1e-4)])
    v = coin.rates(np.zeros(4), {2: 0.5, 3: 10.0})
    runs = [nhphys.simulate(coin, 1.0, 1e-2, integrator=DLA(), backend=b, q=np.zeros(4), v=v)
            for b in ("cython", "python")]
    for name in ("q", "v", "work"):
        assert np.max(np.abs(getattr(runs[0], name) - getattr(runs[1], name))) < 1e-13


def test_bad_drives_are_refused():
    with pytest.raises(ValueError, match="joints 0 .. 3"):
        upright_coin([JointMotor(7, torque=1.0)])
    with pytest.raises(ValueError, match="named"):
        upright_coin([JointMotor("wheel", torque=1.0)])
    with pytest.raises(TypeError, match="JointMotor"):
        upright_coin([nhphys.forces.LinearDrag(0.1)])
    with pytest.raises(ValueError, match="gain"):
        JointMotor(3, target_speed=1.0)


# -- knife edges and axles ---------------------------------------------------------------------
def planar(*bodies):
    """x, y and heading of a planar body, then ``bodies``."""
    return [Joint(-1, "prismatic", (1, 0, 0)), Joint(0, "prismatic", (0, 1, 0)),
            Joint(1, "revolute", (0, 0, 1), **bodies[0]), *bodies[1:]]


def test_a_sleigh_built_from_a_blade_follows_the_chaplygin_closed_form(backend):
    """The sleigh (centre of mass a ahead of its blade) against KnifeEdge.sleigh_closed_form:
    the speed along the blade and the turning rate."""
    from nhphys.systems import Blade, KnifeEdge

    m, I, a = 1.0, 0.02, 0.15
    sleigh = Articulated(planar({"mass": m, "com": (a, 0, 0), "inertia": np.diag([1, 1, I])}),
                         blades=[Blade(2)])
    v = sleigh.rates(np.zeros(3), {0: 0.1, 2: 2.5})  # along the blade (x) and turning
    assert np.allclose(v, [0.1, 0.0, 2.5])  # the blade's point may not move sideways
    traj = nhphys.simulate(sleigh, 3.0, 1e-3, integrator=DLA(), backend=backend,
                           q=np.zeros(3), v=v, save_every=10)
    speed_closed, turning_closed = KnifeEdge(m, I, a).sleigh_closed_form(traj.t, 0.1, 2.5)
    heading = traj.q[:, 2]
    speed = traj.v[:, 0] * np.cos(heading) + traj.v[:, 1] * np.sin(heading)
    assert np.max(np.abs(speed - speed_closed)) < 2e-6
    assert np.max(np.abs(traj.v[:, 2] - turning_closed)) < 2e-5
    assert np.max(traj.constraint_residual) < 1e-13
    # the energy error of the second-order step: bounded (5.0e-7 relative at h = 1e-3)
    assert np.max(np.abs(traj.energy - traj.energy[0])) < 1e-6 * traj.energy[0]


def axle_cart(forces=None):
    """Two wheels on a rigid axle of a planar chassis, and a caster on a swivel behind: the
    right wheel gives its rolling row only (the left one's sideways row is the axle's)."""
    r, b, rc = 0.05, 0.15, 0.03
    chassis = {"mass": 2.0, "com": (-0.05, 0, 0.1), "inertia": np.diag([0.02, 0.03, 0.04])}
    wheel = {"mass": 0.1, "inertia": np.diag([6.25e-5, 1.25e-4, 6.25e-5])}
    joints = planar(chassis,
                    Joint(2, "revolute", (0, 1, 0), offset=(0, b, r), name="left", **wheel),
                    Joint(2, "revolute", (0, 1, 0), offset=(0, -b, r), name="right", **wheel),
                    Joint(2, "revolute", (0, 0, 1), offset=(-0.25, 0, 0.08), mass=0.02,
                          inertia=np.diag([1e-6, 1e-6, 1e-6]), name="swivel"),
                    Joint(5, "revolute", (0, 1, 0), offset=(-0.02, 0, rc - 0.08), mass=0.02,
                          inertia=np.diag([5e-6, 9e-6, 5e-6]), name="caster"))
    wheels = [Wheel(3, r), Wheel(4, r, sideways=False), Wheel(6, rc)]
    return Articulated(joints, wheels, forces=forces, name="cart"), r, b


def test_a_cart_on_an_axle_runs_straight_and_turns_on_the_closed_form_circle(backend):
    """Equal wheel rates: a straight line at r w; the wheels held at w_L, w_R by stiff speed
    control: the chassis turns at r (w_R - w_L) / (2 b) on a circle of radius b (w_L + w_R) /
    (w_R - w_L) about its axle's centre."""
    cart, r, b = axle_cart()
    assert cart.m == 5 and cart.n == 7  # two degrees of freedom
    v = cart.rates(np.zeros(7), {3: 10.0, 4: 10.0})
    traj = nhphys.simulate(cart, 1.0, 1e-3, integrator=DLA(), backend=backend, q=np.zeros(7),
                           v=v, save_every=100)
    assert np.max(np.abs(traj.q[:, 1])) < 1e-12 and np.max(np.abs(traj.q[:, 2])) < 1e-12
    assert traj.q[-1, 0] == pytest.approx(r * 10.0, rel=1e-12)
    assert np.max(np.abs(traj.energy - traj.energy[0])) < 1e-12
    wl, wr = 8.0, 12.0
    motors = [JointMotor("left", target_speed=wl, gain=50.0),
              JointMotor("right", target_speed=wr, gain=50.0)]
    cart, r, b = axle_cart(motors)
    v = cart.rates(np.zeros(7), {3: wl, 4: wr})
    traj = nhphys.simulate(cart, 2.0, 1e-3, integrator=DLA(), backend=backend, q=np.zeros(7),
                           v=v, save_every=100)
    turning = r * (wr - wl) / (2 * b)
    assert np.max(np.abs(traj.v[:, 2] - turning)) < 1e-3 * turning
    centre = np.array([0.0, b * (wl + wr) / (wr - wl)])  # left of the start
    radius = np.linalg.norm(traj.q[:, :2] - centre, axis=1)  # the axle's centre is (x, y)
    assert np.max(np.abs(radius - centre[1])) < 1e-3 * centre[1]
    assert np.max(traj.constraint_residual) < 1e-12


def test_dependent_rows_are_refused_until_one_wheel_gives_its_rolling_row_only():
    r, b = 0.05, 0.15
    body = {"mass": 2.0, "inertia": np.diag([0.02, 0.03, 0.04])}
    wheel = {"mass": 0.1, "inertia": np.diag([6.25e-5, 1.25e-4, 6.25e-5])}
    both = Articulated(planar(body, Joint(2, "revolute", (0, 1, 0), offset=(0, b, r), **wheel),
                              Joint(2, "revolute", (0, 1, 0), offset=(0, -b, r), **wheel)),
                       [Wheel(3, r), Wheel(4, r)])
    with pytest.raises(ValueError, match="dependent"):
        both.check_configuration(np.zeros(5))
    one = Articulated(planar(body, Joint(2, "revolute", (0, 1, 0), offset=(0, b, r), **wheel),
                             Joint(2, "revolute", (0, 1, 0), offset=(0, -b, r), **wheel)),
                      [Wheel(3, r), Wheel(4, r, sideways=False)])
    assert one.check_configuration(np.zeros(5)) is not None


def test_a_blade_off_the_ground_is_refused():
    from nhphys.systems import Blade

    sleigh = Articulated(planar({"mass": 1.0, "inertia": np.eye(3) * 0.01}),
                         blades=[Blade(2, point=(0, 0, 0.1))])
    with pytest.raises(ValueError, match="Blade 0 does not touch the ground"):
        nhphys.simulate(sleigh, 0.1, 0.01, integrator="dla", q=np.zeros(3), v=np.zeros(3))


def test_blade_and_axle_constraint_rows_and_bias_against_finite_differences():
    """The rows of a blade and of a one-row wheel, and their bias d/dt (A(q) v) along the
    motion, against central differences (the rows' directions turn with the bodies)."""
    cart, _, _ = axle_cart()
    from nhphys.systems import Blade

    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, 7)
    q[[0, 1]] *= 3
    v = rng.normal(size=7)
    A, b = cart.tree.constraints(q, v)
    eps = 1e-6
    Av = [cart.tree.constraints(q + s * v, v)[0] @ v for s in (eps, -eps)]
    assert np.max(np.abs(b - (Av[0] - Av[1]) / (2 * eps))) < 1e-6 * max(1.0, np.abs(b).max())
    sleigh = Articulated(planar({"mass": 1.0, "com": (0.1, 0, 0), "inertia": np.eye(3) * 0.01},
                                Joint(2, "revolute", (0, 0, 1), offset=(-0.3, 0, 0), mass=1.0,
                                      inertia=np.eye(3) * 0.01)),
                         blades=[Blade(2), Blade(3, point=(-0.4, 0, 0))])
    q = rng.uniform(-1, 1, 4)
    v = rng.normal(size=4)
    A, b = sleigh.tree.constraints(q, v)
    Av = [sleigh.tree.constraints(q + s * v, v)[0] @ v for s in (eps, -eps)]
    assert np.max(np.abs(b - (Av[0] - Av[1]) / (2 * eps))) < 1e-6 * max(1.0, np.abs(b).max())


@pytest.mark.parity
def test_blade_and_axle_rows_of_kernel_and_twin_agree():
    from nhphys import _backend
    from nhphys.twins import multibody as twin

    cart, _, _ = axle_cart()
    kernel = cart.joint_tree(_backend.choose("multibody", "cython")[0])
    python = cart.joint_tree(twin)
    q = np.random.default_rng(2).uniform(-1, 1, 7)
    assert np.max(np.abs(kernel.constraint_matrix(q) - python.constraint_matrix(q))) < 1e-15


def test_one_motor_may_drive_two_systems_each_on_its_own_joint():
    """A JointMotor named for a joint is resolved per system and never changed."""
    motor = JointMotor("spin", torque=1e-4)
    coin = upright_coin([motor])
    other = Articulated(planar({"mass": 1.0, "inertia": np.eye(3) * 0.01}, Joint(
        2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=MASS,
        inertia=np.diag([I_DIAM, I_AXLE, I_DIAM]), name="spin")), [Wheel(3, radius=R)],
        forces=[motor])
    assert [j for _, j in coin._motors] == [3] and [j for _, j in other._motors] == [3]
    assert motor.joint == "spin" and not hasattr(motor, "index")


@pytest.mark.parametrize("build, match", [
    (lambda: Articulated(planar({"mass": 1.0, "inertia": np.eye(3) * 0.01}),
                         blades=[Blade(2), Blade(2, point=(0.1, 0, 0)),
                                 Blade(2, point=(0.2, 0, 0))]), "no motion"),
    (lambda: Articulated(planar({"mass": 1.0, "name": "a"},
                                Joint(2, "revolute", (0, 1, 0), offset=(0, 0, R), mass=1.0,
                                      inertia=np.eye(3) * 0.01, name="a")),
                         [Wheel(3, R)]), "unique"),
    (lambda: Articulated(planar({"mass": 1.0, "inertia": np.eye(3) * 0.01}),
                         blades=[Blade(2, direction=(0, 0, 1))]), "level"),
    (lambda: Articulated(planar({"mass": 1.0, "inertia": np.eye(3) * 0.01}),
                         [Wheel(2.0, R)]), "body"),
])
def test_more_trees_that_cannot_be_stepped_are_refused(build, match):
    with pytest.raises(ValueError, match=match):
        build()
    with pytest.raises(ValueError, match="empty"):
        JointMotor("", torque=1.0)


@pytest.mark.parity
def test_the_kernel_loop_refuses_bad_buffers():
    from nhphys import _backend

    module = _backend.choose("multibody", "cython")[0]
    coin = upright_coin()
    tree = coin.joint_tree(module)
    q, v, lam = np.zeros(4), coin.rates(np.zeros(4), {2: 0.5, 3: 10.0}), np.zeros(coin.m)
    info = np.zeros(3, dtype=np.intp)
    with pytest.raises(ValueError, match="save_every"):
        module.tree_run(tree, q, v, lam, np.ones(1), 1e-2, 4, 0, np.empty((4, 4)),
                        np.empty((4, 4)), info, 1e-12, 30, None, np.zeros(2), np.empty(4))
    with pytest.raises(ValueError, match="out_q, out_v"):
        module.tree_run(tree, q, v, lam, np.ones(1), 1e-2, 4, 1, np.empty((4, 3)),
                        np.empty((4, 4)), info, 1e-12, 30)
    with pytest.raises(ValueError, match="clock"):
        module.tree_run(tree, q, v, lam, np.ones(1), 1e-2, 4, 1, np.empty((4, 4)),
                        np.empty((4, 4)), info, 1e-12, 30, None, np.zeros(3))
    with pytest.raises(ValueError, match="parent"):
        module.JointTree([-1, 1], [1, 1], np.eye(3)[:2], np.zeros((2, 3)), np.ones(2),
                         np.zeros((2, 3)), np.zeros((2, 3, 3)), [], 9.81)
