"""The Suslov problem: physics of the retraction integrators against independent facts."""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import LiePoisson, Reference, Retraction
from nhphys.lie import so3
from nhphys.systems import Suslov

MAPS = ["exp", "cayley"]
PRINCIPAL = dict(inertia=[1.0, 10.0, 100.0], axis=[0, 0, 1])
NON_PRINCIPAL = np.array([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]])


def log_log_slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


# -- principal axes: the seed's Fig. 1 data, with an exact solution ---------------------------

@pytest.fixture(scope="module", params=MAPS)
def paper_run(request, backend):
    body = Suslov(**PRINCIPAL)
    traj = nhphys.simulate(body, 1800.0, 0.01, Retraction(request.param), backend=backend,
                           momentum=[1, 1, 0])
    return request.param, body, traj


PAPER_RUN_ON_TWINS = "the paper's 1.8e5 steps take about 90 s per map on the twins"


@pytest.mark.kernels_only(PAPER_RUN_ON_TWINS)
def test_paper_run_keeps_constraint_orthogonality_and_energy(paper_run):
    _, _, traj = paper_run
    assert len(traj) == 180_001
    assert traj.constraint_residual.max() <= 1e-14
    R_end = traj.R[-1]
    assert np.abs(R_end.T @ R_end - np.eye(3)).max() <= 1e-12
    assert np.abs(traj.energy / traj.energy[0] - 1).max() <= 1e-12


@pytest.mark.kernels_only(PAPER_RUN_ON_TWINS)
def test_paper_run_follows_the_exact_rotation(paper_run):
    # I diagonal, a = e3: Omega is constant and R(t) = exp(t hat(Omega0)), Omega0 = (1, 0.1, 0).
    name, _, traj = paper_run
    np.testing.assert_allclose(traj.omega[0], [1.0, 0.1, 0.0], rtol=1e-15)
    idx = np.array([1800 * k for k in range(1, 101)])  # every 18 s
    exact = so3.exp(traj.t[idx, None] * np.array([1.0, 0.1, 0.0]))
    err = np.linalg.norm(traj.R[idx] - exact, axis=(1, 2))
    # second order: the error at 18 s is O(h^2); exp has the smaller constant
    assert err[0] < {"exp": 3e-5, "cayley": 2e-3}[name]
    # growing no faster than linearly: err(t) <= 1.05 * err(18 s) * t / 18 s (while small)
    small = err < 0.1
    ratio = err[small] / (err[0] * np.arange(1, 101)[small])
    assert ratio.max() <= 1.05


@pytest.mark.parametrize("name", MAPS)
def test_principal_rotation_error_is_second_order(backend, name):
    body = Suslov(**PRINCIPAL)
    errs = []
    hs = [0.04, 0.02, 0.01]
    for h in hs:
        traj = nhphys.simulate(body, 18.0, h, Retraction(name), backend=backend,
                               momentum=[1, 1, 0], save_every=int(round(18 / h)))
        exact = so3.exp(18.0 * np.array([1.0, 0.1, 0.0]))
        errs.append(np.linalg.norm(traj.R[-1] - exact))
    assert log_log_slope(hs, errs) == pytest.approx(2.0, abs=0.15)


# -- non-principal inertia: against the continuous equations ----------------------------------

@pytest.fixture(scope="module")
def reference_10s():
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    traj = nhphys.simulate(body, 10.0, 0.5, Reference(rtol=1e-13, atol=1e-15), omega=[1, 0.5, 0])
    return body, traj


def test_reference_is_accurate(reference_10s):
    # its own checks: the continuous flow keeps the constraint and the energy
    _, ref = reference_10s
    assert ref.constraint_residual.max() < 1e-12
    assert np.ptp(ref.energy) < 1e-12


@pytest.mark.parametrize("name", MAPS)
def test_non_principal_converges_to_reference_at_order_two(backend, reference_10s, name):
    body, ref = reference_10s
    hs = [0.05, 0.025, 0.0125, 0.00625]
    errs = []
    for h in hs:
        traj = nhphys.simulate(body, 10.0, h, Retraction(name), backend=backend,
                               omega=[1, 0.5, 0], save_every=int(round(0.5 / h)))
        np.testing.assert_allclose(traj.t, ref.t, rtol=1e-14)
        errs.append(max(np.abs(traj.omega - ref.omega).max(), np.abs(traj.R - ref.R).max()))
    assert errs[-1] < {"exp": 2e-5, "cayley": 3e-4}[name]  # measured 6e-6 and 1.3e-4
    assert log_log_slope(hs, errs) == pytest.approx(2.0, abs=0.15)


@pytest.fixture(scope="module", params=MAPS)
def long_run(request, backend):
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    traj = nhphys.simulate(body, 300.0, 0.01, Retraction(request.param), backend=backend,
                           omega=[1, 0.5, 0])
    return body, traj


LONG_RUN_ON_TWINS = "3e4 steps take 10 to 25 s per map on the twins"


@pytest.mark.kernels_only(LONG_RUN_ON_TWINS)
def test_non_principal_energy_bounded_without_drift(long_run):
    _, traj = long_run
    rel = np.abs(traj.energy / traj.energy[0] - 1)
    assert rel.max() < 1e-4
    half = len(rel) // 2
    assert rel[half:].max() <= rel[:half].max()  # no growth over the second 150 s
    assert traj.constraint_residual.max() <= 1e-14


@pytest.mark.kernels_only(LONG_RUN_ON_TWINS)
def test_non_principal_tends_to_the_reference_steady_rotation(long_run):
    body, traj = long_run
    ref = nhphys.simulate(body, 300.0, 1.0, Reference(rtol=1e-12, atol=1e-14), omega=[1, 0.5, 0])
    omega_end = traj.omega[-1]
    np.testing.assert_allclose(omega_end, ref.omega[-1], atol=1e-5)
    # a steady rotation: the continuous vector field nearly vanishes there ...
    assert np.linalg.norm(body.omega_dot(omega_end)) < 1e-5
    # ... while it did not at the start
    assert np.linalg.norm(body.omega_dot(traj.omega[0])) > 0.1


@pytest.mark.parametrize("name", MAPS)
def test_axis_off_the_coordinate_axes(backend, name):
    axis = np.array([0.3, -0.5, 0.8])
    body = Suslov(NON_PRINCIPAL, axis)
    omega0 = np.cross(axis, [1.0, 0.2, -0.4])
    ref = nhphys.simulate(body, 5.0, 0.5, Reference(rtol=1e-13, atol=1e-15), omega=omega0)
    traj = nhphys.simulate(body, 5.0, 0.005, Retraction(name), backend=backend, omega=omega0,
                           save_every=100)
    assert traj.constraint_residual.max() <= 1e-14
    np.testing.assert_allclose(traj.omega, ref.omega, atol=2e-4)
    np.testing.assert_allclose(traj.R, ref.R, atol=2e-4)
    assert np.abs(traj.energy / traj.energy[0] - 1).max() < 1e-4


# -- structure: reversibility, twins, the unconstrained contrast -------------------------------

@pytest.mark.parametrize("name", MAPS)
def test_step_then_reverse_step_returns(backend, name):
    from nhphys.integrators.retraction import FixedPointRun
    from nhphys.lie.retraction import get_retraction

    body = Suslov(NON_PRINCIPAL, [0.2, 0.1, 1.0])
    omega0 = body.initial_omega(momentum0=[1.0, -0.7, 0.4])
    code = get_retraction(name).code
    fwd = FixedPointRun(body, body.basis, np.eye(3), omega0, 0.05, code, backend, 1e-14, 30)
    for _ in range(7):
        fwd.advance(1, 1)
    R1, p1 = fwd.R.copy(), fwd.p.copy()
    fwd.advance(1, 1)
    back = FixedPointRun(body, body.basis, fwd.R, np.zeros(3), -0.05, code, backend, 1e-14, 30)
    back.p[:] = fwd.p
    back.y[:] = -fwd.y
    back.advance(1, 1)
    assert np.abs(back.R - R1).max() <= 1e-12
    assert np.abs(back.p - p1).max() <= 1e-12 * np.abs(p1).max()


@pytest.mark.parity
@pytest.mark.parametrize("integrator", [
    Retraction("exp"), Retraction("cayley"), LiePoisson("exp"),
    pytest.param(Retraction("exp", order=4), marks=pytest.mark.slow),
    pytest.param(Retraction("cayley", order=4), marks=pytest.mark.slow),
], ids=repr)
def test_kernel_and_twin_trajectories_agree(integrator):
    # 10^4 steps
    body = Suslov(NON_PRINCIPAL, [0.3, -0.5, 0.8])
    kw = dict(momentum=[1.0, 0.5, -0.2], orientation=so3.exp([0.1, 0.2, 0.3]), save_every=10)
    a = nhphys.simulate(body, 100.0, 0.01, integrator, backend="cython", **kw)
    b = nhphys.simulate(body, 100.0, 0.01, integrator, backend="python", **kw)
    assert np.abs(a.R - b.R).max() <= 1e-10
    assert np.abs(a.omega - b.omega).max() <= 1e-10 * np.abs(b.omega).max()


def test_lie_poisson_ignores_the_constraint_but_keeps_the_casimir(backend):
    body = Suslov(**PRINCIPAL)
    traj = nhphys.simulate(body, 18.0, 0.01, LiePoisson("exp"), backend=backend,
                           momentum=[1, 1, 0])
    # free rigid body: |Pi| (spatial momentum norm) conserved, the Suslov constraint is not
    pi_norm = np.linalg.norm(traj.momentum, axis=1)
    assert np.abs(pi_norm / pi_norm[0] - 1).max() < 1e-13
    assert traj.constraint_residual[0] == 0.0
    assert traj.constraint_residual.max() > 5e-3  # Omega_3 reaches -0.0095 within 18 s
    # spatial angular momentum R Pi is conserved by the free body
    spatial = np.einsum("nij,nj->ni", traj.R, traj.momentum)
    assert np.abs(spatial - spatial[0]).max() < 1e-12


# -- input checking ----------------------------------------------------------------------------

@pytest.mark.parametrize("inertia, match", [
    ([[1, 0.5, 0], [0, 1, 0], [0, 0, 1]], "symmetric"),
    ([1.0, -1.0, 2.0], "positive definite"),
    ([[1, 2, 0], [2, 1, 0], [0, 0, 1]], "positive definite"),
    ([1.0, np.inf, 1.0], "finite"),
    ([1.0, 2.0], "shape"),
])
def test_bad_inertia(inertia, match):
    with pytest.raises(ValueError, match=match):
        Suslov(inertia, [0, 0, 1])


def test_bad_axis_and_initial_conditions():
    with pytest.raises(ValueError, match="`axis` to be a nonzero"):
        Suslov([1, 2, 3], [0, 0, 0])
    body = Suslov([1, 2, 3], [0, 0, 1])
    with pytest.raises(ValueError, match=r"axis \. omega0 = 0.5"):
        nhphys.simulate(body, 1.0, 0.1, omega0=[1, 0, 0.5])
    with pytest.raises(ValueError, match="exactly one"):
        nhphys.simulate(body, 1.0, 0.1)
    with pytest.raises(ValueError, match="`dt`"):
        nhphys.simulate(body, 1.0, 0.0, omega0=[1, 0, 0])
    with pytest.raises(ValueError, match="`dt`"):
        nhphys.simulate(body, 1.0, -0.1, omega0=[1, 0, 0])
    with pytest.raises(ValueError, match="`t_final`"):
        nhphys.simulate(body, np.nan, 0.1, omega0=[1, 0, 0])
    with pytest.raises(ValueError, match="whole number of steps"):
        nhphys.simulate(body, 1.0, 0.3, omega0=[1, 0, 0])
    with pytest.raises(ValueError, match="`omega0`"):
        nhphys.simulate(body, 1.0, 0.1, omega0=[1, np.nan, 0])
    with pytest.raises(ValueError, match="`R0`"):
        nhphys.simulate(body, 1.0, 0.1, omega0=[1, 0, 0], R0=2 * np.eye(3))
    with pytest.raises(ValueError, match="`orientation`"):
        nhphys.simulate(body, 1.0, 0.1, omega=[1, 0, 0], orientation=2 * np.eye(3))
    with pytest.raises(ValueError, match="`map`"):
        Retraction("quaternion")
    with pytest.raises(ValueError, match="`save_every`"):
        nhphys.simulate(body, 1.0, 0.1, omega0=[1, 0, 0], save_every=0)


def test_newton_failure_names_step_and_time(backend):
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    # exp: a step turning the body by more than pi has no admissible root
    with pytest.raises(nhphys.NewtonError, match=r"step 0 \(t = 0\)") as info:
        nhphys.simulate(body, 10.0, 1.0, Retraction("exp"), backend=backend,
                        omega=[40.0, 20.0, 0.0])
    assert info.value.trajectory is not None and len(info.value.trajectory) == 1
    # either map: Newton given too few iterations fails at the first step, not silently
    for name in MAPS:
        with pytest.raises(nhphys.NewtonError, match=r"step 0 \(t = 0\)"):
            nhphys.simulate(body, 1.0, 0.1, Retraction(name, max_newton=1), backend=backend,
                            omega=[1.0, 0.5, 0.0])


def test_interrupted_run_returns_what_was_computed(monkeypatch, backend):
    import sys

    from nhphys.integrators.retraction import FixedPointRun

    driver = sys.modules["nhphys.simulate"]
    monkeypatch.setattr(driver, "CHUNK_STEPS", 100)
    calls = {"n": 0}
    original = FixedPointRun.advance

    def advance_then_interrupt(self, n_steps, save_every):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # what Ctrl-C raises between kernel chunks
        return original(self, n_steps, save_every)

    monkeypatch.setattr(FixedPointRun, "advance", advance_then_interrupt)
    body = Suslov(**PRINCIPAL)
    with pytest.warns(RuntimeWarning, match="Interrupted at t = 2"):
        traj = nhphys.simulate(body, 10.0, 0.01, backend=backend, momentum=[1, 1, 0])
    assert traj.meta["interrupted"] is True
    assert len(traj) == 201 and traj.t[-1] == pytest.approx(2.0)
    assert np.all(np.isfinite(traj.R))


@pytest.mark.parametrize("name", MAPS)
def test_fourth_order_composition(backend, reference_10s, name):
    body, ref = reference_10s
    hs = [0.1, 0.05, 0.025]
    errs = []
    for h in hs:
        traj = nhphys.simulate(body, 10.0, h, Retraction(name, order=4), backend=backend,
                               omega=[1, 0.5, 0], save_every=round(0.5 / h))
        assert traj.constraint_residual.max() <= 1e-14
        errs.append(max(np.abs(traj.omega - ref.omega).max(), np.abs(traj.R - ref.R).max()))
    assert log_log_slope(hs, errs) == pytest.approx(4.0, abs=0.3)


@pytest.mark.parity
def test_fourth_order_kernel_and_twin_agree():
    body = Suslov(NON_PRINCIPAL, [0.3, -0.5, 0.8])
    kw = dict(momentum=[1.0, 0.5, -0.2], save_every=100)
    a = nhphys.simulate(body, 20.0, 0.01, Retraction("cayley", order=4), backend="cython", **kw)
    b = nhphys.simulate(body, 20.0, 0.01, Retraction("cayley", order=4), backend="python", **kw)
    assert np.abs(a.R - b.R).max() <= 1e-10
    assert np.abs(a.omega - b.omega).max() <= 1e-10


# -- the run: options, backends, failures ------------------------------------------------------

def test_newton_options_accept_any_real_and_integral_types(backend):
    integrator = Retraction(newton_tol=np.float64(1e-12), max_newton=np.int64(30))
    assert integrator.max_newton == 30 and type(integrator.max_newton) is int
    assert type(integrator.newton_tol) is float
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    a = nhphys.simulate(body, 1.0, 0.01, integrator, backend=backend, omega0=[1, 0.5, 0])
    b = nhphys.simulate(body, 1.0, 0.01, Retraction(), backend=backend, omega0=[1, 0.5, 0])
    np.testing.assert_array_equal(a.R, b.R)
    for bad in (True, 0, 2.5, "30"):
        with pytest.raises(ValueError, match="`max_newton`"):
            Retraction(max_newton=bad)
    for bad in (0.0, 1e-2, "1e-12", False):
        with pytest.raises(ValueError, match="`newton_tol`"):
            Retraction(newton_tol=bad)


def test_run_records_the_backend_that_steps(backend):
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    run = Retraction().start(body, 0.01, backend, omega0=[1, 0.5, 0])
    assert run.backend == backend
    traj = nhphys.simulate(body, 0.1, 0.01, backend=backend, omega0=[1, 0.5, 0])
    assert traj.meta["backend"] == backend


def test_unknown_initial_condition_is_named():
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    with pytest.raises(TypeError, match="'omega' for Suslov; expected some of R0, omega0"):
        Retraction().start(body, 0.01, "python", omega=[1, 0.5, 0])


@pytest.mark.parity
def test_failed_fourth_order_step_leaves_both_backends_at_its_start():
    """A step whose second sub-step fails (the triple jump's middle step, 1.26 times longer
    than the first, turns the body by more than pi) leaves the state at the step's start, the
    same in the kernel and the twin, and the run refuses to go on."""
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    runs = {}
    for backend in ("cython", "python"):
        run = Retraction("exp", order=4).start(body, 0.1, backend, omega0=[1.0, 0.5, 0.0])
        run.advance(10, 5)
        start = (run.R.copy(), run.p.copy(), run.y.copy())
        run.dt = 2.5  # from here, the first sub-step turns by 2.7 rad and the second by 3.4
        with pytest.raises(nhphys.NewtonError, match=r"step 10 .*turns the body by pi or more"):
            run.advance(3, 1)
        for now, before in zip((run.R, run.p, run.y), start):
            np.testing.assert_array_equal(now, before)
        with pytest.raises(RuntimeError, match="stopped at step 10"):
            run.advance(1, 1)
        runs[backend] = run
    a, b = runs["cython"], runs["python"]
    assert np.abs(a.R - b.R).max() <= 1e-12 and np.abs(a.p - b.p).max() <= 1e-12
