"""A thin disk lying flat on a plane (:mod:`nhphys.twins.face` and "Lying flat" in
:mod:`nhphys.twins.modes`): the face friction against a two-dimensional quadrature, the sliding
and spinning face against closed forms, and a disk that falls flat, lands and comes to rest,
against the mode-by-mode reference; on the kernel and on the twin."""

import numpy as np
import pytest
from scipy.integrate import dblquad

import nhphys
from nhphys.errors import ContactEvent
from nhphys.integrators import Reference, Retraction
from nhphys.scenes.euler_disk import leaning
from nhphys.shapes import Cylinder, Disk
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import RollingBody
from nhphys.twins import face as twin_face

G = 9.81
M_PUCK, R_PUCK = 0.17, 0.038
PUCK = nhphys.RigidBody(M_PUCK, Disk.solid_inertia(M_PUCK, R_PUCK), Disk(R_PUCK))
M_COIN, R_COIN = 1.0, 0.1
COIN = nhphys.RigidBody(M_COIN, Disk.solid_inertia(M_COIN, R_COIN), Disk(R_COIN))
COIN_START = {"R0": leaning(np.radians(60.0)),
              "omega0": leaning(np.radians(60.0)).T @ [0.0, 0.0, 2.0] + [0.0, 3.0, 0.0]}


def face_friction(backend):
    if backend == "python":
        return twin_face.face_friction
    from nhphys_ext.rolling import face_friction_py

    def kernel(v, w, n, radius, normal_force, mu, hint=None):
        F, T = face_friction_py(v, w, n, radius, normal_force, mu, hint)
        return np.array(F), T
    return kernel


@pytest.fixture(scope="module")
def quadrature():
    """The force (2,) and torque on a face of radius 0.1 (N = 2, mu = 0.3) spinning at 5 rad/s
    with its centre at ``ratio R w`` along the angle 0.7, by scipy's dblquad over the face."""
    R, N, mu, w = 0.1, 2.0, 0.3, 5.0
    n = np.array([0.0, 0.0, 1.0])
    out = {}
    for ratio in (0.3, 0.653, 1.0, 1.5, 10.0):
        v = ratio * R * w * np.array([np.cos(0.7), np.sin(0.7), 0.0])

        def density(rho, th, k, v=v):
            r = rho * np.array([np.cos(th), np.sin(th), 0.0])
            u = v + w * np.cross(n, r)
            d = u / np.linalg.norm(u)
            return (-d[0], -d[1], -np.cross(r, d)[2])[k] * rho

        parts = [dblquad(density, 0.0, 2 * np.pi, 0.0, R, args=(k,), epsabs=1e-13,
                         epsrel=1e-11)[0] * mu * N / (np.pi * R * R) for k in range(3)]
        out[ratio] = (v, np.array(parts[:2]), parts[2])
    return out


def test_the_face_friction_equals_a_two_dimensional_quadrature(backend, quadrature):
    friction = face_friction(backend)
    R, N, mu, w = 0.1, 2.0, 0.3, 5.0
    for ratio, (v, F_ref, T_ref) in quadrature.items():
        F, T = friction(v, w, np.array([0.0, 0.0, 1.0]), R, N, mu)
        # the instantaneous centre on the rim (ratio 1) is the slowest case (module docstring)
        tol = 1e-8 if ratio == 1.0 else 1e-11
        assert np.abs(F[:2] - F_ref).max() <= tol * mu * N, ratio
        assert abs(F[2]) <= 1e-15 * mu * N
        assert abs(T - T_ref) <= tol * mu * N * R, ratio


def test_the_face_friction_has_the_closed_forms_of_pure_spin_and_pure_translation(backend):
    friction = face_friction(backend)
    n = np.array([0.0, 0.6, 0.8])
    F, T = friction(np.zeros(3), -4.0, n, 0.2, 3.0, 0.5)
    assert np.abs(F).max() <= 1e-15 and T == pytest.approx(2.0 / 3.0 * 0.5 * 3.0 * 0.2,
                                                          rel=1e-14)
    v = np.array([1.0, 0.8, -0.6])
    F, T = friction(v, 0.0, n, 0.2, 3.0, 0.5)
    assert np.allclose(F, -1.5 * v / np.linalg.norm(v), rtol=0, atol=1e-15) and T == 0.0
    F, _ = friction(np.zeros(3), 0.0, n, 0.2, 3.0, 0.5, hint=np.array([1.0, 0.0, 0.0]))
    assert np.array_equal(F, [-1.5, 0.0, 0.0])


def puck(mu=0.2, ground=None):
    return RollingBody(PUCK, ground or Plane(), lift_off=True, mu=mu, gravity=G)


def stops(traj):
    return [e for e in traj.events if e["kind"] == "stick"]


def test_a_sliding_puck_stops_at_the_closed_form_time_and_distance(backend):
    mu, velocity = 0.2, np.array([1.0, 0.5, 0.0])
    traj = nhphys.simulate(puck(mu), 1.0, 1e-3, backend=backend, velocity0=velocity)
    speed = np.linalg.norm(velocity)
    (stop,) = stops(traj)
    assert stop["t"] == pytest.approx(speed / (mu * G), rel=1e-12)
    assert traj.position[-1] == pytest.approx(velocity / speed * speed**2 / (2 * mu * G),
                                              rel=1e-12)
    assert np.all(traj.mode == 3) and np.all(traj.velocity[-1] == 0.0)
    assert np.abs(traj.omega).max() == 0.0  # no spin: the friction has no torque


def test_a_spinning_puck_stops_at_the_closed_form_time_without_moving(backend):
    mu, spin = 0.2, 20.0
    traj = nhphys.simulate(puck(mu), 0.5, 1e-3, backend=backend, omega0=[0.0, 0.0, spin])
    (stop,) = stops(traj)
    # T = -(2/3) mu m g R and I = m R^2 / 2: the spin falls at (4/3) mu g / R
    assert stop["t"] == pytest.approx(3 * R_PUCK * spin / (4 * mu * G), rel=1e-12)
    assert np.abs(traj.position).max() <= 1e-11
    assert np.all(traj.omega[-1] == 0.0)


def test_a_puck_that_slides_and_spins_stops_both_at_once(backend):
    traj = nhphys.simulate(puck(0.2), 0.6, 1e-3, backend=backend, omega0=[0.0, 0.0, 20.0],
                           velocity0=[0.5, 0.0, 0.0])
    (stop,) = stops(traj)
    energy0 = 0.5 * M_PUCK * 0.5**2 + 0.5 * PUCK.inertia[2, 2] * 20.0**2  # kinetic
    # the sliding and the spin die together: what is left at the located stop is round-off
    assert abs(stop["energy_change"]) <= 1e-8 * energy0
    assert 0.2 < stop["t"] < 0.6
    after = traj.t > stop["t"]
    assert np.all(traj.velocity[after] == 0.0) and np.all(traj.omega[after] == 0.0)
    balance = traj.energy - traj.work
    assert np.ptp(balance) <= 1e-9 * energy0
    assert traj.contact_residual.max() <= 1e-15


def test_a_face_slide_converges_at_second_order_to_the_reference(backend):
    system = puck(0.2)
    start = {"omega0": [0.0, 0.0, 20.0], "velocity0": [0.3, 0.2, 0.0]}
    ref = nhphys.simulate(system, 0.2, 1e-2, integrator=Reference(1e-12, 1e-14), **start)
    errors = []
    for dt in (2e-3, 1e-3, 5e-4):
        traj = nhphys.simulate(system, 0.2, dt, backend=backend,
                               save_every=round(1e-2 / dt), **start)
        errors.append(max(np.abs(traj.position[-1] - ref.position[-1]).max(),
                          np.abs(traj.R[-1] - ref.R[-1]).max() * R_PUCK))
    assert 3.5 < errors[0] / errors[1] < 4.5 and 3.5 < errors[1] / errors[2] < 4.5, errors


@pytest.mark.parametrize("slope, mu, moves", [(0.3, 0.2, True), (0.3, 0.4, False)])
def test_a_puck_on_an_incline_slides_down_or_stays_as_the_friction_says(backend, slope, mu,
                                                                       moves):
    normal = [0.0, -np.sin(slope), np.cos(slope)]
    tilt = np.array([[1, 0, 0], [0, np.cos(slope), -np.sin(slope)],
                     [0, np.sin(slope), np.cos(slope)]])
    traj = nhphys.simulate(puck(mu, Plane(normal=normal)), 0.5, 1e-3, backend=backend,
                           R0=tilt)
    downhill = np.array([0.0, -np.cos(slope), -np.sin(slope)])
    if moves:  # from rest down the slope at g (sin - mu cos)
        a = G * (np.sin(slope) - mu * np.cos(slope))
        assert traj.velocity[-1] == pytest.approx(a * 0.5 * downhill, rel=1e-12, abs=1e-14)
        assert traj.position[-1] == pytest.approx(0.5 * a * 0.25 * downhill, rel=1e-12,
                                                  abs=1e-14)
    else:
        assert np.all(traj.velocity == 0.0) and np.all(traj.position == 0.0)
    assert not traj.events


def coin(mu):
    return RollingBody(COIN, Plane(), lift_off=True, mu=mu)


@pytest.mark.parametrize("mu", [np.inf, 0.3])
def test_a_coin_falls_flat_lands_and_comes_to_rest(backend, mu):
    traj = nhphys.simulate(coin(mu), 0.4, 1e-3, backend=backend, **COIN_START)
    kinds = [e["kind"] for e in traj.events]
    fall = traj.events[kinds.index("fall flat")]
    assert fall["after"] == "flat" and 0.08 < fall["t"] < 0.09
    assert kinds[-1] == "stick" if np.isfinite(mu) else kinds[-1] == "fall flat"
    flat = traj.mode == 3
    assert flat[-1] and np.all(flat[traj.t > fall["t"]])
    # flat on the plane: axis along the normal, centre on the plane, and at rest at the end
    assert np.abs(np.abs(traj.R[flat][:, 2, 2]) - 1).max() <= 1e-15
    assert np.abs(traj.position[flat][:, 2]).max() <= 1e-16
    assert np.all(traj.velocity[-1] == 0.0) and np.all(traj.omega[-1] == 0.0)
    # the landing's energy change is in the work: energy - work is the same on both sides
    balance = traj.energy - traj.work
    landed = np.flatnonzero(flat)[0]
    assert abs(balance[landed] - balance[landed - 1]) <= 2e-4  # the rolling step's error
    assert np.ptp(balance[flat]) <= 1e-6 * traj.energy[0]
    if not np.isfinite(mu):  # a rough face stops at once
        assert np.all(traj.velocity[flat] == 0.0)


def test_a_fall_and_the_slide_after_it_converge_to_the_reference(backend):
    system, t_final = coin(0.3), 0.3
    ref = nhphys.simulate(system, t_final, 1e-3, integrator=Reference(1e-11, 1e-13),
                          **COIN_START)
    ref_fall = [e["t"] for e in ref.events if e["kind"] == "fall flat"][0]
    errors, falls = [], []
    for dt in (5e-4, 2.5e-4):
        traj = nhphys.simulate(system, t_final, dt, backend=backend,
                               save_every=round(1e-3 / dt), **COIN_START)
        falls.append([e["t"] for e in traj.events if e["kind"] == "fall flat"][0] - ref_fall)
        errors.append(np.abs(traj.position[-1] - ref.position[-1]).max())
    assert abs(falls[1]) < 1e-7 and abs(falls[0]) < 5e-7
    assert 3.0 < errors[0] / errors[1] < 5.0, errors


@pytest.mark.parity
def test_kernel_and_twin_agree_through_the_fall_and_the_stop():
    def run(backend):
        return nhphys.simulate(coin(0.3), 0.25, 1e-3, backend=backend, **COIN_START)

    kernel, twin = run("cython"), run("python")
    assert [e["kind"] for e in kernel.events] == [e["kind"] for e in twin.events]
    for a, b in zip(kernel.events, twin.events):
        assert abs(a["t"] - b["t"]) <= 1e-10
    for name in ("position", "velocity", "omega"):
        assert np.abs(getattr(kernel, name) - getattr(twin, name)).max() <= 1e-10, name


@pytest.mark.parametrize("start, match", [
    ({"omega0": [1.0, 0.0, 0.0]}, "in the ground's plane only"),
    ({"velocity0": [0.0, 0.0, 1.0]}, "in the ground's plane only"),
])
def test_bad_flat_starts_are_refused(start, match):
    with pytest.raises(ValueError, match=match):
        nhphys.simulate(puck(0.2), 0.01, 1e-3, **start)
    with pytest.raises(ValueError, match="rough face cannot slide"):
        nhphys.simulate(puck(np.inf), 0.01, 1e-3, omega0=[0.0, 0.0, 5.0])


def test_a_disk_that_cannot_lie_flat_still_ends_the_run_at_the_fall(backend):
    offset = nhphys.RigidBody(M_COIN, Disk.solid_inertia(M_COIN, R_COIN), Disk(R_COIN),
                              com=[0.02, 0.0, 0.0])
    for body, ground in ((offset, Plane()), (COIN, Sphere(20.0))):
        point = [0.0, 0.0, 20.0] if isinstance(ground, Sphere) else [0.0, 0.0, 0.0]
        system = RollingBody(body, ground, lift_off=True, mu=0.3)
        with pytest.raises(ContactEvent, match="fell flat"):
            nhphys.simulate(system, 0.4, 1e-3, backend=backend, ground_point=point,
                            **COIN_START)


def test_the_documented_example_prints_what_the_docs_say(doc_example):
    """The example of docs/contact-modes.md, "Lying flat", and the output printed there."""
    printed, written = doc_example("## Lying flat")
    got = [[float(x) for x in line.split()] for line in printed]
    want = [[float(x) for x in line.split()] for line in written]
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)


def test_a_coin_dropped_nearly_flat_lands_on_its_face_at_the_closed_form_time(backend):
    tilt, height = 0.005, 0.05  # within the flat angle (0.01 rad): it lands on its face
    R0 = np.array([[1, 0, 0], [0, np.cos(tilt), -np.sin(tilt)], [0, np.sin(tilt), np.cos(tilt)]])
    traj = nhphys.simulate(coin(0.3), 0.2, 1e-3, backend=backend, R0=R0, height=height)
    (landing,) = traj.events
    assert (landing["kind"], landing["before"], landing["after"]) == ("touchdown", "flight",
                                                                       "flat")
    # its lowest point falls `height` in free fall, the attitude unchanged
    assert landing["t"] == pytest.approx(np.sqrt(2 * height / 9.81), rel=1e-12)
    # the fall's speed and the last `tilt` of the fall (turned flat about the rim point) are lost
    lowest = R_COIN * np.sin(tilt)
    assert landing["energy_change"] == pytest.approx(-M_COIN * 9.81 * (height + lowest),
                                                     rel=1e-12)
    assert np.all(traj.mode[traj.t > landing["t"]] == 3)
    assert np.all(traj.velocity[-1] == 0.0) and np.all(traj.omega[-1] == 0.0)


def test_a_tumbling_coin_passes_flat_in_the_air_on_its_parabola(backend):
    v0 = np.array([0.2, 0.0, 2.0])
    traj = nhphys.simulate(coin(0.3), 0.35, 1e-4, backend=backend, height=0.3,
                           omega0=[40.0, 0.0, 0.0], velocity0=v0)
    flying = traj.mode == 1
    first = traj.events[0]["t"] if traj.events else np.inf
    before = traj.t < first
    assert np.all(flying[before]) and first > 0.3
    axis_z = traj.R[before][:, 2, 2]
    assert np.abs(axis_z).max() > np.cos(COIN.shape.flat_angle)  # it turned flat in the air
    # the centre on the parabola of gravity, the gap that of the lowest rim point
    t = traj.t[before]
    a0 = traj.position[0]
    assert np.abs(traj.position[before] - (a0 + np.outer(t, v0)
                                           - 0.5 * 9.81 * np.outer(t**2, [0, 0, 1]))).max() \
        <= 1e-12
    lowest = traj.position[before][:, 2] - R_COIN * np.sqrt(np.maximum(0.0, 1 - axis_z**2))
    assert np.abs(traj.gap[before] - lowest).max() <= 1e-13  # the contact solve's round-off


def test_a_slide_that_turns_back_while_the_spin_goes_on_is_not_a_stop(backend):
    """Thrown up a slope too steep to hold it (0.3 rad, mu = 0.2) with a little spin: the slide
    turns back while the face still spins, so there is no stop, and the run follows the
    Reference's."""
    slope = 0.3
    normal = [0.0, -np.sin(slope), np.cos(slope)]
    tilt = np.array([[1, 0, 0], [0, np.cos(slope), -np.sin(slope)],
                     [0, np.sin(slope), np.cos(slope)]])
    uphill = np.array([0.0, np.cos(slope), np.sin(slope)])
    system = puck(0.2, Plane(normal=normal))
    start = {"R0": tilt, "velocity0": 0.5 * uphill, "omega0": [0.0, 0.0, 0.05]}
    ref = nhphys.simulate(system, 0.3, 1e-2, integrator=Reference(1e-11, 1e-13), **start)
    traj = nhphys.simulate(system, 0.3, 1e-4, backend=backend, save_every=100, **start)
    assert not ref.events and not traj.events
    assert np.abs(traj.velocity[-1] - ref.velocity[-1]).max() <= 2e-5
    assert np.abs(traj.position[-1] - ref.position[-1]).max() <= 5e-6


def test_a_flat_start_that_slides_to_a_stop_matches_the_reference(backend):
    start = {"velocity0": [0.3, 0.2, 0.0], "omega0": [0.0, 0.0, 20.0]}
    ref = nhphys.simulate(puck(0.2), 0.5, 1e-2, integrator=Reference(1e-12, 1e-14), **start)
    traj = nhphys.simulate(puck(0.2), 0.5, 2.5e-4, backend=backend, save_every=40, **start)
    ((ref_stop,), (stop,)) = stops(ref), stops(traj)
    assert abs(stop["t"] - ref_stop["t"]) <= 2e-5  # measured 8.1e-6
    assert np.abs(traj.position[-1] - ref.position[-1]).max() <= 1e-8  # measured 3.7e-9


@pytest.mark.parity
def test_kernel_and_twin_face_friction_agree_near_the_rim():
    from nhphys_ext.rolling import face_friction_py

    rng = np.random.default_rng(7)
    n = np.array([0.0, 0.0, 1.0])
    for _ in range(200):  # instantaneous centres within 1e-3 of the rim, on both sides
        ratio = 1.0 + rng.uniform(-1e-3, 1e-3) * rng.choice([1.0, 1e-6])
        angle = rng.uniform(0.0, 2 * np.pi)
        v = ratio * 0.1 * 5.0 * np.array([np.cos(angle), np.sin(angle), 0.0])
        F, T = twin_face.face_friction(v, 5.0, n, 0.1, 2.0, 0.3)
        Fk, Tk = face_friction_py(v, 5.0, n, 0.1, 2.0, 0.3)
        assert np.abs(np.array(Fk) - F).max() <= 1e-14 and abs(Tk - T) <= 1e-14


# -- a fast-tumbling coin: the unilateral rough impact ----------------------------------------

TOSS = {"height": 0.3, "omega0": [40.0, 0.0, 0.0], "velocity0": [0.0, 0.0, 2.0]}


def tossed(mu, impact="rough"):
    return RollingBody(COIN, Plane(), lift_off=True, mu=mu, restitution=0.3, impact=impact)


def test_a_rough_impact_that_would_pull_stops_the_tangential_velocity_without_a_normal_impulse():
    """A tilted coin's rim point coming in slowly along the normal and fast across it, in the
    direction in which stopping it needs a pull: the rough law's other branch, no normal
    impulse, the tangential velocity stopped, and the point then separating; the energy lost
    is ``u_t . (T^T K T)^-1 u_t / 2``."""
    from nhphys.twins import modes as spec
    from nhphys.twins.rolling import tangent_basis

    system = tossed(np.inf)
    shape, ground = system._twins()
    model = spec.Model(shape, ground, None, None, system.mass, system.inertia,
                       system.inertia_inv, system.gravity, system.up, system.support_shape,
                       0.3, np.inf, 0, 1e-14, 50, 0, spec.ROUGH)
    A = leaning(np.radians(50.0))
    n = np.array([0.0, 0.0, 1.0])
    below = -A.T @ n  # the rim point nearest the ground: along its projection on the face
    s = R_COIN * np.array([below[0], below[1], 0.0]) / np.hypot(below[0], below[1])
    K = spec.contact_mass(model, A, s)
    T = tangent_basis(n)
    coupling = np.linalg.solve(K, n)
    d = coupling - (coupling @ n) * n  # stopping a slip along d needs a pull
    d = d / np.linalg.norm(d)
    u = 1e-3 * d - 1e-7 * n  # coming in slowly, moving fast across the normal
    state = {"A": A, "a": -A @ s, "Pi": np.zeros(3), "p": system.mass * u, "s": s, "n": n,
             "chart": 0, "z": np.zeros(2), "t": 0.0, "work": 0.0, "slip": T[:, 0]}
    c = type("Touchdown", (), {"s": s, "n": n, "chart": 0, "z": np.zeros(2), "gap": 0.0})()
    assert n @ np.linalg.solve(K, -0.3 * (n @ u) * n - u) < 0.0  # the rough impulse pulls
    new, mode, impulse, change = spec.impact(model, state, c, 1e-4)
    after = spec.contact_velocity(model, new, s)
    assert mode == spec.FLIGHT and impulse == 0.0
    assert np.abs(after - (n @ after) * n).max() <= 1e-18  # the tangential velocity stopped
    assert n @ after > -0.3 * (n @ u) > 0.0  # separating
    u_t = T.T @ u
    assert change == pytest.approx(-0.5 * u_t @ np.linalg.solve(T.T @ K @ T, u_t), rel=1e-12)


@pytest.mark.kernels_only("the toss takes 30,000 steps of a tumbling disk: minutes on the "
                          "twin, which is checked against the kernel from the cascade's start "
                          "by the parity test below")
@pytest.mark.parametrize("mu, impact", [(np.inf, "rough"), (0.3, "rough"), (0.3, "coulomb")])
def test_a_tossed_tumbling_coin_bounces_and_comes_to_rest_on_its_face(backend, mu, impact):
    """Tossed up at 2 m/s from 0.3 m, tumbling at 40 rad/s (e = 0.3, h = 1e-4): it comes down
    on its rim, bounces and rolls, falls flat and rests, where it once ended in a cascade of
    touchdowns (the rough impulse would have pulled)."""
    traj = nhphys.simulate(tossed(mu, impact), 3.0, 1e-4, backend=backend, save_every=10,
                           **TOSS)
    assert traj.mode[-1] == 3 and np.all(traj.velocity[-1] == 0.0)
    assert traj.gap.min() >= -0.5 * G * 1e-4**2  # never deeper than a graze
    balance = traj.energy - traj.work
    assert np.ptp(balance) <= 1.5e-7  # J, of about 7 J
    touchdowns = [e for e in traj.events if e["kind"] == "touchdown"]
    if impact == "rough":  # some fifty bounces, some of them unilateral, then flat at 1.15 s
        assert 40 <= len(touchdowns) <= 60
        assert any(e["impulse"] == 0.0 and e["after"] == "flight" for e in touchdowns)
        (fall,) = [e for e in traj.events if e["kind"] == "fall flat"]
        assert 1.14 < fall["t"] < 1.17


@pytest.mark.parity
def test_kernel_and_twin_agree_through_the_tumbling_coin_s_unilateral_impacts():
    """From the kernel's checkpoint just before the touchdowns that once cascaded (t =
    1.1116 s), 300 steps on each backend: the same events (unilateral impacts among them,
    with no normal impulse), the same states."""
    system = tossed(np.inf)
    kernel = Retraction().start(system, 1e-4, "cython", **{
        "omega0": TOSS["omega0"], "height": TOSS["height"], "velocity0": TOSS["velocity0"]})
    kernel.advance(11116, 11116)
    twin = Retraction().start(system, 1e-4, "python", **{
        "omega0": TOSS["omega0"], "height": TOSS["height"], "velocity0": TOSS["velocity0"]})
    twin.restore(kernel.checkpoint())
    before = len(kernel.event_list())
    a, b = kernel.advance(300, 1), twin.advance(300, 1)
    ka, kb = kernel.event_list()[before:], twin.event_list()[before:]
    assert [e["kind"] for e in ka] == [e["kind"] for e in kb]
    assert any(e["kind"] == "touchdown" and e["impulse"] == 0.0 and e["after"] == "flight"
               for e in ka)
    np.testing.assert_allclose([e["t"] for e in ka], [e["t"] for e in kb], rtol=0, atol=1e-10)
    for name in ("position", "R", "omega", "velocity", "energy", "work"):
        np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-10, err_msg=name)


# -- a cylinder standing on an end face -------------------------------------------------------

M_CAN, R_CAN, L_CAN = 0.3, 0.04, 0.06  # mass, radius, half length
CAN = nhphys.RigidBody(M_CAN, Cylinder.solid_inertia(M_CAN, R_CAN, L_CAN),
                       Cylinder(R_CAN, L_CAN))


def can(mu):
    return RollingBody(CAN, Plane(), lift_off=True, mu=mu, gravity=G)


def test_a_cylinder_standing_on_an_end_slides_and_spins_to_the_closed_form_stops(backend):
    """On its end face a cylinder slides and spins as a disk does: a slide stops at
    ``v0 / (mu g)`` after ``v0^2 / (2 mu g)``, a spin at ``3 R w0 / (4 mu g)``; its centre stays
    its half length above the plane."""
    mu = 0.25
    slide = nhphys.simulate(can(mu), 0.6, 1e-3, backend=backend, velocity0=[0.8, 0.0, 0.0])
    (stop,) = [e for e in slide.events if e["kind"] == "stick"]
    assert stop["t"] == pytest.approx(0.8 / (mu * G), rel=1e-12)
    assert slide.position[-1, 0] == pytest.approx(0.8**2 / (2 * mu * G), rel=1e-12)
    assert np.abs(slide.position[:, 2] - L_CAN).max() <= 1e-16
    assert np.all(slide.mode == 3) and np.abs(slide.contact_residual).max() <= 1e-16
    spin = nhphys.simulate(can(mu), 0.3, 1e-3, backend=backend, omega0=[0.0, 0.0, 10.0])
    (stop,) = [e for e in spin.events if e["kind"] == "stick"]
    assert stop["t"] == pytest.approx(3 * R_CAN * 10.0 / (4 * mu * G), rel=1e-12)


def test_a_cylinder_tipped_on_its_rim_falls_back_onto_its_end_and_rests(backend):
    """Tipped 0.2 rad onto the rim of its lower end (its centre of mass still over the face)
    and let go, a cylinder falls back: it lands on its end face (``"fall flat"``, where the
    mode-by-mode reference lands it, to 1e-6 s) and, with a rough face, stays there upright,
    its centre its half length above the plane."""
    start = {"R0": leaning(np.pi / 2 - 0.2), "omega0": [0.0, 0.0, 0.0]}  # axis 0.2 rad off
    traj = nhphys.simulate(can(np.inf), 0.5, 1e-4, backend=backend, save_every=10, **start)
    kinds = [e["kind"] for e in traj.events]
    assert kinds == ["fall flat"]
    ref = nhphys.simulate(can(np.inf), 0.5, 1e-4, integrator=Reference(1e-11, 1e-13),
                          save_every=10, **start)
    assert [e["kind"] for e in ref.events] == kinds
    assert abs(traj.events[0]["t"] - ref.events[0]["t"]) <= 1e-6
    rest = traj.t > traj.events[0]["t"]
    assert np.all(traj.mode[rest] == 3) and np.all(traj.velocity[rest] == 0.0)
    assert np.abs(traj.position[rest][:, 2] - L_CAN).max() <= 1e-16
    assert np.abs(np.abs(traj.R[rest][:, 2, 2]) - 1.0).max() <= 1e-15


@pytest.mark.parity
def test_kernel_and_twin_agree_on_a_cylinder_that_falls_onto_its_end_and_slides():
    def run(backend):
        return nhphys.simulate(can(0.3), 0.4, 1e-4, backend=backend, save_every=10,
                               R0=leaning(np.pi / 2 - 0.25), omega0=[0.0, 3.0, 8.0])

    kernel, twin = run("cython"), run("python")
    kinds = [e["kind"] for e in kernel.events]
    assert kinds == [e["kind"] for e in twin.events] and "fall flat" in kinds
    np.testing.assert_allclose([e["t"] for e in kernel.events], [e["t"] for e in twin.events],
                               rtol=0, atol=1e-10)
    for name in ("position", "R", "omega", "velocity", "energy", "work"):
        np.testing.assert_allclose(kernel[name], twin[name], rtol=0, atol=1e-10, err_msg=name)
