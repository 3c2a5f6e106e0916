"""Force elements on the Suslov body (torques about its fixed point): closed forms,
conservation, reversibility, order against the Reference, energy balance, parity, bad input."""

import numpy as np
import pytest

import nhphys
from nhphys import forces as fe
from nhphys.integrators import LiePoisson, Reference, Retraction
from nhphys.lie import so3
from nhphys.systems import Suslov

PRINCIPAL = np.array([1.0, 10.0, 100.0])
NON_PRINCIPAL = np.array([[2.0, 0.3, 0.1], [0.3, 3.0, -0.2], [0.1, -0.2, 4.0]])
AXIS = [0.2, 0.1, 1.0]
IC = {"momentum": [1.0, 0.5, 0.0]}


def log_log_slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


# -- closed forms ------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["torque", "thruster"])
def test_constant_torque_spins_the_body_up_at_tau_over_i(backend, how):
    # principal axes, a = e3, Omega along e1: (I Omega) x Omega = 0 and the torque's e3 part is
    # the constraint's, so Omega_1' = tau_1 / I_1 and R = Rx(theta), theta = w0 t + a t^2 / 2.
    # A thruster (a body-frame force f at the body point r) makes the torque r x f.
    w0, tau = 0.8, np.array([0.3, 0.0, 0.7])
    if how == "torque":
        element = fe.Torque(tau)
    else:
        r = np.array([0.0, 0.5, 0.0])  # r x (f3 e3) = (0.5 f3, 0, 0); f1 makes the e3 part
        element = fe.Force([-2 * tau[2], 0.0, 2 * tau[0]], point=r, frame="body")
    body = Suslov(PRINCIPAL, [0, 0, 1], forces=[element])
    traj = nhphys.simulate(body, 2.0, 1e-2, backend=backend, omega=[w0, 0.0, 0.0])
    acc = tau[0] / PRINCIPAL[0]
    t = traj.t
    assert np.abs(traj.omega - np.outer(w0 + acc * t, [1, 0, 0])).max() <= 1e-13
    # the exp map turns by the integral of the linear rate exactly
    np.testing.assert_allclose(traj.R, so3.exp(np.outer(w0 * t + 0.5 * acc * t**2, [1, 0, 0])),
                               rtol=0, atol=1e-12)
    assert np.abs(traj.work - tau[0] * (w0 * t + 0.5 * acc * t**2)).max() <= 1e-12
    assert np.ptp(traj.energy - traj.work) <= 1e-12
    assert traj.constraint_residual.max() <= 1e-15


def test_torque_along_the_constraint_axis_does_nothing(backend):
    # lambda = -a . I^-1 ((I Omega) x Omega + tau) / (a . I^-1 a) takes up kappa a entirely
    free = Suslov(NON_PRINCIPAL, AXIS)
    a = free.axis
    pushed = Suslov(NON_PRINCIPAL, AXIS, forces=[fe.Torque(0.7 * a)])
    x = nhphys.simulate(free, 2.0, 1e-2, backend=backend, **IC)
    y = nhphys.simulate(pushed, 2.0, 1e-2, backend=backend, **IC)
    np.testing.assert_allclose(y.R, x.R, rtol=0, atol=1e-15)
    np.testing.assert_allclose(y.omega, x.omega, rtol=0, atol=1e-15)
    assert np.abs(y.work).max() <= 1e-15  # it does no work on the allowed motions
    # and the Reference's multiplier takes it up too
    omega = np.array([0.3, -0.2, 0.0])
    omega -= (omega @ a) * a
    np.testing.assert_allclose(pushed.omega_dot(omega, 0.7 * a), free.omega_dot(omega),
                               rtol=0, atol=1e-15)


def test_torque_schedule_is_integrated_by_the_trapezoidal_rule(backend):
    # about a principal axis, Omega_1 = w0 + (1/I_1) int tau_1: exact at the steps for a
    # piecewise linear schedule with breaks on the grid; the angle is second order
    times, values = [0.0, 0.4, 0.7, 1.0], [0.0, 0.5, -0.3, 0.2]
    body = Suslov(PRINCIPAL, [0, 0, 1], forces=[
        fe.Torque(fe.Schedule(times, np.outer(values, [1.0, 0.0, 0.0])))])
    fine = np.linspace(0.0, 1.0, 100001)
    torque = np.interp(fine, times, values)
    rate = 0.5 + np.concatenate([[0.0], np.cumsum(0.5 * (torque[1:] + torque[:-1])
                                                  * np.diff(fine))]) / PRINCIPAL[0]
    angle = np.concatenate([[0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]) * np.diff(fine))])
    errors = []
    for h in (0.02, 0.01):
        traj = nhphys.simulate(body, 1.0, h, backend=backend, save_every=round(0.1 / h),
                               omega=[0.5, 0.0, 0.0])
        assert np.abs(traj.omega[:, 0] - np.interp(traj.t, fine, rate)).max() <= 1e-13
        turned = so3.log(traj.R)[:, 0]
        errors.append(np.abs(turned - np.interp(traj.t, fine, angle)).max())
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)


@pytest.mark.parametrize("element", ["damping", "motor"])
def test_damping_and_speed_control_relax_the_spin_exponentially(backend, element):
    # about a principal axis: I_1 Omega' = -c Omega (damping) or gain (w - Omega) (a motor)
    c, target, w0 = 0.5, 2.0, 0.5
    if element == "damping":
        force, limit = fe.AngularDamping(c), 0.0
    else:
        force, limit = fe.Motor(axis=[1, 0, 0], target_speed=target, gain=c), target
    body = Suslov(PRINCIPAL, [0, 0, 1], forces=[force])
    errors = []
    for h in (2e-3, 1e-3):
        traj = nhphys.simulate(body, 2.0, h, backend=backend, save_every=round(0.1 / h),
                               omega=[w0, 0.0, 0.0])
        exact = limit + (w0 - limit) * np.exp(-c * traj.t / PRINCIPAL[0])
        errors.append(np.abs(traj.omega[:, 0] - exact).max())
        assert traj.constraint_residual.max() <= 1e-15
    assert errors[1] < 1e-6
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)


# -- conservative elements: bounded energy, reversibility, order ---------------------------------

def spring_body(extra=(), pivot=(0.0, 0.0, 0.0)):
    anchor = np.array([0.3, 0.1, 0.4]) + pivot
    return Suslov(NON_PRINCIPAL, AXIS, pivot=pivot, forces=[
        fe.Spring(2.0, anchor=anchor, point=[0.2, 0.0, 0.1], rest_length=0.05), *extra])


@pytest.mark.kernels_only("10^6 steps take about 6 minutes on the twins (0.35 ms a step)")
@pytest.mark.parametrize("map_name", ["exp", "cayley"])
def test_spring_energy_bounded_without_drift_over_a_million_steps(backend, map_name):
    # a spring pulling a point below the fixed point down, as a heavy top's weight would
    # (measured: |error| 4.0e-8 in every tenth of the run). A symmetric scheme bounds the
    # energy error of a reversible system in its reversible (quasi-periodic) regimes; with the
    # spring of spring_body() the motion settles onto an attracting one instead, and there
    # the error grows like h^2 t (1.1e-7 after 5000 s at h = 1e-3, four times that at 2e-3).
    body = Suslov(NON_PRINCIPAL, AXIS, forces=[fe.Spring(5.0, anchor=[0, 0, -1.0],
                                                         point=[0, 0, -0.3])])
    traj = nhphys.simulate(body, 1000.0, 1e-3, Retraction(map_name), backend=backend,
                           save_every=1000, **IC)
    error = traj.energy - traj.energy[0]
    assert np.abs(traj.work).max() == 0.0  # potentials only: no work is accumulated
    assert np.abs(error).max() <= 1e-5 * traj.energy[0]
    tenth = len(error) // 10
    first, last = error[:tenth], error[-tenth:]
    assert np.abs(last).max() <= 1.5 * np.abs(first).max()
    assert abs(last.mean() - first.mean()) <= np.abs(first).max()
    assert traj.constraint_residual.max() <= 1e-14


def smooth_torque():
    """A scheduled torque, one cubic through the whole run and beyond (no kink: the triple
    jump's sub-steps reach past the ends of each step)."""
    return fe.Torque(fe.Schedule([-1.0, 0.5, 2.0, 3.5], [[0, 0, 0], [0.3, 0.1, 0.2],
                                                        [0, -0.2, 0.1], [0.1, 0.1, 0.1]],
                                 kind="cubic"))


@pytest.mark.parametrize("map_name", ["exp", "cayley"])
def test_reversible_with_conservative_forces(backend, map_name):
    body = spring_body([smooth_torque(), fe.Force([0.2, 0.1, -0.3], point=[0.1, 0.2, 0.05])])
    run = Retraction(map_name).start(body, 1e-2, backend, momentum0=IC["momentum"])
    R, p = run.R.copy(), run.p.copy()
    run.advance(100, 100)
    moved = np.abs(run.R - R).max()
    run.dt = -run.dt
    run.y = -run.y  # the warm start of the reversed step
    run.advance(100, 100)
    assert moved > 0.1
    assert np.abs(run.R - R).max() <= 1e-12
    assert np.abs(run.p - p).max() <= 1e-12
    assert abs(run.clock[0]) <= 1e-12


@pytest.fixture(scope="module")
def reference():
    body = spring_body([smooth_torque(), fe.Force([0.2, 0.1, -0.3], point=[0.1, 0.2, 0.05]),
                        fe.AngularDamping(0.05), fe.Motor(torque=0.1, axis=[1, 0, 0],
                                                          target_speed=1.0, gain=0.05)])
    return body, nhphys.simulate(body, 2.0, 0.1, Reference(rtol=1e-13, atol=1e-15), **IC)


@pytest.mark.parametrize(("order", "hs", "slope"), [(2, (0.01, 0.005, 0.0025), 2.0),
                                                     (4, (0.05, 0.025, 0.0125), 4.0)])
def test_order_against_the_reference_with_forces(backend, reference, order, hs, slope):
    body, ref = reference
    errors = []
    for h in hs:
        traj = nhphys.simulate(body, 2.0, h, Retraction(order=order), backend=backend,
                               save_every=round(0.1 / h), **IC)
        assert traj.constraint_residual.max() <= 1e-14
        errors.append(max(np.abs(traj.R - ref.R).max(), np.abs(traj.omega - ref.omega).max()))
    assert log_log_slope(hs, errors) == pytest.approx(slope, abs=0.1)


def test_work_matches_the_reference(backend, reference):
    body, ref = reference
    errors = []
    for h in (2e-3, 1e-3):
        traj = nhphys.simulate(body, 2.0, h, backend=backend, save_every=round(0.1 / h), **IC)
        errors.append(np.abs(traj.work - ref.work).max())
    assert errors[1] <= 1e-5 * np.abs(ref.work).max()
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)
    assert np.ptp(ref.energy - ref.work) <= 1e-10  # the Reference's own balance


# -- dissipation: energy - work to the method's order --------------------------------------------

@pytest.mark.parametrize("map_name", ["exp", "cayley"])
def test_energy_minus_work_holds_to_second_order_with_dissipation(backend, map_name):
    body = spring_body([fe.AngularDamping(0.05), smooth_torque(),
                        fe.Motor(torque=fe.Schedule([0, 1, 2], [0.0, 0.2, -0.1]),
                                 axis=[1, 0, 0], target_speed=1.0, gain=0.05)])
    drifts = []
    for h in (4e-3, 2e-3):
        traj = nhphys.simulate(body, 2.0, h, Retraction(map_name), backend=backend,
                               save_every=round(0.05 / h), **IC)
        assert traj.constraint_residual.max() <= 1e-14
        balance = traj.energy - traj.work
        drifts.append(np.abs(balance - balance[0]).max())
    assert np.abs(traj.work).max() > 0.05 * traj.energy[0]  # the balance test is not vacuous
    assert drifts[0] / drifts[1] == pytest.approx(4.0, rel=0.1)


# -- every element keeps the constraint ----------------------------------------------------------

ELEMENTS = {
    "torque": lambda: fe.Torque([0.2, -0.1, 0.3], frame="space"),
    "force at a point": lambda: fe.Force([0.3, -0.2, 0.1], point=[0.05, 0.2, 0.1]),
    "thruster": lambda: fe.Force(fe.Schedule([0, 1], [[0.1, 0.2, 0], [0, -0.3, 0.1]]),
                                 point=[0.1, 0.0, 0.1], frame="body"),
    "spring": lambda: fe.Spring(3.0, anchor=[0.2, 0.1, 0.3], point=[0.05, 0.0, 0.2]),
    "damping": lambda: fe.AngularDamping(0.1),
    "motor": lambda: fe.Motor(torque=0.05, axis=[0, 1, 0], target_speed=2.0, gain=0.1),
}


@pytest.mark.parametrize("element", sorted(ELEMENTS))
def test_constraint_holds_to_round_off_under_every_force_type(backend, element):
    body = Suslov(NON_PRINCIPAL, AXIS, forces=[ELEMENTS[element]()])
    for integrator in (Retraction("exp"), Retraction("cayley"), Retraction(order=4)):
        traj = nhphys.simulate(body, 1.0, 1e-2, integrator, backend=backend, **IC)
        assert traj.constraint_residual.max() <= 1e-14
        assert np.abs(traj.R[-1].T @ traj.R[-1] - np.eye(3)).max() <= 1e-14


def test_lie_poisson_free_body_takes_the_torques_too(backend):
    # no constraint: the body's angular momentum in space changes at the space torque's rate
    tau = np.array([0.2, -0.1, 0.3])
    body = Suslov(NON_PRINCIPAL, AXIS, forces=[fe.Torque(tau, frame="space")])
    traj = nhphys.simulate(body, 1.0, 1e-2, LiePoisson(), backend=backend,
                           momentum=[1.0, 0.5, 0.2])
    spatial = np.einsum("nij,nj->ni", traj.R, traj.momentum)
    np.testing.assert_allclose(spatial - spatial[0], np.outer(traj.t, tau), rtol=0, atol=1e-12)


# -- parity: kernel and twin ----------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("order", [2, 4])
def test_kernel_and_twin_agree_over_ten_thousand_steps(order):
    body = spring_body([ELEMENTS[name]() for name in sorted(ELEMENTS) if name != "spring"],
                       pivot=(0.1, 0.2, 0.3))
    steps = 10_000 if order == 2 else 3_400  # the same number of sub-steps
    kw = dict(save_every=steps // 10, **IC)
    a = nhphys.simulate(body, steps * 1e-3, 1e-3, Retraction(order=order), backend="cython", **kw)
    b = nhphys.simulate(body, steps * 1e-3, 1e-3, Retraction(order=order), backend="python",
                        **kw)
    for name in ("R", "omega", "energy", "work"):
        assert np.abs(a[name] - b[name]).max() <= 1e-10, name
    assert np.abs(a.work).max() > 0.1


# -- scenes ------------------------------------------------------------------------------------

def test_suslov_contact_takes_forces_about_its_pivot(backend):
    # the scene's body is the system with the pivot; moving pivot and anchor together changes
    # nothing (translation invariance)
    from nhphys import Scene, SuslovContact
    from nhphys.surfaces import Ellipsoid

    pivot = np.array([1.0, 1.0, 0.5])
    extra = [fe.Torque([0.1, 0.0, 0.0]), fe.AngularDamping(0.02)]
    body = nhphys.RigidBody(1.0, NON_PRINCIPAL, Ellipsoid([0.3, 0.2, 0.1]))
    scene = Scene()
    spring = spring_body(pivot=pivot).forces
    scene.add_body(body, SuslovContact(AXIS, pivot=pivot), forces=[*spring, *extra], **IC)
    traj = scene.simulate(1.0, 1e-2, backend=backend)
    alone = nhphys.simulate(spring_body(extra), 1.0, 1e-2, backend=backend, **IC)
    np.testing.assert_allclose(traj.R[:, 0], alone.R, rtol=0, atol=1e-14)
    assert traj.constraint_residual.max() <= 1e-14


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("element", "message"), [
    (fe.Force([1.0, 0.0, 0.0]), "Force: a Suslov body turns about a fixed point"),
    (fe.UniformField([0.0, 0.0, -1.0]), "UniformField: a Suslov body's fixed point"),
    (fe.LinearDrag(0.1), "LinearDrag: a Suslov body's fixed point"),
    (fe.SpinFriction(0.1), "AngularDamping: a Suslov body has no contact normal"),
    (fe.RollingResistance(0.1), "RollingResistance: a Suslov body has no contact normal"),
])
def test_elements_that_cannot_act_on_a_fixed_point_body_are_refused(element, message):
    with pytest.raises(ValueError, match=message):
        Suslov(NON_PRINCIPAL, AXIS, forces=[element])


def test_callable_torque_runs_on_the_twin_and_bad_returns_name_the_element():
    tau = np.array([0.1, 0.2, 0.0])
    builtin = Suslov(NON_PRINCIPAL, AXIS, forces=[fe.Torque(tau)])
    called = Suslov(NON_PRINCIPAL, AXIS, forces=[fe.Torque(lambda t, state: tau)])
    a = nhphys.simulate(builtin, 0.2, 1e-2, backend="python", **IC)
    b = nhphys.simulate(called, 0.2, 1e-2, backend="cython", **IC)
    assert "callable" in b.meta["backend"]
    np.testing.assert_allclose(b.R, a.R, rtol=0, atol=1e-15)
    bad = Suslov(NON_PRINCIPAL, AXIS, forces=[fe.Torque(lambda t, state: np.zeros(2))])
    with pytest.raises(ValueError, match=r"Torque: expected the callable .* 3 finite numbers"):
        nhphys.simulate(bad, 0.2, 1e-2, **IC)
