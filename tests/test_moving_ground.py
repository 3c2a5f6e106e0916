"""Rolling on a moving ground: turntables and moving floors, against closed forms and symmetry."""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import Retraction
from nhphys.lie import so3
from nhphys.surfaces import Ellipsoid, Plane, PrescribedMotion, Sphere
from nhphys.systems import RollingBody


def solid_ball(radius=0.1, mass=1.0):
    return nhphys.RigidBody(mass, [0.4 * mass * radius**2] * 3, Sphere(radius))


def solid_ellipsoid(axes=(0.1, 0.08, 0.06), mass=1.0):
    a, b, c = axes
    inertia = mass / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return nhphys.RigidBody(mass, inertia, Ellipsoid(axes))


ELLIPSOID_IC = {"orientation": so3.exp([0.2, 0.1, 0.0]), "omega": [1.0, 0.5, 2.0]}
BALL_IC = {"omega": [0.5, 1.0, 0.3], "ground_point": [0.3, 0.1, 0.0]}
W = 2 * np.pi  # one turn of the table a second


def circle_error(traj, rate):
    """Largest distance (relative to the radius) of the centre from the circle at ``rate``
    through its initial position and velocity: ``x - c`` turns at ``rate`` about the vertical,
    ``c = x0 + e_z x v0 / rate``."""
    x0, v0 = traj.position[0], traj.velocity[0]
    c = x0 + np.cross([0.0, 0.0, 1.0], v0) / rate
    rel = x0 - c
    th = rate * traj.t
    exact = c + np.stack([np.cos(th) * rel[0] - np.sin(th) * rel[1],
                          np.sin(th) * rel[0] + np.cos(th) * rel[1],
                          np.full_like(th, rel[2])], axis=1)
    return np.abs(traj.position - exact).max() / np.linalg.norm(rel[:2])


def test_ball_on_a_turntable_circles_at_two_sevenths_of_its_rate(backend):
    # a homogeneous ball (k = I / (m r^2) = 2/5) on a table turning at W: its centre goes round
    # a fixed circle at W k / (1 + k) = 2 W / 7, whatever its start
    system = RollingBody(solid_ball(), Plane().moving(rate=W))
    turns = 20 if backend == "cython" else 1  # 1 turn: 1000 twin steps (4 ms each)
    traj = nhphys.simulate(system, turns * 2 * np.pi / W, 1e-3, Retraction(order=4),
                           backend=backend, save_every=100, **BALL_IC)
    assert circle_error(traj, 2 * W / 7) < 1e-6
    assert traj.constraint_residual.max() <= 1e-12
    # the table does work on the ball, and energy - work is the conserved quantity
    assert np.abs(traj.work).max() > 0.1
    assert np.ptp(traj.energy - traj.work) <= 1e-10


def test_turntable_order_two_and_four(backend):
    system = RollingBody(solid_ball(), Plane().moving(rate=W))
    for order, hs, ratio in ((2, (2e-3, 1e-3), 4.0), (4, (4e-3, 2e-3), 16.0)):
        errors = [circle_error(nhphys.simulate(system, 1.0, h, Retraction(order=order),
                                               backend=backend, save_every=round(0.1 / h),
                                               **BALL_IC), 2 * W / 7) for h in hs]
        assert errors[0] / errors[1] == pytest.approx(ratio, rel=0.15), order


def test_a_translating_floor_is_the_floor_at_rest_seen_from_a_moving_frame(backend):
    # Galilean invariance: the same start on a floor moving at u gives the same motion, shifted
    # by u t (the body's initial velocity carries u: it is placed at rest on the floor)
    u = np.array([0.3, -0.2, 0.0])
    still = RollingBody(solid_ellipsoid(), Plane())
    moving = RollingBody(solid_ellipsoid(), Plane().moving(velocity=u))
    a = nhphys.simulate(still, 1.0, 1e-3, backend=backend, save_every=100, **ELLIPSOID_IC)
    b = nhphys.simulate(moving, 1.0, 1e-3, backend=backend, save_every=100, **ELLIPSOID_IC)
    assert np.abs(b.position - (a.position + np.outer(a.t, u))).max() <= 1e-12
    assert np.abs(b.R - a.R).max() <= 1e-12
    assert np.abs(b.velocity - (a.velocity + u)).max() <= 1e-12
    assert b.constraint_residual.max() <= 1e-12


def wobbling_table():
    # turning about an axis off the table's normal: the table's plane wobbles (a swash plate)
    return RollingBody(solid_ellipsoid(), Plane().moving(rate=1.5, axis=[0.15, -0.1, 1.0],
                                                         center=[0.05, 0.0, 0.0]))


def test_ball_on_a_tilted_turntable_drifts_across_the_slope_at_the_closed_form_speed(backend):
    # a table tilted by beta is the table under tilted gravity; in its plane
    # dv/dt = (2W/7) e_z x v + (5/7) g_t, so v = v_d + Rot(2W t/7) (v0 - v_d) with the drift
    # v_d = 5/(2W) e_z x g_t across the slope (the ball does not roll down)
    beta = np.radians(5.0)
    up = np.array([np.sin(beta), 0.0, np.cos(beta)])
    system = RollingBody(solid_ball(), Plane().moving(rate=W), up=up)
    turns = 5 if backend == "cython" else 0.5
    traj = nhphys.simulate(system, turns * 2 * np.pi / W, 1e-3, Retraction(order=4),
                           backend=backend, save_every=100, **BALL_IC)
    g_t = -9.81 * np.array([up[0], up[1], 0.0])
    drift = 5 / (2 * W) * np.cross([0.0, 0.0, 1.0], g_t)
    shifted = nhphys.Trajectory({"t": traj.t, "position": traj.position - np.outer(traj.t, drift),
                                 "velocity": traj.velocity - drift})
    assert circle_error(shifted, 2 * W / 7) < 1e-6
    assert traj.constraint_residual.max() <= 1e-12


def test_wobbling_table_keeps_contact_and_energy_balance(backend):
    system = wobbling_table()
    drifts = []
    for h in (2e-3, 1e-3):
        traj = nhphys.simulate(system, 1.0, h, backend=backend, save_every=round(0.05 / h),
                               **ELLIPSOID_IC)
        assert traj.constraint_residual.max() <= 1e-12
        balance = traj.energy - traj.work
        drifts.append(np.abs(balance - balance[0]).max())
    assert np.abs(traj.work).max() > 1e-3
    assert drifts[0] / drifts[1] == pytest.approx(4.0, rel=0.15)


@pytest.mark.parity
@pytest.mark.parametrize("ground", [
    Plane().moving(rate=1.5, axis=[0.15, -0.1, 1.0], center=[0.05, 0.0, 0.0]),
    Plane().moving(rate=W)], ids=["wobbling", "flat"])
def test_kernel_and_twin_agree_on_a_moving_ground_over_ten_thousand_steps(ground):
    # a ball: an ellipsoid's rolling is chaotic enough that round-off differences grow past
    # 1e-10 in 10^4 steps (measured: 1.8e-10 on the wobbling table)
    system = RollingBody(solid_ball(), ground)
    kw = dict(save_every=1000, **BALL_IC)
    a = nhphys.simulate(system, 10.0, 1e-3, backend="cython", **kw)
    b = nhphys.simulate(system, 10.0, 1e-3, backend="python", **kw)
    for name in ("R", "position", "omega", "velocity", "work", "energy"):
        # relative to the field's size: far from the axis the ball spins at up to 460 rad/s
        scale = max(1.0, np.abs(a[name]).max())
        assert np.abs(a[name] - b[name]).max() <= 1e-10 * scale, name


def test_prescribed_motion_matches_the_built_in_rotation():
    def turntable(t):
        Q = so3.exp([0.0, 0.0, W * t])
        return Q, np.zeros(3), [0.0, 0.0, W], np.zeros(3)

    builtin = RollingBody(solid_ball(), Plane().moving(rate=W))
    called = RollingBody(solid_ball(), Plane().moving(turntable))
    a = nhphys.simulate(builtin, 0.2, 1e-3, backend="python", **BALL_IC)
    b = nhphys.simulate(called, 0.2, 1e-3, **BALL_IC)
    assert "callable" in b.meta["backend"]
    assert np.abs(a.position - b.position).max() <= 1e-13


def test_a_bad_prescribed_motion_is_an_error_naming_it():
    def skewed(t):
        return np.eye(3) + t * np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]]), np.zeros(3), \
            np.zeros(3), np.zeros(3)

    system = RollingBody(solid_ball(), Plane().moving(skewed))
    with pytest.raises(ValueError, match="PrescribedMotion: expected Q to be a rotation"):
        nhphys.simulate(system, 0.1, 1e-2, **BALL_IC)
    with pytest.raises(TypeError, match="PrescribedMotion"):
        PrescribedMotion(3.0)
    with pytest.raises(ValueError, match="exactly one"):
        Plane().moving(rate=1.0, velocity=[1, 0, 0])
    with pytest.raises(ValueError, match="SteadyRotation: expected `axis`"):
        Plane().moving(rate=1.0, axis=[0, 0, 0])

