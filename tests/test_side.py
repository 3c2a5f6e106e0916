"""A cylinder lying on its side on a plane (:mod:`nhphys.twins.side` and "Lying on its side" in
:mod:`nhphys.twins.modes`): the line's friction against high-precision closed forms and a
quadrature, rolling and sliding on the side against closed forms, a cylinder that falls over
and one dropped level, against the mode-by-mode reference; on the kernel and on the twin."""

import mpmath as mp
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.spatial.transform import Rotation

import nhphys
from nhphys import forces as fe
from nhphys.integrators import Reference, Retraction
from nhphys.shapes import Cylinder
from nhphys.surfaces import Plane
from nhphys.systems import RollingBody
from nhphys.twins import modes as spec
from nhphys.twins import side as twin_side

G = 9.81
M, R, L = 0.3, 0.033, 0.06  # a can: radius, half length
CAN = nhphys.RigidBody(M, Cylinder.solid_inertia(M, R, L), Cylinder(R, L))
I_D, I_A = Cylinder.solid_inertia(M, R, L)[0], Cylinder.solid_inertia(M, R, L)[2]
ON_SIDE = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # its axis along x


def line_friction(backend):
    if backend == "python":
        return twin_side.line_friction
    from nhphys_ext.rolling import line_friction_py
    return line_friction_py


def exact_integrals(a, b, c, half_length):
    """The three integrals by their plain closed forms in 150-digit arithmetic (where their
    cancellations do not matter)."""
    with mp.workdps(150):
        a, b, c, Lh = (mp.mpf(x) for x in (a, b, c, half_length))
        if c == 0:
            r = mp.sqrt(a * a + b * b)
            return [float(2 * Lh * a / r), float(2 * Lh * b / r), 0.0]
        x1, x2 = b - c * Lh, b + c * Lh
        r1, r2 = mp.sqrt(a * a + x1 * x1), mp.sqrt(a * a + x2 * x2)
        delta = (mp.asinh(x2 / abs(a)) - mp.asinh(x1 / abs(a))) if a != 0 else 0
        return [float(a * delta / c), float((r2 - r1) / c),
                float((Lh * (r1 + r2) - (x2 * r2 - x1 * r1 + a * a * delta) / (2 * c)) / c)]


def test_line_friction_matches_the_closed_forms(backend):
    friction = line_friction(backend)
    rng = np.random.default_rng(7)
    worst = 0.0
    for k in range(2000):
        half = rng.uniform(0.01, 2.0)
        a, b, c = rng.normal(size=3) * 10.0 ** rng.uniform(-8, 2, size=3)
        if k % 5 == 0:
            a = 0.0
        if k % 7 == 0:
            c *= 10.0 ** rng.uniform(-12, -3)  # nearly a translation: the quadrature's side
        if k % 11 == 0:
            b = 0.0
        if k % 13 == 0:
            c = 0.0
        if a == b == c == 0.0:
            continue
        N, mu = 2.0, 0.4
        got = np.array(friction(a, b, c, half, N, mu))
        want = -mu * N / (2 * half) * np.array(exact_integrals(a, b, c, half))
        scale = mu * N * np.array([1.0, 1.0, half])  # the largest force and moment
        worst = max(worst, float(np.max(np.abs(got - want) / scale)))
    assert worst < 1e-13


def test_line_friction_matches_a_quadrature_and_its_limits(backend):
    friction = line_friction(backend)
    half, N, mu = 0.3, 1.5, 0.25
    for a, b, c in [(0.2, -0.1, 1.3), (0.01, 0.05, -4.0), (1.0, 2.0, 0.5), (-0.3, 0.0, 2.0)]:
        def part(s, k):
            x = b + c * s
            r = np.hypot(a, x)
            return (a / r, x / r, s * x / r)[k]
        root = [-b / c] if abs(b / c) < half else None
        want = [-mu * N / (2 * half) * quad(part, -half, half, args=(k,), points=root,
                                            epsabs=1e-14, epsrel=1e-12, limit=200)[0]
                for k in range(3)]
        np.testing.assert_allclose(friction(a, b, c, half, N, mu), want, rtol=0, atol=1e-11)
    # a translation: mu N against the slip, no moment; a pure turn: the largest moment
    np.testing.assert_allclose(friction(0.3, 0.4, 0.0, half, N, mu),
                               [-mu * N * 0.6, -mu * N * 0.8, 0.0], rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(friction(0.0, 0.0, -2.0, half, N, mu),
                               [0.0, 0.0, mu * N * half / 2], rtol=1e-15, atol=1e-16)
    # the direction of the slip alone matters, and the law is odd
    one = np.array(friction(0.2, -0.1, 1.3, half, N, mu))
    np.testing.assert_allclose(friction(2.0, -1.0, 13.0, half, N, mu), one, rtol=1e-13)
    np.testing.assert_allclose(friction(-0.2, 0.1, -1.3, half, N, mu), -one, rtol=1e-13)
    with pytest.raises(ValueError, match="no direction at rest"):
        friction(0.0, 0.0, 0.0, half, N, mu)


def side_system(mu, normal=(0.0, 0.0, 1.0), forces=()):
    return RollingBody(CAN, Plane(normal=normal), lift_off=True, mu=mu, forces=list(forces))


def test_a_cylinder_launched_sliding_on_its_side_rolls_at_two_thirds(backend):
    mu, v0 = 0.2, 1.0
    tr = nhphys.simulate(side_system(mu), 0.4, 1e-3, backend=backend, R0=ON_SIDE,
                         velocity0=[0.0, v0, 0.0])
    (stick,) = tr.events
    assert (stick["kind"], stick["before"], stick["after"]) == ("stick", "side sliding",
                                                                 "side rolling")
    t_star = v0 / (3 * mu * G)  # v = v0 - mu g t meets R phi' = 2 mu g t
    assert abs(stick["t"] - t_star) < 1e-9 * t_star
    np.testing.assert_allclose(tr["velocity"][-1], [0.0, 2 * v0 / 3, 0.0], rtol=0, atol=1e-12)
    # the slide decelerates at mu g while the roll speeds up at 2 mu g / R
    k = 50
    np.testing.assert_allclose(tr["velocity"][k][1], v0 - mu * G * tr["t"][k], rtol=1e-13)
    np.testing.assert_allclose((tr["R"][k] @ tr["omega"][k]) @ [1.0, 0.0, 0.0],
                               -2 * mu * G * tr["t"][k] / R, rtol=1e-12)
    assert set(tr["mode"].tolist()) == {spec.SIDE, spec.SIDE_SLIDING}
    drift = tr["energy"] - tr["work"]
    assert np.ptp(drift) < 1e-14 * tr["energy"][0]
    assert np.max(np.abs(tr["contact_residual"])) < 1e-15
    assert np.max(np.abs(tr["slip_residual"])) < 1e-14  # rolling: the line is at rest
    assert np.max(np.abs(tr["position"][:, 2] - R)) < 1e-15


@pytest.mark.parametrize("mu", [np.inf, 0.2, 0.05])
def test_a_cylinder_on_its_side_down_an_incline(backend, mu):
    alpha = 0.3
    normal = [0.0, -np.sin(alpha), np.cos(alpha)]
    down = np.array([0.0, -np.cos(alpha), -np.sin(alpha)])
    tr = nhphys.simulate(side_system(mu, normal), 0.5, 1e-3, backend=backend, R0=ON_SIDE)
    t = tr["t"][-1]
    speed = tr["velocity"][-1] @ down
    roll = tr["R"][-1] @ tr["omega"][-1] @ [1.0, 0.0, 0.0]
    if np.tan(alpha) <= 3 * mu:  # rolls: (2/3) g sin(alpha)
        assert tr.events == [] and set(tr["mode"].tolist()) == {spec.SIDE}
        np.testing.assert_allclose(speed, 2 / 3 * G * np.sin(alpha) * t, rtol=1e-13)
        np.testing.assert_allclose(roll, speed / R, rtol=1e-12)
    else:  # slides at g (sin - mu cos), its roll speeding up at 2 mu g cos / R
        assert tr.events[0]["kind"] == "slip" and tr.events[0]["t"] < 1e-15
        np.testing.assert_allclose(speed, G * (np.sin(alpha) - mu * np.cos(alpha)) * t,
                                   rtol=1e-13)
        np.testing.assert_allclose(roll, 2 * mu * G * np.cos(alpha) * t / R, rtol=1e-12)
    assert np.ptp(tr["energy"] - tr["work"]) < 1e-13 * np.max(np.abs(tr["energy"]))


def test_a_cylinder_spinning_on_its_side_about_the_normal_stops(backend):
    """A turn about the normal alone: the line's friction has its largest moment,
    ``mu m g L / 2``, and no force; the centre stays and the turn stops at
    ``2 I_d psi0 / (mu m g L)``."""
    mu, psi0 = 0.3, 6.0
    tr = nhphys.simulate(side_system(mu), 0.3, 1e-3, backend=backend, R0=ON_SIDE,
                         omega0=ON_SIDE.T @ [0.0, 0.0, psi0])
    (stick,) = tr.events
    t_stop = 2 * I_D * psi0 / (mu * M * G * L)
    assert abs(stick["t"] - t_stop) < 1e-9 * t_stop
    assert np.max(np.abs(tr["position"] - tr["position"][0])) < 1e-15
    k = 30
    np.testing.assert_allclose(tr["R"][k] @ tr["omega"][k] @ [0, 0, 1],
                               psi0 - mu * M * G * L / (2 * I_D) * tr["t"][k], rtol=1e-12)


def test_a_torque_about_the_axis_rolls_it_then_makes_it_slip(backend):
    """A torque ``tau`` about the axis: rolling, ``phi'' = tau / (I_a + m R^2)``, needing the
    friction ``m R phi''``; past ``mu m g`` the line slides, ``phi'' = (tau - R mu m g) / I_a``
    and the centre at ``mu g``."""
    mu = 0.2
    for tau, rolls in [(0.5 * mu * M * G * R * (I_A + M * R * R) / (M * R * R), True),
                       (2.0 * mu * M * G * R * (I_A + M * R * R) / (M * R * R), False)]:
        tr = nhphys.simulate(side_system(mu, forces=[fe.Torque([0.0, 0.0, tau])]), 0.2, 1e-3,
                             backend=backend, R0=ON_SIDE)
        roll = np.array([tr["R"][k] @ tr["omega"][k] @ [1.0, 0, 0] for k in range(len(tr["t"]))])
        if rolls:
            assert tr.events == []
            np.testing.assert_allclose(roll[1:], tau / (I_A + M * R * R) * tr["t"][1:],
                                       rtol=1e-12)
        else:
            assert [e["kind"] for e in tr.events] == ["slip"]
            np.testing.assert_allclose(roll[1:], (tau - R * mu * M * G) / I_A * tr["t"][1:],
                                       rtol=1e-12)
            np.testing.assert_allclose(np.abs(tr["velocity"][1:, 1]), mu * G * tr["t"][1:],
                                       rtol=1e-12)
        assert np.ptp(tr["energy"] - tr["work"]) < 1e-13


def tipped(angle=1.1, spin=0.0):
    """A can standing on the rim of its lower end, its axis ``angle`` from the vertical,
    spinning about its axis."""
    return {"R0": Rotation.from_rotvec([angle, 0.0, 0.0]).as_matrix(),
            "omega0": [0.0, 0.0, spin]}


@pytest.mark.parametrize("mu", [np.inf, 0.3])
def test_a_cylinder_falls_over_onto_its_side_and_goes_on(backend, mu):
    tr = nhphys.simulate(side_system(mu), 0.6, 1e-3, backend=backend, **tipped(1.1, 25.0))
    kinds = [e["kind"] for e in tr.events]
    assert kinds[0] == "fall on side"
    fall = tr.events[0]
    assert fall["after"] == ("side rolling" if mu == np.inf else "side sliding")
    assert fall["energy_change"] < 0.0 and fall["impulse"] > 0.0
    if mu != np.inf:
        assert kinds[1:] == ["stick"]
    k = np.searchsorted(tr["t"], fall["t"]) + 1
    after = tr["mode"][k:]
    assert np.all((after == spec.SIDE) | (after == spec.SIDE_SLIDING))
    # on its side: the axis in the plane, the centre R above it, nothing out of the plane
    axes = tr["R"][k:, :, 2]
    assert np.max(np.abs(axes[:, 2])) < 1e-14
    assert np.max(np.abs(tr["position"][k:, 2] - R)) < 1e-15
    assert np.max(np.abs(tr["velocity"][k:, 2])) < 1e-14
    # energy - work is continuous through the landing (its loss is in work); rolling on the
    # side it is exact, sliding with a turn it holds to second order (see below)
    drift = tr["energy"] - tr["work"]
    assert abs(drift[k] - drift[k - 2]) < 1e-5  # the rim's rolling step's own energy error
    assert np.ptp(drift[k:]) < (1e-13 if mu == np.inf else 1e-6)
    # rolling on its side at the end, the line at rest
    assert tr["mode"][-1] == spec.SIDE
    assert np.max(np.abs(tr["slip_residual"][-10:])) < 1e-14


def test_the_rough_landing_keeps_the_angular_momentum_about_the_line():
    """``land_side`` with ``mu = inf``: the axis turned into the plane about the rim point on
    the ground, the centre ``R`` above the plane, and of the velocities only the roll that
    keeps ``I_a phi' - m R v . w``."""
    system = side_system(np.inf)
    run = Retraction().start(system, 1e-3, "python", **tipped(1.5, 3.0))
    model = spec.Model(*system._twins(), None, None, M, system.inertia, system.inertia_inv, G,
                       system.up, system.support_shape, 0.0, np.inf, 0, 1e-14, 50, 0,
                       side=(R, L, Cylinder(R, L).side_angle))
    A = Rotation.from_rotvec([np.pi / 2 + 0.004, 0.0, 0.0]).as_matrix()
    n = np.array([0.0, 0.0, 1.0])
    s = np.array([0.0, -R, L])  # the lowest point: the rim of the end that is lower
    assert (A @ [0.0, 0.0, 1.0])[2] < 0.0
    assert abs((A @ s)[2] + R * np.cos(0.004) + L * np.sin(0.004)) < 1e-16
    a = -A @ s
    state = {"A": A, "a": a, "Pi": system.inertia @ [0.7, -2.0, 5.0],
             "p": M * np.array([0.1, -0.2, -0.3]), "s": s, "n": n, "chart": int(run.chart[0]),
             "z": np.array(run.z), "t": 0.0, "work": 0.0}
    new, mode, impulse, change = spec.land_side(model, state)
    assert mode == spec.SIDE
    u, w = new["A"][:, 2], np.cross(n, new["A"][:, 2])
    assert abs(u @ n) < 1e-15 and abs(new["a"][2] - R) < 1e-15
    np.testing.assert_allclose(new["a"] + new["A"] @ s, a + A @ s, atol=1e-15)  # the rim point
    # (the turn onto the side corrects the pose; the velocities in space are kept)
    omega0, omega1 = A @ (system.inertia_inv @ state["Pi"]), new["A"] @ (
        system.inertia_inv @ new["Pi"])
    before = I_A * (omega0 @ u) - M * R * (state["p"] / M) @ w
    after = I_A * (omega1 @ u) - M * R * (new["p"] / M) @ w
    assert abs(after - before) < 1e-15
    np.testing.assert_allclose(omega1, (omega1 @ u) * u, atol=1e-15)  # only the roll
    np.testing.assert_allclose(new["p"] / M, -R * (omega1 @ u) * w, atol=1e-16)  # rolling
    energy = lambda st: spec.kinetic_energy(model, st) + spec.potential_energy(
        model, st["A"], st["a"])
    assert abs(change - (energy(new) - energy(state))) < 1e-16
    assert change < 0.0 and abs(impulse - M * 0.3) < 1e-15


@pytest.mark.parity
def test_kernel_and_twin_agree_through_a_fall_a_slide_and_a_stick():
    system = side_system(0.3, forces=[fe.LinearDrag(0.01), fe.AngularDamping(1e-4)])
    runs = [nhphys.simulate(system, 0.4, 1e-3, backend=b, **tipped(1.1, 25.0))
            for b in ("cython", "python")]
    assert len(runs[0].events) == len(runs[1].events) == 2
    for e0, e1 in zip(runs[0].events, runs[1].events):
        assert (e0["kind"], e0["before"], e0["after"]) == (e1["kind"], e1["before"], e1["after"])
        assert abs(e0["t"] - e1["t"]) < 1e-10
    for key in ("R", "position", "velocity", "omega", "work"):
        np.testing.assert_allclose(runs[0][key], runs[1][key], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(runs[0]["mode"], runs[1]["mode"])


def test_the_fall_onto_the_side_converges_to_the_reference(backend):
    """The located fall (a can tipped onto its rim with a spin, rough): second order in the
    step against the mode-by-mode reference."""
    system = side_system(np.inf)
    start = tipped(1.1, 25.0)
    ref = nhphys.simulate(system, 0.15, 1e-3, integrator=Reference(rtol=1e-11, atol=1e-13),
                          **start)
    t_ref = ref.events[0]["t"]
    errors = []
    for h in (1e-3, 5e-4):
        tr = nhphys.simulate(system, 0.15, h, backend=backend, **start)
        errors.append(abs(tr.events[0]["t"] - t_ref))
    assert errors[0] < 1e-7
    assert 3.0 < errors[0] / errors[1] < 5.0


@pytest.mark.parametrize("mu", [np.inf, 0.3])
def test_a_level_cylinder_dropped_lands_on_its_side(backend, mu):
    h0 = 0.05
    tr = nhphys.simulate(side_system(mu), 0.2, 1e-3, backend=backend, R0=ON_SIDE,
                         height=h0)
    (touchdown,) = tr.events
    assert (touchdown["kind"], touchdown["after"]) == ("touchdown", "side rolling")
    assert abs(touchdown["t"] - np.sqrt(2 * h0 / G)) < 1e-12
    assert abs(touchdown["energy_change"] + M * G * h0) < 1e-12
    assert np.max(np.abs(tr["velocity"][-5:])) == 0.0


def test_bad_starts_on_the_side():
    with pytest.raises(ValueError, match="not tilting it"):
        nhphys.simulate(side_system(0.3), 0.01, 1e-3, R0=ON_SIDE, omega0=[0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="a rough line cannot slide"):
        nhphys.simulate(side_system(np.inf), 0.01, 1e-3, R0=ON_SIDE,
                        omega0=ON_SIDE.T @ [0.0, 0.0, 1.0])


def test_sliding_and_turning_on_the_side_keeps_energy_minus_work_at_second_order(backend):
    """A slide across the axis, along it and a turn at once: the work of the line's friction
    (the trapezoidal rule on its power) balances the energy to second order in the step."""
    start = dict(R0=ON_SIDE, velocity0=[0.4, 0.8, 0.0], omega0=ON_SIDE.T @ [5.0, 0.0, 4.0])
    drifts = []
    for h in (1e-3, 5e-4):
        tr = nhphys.simulate(side_system(0.3), 0.05, h, backend=backend, **start)
        assert set(tr["mode"].tolist()) == {spec.SIDE_SLIDING}
        drifts.append(np.ptp(tr["energy"] - tr["work"]))
    assert drifts[0] < 1e-6
    assert 3.5 < drifts[0] / drifts[1] < 4.5


def test_a_cylinder_with_an_offset_centre_still_ends_at_its_side(backend):
    body = nhphys.RigidBody(M, Cylinder.solid_inertia(M, R, L), Cylinder(R, L),
                            com=[0.0, 0.0, 0.01])
    system = RollingBody(body, Plane(), lift_off=True, mu=np.inf)
    with pytest.raises(nhphys.errors.ContactEvent):
        nhphys.simulate(system, 0.6, 1e-3, backend=backend, **tipped(1.1, 25.0))


def test_the_documented_example_prints_what_the_docs_say(doc_example):
    """The example of docs/contact-modes.md, "Lying on its side", and the output printed
    there."""
    printed, written = doc_example("## Lying on its side")
    got = [[float(x) for x in line.split()] for line in printed]
    want = [[float(x) for x in line.split()] for line in written]
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)


def test_a_run_continued_from_a_checkpoint_is_the_run_in_one_go(backend):
    """Stopped while the can slides on its side and continued from the checkpoint, the run
    meets the same stick and ends in the same state (its step times, ``t0 + k h`` from each
    piece's start, round differently: the event's time to an ulp)."""
    system = side_system(0.3)
    whole = Retraction().start(system, 1e-3, backend, **tipped(1.1, 25.0))
    frames = whole.advance(300, 100)
    first = Retraction().start(system, 1e-3, backend, **tipped(1.1, 25.0))
    first.advance(130, 10)
    assert first.mode[0] == spec.SIDE_SLIDING
    resumed = Retraction().start(system, 1e-3, backend, **tipped(1.1, 25.0))
    resumed.restore(first.checkpoint())
    rest = resumed.advance(170, 10)
    assert [int(k) for k in whole.events[:, 1]] == [spec.FALL_SIDE, spec.STICK]
    np.testing.assert_array_equal(whole.events[:, 1:4], resumed.events[:, 1:4])
    np.testing.assert_allclose(whole.events, resumed.events, rtol=1e-15, atol=0)
    for name in ("position", "velocity", "omega", "work"):
        np.testing.assert_allclose(frames[name][-1], rest[name][-1], rtol=0, atol=1e-15)


def test_line_friction_of_extreme_slips_is_finite(backend):
    """Only the slip's direction matters, so slips of any size, and parts far smaller than
    the others, give finite numbers (the translation's and the turn's, in the limits)."""
    friction = line_friction(backend)
    half, N, mu = 0.06, 2.0, 0.3
    np.testing.assert_allclose(friction(0.0, 0.0, 1e-300, half, N, mu),
                               [0.0, 0.0, -mu * N * half / 2], rtol=1e-14)
    np.testing.assert_allclose(friction(1e300, 0.0, 0.0, half, N, mu), [-mu * N, 0.0, 0.0])
    for a, b, c in [(1e-200, 1.0, 1.0), (1e-200, -1.0, 1.0 / half), (1.0, 1e-300, 1e-290),
                    (-0.0, 1.0, 1.0 / half), (3e-310, 2e-310, 1e-310)]:
        got = np.array(friction(a, b, c, half, N, mu))
        assert np.all(np.isfinite(got))
        want = -mu * N / (2 * half) * np.array(exact_integrals(a / max(abs(a), abs(b), abs(c)),
                                                               b / max(abs(a), abs(b), abs(c)),
                                                               c / max(abs(a), abs(b), abs(c)),
                                                               half))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * mu * N)


def test_the_reference_on_its_side_meets_the_closed_forms():
    """The mode-by-mode reference's side modes: the slide that grips at ``v0 / (3 mu g)``, and
    the slide down a slope too steep to roll on, from a start that cannot hold."""
    reference = Reference(rtol=1e-12, atol=1e-14)
    mu, v0 = 0.2, 1.0
    tr = nhphys.simulate(side_system(mu), 0.3, 1e-3, integrator=reference, R0=ON_SIDE,
                         velocity0=[0.0, v0, 0.0])
    assert [e["kind"] for e in tr.events] == ["stick"]
    assert abs(tr.events[0]["t"] - v0 / (3 * mu * G)) < 1e-8
    np.testing.assert_allclose(tr["velocity"][-1], [0.0, 2 * v0 / 3, 0.0], atol=1e-8)
    alpha, mu = 0.3, 0.05
    normal = [0.0, -np.sin(alpha), np.cos(alpha)]
    down = np.array([0.0, -np.cos(alpha), -np.sin(alpha)])
    tr = nhphys.simulate(side_system(mu, normal), 0.2, 1e-3, integrator=reference, R0=ON_SIDE)
    assert [e["kind"] for e in tr.events] == ["slip"] and tr.events[0]["t"] == 0.0
    np.testing.assert_allclose(tr["velocity"][-1] @ down,
                               G * (np.sin(alpha) - mu * np.cos(alpha)) * 0.2, rtol=1e-10)
