"""Knife edge (Chaplygin sleigh, inclined plane) and vertical disk against closed forms; the
SE(2) retraction integrator's order, symmetry and constraint; errors."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nhphys
from nhphys import _backend
from nhphys.integrators import DLA, Newmark, Reference, Retraction
from nhphys.systems import KnifeEdge, VerticalDisk


def slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


SLEIGH = KnifeEdge(mass=1.0, inertia=0.5, offset=0.5)
SLEIGH_IC = {"pose0": [0.2, -0.1, 0.3], "velocity0": 0.1, "omega0": 1.0}


def test_sleigh_closed_form_solves_the_continuous_equations():
    # the closed form (tanh/sech, derived from energy) against DOP853 on the equations
    traj = nhphys.simulate(SLEIGH, 20.0, 0.1, integrator=Reference(), **SLEIGH_IC)
    v, w = SLEIGH.sleigh_closed_form(traj.t, 0.1, 1.0)
    np.testing.assert_allclose(traj.velocity, v, atol=1e-9)
    np.testing.assert_allclose(traj.turning_rate, w, atol=1e-9)
    # it approaches straight-line motion at the terminal speed
    assert traj.turning_rate[-1] < 1e-3 and abs(traj.velocity[-1] - SLEIGH.terminal_speed(0.1, 1.0)) < 1e-6


@pytest.mark.parametrize("integrator", [
    Retraction("exp"), Retraction("cayley"), Newmark(0.0, 0.0, 0.5), Newmark(0.25, 0.25, 0.5),
    Newmark(0.5, 0.5, 0.5, "average"),
], ids=repr)
def test_sleigh_matches_tanh_sech_closed_form(integrator, backend):
    traj = nhphys.simulate(SLEIGH, 20.0, 1e-3, integrator=integrator, save_every=10,
                           backend=backend, **SLEIGH_IC)
    v, w = SLEIGH.sleigh_closed_form(traj.t, 0.1, 1.0)
    assert np.abs(traj.velocity - v).max() < 1e-6
    assert np.abs(traj.turning_rate - w).max() < 1e-6
    assert traj.constraint_residual.max() < 1e-13


INCLINED = KnifeEdge(mass=2.0, inertia=0.3, offset=0.0, incline=0.4)


def test_inclined_closed_form_is_the_classical_one():
    # x = g sin(a) sin^2(wt) / (2 w^2), y = g sin(a) (wt - sin(wt)cos(wt)) / (2 w^2)
    t = np.linspace(0.0, 10.0, 101)
    pose, v = INCLINED.inclined_closed_form(t, [0, 0, 0], 0.0, 1.5)
    G, w = 9.81 * np.sin(0.4), 1.5
    np.testing.assert_allclose(v, G / w * np.sin(w * t), atol=1e-14)
    np.testing.assert_allclose(pose[:, 0], G * np.sin(w * t) ** 2 / (2 * w * w), atol=1e-14)
    np.testing.assert_allclose(pose[:, 1], G * (w * t - np.sin(w * t) * np.cos(w * t))
                               / (2 * w * w), atol=1e-13)
    ref = nhphys.simulate(INCLINED, 10.0, 0.1, integrator=Reference(), pose0=[0.1, 0.2, 0.3],
                          velocity0=0.3, omega0=1.5)
    pose, _v = INCLINED.inclined_closed_form(ref.t, [0.1, 0.2, 0.3], 0.3, 1.5)
    np.testing.assert_allclose(ref.pose, pose, atol=1e-9)


def test_inclined_knife_edge_matches_classical_closed_form(backend):
    # The y error grows like t (the drift speed down the slope is slightly off). For
    # beta = beta' = 0 its coefficient is ~(w h)^2/6 of the drift, 5e-6 here at h = 1e-3;
    # the linear-acceleration member beta = beta' = 1/6 cancels most of it.
    ic = {"pose0": [0.0, 0.0, 0.0], "velocity0": 0.0, "omega0": 1.5}
    errors = {}
    for integrator in (Newmark(1 / 6, 1 / 6, 0.5), Newmark(1 / 6, 1 / 6, 0.5, "average"),
                       Newmark(0.0, 0.0, 0.5), DLA("midpoint")):
        traj = nhphys.simulate(INCLINED, 10.0, 1e-3, integrator=integrator, save_every=10,
                               backend=backend, **ic)
        pose, _v = INCLINED.inclined_closed_form(traj.t, [0, 0, 0], 0.0, 1.5)
        errors[integrator] = np.abs(traj.pose[:, :2] - pose[:, :2]).max()
        assert np.abs(traj.pose[:, 2] - 1.5 * traj.t).max() < 1e-11
        assert traj.constraint_residual.max() < 1e-13
    assert errors[Newmark(1 / 6, 1 / 6, 0.5)] < 1e-6
    assert errors[Newmark(1 / 6, 1 / 6, 0.5, "average")] < 1e-6
    assert errors[Newmark(0.0, 0.0, 0.5)] < 6e-6 and errors[DLA("midpoint")] < 6e-6


def test_inclined_plane_is_refused_by_the_retraction_integrator():
    with pytest.raises(ValueError, match="level plane"):
        nhphys.simulate(KnifeEdge(1.0, 1.0, 0.2, incline=0.1), 1.0, 0.1,
                        integrator=Retraction(), velocity0=1.0)


def _fit_circle(p):
    # algebraic fit x^2 + y^2 + D x + E y + F = 0
    A = np.column_stack([p[:, 0], p[:, 1], np.ones(len(p))])
    b = -(p[:, 0] ** 2 + p[:, 1] ** 2)
    D, E, F = np.linalg.lstsq(A, b, rcond=None)[0]
    c = -0.5 * np.array([D, E])
    return c, np.sqrt(c @ c - F)


@pytest.mark.parametrize("integrator,radius_tol", [
    (Retraction("exp"), 1e-5), (Retraction("cayley"), 1e-5), (Newmark(0.0, 0.0, 0.5), 1e-6),
], ids=repr)
def test_vertical_disk_runs_round_circles_of_the_exact_radius_at_the_exact_rate(integrator,
                                                                                 radius_tol,
                                                                                 backend):
    disk = VerticalDisk(1.0, 0.5, 0.125, 0.0625)
    pose0, w0, s0 = np.array([0.3, -0.2, 0.4]), 1.3, 2.0
    _centre, rho, rate = disk.circle(pose0, w0, s0)
    errors = []
    for h in (4e-3, 2e-3, 1e-3):
        traj = nhphys.simulate(disk, round(10 / h) * h, h, integrator=integrator, pose0=pose0,
                               omega0=w0, spin0=s0, backend=backend)
        c, r = _fit_circle(traj.pose[:, :2])
        # the discrete contact point lies on a circle ...
        assert np.abs(np.linalg.norm(traj.pose[:, :2] - c, axis=1) - r).max() < 1e-11
        angle = np.unwrap(np.arctan2(traj.pose[:, 1] - c[1], traj.pose[:, 0] - c[0]))
        fitted_rate = np.polyfit(traj.t, angle, 1)[0]
        errors.append(max(abs(r - rho), abs(fitted_rate - rate)))
        assert traj.constraint_residual.max() < 1e-13
        assert np.ptp(traj.spin) < 1e-12 and np.ptp(traj.turning_rate) < 1e-12
    # ... whose radius and rate converge to the exact ones at second order
    assert errors[-1] < radius_tol
    assert abs(slope([4e-3, 2e-3, 1e-3], errors) - 2) < 0.15


@pytest.mark.parametrize("map_", ["exp", "cayley"])
def test_retraction_on_se2_is_second_order(map_, backend):
    hs = [0.04, 0.02, 0.01, 0.005]
    errors = []
    for h in hs:
        traj = nhphys.simulate(SLEIGH, 4.0, h, integrator=Retraction(map_), backend=backend,
                               **SLEIGH_IC)
        v, w = SLEIGH.sleigh_closed_form(traj.t[-1:], 0.1, 1.0)
        errors.append(abs(traj.velocity[-1] - v[0]) + abs(traj.turning_rate[-1] - w[0]))
    assert abs(slope(hs, errors) - 2) < 0.15


@pytest.mark.parametrize("map_code", [0, 1])
def test_retraction_step_then_negative_step_returns(map_code, backend):
    inertia = SLEIGH.group_inertia()
    basis = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    g = np.array([0.1, 0.2, 0.3])
    p = basis.T @ inertia @ np.array([0.7, 0.0, 1.1])
    y = 0.05 * np.linalg.solve(basis.T @ inertia @ basis, p)
    g1, p1 = g.copy(), p.copy()
    impl = _backend.implementation("se2_retraction", backend)
    out_g, out_p = np.empty((1, 3)), np.empty((1, 2))
    info = np.zeros(3, dtype=np.intp)
    assert impl.retraction_run(inertia, basis, g1, p1, y.copy(), 0.05, 1, 1, map_code, 1e-13,
                               30, out_g, out_p, info) == 0
    assert impl.retraction_run(inertia, basis, g1, p1, -y, -0.05, 1, 1, map_code, 1e-13, 30,
                               out_g, out_p, info) == 0
    np.testing.assert_allclose(g1, g, atol=1e-13)
    np.testing.assert_allclose(p1, p, atol=1e-13)


def test_retraction_newton_failure_names_the_step(backend):
    with pytest.raises(nhphys.NewtonError, match="step 0") as info:
        nhphys.simulate(SLEIGH, 10.0, 5.0, integrator=Retraction(max_newton=1),
                        backend=backend, **SLEIGH_IC)
    assert info.value.step == 0


@pytest.mark.parametrize("kwargs,match", [
    ({"mass": -1.0, "inertia": 1.0, "offset": 0.1}, "`mass`"),
    ({"mass": 1.0, "inertia": 0.0, "offset": 0.1}, "`inertia`"),
    ({"mass": 1.0, "inertia": 1.0, "offset": np.nan}, "`offset`"),
    ({"mass": 1.0, "inertia": 1.0, "offset": 0.1, "incline": 2.0}, "`incline`"),
])
def test_knife_edge_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        KnifeEdge(**kwargs)


def test_disk_and_edge_reject_bad_initial_conditions():
    with pytest.raises(ValueError, match="`pose0`"):
        nhphys.simulate(SLEIGH, 1.0, 0.1, pose0=[0.0, 1.0], velocity0=1.0)
    with pytest.raises(TypeError, match="`omega0`"):
        nhphys.simulate(VerticalDisk(1, 1, 1, 1), 1.0, 0.1, omega0="fast")


@pytest.mark.parity
@settings(max_examples=40, deadline=None)
@given(v=st.floats(-2, 2), w=st.floats(-3, 3), spin=st.floats(-3, 3),
       h=st.floats(-0.3, 0.3).filter(lambda x: abs(x) > 1e-3), map_code=st.sampled_from([0, 1]),
       disk=st.booleans())
# a turning rate of subnormal size: the Newton floor's lower bound (tests/test_newton.py)
@example(v=0.0, w=2.2250738585e-313, spin=0.0, h=0.25, map_code=0, disk=False)
def test_retraction_single_step_kernel_matches_twin(v, w, spin, h, map_code, disk):
    if disk:
        system, R = VerticalDisk(1.0, 0.5, 0.125, 0.0625), 0.5
        basis = np.array([[0.0, R], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        xi0, g0 = np.array([R * spin, 0.0, w, spin]), np.array([0.1, 0.2, 0.3, 0.4])
    else:
        system = SLEIGH
        basis = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
        xi0, g0 = np.array([v, 0.0, w]), np.array([0.1, 0.2, 0.3])
    inertia = system.group_inertia()
    p0 = basis.T @ inertia @ xi0
    y0 = h * np.linalg.solve(basis.T @ inertia @ basis, p0)
    results = []
    for backend in ("python", "cython"):
        impl = nhphys._backend.implementation("se2_retraction", backend)
        g, p, y = g0.copy(), p0.copy(), y0.copy()
        out_g, out_p = np.empty((1, g.size)), np.empty((1, p.size))
        info = np.zeros(3, dtype=np.intp)
        assert impl.retraction_run(inertia, basis, g, p, y, h, 1, 1, map_code, 1e-13, 30,
                                   out_g, out_p, info) == 0
        results.append((g, p))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12, atol=1e-14)


def test_a_turning_rate_of_subnormal_size_steps(backend):
    # a sleigh barely turning (2e-313 rad/s: a rate decayed below the smallest normal double)
    # has a step of subnormal size, where no relative correction test can pass: the Newton
    # floor is never below the smallest normal double (nhphys.twins.newton, "The stopping
    # rule"); this run used to end in NewtonError at its first step
    traj = nhphys.simulate(SLEIGH, 1.0, 0.25, Retraction("exp"), backend=backend,
                           velocity0=0.0, omega0=2.2250738585e-313)
    assert traj.meta["backend"] == backend and len(traj) == 5
    assert traj.constraint_residual.max() <= 1e-300


SE2_SYSTEMS = {
    "sleigh": (SLEIGH, SLEIGH_IC),
    "vertical disk": (VerticalDisk(1.0, 0.5, 0.125, 0.0625), {"pose0": [0.3, -0.2, 0.4],
                                                             "omega0": 1.3, "spin0": 2.0}),
}  # the rotor sleigh's are in tests/test_rotor_sleigh.py


@pytest.mark.parity
@pytest.mark.parametrize("map_", ["exp", "cayley"])
@pytest.mark.parametrize("system", SE2_SYSTEMS, ids=str)
def test_retraction_kernel_matches_twin(system, map_):
    # 10^4 steps: the same trajectory to 1e-10, and the same Newton iterations
    system, ic = SE2_SYSTEMS[system]
    runs = [Retraction(map_).start(system, 0.01, b, **ic) for b in ("python", "cython")]
    frames = [run.advance(10_000, 50) for run in runs]
    assert [run.backend for run in runs] == ["python", "cython"]
    for field in frames[0]:
        np.testing.assert_allclose(frames[0][field], frames[1][field], rtol=0, atol=1e-10)
    assert runs[0].newton_evaluations == runs[1].newton_evaluations


def test_failed_retraction_step_leaves_the_state_and_the_run_refuses_to_go_on(backend):
    run = Retraction(max_newton=2).start(SLEIGH, 5.0, backend, **SLEIGH_IC)
    g0, p0, y0 = run.g.copy(), run.p.copy(), run.y.copy()
    with pytest.raises(nhphys.NewtonError, match="did not converge") as info:
        run.advance(3, 1)
    assert info.value.step == 0
    for a, b in ((run.g, g0), (run.p, p0), (run.y, y0)):  # exactly the state at its start
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="stopped at step 0"):
        run.advance(1, 1)


def test_retraction_accepts_numpy_integers_as_newton_options(backend):
    integrator = Retraction("exp", max_newton=np.int64(30))
    traj = nhphys.simulate(SLEIGH, 1.0, 0.01, integrator=integrator, backend=backend,
                           **SLEIGH_IC)
    assert traj.constraint_residual.max() < 1e-13
