"""Disks, wheels and cylinders rolling without slipping: against Kane's method, closed forms,
and the structure the scheme must keep; contact events; bad input."""

import importlib

import numpy as np
import pytest

import nhphys
from nhphys import _backend
from nhphys.errors import ContactEvent, NewtonError
from nhphys.integrators import Reference, Retraction
from nhphys.lie import so3
from nhphys.shapes import Cylinder, Disk, Wheel
from nhphys.surfaces import HeightField, Plane, Sphere
from nhphys.systems import RollingBody
from nhphys.validation import kane_disk as kane  # needs sympy and pydy: test dependencies

M, G, R = 1.0, 9.81, 0.1  # a thin uniform disk of 1 kg and radius 0.1 m
LEAN, TURN = 0.3, 4.0  # the steady circle: lean 0.3 rad from vertical, heading rate 4 rad/s


def on_twins(steps, ms=4.4):
    """The reason a run of ``steps`` disk steps (``ms`` each on the twins, measured) is left to
    the kernels."""
    seconds = 1e-3 * ms * steps
    took = f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"
    return f"{steps:,} steps take about {took} on the twins ({ms} ms a step)"


def log_log_slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


def disk_body(radius=R, mass=M, **kw):
    return nhphys.RigidBody(mass, Disk.solid_inertia(mass, radius), Disk(radius, **kw),
                            name="disk")


def wheel_body(radius=0.3, tube=0.05, mass=1.0):
    return nhphys.RigidBody(mass, Wheel.solid_inertia(mass, radius, tube), Wheel(radius, tube),
                            name="wheel")


def cylinder_body(radius=0.1, half_length=0.05, mass=1.0, **kw):
    return nhphys.RigidBody(mass, Cylinder.solid_inertia(mass, radius, half_length),
                            Cylinder(radius, half_length, **kw), name="cylinder")


def steady_state():
    """Kane state of the steady circle (lean LEAN, heading rate TURN)."""
    u2 = kane.steady_spin(LEAN, TURN, M, G, R)
    return np.array([0.0, LEAN, 0.0, 0.0, u2, TURN * np.cos(LEAN), 0.0, 0.0])


def wobbling_state():
    """The steady circle with a lean rate of 0.1 rad/s added: the lean wobbles (0.255 to 0.330)."""
    y = steady_state()
    y[3] = 0.1
    return y


def on_plane():
    return RollingBody(disk_body(), Plane(), gravity=G)


def kane_error(traj, ref):
    """Largest difference in lean, heading (rad) and contact path (m) over the run."""
    ours = kane.from_nhphys(traj.R, traj.omega, traj.contact_point)
    return np.abs(ours[:, [0, 1, 6, 7]] - ref[:, [0, 1, 6, 7]]).max()


@pytest.fixture(scope="module")
def kane_runs():
    t = np.linspace(0.0, 10.0, 1001)
    return {name: (y, kane.reference(y, t, M, G, R))
            for name, y in (("steady", steady_state()), ("wobbling", wobbling_state()))}


# -- against Kane's method -----------------------------------------------------------------------

def test_kane_steady_circle_is_steady(kane_runs):
    """The closed-form steady spin keeps Kane's equations at rest in lean (a check of both)."""
    ref = kane_runs["steady"][1]
    assert np.abs(ref[:, 1] - LEAN).max() < 1e-9
    rate = ref[:, 5] / np.cos(ref[:, 1])
    assert np.abs(rate / TURN - 1).max() < 1e-9


@pytest.mark.kernels_only(on_twins(24_000))
@pytest.mark.parametrize("name", ["exp", "cayley"])
@pytest.mark.parametrize("motion", ["steady", "wobbling"])
def test_agrees_with_kane_and_error_shrinks_as_h_squared(backend, kane_runs, motion, name):
    y, ref = kane_runs[motion]
    system = on_plane()
    hs = [0.005, 0.0025, 0.00125, 0.001]
    errors = []
    for h in hs:
        traj = nhphys.simulate(system, 10.0, h, Retraction(name), backend=backend,
                               save_every=round(0.01 / h), **kane.to_nhphys(y))
        errors.append(kane_error(traj, ref))
    assert log_log_slope(hs, errors) == pytest.approx(2.0, abs=0.15)
    # at h = 1e-3: measured 3.3e-3 (steady) and 7.8e-3 (wobbling), both in the heading's phase
    assert errors[-1] < 1e-2


@pytest.mark.slow
@pytest.mark.kernels_only(on_twins(625_000))
@pytest.mark.parametrize("motion, h", [("steady", 1.6e-5), ("wobbling", 1e-5)])
def test_kane_error_below_1e6(backend, kane_runs, motion, h):
    """The step at which the error falls below 1e-6, from the h^2 fit (1.8e-5 steady, 1.1e-5
    wobbling): checked by running just below it."""
    y, ref = kane_runs[motion]
    traj = nhphys.simulate(on_plane(), 10.0, h, backend=backend, save_every=round(0.01 / h),
                           **kane.to_nhphys(y))
    assert kane_error(traj, ref) < 1e-6


def test_reference_eq29_in_support_form_agrees_with_kane(kane_runs):
    """nhphys's own reference (eq. 29 written with the support map) against Kane's method."""
    y, ref = kane_runs["wobbling"]
    traj = nhphys.simulate(on_plane(), 2.0, 0.01, Reference(rtol=1e-12, atol=1e-14),
                           **kane.to_nhphys(y))
    assert kane_error(traj, ref[:201]) < 1e-8


@pytest.mark.kernels_only(on_twins(600_000))
def test_steady_circle_keeps_lean_and_turning_rate(backend):
    """100 s on the steady circle: relative deviation of lean and heading rate.

    The fourth-order composition at h = 5e-4 meets 1e-8 (measured 1.1e-9); the second-order step
    stays within 1.8e-4 at h = 1e-3 (a bounded offset of order h^2, not a drift).
    """
    traj = nhphys.simulate(on_plane(), 100.0, 5e-4, Retraction("exp", order=4), backend=backend,
                           save_every=200, **kane.to_nhphys(steady_state()))
    state = kane.from_nhphys(traj.R, traj.omega, traj.contact_point)
    rate = state[:, 5] / np.cos(state[:, 1])
    assert np.abs(state[:, 1] / LEAN - 1).max() < 1e-8
    assert np.abs(rate / TURN - 1).max() < 1e-8
    # the contact point stays on a circle (least-squares centre: x^2 + y^2 = 2 a x + 2 b y + c)
    x, y = state[:, 6], state[:, 7]
    a, b, _ = np.linalg.lstsq(np.column_stack([2 * x, 2 * y, np.ones_like(x)]), x * x + y * y,
                              rcond=None)[0]
    radius = np.hypot(x - a, y - b)
    assert np.ptp(radius) < 1e-8 * radius.mean()


# -- the structure the step keeps -----------------------------------------------------------------

def rim_residual(traj, radius):
    """How far the body contact point is from the rim (relative)."""
    s = traj.body_contact
    return np.maximum(np.abs(np.hypot(s[:, 0], s[:, 1]) - radius), np.abs(s[:, 2])) / radius


@pytest.mark.kernels_only(on_twins(5000))
@pytest.mark.parametrize("name", ["exp", "cayley"])
def test_on_the_rim_touching_and_not_slipping_at_every_step(backend, name):
    traj = nhphys.simulate(on_plane(), 5.0, 1e-3, Retraction(name), backend=backend,
                           **kane.to_nhphys(wobbling_state()))
    assert rim_residual(traj, R).max() <= 1e-15
    assert traj.contact_residual.max() <= 1e-14
    assert traj.slip_residual.max() <= 1e-14


@pytest.mark.kernels_only(on_twins(1_000_000))
def test_energy_bounded_over_a_million_steps(backend):
    traj = nhphys.simulate(on_plane(), 1000.0, 1e-3, backend=backend, save_every=1000,
                           **kane.to_nhphys(wobbling_state()))
    rel = np.abs(traj.energy / traj.energy[0] - 1)
    half = len(rel) // 2
    assert rel.max() < 1e-4  # measured 2.3e-5
    assert rel[half:].max() <= 1.5 * rel[:half].max()  # no drift
    assert traj.constraint_residual.max() <= 1e-13
    assert rim_residual(traj, R).max() <= 1e-15


def _state(run):
    return [x.copy() for x in (run.A, run.a, run.Pi, run.p)]


CASES = {
    "disk-plane": lambda: (on_plane(), kane.to_nhphys(wobbling_state())),
    "cylinder-plane": lambda: (RollingBody(cylinder_body(), Plane()),
                               {"R0": so3.exp([1.0, 0.0, 0.0]), "omega0": [0.5, 0.0, 8.0]}),
    # a wheel leaning 0.4 rad, rolling at 1.4 m/s round and round over waves 3 cm high
    "wheel-terrain": lambda: (RollingBody(wheel_body(), terrain()),
                              {"R0": so3.exp([np.pi / 2 - 0.4, 0, 0]),
                               "omega0": [0.0, 0.0, -4.0], "ground_point": [0.0, 0.0, 0.0]}),
    # a disk upright on the side of a spherical bowl, rolling round it
    "disk-bowl": lambda: (RollingBody(disk_body(), Sphere(1.0).as_ground("inside")),
                          {"R0": so3.exp([0.0, np.pi / 2, 0.0]), "omega0": [0.0, 0.0, -20.0],
                               "ground_point": [0.3, 0.0, -0.95]}),
}
# the disk's swing across the bowl stays regular for about 40 s (then it breaks away from
# upright and would lift off); the wheel circles on the terrain indefinitely
DURATION = {"wheel-terrain": 60.0, "disk-bowl": 20.0}


def terrain():
    return HeightField.from_function("0.03*sin(3*x)*cos(2*y)", (-6, 6), (-6, 6), samples=241)


@pytest.mark.parametrize("name", ["exp", "cayley"])
@pytest.mark.parametrize("case", list(CASES))
def test_step_then_reverse_step_returns(backend, name, case):
    system, ic = CASES[case]()
    run = Retraction(name).start(system, 0.005, backend, **ic)
    run.advance(5, 1)
    before = _state(run)
    run.advance(1, 1)
    run.dt = -run.dt
    run.xi *= -1
    run.advance(1, 1)
    for x, y in zip(before, _state(run)):
        assert np.abs(x - y).max() <= 1e-12


@pytest.mark.kernels_only(on_twins(20_000, ms=5.4))
@pytest.mark.parametrize("case", ["wheel-terrain", "disk-bowl"])
def test_curved_grounds_residuals_and_energy(backend, case):
    system, ic = CASES[case]()
    traj = nhphys.simulate(system, DURATION[case], 1e-3, backend=backend, save_every=10, **ic)
    assert traj.contact_residual.max() <= 1e-13
    assert traj.slip_residual.max() <= 1e-13
    radius = system.body.shape.radius
    s = traj.body_contact
    if case == "disk-bowl":
        assert rim_residual(traj, radius).max() <= 1e-15
    rel = np.abs(traj.energy - traj.energy[0]) / np.abs(traj.energy).max()
    half = len(rel) // 2
    assert rel.max() < 1e-4
    assert rel[half:].max() <= 1.5 * rel[:half].max()
    assert np.isfinite(s).all()
    assert traj.normal_force[1:].min() > 0  # pressing on the ground throughout


@pytest.mark.parametrize("case", ["wheel-terrain", "disk-bowl"])
def test_order_two_on_curved_grounds(backend, case):
    """Against nhphys's reference (eq. 29 in support form, DOP853 at rtol 1e-12)."""
    system, ic = CASES[case]()
    ref = nhphys.simulate(system, 1.0, 0.05, Reference(rtol=1e-12, atol=1e-14), **ic)
    hs = [0.005, 0.0025, 0.00125]
    errs = []
    for h in hs:
        traj = nhphys.simulate(system, 1.0, h, backend=backend, save_every=round(0.05 / h), **ic)
        errs.append(max(np.abs(traj.R - ref.R).max(),
                        np.abs(traj.contact_point - ref.contact_point).max()))
    assert log_log_slope(hs, errs) == pytest.approx(2.0, abs=0.15)


@pytest.mark.parity
@pytest.mark.parametrize("case", list(CASES))
def test_kernel_and_twin_agree(case):
    system, ic = CASES[case]()
    kw = {"save_every": 20, **ic}
    a = nhphys.simulate(system, 0.2, 1e-3, backend="cython", **kw)
    b = nhphys.simulate(system, 0.2, 1e-3, backend="python", **kw)
    for field in ("R", "position", "contact_point", "body_contact"):
        assert np.abs(a[field] - b[field]).max() <= 1e-10
    assert np.abs(a.omega - b.omega).max() <= 1e-10 * np.abs(b.omega).max()


@pytest.mark.parity
@pytest.mark.slow
@pytest.mark.parametrize("order", [2, 4])
def test_kernel_and_twin_agree_over_ten_thousand_steps(order):
    system, ic = CASES["disk-plane"]()
    kw = {"save_every": 1000, **ic}
    integrator = Retraction(order=order)
    a = nhphys.simulate(system, 10.0, 1e-3, integrator, backend="cython", **kw)
    b = nhphys.simulate(system, 10.0, 1e-3, integrator, backend="python", **kw)
    for field in ("R", "position", "contact_point", "body_contact"):
        assert np.abs(a[field] - b[field]).max() <= 1e-10
    assert np.abs(a.omega - b.omega).max() <= 1e-10 * np.abs(b.omega).max()


SHAPES = [Disk(0.1), Wheel(0.3, 0.05), Cylinder(0.1, 0.05)]
COM = np.array([0.001, -0.002, 0.0])


def test_support_maps_match_finite_differences_and_events(backend, rng):
    """Support point, S' (against finite differences of the support point) and n_M of each
    shape, and the event codes where the contact stops being one point."""
    from nhphys.twins import rolling as twin

    impl = _backend.implementation("rolling", backend)
    for shape in SHAPES:
        k = shape.rolling_shape(impl, COM)
        for d in rng.normal(size=(20, 3)):
            st, _, Sp, n_M = impl.support_map(k, d)
            assert st == 0
            eps = 1e-6
            fd = np.column_stack([(np.asarray(impl.support_map(k, d + eps * e)[1])
                                   - impl.support_map(k, d - eps * e)[1]) / (2 * eps)
                                  for e in np.eye(3)])
            assert np.abs(fd - Sp).max() <= 1e-7 * np.abs(Sp).max()
            assert np.allclose(n_M, -d / np.linalg.norm(d), atol=1e-15)
    for shape, d, code in [(Disk(0.1), [0, 1e-3, 1], twin.FLAT),
                           (Cylinder(0.1, 0.05), [0, 1, 1e-3], twin.RIM_TO_SIDE),
                           (Cylinder(0.1, 0.05), [0, 1e-3, -1], twin.FLAT),
                           (Wheel(0.3, 0.05), [1e-3, 0, 1], twin.INNER_CONTACT)]:
        assert impl.support_map(shape.rolling_shape(impl, COM), d)[0] == code


@pytest.mark.parity
def test_twin_and_kernel_support_maps_agree(rng):
    import nhphys_ext.rolling as ext

    from nhphys.twins import rolling as twin

    for shape in SHAPES:
        py, k = shape.rolling_shape(twin, COM), shape.rolling_shape(ext, COM)
        for d in rng.normal(size=(20, 3)):
            a, b = ext.support_map(k, d), twin.support_map(py, d)
            assert a[0] == b[0] == 0
            for x, y in zip(a[1:], b[1:]):
                assert np.abs(np.asarray(x) - y).max() <= 1e-15 * max(1.0, np.abs(y).max())


# -- contact events ------------------------------------------------------------------------------

def fall_from(lean, spin=0.0, turn=0.0):
    return kane.to_nhphys(np.array([0.0, lean, 0.0, 0.0, spin, turn * np.cos(lean), 0, 0]))


def test_disk_falling_flat_is_an_event_with_everything_before_it(backend, monkeypatch):
    driver = importlib.import_module("nhphys.simulate")
    monkeypatch.setattr(driver, "CHUNK_STEPS", 50)  # the event falls inside a chunk
    with pytest.raises(ContactEvent, match=r"t = 0\.12.*disk fell flat") as info:
        nhphys.simulate(on_plane(), 2.0, 1e-3, backend=backend, **fall_from(np.radians(60)))
    err = info.value
    assert isinstance(err, NewtonError)
    assert err.event == "flat"
    traj = err.trajectory
    assert traj.meta["event"]["event"] == "flat"
    assert len(traj) == err.step + 1  # every step up to the event
    np.testing.assert_allclose(traj.t, 1e-3 * np.arange(len(traj)), atol=1e-15)
    assert traj.t[-1] == pytest.approx(err.time)
    lean = kane.from_nhphys(traj.R, traj.omega, traj.contact_point)[:, 1]
    assert np.degrees(lean[-1]) > 88  # nearly flat, not NaN
    assert np.isfinite(traj.energy).all()
    assert traj.constraint_residual.max() <= 1e-14


@pytest.mark.parametrize("save_every", [1, 7])
def test_event_frames_in_both_backends(backend, save_every):
    """The twin stops at the same step as the kernel, and sparse saving keeps the saved steps."""
    with pytest.raises(ContactEvent) as info:
        nhphys.simulate(on_plane(), 0.2, 1e-3, backend=backend, save_every=save_every,
                        **fall_from(np.radians(60)))
    err = info.value
    assert err.step == 120 and err.event == "flat"
    traj = err.trajectory
    np.testing.assert_allclose(traj.t, 1e-3 * save_every * np.arange(len(traj)), atol=1e-15)
    assert len(traj) == 1 + err.step // save_every


def test_cylinder_rolling_onto_its_side_is_an_event(backend):
    system = RollingBody(cylinder_body(), Plane())
    # on its rim with the axis 0.1 rad above the ground: it topples onto its side
    with pytest.raises(ContactEvent, match="rolled from its rim onto its side") as info:
        nhphys.simulate(system, 2.0, 1e-3, backend=backend,
                        orientation=so3.exp([np.pi / 2 - 0.1, 0, 0]))
    assert info.value.event == "rim-to-side"
    assert 0 < info.value.time < 2.0
    assert len(info.value.trajectory) == info.value.step + 1


def test_wheel_falling_flat_is_an_inner_contact_event(backend):
    system = RollingBody(wheel_body(), Plane())
    with pytest.raises(ContactEvent, match="inner part of the tube") as info:
        nhphys.simulate(system, 2.0, 1e-3, backend=backend, orientation=so3.exp([0.6, 0, 0]))
    assert info.value.event == "inner contact"
    assert len(info.value.trajectory) == info.value.step + 1


def test_reference_stops_at_an_event_with_a_message():
    with pytest.raises(RuntimeError, match=r"reached a contact event near t = 0\.1.*: "
                                           "the disk fell flat"):
        nhphys.simulate(on_plane(), 0.5, 0.01, Reference(), **fall_from(np.radians(60)))


def test_disk_that_keeps_rolling_has_no_event(backend):
    traj = nhphys.simulate(on_plane(), 1.0, 1e-3, backend=backend,
                           **kane.to_nhphys(steady_state()))
    assert "event" not in traj.meta


# -- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("make, argument", [
    (lambda: Disk(0.0), "radius"),
    (lambda: Disk(-1.0), "radius"),
    (lambda: Wheel(0.0, 0.1), "radius"),
    (lambda: Wheel(1.0, -0.1), "tube_radius"),
    (lambda: Wheel(1.0, 1.0), "tube_radius"),
    (lambda: Wheel(1.0, 1.5), "tube_radius"),
    (lambda: Cylinder(-0.1, 1.0), "radius"),
    (lambda: Cylinder(0.1, 0.0), "half_length"),
    (lambda: Disk(1.0, flat_angle=0.0), "flat_angle"),
], ids=["disk-zero", "disk-negative", "wheel-zero", "tube-negative", "tube-equal",
        "tube-larger", "cylinder-radius", "cylinder-length", "flat-angle"])
def test_bad_dimensions(make, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        make()


def test_disk_placed_flat_is_refused(backend):
    system = on_plane()
    with pytest.raises(ValueError, match="`R0`.*disk lies flat"):
        # axis vertical: flat on the plane
        nhphys.simulate(system, 0.1, 1e-3, backend=backend, R0=np.eye(3))
    with pytest.raises(ValueError, match="`R0`.*lies on its side"):
        nhphys.simulate(RollingBody(cylinder_body(), Plane()), 0.1, 1e-3, backend=backend,
                        R0=so3.exp([np.pi / 2, 0, 0]))


def test_disk_matching_the_bowl_is_refused(backend):
    """Tilted 0.1 rad from lying flat in a bowl of radius 1, a disk of radius 0.1 has the
    bowl's curvature along its rim (rho / |d_perp| = R): it would touch along an arc."""
    system = RollingBody(disk_body(), Sphere(1.0).as_ground("inside"))
    with pytest.raises(ValueError, match="curvatures match"):
        nhphys.simulate(system, 0.01, 1e-3, backend=backend,
                        orientation=so3.exp([np.arcsin(0.1), 0, 0]), position=[0, 0, -1])


def test_disk_too_flat_for_the_bowl_does_not_fit():
    """Tilted 0.05 rad from lying flat, the disk's rim is less curved than the bowl along it
    (rho / |d_perp| = 2 > R = 1): I - S' A^T L_H A has the eigenvalue 1 - 2 = -1."""
    system = RollingBody(disk_body(), Sphere(1.0).as_ground("inside"))
    with pytest.raises(ValueError, match="does not fit.*eigenvalue -1 < 0"):
        nhphys.simulate(system, 0.01, 1e-3, R0=so3.exp([0.05, 0, 0]), ground_point=[0, 0, -1])
    traj = nhphys.simulate(system, 0.01, 1e-3, R0=so3.exp([0.2, 0, 0]), ground_point=[0, 0, -1])
    assert traj.contact_residual.max() <= 1e-14


def test_centre_of_mass_must_be_in_the_shape():
    with pytest.raises(ValueError, match="`com`"):
        nhphys.RigidBody(1.0, [1, 1, 2], Disk(0.1), com=[0, 0, 0.01])
    with pytest.raises(ValueError, match="`com`"):
        nhphys.RigidBody(1.0, [1, 1, 2], Wheel(0.3, 0.05), com=[0, 0, 0.06])
    body = nhphys.RigidBody(1.0, [1, 1, 2], Disk(0.1), com=[0.02, 0, 0])  # off-centre: fine
    assert body.com[0] == 0.02


# -- meshes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [Disk(0.1), Wheel(0.3, 0.05), Cylinder(0.1, 0.2)],
                         ids=["disk", "wheel", "cylinder"])
def test_meshes_are_closed_and_outward(shape):
    points, faces, normals = shape.mesh_arrays(32)
    # closed: every edge (between points, as vertices are repeated where normals jump) twice
    _, key = np.unique(points.round(12), axis=0, return_inverse=True)
    f = key.ravel()[faces]
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), 1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert (counts == 2).all()
    a, b, c = (points[faces[:, i]] for i in range(3))
    assert ((np.cross(b - a, c - a) * normals[faces].sum(1)).sum(1) > 0).all()
    assert np.abs(points[:, :2]).max() == pytest.approx(
        shape.radius + getattr(shape, "tube_radius", 0.0), rel=1e-12)
