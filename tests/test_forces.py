"""Force elements on a rolling body: closed forms, conservation, order, parity and bad input."""

import numpy as np
import pytest

import nhphys
from nhphys import _backend
from nhphys import forces as fe
from nhphys.integrators import Reference, Retraction
from nhphys.lie import so3
from nhphys.shapes import Disk
from nhphys.surfaces import Ellipsoid, Plane, Sphere
from nhphys.systems import RollingBody

G = 9.81


def solid_ball(radius=0.1, mass=1.0):
    return nhphys.RigidBody(mass, [0.4 * mass * radius**2] * 3, Sphere(radius))


def solid_ellipsoid(axes=(0.1, 0.08, 0.06), mass=1.0):
    a, b, c = axes
    inertia = mass / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return nhphys.RigidBody(mass, inertia, Ellipsoid(axes))


def log_log_slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


ELLIPSOID_IC = {"orientation": so3.exp([0.2, 0.1, 0.0]), "omega": [1.0, 0.5, 2.0]}


# -- closed forms ------------------------------------------------------------------------------

def test_constant_force_accelerates_a_ball_at_f_over_m_one_plus_k(backend):
    m, r = 1.3, 0.1
    ball = solid_ball(r, m)
    k = 0.4  # I / (m r^2) of a solid ball
    force = np.array([0.7, -0.2, 0.0])
    system = RollingBody(ball, Plane(), forces=[fe.Force(force)])
    traj = nhphys.simulate(system, 1.0, 1e-3, backend=backend, omega=[0, 0, 0])
    acc = force / (m * (1 + k))
    t = traj.t[:, None]
    assert np.abs(traj.velocity - acc * t).max() <= 1e-12
    assert np.abs(traj.position[:, :2] - 0.5 * acc[:2] * t**2).max() <= 1e-12
    # the force's work is F . displacement, so energy - work stays put
    assert np.abs(traj.work - traj.position[:, :2] @ force[:2]).max() <= 1e-12
    assert np.ptp(traj.energy - traj.work) <= 1e-12
    assert traj.constraint_residual.max() <= 1e-12


def test_viscous_drag_decays_a_rolling_ball_exponentially(backend):
    m, r, c = 1.0, 0.1, 0.3
    system = RollingBody(solid_ball(r, m), Plane(), forces=[fe.LinearDrag(c)])
    rate = c / (m * 1.4)  # m (1 + k) dv/dt = -c v
    v0 = 2.0 * r  # omega_y = 2 rolls the ball along +x at 2 r
    errors = []
    for h in (2e-3, 1e-3):
        traj = nhphys.simulate(system, 2.0, h, backend=backend, save_every=round(0.1 / h),
                               omega=[0, 2.0, 0])
        exact = v0 * np.exp(-rate * traj.t)
        errors.append(np.abs(traj.velocity[:, 0] / exact - 1).max())
        assert traj.constraint_residual.max() <= 1e-12
    assert errors[1] < 1e-6
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)  # second order


def test_motor_drives_a_disk_up_an_incline_at_the_closed_form_rate(backend):
    # an upright disk (axis along y) on a plane tilted by beta (gravity along -up): rolling
    # straight, m (1 + I_a / (m r^2)) dv/dt = T / r - m g sin(beta), I_a = m r^2 / 2
    m, r, torque, beta = 2.0, 0.3, 4.0, 0.2
    disk = nhphys.RigidBody(m, [m * r * r / 4, m * r * r / 4, m * r * r / 2], Disk(r))
    up = [np.sin(beta), 0.0, np.cos(beta)]  # gravity pulls toward -x: uphill is +x
    system = RollingBody(disk, Plane(), up=up, forces=[fe.Motor(torque=torque)])
    upright = so3.exp([-np.pi / 2, 0.0, 0.0])  # the disk's axis z along space +y
    traj = nhphys.simulate(system, 1.0, 1e-3, backend=backend, save_every=100,
                           orientation=upright, omega=[0, 0, 0])
    acc = (torque / r - m * G * np.sin(beta)) / (1.5 * m)
    assert acc > 0
    assert np.abs(traj.velocity[:, 0] - acc * traj.t).max() <= 1e-10 * abs(acc)
    assert np.abs(traj.velocity[:, 1:]).max() <= 1e-10
    assert np.ptp(traj.energy - traj.work) <= 1e-10 * np.ptp(traj.energy)
    assert traj.constraint_residual.max() <= 1e-12


def test_speed_controlled_motor_settles_at_its_target_speed(backend):
    # omega' = gain (w - omega) / (I_a + m r^2): the spin relaxes to w at that rate
    m, r, gain, target = 1.0, 0.2, 0.05, 3.0
    disk = nhphys.RigidBody(m, [m * r * r / 4, m * r * r / 4, m * r * r / 2], Disk(r))
    system = RollingBody(disk, Plane(), forces=[fe.Motor(target_speed=target, gain=gain)])
    upright = so3.exp([-np.pi / 2, 0.0, 0.0])
    traj = nhphys.simulate(system, 2.0, 1e-3, backend=backend, save_every=100,
                           orientation=upright, omega=[0, 0, 0])
    rate = gain / (1.5 * m * r * r)
    exact = target * (1 - np.exp(-rate * traj.t))
    assert np.abs(traj.omega[:, 2] - exact).max() <= 1e-5 * target


# -- conservative elements: bounded energy, reversibility, order ---------------------------------

def spring_system(extra=()):
    return RollingBody(solid_ellipsoid(), Plane(), forces=[
        fe.Spring(40.0, anchor=[0.3, 0.1, 0.2], point=[0.02, 0.0, 0.03], rest_length=0.1),
        fe.UniformField([0.5, -0.3, 0.0]), *extra])


@pytest.mark.kernels_only("10^6 rolling steps take about an hour on the twins (4 ms a step)")
def test_spring_and_field_energy_bounded_without_drift_over_a_million_steps(backend):
    traj = nhphys.simulate(spring_system(), 1000.0, 1e-3, backend=backend, save_every=1000,
                           **ELLIPSOID_IC)
    error = traj.energy - traj.energy[0]
    assert np.abs(traj.work).max() == 0.0  # potentials only: no work is accumulated
    assert np.abs(error).max() <= 1e-4 * abs(traj.energy[0])
    # no drift (the motion is chaotic, so the error wanders but must not grow): over the last
    # tenth of the run the error is no larger, and its mean no farther off, than the first
    # tenth's spread (measured: 3.5e-5 against 6.6e-5, means 1.9e-5 and 2.9e-6)
    tenth = len(error) // 10
    first, last = error[:tenth], error[-tenth:]
    assert np.abs(last).max() <= 1.5 * np.abs(first).max()
    assert abs(last.mean() - first.mean()) <= np.abs(first).max()
    assert traj.constraint_residual.max() <= 1e-12


def test_reversible_with_conservative_forces(backend):
    system = spring_system()
    run = Retraction().start(system, 1e-2, backend, R0=ELLIPSOID_IC["orientation"],
                             omega0=ELLIPSOID_IC["omega"])
    start = {name: getattr(run, name).copy() for name in ("A", "a", "Pi", "p")}
    run.advance(100, 100)
    run.dt = -run.dt
    run.xi = -run.xi  # the warm start of the reversed step
    run.advance(100, 100)
    for name, value in start.items():
        assert np.abs(getattr(run, name) - value).max() <= 1e-12, name
    assert abs(run.clock[0]) <= 1e-12  # the clock ran back to 0


@pytest.fixture(scope="module")
def spring_reference():
    system = spring_system([fe.Force(fe.Schedule([0.0, 1.0, 2.0],
                                                 [[0, 0, 0], [0.4, 0, 0], [0, 0.2, 0]],
                                                 kind="cubic"),
                                     point=[0.0, 0.0, 0.05])])
    ref = nhphys.simulate(system, 2.0, 0.1, Reference(rtol=1e-12, atol=1e-14), **ELLIPSOID_IC)
    return system, ref


@pytest.mark.parametrize(("order", "hs", "slope"), [(2, (0.01, 0.005, 0.0025), 2.0),
                                                     (4, (0.05, 0.025, 0.0125), 4.0)])
def test_order_against_reference_with_forces(backend, spring_reference, order, hs, slope):
    system, ref = spring_reference
    errors = []
    for h in hs:
        traj = nhphys.simulate(system, 2.0, h, Retraction(order=order), backend=backend,
                               save_every=round(0.1 / h), **ELLIPSOID_IC)
        assert traj.constraint_residual.max() <= 1e-12
        errors.append(max(np.abs(traj.R - ref.R).max(),
                          np.abs(traj.position - ref.position).max()))
    assert log_log_slope(hs, errors) == pytest.approx(slope, abs=0.25)


# -- dissipation: energy - work to the method's order --------------------------------------------

def dissipative_system():
    return RollingBody(solid_ellipsoid(), Plane(), forces=[
        fe.LinearDrag(0.4), fe.AngularDamping(2e-4), fe.SpinFriction(1e-3),
        fe.RollingResistance(2e-3), fe.Motor(torque=fe.Schedule([0, 1, 2], [0.0, 0.01, -0.01]),
                                             axis=[0, 0, 1], target_speed=1.0, gain=1e-4),
        fe.Torque(fe.Schedule([0.0, 0.5, 2.0], [[0, 0, 0], [0, 0.002, 0], [0.001, 0, 0]],
                              kind="cubic")),
    ])


def test_energy_minus_work_holds_to_second_order_with_dissipation(backend):
    system = dissipative_system()
    drifts = []
    for h in (4e-3, 2e-3):
        traj = nhphys.simulate(system, 2.0, h, backend=backend, save_every=round(0.05 / h),
                               **ELLIPSOID_IC)
        assert traj.constraint_residual.max() <= 1e-12
        balance = traj.energy - traj.work
        drifts.append(np.abs(balance - balance[0]).max())
    assert traj.work[-1] < -1e-3  # it did dissipate (the balance test is not vacuous)
    assert drifts[0] / drifts[1] == pytest.approx(4.0, rel=0.1)


def test_work_matches_the_reference(backend):
    system = dissipative_system()
    ref = nhphys.simulate(system, 2.0, 0.1, Reference(rtol=1e-12, atol=1e-14), **ELLIPSOID_IC)
    errors = []
    for h in (2e-3, 1e-3):
        traj = nhphys.simulate(system, 2.0, h, backend=backend, save_every=round(0.1 / h),
                               **ELLIPSOID_IC)
        errors.append(np.abs(traj.work - ref.work).max())
    assert errors[1] <= 1e-4 * np.abs(ref.work).max()
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.1)  # converges at order two
    # the Reference's own balance: energy - work is conserved to its tolerance
    assert np.ptp(ref.energy - ref.work) <= 1e-9


# -- parity: kernel and twin agree step for step --------------------------------------------------

PARITY_GROUPS = {  # (a ball: the ellipsoid under a spring is chaotic, and round-off grows)
    "conservative": lambda: RollingBody(solid_ball(), Plane(), forces=[
        fe.Spring(40.0, anchor=[0.3, 0.1, 0.2], rest_length=0.1),
        fe.UniformField([0.5, -0.3, 0.0]),
        fe.Force([0.1, 0.2, 0.0], point=[0.0, 0.03, 0.0]),
        fe.Force(fe.Schedule([0, 5, 10], [[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]]), frame="body"),
        fe.Torque(fe.Schedule([0, 5, 10], [[0, 0, 0.001], [0, 0.001, 0], [0, 0, 0]],
                              kind="cubic"), frame="space")]),
    "dissipative": dissipative_system,
}


@pytest.mark.parity
@pytest.mark.parametrize("group", sorted(PARITY_GROUPS))
def test_kernel_and_twin_agree_over_ten_thousand_steps(group):
    system = PARITY_GROUPS[group]()
    kw = dict(save_every=1000, **ELLIPSOID_IC)
    a = nhphys.simulate(system, 10.0, 1e-3, backend="cython", **kw)
    b = nhphys.simulate(system, 10.0, 1e-3, backend="python", **kw)
    for name in ("R", "position", "omega", "velocity", "work", "energy", "normal_force"):
        assert np.abs(a[name] - b[name]).max() <= 1e-10, name


@pytest.mark.parity
def test_force_set_kernel_matches_twin(rng):
    from nhphys.forces import build_force_set
    from nhphys.twins import forces as twin
    from nhphys_ext import forces as kernel

    elements = PARITY_GROUPS["conservative"]().forces + dissipative_system().forces
    sets = [build_force_set(elements, module) for module in (kernel, twin)]
    for _ in range(50):
        A = so3.exp(rng.normal(size=3))
        a, n = rng.normal(size=3), rng.normal(size=3)
        t = rng.uniform(-1, 12)
        k, p = (s.py_wrenches(t, A, a, n) for s in sets)
        for x, y in zip(k, p):
            np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-15)
        assert sets[0].py_potential(A, a) == pytest.approx(sets[1].py_potential(A, a),
                                                           rel=1e-15)


# -- schedules -------------------------------------------------------------------------------

def test_schedule_matches_scipy_and_holds_its_ends():
    from scipy.interpolate import CubicSpline

    times = np.array([0.0, 0.3, 1.0, 1.7, 2.0])
    values = np.sin(times)[:, None] * [1.0, -2.0]
    cubic = fe.Schedule(times, values, kind="cubic")
    linear = fe.Schedule(times, values)
    spline = CubicSpline(times, values)
    for t in np.linspace(0, 2, 41):
        np.testing.assert_allclose(cubic(t), spline(t), rtol=0, atol=1e-14)
        np.testing.assert_allclose(linear(t), [np.interp(t, times, values[:, j])
                                               for j in range(2)], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(cubic(-5.0), values[0])
    np.testing.assert_array_equal(cubic(9.0), values[-1])


# -- Python callables --------------------------------------------------------------------------

def test_callable_force_runs_on_the_twin_and_matches_the_builtin():
    force = np.array([0.4, 0.1, 0.0])
    builtin = RollingBody(solid_ball(), Plane(), forces=[fe.Force(force)])
    called = RollingBody(solid_ball(), Plane(), forces=[fe.Force(lambda t, state: force)])
    a = nhphys.simulate(builtin, 0.2, 1e-3, backend="python", omega=[0, 1.0, 0])
    b = nhphys.simulate(called, 0.2, 1e-3, omega=[0, 1.0, 0])
    assert b.meta["backend"].startswith("python")
    assert "callable" in b.meta["backend"]
    np.testing.assert_allclose(b.position, a.position, rtol=0, atol=1e-15)
    # asked for the kernels, it still steps on the twin, and says so
    c = nhphys.simulate(called, 0.2, 1e-3, backend="cython", omega=[0, 1.0, 0])
    assert c.meta["backend"] == b.meta["backend"]


@pytest.mark.parametrize("returned", [np.zeros(2), np.array([0.0, np.nan, 0.0])])
def test_callable_returning_the_wrong_shape_or_nan_is_an_error_naming_the_element(returned):
    def bad(t, state):
        return returned if t > 0.05 else np.zeros(3)

    system = RollingBody(solid_ball(), Plane(), forces=[fe.Force(bad)])
    with pytest.raises(ValueError, match=r"Force: expected the callable .* 3 finite numbers"):
        nhphys.simulate(system, 0.2, 1e-2, omega=[0, 1.0, 0])


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("make", "message"), [
    (lambda: fe.Schedule([0.0, 2.0, 1.0], [1.0, 2.0, 3.0]), r"strictly increasing.*times\[1\]"),
    (lambda: fe.Schedule([0.0, np.inf], [1.0, 2.0]), "finite"),
    (lambda: fe.Schedule([0.0, 1.0], [1.0, np.nan]), "finite"),
    (lambda: fe.Schedule([0.0, 1.0], [1.0, 2.0, 3.0]), "shape"),
    (lambda: fe.Schedule([0.0], [1.0], kind="cubic"), "at least 2"),
    (lambda: fe.LinearDrag(-0.1), r"LinearDrag: expected `coefficient`.*>= 0"),
    (lambda: fe.AngularDamping(0.1, about="x"), "AngularDamping: expected `about`"),
    (lambda: fe.RollingResistance(np.nan), "RollingResistance"),
    (lambda: fe.Spring(-1.0, anchor=[0, 0, 0]), r"Spring: expected `stiffness`"),
    (lambda: fe.Spring(1.0, anchor=[0, 0]), r"Spring: .*shape \(3,\)"),
    (lambda: fe.Force([1.0, 0.0]), r"Force: .*shape \(3,\)"),
    (lambda: fe.Force([1.0, 0.0, 0.0], frame="world"), "Force: expected `frame`"),
    (lambda: fe.Force(fe.Schedule([0, 1], [0.0, 1.0])), "Force: expected a schedule of 3"),
    (lambda: fe.Motor(), "Motor: expected a `torque`"),
    (lambda: fe.Motor(torque=1.0, axis=[0, 0, 0]), "Motor: expected `axis` to be a nonzero"),
    (lambda: fe.Motor(target_speed=1.0), "Motor: a `target_speed` needs a `gain`"),
    (lambda: fe.Motor(torque=lambda t, s: 1.0), "Motor: expected `torque` to be a number"),
    (lambda: RollingBody(solid_ball(), Plane(), forces=[1.0]), r"forces\[0\]"),
])
def test_bad_force_input_is_a_clear_error(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()


def raw_force_set(module, sched, force_rows=(), torque_rows=(), motor_rows=(), motor_values=()):
    """A ForceSet of ``module`` (a kernel module or its twin) on one constant schedule table."""
    sched = np.array(sched, dtype=np.intp).reshape(-1, 4)
    coef = np.zeros(4 * int(sched[:, 3].sum()))
    rows = (lambda r, width: np.array(r, dtype=np.intp).reshape(-1, width))
    return module.ForceSet(np.zeros(len(sched)), coef, sched, rows(force_rows, 4),
                           np.zeros((len(force_rows), 3)), rows(torque_rows, 2), np.zeros((0, 8)),
                           np.zeros(3), np.array(motor_values, dtype=float).reshape(-1, 5),
                           rows(motor_rows, 3), 0.0, 0.0, 0.0, 0.0)


def test_a_force_set_refuses_schedules_of_the_wrong_size(backend):
    # the step reads 3 components of a force's or torque's schedule and 1 of a motor's: a table
    # built by hand with other sizes is refused before any step reads past its coefficients
    forces = _backend.choose("forces", backend)[0]
    one, three = [[0, 1, 0, 1]], [[0, 1, 0, 3]]
    with pytest.raises(ValueError, match=r"3 component\(s\).*\[1\]"):
        raw_force_set(forces, one, force_rows=[[0, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"3 component\(s\).*\[1\]"):
        raw_force_set(forces, one, torque_rows=[[0, 0]])
    with pytest.raises(ValueError, match=r"1 component\(s\).*\[3\]"):
        raw_force_set(forces, three, motor_rows=[[-1, 0, 0]], motor_values=[[0, 0, 1, 1, 0]])
    raw_force_set(forces, three, force_rows=[[0, 0, 0, 0]], torque_rows=[[0, 1]])
    raw_force_set(forces, one, motor_rows=[[0, 0, 0]], motor_values=[[0, 0, 1, 1, 0]])


def test_body_forces_take_the_motors_apart(backend):
    forces = _backend.choose("forces", backend)[0]
    models = _backend.choose("models", backend)[0]
    model = models.KnifeEdgeModel(1.0, 0.2, 0.15, 0.0)
    motor = raw_force_set(forces, [[0, 1, 0, 1]], motor_rows=[[0, -1, 0]],
                          motor_values=[[0, 0, 1, 0, 0]])
    push = raw_force_set(forces, [[0, 1, 0, 3]], force_rows=[[0, 0, 0, 0]])
    none = raw_force_set(forces, np.zeros((0, 4)))
    for body, motors in ((motor, none), (none, push)):
        with pytest.raises(ValueError, match="motors in `motors`"):
            models.BodyForces(model, body, motors, np.eye(3), np.zeros(3), 0.0)
    models.BodyForces(model, push, motor, np.eye(3), np.zeros(3), 0.0)
