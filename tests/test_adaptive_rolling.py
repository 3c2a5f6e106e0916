"""Adaptive DOP853 for rolling bodies: the compiled eq.-29 field (nhphys_ext.rolling.RollingField
and its twin nhphys.twins.rolling.RollingField), and the projected run of
nhphys.integrators.Adaptive on it.

Speed is not tested here (benchmarks/bench_work_precision.py measures it)."""

import importlib
import types

import numpy as np
import pytest

import nhphys
import nhphys.twins.rolling
from nhphys import conditions
from nhphys.errors import ContactEvent, NewtonError
from nhphys.integrators import Adaptive, Reference
from nhphys.integrators.adaptive import field_of
from nhphys.lie import so3
from nhphys.shapes import Disk
from nhphys.surfaces import Plane, Sphere, Torus
from nhphys.systems import RollingBody


def scene_setup(name):
    """``(system, start keywords)`` of the first body of the bundled scene ``name``."""
    entry = importlib.import_module(f"nhphys.scenes.{name}").scene.bodies[0]
    return entry.system, conditions.start_arguments(entry.system, entry.conditions)


def thin_disk():
    """The wobbling thin disk of benchmarks/bench_disk.py: lean 0.3, heading rate 4, lean rate
    0.1, spin of the steady circle (Kane's equations, nhphys.validation.kane_disk)."""
    from nhphys.validation import kane_disk as kane

    m, g, r, lean, turn = 1.0, 9.81, 0.1, 0.3, 4.0
    system = RollingBody(nhphys.RigidBody(m, Disk.solid_inertia(m, r), Disk(r)), Plane(),
                         gravity=g)
    y = np.array([0.0, lean, 0.0, 0.1, kane.steady_spin(lean, turn, m, g, r),
                  turn * np.cos(lean), 0.0, 0.0])
    return system, kane.to_nhphys(y)


def ellipsoid_on_torus():
    """The ellipsoid of the ellipsoid_plane scene on top of a torus's tube (outside)."""
    system, start = scene_setup("ellipsoid_plane")
    torus = RollingBody(system.body, Torus(1.0, 0.4), gravity=9.81)
    return torus, {"R0": start["R0"], "omega0": start["omega0"],
                   "ground_point": np.array([1.0, 0.0, 0.4])}


SETUPS = {
    "ellipsoid on a plane": lambda: scene_setup("ellipsoid_plane"),
    "rattleback": lambda: scene_setup("rattleback"),
    "thin disk": thin_disk,
    "ball in a bowl": lambda: scene_setup("ball_in_bowl"),
    "ellipsoid on a torus": ellipsoid_on_torus,
}


def random_states(system, start, rng, n):
    """(n, 15) reference states near the start: random rotations a little off the start's
    and off SO(3) (1e-4), the contact a little moved on the chart, random angular velocities."""
    y0 = system.reference_state(**start)
    states = np.empty((n, 15))
    for k in range(n):
        R = y0[:9].reshape(3, 3) @ so3.exp(rng.normal(size=3) * 0.05)
        states[k, :9] = (R + 1e-4 * rng.normal(size=(3, 3))).ravel()
        states[k, 9:11] = y0[9:11] + 1e-3 * rng.normal(size=2)
        states[k, 11:14] = rng.normal(size=3) * 3.0
        states[k, 14] = 0.0
    return states


def orthogonality(R):
    """max over frames of max |R^T R - I|: (n, 3, 3) -> float."""
    return np.abs(np.einsum("nki,nkj->nij", R, R) - np.eye(3)).max()


# -- the field ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SETUPS))
def test_field_is_the_reference_equations(backend, rng, name):
    # RollingBody.reference_rhs (its _rates: eq. 29 written for Reference, with forces and
    # moving grounds) is the specification; the field is written apart, on the twins' or the
    # kernels' support maps and ground charts
    system, start = SETUPS[name]()
    states = random_states(system, start, rng, 40 if backend == "cython" else 15)
    field, used = field_of(system, backend)
    assert used == backend
    for y in states:
        expected = system.reference_rhs(0.0, y)
        got = field(0.7, y)
        assert got.shape == (15,)
        scale = np.abs(expected).max()
        assert np.abs(got - expected).max() <= 1e-13 * scale, name
    assert field.evaluations == len(states)
    assert field.status == 0


@pytest.mark.parity
@pytest.mark.parametrize("name", list(SETUPS))
def test_kernel_field_equals_the_twin(rng, name):
    system, start = SETUPS[name]()
    states = random_states(system, start, rng, 30)  # reference_state: the ground chart
    fast, _ = field_of(system, "cython")
    slow, _ = field_of(system, "python")
    for y in states:
        f_fast, f_slow = fast(0.0, y), slow(0.0, y)
        assert np.abs(f_fast - f_slow).max() <= 1e-13 * np.abs(f_slow).max()
        p_fast, p_slow = y.copy(), y.copy()
        fast.project(p_fast)
        slow.project(p_slow)
        assert np.abs(p_fast - p_slow).max() <= 1e-15 * 4


@pytest.mark.parametrize("name", ["rattleback", "thin disk", "ellipsoid on a torus"])
def test_frame_is_reference_unpacks(backend, rng, name):
    # the saved frame of a state: reference_unpack (numpy, through RollingBody._rates) is the
    # specification, normal force included
    from nhphys.twins.rolling import FRAME_SIZE

    system, start = SETUPS[name]()
    states = random_states(system, start, rng, 10)
    field, _ = field_of(system, backend)
    for k, y in enumerate(states):
        y = y.copy()
        field.project(y)  # reference_unpack reads A as a rotation (A^T n)
        y[14] = 0.25 * k
        got = field.frame(y, 1.5)
        expected = system.reference_unpack(y[None], np.array([1.5]))
        flat = np.concatenate([np.ravel(expected[key][0]) for key, *_ in
                               nhphys.twins.rolling.FRAME_FIELDS])
        assert got.shape == (FRAME_SIZE,)
        assert np.abs(got - flat).max() <= 1e-13 * np.abs(flat).max(), name


def test_field_refuses_bad_states_and_reports_events(backend):
    system, start = thin_disk()
    y0 = system.reference_state(**start)
    field, _ = field_of(system, backend)
    np.testing.assert_array_equal(field(0.0, list(y0)), field(0.0, y0))
    with pytest.raises(ValueError):
        field(0.0, np.zeros(14))
    with pytest.raises(ValueError):
        field.project(np.zeros(14))
    # the disk lying flat: the support map's FLAT event, NaN rates, the status kept
    flat = y0.copy()
    flat[:9] = np.eye(3).ravel()
    out = field(0.0, flat)
    assert np.all(np.isnan(out))
    with pytest.raises(ValueError, match="regular contact"):
        field.frame(flat, 0.0)
    from nhphys.twins.newton import FLAT

    assert field.status == FLAT


def test_projection_keeps_the_body_normal_and_leaves_the_rest(backend, rng):
    # the rattleback on the plane z = 0 (normal k): the projected A is a rotation that keeps
    # the body's normal direction b = A^T k / |A^T k| of the state (so its contact point and
    # centre), as close to A as the closest rotation is (the SVD's W V^T, independent) up to
    # the distance from SO(3); z, Omega and W unchanged
    system, start = scene_setup("rattleback")
    field, _ = field_of(system, backend)
    k = np.array([0.0, 0.0, 1.0])
    for y in random_states(system, start, rng, 50):
        p = y.copy()
        field.project(p)
        A, R = y[:9].reshape(3, 3), p[:9].reshape(3, 3)
        assert np.abs(R.T @ R - np.eye(3)).max() <= 4e-16 * 2
        assert np.linalg.det(R) > 0
        b = A.T @ k / np.linalg.norm(A.T @ k)
        assert np.abs(R.T @ k - b).max() <= 4e-16
        W, _, Vt = np.linalg.svd(A)
        off = np.abs(A - W @ Vt).max()  # A's distance from SO(3)
        assert 1e-6 < off and np.abs(R - W @ Vt).max() <= 3 * off
        np.testing.assert_array_equal(p[9:], y[9:])
        q = p.copy()
        field.project(q)  # a rotation that keeps b is left as it is, to round-off
        assert np.abs(q - p).max() <= 4e-16


# -- the run --------------------------------------------------------------------------------------

def ellipsoid_gap(system, frames):
    """Signed distance of the ellipsoid from the plane z = 0, from its semi-axes D, orientation
    A and centre c = a - A com: the lowest point's height is c_z - sqrt(k^T A D^2 A^T k)
    (independent of the support maps of nhphys)."""
    D2 = np.diag(np.asarray(system.body.shape.semi_axes, float) ** 2)
    com = np.asarray(system.body.com, float)
    centre = frames.position - np.einsum("nij,j->ni", frames.R, com)
    k = np.array([0.0, 0.0, 1.0])
    Ak = np.einsum("nij,i->nj", frames.R, k)  # A^T k
    return centre[:, 2] - np.sqrt(np.einsum("ni,ij,nj->n", Ak, D2, Ak))


@pytest.fixture(scope="module")
def ellipsoid_reference():
    system, start = scene_setup("ellipsoid_plane")
    ref = nhphys.simulate(system, 2.0, 0.25, Reference(rtol=1e-12, atol=1e-14), **start)
    return system, start, ref


@pytest.mark.parametrize("loop", ["compiled", "scipy"])
def test_agrees_with_the_reference_and_stays_on_the_manifold(backend, ellipsoid_reference, loop):
    # Reference (rtol 1e-12) integrates RollingBody.reference_rhs; the adaptive run agrees to
    # a few rtol in orientation, centre and angular velocity at every frame, with the frames on
    # SO(3) and the ellipsoid touching the plane (independent gap) to round-off
    system, start, ref = ellipsoid_reference
    rtols = (1e-6, 1e-9) if backend == "python" else (1e-6, 1e-8, 1e-10)
    for rtol in rtols:
        traj = nhphys.simulate(system, 2.0, 0.25, Adaptive(rtol, rtol * 1e-2, loop=loop),
                               backend=backend, **start)
        assert traj.meta["backend"] == backend
        assert orthogonality(traj.R) <= 1e-13
        assert traj.constraint_residual.max() <= 1e-13
        assert np.abs(ellipsoid_gap(system, traj)).max() <= 1e-13
        error = max(np.abs(traj.R - ref.R).max(), np.abs(traj.omega - ref.omega).max(),
                    np.abs(traj.position - ref.position).max() / 0.1)
        assert error <= 20 * rtol, (rtol, error)
    # energy: the exact flow keeps it; the run's drift is of the size of the error
    assert np.ptp(traj.energy) <= 20 * rtol * abs(traj.energy[0])


@pytest.mark.parametrize("loop", ["compiled", "scipy"])
def test_projection_does_not_spoil_the_accuracy(backend, ellipsoid_reference, loop):
    # the same run without the projection (same solver, same restarts): the projected run is as
    # close to the reference, its frames are on SO(3), the others are not
    system, start, ref = ellipsoid_reference
    rtol = 1e-7
    runs = {}
    for projected in (True, False):
        run = Adaptive(rtol, rtol * 1e-2, loop=loop).start(system, 0.25, backend, **start)
        if not projected:
            # the same field, its projection switched off
            field = run.field
            run.field = types.SimpleNamespace(
                project=lambda y, t=0.0: None, chart=field.chart, status=0, frame=field.frame,
                integrate=lambda *args: field.integrate(*args, project=False))
        runs[projected] = run.advance(8, 1)
    errors = {key: np.abs(frames["R"] - ref.R[1:]).max() for key, frames in runs.items()}
    assert orthogonality(runs[False]["R"]) > 1e-13  # the unprojected solution leaves SO(3)
    assert orthogonality(runs[True]["R"]) <= 1e-13
    assert errors[True] <= 1.5 * errors[False]


@pytest.fixture(scope="module")
def disk_reference():
    """The thin disk and its state at 10 s by Reference at rtol 1e-13."""
    system, start = thin_disk()
    ref = nhphys.simulate(system, 10.0, 10.0, Reference(rtol=1e-13, atol=1e-15), **start)
    return system, start, ref


def disk_error(traj, ref):
    """The largest error at 10 s in the orientation, the angular velocity (relative) and the
    contact point (per radius)."""
    return max(np.abs(traj.R[1] - ref.R[1]).max(),
               np.abs(traj.omega[1] - ref.omega[1]).max() / np.abs(ref.omega[1]).max(),
               np.abs(traj.contact_point[1] - ref.contact_point[1]).max() / 0.1)


@pytest.mark.parametrize("rtol", [1e-5, 1e-7])
def test_projection_keeps_the_accuracy_of_the_wobbling_disk(backend, disk_reference, rtol):
    # the thin disk is where a projection that tilts the body's normal (the polar factor
    # alone) lost accuracy: 10-s errors 60 and 44 times the unprojected solver's at rtol 1e-5
    # and 1e-7 (this metric). Keeping the normal, the projected run is as accurate as the
    # unprojected one (1.4x at rtol 1e-5, 0.82x at 1e-7), with the frames on the manifold
    system, start, ref = disk_reference
    errors = {}
    for projected in (True, False):
        run = Adaptive(rtol, rtol * 1e-2).start(system, 10.0, backend, **start)
        if not projected:
            field = run.field
            run.field = types.SimpleNamespace(
                project=lambda y, t=0.0: None, chart=field.chart, status=0, frame=field.frame,
                integrate=lambda *args: field.integrate(*args, project=False))
        frames = run.advance(1, 1)
        errors[projected] = max(np.abs(frames["R"][0] - ref.R[1]).max(),
                                np.abs(frames["omega"][0] - ref.omega[1]).max()
                                / np.abs(ref.omega[1]).max(),
                                np.abs(frames["contact_point"][0] - ref.contact_point[1]).max()
                                / 0.1)
        if projected:
            assert orthogonality(frames["R"]) <= 1e-14
            assert frames["constraint_residual"].max() <= 1e-14
    assert errors[True] <= 2 * errors[False], errors


def test_ball_in_a_bowl_oscillates_with_the_rolling_period(backend):
    # independent fact: a homogeneous ball of radius r in a spherical bowl of radius R
    # oscillates (small amplitude) with the period 2 pi sqrt(7 (R - r) / (5 g))
    r, R, g = 0.1, 1.0, 9.81
    ball = nhphys.RigidBody(1.0, [0.4 * r * r] * 3, Sphere(r))
    system = RollingBody(ball, Sphere(R).as_ground("inside"), gravity=g)
    theta = 0.01
    start = {"position": [(R - r) * np.sin(theta), 0.0, -(R - r) * np.cos(theta)],
             "omega": [0.0, 0.0, 0.0]}
    period = 2 * np.pi * np.sqrt(7 * (R - r) / (5 * g))
    traj = nhphys.simulate(system, 1.5 * period, period / 200, Adaptive(1e-10, 1e-12),
                           backend=backend, save_every=1, **start)
    x = traj.position[:, 0]
    i = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))
    crossings = traj.t[i] - x[i] * (traj.t[i + 1] - traj.t[i]) / (x[i + 1] - x[i])
    measured = 2.0 * (crossings[1] - crossings[0])
    # the amplitude correction of a pendulum, theta^2 / 16 = 6e-6, bounds the difference
    assert abs(measured / period - 1) <= 2e-5
    assert orthogonality(traj.R) <= 1e-13
    assert traj.constraint_residual.max() <= 1e-13


def test_a_contact_event_ends_the_run(backend):
    # the Euler disk scene falls flat within 0.07 s: the run stops with the event
    system, start = scene_setup("euler_disk")
    with pytest.raises(ContactEvent, match="fell flat") as info:
        nhphys.simulate(system, 0.5, 0.01, Adaptive(1e-8, 1e-10), backend=backend, **start)
    assert info.value.event == "flat"
    assert 0.0 < info.value.time < 0.1


def test_refuses_callables_and_prescribed_ground_motions():
    system, start = scene_setup("ellipsoid_plane")
    pushed = RollingBody(system.body, Plane(), forces=[
        nhphys.forces.Force(lambda t, state: [0.1, 0.0, 0.0])])
    with pytest.raises(ValueError, match="callable.*Reference"):
        nhphys.simulate(pushed, 0.1, 0.05, Adaptive(), **start)
    moved = RollingBody(system.body, Plane().moving(
        lambda t: (np.eye(3), [0.1 * t, 0.0, 0.0], [0.0, 0.0, 0.0], [0.1, 0.0, 0.0])))
    with pytest.raises(ValueError, match="PrescribedMotion needs Reference"):
        nhphys.simulate(moved, 0.1, 0.05, Adaptive(), **start)


# -- the compiled DOP853 loop (RollingField.integrate; also tests/test_dop853_loop.py) ----------

def test_loop_reports_its_failures(backend):
    system, start = thin_disk()
    y0 = system.reference_state(**start)
    field, _ = field_of(system, backend)
    y = y0.copy()
    status, code, _, steps = field.integrate(y, 0.0, 1.0, 1e-12, 1e-14, 0.0, 3)
    assert (status, code, steps) == (0, 1, 3)  # TOO_MANY_STEPS, y at the third step
    with pytest.raises(ValueError):
        field.integrate(np.zeros(14), 0.0, 1.0, 1e-6, 1e-8, 0.0, 10)
    with pytest.raises(NewtonError, match="more than max_steps"):
        nhphys.simulate(system, 1.0, 0.5, Adaptive(1e-12, 1e-14, max_steps=3), backend=backend,
                        **start)


def test_compiled_loop_is_dop853():
    with pytest.raises(ValueError, match="loop"):
        Adaptive(loop="fortran")
    top = nhphys.systems.Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1])
    with pytest.raises(ValueError, match="loop='scipy'"):
        nhphys.simulate(top, 1.0, 0.5, Adaptive(method="DOPRI5", loop="compiled"),
                        omega=[1.0, 0.5, 0.0])
    system, start = scene_setup("ellipsoid_plane")
    with pytest.raises(ValueError, match="loop='scipy'"):
        nhphys.simulate(system, 1.0, 0.5, Adaptive(method="DOPRI5", loop="compiled"), **start)


@pytest.mark.kernels_only("20 s of the rattleback take 0.6 s on the kernels, minutes on the "
                          "twins (the numpy support map of the ellipsoid)")
def test_rattleback_reverses_its_spin(backend):
    # Kane & Levinson's rattleback spun at +5 rad/s about the vertical slows, rocks and turns
    # the other way (their 1982 paper; the scene's docstring): the vertical spin changes sign
    # once and stays reversed, as the retraction integrator finds it (order 4, dt = 1e-3)
    system, start = scene_setup("rattleback")
    traj = nhphys.simulate(system, 20.0, 0.01, Adaptive(1e-9, 1e-11), backend=backend, **start)
    spin = np.einsum("nij,nj->ni", traj.R, traj.omega)[:, 2]
    flips = np.flatnonzero(np.sign(spin[:-1]) != np.sign(spin[1:]))
    assert spin[0] > 4.9 and spin[-1] < -0.5
    other = nhphys.simulate(system, 20.0, 1e-3, nhphys.integrators.Retraction("exp", order=4),
                            backend=backend, save_every=10, **start)
    spin_other = np.einsum("nij,nj->ni", other.R, other.omega)[:, 2]
    flips_other = np.flatnonzero(np.sign(spin_other[:-1]) != np.sign(spin_other[1:]))
    assert abs(traj.t[flips[0]] - other.t[flips_other[0]]) <= 0.02
    assert np.abs(spin - spin_other).max() <= 1e-3
    assert orthogonality(traj.R) <= 1e-13
    assert traj.constraint_residual.max() <= 1e-13


def test_checkpoint_resumes_bit_for_bit(backend):
    system, start = thin_disk()
    integrator = Adaptive(1e-9, 1e-11)
    whole = integrator.start(system, 0.05, backend, **start)
    frames = whole.advance(8, 2)
    first = integrator.start(system, 0.05, backend, **start)
    first.advance(4, 2)
    saved = first.checkpoint()
    second = integrator.start(system, 0.05, backend, **start)
    second.restore(saved)
    rest = second.advance(4, 2)
    np.testing.assert_array_equal(rest["R"], frames["R"][2:])
    np.testing.assert_array_equal(rest["omega"], frames["omega"][2:])
    np.testing.assert_array_equal(rest["contact_point"], frames["contact_point"][2:])


# -- force elements ------------------------------------------------------------------------------

def forced_setups():
    """Rolling bodies with built-in force elements: (name, system, start)."""
    F = nhphys.forces
    egg, egg_start = scene_setup("ellipsoid_plane")
    disk, disk_start = thin_disk()
    return [
        ("ellipsoid, scheduled torque, spring, drag",
         RollingBody(egg.body, Plane(), forces=[
             F.Torque(F.Schedule([0.0, 0.5, 1.0], [[0, 0, 0.02], [0, 0.01, 0.0], [0, 0, 0]])),
             F.Spring(anchor=[0.3, 0.0, 0.1], stiffness=4.0), F.LinearDrag(0.3)]), egg_start),
        ("disk, rolling resistance and damping about the normal",
         RollingBody(disk.body, Plane(), forces=[F.RollingResistance(0.002),
                                                 F.AngularDamping(0.001, about="normal")]),
         disk_start),
    ]


@pytest.mark.parametrize("case", range(2))
def test_forced_field_is_the_reference_equations(backend, rng, case):
    # reference_rhs with its force set (RollingBody._rates: the applied wrench, rolling
    # resistance linear in dOmega/dt, the power of the non-potential elements into W)
    name, system, start = forced_setups()[case]
    states = random_states(system, start, rng, 20 if backend == "cython" else 8)
    field, _ = field_of(system, backend)
    for k, y in enumerate(states):
        t = 0.3 * k
        expected = system.reference_rhs(t, y)
        got = field(t, y)
        assert np.abs(got - expected).max() <= 1e-13 * np.abs(expected).max(), name
        assert abs(got[14]) > 0 or case == 0  # dissipation does work
        y = y.copy()
        field.project(y)
        frame = field.frame(y, t)
        expected = system.reference_unpack(y[None], np.array([t]))["normal_force"][0]
        assert abs(frame[31] - expected) <= 1e-13 * abs(expected)


@pytest.mark.parametrize("case", range(2))
def test_forced_run_agrees_with_the_reference(backend, case):
    name, system, start = forced_setups()[case]
    T = 1.0 if backend == "cython" else 0.5
    ref = nhphys.simulate(system, T, 0.25, Reference(rtol=1e-12, atol=1e-14), **start)
    # at rtol 1e-10 the errors after 1 s are 2e-11 (ellipsoid) and 2e-10 (disk) in R, 4e-11
    # and 5e-9 relative in Omega (the wobbling disk amplifies them, as without forces), and
    # they fall tenfold per decade of rtol (measured from 1e-9 to 1e-11)
    rtol = 1e-10
    traj = nhphys.simulate(system, T, 0.25, Adaptive(rtol, rtol * 1e-2), backend=backend,
                           **start)
    assert np.abs(traj.R - ref.R).max() <= 10 * rtol, name
    assert np.abs(traj.omega - ref.omega).max() <= 100 * rtol * np.abs(ref.omega).max(), name
    np.testing.assert_allclose(traj.work, ref.work, rtol=0, atol=1e-9 * abs(ref.energy[0]))
    # energy minus work is conserved (the independent balance of the force elements)
    balance = traj.energy - traj.work
    assert np.ptp(balance) <= 1e-8 * abs(traj.energy[0]), name
    assert orthogonality(traj.R) <= 1e-13


# -- moving grounds --------------------------------------------------------------------------------

def moving_setups():
    """Rolling bodies on moving grounds: (name, system, start)."""
    egg, egg_start = scene_setup("ellipsoid_plane")
    F = nhphys.forces
    return [
        ("ellipsoid on a wobbling table",  # turning about an axis off the table's normal
         RollingBody(egg.body, Plane().moving(rate=1.5, axis=[0.15, -0.1, 1.0],
                                              center=[0.05, 0.0, 0.0])), egg_start),
        ("ellipsoid on a moving floor, with drag and rolling resistance",
         RollingBody(egg.body, Plane().moving(velocity=[0.3, -0.2, 0.0]),
                     forces=[F.LinearDrag(0.3), F.RollingResistance(0.002)]), egg_start),
        ("ellipsoid on a turning torus",  # on top of the tube, the torus turning about z
         RollingBody(egg.body, Torus(1.0, 0.4).moving(rate=0.8), gravity=9.81),
         {"R0": egg_start["R0"], "omega0": egg_start["omega0"],
          "ground_point": [1.0, 0.0, 0.4]}),
        ("ball in a bowl turning about a tilted axis", RollingBody(
            scene_setup("ball_in_bowl")[0].body,
            Sphere(1.0).as_ground("inside").moving(rate=2.0, axis=[0.1, 0.0, 1.0])),
         {"R0": np.eye(3), "omega0": [1.0, 2.0, 0.5],
          "ground_point": [np.sin(0.4), 0.0, -np.cos(0.4)]}),
    ]


@pytest.mark.parametrize("case", range(4))
def test_moving_ground_field_is_the_reference_equations(backend, rng, case):
    # RollingBody._rates ("Moving ground": the contact in the ground's frame, a_V, the
    # ground's power F . V) is the specification, at several times of the motion
    name, system, start = moving_setups()[case]
    states = random_states(system, start, rng, 20 if backend == "cython" else 8)
    field, used = field_of(system, backend)
    assert used == backend
    for k, y in enumerate(states):
        t = 0.37 * k
        expected = system.reference_rhs(t, y)
        got = field(t, y)
        assert np.abs(got - expected).max() <= 1e-13 * np.abs(expected).max(), name
        assert abs(got[14]) > 0, name  # the ground does work
        y = y.copy()
        field.project(y)
        frame = field.frame(y, t)
        unpacked = system.reference_unpack(y[None], np.array([t]))
        flat = np.concatenate([np.ravel(unpacked[key][0]) for key, *_ in
                               nhphys.twins.rolling.FRAME_FIELDS])
        assert np.abs(frame - flat).max() <= 1e-13 * np.abs(flat).max(), name


@pytest.mark.parity
@pytest.mark.parametrize("case", range(4))
def test_kernel_field_equals_the_twin_on_moving_grounds(rng, case):
    name, system, start = moving_setups()[case]
    states = random_states(system, start, rng, 20)
    fast, _ = field_of(system, "cython")
    slow, _ = field_of(system, "python")
    for k, y in enumerate(states):
        a, b = fast(0.3 * k, y), slow(0.3 * k, y)
        assert np.abs(a - b).max() <= 1e-13 * np.abs(b).max(), name


@pytest.mark.parametrize("case", range(3))
def test_moving_ground_run_agrees_with_the_reference(backend, case):
    # (not the turning bowl: its runs err 30-80 rtol against a Reference at rtol 1e-13 that
    # agrees with Retraction(order=8) to 1e-10 there; docs/adaptive.md)
    name, system, start = moving_setups()[case]
    T = 2.0 if backend == "cython" else 0.5
    ref = nhphys.simulate(system, T, 0.25, Reference(rtol=1e-12, atol=1e-14), **start)
    for rtol in (1e-6, 1e-9):
        traj = nhphys.simulate(system, T, 0.25, Adaptive(rtol, rtol * 1e-2), backend=backend,
                               **start)
        assert traj.meta["backend"] == backend
        # measured on the wobbling table over 2 s: 1.2e-6 and 1.2e-9 in R, 1.3e-7 and 7.6e-10
        # m in position
        assert np.abs(traj.R - ref.R).max() <= 10 * rtol, name
        assert np.abs(traj.position - ref.position).max() <= 10 * rtol, name
        np.testing.assert_allclose(traj.work, ref.work, rtol=0,
                                   atol=10 * rtol * np.abs(ref.work).max())
        # every frame on the manifold, in contact and without slip relative to the ground
        assert orthogonality(traj.R) <= 1e-14
        assert traj.constraint_residual.max() <= 1e-14
        assert traj.slip_residual.max() <= 1e-14


def test_a_ball_on_a_turntable_circles_at_two_sevenths_of_its_rate_adaptively(backend):
    # the closed form of tests/test_moving_ground.py: the centre goes round a fixed circle at
    # 2 W / 7; after 20 turns of the table at rtol 1e-12 it is within 5e-10 of it (measured)
    from test_moving_ground import BALL_IC, W, circle_error, solid_ball

    system = RollingBody(solid_ball(), Plane().moving(rate=W))
    turns = 20 if backend == "cython" else 2
    traj = nhphys.simulate(system, turns * 2 * np.pi / W, 0.05, Adaptive(1e-12, 1e-14),
                           backend=backend, **BALL_IC)
    assert circle_error(traj, 2 * W / 7) < 1e-8
    assert traj.constraint_residual.max() <= 1e-14
    # the table does work on the ball; energy - work is the conserved quantity
    assert np.abs(traj.work).max() > 0.1
    assert np.ptp(traj.energy - traj.work) <= 1e-9 * np.abs(traj.work).max()
