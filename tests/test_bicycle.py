"""The Whipple–Carvallo bicycle: its nonlinear equations, linearised, against the published
benchmark; its field against finite differences of its Lagrangian; nonlinear runs.

Reference values: Meijaard, Papadopoulos, Ruina and Schwab, "Linearized dynamics equations for
the balance and steer of a bicycle: a benchmark and review", Proc. R. Soc. A 463 (2007)
1955-1982: the coefficient matrices of their eq. (5.4) (M, C1, K0, K2 to 14 digits), the
eigenvalues of their Table 2 (v = 0 .. 10 m/s) and the weave and capsize speeds of their
Section 5 (4.29238253634111 and 6.02426201538837 m/s).
"""

import numpy as np
import pytest

import nhphys
from nhphys.linearize import paired_distance
from nhphys.systems.bicycle import PITCH, ROLL, STEER, Bicycle

G = 9.81
M_PUB = np.array([[80.81722, 2.31941332208709], [2.31941332208709, 0.29784188199686]])
C1_PUB = np.array([[0.0, 33.86641391492494], [-0.85035641456978, 1.68540397397560]])
K0_PUB = np.array([[-80.95, -2.59951685249872], [-2.59951685249872, -0.80329488458618]])
K2_PUB = np.array([[0.0, 76.59734589573222], [0.0, 2.65431523794604]])

# Table 2: for each speed 0 .. 10 m/s, its four eigenvalues
TABLE2 = {
    0: [5.53094371765393, 3.13164324790656, -3.13164324790656, -5.53094371765393],
    1: [3.52696170990070 + 0.80774027519930j, 3.52696170990070 - 0.80774027519930j,
        -3.13423125066578, -7.11008014637442],
    2: [2.68234517512745 + 1.68066296590675j, 2.68234517512745 - 1.68066296590675j,
        -3.07158645641514, -8.67387984831735],
    3: [1.70675605663975 + 2.31582447384325j, 1.70675605663975 - 2.31582447384325j,
        -2.63366137253667, -10.35101467245920],
    4: [0.41325331521125 + 3.07910818603206j, 0.41325331521125 - 3.07910818603206j,
        -1.42944427361326, -12.15861426576447],
    5: [-0.77534188219585 + 4.46486771378823j, -0.77534188219585 - 4.46486771378823j,
        -0.32286642900409, -14.07838969279822],
    6: [-1.52644486584142 + 5.87673060598709j, -1.52644486584142 - 5.87673060598709j,
        -0.00406690076970, -16.08537123098026],
    7: [-2.13875644258362 + 7.19525913329805j, -2.13875644258362 - 7.19525913329805j,
        0.10268170574766, -18.15788466125262],
    8: [-2.69348683581097 + 8.46037971396931j, -2.69348683581097 - 8.46037971396931j,
        0.14327879765713, -20.27940894394569],
    9: [-3.21675402252485 + 9.69377351531791j, -3.21675402252485 - 9.69377351531791j,
        0.15790184030917, -22.43788559040858],
    10: [-3.72016840437287 + 10.90681139476287j, -3.72016840437287 - 10.90681139476287j,
         0.16105338653172, -24.62459635017404],
}
WEAVE_SPEED = 4.29238253634111
CAPSIZE_SPEED = 6.02426201538837


@pytest.fixture(scope="module")
def bike():
    return Bicycle()


def published_state_matrix(v):
    Minv = np.linalg.inv(M_PUB)
    return np.block([[np.zeros((2, 2)), np.eye(2)],
                     [-Minv @ (G * K0_PUB + v * v * K2_PUB), -v * Minv @ C1_PUB]])


@pytest.mark.parametrize("speed", range(11))
def test_linearised_nonlinear_model_is_the_published_state_matrix(bike, speed):
    A, error = bike.linearized(float(speed))
    expected = published_state_matrix(speed)
    assert np.max(np.abs(A - expected)) < 1e-12 * max(1.0, np.max(np.abs(expected)))
    # the error estimate is small and the difference within a small multiple of it
    assert np.max(error) < 1e-9 * np.max(np.abs(expected))


@pytest.mark.parametrize("speed", range(11))
def test_eigenvalues_match_table_2_to_1e_8(bike, speed):
    lam, error = bike.eigenvalues(float(speed))
    assert paired_distance(TABLE2[speed], lam) < 1e-8
    assert paired_distance(lam, TABLE2[speed]) < 1e-8
    assert error < 1e-9


def test_weave_and_capsize_speeds_to_1e_8_relative(bike):
    weave, capsize = bike.self_stable_speeds()
    assert abs(weave - WEAVE_SPEED) < 1e-8 * WEAVE_SPEED
    assert abs(capsize - CAPSIZE_SPEED) < 1e-8 * CAPSIZE_SPEED
    # stable between them, unstable just outside
    for v, stable in ((weave - 0.05, False), (0.5 * (weave + capsize), True),
                      (capsize + 0.05, False)):
        assert (np.max(bike.eigenvalues(v)[0].real) < 0) == stable


def random_state(bike, rng):
    q, v = bike.state(speed=rng.uniform(1, 6), roll=rng.uniform(-0.4, 0.4),
                      steer=rng.uniform(-0.6, 0.6), roll_rate=rng.uniform(-1, 1),
                      steer_rate=rng.uniform(-2, 2), yaw=rng.uniform(-3, 3),
                      position=rng.uniform(-5, 5, 2))
    q[5], q[7] = rng.uniform(-3, 3, 2)  # the wheels' angles
    return q, v


def mass_matrix(bike, q):
    return bike.tree.mass_matrix_and_bias(q, np.zeros(8))[0]


@pytest.mark.parametrize("seed", range(3))
def test_bias_is_lagranges_from_finite_differences_of_the_mass_matrix(bike, seed):
    """h - grad V = (dM/dt) v - dT/dq, with dM/dq_j by central differences (independent of
    the recursive bias accelerations)."""
    rng = np.random.default_rng(seed)
    q, v = random_state(bike, rng)
    v = v + rng.normal(size=8)  # off the constraints too: the identity holds for any v
    M, h = bike.tree.mass_matrix_and_bias(q, v)
    grad_V = bike.tree.mass_matrix_and_bias(q, np.zeros(8))[1]
    eps = 1e-6
    dM = []
    for j in range(8):
        d = np.zeros(8)
        d[j] = eps
        dM.append((mass_matrix(bike, q + d) - mass_matrix(bike, q - d)) / (2 * eps))
    Mdot_v = sum(dM[j] * v[j] for j in range(8)) @ v
    dT = np.array([0.5 * v @ dM[j] @ v for j in range(8)])
    expected = Mdot_v - dT
    assert np.max(np.abs((h - grad_V) - expected)) < 1e-7 * max(1.0, np.max(np.abs(expected)))
    # and grad V against differences of the potential energy (energy at v = 0)
    fd = np.array([(bike.energy(q + e, np.zeros(8)) - bike.energy(q - e, np.zeros(8))) / 2e-6
                   for e in 1e-6 * np.eye(8)])
    assert np.max(np.abs(grad_V - fd)) < 1e-6 * np.max(np.abs(fd))
    # the energy's kinetic part is 1/2 v.M v
    assert bike.energy(q, v) - bike.energy(q, np.zeros(8)) == pytest.approx(0.5 * v @ M @ v,
                                                                             rel=1e-13)


@pytest.mark.parametrize("seed", range(3))
def test_constraint_rows_and_bias_against_finite_differences(bike, seed):
    rng = np.random.default_rng(10 + seed)
    q, v = random_state(bike, rng)
    A, b = bike.tree.constraints(q, v)
    # the front wheel's vertical row is the gradient of its gap
    eps = 1e-6
    grad_gap = np.array([(bike.tree.gaps(q + e)[1] - bike.tree.gaps(q - e)[1]) / (2 * eps)
                         for e in eps * np.eye(8)])
    assert np.max(np.abs(A[4] - grad_gap)) < 1e-8
    # b = d/dt (A(q) v) along the motion with dv/dt = 0
    Av = [bike.tree.constraints(q + s * v, v)[0] @ v for s in (eps, -eps)]
    assert np.max(np.abs(b - (Av[0] - Av[1]) / (2 * eps))) < 1e-6 * max(1.0, np.abs(b).max())
    # the rear contact is kept by the tree: its gap is zero in every configuration
    assert abs(bike.tree.gaps(q)[0]) < 1e-15


def test_state_is_consistent(bike):
    q, v = bike.state(speed=4.0, roll=0.2, steer=-0.3, roll_rate=0.5, steer_rate=1.0, yaw=1.0,
                      position=(2.0, -1.0))
    assert bike.residuals(q, v)[0] < 1e-13 and bike.residuals(q, v)[1] < 1e-15
    assert q[ROLL] == 0.2 and q[STEER] == -0.3
    assert v[0] * np.cos(1.0) + v[1] * np.sin(1.0) == pytest.approx(4.0, rel=1e-14)
    # upright and straight: no pitch, and the pitch is even in (roll, steer)
    assert bike.pitch(0.0, 0.0) == 0.0
    assert bike.pitch(0.1, 0.2) == pytest.approx(bike.pitch(-0.1, -0.2), abs=1e-16)


def test_reference_run_keeps_energy_and_constraints(bike):
    traj = nhphys.simulate(bike, 2.0, 0.01, integrator=nhphys.integrators.Reference(
        rtol=1e-10, atol=1e-12), speed=4.0, roll=0.05, steer_rate=0.5)
    assert np.max(np.abs(traj.energy - traj.energy[0])) < 1e-10 * traj.energy[0]
    assert np.max(traj.constraint_residual) < 1e-9


def weave_fit(traj):
    """(rate, frequency) of the weave from roll and steer over the whole run: the model is the
    linear one's four modes, the weave pair, capsize and castering, with the rates free."""
    from scipy.optimize import least_squares

    t = traj.t

    def residual(p):
        sigma, omega, capsize, caster = p
        basis = np.column_stack([np.exp(sigma * t) * np.cos(omega * t),
                                 np.exp(sigma * t) * np.sin(omega * t),
                                 np.exp(capsize * t), np.exp(caster * t)])
        out = []
        for signal in (traj.roll, traj.steer):
            coef = np.linalg.lstsq(basis, signal, rcond=None)[0]
            out.append((basis @ coef - signal) / np.max(np.abs(signal)))
        return np.concatenate(out)

    fit = least_squares(residual, [-0.7, 4.4, -0.3, -14.0], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    return fit.x[0], fit.x[1]


@pytest.mark.slow
def test_lean_perturbation_at_5_m_s_decays_at_the_weave_eigenvalue(bike):
    """A 0.01 rad lean at 5 m/s over 10 s: the fitted weave rate and frequency are those of the
    linear eigenvalue to 1e-3; ten times smaller, the difference is about 100 times smaller
    (it is the cubic terms' effect, the bicycle being mirror-symmetric)."""
    weave = TABLE2[5][0]
    errors = []
    for lean in (0.01, 0.001):
        traj = nhphys.simulate(bike, 10.0, 0.01, integrator=nhphys.integrators.Reference(
            rtol=1e-11, atol=1e-13), speed=5.0, roll=lean)
        rate, frequency = weave_fit(traj)
        errors.append(max(abs(rate / weave.real - 1), abs(frequency / weave.imag - 1)))
    assert errors[0] < 1e-3
    assert errors[1] < 3e-5


@pytest.mark.parametrize("parameters, match", [
    ({"wheel_base": 1.0}, "Unknown bicycle parameter"),
    ({"rear_frame_mass": -1.0}, "rear_frame_mass"),
    ({"front_wheel_radius": 0.0}, "front_wheel_radius"),
    ({"rear_frame_inertia": [[1, 0, 0], [0, 1, 0], [0, 0, 5]]}, "inertia of a body"),
    ({"rear_wheel_inertia": (0.01, 0.12)}, "I_yy <= 2 I_xx"),
    ({"front_frame_com": (0.9, 0.1)}, "above the ground"),
    ({"steer_axis_tilt": 2.0}, "steer_axis_tilt"),
])
def test_bad_parameters_are_refused(parameters, match):
    with pytest.raises(ValueError, match=match):
        Bicycle(parameters)


def test_bad_states_are_refused(bike):
    with pytest.raises(ValueError, match="roll"):
        bike.state(roll=1.7)
    with pytest.raises(ValueError, match="speed"):
        bike.state(speed=float("nan"))
    with pytest.raises(ValueError, match="position"):
        bike.state(position=(1.0, 2.0, 3.0))
    with pytest.raises(TypeError, match="Unexpected initial condition `sped` for Bicycle.*looks like `speed`"):
        nhphys.simulate(bike, 0.1, 0.01, integrator="reference", sped=1.0)
    with pytest.raises(TypeError, match="Bicycle.state"):
        nhphys.simulate(bike, 0.1, 0.01, integrator="dla", q=np.zeros(8))


def test_pitch_is_the_front_contact(bike):
    q = np.zeros(8)
    q[ROLL], q[STEER] = 0.3, 0.5
    q[PITCH] = bike.pitch(0.3, 0.5)
    assert abs(bike.tree.gaps(q)[1]) < 1e-15
