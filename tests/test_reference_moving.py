"""`Reference` on a moving ground: the continuous equations of a body rolling on a turntable, a
moving floor or a prescribed rigid motion (RollingBody._rates), against closed forms, its own
energy balance, and the Retraction step converging to it at orders 2 and 4.

The Reference is the same Python code on either backend, so its own checks run once; the
Retraction runs that it checks go through the ``backend`` fixture.
"""

import numpy as np
import pytest

import nhphys
from nhphys import forces as fe
from nhphys.integrators import Reference, Retraction
from nhphys.lie import so3
from nhphys.surfaces import Ellipsoid, Plane, PrescribedMotion, Sphere
from nhphys.systems import RollingBody

TIGHT = Reference(rtol=1e-12, atol=1e-14)
W = 2 * np.pi  # one turn of the table a second
BALL_IC = {"omega": [0.5, 1.0, 0.3], "ground_point": [0.3, 0.1, 0.0]}
ELLIPSOID_IC = {"orientation": so3.exp([0.2, 0.1, 0.0]), "omega": [1.0, 0.5, 2.0]}
E_X = np.array([1.0, 0.0, 0.0])


def solid_ball(radius=0.1, mass=1.0):
    return nhphys.RigidBody(mass, [0.4 * mass * radius**2] * 3, Sphere(radius))


def solid_ellipsoid(axes=(0.1, 0.08, 0.06), mass=1.0):
    a, b, c = axes
    inertia = mass / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return nhphys.RigidBody(mass, inertia, Ellipsoid(axes))


def circle_error(position, velocity, t, rate):
    """Largest distance (relative to the radius) of the centre from the circle at ``rate``
    through its initial position and velocity: ``x - c`` turns at ``rate`` about the vertical,
    ``c = x0 + e_z x v0 / rate``."""
    x0, v0 = position[0], velocity[0]
    c = x0 + np.cross([0.0, 0.0, 1.0], v0) / rate
    rel = x0 - c
    th = rate * t
    exact = c + np.stack([np.cos(th) * rel[0] - np.sin(th) * rel[1],
                          np.sin(th) * rel[0] + np.cos(th) * rel[1],
                          np.full_like(th, rel[2])], axis=1)
    return np.abs(position - exact).max() / np.linalg.norm(rel[:2])


def wobbling_table():
    # turning about an axis off the table's normal: the table's plane wobbles (a swash plate);
    # no closed form
    return RollingBody(solid_ellipsoid(), Plane().moving(rate=1.5, axis=[0.15, -0.1, 1.0],
                                                         center=[0.05, 0.0, 0.0]))


def rocking(t):
    """A floor rocking about the x axis and heaving and swaying: ``(Q, d, w, v)``."""
    angle, rate = 0.15 * np.sin(2.5 * t), 0.375 * np.cos(2.5 * t)
    d = np.array([0.04 * np.sin(1.7 * t) + 0.02, 0.0, 0.01 * np.sin(4.0 * t)])
    v = np.array([0.068 * np.cos(1.7 * t), 0.0, 0.04 * np.cos(4.0 * t)])
    return so3.exp(angle * E_X), d, rate * E_X, v


def rocking_acceleration(t):
    """``(dw/dt, dv/dt)`` of :func:`rocking`."""
    return (-0.9375 * np.sin(2.5 * t) * E_X,
            np.array([-0.1156 * np.sin(1.7 * t), 0.0, -0.16 * np.sin(4.0 * t)]))


def rocking_floor(acceleration=True):
    motion = PrescribedMotion(rocking, rocking_acceleration if acceleration else None)
    return RollingBody(solid_ellipsoid(), Plane().moving(motion))


def balance_drift(ref):
    """The drift of ``energy - work`` relative to the larger of the two. The Reference keeps
    it to its tolerance: ``rtol`` per step, on the integrated work too, over a few hundred
    steps; a wrong power of the ground would show as a drift of the order of the work."""
    scale = max(np.abs(ref.energy).max(), np.abs(ref.work).max())
    return np.ptp(ref.energy - ref.work) / scale


def distance(traj, ref):
    return max(np.abs(traj.R - ref.R).max(), np.abs(traj.position - ref.position).max())


# -- closed forms ---------------------------------------------------------------------------

def test_reference_ball_on_a_turntable_circles_at_two_sevenths_of_its_rate():
    # a homogeneous ball (k = I / (m r^2) = 2/5) on a table turning at W: its centre goes round
    # a fixed circle at W k / (1 + k) = 2 W / 7
    system = RollingBody(solid_ball(), Plane().moving(rate=W))
    ref = nhphys.simulate(system, 1.0, 0.05, TIGHT, **BALL_IC)
    assert circle_error(ref.position, ref.velocity, ref.t, 2 * W / 7) < 1e-9  # measured 1.7e-10
    assert np.abs(ref.work).max() > 1.0  # the table does work on the ball
    assert balance_drift(ref) <= 100 * TIGHT.rtol  # measured 8.7e-12
    assert ref.constraint_residual.max() <= 1e-10  # not kept exactly: DOP853's drift
    # the ball presses with its weight: the table's plane is horizontal and the centre's
    # vertical acceleration is zero
    np.testing.assert_allclose(ref.normal_force, 9.81, rtol=1e-9)  # measured 7e-11


def test_reference_ball_on_a_tilted_turntable_drifts_across_the_slope():
    # the table tilted by beta is the table under tilted gravity; in its plane the centre obeys
    # dv/dt = (2W/7) e_z x v + (5/7) g_t, so it circles at 2W/7 about a centre drifting at
    # v_d = 5/(2W) e_z x g_t, across the slope (the ball does not roll down)
    beta = np.radians(5.0)
    up = np.array([np.sin(beta), 0.0, np.cos(beta)])
    system = RollingBody(solid_ball(), Plane().moving(rate=W), up=up)
    ref = nhphys.simulate(system, 1.0, 0.05, TIGHT, **BALL_IC)
    g_t = -9.81 * np.array([up[0], up[1], 0.0])
    drift = 5 / (2 * W) * np.cross([0.0, 0.0, 1.0], g_t)
    error = circle_error(ref.position - np.outer(ref.t, drift), ref.velocity - drift, ref.t,
                         2 * W / 7)
    assert error < 1e-9  # measured 7.6e-11
    assert balance_drift(ref) <= 100 * TIGHT.rtol  # measured 5.6e-12


def test_reference_on_a_translating_floor_is_the_floor_at_rest_shifted():
    # Galilean invariance: on a floor moving at u the same start (the body placed at rest on
    # the floor, so its velocity carries u) gives the motion on the floor at rest shifted by u t
    u = np.array([0.3, -0.2, 0.0])
    still = nhphys.simulate(RollingBody(solid_ellipsoid(), Plane()), 1.0, 0.05, TIGHT,
                            **ELLIPSOID_IC)
    moving = nhphys.simulate(RollingBody(solid_ellipsoid(), Plane().moving(velocity=u)), 1.0,
                             0.05, TIGHT, **ELLIPSOID_IC)
    # measured 2e-14, 2.7e-13, 2.3e-13 (the two runs take nearly the same DOP853 steps)
    assert np.abs(moving.position - (still.position + np.outer(still.t, u))).max() <= 1e-11
    assert np.abs(moving.R - still.R).max() <= 1e-11
    assert np.abs(moving.velocity - (still.velocity + u)).max() <= 1e-11
    np.testing.assert_allclose(moving.normal_force, still.normal_force, rtol=1e-10)
    # the floor's work F . u is the change of m v . u: energy - work is conserved
    assert balance_drift(moving) <= 100 * TIGHT.rtol  # measured 2.6e-13
    assert np.abs(moving.work).max() > 1e-3


@pytest.mark.parametrize("acceleration", [True, False], ids=["given", "differenced"])
def test_reference_normal_force_on_a_heaving_floor(acceleration):
    # a ball at rest on a floor heaving as d = A sin(nu t) e_z rides it: N = m (g + d''(t)),
    # which only the ground's acceleration (dv/dt) gives; with it given exactly and with the
    # sixth-order difference of v
    amp, nu = 0.02, 7.0

    def heave(t):
        return (np.eye(3), np.array([0.0, 0.0, amp * np.sin(nu * t)]), np.zeros(3),
                np.array([0.0, 0.0, amp * nu * np.cos(nu * t)]))

    def heave_acceleration(t):
        return np.zeros(3), np.array([0.0, 0.0, -amp * nu**2 * np.sin(nu * t)])

    motion = PrescribedMotion(heave, heave_acceleration if acceleration else None)
    system = RollingBody(solid_ball(), Plane().moving(motion))
    ref = nhphys.simulate(system, 1.0, 0.05, TIGHT, omega=[0.0, 0.0, 0.0])
    exact = 9.81 - amp * nu**2 * np.sin(nu * ref.t)
    # differenced: (nu dt)^6 / 140 = 1.4e-11 relative (PrescribedMotion.acceleration)
    assert np.abs(ref.normal_force[1:] - exact[1:]).max() <= (1e-12 if acceleration else 1e-10)
    np.testing.assert_allclose(ref.position[:, 2], 0.1 + amp * np.sin(nu * ref.t), atol=1e-12)
    # the floor lifts the ball: its work is the change of kinetic and potential energy
    assert balance_drift(ref) <= 100 * TIGHT.rtol  # measured 8e-13 and 9e-13


def test_a_prescribed_acceleration_agrees_with_the_differenced_one():
    given = nhphys.simulate(rocking_floor(True), 1.0, 0.1, TIGHT, **ELLIPSOID_IC)
    differenced = nhphys.simulate(rocking_floor(False), 1.0, 0.1, TIGHT, **ELLIPSOID_IC)
    assert distance(given, differenced) <= 1e-12  # measured 3e-15


def test_a_bad_acceleration_is_an_error_naming_it():
    with pytest.raises(TypeError, match="PrescribedMotion: expected `acceleration`"):
        PrescribedMotion(rocking, acceleration=3.0)
    system = RollingBody(solid_ellipsoid(),
                         Plane().moving(PrescribedMotion(rocking, lambda t: (np.zeros(3),))))
    with pytest.raises(ValueError, match="PrescribedMotion: expected `acceleration`"):
        nhphys.simulate(system, 0.1, 0.05, TIGHT, **ELLIPSOID_IC)


# -- Retraction converges to the Reference where no closed form exists -----------------------

@pytest.fixture(scope="module")
def wobbling_reference():
    system = wobbling_table()
    ref = nhphys.simulate(system, 0.5, 0.1, TIGHT, **ELLIPSOID_IC)
    return system, ref


def test_reference_energy_balance_on_a_wobbling_table(wobbling_reference):
    _, ref = wobbling_reference
    assert np.abs(ref.work).max() > 0.01  # measured 0.054
    assert balance_drift(ref) <= 100 * TIGHT.rtol  # measured 8e-14


@pytest.mark.parametrize(("order", "hs", "ratio"), [(2, (5e-3, 2.5e-3), 4.0),
                                                    (4, (2.5e-2, 1.25e-2), 16.0)])
def test_retraction_converges_to_the_reference_on_a_wobbling_table(
        backend, wobbling_reference, order, hs, ratio):
    system, ref = wobbling_reference
    errors, work_errors = [], []
    for h in hs:
        traj = nhphys.simulate(system, 0.5, h, Retraction(order=order), backend=backend,
                               save_every=round(0.1 / h), **ELLIPSOID_IC)
        errors.append(distance(traj, ref))
        work_errors.append(np.abs(traj.work - ref.work).max())
    # measured: order 2, 7.1e-5 -> 1.8e-5 (ratio 4.00); order 4, 2.4e-4 -> 1.5e-5 (16.3)
    assert errors[1] >= 1e4 * TIGHT.rtol  # far above the Reference's own error
    assert errors[0] / errors[1] == pytest.approx(ratio, rel=0.05)
    assert work_errors[0] / work_errors[1] == pytest.approx(ratio, rel=0.05)


@pytest.fixture(scope="module")
def rocking_reference():
    system = rocking_floor()
    ref = nhphys.simulate(system, 0.5, 0.1, TIGHT, **ELLIPSOID_IC)
    return system, ref


def test_reference_energy_balance_on_a_rocking_floor(rocking_reference):
    _, ref = rocking_reference
    assert np.abs(ref.work).max() > 0.05  # measured 0.10
    assert balance_drift(ref) <= 100 * TIGHT.rtol  # measured 3e-14


@pytest.mark.parametrize(("order", "hs", "ratio"), [(2, (5e-3, 2.5e-3), 4.0),
                                                    (4, (2.5e-2, 1.25e-2), 16.0)])
def test_retraction_converges_to_the_reference_on_a_prescribed_motion(
        rocking_reference, order, hs, ratio):
    # a callable motion steps on the Python twin whatever the backend (meta["backend"] says
    # so), so this runs once, not through the backend fixture
    system, ref = rocking_reference
    errors, work_errors = [], []
    for h in hs:
        traj = nhphys.simulate(system, 0.5, h, Retraction(order=order),
                               save_every=round(0.1 / h), **ELLIPSOID_IC)
        assert "callable" in traj.meta["backend"]
        errors.append(distance(traj, ref))
        work_errors.append(np.abs(traj.work - ref.work).max())
    # measured: order 2, 6.0e-5 -> 1.5e-5 (ratio 4.00); order 4, 2.4e-4 -> 1.5e-5 (16.2)
    assert errors[1] >= 1e4 * TIGHT.rtol
    assert errors[0] / errors[1] == pytest.approx(ratio, rel=0.05)
    assert work_errors[0] / work_errors[1] == pytest.approx(ratio, rel=0.05)


# -- with force elements on a moving ground --------------------------------------------------

def forced_wobbling_table(rolling_resistance=False):
    elements = [fe.Spring(20.0, anchor=[0.2, 0.1, 0.25], rest_length=0.1), fe.LinearDrag(0.4),
                fe.AngularDamping(2e-4), fe.SpinFriction(1e-3),
                fe.Force([0.1, 0.2, 0.0], point=[0.0, 0.03, 0.0]),
                fe.Torque(fe.Schedule([-1.0, 3.0], [[0, 0.002, 0], [0.001, 0, 0]]))]
    if rolling_resistance:
        elements = [fe.RollingResistance(2e-3)]
    return RollingBody(solid_ellipsoid(), Plane().moving(rate=1.5, axis=[0.15, -0.1, 1.0],
                                                         center=[0.05, 0.0, 0.0]),
                       forces=elements)


@pytest.fixture(scope="module")
def forced_reference():
    system = forced_wobbling_table()
    ref = nhphys.simulate(system, 0.5, 0.1, TIGHT, **ELLIPSOID_IC)
    return system, ref


def test_reference_energy_balance_with_forces_on_a_moving_ground(forced_reference):
    # the work is that of the dissipative and applied elements and of the table together
    _, ref = forced_reference
    assert np.abs(ref.work).max() > 0.01
    assert balance_drift(ref) <= 100 * TIGHT.rtol  # measured 5e-13


@pytest.mark.parametrize(("order", "hs", "ratio"), [(2, (5e-3, 2.5e-3), 4.0),
                                                    (4, (2.5e-2, 1.25e-2), 16.0)])
def test_retraction_converges_to_the_reference_with_forces_on_a_moving_ground(
        backend, forced_reference, order, hs, ratio):
    system, ref = forced_reference
    errors, work_errors = [], []
    for h in hs:
        traj = nhphys.simulate(system, 0.5, h, Retraction(order=order), backend=backend,
                               save_every=round(0.1 / h), **ELLIPSOID_IC)
        errors.append(distance(traj, ref))
        work_errors.append(np.abs(traj.work - ref.work).max())
    # measured: order 2, 6.0e-5 -> 1.5e-5 (ratio 4.00); order 4, 9.1e-5 -> 5.6e-6 (16.2)
    assert errors[1] >= 1e4 * TIGHT.rtol
    assert errors[0] / errors[1] == pytest.approx(ratio, rel=0.05)
    assert work_errors[0] / work_errors[1] == pytest.approx(ratio, rel=0.05)


def test_retraction_with_rolling_resistance_converges_at_order_four(backend):
    system = forced_wobbling_table(rolling_resistance=True)
    ref = nhphys.simulate(system, 0.5, 0.1, TIGHT, **ELLIPSOID_IC)
    errors = [distance(nhphys.simulate(system, 0.5, h, Retraction(order=4), backend=backend,
                                       save_every=round(0.1 / h), **ELLIPSOID_IC), ref)
              for h in (2.5e-2, 1.25e-2)]
    assert errors[0] / errors[1] == pytest.approx(16.0, rel=0.05)


def test_retraction_with_rolling_resistance_converges_at_order_two_on_a_ground_at_rest(backend):
    # each kick takes rolling resistance's normal force from its own contact force; taking the
    # first kick's at both made the step first order (ratios 3.2, 2.7, 2.3 here)
    system = RollingBody(solid_ellipsoid(), Plane(), forces=[fe.RollingResistance(2e-3)])
    ref = nhphys.simulate(system, 0.5, 0.1, TIGHT, **ELLIPSOID_IC)
    errors = [distance(nhphys.simulate(system, 0.5, h, Retraction(), backend=backend,
                                       save_every=round(0.1 / h), **ELLIPSOID_IC), ref)
              for h in (2e-3, 1e-3, 5e-4)]
    # measured 7.7e-6, 1.9e-6, 4.8e-7: ratios 4.00 and 4.00
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.02)
    assert errors[1] / errors[2] == pytest.approx(4.0, rel=0.02)


def test_retraction_converges_to_the_reference_for_a_disk_on_a_wobbling_table(backend):
    # a support-map shape: the Reference's contact equation in its support form,
    # (I - S' B^T L_H B) ds/dt = S' (Omega_r x B^T n_g). Order 2 only: the order-4 ratio is
    # 18.2 at h = 1.25e-2 -> 6.25e-3 (the disk spins at 8 rad/s), asymptotic only at steps
    # too many for the twins here
    from nhphys.shapes import Disk

    body = nhphys.RigidBody(1.0, Disk.solid_inertia(1.0, 0.1), Disk(0.1))
    system = RollingBody(body, Plane().moving(rate=1.5, axis=[0.15, -0.1, 1.0],
                                              center=[0.05, 0.0, 0.0]))
    start = {"R0": so3.exp([np.pi / 2 - 0.4, 0, 0]), "omega0": [0.5, 0.0, 8.0]}
    ref = nhphys.simulate(system, 0.5, 0.1, TIGHT, **start)
    assert balance_drift(ref) <= 100 * TIGHT.rtol  # measured 9e-13
    errors, work_errors = [], []
    for h in (5e-3, 2.5e-3):
        traj = nhphys.simulate(system, 0.5, h, Retraction(), backend=backend,
                               save_every=round(0.1 / h), **start)
        errors.append(distance(traj, ref))
        work_errors.append(np.abs(traj.work - ref.work).max())
    # measured: 2.7e-3 -> 6.8e-4 (ratio 4.00)
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)
    assert work_errors[0] / work_errors[1] == pytest.approx(4.0, rel=0.05)
