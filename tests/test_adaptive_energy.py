"""Adaptive(conserve_energy=True): the projection onto the energy level of the start
(nhphys.twins.rhs, "Holding the energy"), on the Suslov field and the rolling field, kernel and
twin.

Speed is not tested here (benchmarks/bench_long_energy.py measures it)."""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import Adaptive, Reference
from nhphys.integrators.adaptive import field_of
from nhphys.systems import Suslov
from nhphys.twins.rhs import energy_correction
from test_adaptive_rolling import (  # noqa: F401 (disk_reference: a fixture)
    disk_error,
    disk_reference,
    forced_setups,
    moving_setups,
    orthogonality,
    random_states,
    thin_disk,
)

NON_PRINCIPAL = [[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]]


def energy_setups():
    """(name, system, start): plain, forced (a spring and a field: potentials), moving."""
    disk, disk_start = thin_disk()
    F = nhphys.forces
    pushed = nhphys.systems.RollingBody(disk.body, nhphys.surfaces.Plane(), forces=[
        F.Spring(anchor=[0.3, 0.1, 0.2], stiffness=3.0, rest_length=0.1),
        F.UniformField([0.2, -0.1, 0.0])])
    return [("thin disk", disk, disk_start), ("disk, spring and field", pushed, disk_start),
            *forced_setups(), *moving_setups()[:2]]


def trajectory_energy(system, y, t):
    """``energy - work`` of the state ``y`` (15,) at ``t`` from the system's own frames and
    observables (independent of the field's energy)."""
    frames = system.observables(system.reference_unpack(y[None], np.array([t])))
    return float(frames["energy"][0] - frames["work"][0])


@pytest.mark.parametrize("case", range(6))
def test_field_energy_is_the_trajectory_energy_less_work(backend, rng, case):
    name, system, start = energy_setups()[case]
    states = random_states(system, start, rng, 10 if backend == "cython" else 4)
    field, _ = field_of(system, backend)  # (after reference_state: its chart)
    for k, y in enumerate(states):
        t = 0.3 * k
        y[14] = 0.1 * k  # some work done
        field.project(y, t)  # (no level: A only)
        expected = trajectory_energy(system, y, t)
        assert abs(field.energy(y, t) - expected) <= 1e-13 * max(1.0, abs(expected)), name


@pytest.mark.parametrize("case", range(6))
def test_projection_reaches_the_level_along_the_metric_gradient(backend, rng, case):
    # after the projection E - W is the level to round-off; only Omega moved, and along the
    # gradient of E in the kinetic metric, I~^-1 dE/dOmega, with the gradient taken here by
    # central differences of the energy and I~ = I - m hat(s)^2 from the frame's s
    name, system, start = energy_setups()[case]
    states = random_states(system, start, rng, 6 if backend == "cython" else 2)
    field, _ = field_of(system, backend)
    inertia, m = np.asarray(system.body.inertia, float), system.mass
    for k, y in enumerate(states):
        t = 0.3 * k
        field.project(y, t)
        level = field.energy(y, t) * (1.0 - 1e-3 * (-1) ** k)  # above, then below
        field.energy_level = level
        p = y.copy()
        assert field.project(p, t) == 0
        field.energy_level = float("nan")
        assert abs(field.energy(p, t) - level) <= 1e-13 * max(1.0, abs(level)), name
        assert np.abs(p[:9] - y[:9]).max() <= 4e-16  # A already a rotation: round-off
        np.testing.assert_array_equal(p[[9, 10, 14]], y[[9, 10, 14]])
        step = 1e-6
        grad = np.array([(field.energy(y + step * e, t) - field.energy(y - step * e, t))
                         / (2 * step) for e in np.eye(15)[11:14]])
        s = field.frame(y, t)[18:21]
        S = np.array([[0, -s[2], s[1]], [s[2], 0, -s[0]], [-s[1], s[0], 0]])
        direction = np.linalg.solve(inertia - m * S @ S, grad)
        moved = p[11:14] - y[11:14]
        cosine = moved @ direction / (np.linalg.norm(moved) * np.linalg.norm(direction))
        assert abs(abs(cosine) - 1.0) <= 1e-8, name


@pytest.mark.parity
@pytest.mark.parametrize("case", range(6))
def test_kernel_energy_and_projection_equal_the_twin(rng, case):
    name, system, start = energy_setups()[case]
    states = random_states(system, start, rng, 10)
    fast, _ = field_of(system, "cython")
    slow, _ = field_of(system, "python")
    for k, y in enumerate(states):
        t = 0.3 * k
        a, b = fast.energy(y, t), slow.energy(y, t)
        assert abs(a - b) <= 1e-13 * max(1.0, abs(b)), name
        fast.energy_level = slow.energy_level = 0.99 * b
        pa, pb = y.copy(), y.copy()
        assert fast.project(pa, t) == slow.project(pb, t) == 0
        assert np.abs(pa - pb).max() <= 1e-13 * np.abs(pb).max(), name


def test_energy_correction_is_the_nearest_root():
    # E(mu) = E + a (mu + mu^2 / 2) reaches E - excess at the returned mu, the root nearest 0
    for excess, a in [(1e-3, 2.0), (-0.5, 2.0), (1e-17, 3.0), (0.9, 2.0)]:
        mu = energy_correction(excess, a)
        assert abs(a * (mu + mu * mu / 2) + excess) <= 1e-15 * a
        assert abs(mu) < abs(-2 - mu)  # nearer than the other root, -2 - mu
    assert energy_correction(1.5, 2.0) == 0.0  # below the potential energy: unreachable
    assert energy_correction(0.1, 0.0) == 0.0  # at rest


# -- runs --------------------------------------------------------------------------------------

def test_the_disk_holds_its_energy_and_keeps_its_accuracy(backend, disk_reference):
    # the wobbling disk: at every frame |E / E0 - 1| at round-off over 1000 s (20 s on the
    # twin), where the run without it drifts (at rtol 1e-9: 6.7e-11 after 1000 s, 1.3e-12
    # after 20 s);
    # and the error at 10 s against Reference of the size of the run's without the energy
    # projection (against Kane's equations, bench_long_energy.py: 0.57-2.5x from rtol 1e-7
    # to 5e-9, 0.96-1.03x from 2e-9 to 1e-10), so the order is kept
    system, start, ref = disk_reference
    T = 1000.0 if backend == "cython" else 20.0
    runs = {}
    for conserve in (False, True):
        traj = nhphys.simulate(system, T, 10.0, Adaptive(1e-9, 1e-11, conserve_energy=conserve),
                               backend=backend, progress=False, **start)
        assert traj.meta["backend"] == backend
        runs[conserve] = traj
    energy = runs[True].energy
    assert np.abs(energy / energy[0] - 1).max() <= 2e-15
    drift = runs[False].energy
    assert np.abs(drift / drift[0] - 1).max() > 2e-13  # what the projection removes
    assert orthogonality(runs[True].R) <= 1e-14
    assert runs[True].constraint_residual.max() <= 1e-14
    for rtol in ((1e-7, 1e-10) if backend == "cython" else (1e-7,)):
        errors = {}
        for conserve in (False, True):
            traj = nhphys.simulate(system, 10.0, 10.0,
                                   Adaptive(rtol, rtol * 1e-2, conserve_energy=conserve),
                                   backend=backend, progress=False, **start)
            errors[conserve] = disk_error(traj, ref)
        assert errors[True] <= 3 * errors[False], (rtol, errors)
        # DOP853's global error over 10 s of the wobbling disk is tens of rtol (measured with
        # the energy projection: 6.4e-6 at rtol 1e-7, 64 rtol; the polar factor alone as the
        # rotation's projection gave 2.4e-4)
        assert errors[True] <= 300 * rtol


def test_suslov_holds_its_kinetic_energy(backend):
    # the non-principal Suslov case of tests/test_adaptive.py: kinetic energy at round-off at
    # every frame, the constraint still at round-off, and the same distance to Reference
    # (rtol 1e-13) as the run without the energy projection, to 1 %
    body = Suslov(NON_PRINCIPAL, [0, 0, 1])
    ref = nhphys.simulate(body, 60.0, 0.5, Reference(rtol=1e-13, atol=1e-15),
                          omega=[1, 0.5, 0])
    for rtol in (1e-6, 1e-10):
        errors = {}
        for conserve in (False, True):
            traj = nhphys.simulate(body, 60.0, 0.5,
                                   Adaptive(rtol, rtol * 1e-2, conserve_energy=conserve),
                                   backend=backend, omega=[1, 0.5, 0])
            errors[conserve] = np.abs(traj.R - ref.R).max()
        energy = traj.energy
        assert np.abs(energy / energy[0] - 1).max() <= 1e-15
        assert traj.constraint_residual.max() <= 1e-14
        assert orthogonality(traj.R) <= 1e-14
        assert errors[True] <= 1.01 * errors[False] and errors[True] <= 50 * rtol


def test_a_turntable_holds_energy_less_work(backend):
    # on a moving ground the first integral is E - W (W the table's work): held to round-off
    # while the table does 18 J of work, and the ball still circles at 2 W / 7 (measured:
    # 2.8e-10 off the circle after 4 turns, 3.5e-10 without the energy projection)
    from test_moving_ground import BALL_IC, W, circle_error, solid_ball

    system = nhphys.systems.RollingBody(solid_ball(), nhphys.surfaces.Plane().moving(rate=W))
    turns = 4 if backend == "cython" else 1
    traj = nhphys.simulate(system, turns * 2 * np.pi / W, 0.05,
                           Adaptive(1e-12, 1e-14, conserve_energy=True), backend=backend,
                           **BALL_IC)
    balance = traj.energy - traj.work
    assert np.abs(traj.work).max() > 0.01
    assert np.ptp(balance) <= 1e-14 * max(1.0, np.abs(traj.energy).max())
    assert circle_error(traj, 2 * W / 7) < 1e-8
    assert traj.constraint_residual.max() <= 1e-14


def test_checkpoint_keeps_the_level(backend):
    system, start = thin_disk()
    integrator = Adaptive(1e-8, 1e-10, conserve_energy=True)
    whole = integrator.start(system, 0.05, backend, **start)
    frames = whole.advance(8, 2)
    first = integrator.start(system, 0.05, backend, **start)
    first.advance(4, 2)
    saved = first.checkpoint()
    assert saved["energy_level"].shape == (1,)
    second = integrator.start(system, 0.05, backend, **start)
    second.energy_level[:] = 0.0  # the restored level, not this one, is held
    second.restore(saved)
    assert second.energy_level[0] == saved["energy_level"][0] != 0.0
    rest = second.advance(4, 2)
    np.testing.assert_array_equal(rest["R"], frames["R"][2:])
    np.testing.assert_array_equal(rest["omega"], frames["omega"][2:])
    with pytest.raises(ValueError, match="energy_level"):
        Adaptive(1e-8, 1e-10).start(system, 0.05, backend, **start).restore(saved)


def test_refuses_what_it_cannot_hold():
    with pytest.raises(ValueError, match="conserve_energy"):
        Adaptive(conserve_energy="yes")
    sleigh = nhphys.systems.KnifeEdge(1.0, 0.1, 0.0)
    with pytest.raises(ValueError, match="Suslov body or a RollingBody.*KnifeEdge"):
        nhphys.simulate(sleigh, 1.0, 0.1, Adaptive(conserve_energy=True), velocity=0.1)


def test_the_documented_example_holds_the_energy():
    # the first python block of docs/adaptive.md, "## Holding the energy"
    import pathlib
    import re

    text = (pathlib.Path(__file__).parent.parent / "docs" / "adaptive.md").read_text()
    section = text.split("## Holding the energy", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace = {}
    exec(block, namespace)
    assert namespace["drift"] <= 1e-15
    assert namespace["traj"].constraint_residual.max() <= 1e-14


def test_the_scipy_loop_holds_the_energy_at_output_times(backend):
    # loop="scipy" projects at output times only: the energy is held there
    system, start = thin_disk()
    for method in ("DOP853", "DOPRI5"):
        traj = nhphys.simulate(system, 5.0, 0.5, Adaptive(1e-8, 1e-10, method=method,
                                                          loop="scipy", conserve_energy=True),
                               backend=backend, progress=False, **start)
        assert np.abs(traj.energy / traj.energy[0] - 1).max() <= 2e-15, method
        assert traj.constraint_residual.max() <= 1e-14


def test_a_failed_contact_is_the_projection_status(backend):
    # a thin disk lying flat has no contact point: the projection returns the shape's status
    # and leaves the velocities alone
    from nhphys.twins.newton import FLAT

    system, start = thin_disk()
    y = system.reference_state(**start)
    field, _ = field_of(system, backend)
    flat = y.copy()
    flat[:9] = np.eye(3).ravel()  # the disk's axis along the normal
    field.energy_level = 0.1
    before = flat.copy()
    assert field.project(flat, 0.0) == FLAT
    np.testing.assert_array_equal(flat[9:], before[9:])
    with pytest.raises(ValueError, match="regular contact"):
        field.energy(flat, 0.0)


def test_an_unreachable_level_is_counted_and_warned(backend):
    system, start = thin_disk()
    y = system.reference_state(**start)
    field, _ = field_of(system, backend)
    rest = y.copy()
    rest[11:14] = 0.0  # at rest: no velocity reaches another level
    field.energy_level = field.energy(rest, 0.0) + 1.0
    assert field.project(rest, 0.0) == 0 and field.energy_misses == 1
    np.testing.assert_array_equal(rest[11:14], 0.0)
    # a run asked to hold a level below the least energy of its positions warns
    run = Adaptive(1e-8, 1e-10, conserve_energy=True).start(system, 0.1, backend, **start)
    run.energy_level[0] -= 10.0
    with pytest.warns(RuntimeWarning, match="could not reach the energy level"):
        frames = run.advance(2, 1)
    assert np.all(np.isfinite(frames["R"]))
