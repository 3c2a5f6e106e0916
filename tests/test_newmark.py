"""The nonholonomic Newmark family, DLA and compositions: orders, the adjoint identity, the
coincidence with DLA, constraints, energy on the contact oscillators, the generic system."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nhphys
from nhphys import _backend
from nhphys.integrators import DLA, Composition, Newmark, Reference
from nhphys.systems import (
    ConstrainedMechanicalSystem,
    ContactOscillator,
    KnifeEdge,
    NonReversibleContactOscillator,
    RotorSleigh,
    VerticalDisk,
)
from nhphys.twins import models
from nhphys.twins import newmark as twin
from nhphys.twins.newton import NewtonRule

OSC = ContactOscillator(0.3)
OSC_IC = {"q0": [1.0, 1.0, 0.5], "v0": [-0.5, 0.2, 0.5]}
COMPOSITION = Composition.symmetric(Newmark(0.0, 0.0, 0.0))  # F^{0,0,1}_{h/2} o F^{0,0,0}_{h/2}


def slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


@pytest.fixture(scope="module")
def reference_end():
    ref = nhphys.simulate(OSC, 2.0, 2.0, integrator=Reference(1e-13, 1e-14), **OSC_IC)
    return ref.q[-1], ref.v[-1]


def _implementation(model, backend):
    """``(module, model)``: the Newmark loop of ``backend`` and the coordinate ``model`` (a twin
    model) in the form it takes (the compiled class of the same name for the kernel)."""
    impl, used = _backend.choose("newmark", backend)
    if used == "cython":
        model = models.compiled_counterpart(model, _backend.kernel_module("models"))
    return impl, model


def _steps(backend, method, model, q, v, h, lam=None, n=1, newton_tol=1e-14):
    """``n`` steps of ``method`` from ``(q, v)`` with the loop of ``backend``: ``(q, v)``."""
    impl, model = _implementation(model, backend)
    q, v = np.array(q, dtype=float), np.array(v, dtype=float)
    lam = np.zeros(model.r) if lam is None else np.array(lam, dtype=float)
    out_q, out_v = np.empty((1, q.size)), np.empty((1, q.size))
    info = np.zeros(3, dtype=np.intp)
    assert impl.nonholonomic_run(model, method.stage_rows(), q, v, lam, h, n, n, newton_tol, 30,
                                 out_q, out_v, info) == 0
    return q, v


@pytest.mark.parametrize("integrator,order", [
    (Newmark(0.0, 0.0, 0.5), 2),
    (Newmark(0.25, 0.25, 0.5, "average"), 2),
    (Newmark(0.5, 0.5, 0.5), 2),
    (Newmark(0.0, 0.0, 0.0), 1),
    (Newmark(0.1, 0.3, 0.5), 1),
    (COMPOSITION, 2),
    (DLA("midpoint"), 2),
], ids=repr)
def test_measured_order(integrator, order, reference_end, backend):
    q_ref, v_ref = reference_end
    hs = [0.04, 0.02, 0.01, 0.005]
    errors = []
    for h in hs:
        traj = nhphys.simulate(OSC, 2.0, h, integrator=integrator, backend=backend, **OSC_IC)
        errors.append(max(np.abs(traj.q[-1] - q_ref).max(), np.abs(traj.v[-1] - v_ref).max()))
    assert abs(slope(hs, errors) - order) < 0.15


def _on_constraint(q, v):
    v = np.array(v, dtype=float)
    v[0] = -q[1] * v[2]  # contact oscillator: dx + y dz = 0
    return v


def test_adjoint_identity_explicit_member(backend):
    # F^{0,0,0}_{-h} o F^{0,0,1}_h = identity, i.e. (F^{0,0,0})* = F^{0,0,1}
    q0 = np.array([1.0, 1.0, 0.5])
    v0 = _on_constraint(q0, [0.0, 0.2, 0.5])
    model = models.ContactOscillatorModel(0.3)
    q1, v1 = _steps(backend, Newmark(0.0, 0.0, 1.0), model, q0, v0, 0.1)
    q2, v2 = _steps(backend, Newmark(0.0, 0.0, 0.0), model, q1, v1, -0.1)
    assert np.abs(q1 - q0).max() > 1e-2
    np.testing.assert_allclose(q2, q0, atol=1e-12)
    np.testing.assert_allclose(v2, v0, atol=1e-12)
    # and the explicit member is not its own adjoint: F^{0,0,0}_{-h} o F^{0,0,0}_h moves
    q3, _ = _steps(backend, Newmark(0.0, 0.0, 0.0), model,
                   *_steps(backend, Newmark(0.0, 0.0, 0.0), model, q0, v0, 0.1), -0.1)
    assert np.abs(q3 - q0).max() > 1e-5


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(beta=st.floats(0, 0.5), beta_p=st.floats(0, 0.5), alpha=st.floats(0, 1),
       disc=st.sampled_from(["point", "average"]), z=st.floats(-1, 1), vy=st.floats(-1, 1))
def test_adjoint_of_every_member(beta, beta_p, alpha, disc, z, vy, backend):
    # (F^{beta, beta', alpha})* = F^{beta', beta, 1 - alpha}: step with the adjoint, then back
    method = Newmark(beta, beta_p, alpha, disc)
    q0 = np.array([0.5, 0.8, z])
    v0 = _on_constraint(q0, [0.0, vy, 0.7])
    model = models.ContactOscillatorModel(0.3)
    q1, v1 = _steps(backend, method.adjoint(), model, q0, v0, 0.05)
    q2, v2 = _steps(backend, method, model, q1, v1, -0.05)
    np.testing.assert_allclose(q2, q0, atol=1e-12)
    np.testing.assert_allclose(v2, v0, atol=1e-12)


def test_explicit_closed_form_equals_the_newton_path():
    model = models.ContactOscillatorModel(0.3)
    q0 = np.array([1.0, 1.0, 0.5])
    v0 = _on_constraint(q0, [0.0, 0.2, 0.5])
    rule = NewtonRule(1e-14, twin.RESIDUAL_TOL, 30)
    a = twin.newmark_step(model, q0, v0, np.zeros(1), 0.1, 0, 0, 0, 0, rule)
    b = twin.newmark_step(model, q0, v0, np.zeros(1), 0.1, 0, 0, 0, 0, rule, explicit=False)
    assert a[0] == b[0] == 0
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_allclose(x, y, atol=1e-13)


def _step_from(system, method, q, v, h, backend="auto"):
    """One step of ``method`` from ``(q, v)`` in the system's coordinates."""
    cs = system.coordinates
    return _steps(backend, method, cs, q, v, h, lam=cs.multiplier(q, v), newton_tol=1e-13)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("disc", ["point", "average"])
def test_newmark_coincides_with_dla_step_by_step(alpha, disc, backend):
    # F^{0,0,alpha} = trapezoidal DLA for any potential, = midpoint DLA for an affine one
    cases = [
        (OSC, OSC_IC, "trapezoidal"),
        (KnifeEdge(2.0, 0.3, 0.2, incline=0.4), {"velocity0": 0.3, "omega0": 1.5}, "midpoint"),
        (VerticalDisk(1.0, 0.5, 0.125, 0.0625), {"omega0": 1.3, "spin0": 2.0}, "midpoint"),
    ]
    h = 0.01
    for system, ic, rule in cases:
        newmark, dla = Newmark(0.0, 0.0, alpha, disc), DLA(rule, alpha, disc)
        q, v = system.coordinates_from_conditions(**ic)
        for _ in range(200):
            qa, va = _step_from(system, newmark, q, v, h, backend)
            qb, vb = _step_from(system, dla, q, v, h, backend)
            np.testing.assert_allclose(qa, qb, rtol=0, atol=1e-12)
            np.testing.assert_allclose(va, vb, rtol=0, atol=1e-12)
            q, v = qa, va
    # with a non-affine potential the midpoint DLA is a different method
    a = nhphys.simulate(OSC, 1.0, 0.1, integrator=Newmark(0.0, 0.0, alpha, disc),
                        backend=backend, **OSC_IC)
    b = nhphys.simulate(OSC, 1.0, 0.1, integrator=DLA("midpoint", alpha, disc), backend=backend,
                        **OSC_IC)
    assert np.abs(a.q - b.q).max() > 1e-6


@pytest.mark.parametrize("integrator", [
    Newmark(0.0, 0.0, 0.0), Newmark(0.0, 0.0, 1.0), Newmark(0.25, 0.25, 0.5),
    Newmark(0.5, 0.2, 0.3, "average"), DLA("midpoint"), DLA("trapezoidal", 0.7, "average"),
], ids=repr)
def test_constraints_hold_at_every_step(integrator, backend):
    # velocities of order 1 in all four systems
    for system, ic in [(OSC, OSC_IC), (KnifeEdge(1.0, 0.5, 0.5), {"velocity0": 0.1, "omega0": 1.0}),
                       (VerticalDisk(1.0, 0.5, 0.125, 0.0625), {"omega0": 1.3, "spin0": 2.0}),
                       (RotorSleigh(1.0, 0.4, 0.1, 0.5, locked=True),
                        {"velocity": 0.1, "turning_rate": 1.0})]:
        traj = nhphys.simulate(system, 2.0, 1e-3, integrator=integrator, backend=backend, **ic)
        assert traj.constraint_residual.max() < 1e-13
    # the discrete position constraint of the chosen discretisation, at every step
    traj = nhphys.simulate(OSC, 2.0, 1e-3, integrator=integrator, backend=backend, **OSC_IC)
    phi = integrator.discrete_constraint(OSC, traj.q[:-1], traj.q[1:], 1e-3)
    assert np.abs(phi).max() < 1e-13
    assert np.abs(Newmark(0.3, 0.3, 0.1).discrete_constraint(OSC, traj.q[:-1], traj.q[1:],
                                                             1e-3)).max() > 1e-10


def _energy_profile(system, integrator, t_final=10000.0, h=0.1, backend="auto"):
    traj = nhphys.simulate(system, t_final, h, integrator=integrator, save_every=10,
                           backend=backend, q0=[1.0, 1.0, 0.5], v0=[-0.5, 0.0, 0.5])
    dE = traj.energy - traj.energy[0]
    n = len(dE)
    quarters = [np.abs(dE[i * n // 4:(i + 1) * n // 4]).max() for i in range(4)]
    drift = dE[-n // 10:].mean() - dE[:n // 10].mean()
    return traj, quarters, drift


@pytest.fixture(scope="module")
def oscillators():
    return ContactOscillator(0.1), NonReversibleContactOscillator(0.1)


LONG_RUN = ("10^5 steps per run: minutes on the Python twin, whose steps are the kernel's "
            "(test_kernel_matches_twin, over 10^4 steps of every system and integrator)")


@pytest.mark.parametrize("integrator,bound", [
    (Newmark(0.0, 0.0, 0.5), 1.3e-3), (Newmark(0.25, 0.25, 0.5), 5e-4), (COMPOSITION, 5e-4),
    (DLA("trapezoidal"), 1.3e-3),
], ids=repr)
@pytest.mark.kernels_only(LONG_RUN)
def test_energy_bounded_without_drift_on_the_reversible_oscillator(integrator, bound,
                                                                   oscillators, backend):
    # 10^5 steps of h = 0.1; bounds are the measured maxima, rounded up
    _, quarters, drift = _energy_profile(oscillators[0], integrator, backend=backend)
    assert max(quarters) < bound
    assert max(quarters[2:]) < 1.05 * max(quarters[:2])
    assert abs(drift) < 1e-5


@pytest.mark.kernels_only(LONG_RUN)
def test_nonreversible_oscillator_which_members_drift(oscillators, backend):
    reversible, nonreversible = oscillators
    # Newmark steps the second-order equation, which the gauge term does not change: the same
    # trajectory, bit for bit, as on the reversible problem
    a, _, _ = _energy_profile(reversible, COMPOSITION, t_final=100.0)
    b, _, _ = _energy_profile(nonreversible, COMPOSITION, t_final=100.0)
    np.testing.assert_array_equal(a.q, b.q)
    # the composition stays bounded (measured max 4.2e-4) ...
    _, quarters, drift = _energy_profile(nonreversible, COMPOSITION)
    assert max(quarters) < 5e-4 and abs(drift) < 1e-5
    # ... the first-order members drift (energy lost by F^{0,0,0}, gained by its adjoint) ...
    _, quarters, drift = _energy_profile(nonreversible, Newmark(0.0, 0.0, 0.0))
    assert drift < -0.05
    _, quarters, drift = _energy_profile(nonreversible, Newmark(0.0, 0.0, 1.0), t_final=700.0)
    assert drift > 0.05
    # ... and DLA, which discretises the gauge term, drifts only on the non-reversible problem
    _, _, drift_rev = _energy_profile(reversible, DLA("trapezoidal"))
    _, quarters, drift_nonrev = _energy_profile(nonreversible, DLA("trapezoidal"))
    assert abs(drift_rev) < 1e-5 and drift_nonrev > 5e-4
    assert quarters[3] > 1.5 * quarters[0]


SYSTEMS = {
    # (system, initial conditions, dt): the knife edge runs off downhill, so
    # it takes the step of its physics tests and stays within tens of units of the origin
    "inclined knife edge": (KnifeEdge(2.0, 0.3, 0.2, incline=0.4),
                            {"velocity0": 0.3, "omega0": 1.5}, 1e-3),
    "vertical disk": (VerticalDisk(1.0, 0.5, 0.125, 0.0625), {"omega0": 1.3, "spin0": 2.0},
                      0.01),
    "contact oscillator": (ContactOscillator(0.3), OSC_IC, 0.01),
    "non-reversible oscillator": (NonReversibleContactOscillator(0.3), OSC_IC, 0.01),
}  # the rotor sleigh's are in tests/test_rotor_sleigh.py
METHODS = {
    "explicit": Newmark(0.0, 0.0, 0.0),
    "implicit": Newmark(0.25, 0.1, 0.6, "average"),
    "dla": DLA("trapezoidal", 0.3, "average"),
    "composition": Composition([(Newmark(0.0, 0.0, 0.0), 0.5), (DLA("midpoint"), 0.25),
                                (Newmark(0.5, 0.5, 0.5), 0.25)]),
}


@pytest.mark.parity
@pytest.mark.parametrize("method", METHODS, ids=str)
@pytest.mark.parametrize("system", SYSTEMS, ids=str)
def test_every_system_and_method_kernel_matches_twin(system, method):
    # 10^4 steps of every system with every kind of step, kernel loop against twin loop: the
    # same Newton iterations, and the same states to 1e-10 of their size (absolute for states
    # of order 1). Relative to the size because DLA's velocities are position differences
    # over h: both implementations carry |q| eps / h of round-off per step, and their
    # difference grows with |q| (the knife edge's positions reach ~200).
    system, ic, dt = SYSTEMS[system]
    q0, v0 = system.coordinates_from_conditions(**ic)
    results = []
    for backend in ("python", "cython"):
        impl, model = _implementation(system.coordinates, backend)
        q, v = q0.copy(), v0.copy()
        lam = system.coordinates.multiplier(q, v)
        out_q, out_v = np.empty((200, q.size)), np.empty((200, q.size))
        info = np.zeros(3, dtype=np.intp)
        assert impl.nonholonomic_run(model, METHODS[method].stage_rows(), q, v, lam, dt,
                                     10_000, 50, 1e-12, 30, out_q, out_v, info) == 0
        results.append((out_q, out_v, lam, info[1]))
    (qa, va, la, ea), (qb, vb, lb, eb) = results
    for a, b in ((qa, qb), (va, vb), (la, lb)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * max(1.0, np.abs(a).max()))
    assert ea == eb
    if method != "explicit":  # at least one residual per implicit step
        assert eb >= 10_000


@pytest.mark.parity
@pytest.mark.parametrize("system,ic,method,steps", [
    (NonReversibleContactOscillator(0.3), OSC_IC, Newmark(0.25, 0.1, 0.6, "average"), 10_000),
    (VerticalDisk(1.0, 0.5, 0.125, 0.0625), {"omega0": 1.3, "spin0": 2.0},
     Composition([(Newmark(0.0, 0.0, 0.0), 0.5), (DLA("midpoint"), 0.5)]), 10_000),
    (KnifeEdge(2.0, 0.3, 0.2, incline=0.4), {"velocity0": 0.3, "omega0": 1.5},
     Composition([(DLA("trapezoidal", 0.3, "average"), 0.5), (Newmark(0.5, 0.5, 0.5), 0.5)]),
     2_000),
], ids=["newmark", "explicit+dla", "dla+implicit"])
def test_kernel_matches_twin(system, ic, method, steps):
    a = nhphys.simulate(system, steps * 0.01, 0.01, integrator=method, backend="python",
                        save_every=50, **ic)
    b = nhphys.simulate(system, steps * 0.01, 0.01, integrator=method, backend="cython",
                        save_every=50, **ic)
    for field in a.fields:
        np.testing.assert_allclose(a[field], b[field], rtol=0, atol=1e-10)


@pytest.mark.parity
def test_retraction_kernel_matches_twin():
    sleigh = KnifeEdge(1.0, 0.5, 0.5)
    runs = [nhphys.simulate(sleigh, 100.0, 0.01, integrator=nhphys.integrators.Retraction(m),
                            backend=b, save_every=50, velocity0=0.1, omega0=1.0)
            for m, b in [("exp", "python"), ("exp", "cython")]]
    for field in runs[0].fields:
        np.testing.assert_allclose(runs[0][field], runs[1][field], rtol=0, atol=1e-10)


def _particle(**overrides):
    """The nonholonomic particle dz = y dx in a harmonic well, as a user would write it."""
    args = {
        "mass_matrix": np.eye(3),
        "potential": lambda q: 0.5 * q @ q,
        "grad_potential": lambda q: q.copy(),
        "constraint_matrix": lambda q: np.array([[-q[1], 0.0, 1.0]]),
        "constraint_matrix_derivative": lambda q: np.array(
            [[[0.0, -1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]),
    }
    args.update(overrides)
    return ConstrainedMechanicalSystem(**args)


def test_generic_system_converges_to_the_continuous_flow():
    ic = {"q0": [1.0, 0.5, 0.0], "v0": [0.2, 1.0, 0.1]}
    ref = nhphys.simulate(_particle(), 2.0, 2.0, integrator=Reference(1e-13, 1e-14), **ic)
    errors = []
    for h in (0.04, 0.02, 0.01):
        traj = nhphys.simulate(_particle(), 2.0, h, integrator=Newmark(0.25, 0.25, 0.5), **ic)
        errors.append(np.abs(traj.q[-1] - ref.q[-1]).max())
        assert traj.constraint_residual.max() < 1e-13
    assert abs(slope([0.04, 0.02, 0.01], errors) - 2) < 0.15


def test_generic_system_equals_the_built_in_model(backend):
    # the contact oscillator written with callbacks (Python path) and the built-in kernel model
    cs = OSC.coordinates
    user = ConstrainedMechanicalSystem(cs.mass_matrix, cs.potential, cs.grad_potential,
                                       cs.constraint_matrix, cs.constraint_matrix_derivative)
    a = nhphys.simulate(user, 2.0, 0.01, integrator=Newmark(0.0, 0.0, 0.5), backend=backend,
                        **OSC_IC)
    b = nhphys.simulate(OSC, 2.0, 0.01, integrator=Newmark(0.0, 0.0, 0.5), backend=backend,
                        **OSC_IC)
    np.testing.assert_allclose(a.q, b.q, atol=1e-12)
    assert a.meta["backend"] == "python"  # a user's callables run on the twin, and it says so
    assert b.meta["backend"] == backend
    # so does a subclass of a built-in model, which may override its functions
    sub = type("Shifted", (models.ContactOscillatorModel,), {})(0.3)
    assert models.compiled_counterpart(sub, _backend.kernel_module("models") or models) is None


@pytest.mark.parametrize("mass,match", [
    (np.diag([1.0, 0.0, 1.0]), "singular"),
    (np.diag([1.0, -1.0, 1.0]), "indefinite"),
    (np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "symmetric"),
    (np.eye(2)[:, :1], "square"),
])
def test_bad_mass_matrix(mass, match):
    with pytest.raises(ValueError, match=f"`mass_matrix`.*{match}|{match}.*"):
        _particle(mass_matrix=mass)


@pytest.mark.parametrize("mu,match", [
    (lambda q: np.array([1.0, 0.0, q[1]]), "shape"),
    (lambda q: np.zeros((1, 4)), "shape"),
    (lambda q: np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]), "full rank"),
    (lambda q: np.eye(3), "shape"),
])
def test_bad_constraint_matrix(mu, match):
    with pytest.raises(ValueError, match=match):
        nhphys.simulate(_particle(constraint_matrix=mu), 1.0, 0.1, integrator=Newmark(),
                        q0=[0.0, 0.0, 0.0], v0=[0.0, 1.0, 0.0])


def test_bad_constraint_derivative_shape():
    with pytest.raises(ValueError, match="constraint_matrix_derivative"):
        nhphys.simulate(_particle(constraint_matrix_derivative=lambda q: np.zeros((3, 3))),
                        1.0, 0.1, integrator=Newmark(), q0=[0.0, 0.0, 0.0], v0=[0.0, 1.0, 0.0])


@pytest.mark.parametrize("kwargs,match", [
    ({"beta": 0.6}, "`beta`"), ({"beta": -0.1}, "`beta`"), ({"beta_prime": 0.51},
                                                               "`beta_prime`"),
    ({"alpha": 1.5}, "`alpha`"), ({"constraint_discretization": "mid"},
                                   "`constraint_discretization`"),
    ({"newton_tol": 0.1}, "`newton_tol`"),
])
def test_bad_newmark_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Newmark(**kwargs)
    with pytest.raises(TypeError, match="`beta`"):
        Newmark(beta="zero")


def test_initial_velocity_off_the_constraint_says_by_how_much():
    with pytest.raises(ValueError, match=r"`v0`.*mu\(q0\) v0 = \[0\.5"):
        nhphys.simulate(OSC, 1.0, 0.1, integrator=Newmark(), q0=[1.0, 1.0, 0.5],
                        v0=[0.0, 0.2, 0.5])


def test_composition_weights_and_stages_are_checked():
    with pytest.raises(ValueError, match="sum to 1"):
        Composition([(Newmark(), 0.5), (Newmark(), 0.4)])
    with pytest.raises(TypeError, match=r"`stages\[0\]`"):
        Composition([Newmark()])


def test_newton_failure_names_the_step(backend):
    with pytest.raises(nhphys.NewtonError, match="step 0") as info:
        nhphys.simulate(OSC, 10.0, 5.0, integrator=Newmark(0.25, 0.25, 0.5, max_newton=1),
                        backend=backend, **OSC_IC)
    assert info.value.step == 0 and info.value.time == 0.0


@pytest.mark.parity
@pytest.mark.parametrize("method,failed", [
    # the explicit first sub-step succeeds, the implicit second one fails in step 2
    (Composition([(Newmark(0.0, 0.0, 0.0), 0.5), (Newmark(0.25, 0.25, 0.5), 0.5)],
                 max_newton=3), 2),
    (Composition([(DLA("midpoint"), 0.5), (Newmark(0.5, 0.5, 0.5), 0.5)], max_newton=3), 2),
], ids=["explicit+implicit", "dla+implicit"])
def test_failed_step_leaves_the_state_at_its_start_in_kernel_and_twin(method, failed):
    ic = {"q0": [1.0, 1.0, 0.5], "v0": [-0.5, 0.0, 0.5]}
    states = {}
    for backend in ("python", "cython"):
        run = method.start(ContactOscillator(0.3), 0.35, backend, **ic)
        with pytest.raises(nhphys.NewtonError) as info:
            run.advance(10, 1)
        assert info.value.step == failed and run.steps_done == failed
        # the state is the one after the steps that succeeded, not a sub-step further
        done = method.start(ContactOscillator(0.3), 0.35, backend, **ic)
        done.advance(failed, 1)
        for name in ("q", "v", "lam"):
            np.testing.assert_array_equal(getattr(run, name), getattr(done, name))
        states[backend] = (run.q, run.v, run.lam)
        with pytest.raises(RuntimeError, match=f"stopped at step {failed}"):
            run.advance(1, 1)
    for a, b in zip(states["python"], states.get("cython", states["python"])):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


@pytest.mark.parametrize("method", [
    Newmark(0.25, 0.25, 0.5, max_newton=np.int64(30)),
    DLA("midpoint", max_newton=np.int64(30), newton_tol=np.float64(1e-12)),
    Composition.symmetric(Newmark(0.0, 0.0, 0.0), max_newton=np.int32(30)),
], ids=["newmark", "dla", "composition"])
def test_numpy_numbers_are_accepted_as_newton_options(method, backend):
    assert type(method.max_newton) is int and method.max_newton == 30
    traj = nhphys.simulate(OSC, 1.0, 0.01, integrator=method, backend=backend, **OSC_IC)
    assert traj.constraint_residual.max() < 1e-13
    with pytest.raises(ValueError, match="`max_newton`"):
        Newmark(max_newton=np.float64(30.0))
    with pytest.raises(ValueError, match="`max_newton`"):
        Composition([(Newmark(), 1.0)], max_newton=True)


@pytest.mark.parity
@settings(max_examples=40, deadline=None)
@given(beta=st.floats(0, 0.5), beta_p=st.floats(0, 0.5), alpha=st.floats(0, 1),
       disc=st.sampled_from(["point", "average"]), kind=st.sampled_from(["newmark", "dla"]),
       z=st.floats(-1, 1), vy=st.floats(-1, 1), h=st.floats(-0.2, 0.2).filter(
           lambda x: abs(x) > 1e-3))
def test_single_step_kernel_matches_twin(beta, beta_p, alpha, disc, kind, z, vy, h):
    method = (Newmark(beta, beta_p, alpha, disc) if kind == "newmark"
              else DLA("midpoint" if beta < 0.25 else "trapezoidal", alpha, disc))
    system = NonReversibleContactOscillator(0.3)
    q0 = np.array([0.5, 0.8, z])
    v0 = _on_constraint(q0, [0.0, vy, 0.7])
    qa, va = _step_from(system, method, q0, v0, h, "python")
    qb, vb = _step_from(system, method, q0, v0, h, "cython")
    np.testing.assert_allclose(qa, qb, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(va, vb, rtol=1e-12, atol=1e-14)


def test_retraction_on_a_system_without_lie_group_says_what_to_use():
    with pytest.raises(TypeError, match="Newmark"):
        nhphys.simulate(OSC, 1.0, 0.1, **OSC_IC)
    with pytest.raises(TypeError, match="Lie group"):
        nhphys.simulate(_particle(), 1.0, 0.1, q0=[0.0, 0.0, 0.0], v0=[0.0, 1.0, 0.0])


@pytest.mark.parametrize("method", [DLA("midpoint", 0.3), DLA("trapezoidal", 0.8, "average"),
                                    COMPOSITION, Newmark(0.2, 0.4, 0.1, "average")], ids=repr)
def test_adjoint_method_inverts_the_negative_step(method, backend):
    # Phi*_h = (Phi_{-h})^-1 for DLA, compositions and Newmark members, on the gauge problem
    system = NonReversibleContactOscillator(0.3)
    q0, v0 = system.coordinates_from_conditions(**OSC_IC)
    q1, v1 = _step_from(system, method.adjoint(), q0, v0, 0.1, backend)
    q2, v2 = _step_from(system, method, q1, v1, -0.1, backend)
    assert np.abs(q1 - q0).max() > 1e-2
    np.testing.assert_allclose(q2, q0, atol=1e-12)
    np.testing.assert_allclose(v2, v0, atol=1e-12)


@pytest.mark.parity
@settings(max_examples=40, deadline=None)
@given(q=st.lists(st.floats(-3, 3), min_size=4, max_size=4),
       d=st.lists(st.floats(-3, 3), min_size=4, max_size=4),
       which=st.sampled_from(["knife edge", "disk", "oscillator", "rotor", "locked rotor"]))
def test_compiled_models_match_their_twins(q, d, which):
    # every per-point function of every built-in model, kernel against twin
    twin_model = {
        "knife edge": models.KnifeEdgeModel(2.0, 0.3, 0.2, 1.7),
        "disk": models.VerticalDiskModel(1.0, 0.5, 0.125, 0.0625),
        "oscillator": models.ContactOscillatorModel(0.3, 0.8),
        "rotor": models.RotorSleighModel(1.0, 0.4, 0.1, 0.5),
        "locked rotor": models.RotorSleighModel(1.0, 0.4, 0.1, 0.5, locked=True),
    }[which]
    compiled = models.compiled_counterpart(twin_model, _backend.kernel_module("models"))
    assert type(compiled).__name__ == type(twin_model).__name__
    assert compiled.parameters == twin_model.parameters and compiled.r == twin_model.r
    assert compiled.has_gauge == twin_model.has_gauge
    np.testing.assert_array_equal(compiled.mass_matrix, twin_model.mass_matrix)
    n = twin_model.n
    a, b = twin_model.evaluate(q[:n], d[:n]), compiled.evaluate(q[:n], d[:n])
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].shape == b[key].shape, key
        np.testing.assert_allclose(b[key], a[key], rtol=1e-12, atol=1e-15, err_msg=key)


@pytest.mark.parametrize("which", ["knife edge", "oscillator", "rotor", "locked rotor"])
def test_model_derivatives_are_the_derivatives(which):
    # Hess V, D mu and the gauge terms against central differences of the functions they
    # differentiate (the twin: the compiled model equals it, test above)
    model = {
        "knife edge": models.KnifeEdgeModel(2.0, 0.3, 0.2, 1.7),
        "oscillator": models.ContactOscillatorModel(0.3, 0.8),
        "rotor": models.RotorSleighModel(1.0, 0.4, 0.1, 0.5),
        "locked rotor": models.RotorSleighModel(1.0, 0.4, 0.1, 0.5, locked=True),
    }[which]
    rng = np.random.default_rng(7)
    q, d = rng.normal(size=model.n), rng.normal(size=model.n)
    eps = 1e-6

    def diff(f):
        cols = [(np.asarray(f(q + eps * e)) - np.asarray(f(q - eps * e))) / (2 * eps)
                for e in np.eye(model.n)]
        return np.stack(cols, axis=-1)

    np.testing.assert_allclose(diff(model.potential), model.grad_potential(q), atol=1e-8)
    np.testing.assert_allclose(diff(model.grad_potential), model.hessian_potential(q), atol=1e-8)
    np.testing.assert_allclose(diff(model.constraint_matrix),
                               model.constraint_matrix_derivative(q), atol=1e-8)
    np.testing.assert_allclose(diff(model.gauge_hessian) @ d, model.gauge_third(q, d),
                               atol=1e-8)


def test_an_exception_in_a_user_function_is_raised_as_itself_and_stops_the_run():
    class Boom(Exception):
        pass

    calls = [0]

    def grad_potential(q):
        calls[0] += 1
        if calls[0] > 60:
            raise Boom("raised by the user's gradient")
        return q.copy()

    ic = {"q0": [1.0, 0.5, 0.0], "v0": [0.2, 1.0, 0.1]}
    run = Newmark(0.25, 0.25, 0.5).start(_particle(grad_potential=grad_potential), 0.01,
                                         "auto", **ic)
    assert run.backend == "python"
    with pytest.raises(Boom, match="user's gradient") as info:
        run.advance(100, 1)
    assert any(entry.name == "grad_potential" for entry in info.traceback)
    # the state is at the start of the step that raised: one of the undisturbed run's states
    clean = Newmark(0.25, 0.25, 0.5).start(_particle(), 0.01, "auto", **ic)
    states = [clean.q.copy()] + list(clean.advance(100, 1)["q"])
    assert any(np.array_equal(run.q, q) for q in states[1:])
    with pytest.raises(RuntimeError, match="start a new one"):
        run.advance(1, 1)
