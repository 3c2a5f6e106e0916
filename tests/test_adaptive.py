"""Adaptive DOP853 on the compiled right-hand side, projected at every frame
(nhphys.integrators.Adaptive, nhphys_ext.rhs and its twin nhphys.twins.rhs).

Speed is not tested here (benchmarks/bench_work_precision.py measures it)."""

import types

import numpy as np
import pytest

import nhphys
from nhphys import _backend
from nhphys.errors import NewtonError
from nhphys.integrators import Adaptive, Reference, integrator_from_name
from nhphys.lie import so3
from nhphys.systems import Suslov
from nhphys.twins import rhs as twin

NON_PRINCIPAL = np.array([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]])


def random_states(rng, n, spread=1.0):
    """(n, 12) states: rotations, slightly off SO(3), and velocities off the constraint."""
    states = np.empty((n, 12))
    for k in range(n):
        R = so3.exp(rng.normal(size=3) * 2.0) + spread * 1e-3 * rng.normal(size=(3, 3))
        states[k, :9] = R.ravel()
        states[k, 9:] = rng.normal(size=3) * spread
    return states


def field_module(backend):
    return _backend.choose("rhs", backend)[0]


def orthogonality(R):
    """max over frames of max |R^T R - I|: (n, 3, 3) -> float."""
    return np.abs(np.einsum("nki,nkj->nij", R, R) - np.eye(3)).max()


# -- the field: kernel and twin, and the system's own continuous equations -------------------

@pytest.mark.parity
def test_kernel_field_and_projection_equal_the_twin(rng):
    from nhphys_ext import rhs as kernel

    for inertia, axis in [(NON_PRINCIPAL, [0, 0, 1]), (np.diag([1.0, 10.0, 100.0]), [0, 0, 1]),
                          (NON_PRINCIPAL, [0.3, -1.0, 0.7])]:
        fast, slow = kernel.SuslovField(inertia, axis), twin.SuslovField(inertia, axis)
        for y in random_states(rng, 200):
            f_fast, f_slow = fast(0.0, y), slow(0.0, y)
            scale = np.abs(f_slow).max()
            assert np.abs(f_fast - f_slow).max() <= 1e-14 * scale
            p_fast, p_slow = y.copy(), y.copy()
            fast.project(p_fast)
            slow.project(p_slow)
            assert np.abs(p_fast - p_slow).max() <= 1e-14 * np.abs(p_slow).max()
        assert fast.evaluations == slow.evaluations == 200


def test_field_is_the_reference_equations(backend, rng):
    # Suslov.reference_rhs (Suslov.omega_dot: the multiplier form) is written independently
    for inertia, axis in [(NON_PRINCIPAL, [0, 0, 1]), (NON_PRINCIPAL, [0.3, -1.0, 0.7])]:
        body = Suslov(inertia, axis)
        field = field_module(backend).SuslovField(body.inertia, body.axis)
        for y in random_states(rng, 50):
            expected = body.reference_rhs(0.0, np.concatenate([y, [0.0]]))[:12]
            got = field(1.5, y)
            assert np.abs(got - expected).max() <= 1e-14 * np.abs(expected).max()


def test_field_accepts_lists_and_refuses_other_shapes(backend):
    field = field_module(backend).SuslovField(NON_PRINCIPAL, [0, 0, 1])
    y = [1.0, 0, 0, 0, 1, 0, 0, 0, 1, 1.0, 0.5, 0.0]
    np.testing.assert_allclose(field(0.0, y), field(0.0, np.array(y)), rtol=0, atol=0)
    with pytest.raises(ValueError):
        field(0.0, np.zeros(13))


def test_projection_lands_on_the_manifold(backend, rng):
    body = Suslov(NON_PRINCIPAL, [0.3, -1.0, 0.7])
    field = field_module(backend).SuslovField(body.inertia, body.axis)
    for y in random_states(rng, 100):
        p = y.copy()
        field.project(p)
        R = p[:9].reshape(3, 3)
        assert np.abs(R.T @ R - np.eye(3)).max() <= 1e-15 * 4
        assert np.linalg.det(R) > 0
        assert abs(body.axis @ p[9:]) <= 1e-15 * np.abs(p[9:]).max() * 4
        # the closest rotation (independent: it is the polar factor, symmetric R^T Y >= 0)
        S = R.T @ y[:9].reshape(3, 3)
        assert np.abs(S - S.T).max() <= 1e-14
        assert np.linalg.eigvalsh(0.5 * (S + S.T)).min() > 0
        # along I^-1 a: the change is I^-1 a times a number
        change = p[9:] - y[9:]
        direction = body.inertia_inv @ body.axis
        assert np.linalg.norm(np.cross(change, direction)) <= 1e-14 * np.linalg.norm(y[9:]) + \
            1e-14 * np.linalg.norm(change)
        # a projected state stays put
        q = p.copy()
        field.project(q)
        assert np.abs(q - p).max() <= 1e-15 * 4


# -- the run ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference_60s():
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    ref = nhphys.simulate(body, 60.0, 0.5, Reference(rtol=1e-13, atol=1e-15),
                          omega=[1, 0.5, 0])
    return body, ref


def test_agrees_with_the_reference_to_its_tolerance(backend, reference_60s):
    # one interval of 60 s, and 120 projected intervals of 0.5 s (frames checked): the error
    # after 60 s of motion stays below 50 rtol from rtol 1e-6 to 1e-12 (Retraction order 8 at
    # dt = 0.01 s agrees with this Reference to 5.4e-13 at 60 s)
    body, ref = reference_60s
    for rtol in (1e-6, 1e-8, 1e-10, 1e-12):
        for dt in (60.0, 0.5):
            traj = nhphys.simulate(body, 60.0, dt, Adaptive(rtol, rtol * 1e-2),
                                   backend=backend, omega=[1, 0.5, 0])
            assert traj.meta["backend"] == backend
            assert orthogonality(traj.R) <= 1e-14
            assert traj.constraint_residual.max() <= 1e-14
            assert np.abs(traj.R[-1] - ref.R[-1]).max() <= 50 * rtol
            if dt == 0.5:
                assert np.abs(traj.R - ref.R).max() <= 50 * rtol


@pytest.mark.parametrize("loop", ["compiled", "scipy"])
@pytest.mark.parametrize("rtol", [1e-6, 1e-8, 1e-10])
def test_projection_does_not_spoil_the_accuracy(backend, reference_60s, rtol, loop):
    # the same run with the projection switched off (same solver, same restarts): the projected
    # run (at every accepted step in the compiled loop, at every frame in scipy's) is as close
    # to the reference, and its frames are on the manifold, the others not
    body, ref = reference_60s
    runs = {}
    for projected in (True, False):
        run = Adaptive(rtol, rtol * 1e-2, loop=loop).start(body, 0.5, backend,
                                                            omega0=[1, 0.5, 0])
        if not projected:
            field = run.field
            run.field = types.SimpleNamespace(
                project=lambda y, t=0.0: None,
                integrate=lambda *args: field.integrate(*args, project=False))
        runs[projected] = run.advance(120, 1)
    errors = {key: np.abs(frames["R"] - ref.R[1:]).max() for key, frames in runs.items()}
    assert orthogonality(runs[False]["R"]) > 1e-13  # the unprojected solution leaves SO(3)
    assert orthogonality(runs[True]["R"]) <= 1e-14
    assert runs[True]["constraint_residual"].max() <= 1e-14
    assert errors[True] <= 1.5 * errors[False]


def test_follows_the_principal_axis_closed_form(backend):
    # I diagonal, a = e3, momentum (1, 1, 0): Omega = (1, 0.1, 0) constant, R = exp(t hat(Omega))
    body = Suslov([1.0, 10.0, 100.0], axis=[0, 0, 1])
    traj = nhphys.simulate(body, 180.0, 1.0, Adaptive(1e-11, 1e-13), backend=backend,
                           momentum=[1, 1, 0])
    exact = so3.exp(traj.t[:, None] * np.array([1.0, 0.1, 0.0]))
    assert np.abs(traj.R - exact).max() <= 1e-8
    np.testing.assert_allclose(traj.omega, np.tile([1.0, 0.1, 0.0], (len(traj), 1)),
                               rtol=0, atol=1e-12)
    assert orthogonality(traj.R) <= 1e-14
    assert traj.constraint_residual.max() <= 1e-14


def test_off_axis_constraint_keeps_residuals_at_round_off(backend):
    body = Suslov(NON_PRINCIPAL, [0.3, -1.0, 0.7])
    omega0 = np.cross(body.axis, [1.0, 0.2, -0.4])
    traj = nhphys.simulate(body, 30.0, 0.1, "dop853", backend=backend, omega=omega0)
    assert len(traj) == 301
    assert orthogonality(traj.R) <= 1e-14
    assert traj.constraint_residual.max() <= 1e-14
    assert np.ptp(traj.energy) <= 1e-9 * traj.energy[0]


@pytest.mark.parametrize("forced", [False, True])
def test_checkpoint_resumes_bit_for_bit(backend, forced):
    # (forced: a spring and a motor, the state (13,) with the work; and the energy level)
    body = Suslov(NON_PRINCIPAL, [0, 0, 1], forces=[
        nhphys.forces.Spring(2.0, anchor=[0.3, 0.0, 0.2], point=[0.1, 0.1, 0.0]),
        nhphys.forces.Motor(torque=0.05, target_speed=1.0, gain=0.1)] if forced else None)
    integrator = Adaptive(1e-9, 1e-11, conserve_energy=forced)
    whole = integrator.start(body, 0.25, backend, omega0=[1, 0.5, 0])
    frames = whole.advance(40, 4)
    first = integrator.start(body, 0.25, backend, omega0=[1, 0.5, 0])
    first.advance(20, 4)
    saved = first.checkpoint()
    second = integrator.start(body, 0.25, backend, omega0=[1, 0.5, 0])
    second.restore(saved)
    rest = second.advance(20, 4)
    np.testing.assert_array_equal(rest["R"], frames["R"][5:])
    np.testing.assert_array_equal(rest["omega"], frames["omega"][5:])
    np.testing.assert_array_equal(rest["work"], frames["work"][5:])
    if forced:
        assert saved["state"].shape == (13,) and np.abs(frames["work"]).max() > 0


@pytest.mark.parametrize("loop, reason", [("compiled", "more than max_steps"),
                                          ("scipy", "larger nsteps")])
def test_a_failed_interval_names_it_and_ends_the_run(backend, loop, reason):
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    # rtol 1e-12 takes about 10 steps per second here: 5 steps cannot cover 1 s
    run = Adaptive(1e-12, 1e-14, max_steps=5, loop=loop).start(body, 1.0, backend,
                                                               omega0=[1, 0.5, 0])
    with pytest.raises(NewtonError, match=f"adaptive solver failed.*{reason}") as info:
        run.advance(3, 1)
    assert info.value.step == 0 and info.value.time == 0.0
    with pytest.raises(RuntimeError, match="stopped at step 0"):
        run.advance(1, 1)
    with pytest.raises(NewtonError, match="adaptive solver failed"):
        nhphys.simulate(body, 10.0, 1.0, Adaptive(1e-12, 1e-14, max_steps=5), backend=backend,
                        omega=[1, 0.5, 0])


# -- force elements ---------------------------------------------------------------------------

def forced_tops():
    """Suslov bodies with every kind of built-in element about the fixed point: (name, body)."""
    F = nhphys.forces
    return [
        ("scheduled torque and a force at a body point",
         Suslov(NON_PRINCIPAL, [0, 0, 1], forces=[
             F.Torque(F.Schedule([0.0, 1.0, 3.0], [[0.1, 0, 0], [0, 0.2, 0.05], [0, 0, 0]])),
             F.Force([0.0, 0.3, -0.2], point=[0.1, 0.0, 0.2], frame="body")])),
        ("spring off the pivot and damping",
         Suslov(NON_PRINCIPAL, [0.3, -1.0, 0.7], pivot=[0.1, 0.0, 0.0], forces=[
             F.Spring(point=[0.2, 0.1, 0.0], anchor=[0.5, 0.2, 0.3], stiffness=2.0,
                      rest_length=0.1),
             F.AngularDamping(0.05)])),
        ("motor with speed control, space-frame torque and force",
         Suslov(NON_PRINCIPAL, [0, 0, 1], forces=[
             F.Motor(torque=0.05, target_speed=2.0, gain=0.1, axis=[1.0, 0.0, 0.0]),
             F.Torque([0.0, 0.03, 0.02], frame="space"),
             F.Force([0.1, 0.0, -0.1], point=[0.0, 0.2, 0.1])])),
    ]


@pytest.mark.parametrize("case", range(3))
def test_forced_field_is_the_reference_equations(backend, rng, case):
    # Suslov.reference_rhs with its force set (the torque about the fixed point, the work)
    name, body = forced_tops()[case]
    body.reference_state(omega0=body.constraint_basis @ [1.0, 0.5])
    field = field_module(backend).SuslovField(body.inertia, body.axis, body.force_set(backend),
                                              body.pivot)
    assert field.size == 13
    for k, y in enumerate(random_states(rng, 20)):
        t = 0.4 * k
        state = np.concatenate([y, [0.3]])
        expected = body.reference_rhs(t, state)
        got = field(t, state)
        assert np.abs(got - expected).max() <= 1e-14 * np.abs(expected).max(), name
        assert abs(got[12]) > 0, name  # the elements do work


@pytest.mark.parity
@pytest.mark.parametrize("case", range(3))
def test_forced_kernel_field_equals_the_twin(rng, case):
    from nhphys_ext import rhs as kernel

    name, body = forced_tops()[case]
    fast = kernel.SuslovField(body.inertia, body.axis, body.force_set("cython"), body.pivot)
    slow = twin.SuslovField(body.inertia, body.axis, body.force_set("python"), body.pivot)
    for k, y in enumerate(random_states(rng, 50)):
        state = np.concatenate([y, [0.1 * k]])
        a, b = fast(0.3 * k, state), slow(0.3 * k, state)
        assert np.abs(a - b).max() <= 1e-14 * np.abs(b).max(), name
        # (E - W can cancel to near 0: relative to the terms, W = 0.1 k and the energy)
        scale = max(1.0, abs(state[12]), abs(slow.energy(state)))
        assert abs(fast.energy(state) - slow.energy(state)) <= 1e-14 * scale
        fast.energy_level = slow.energy_level = 0.9 * slow.energy(state)
        pa, pb = state.copy(), state.copy()
        fast.project(pa)
        slow.project(pb)
        assert np.abs(pa - pb).max() <= 1e-14 * np.abs(pb).max(), name
        assert abs(slow.energy(pb) - slow.energy_level) <= 1e-14 * scale  # reached
    assert fast.energy_misses == slow.energy_misses == 0


@pytest.mark.parametrize("loop", ["compiled", "scipy"])
@pytest.mark.parametrize("case", range(3))
def test_forced_run_agrees_with_the_reference(backend, case, loop):
    # against Reference at rtol 1e-12 over 10 s, at rtol 1e-10, both loops: R and the work to
    # the tolerance (measured: 1.3e-11 to 9.5e-11 in R, 1.1e-13 to 1.5e-11 of the energy in
    # the work), energy - work conserved to it (2.8e-15 to 6.9e-13 of the energy) and, with
    # conserve_energy, held to round-off (2.0e-16 to 4.1e-16)
    name, body = forced_tops()[case]
    omega = body.constraint_basis @ [1.0, 0.5]
    ref = nhphys.simulate(body, 10.0, 0.5, Reference(rtol=1e-12, atol=1e-14), omega=omega)
    for conserve in (False, True):
        traj = nhphys.simulate(body, 10.0, 0.5,
                               Adaptive(1e-10, 1e-12, loop=loop, conserve_energy=conserve),
                               backend=backend, omega=omega)
        assert traj.meta["backend"] == backend
        assert np.abs(traj.R - ref.R).max() <= 10 * 1e-10, name
        energy = np.abs(traj.energy).max()
        np.testing.assert_allclose(traj.work, ref.work, rtol=0, atol=2e-10 * energy)
        balance = traj.energy - traj.work
        bound = 2e-15 if conserve else 2e-11
        assert np.ptp(balance) <= bound * energy, (name, conserve)
        assert traj.constraint_residual.max() <= 1e-14
        assert orthogonality(traj.R) <= 1e-14
    assert np.abs(ref.work).max() > 1e-3  # the elements did work


def test_names_options_and_unsupported_systems():
    assert integrator_from_name("dop853") == Adaptive()
    assert integrator_from_name("DOP853-energy") == Adaptive(conserve_energy=True)
    assert Adaptive(method="dopri5").method == "dopri5"
    for bad in [dict(rtol=0.0), dict(atol=1.0), dict(rtol=True), dict(method="RK45"),
                dict(max_steps=0), dict(max_steps=2.5)]:
        with pytest.raises(ValueError):
            Adaptive(**bad)
    pushed = nhphys.systems.KnifeEdge(1.0, 0.1, 0.0, forces=[
        nhphys.forces.Force(lambda t, state: [0.1, 0.0, 0.0])])
    with pytest.raises(ValueError, match="callable"):
        nhphys.simulate(pushed, 1.0, 0.1, Adaptive(), velocity=0.1)
    with pytest.raises(TypeError, match="omega0"):
        Adaptive().start(Suslov(NON_PRINCIPAL, [0, 0, 1]), 0.1, "auto", omega_0=[1, 0.5, 0])
    with pytest.raises(ValueError, match="constraint"):
        nhphys.simulate(Suslov(NON_PRINCIPAL, [0, 0, 1]), 1.0, 0.1, Adaptive(), omega=[1, 0, 1])
    pushed_top = Suslov(NON_PRINCIPAL, [0, 0, 1], forces=[
        nhphys.forces.Torque(lambda t, state: [0.1, 0.0, 0.0])])
    with pytest.raises(ValueError, match="callable"):
        nhphys.simulate(pushed_top, 1.0, 0.1, Adaptive(), omega=[1, 0.5, 0])


@pytest.mark.parity
def test_kernel_and_twin_runs_agree_over_ten_thousand_frames():
    body = Suslov(NON_PRINCIPAL, [0.3, -1.0, 0.7])
    omega0 = np.cross(body.axis, [1.0, 0.2, -0.4])
    runs = [nhphys.simulate(body, 100.0, 0.01, Adaptive(1e-10, 1e-12), backend=backend,
                            omega=omega0, save_every=10) for backend in ("cython", "python")]
    assert [run.meta["backend"] for run in runs] == ["cython", "python"]
    assert np.abs(runs[0].R - runs[1].R).max() <= 1e-10
    assert np.abs(runs[0].omega - runs[1].omega).max() <= 1e-10
