"""A wheel (a torus) lying flat on a plane ("A ring" in :mod:`nhphys.twins.face`, "Lying flat"
in :mod:`nhphys.twins.modes`): the ring's friction against a quadrature and the elliptic
integrals against scipy's, its slide and spin against closed forms, and a wheel that falls
flat, lands and comes to rest, against the mode-by-mode reference; on the kernel and on the
twin."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ellipe, ellipkm1
from scipy.spatial.transform import Rotation

import nhphys
from nhphys.integrators import Reference
from nhphys.shapes import Wheel
from nhphys.surfaces import Plane
from nhphys.systems import RollingBody
from nhphys.twins import face as twin_face
from nhphys.twins import modes as spec

G = 9.81
M, R, TUBE = 2.0, 0.3, 0.03
TYRE = nhphys.RigidBody(M, Wheel.solid_inertia(M, R, TUBE), Wheel(R, TUBE))
I_AXIS = Wheel.solid_inertia(M, R, TUBE)[2]


def ring_friction(backend):
    if backend == "python":
        return twin_face.ring_friction
    from nhphys_ext.rolling import ring_friction_py

    def kernel(v, w, n, radius, normal_force, mu, hint=None):
        F, T = ring_friction_py(v, w, n, radius, normal_force, mu, hint)
        return np.array(F), T
    return kernel


def test_the_elliptic_integrals_match_scipy():
    for k_prime in (1e-6, 0.01, 0.3, 0.7, 0.99, 1.0):
        K, E = twin_face.elliptic_ke(k_prime)
        assert K == pytest.approx(ellipkm1(k_prime**2), rel=2e-15)  # (1 - m given exactly)
        assert E == pytest.approx(ellipe(1.0 - k_prime**2), rel=2e-15)


@pytest.mark.parametrize("ratio", [0.0, 0.2, 0.499, 0.5, 0.9, 0.999, 1.0, 1.3, 2.0, 2.001, 5.0,
                                   1e4])
@pytest.mark.parametrize("w", [5.0, -3.0])
def test_ring_friction_matches_a_quadrature(backend, ratio, w):
    """The force and torque on a ring of radius 0.3 (N = 2, mu = 0.4) spinning at ``w`` with
    its instantaneous centre ``ratio R`` from its centre, against scipy's quad round the ring;
    the plane tilted for ``w < 0``."""
    friction = ring_friction(backend)
    N, mu = 2.0, 0.4
    tilt = Rotation.from_rotvec([0.3, -0.2, 0.0]).as_matrix() if w < 0 else np.eye(3)
    n = tilt @ [0.0, 0.0, 1.0]
    c = ratio * R * (tilt @ np.array([np.cos(0.7), np.sin(0.7), 0.0]))
    v = -w * np.cross(n, c)  # the centre's velocity whose instantaneous centre is c
    assert np.allclose(np.cross(n, v) / w, c)

    def density(phi, k):
        r = R * (tilt @ np.array([np.cos(phi), np.sin(phi), 0.0]))
        u = v + w * np.cross(n, r)
        d = u / np.linalg.norm(u)
        return (*(-d), -np.cross(r, d) @ n)[k] * mu * N / (2 * np.pi)

    kink = [0.7] if ratio == 1.0 else None  # the centre on the ring: the slip's zero
    want = [quad(density, 0.7 - np.pi, 0.7 + np.pi, args=(k,), points=kink, epsabs=1e-14,
                 epsrel=1e-12, limit=400)[0] for k in range(4)]
    F, T = friction(v, w, n, R, N, mu)
    np.testing.assert_allclose(F, want[:3], rtol=0, atol=1e-11)
    assert T == pytest.approx(want[3], abs=1e-11)


def test_ring_friction_limits(backend):
    friction = ring_friction(backend)
    n = np.array([0.0, 0.0, 1.0])
    F, T = friction(np.zeros(3), 3.0, n, R, 2.0, 0.5)  # a pure spin: the largest torque
    np.testing.assert_allclose(F, 0.0, atol=1e-16)
    assert T == pytest.approx(-0.5 * 2.0 * R, rel=1e-15)
    F, T = friction(np.array([0.3, 0.4, 0.0]), 0.0, n, R, 2.0, 0.5)  # a pure slide
    np.testing.assert_allclose(F, [-0.6, -0.8, 0.0], rtol=1e-15)
    assert T == 0.0


def flat_system(mu):
    return RollingBody(TYRE, Plane(), lift_off=True, mu=mu)


def test_a_wheel_lying_flat_slides_and_spins_to_the_closed_form_stops(backend):
    mu = 0.4
    slide = nhphys.simulate(flat_system(mu), 0.5, 1e-3, backend=backend, velocity0=[1.0, 0, 0])
    (stop,) = slide.events
    assert stop["kind"] == "stick" and stop["after"] == "flat"
    assert stop["t"] == pytest.approx(1.0 / (mu * G), rel=1e-12)
    spin = nhphys.simulate(flat_system(mu), 0.5, 1e-3, backend=backend, omega0=[0, 0, 3.0])
    (stop,) = spin.events
    # the ring's friction torque is mu N R: it stops at I_a w0 / (mu m g R)
    assert stop["t"] == pytest.approx(I_AXIS * 3.0 / (mu * M * G * R), rel=1e-12)
    np.testing.assert_allclose(spin.position[-1], spin.position[0], atol=1e-15)
    for traj in (slide, spin):
        assert set(traj.mode.tolist()) == {spec.FACE}
        np.testing.assert_allclose(traj.position[:, 2], TUBE, atol=1e-15)
        assert np.ptp(traj.energy - traj.work) < 1e-13


def test_a_wheel_lying_flat_is_held_by_a_gentle_slope_and_slides_down_a_steep_one(backend):
    mu = 0.4
    for alpha, slides in ((0.3, False), (0.5, True)):
        normal = [0.0, -np.sin(alpha), np.cos(alpha)]
        traj = nhphys.simulate(RollingBody(TYRE, Plane(normal=normal), lift_off=True, mu=mu),
                               0.2, 1e-3, backend=backend, R0=Rotation.from_rotvec(
                                   [alpha, 0.0, 0.0]).as_matrix())
        speed = np.linalg.norm(traj.velocity[-1])
        if slides:
            assert speed == pytest.approx(G * (np.sin(alpha) - mu * np.cos(alpha)) * 0.2,
                                          rel=1e-12)
        else:
            assert speed == 0.0


@pytest.mark.parametrize("mu", [np.inf, 0.6])
def test_a_wheel_falls_flat_lands_and_comes_to_rest(backend, mu):
    start = {"R0": Rotation.from_rotvec([0.4, 0.0, 0.0]).as_matrix()}
    traj = nhphys.simulate(flat_system(mu), 0.4, 1e-3, backend=backend, **start)
    kinds = [e["kind"] for e in traj.events]
    assert kinds[-1] == ("fall flat" if mu == np.inf else "stick")
    fall = traj.events[kinds.index("fall flat")]
    assert fall["after"] == "flat" and fall["energy_change"] < 0.0
    k = np.searchsorted(traj.t, fall["t"]) + 1
    assert np.all(traj.mode[k:] == spec.FACE)
    np.testing.assert_allclose(traj.position[k:, 2], TUBE, atol=1e-15)  # on its tube
    np.testing.assert_allclose(np.abs(traj.R[k:, 2, 2]), 1.0, atol=1e-15)  # flat
    assert np.all(traj.velocity[-1] == 0.0)
    assert np.ptp((traj.energy - traj.work)[k:]) < 1e-13


def test_a_wheel_falling_flat_against_the_reference():
    """The located events of a wheel that sticks, slips, falls flat and stops (h = 1e-3 and
    5e-4) against the mode-by-mode reference; the fall converges at second order."""
    start = {"R0": Rotation.from_rotvec([0.4, 0.0, 0.0]).as_matrix()}
    system = flat_system(0.6)
    ref = nhphys.simulate(system, 0.3, 1e-3, integrator=Reference(rtol=1e-11, atol=1e-13),
                          **start)
    assert [e["kind"] for e in ref.events] == ["stick", "slip", "fall flat", "stick"]
    errors = []
    for h in (1e-3, 5e-4):
        traj = nhphys.simulate(system, 0.3, h, backend="cython", **start)
        assert [e["kind"] for e in traj.events] == [e["kind"] for e in ref.events]
        errors.append(abs(traj.events[2]["t"] - ref.events[2]["t"]))
        assert abs(traj.events[3]["t"] - ref.events[3]["t"]) < 1e-5
    assert errors[0] < 1e-6 and 3.0 < errors[0] / errors[1] < 5.0


def test_a_wheel_dropped_nearly_flat_lands_on_its_tube(backend):
    tilt, height = 0.005, 0.05
    R0 = Rotation.from_rotvec([tilt, 0.0, 0.0]).as_matrix()
    traj = nhphys.simulate(flat_system(0.4), 0.2, 1e-3, backend=backend, R0=R0, height=height)
    (landing,) = traj.events
    assert (landing["kind"], landing["after"]) == ("touchdown", "flat")
    # its lowest point (on the tube, below the lowest point of its circle) falls `height`
    assert landing["t"] == pytest.approx(np.sqrt(2 * height / G), rel=1e-12)
    assert traj.position[-1, 2] == pytest.approx(TUBE, abs=1e-15)


@pytest.mark.parity
def test_kernel_and_twin_agree_through_a_wheel_falling_flat():
    runs = [nhphys.simulate(flat_system(0.6), 0.3, 1e-3, backend=b, **SPINNING_FALL)
            for b in ("cython", "python")]
    assert [e["kind"] for e in runs[0].events] == [e["kind"] for e in runs[1].events]
    assert "fall flat" in [e["kind"] for e in runs[0].events]
    for e0, e1 in zip(runs[0].events, runs[1].events):
        assert abs(e0["t"] - e1["t"]) < 1e-10
    for key in ("R", "position", "velocity", "omega", "work"):
        np.testing.assert_allclose(runs[0][key], runs[1][key], rtol=0, atol=1e-10)


SPINNING_FALL = {"R0": Rotation.from_rotvec([0.4, 0.0, 0.0]).as_matrix(), "omega0": [0, 0, 0.3]}


def test_a_spinning_wheel_falls_flat_slides_and_spins_to_rest(backend):
    """Turning as it falls, it lands sliding and spinning (the ring's elliptic and
    trapezoidal branches in the run), and both stop together."""
    traj = nhphys.simulate(flat_system(0.6), 0.4, 1e-3, backend=backend, **SPINNING_FALL)
    kinds = [e["kind"] for e in traj.events]
    assert kinds[-2:] == ["fall flat", "stick"]
    k = np.searchsorted(traj.t, traj.events[-2]["t"]) + 1
    spin = np.einsum("nij,nj->ni", traj.R, traj.omega)[:, 2]
    assert abs(spin[k]) > 0.1 and np.linalg.norm(traj.velocity[k]) > 0.1
    assert np.all(traj.velocity[-1] == 0.0) and spin[-1] == 0.0
    # on its tube, sliding and spinning, energy - work holds to second order (the trapezoidal
    # rule on the friction's power, which varies as the slide and the spin change together)
    halved = nhphys.simulate(flat_system(0.6), 0.4, 5e-4, backend=backend, **SPINNING_FALL)
    j = np.searchsorted(halved.t, halved.events[-2]["t"]) + 1
    drifts = [np.ptp((traj.energy - traj.work)[k:]), np.ptp((halved.energy - halved.work)[j:])]
    assert drifts[0] < 1e-5 and 3.0 < drifts[0] / drifts[1] < 5.0
    # the stop, where the slide and the spin die out together, within a tenth of a step of the
    # stop at an eighth of the step (the slide does not linger past it)
    fine = nhphys.simulate(flat_system(0.6), 0.4, 1.25e-4, backend=backend, **SPINNING_FALL)
    assert abs(traj.events[-1]["t"] - fine.events[-1]["t"]) < 1e-4
    assert abs(traj.events[-1]["energy_change"]) < 1e-5  # what was left: a little


def test_a_ring_sliding_and_spinning_converges_to_its_equations():
    """A wheel lying flat, launched sliding and spinning against each other: its centre's
    velocity and spin at 0.1 s against scipy's DOP853 on the planar equations with the ring's
    friction by quadrature (independent of the closed form), at second order in the step."""
    from scipy.integrate import solve_ivp

    mu, N = 0.4, M * G
    n = np.array([0.0, 0.0, 1.0])

    def friction(v, w):
        def part(phi, k):
            r = R * np.array([np.cos(phi), np.sin(phi), 0.0])
            u = v + w * np.cross(n, r)
            d = u / np.linalg.norm(u)
            return (-d[0], -d[1], -np.cross(r, d)[2])[k] * mu * N / (2 * np.pi)
        return [quad(part, -np.pi, np.pi, args=(k,), epsabs=1e-13, epsrel=1e-12,
                     limit=200)[0] for k in range(3)]

    def rhs(t, y):
        Fx, Fy, T = friction(np.array([y[0], y[1], 0.0]), y[2])
        return [Fx / M, Fy / M, T / I_AXIS]

    exact = solve_ivp(rhs, (0.0, 0.1), [1.0, 0.0, -5.0], method="DOP853", rtol=1e-11,
                      atol=1e-12).y[:, -1]
    errors = []
    for h in (1e-3, 5e-4):
        traj = nhphys.simulate(flat_system(mu), 0.1, h, backend="cython",
                               velocity0=[1.0, 0.0, 0.0], omega0=[0.0, 0.0, -5.0])
        got = np.array([*traj.velocity[-1, :2], (traj.R[-1] @ traj.omega[-1])[2]])
        errors.append(np.max(np.abs(got - exact)))
    assert errors[0] < 1e-5
    assert 3.5 < errors[0] / errors[1] < 4.5


def test_a_ring_holds_a_torque_a_face_could_not(backend):
    """Lying flat at rest under a torque about the normal between a face's largest friction
    torque, (2/3) mu N R, and a ring's, mu N R: the wheel stays."""
    from nhphys import forces as fe

    mu = 0.4
    tau = 0.8 * mu * M * G * R
    held = nhphys.simulate(RollingBody(TYRE, Plane(), lift_off=True, mu=mu,
                                       forces=[fe.Torque([0.0, 0.0, tau])]),
                           0.1, 1e-3, backend=backend)
    assert held.events == [] and np.all(held.omega == 0.0)
    turns = nhphys.simulate(RollingBody(TYRE, Plane(), lift_off=True, mu=mu,
                                        forces=[fe.Torque([0.0, 0.0, 1.2 * mu * M * G * R])]),
                            0.1, 1e-3, backend=backend)
    # past mu N R it spins up at (tau - mu N R) / I_a, its centre held
    np.testing.assert_allclose(turns.omega[-1, 2], 0.2 * mu * M * G * R / I_AXIS * 0.1,
                               rtol=1e-12)


def test_the_lowest_point_of_a_wheel_is_the_lowest_point_of_the_torus():
    """``lowest_point`` against a brute-force minimum over the torus's surface, at attitudes
    from flat to upright."""
    system = flat_system(0.4)
    model = spec.Model(*system._twins(), None, None, M, system.inertia, system.inertia_inv, G,
                       system.up, system.support_shape, 0.0, 0.4, 0, 1e-14, 50, 0,
                       face=(R, TYRE.shape.flat_angle, TUBE, 1.0))
    n = np.array([0.0, 0.0, 1.0])
    theta, phi = np.meshgrid(np.linspace(0, 2 * np.pi, 721), np.linspace(0, 2 * np.pi, 721))
    surface = np.stack([(R + TUBE * np.cos(phi)) * np.cos(theta),
                        (R + TUBE * np.cos(phi)) * np.sin(theta), TUBE * np.sin(phi)], -1)
    for angle in (0.0, 0.003, 0.2, 0.9, 1.5):
        A = Rotation.from_rotvec([angle, 0.3 * angle, 0.0]).as_matrix()
        s = spec.lowest_point(model, A, n)
        heights = (surface @ A.T)[..., 2]
        assert (A @ s)[2] <= heights.min() + 1e-12
        assert (A @ s)[2] >= heights.min() - 1e-4  # the grid's resolution
        assert abs(np.hypot(np.hypot(s[0], s[1]) - R, s[2]) - TUBE) < 1e-15  # on the tube
