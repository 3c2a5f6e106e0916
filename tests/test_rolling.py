"""A convex body rolling without slipping: the integrator against independent facts."""

import numpy as np
import pytest

import nhphys
from nhphys import conditions
from nhphys.integrators import Reference, Retraction
from nhphys.lie import so3
from nhphys.surfaces import Ellipsoid, HeightField, Plane, Sphere, Torus
from nhphys.systems import RollingBody

MAPS = ["exp", "cayley"]
G = 9.81


def log_log_slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


def solid_ball(radius=0.1, mass=1.0):
    return nhphys.RigidBody(mass, [0.4 * mass * radius**2] * 3, Sphere(radius))


def solid_ellipsoid(axes=(0.1, 0.08, 0.06), mass=1.0):
    a, b, c = axes
    inertia = mass / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return nhphys.RigidBody(mass, inertia, Ellipsoid(axes))


ELLIPSOID_IC = {"orientation": so3.exp([0.2, 0.1, 0.0]), "omega": [1.0, 0.5, 2.0]}
TORUS_IC = {"omega": [0.5, -1.0, 0.2], "position": [0.3, 0.95, 0.35]}
PIPE_IC = {"omega": [2.0, 0.5, 0.3], "position": [1.1, 0.0, -0.38]}  # inside the tube


def on_twins(steps, ms=8):
    """The reason a run of ``steps`` rolling steps (``ms`` each on the twins, measured) is left
    to the kernels."""
    seconds = 1e-3 * ms * steps
    took = f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"
    return f"{steps:,} rolling steps take about {took} on the twins ({ms} ms a step)"


@pytest.fixture(scope="module")
def ellipsoid_on_plane():
    system = RollingBody(solid_ellipsoid(), Plane())
    ref = nhphys.simulate(system, 10.0, 0.1, Reference(rtol=1e-13, atol=1e-15), **ELLIPSOID_IC)
    return system, ref


@pytest.fixture(scope="module")
def ball_in_torus():
    # inside the tube (a ball in a ring-shaped pipe): the body presses on the ground throughout
    system = RollingBody(solid_ball(), Torus(1.0, 0.4).as_ground("inside"))
    ref = nhphys.simulate(system, 2.0, 0.1, Reference(rtol=1e-12, atol=1e-14), **PIPE_IC)
    return system, ref


# -- closed forms --------------------------------------------------------------------------------

def test_ball_in_a_bowl_has_the_small_amplitude_period(backend):
    r, R = 0.1, 1.0
    system = RollingBody(solid_ball(r), Sphere(R).as_ground("inside"))
    angle = 0.01 / R  # released at rest 0.01 from the bottom
    traj = nhphys.simulate(system, 2.5, 1e-3, backend=backend,
                           position=[R * np.sin(angle), 0.0, -R * np.cos(angle)])
    x = traj.position[:, 0]
    i = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))
    crossings = traj.t[i] - x[i] * (traj.t[i + 1] - traj.t[i]) / (x[i + 1] - x[i])
    period = 2 * (crossings[1] - crossings[0])
    expected = 2 * np.pi * np.sqrt(7 * (R - r) / (5 * G))
    assert period == pytest.approx(expected, rel=1e-3)
    assert traj.constraint_residual.max() <= 1e-12


def test_ball_on_a_plane_keeps_its_velocity_and_spin(backend):
    system = RollingBody(solid_ball(0.1), Plane())
    omega0 = np.array([0.7, -1.3, 2.1])  # rolling plus a spin about the vertical
    traj = nhphys.simulate(system, 10.0, 0.01, backend=backend, omega=omega0,
                           position=[0.0, 0.0, 0.0])
    spatial = np.einsum("nij,nj->ni", traj.R, traj.omega)
    np.testing.assert_allclose(spatial, np.tile(omega0, (len(traj), 1)), atol=1e-12)
    v0 = np.cross(omega0, [0.0, 0.0, 0.1])  # da/dt = omega x (a - x)
    np.testing.assert_allclose(traj.position, traj.position[0] + traj.t[:, None] * v0,
                               atol=1e-12)
    assert traj.constraint_residual.max() <= 1e-12


# -- against the reference integration of eq. (29) ------------------------------------------------

@pytest.mark.kernels_only(on_twins(40_000))
def test_ellipsoid_on_plane_agrees_with_reference(backend, ellipsoid_on_plane):
    system, ref = ellipsoid_on_plane
    errors = {}
    for order in (2, 4):
        traj = nhphys.simulate(system, 10.0, 1e-3, Retraction(order=order), backend=backend,
                               save_every=100, **ELLIPSOID_IC)
        errors[order] = (np.abs(traj.R - ref.R).max(),
                         np.abs(traj.contact_point - ref.contact_point).max())
    # second order at h = 1e-3: measured 8.3e-5 (orientation) and 1.4e-5 (contact point)
    assert max(errors[2]) < 1.2e-4
    # the fourth-order composition at the same step: measured 2.0e-8 and 3.4e-9
    assert max(errors[4]) < 1e-6


@pytest.mark.kernels_only(on_twins(3500))
@pytest.mark.parametrize("name", MAPS)
def test_order_two_on_a_plane(backend, ellipsoid_on_plane, name):
    system, ref = ellipsoid_on_plane
    hs = [0.004, 0.002, 0.001]
    errs = []
    for h in hs:
        traj = nhphys.simulate(system, 2.0, h, Retraction(name), backend=backend,
                               save_every=round(0.1 / h), **ELLIPSOID_IC)
        errs.append(max(np.abs(traj.R - ref.R[:21]).max(),
                        np.abs(traj.contact_point - ref.contact_point[:21]).max()))
    assert log_log_slope(hs, errs) == pytest.approx(2.0, abs=0.15)


@pytest.mark.parametrize("name", MAPS)
def test_order_two_on_a_torus(backend, ball_in_torus, name):
    system, ref = ball_in_torus
    hs = [0.01, 0.005, 0.0025]
    errs = []
    for h in hs:
        traj = nhphys.simulate(system, 2.0, h, Retraction(name), backend=backend,
                               save_every=round(0.1 / h), **PIPE_IC)
        assert traj.constraint_residual.max() <= 1e-12
        assert traj.normal_force[1:].min() > 0
        errs.append(max(np.abs(traj.R - ref.R).max(),
                        np.abs(traj.contact_point - ref.contact_point).max()))
    assert log_log_slope(hs, errs) == pytest.approx(2.0, abs=0.15)


@pytest.mark.kernels_only(on_twins(10_500))
@pytest.mark.parametrize("name", MAPS)
def test_order_four_composition(backend, ellipsoid_on_plane, name):
    system, ref = ellipsoid_on_plane
    hs = [0.004, 0.002, 0.001]
    errs = []
    for h in hs:
        traj = nhphys.simulate(system, 2.0, h, Retraction(name, order=4), backend=backend,
                               save_every=round(0.1 / h), **ELLIPSOID_IC)
        errs.append(max(np.abs(traj.R - ref.R[:21]).max(),
                        np.abs(traj.contact_point - ref.contact_point[:21]).max()))
    assert log_log_slope(hs, errs) == pytest.approx(4.0, abs=0.3)


# -- structure -----------------------------------------------------------------------------------

def _state(run):
    return [x.copy() for x in (run.A, run.a, run.Pi, run.p)]


@pytest.mark.parametrize("name", MAPS)
@pytest.mark.parametrize("where", ["plane", "torus"])
def test_step_then_reverse_step_returns(backend, name, where):
    if where == "plane":
        system, ic = RollingBody(solid_ellipsoid(), Plane()), ELLIPSOID_IC
    else:
        system, ic = RollingBody(solid_ball(), Torus(1.0, 0.4)), TORUS_IC
    start = conditions.start_arguments(system, conditions.resolve(system, ic))
    run = Retraction(name).start(system, 0.01, backend, **start)
    run.advance(5, 1)
    before = _state(run)
    run.advance(1, 1)
    run.dt = -run.dt
    run.xi *= -1
    run.advance(1, 1)
    for x, y in zip(before, _state(run)):
        assert np.abs(x - y).max() <= 1e-12


@pytest.mark.parametrize("ground, ic", [
    (Sphere(1.0).as_ground("inside"), {"omega": [1.0, 2.0, 0.5], "position": [0.2, 0, -1]}),
    (Torus(1.0, 0.4).as_ground("inside"), PIPE_IC),  # inside the tube, like a ball in a pipe
    (HeightField.from_function("0.05*sin(2*x)*cos(2*y)", (-4, 4), (-4, 4), samples=129),
     {"omega": [1.0, 3.0, 0.0], "position": [0.0, 0.0, 0.0]}),
], ids=["bowl", "inside-torus", "terrain"])
@pytest.mark.kernels_only(on_twins(5000, ms=8))
def test_residuals_at_round_off_on_curved_grounds(backend, ground, ic):
    system = RollingBody(solid_ellipsoid((0.1, 0.09, 0.08)), ground)
    traj = nhphys.simulate(system, 10.0, 0.002, backend=backend, **ic)
    assert traj.contact_residual.max() <= 1e-12
    assert traj.slip_residual.max() <= 1e-12
    rel = np.abs(traj.energy - traj.energy[0]) / np.abs(traj.energy).max()
    half = len(rel) // 2
    assert rel.max() < 1e-4
    assert rel[half:].max() <= 1.5 * rel[:half].max()  # bounded, no drift
    assert traj.normal_force[1:].min() > 0  # the body presses on the ground throughout


@pytest.mark.kernels_only(on_twins(1_000_000))
def test_orthogonality_after_a_million_steps(backend):
    system = RollingBody(solid_ellipsoid(), Plane())
    traj = nhphys.simulate(system, 1000.0, 1e-3, backend=backend, save_every=100_000,
                           **ELLIPSOID_IC)
    R = traj.R[-1]
    assert np.abs(R.T @ R - np.eye(3)).max() <= 1e-12
    assert traj.constraint_residual.max() <= 1e-12
    rel = np.abs(traj.energy / traj.energy[0] - 1)
    assert rel.max() < 2e-6  # measured 7.7e-7 over the 1000 s, no drift


def rattleback():
    """Kane & Levinson's rattleback (the bundled scene's body), tilted and spun at 5 rad/s."""
    inertia = 1e-4 * np.array([[2.0, -0.2, 0.0], [-0.2, 16.0, 0.0], [0.0, 0.0, 17.0]])
    body = nhphys.RigidBody(1.0, inertia, Ellipsoid([0.2, 0.03, 0.02]), com=[0, 0, -0.01])
    tilt = np.deg2rad(0.5)
    return RollingBody(body, Plane()), dict(R0=so3.exp([tilt, tilt, 0.0]), omega0=[0, 0, 5.0])


PARITY = {
    "ball-in-bowl": lambda: (RollingBody(solid_ball(), Sphere(1.0).as_ground("inside")),
                             dict(omega0=[1.0, 2.0, 0.5], ground_point=[0.2, 0, -1])),
    "rattleback": rattleback,
}


@pytest.mark.parity
@pytest.mark.slow
@pytest.mark.parametrize("order", [2, 4])
@pytest.mark.parametrize("case", list(PARITY))
def test_kernel_and_twin_agree_over_ten_thousand_steps(case, order):
    system, ic = PARITY[case]()
    kw = dict(save_every=1000, **ic)
    a = nhphys.simulate(system, 10.0, 1e-3, Retraction(order=order), backend="cython", **kw)
    b = nhphys.simulate(system, 10.0, 1e-3, Retraction(order=order), backend="python", **kw)
    assert a.meta["backend"] == "cython" and b.meta["backend"] == "python"
    for field in ("R", "position", "contact_point", "body_contact"):
        assert np.abs(a[field] - b[field]).max() <= 1e-10
    assert np.abs(a.omega - b.omega).max() <= 1e-10 * np.abs(b.omega).max()


@pytest.mark.parity
@pytest.mark.parametrize("integrator, steps", [
    (Retraction("exp"), 10_000), (Retraction("cayley"), 1_000),
    (Retraction("exp", order=4), 500),
], ids=["exp", "cayley", "exp-order4"])
def test_kernel_and_twin_trajectories_agree(integrator, steps):
    system = RollingBody(solid_ellipsoid(), Plane())
    kw = {"save_every": steps // 10, **ELLIPSOID_IC}
    a = nhphys.simulate(system, steps * 1e-3, 1e-3, integrator, backend="cython", **kw)
    b = nhphys.simulate(system, steps * 1e-3, 1e-3, integrator, backend="python", **kw)
    assert np.abs(a.R - b.R).max() <= 1e-10
    assert np.abs(a.position - b.position).max() <= 1e-10
    assert np.abs(a.omega - b.omega).max() <= 1e-10 * np.abs(b.omega).max()


# -- the momentum map of a horizontal plane (eq. 43) -----------------------------------------------

def test_momentum_map_of_a_ball_is_conserved(backend):
    system = RollingBody(solid_ball(0.1), Plane())
    traj = nhphys.simulate(system, 5.0, 0.01, backend=backend, omega=[0.7, -1.3, 2.1],
                           position=[1, 2, 0])
    J_rot, J_trans = system.momentum_map(traj)
    assert np.ptp(J_rot) <= 1e-13 * max(1.0, abs(J_rot[0]))
    assert np.abs(J_trans - J_trans[0]).max() <= 1e-13


def test_momentum_map_evolution_of_an_ellipsoid(ellipsoid_on_plane):
    # dJ_rot/dt = k . (x x F) and dJ_trans/dt = F - m g k, with F = m d2a/dt2 + m g k
    system, _ = ellipsoid_on_plane
    ref = nhphys.simulate(system, 1.0, 0.001, Reference(rtol=1e-12, atol=1e-14), save_every=1,
                          **ELLIPSOID_IC)
    J_rot, J_trans = system.momentum_map(ref)
    h = 0.001
    acc = (ref.position[2:] - 2 * ref.position[1:-1] + ref.position[:-2]) / h**2
    force = system.mass * (acc + G * system.up)
    dJ_rot = (J_rot[2:] - J_rot[:-2]) / (2 * h)
    dJ_trans = (J_trans[2:] - J_trans[:-2]) / (2 * h)
    torque = np.cross(ref.contact_point[1:-1], force) @ system.up
    assert np.abs(dJ_rot).max() > 1e-2  # not conserved for an ellipsoid ...
    np.testing.assert_allclose(dJ_rot, torque, atol=1e-4 * np.abs(dJ_rot).max())  # ... but this
    np.testing.assert_allclose(dJ_trans, force - system.mass * G * system.up,
                               atol=1e-4 * np.abs(force).max())


# -- input checking ------------------------------------------------------------------------------

def test_bad_bodies_and_grounds():
    with pytest.raises(ValueError, match="`com` to lie inside"):
        nhphys.RigidBody(1.0, [1, 1, 1], Sphere(0.1), com=[0, 0, 0.2])
    with pytest.raises(ValueError, match="strictly convex"):
        nhphys.RigidBody(1.0, [1, 1, 1], Torus(1.0, 0.3))
    with pytest.raises(TypeError, match="`shape`"):
        nhphys.RigidBody(1.0, [1, 1, 1], "sphere")
    with pytest.raises(ValueError, match="`mass`"):
        nhphys.RigidBody(0.0, [1, 1, 1], Sphere(0.1))
    with pytest.raises(ValueError, match="positive definite"):
        nhphys.RigidBody(1.0, [1, -1, 1], Sphere(0.1))
    with pytest.raises(TypeError, match="`ground`"):
        RollingBody(solid_ball(), "floor")
    with pytest.raises(ValueError, match="`gravity`"):
        RollingBody(solid_ball(), Plane(), gravity=-1.0)


def test_bad_initial_conditions():
    system = RollingBody(solid_ball(), Plane())
    with pytest.raises(ValueError, match="`omega0`"):
        nhphys.simulate(system, 1.0, 0.1, omega0=[np.nan, 0, 0])
    with pytest.raises(ValueError, match="`R0`"):
        nhphys.simulate(system, 1.0, 0.1, R0=np.ones((3, 3)))
    with pytest.raises(ValueError, match="`ground_point`"):
        nhphys.simulate(system, 1.0, 0.1, ground_point=[0, 0])
    with pytest.raises(ValueError, match="`order`"):
        Retraction(order=3)


def test_matching_curvatures_are_reported(backend):
    # a ball of the bowl's own radius: Lambda = 1/r - 1/R = 0
    system = RollingBody(solid_ball(0.5), Sphere(0.5).as_ground("inside"))
    with pytest.raises(ValueError, match="Lambda is singular"):
        nhphys.simulate(system, 1.0, 0.1, backend=backend, position=[0, 0, -0.5])


@pytest.mark.kernels_only(on_twins(5000, ms=6))
def test_lift_off_is_reported(backend):
    # rolling over the outside of a torus, the body reaches its underside: the contact force
    # must pull to keep it there, which a real contact cannot do
    system = RollingBody(solid_ball(), Torus(1.0, 0.4))
    with pytest.warns(RuntimeWarning, match="lift off"):
        traj = nhphys.simulate(system, 10.0, 0.002, backend=backend, **TORUS_IC)
    assert traj.normal_force.min() < 0


def test_failed_step_names_step_and_time(backend):
    system = RollingBody(solid_ellipsoid(), Plane())
    with pytest.raises(nhphys.NewtonError, match=r"step \d+ \(t = .*\)") as info:
        nhphys.simulate(system, 10.0, 0.5, backend=backend,
                        orientation=ELLIPSOID_IC["orientation"], omega=[0, 0, 40.0])
    assert info.value.trajectory is not None


@pytest.mark.parity
def test_failed_fourth_order_step_leaves_both_backends_at_its_start():
    """A step whose second sub-step fails (the triple jump's middle step, 1.26 times longer
    than the first, turns the spinning body by more than pi) leaves the state at the step's
    start, the same in the kernel and the twin, and the run refuses to go on."""
    system = RollingBody(solid_ellipsoid(), Plane())
    states = {}
    for backend in ("cython", "python"):
        run = Retraction(order=4).start(system, 1e-3, backend, omega0=[1.0, 0.5, 150.0])
        run.advance(10, 5)
        start = [x.copy() for x in (run.A, run.a, run.Pi, run.p, run.s, run.z, run.chart)]
        run.dt = 0.0135  # from here the first sub-step turns by 2.7 rad and the second by 3.5
        with pytest.raises(nhphys.NewtonError, match=r"step 10 .*turns the body by pi or more"):
            run.advance(3, 1)
        now = [run.A, run.a, run.Pi, run.p, run.s, run.z, run.chart]
        for x, y in zip(now, start):
            np.testing.assert_array_equal(x, y)
        with pytest.raises(RuntimeError, match="stopped at step 10"):
            run.advance(1, 1)
        states[backend] = now
    for x, y in zip(states["cython"], states["python"]):
        assert np.abs(x - y).max() <= 1e-12


def test_run_records_the_backend_that_steps(backend):
    system = RollingBody(solid_ball(), Plane())
    assert Retraction().start(system, 0.01, backend).backend == backend
    assert nhphys.simulate(system, 0.1, 0.01, backend=backend).meta["backend"] == backend


def test_a_ball_bigger_than_its_bowl_does_not_fit():
    # Lambda = 1/r - 1/R: negative for r > R, the ball would cut through the bowl
    bowl = Sphere(1.0).as_ground("inside")
    with pytest.raises(ValueError, match="the body does not fit: its radius of curvature "
                                         "exceeds the ground's there.*-0.167"):
        nhphys.simulate(RollingBody(solid_ball(1.2), bowl), 0.01, 1e-3, ground_point=[0, 0, -1])
    traj = nhphys.simulate(RollingBody(solid_ball(0.5), bowl), 0.01, 1e-3,
                           ground_point=[0, 0, -1])
    assert traj.position[0, 2] == pytest.approx(-0.5, abs=1e-12)


def test_a_ball_bigger_than_the_tube_it_is_inside_does_not_fit():
    # inside the tube of radius 0.4, across the tube: Lambda = 1/r - 1/0.4 < 0 for r > 0.4
    pipe = Torus(1.0, 0.4).as_ground("inside")
    with pytest.raises(ValueError, match="does not fit.*eigenvalue -0.5 < 0"):
        nhphys.simulate(RollingBody(solid_ball(0.5), pipe), 0.01, 1e-3, **PIPE_IC)
    traj = nhphys.simulate(RollingBody(solid_ball(0.3), pipe), 0.01, 1e-3, **PIPE_IC)
    assert traj.constraint_residual.max() <= 1e-12
    # the reference integrator places the body the same way
    with pytest.raises(ValueError, match="does not fit"):
        nhphys.simulate(RollingBody(solid_ball(0.5), pipe), 0.01, 1e-3, Reference(), **PIPE_IC)


def test_leaving_the_terrain_data_is_named(backend):
    terrain = HeightField.from_function("0.05*sin(2*x)*cos(2*y)", (-1, 1), (-1, 1), samples=33)
    system = RollingBody(solid_ball(), terrain)
    with pytest.raises(nhphys.NewtonError, match=r"left the ground's data .*outside \[-1, 1\]"):
        nhphys.simulate(system, 10.0, 0.01, backend=backend, omega=[0, 8.0, 0],
                        position=[0, 0, 0])
