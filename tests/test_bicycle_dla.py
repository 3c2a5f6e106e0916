"""The bicycle stepped by the symmetric discrete Lagrange-d'Alembert method on its joint tree
(``DLA()`` and its compositions): contacts and constraints at round-off, reversibility, orders
2 and 4 against ``Reference``, bounded energy over 10^6 steps, the weave of the linearisation,
kernel against twin."""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import DLA, Composition, Newmark, Reference
from nhphys.integrators.coefficients import composition
from nhphys.systems.bicycle import Bicycle
from nhphys.twins import multibody as twin

ORDER4 = Composition([(DLA(), w) for w in composition(4)])
START = {"speed": 5.0, "roll": 0.05, "steer_rate": 0.5}


@pytest.fixture(scope="module")
def bike():
    return Bicycle()


def test_runs_keep_both_contacts_and_every_constraint_to_round_off(bike, backend):
    traj = nhphys.simulate(bike, 0.5, 1e-3, integrator=DLA(), backend=backend, speed=4.0,
                           roll=0.2, steer=-0.1, roll_rate=0.5, steer_rate=1.0)
    assert traj.meta["backend"] == backend
    assert np.max(traj.constraint_residual) < 1e-12
    gaps = np.array([bike.tree.gaps(q)[1] for q in traj.q])
    assert np.max(np.abs(gaps)) < 1e-14


def steps(backend, bike, q, v, lam, h, n, fractions=(1.0,)):
    module = nhphys_ext_or_twin(backend)
    info = np.zeros(3, dtype=np.intp)
    out = np.empty((n, 8)), np.empty((n, 8))
    code = module.tree_run(bike.joint_tree(module), q, v, lam, np.array(fractions), h, n, 1,
                           out[0], out[1], info, 1e-12, 30)
    assert code == 0, info
    return out


def nhphys_ext_or_twin(backend):
    from nhphys import _backend

    return _backend.choose("multibody", backend)[0]


@pytest.mark.parametrize("fractions", [(1.0,), composition(4)])
def test_the_step_is_symmetric_forward_then_back_returns_to_1e_12(bike, backend, fractions):
    q0, v0 = bike.state(speed=4.0, roll=0.2, steer=0.3, roll_rate=-0.5, steer_rate=2.0)
    q, v, lam = q0.copy(), v0.copy(), np.zeros(5)
    steps(backend, bike, q, v, lam, 1e-2, 20, fractions)
    assert np.max(np.abs(q - q0)) > 0.1  # it went somewhere
    steps(backend, bike, q, v, lam, -1e-2, 20, fractions)
    assert np.max(np.abs(q - q0)) < 1e-12 * max(1.0, np.max(np.abs(q0)))
    assert np.max(np.abs(v - v0)) < 1e-12 * np.max(np.abs(v0))


@pytest.fixture(scope="module")
def reference(bike):
    return nhphys.simulate(bike, 0.4, 0.01, integrator=Reference(rtol=1e-13, atol=1e-15),
                           **START)


@pytest.mark.parametrize("integrator, dts, order", [(DLA(), (0.02, 0.01, 0.005), 2),
                                                    (ORDER4, (0.05, 0.025, 0.0125), 4)])
def test_measured_order_against_reference(bike, backend, reference, integrator, dts, order):
    errors = []
    for dt in dts:
        traj = nhphys.simulate(bike, 0.4, dt, integrator=integrator, backend=backend, **START)
        errors.append(max(np.max(np.abs(traj.q[-1] - reference.q[-1])),
                          np.max(np.abs(traj.v[-1] - reference.v[-1])) * dt))
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(rates - order) < 0.3), (errors, rates)


@pytest.mark.kernels_only("10^6 steps take about 20 s on the kernel and hours on the twin")
@pytest.mark.slow
def test_energy_error_is_bounded_over_a_million_steps(bike, backend):
    traj = nhphys.simulate(bike, 1000.0, 1e-3, integrator=DLA(), backend=backend, speed=5.0,
                           roll=0.1, steer_rate=1.0, save_every=1000)
    error = np.abs(traj.energy - traj.energy[0]) / traj.energy[0]
    first, rest = np.max(error[:11]), np.max(error[11:])
    assert rest < 1e-9 and rest < 1.1 * first, (first, rest)
    assert np.max(traj.constraint_residual) < 1e-11  # 4.5 km from the start
    assert abs(traj.roll[-1]) < 1e-10  # upright again: the weave and capsize modes decayed


@pytest.mark.kernels_only("10 s at h = 1e-3 take 10^4 steps: about 90 s on the twin")
def test_dla_run_decays_at_the_weave_eigenvalue(bike, backend):
    from test_bicycle import TABLE2, weave_fit

    traj = nhphys.simulate(bike, 10.0, 1e-3, integrator=DLA(), backend=backend, speed=5.0,
                           roll=0.01, save_every=10)
    rate, frequency = weave_fit(traj)
    weave = TABLE2[5][0]
    assert abs(rate / weave.real - 1) < 1e-3
    assert abs(frequency / weave.imag - 1) < 1e-3


@pytest.mark.parity
@pytest.mark.slow
def test_kernel_and_twin_agree_over_10_4_steps(bike):
    """About 90 s: the twin takes 9 ms a step."""
    q0, v0 = bike.state(speed=5.0, roll=0.1, steer=0.1, roll_rate=-0.5, steer_rate=1.0)
    runs = []
    for backend in ("cython", "python"):
        q, v, lam = q0.copy(), v0.copy(), np.zeros(5)
        runs.append(steps(backend, bike, q, v, lam, 1e-3, 10_000))
    assert np.max(np.abs(runs[0][0] - runs[1][0])) < 1e-10 * np.max(np.abs(runs[0][0]))
    assert np.max(np.abs(runs[0][1] - runs[1][1])) < 1e-10 * np.max(np.abs(runs[0][1]))


@pytest.mark.kernels_only("about 4,300 steps until the fall: about 50 s on the twin")
def test_below_the_weave_speed_a_lean_grows_at_the_weave_eigenvalue_until_it_falls(bike,
                                                                                     backend):
    """At 3 m/s the weave is unstable (Table 2: 1.70675605663975 +- 2.31582447384325 i): a
    1e-4 rad lean grows at that rate and frequency (fit over the first 2 s, while it is small)
    until the bicycle lies over; the run then ends (the model has no frame touching the ground)
    with an error that keeps every frame before it."""
    from test_bicycle import TABLE2

    with pytest.raises(nhphys.errors.NewtonError) as caught:
        nhphys.simulate(bike, 12.0, 1e-3, integrator=DLA(), backend=backend, speed=3.0,
                        roll=1e-4, save_every=10)
    traj = caught.value.trajectory
    assert np.max(np.abs(traj.roll)) > 1.0  # lying over: more than 57 degrees of lean
    assert np.max(traj.constraint_residual) < 1e-11
    t = traj.t
    early = t <= 2.0
    weave = TABLE2[3][0]

    def residual(p):
        sigma, omega, capsize, caster = p
        basis = np.column_stack([np.exp(sigma * t[early]) * np.cos(omega * t[early]),
                                 np.exp(sigma * t[early]) * np.sin(omega * t[early]),
                                 np.exp(capsize * t[early]), np.exp(caster * t[early])])
        out = []
        for signal in (traj.roll[early], traj.steer[early]):
            coef = np.linalg.lstsq(basis, signal, rcond=None)[0]
            out.append((basis @ coef - signal) / np.max(np.abs(signal)))
        return np.concatenate(out)

    from scipy.optimize import least_squares

    fit = least_squares(residual, [1.7, 2.3, -2.6, -10.4], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    assert abs(fit.x[0] / weave.real - 1) < 1e-3
    assert abs(fit.x[1] / weave.imag - 1) < 1e-3


def test_a_run_cut_into_calls_is_the_run_in_one(bike, backend):
    whole = nhphys.simulate(bike, 0.2, 1e-3, integrator=DLA(), backend=backend, **START)
    run = DLA().start(bike, 1e-3, backend, **START)
    first = run.advance(120, 1)
    state = run.checkpoint()
    again = DLA().start(bike, 1e-3, backend, **START)
    again.restore(state)
    second = again.advance(80, 1)
    np.testing.assert_array_equal(np.vstack([first["q"], second["q"]]), whole.q[1:])


def test_other_methods_are_refused_with_a_message(bike):
    for integrator in (Newmark(), DLA(alpha=0.25), DLA("trapezoidal")):
        with pytest.raises(TypeError, match="DLA()"):
            nhphys.simulate(bike, 0.1, 1e-2, integrator=integrator, speed=1.0)
    with pytest.raises(TypeError, match="Retraction"):
        nhphys.simulate(bike, 0.1, 1e-2, integrator="exp", speed=1.0)


def test_twin_tree_matches_the_kernel_tree(bike):
    """Mass matrix, dT/dq, grad V and constraint rows of the kernel's JointTree and the twin's,
    at random states."""
    module = nhphys_ext_or_twin("cython")
    kernel, python = bike.joint_tree(module), bike.joint_tree(twin)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(-1, 1, 8)
        v = rng.normal(size=8)
        for a, b in zip(kernel.lagrangian_gradients(q, v), python.lagrangian_gradients(q, v)):
            assert np.max(np.abs(a - b)) < 1e-13 * max(1.0, np.max(np.abs(b)))
        assert np.max(np.abs(kernel.constraint_matrix(q) - python.constraint_matrix(q))) < 1e-14


test_twin_tree_matches_the_kernel_tree = pytest.mark.parity(test_twin_tree_matches_the_kernel_tree)


def test_on_a_hill_the_upright_bicycle_rolls_at_the_closed_form_acceleration(backend):
    """Straight and upright on a slope alpha, the bicycle accelerates at g sin(alpha) m /
    (m + I_R/r_R^2 + I_F/r_F^2) (the wheels' spin takes its share of the energy), downhill and
    uphill, to round-off; the energy (with the slope's potential) is conserved."""
    from nhphys.systems.bicycle import BENCHMARK

    alpha = np.deg2rad(3.0)
    mass = sum(BENCHMARK[k] for k in ("rear_frame_mass", "rear_wheel_mass", "front_frame_mass",
                                      "front_wheel_mass"))
    spin = (BENCHMARK["rear_wheel_inertia"][1] / BENCHMARK["rear_wheel_radius"] ** 2
            + BENCHMARK["front_wheel_inertia"][1] / BENCHMARK["front_wheel_radius"] ** 2)
    a = 9.81 * np.sin(alpha) * mass / (mass + spin)
    for slope, sign in ((alpha, 1.0), (-alpha, -1.0)):
        traj = nhphys.simulate(Bicycle(slope=slope), 0.5, 1e-2, integrator=DLA(),
                               backend=backend, speed=3.0)
        assert np.max(np.abs(traj.speed - (3.0 + sign * a * traj.t))) < 1e-12
        assert np.max(np.abs(traj.roll)) == 0.0
        assert np.ptp(traj.energy) < 1e-13 * traj.energy[0]


def test_a_hill_run_agrees_with_reference_and_linearising_on_it_is_refused(bike):
    hill = Bicycle(slope=np.deg2rad(3.0))
    ref = nhphys.simulate(hill, 2.0, 0.1, integrator=Reference(rtol=1e-11, atol=1e-13),
                          speed=3.0, roll=0.01)
    errors = []
    for dt in (2e-3, 1e-3):
        traj = nhphys.simulate(hill, 2.0, dt, integrator=DLA(), speed=3.0, roll=0.01,
                               save_every=round(0.1 / dt))
        errors.append(np.max(np.abs(traj.q - ref.q)))
    assert errors[1] < 3e-6 and 3.5 < errors[0] / errors[1] < 4.5, errors
    with pytest.raises(ValueError, match="level ground"):
        hill.eigenvalues(5.0)
    with pytest.raises(ValueError, match="slope"):
        Bicycle(slope=2.0)


def test_a_streamed_run_resumes_bit_for_bit_with_its_motor_work(tmp_path):
    from nhphys.forces import JointMotor

    pedalled = Bicycle(forces=[JointMotor("rear_wheel", torque=5.0)])
    start = {"speed": 5.0, "roll": 0.05}
    nhphys.simulate(pedalled, 0.5, 1e-3, integrator=DLA(), save_every=10,
                    out=tmp_path / "run.npz", **start)
    resumed = nhphys.simulate(pedalled, 1.0, 1e-3, integrator=DLA(), save_every=10,
                              out=tmp_path / "run.npz", resume=True, **start)
    whole = nhphys.simulate(pedalled, 1.0, 1e-3, integrator=DLA(), save_every=10, **start)
    for name in ("q", "v", "work", "energy"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(whole, name))
    loaded = nhphys.Trajectory.load(tmp_path / "run.npz")
    np.testing.assert_array_equal(loaded.q, whole.q)
