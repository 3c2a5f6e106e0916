"""Force elements on a body with a unilateral contact (``RollingBody(lift_off=True,
forces=[...])``): pushed, lifted, dragged and damped through rolling, sliding, flight, impacts
and lying flat, against closed forms and the mode-by-mode reference, on the kernel and on the
twin."""

import numpy as np
import pytest

import nhphys
from nhphys.errors import ContactEvent
from nhphys.forces import (
    AngularDamping,
    Force,
    LinearDrag,
    RollingResistance,
    Schedule,
    Spring,
    Torque,
    UniformField,
)
from nhphys.integrators import Reference
from nhphys.shapes import Disk
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import RollingBody

G = 9.81
R_BALL, M_BALL = 0.1, 1.0
BALL = nhphys.RigidBody(M_BALL, [0.4 * M_BALL * R_BALL**2] * 3, Sphere(R_BALL))
M_PUCK, R_PUCK = 0.17, 0.038
PUCK = nhphys.RigidBody(M_PUCK, Disk.solid_inertia(M_PUCK, R_PUCK), Disk(R_PUCK))


def ball(forces, **kw):
    return RollingBody(BALL, Plane(), lift_off=True, forces=forces, **kw)


def test_a_pushed_sliding_ball_starts_rolling_at_the_closed_form_time_and_accelerates_after(
        backend):
    """A ball launched at v0 without spin and pushed along its motion by F at its centre
    slides with dv/dt = F/m - mu g while friction spins it up at (5/2) mu g / r: the slip
    v - r w vanishes at t* = v0 / ((7/2) mu g - F/m); it then rolls, accelerating at
    F / (m (1 + 2/5)) = 5 F / (7 m) (friction 2F/7 < mu m g holds it)."""
    F, mu, v0, t_final = 0.5, 0.2, 2.0, 1.0
    traj = nhphys.simulate(ball([Force([F, 0.0, 0.0])], mu=mu), t_final, 1e-3, backend=backend,
                           velocity=[v0, 0.0, 0.0])
    (event,) = traj.events
    t_star = v0 / (3.5 * mu * G - F / M_BALL)
    assert event["kind"] == "stick" and event["t"] == pytest.approx(t_star, rel=1e-9)
    v_star = v0 + (F / M_BALL - mu * G) * t_star
    after = traj.t > t_star
    expected = v_star + 5 * F / (7 * M_BALL) * (traj.t[after] - t_star)
    np.testing.assert_allclose(traj.velocity[after][:, 0], expected, rtol=0, atol=1e-12)
    assert np.all(traj.mode[after] == 0)
    # the push's work and the friction's: energy - work is constant (velocities linear in t)
    balance = traj.energy - traj.work
    assert np.ptp(balance) <= 1e-12 * traj.energy[0]
    assert traj.constraint_residual.max() <= 1e-12


def lifted(backend, dt, t_final=1.0):
    """A ball rolling at 1 m/s pulled up by a force growing as 2 m g t: N = m g (1 - 2 t)."""
    ramp = Force(Schedule([0.0, 1.0], [[0.0, 0.0, 0.0], [0.0, 0.0, 2 * M_BALL * G]]))
    return nhphys.simulate(ball([ramp]), t_final, dt, backend=backend,
                           omega=[0.0, 1.0 / R_BALL, 0.0], save_every=round(0.01 / dt))


def test_a_growing_lift_takes_a_rolling_ball_off_at_the_closed_form_time(backend):
    """Lift-off where the normal force crosses zero, t = 1/2 s, located to round-off at both
    steps; after it the centre rises as z'' = g (2 t - 1), whose closed form the flight
    follows at second order (the kicks take the force at the step's ends)."""
    errors = []
    for dt in (1e-3, 1e-4):
        traj = lifted(backend, dt)
        (event,) = traj.events
        assert event["kind"] == "lift-off" and abs(event["t"] - 0.5) <= 1e-12
        t = traj.t[-1]
        height = R_BALL + G * ((t**3 - 0.125) / 3 - (t - 0.5) / 4 - (t - 0.5)**2 / 2)
        errors.append(abs(traj.position[-1, 2] - height))
        # the rolling part kept the contact; the flight keeps the centre's speed along x
        assert np.abs(traj.velocity[:, 0] - 1.0).max() <= 1e-12
    assert 95.0 < errors[0] / errors[1] < 105.0, errors


def test_drag_in_flight_decays_the_velocity_at_the_closed_form_rate(backend):
    """A spinning ball thrown up with linear drag c: v = v_inf + (v0 - v_inf) exp(-c t / m),
    v_inf = -m g / c along z; the error falls as h^2 and so does the drift of energy - work."""
    c, v0 = 0.7, np.array([1.0, 0.0, 2.0])
    errors, drifts = [], []
    for dt in (1e-3, 5e-4):
        traj = nhphys.simulate(ball([LinearDrag(c)]), 0.5, dt, backend=backend, height=1.0,
                               velocity=v0, omega=[3.0, 4.0, 5.0], save_every=round(1e-3 / dt))
        decay = np.exp(-c / M_BALL * traj.t)[:, None]
        v_inf = np.array([0.0, 0.0, -M_BALL * G / c])
        errors.append(np.abs(traj.velocity - (v_inf + (v0 - v_inf) * decay)).max())
        drifts.append(np.ptp(traj.energy - traj.work))
        assert np.all(traj.mode == 1)
        # the drag acts at the centre: the angular momentum about it is kept
        spin = np.einsum("nij,nj->ni", traj.R, traj.omega * BALL.inertia.diagonal())
        assert np.abs(spin - spin[0]).max() <= 1e-14
    assert 3.8 < errors[0] / errors[1] < 4.2, errors
    assert 3.8 < drifts[0] / drifts[1] < 4.2, drifts


def test_a_constant_field_in_flight_gives_the_exact_parabola(backend):
    """Under a uniform field f (a wind), the centre follows a = f / m - g k exactly (the
    kick-drift-kick integrates a constant acceleration exactly)."""
    wind = np.array([0.3, -0.2, 0.0])
    v0 = np.array([0.5, 0.0, 1.0])
    traj = nhphys.simulate(ball([UniformField(wind)]), 0.4, 1e-3, backend=backend, height=1.0,
                           velocity=v0, omega=[1.0, 2.0, 3.0])
    acc = wind / M_BALL - np.array([0.0, 0.0, G])
    t = traj.t[:, None]
    expected = traj.position[0] + v0 * t + 0.5 * acc * t * t
    assert np.abs(traj.position - expected).max() <= 1e-14
    balance = traj.energy - traj.work  # the field is a potential: in the energy, no work
    assert np.ptp(balance) <= 1e-13 and np.all(traj.work == 0.0)


def test_a_torque_beyond_the_spin_limit_spins_a_lightly_pushed_puck_up_without_pushing_it_back(
        backend):
    """A push of 0.1 N (the slide limit is 0.3335 N) and a torque of 12e-3 N m about the
    normal (the spin limit is 8.45e-3 N m) at a puck at rest on its face: static friction holds
    its centre and it spins up; once spinning, its face's friction no longer holds the push
    alone, and the centre drifts along it, never against it."""
    traj = nhphys.simulate(puck([Force([0.1, 0.0, 0.0]),
                                 Torque([0.0, 0.0, 12e-3], frame="space")]), 0.05, 1e-3,
                           backend=backend, omega0=[0.0, 0.0, 0.0])
    assert np.all(traj.velocity[:, 0] >= 0.0)
    assert np.abs(traj.velocity[:, 1:]).max() <= 1e-15  # (the face friction's round-off)
    limit = 2.0 / 3.0 * 0.2 * M_PUCK * G * R_PUCK
    rate = (12e-3 - limit) / PUCK.inertia[2, 2]
    assert traj.omega[1, 2] == pytest.approx(rate * 1e-3, rel=1e-3)  # the spin's first step


def test_motors_and_python_callables_act_with_lift_off(backend):
    """A motor on a coin's axle, rolling it with a unilateral contact that never lifts off,
    gives the bilateral run's trajectory; a force given as a Python callable gives that of
    the same constant force (on the twin, which callables step on)."""
    from nhphys.forces import Motor
    from nhphys.scenes.euler_disk import leaning

    coin = nhphys.RigidBody(1.0, Disk.solid_inertia(1.0, 0.1), Disk(0.1))
    start = {"R0": leaning(0.1), "omega0": [0.0, 0.0, 5.0]}
    motor = [Motor(torque=0.02, axis=(0.0, 0.0, 1.0), target_speed=8.0, gain=0.01)]
    bilateral = nhphys.simulate(RollingBody(coin, Plane(), forces=motor), 0.3, 1e-3,
                                backend=backend, **start)
    unilateral = nhphys.simulate(RollingBody(coin, Plane(), forces=motor, lift_off=True),
                                 0.3, 1e-3, backend=backend, **start)
    assert unilateral.events == [] and np.all(unilateral.mode == 0)
    assert np.abs(unilateral.position - bilateral.position).max() <= 1e-13
    assert np.abs(unilateral.work - bilateral.work).max() <= 1e-13
    assert bilateral.work[-1] > 0.0  # the motor drives it
    callable_push = Force(lambda t, state: [0.5, 0.0, 0.0])
    runs = [nhphys.simulate(ball([push], mu=0.2), 0.5, 1e-3, backend=backend,
                            velocity=[2.0, 0.0, 0.0])
            for push in (callable_push, Force([0.5, 0.0, 0.0]))]
    assert "python" in runs[0].meta["backend"]
    assert [e["kind"] for e in runs[0].events] == ["stick"]
    assert abs(runs[0].events[0]["t"] - runs[1].events[0]["t"]) <= 1e-12
    assert np.abs(runs[0].position - runs[1].position).max() <= 1e-12


def puck(forces, mu=0.2):
    return RollingBody(PUCK, Plane(), lift_off=True, mu=mu, gravity=G, forces=forces)


@pytest.mark.parametrize("push, moves", [(0.3, False), (0.5, True)])
def test_a_puck_lying_flat_is_held_or_pushed_as_static_friction_says(backend, push, moves):
    """A force F along the plane at a puck at rest on its face: held while F <= mu m g
    (0.3335 N here), else it slides at a = F/m - mu g from rest (exact: the forces are
    constant)."""
    traj = nhphys.simulate(puck([Force([push, 0.0, 0.0])]), 0.3, 1e-3, backend=backend,
                           omega0=[0.0, 0.0, 0.0])
    assert np.all(traj.mode == 3)
    if not moves:
        assert np.all(traj.position == traj.position[0]) and np.all(traj.velocity == 0.0)
        return
    acc = push / M_PUCK - 0.2 * G
    np.testing.assert_allclose(traj.position[:, 0] - traj.position[0, 0],
                               0.5 * acc * traj.t**2, rtol=0, atol=1e-14)
    balance = traj.energy - traj.work
    assert np.ptp(balance) <= 1e-13


@pytest.mark.parametrize("torque, spins", [(6e-3, False), (12e-3, True)])
def test_a_puck_lying_flat_spins_up_under_a_torque_beyond_the_friction_s(backend, torque,
                                                                          spins):
    """A torque T about the normal at a puck at rest on its face: held while
    T <= (2/3) mu m g R (8.45e-3 N m here), else it spins up at (T - (2/3) mu m g R) / I_a
    without moving its centre."""
    traj = nhphys.simulate(puck([Torque([0.0, 0.0, torque], frame="space")]), 0.3, 1e-3,
                           backend=backend, omega0=[0.0, 0.0, 0.0])
    limit = 2.0 / 3.0 * 0.2 * M_PUCK * G * R_PUCK
    rate = (torque - limit) / PUCK.inertia[2, 2] if spins else 0.0
    np.testing.assert_allclose(traj.omega[:, 2], rate * traj.t, rtol=1e-13, atol=1e-13)
    assert np.abs(traj.position - traj.position[0]).max() <= 1e-16


THROW = {"height": 0.1, "velocity": [1.0, 0.3, 0.0], "omega": [5.0, -20.0, 3.0]}


def thrown_ball():
    """A spinning ball thrown onto a plane under drag, angular damping, spin friction, a
    spring to a point above, a torque schedule and rolling resistance: it bounces, lands
    sliding (the Coulomb impact), slides, sticks and rolls."""
    forces = [LinearDrag(0.3), AngularDamping(2e-3), AngularDamping(1e-3, about="normal"),
              Spring(5.0, [0.4, 0.0, 0.6], point=[0.0, 0.0, 0.05], rest_length=0.2),
              Torque(Schedule([0.0, 0.4, 0.8], [[0.0, 0.0, 0.0], [0.0, 0.02, 0.0],
                                                [0.01, 0.0, 0.0]])),
              RollingResistance(1e-3)]
    return ball(forces, mu=0.25, restitution=0.3, impact="coulomb")


def thrown(backend, dt=1e-3, t_final=0.8):
    return nhphys.simulate(thrown_ball(), t_final, dt, backend=backend,
                           save_every=round(1e-3 / dt), **THROW)


@pytest.mark.parity
def test_kernel_and_twin_agree_through_mode_changes_under_every_force_type():
    kernel, twin = thrown("cython"), thrown("python")
    kinds = [e["kind"] for e in kernel.events]
    assert kinds == [e["kind"] for e in twin.events]
    assert kinds == ["touchdown"] * 5 + ["stick"]  # bounces four times, lands sliding, sticks
    assert [e["after"] for e in kernel.events[-2:]] == ["sliding", "rolling"]
    np.testing.assert_allclose([e["t"] for e in kernel.events], [e["t"] for e in twin.events],
                               rtol=0, atol=1e-10)
    for name in ("position", "R", "omega", "velocity", "energy", "work"):
        np.testing.assert_allclose(kernel[name], twin[name], rtol=0, atol=1e-10, err_msg=name)
    np.testing.assert_array_equal(kernel.mode, twin.mode)


def test_the_forced_steps_converge_to_the_reference_through_the_events(backend):
    """The thrown ball against ``Reference`` (DOP853 mode by mode, the same forces in its
    equations; run with each step's ``dt``, which sets the rest speed of the last bounces): the
    same events, their times and the final state converging at second order."""
    time_errors, state_errors = [], []
    for dt in (1e-3, 5e-4):
        ref = nhphys.simulate(thrown_ball(), 0.8, dt, integrator=Reference(1e-12, 1e-14),
                              save_every=round(1e-3 / dt), **THROW)
        traj = thrown(backend, dt)
        assert [e["kind"] for e in traj.events] == [e["kind"] for e in ref.events]
        time_errors.append(max(abs(a["t"] - b["t"]) for a, b in zip(traj.events, ref.events)))
        state_errors.append(np.abs(traj.position[-1] - ref.position[-1]).max())
    assert time_errors[0] < 1e-6 and state_errors[0] < 1e-6
    assert 3.0 < time_errors[0] / time_errors[1] < 5.0, time_errors
    assert 3.0 < state_errors[0] / state_errors[1] < 5.0, state_errors


@pytest.mark.parity
def test_kernel_and_twin_agree_on_a_face_under_every_force_type():
    """A puck on its face, sliding and spinning under drag, angular damping, spin friction, a
    spring and a scheduled torque, to its stop (0.832 s), and on from rest under a push that
    grows from 1 s."""
    forces = [LinearDrag(0.05), AngularDamping(1e-5), AngularDamping(2e-5, about="normal"),
              Spring(2.5, [0.3, 0.1, 0.0], point=[0.01, 0.0, 0.0]),
              Torque(Schedule([0.0, 0.5], [[0.0, 0.0, 0.004], [0.0, 0.0, -0.004]]),
                     frame="space"),
              Force(Schedule([0.0, 1.0, 1.5], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0],
                                               [0.6, 0.0, 0.0]]))]

    def run(backend):
        return nhphys.simulate(puck(forces), 1.5, 1e-3, backend=backend,
                               velocity0=[0.4, -0.2, 0.0], omega0=[0.0, 0.0, 15.0])

    kernel, twin = run("cython"), run("python")
    assert [e["kind"] for e in kernel.events] == [e["kind"] for e in twin.events]
    (stop,) = kernel.events
    assert stop["kind"] == "stick"
    after = kernel.t > stop["t"]
    assert np.all(kernel.velocity[after & (kernel.t < 1.0)] == 0.0)  # held
    assert kernel.velocity[-1, 0] > 0.0  # the push starts it again from rest
    np.testing.assert_allclose([e["t"] for e in kernel.events], [e["t"] for e in twin.events],
                               rtol=0, atol=1e-10)
    for name in ("position", "R", "omega", "velocity", "energy", "work"):
        np.testing.assert_allclose(kernel[name], twin[name], rtol=0, atol=1e-10, err_msg=name)
    assert np.all(kernel.mode == 3)


@pytest.mark.kernels_only("52,000 rolling steps of a disk take minutes on the twin; the twin's "
                          "rolling step with rolling resistance is checked against the kernel "
                          "by the parity tests of the forces")
def test_an_euler_disk_with_rolling_resistance_spirals_down_falls_flat_and_rests(backend):
    """``euler_disk_resistance`` with a unilateral rough contact: the same spiral as the
    bilateral run, step for step, to where that run's flat-contact event ends it; there the
    disk lands on its face (located inside the step) and stays at rest."""
    from nhphys.scenes.euler_disk_resistance import RESISTANCE, START, disk, ground

    dt = 1e-4
    with pytest.raises(ContactEvent) as event:
        nhphys.simulate(RollingBody(disk, ground, forces=[RESISTANCE]), 5.3, dt,
                        backend=backend, save_every=10, **START)
    bilateral = event.value.trajectory
    system = RollingBody(disk, ground, forces=[RESISTANCE], lift_off=True)
    traj = nhphys.simulate(system, 5.3, dt, backend=backend, save_every=10, **START)
    (fall,) = traj.events
    assert fall["kind"] == "fall flat"
    start = event.value.time  # the start of the step that failed there
    assert start < fall["t"] <= start + dt
    n = len(bilateral.t)
    assert np.abs(traj.position[:n] - bilateral.position).max() <= 1e-13
    assert np.abs(traj.omega[:n] - bilateral.omega).max() <= 1e-10
    flat = traj.t > fall["t"]
    assert np.all(traj.mode[flat] == 3)
    assert np.all(traj.velocity[flat] == 0.0) and np.all(traj.omega[flat] == 0.0)
    # energy - work drifts as the bilateral run's (the rolling step's error, second order),
    # the landing's loss is in the work, and at rest nothing changes
    balance = traj.energy - traj.work
    assert np.abs(balance[:n] - (bilateral.energy - bilateral.work)).max() <= 1e-12
    # (across the landing's frame: the rolling steps' drift of 1 ms, against a landing loss
    # of 0.0214 J that would show if it were not in the work)
    assert abs(balance[flat][0] - balance[~flat][-1]) <= 1e-8
    assert np.ptp(balance[flat]) == 0.0
