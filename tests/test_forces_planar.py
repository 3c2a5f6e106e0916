"""Force elements on the planar systems (knife edge, vertical disk, rotor sleigh): closed forms,
conservation, reversibility, order against the Reference, energy balance, parity, bad input."""

import os
import subprocess
import sys

import numpy as np
import pytest

import nhphys
from nhphys import forces as fe
from nhphys.integrators import DLA, Newmark, Reference, Retraction
from nhphys.systems import KnifeEdge, RotorSleigh, VerticalDisk

G = 9.81
INTEGRATORS = {"newmark": Newmark(), "dla": DLA(), "retraction": Retraction()}


def log_log_slope(hs, errors):
    return np.polyfit(np.log(hs), np.log(errors), 1)[0]


def thin_disk(forces=(), mass=2.0, radius=0.3):
    return VerticalDisk(mass, radius, mass * radius**2 / 2, mass * radius**2 / 4,
                        forces=list(forces))


# -- closed forms ------------------------------------------------------------------------------

@pytest.mark.parametrize("method", sorted(INTEGRATORS))
def test_sleigh_pushed_along_its_blade_accelerates_at_f_over_m(backend, method):
    m, F, heading, v0 = 1.3, 0.7, 0.4, 0.2
    sleigh = KnifeEdge(m, 0.4, 0.3, forces=[fe.Force([F, 0.0, 0.0], frame="body")])
    traj = nhphys.simulate(sleigh, 1.0, 1e-2, integrator=INTEGRATORS[method], backend=backend,
                           position=[0.1, -0.2], heading=heading, velocity=v0)
    t = traj.t
    distance = v0 * t + 0.5 * F / m * t**2
    e = np.array([np.cos(heading), np.sin(heading)])
    assert np.abs(traj.velocity - (v0 + F / m * t)).max() <= 1e-12
    assert np.abs(traj.pose[:, :2] - ([0.1, -0.2] + distance[:, None] * e)).max() <= 1e-12
    assert np.abs(traj.turning_rate).max() <= 1e-13
    # the work is F times the distance, and energy - work stays put
    assert np.abs(traj.work - F * distance).max() <= 1e-12
    assert np.ptp(traj.energy - traj.work) <= 1e-12
    assert traj.constraint_residual.max() <= 1e-12


@pytest.mark.parametrize("method", sorted(INTEGRATORS))
def test_sleigh_follows_a_force_schedule(backend, method):
    # a piecewise linear push along the blade with breaks on the step grid: the velocity is
    # v0 + (1/m) int F, which the pair's trapezoidal rule integrates exactly on linear pieces;
    # the position is second order
    m, v0 = 2.0, 0.1
    times, values = [0.0, 0.3, 0.7, 1.0], [0.0, 1.2, -0.4, 0.5]
    push = fe.Force(fe.Schedule(times, np.outer(values, [1.0, 0.0, 0.0])), frame="body")
    sleigh = KnifeEdge(m, 0.4, 0.2, forces=[push])
    fine = np.linspace(0.0, 1.2, 120001)
    force = np.interp(fine, times, values)
    impulse = np.concatenate([[0.0], np.cumsum(0.5 * (force[1:] + force[:-1]) * np.diff(fine))])
    speed = v0 + impulse / m
    distance = np.concatenate([[0.0], np.cumsum(0.5 * (speed[1:] + speed[:-1]) * np.diff(fine))])
    errors = []
    for h in (0.02, 0.01):
        traj = nhphys.simulate(sleigh, 1.2, h, integrator=INTEGRATORS[method], backend=backend,
                               save_every=round(0.1 / h), velocity=v0)
        assert np.abs(traj.velocity - np.interp(traj.t, fine, speed)).max() <= 1e-12
        errors.append(np.abs(traj.pose[:, 0] - np.interp(traj.t, fine, distance)).max())
        assert traj.constraint_residual.max() <= 1e-12
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)


@pytest.mark.parametrize("method", sorted(INTEGRATORS))
def test_viscous_drag_decays_the_sleigh_exponentially(backend, method):
    m, c, v0 = 1.3, 0.4, 0.5
    sleigh = KnifeEdge(m, 0.4, 0.3, forces=[fe.LinearDrag(c)])
    errors = []
    for h in (2e-3, 1e-3):
        traj = nhphys.simulate(sleigh, 2.0, h, integrator=INTEGRATORS[method], backend=backend,
                               save_every=round(0.1 / h), velocity=v0, heading=1.0)
        errors.append(np.abs(traj.velocity / (v0 * np.exp(-c * traj.t / m)) - 1).max())
        assert traj.constraint_residual.max() <= 1e-12
    assert errors[1] < 1e-8
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)  # second order


@pytest.mark.parametrize("element", ["drag", "rolling"])
def test_drag_and_rolling_resistance_decay_a_rolling_disk_exponentially(backend, element):
    # (I_a + m R^2) phi'' = -k phi' with k = c R^2 (drag) or mu m g (rolling resistance)
    m, R = 2.0, 0.3
    coefficient = 2.0 if element == "drag" else 0.005  # rates 0.67 and 0.36 per second
    force = fe.LinearDrag(coefficient) if element == "drag" else fe.RollingResistance(coefficient)
    disk = thin_disk([force], m, R)
    k = coefficient * R * R if element == "drag" else coefficient * m * G
    rate = k / (m * R * R / 2 + m * R * R)
    errors = []
    for h in (2e-3, 1e-3):
        traj = nhphys.simulate(disk, 2.0, h, backend=backend, save_every=round(0.1 / h),
                               spin=3.0, heading=0.3)
        errors.append(np.abs(traj.spin / (3.0 * np.exp(-rate * traj.t)) - 1).max())
        assert np.abs(traj.turning_rate).max() <= 1e-13
        assert traj.constraint_residual.max() <= 1e-12
    assert errors[1] < 1e-6
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.05)


@pytest.mark.parametrize("method", sorted(INTEGRATORS))
def test_motor_drives_a_vertical_disk_up_an_incline_at_the_closed_form_rate(backend, method):
    # the plane tilted by beta (uphill along +x): a uniform field -m g sin(beta) e_x and a motor
    # on the axle, (I_a + m R^2) phi'' = T - m g sin(beta) R (vertical_disk module docstring)
    m, R, T, beta = 2.0, 0.3, 4.0, 0.2
    disk = thin_disk([fe.Motor(torque=T), fe.UniformField([-m * G * np.sin(beta), 0, 0])], m, R)
    traj = nhphys.simulate(disk, 1.0, 1e-3, integrator=INTEGRATORS[method], backend=backend,
                           save_every=100)
    acc = (T / R - m * G * np.sin(beta)) / (m + (m * R * R / 2) / R**2)
    assert acc > 0
    # exact but for round-off, accumulated over 1000 steps (relative to each quantity's size)
    assert np.abs(traj.pose[:, 0] - 0.5 * acc * traj.t**2).max() <= 1e-12 * 0.5 * acc
    assert np.abs(traj.spin - acc * traj.t / R).max() <= 1e-12 * acc / R
    assert np.abs(traj.pose[:, 1:]).max() <= 1e-13
    # the motor's work is T phi; the field is a potential, part of the energy
    assert np.abs(traj.work - T * traj.phi).max() <= 1e-12 * np.abs(traj.work).max()
    assert np.ptp(traj.energy - traj.work) <= 1e-12 * np.abs(traj.work).max()
    assert traj.constraint_residual.max() <= 1e-12


@pytest.mark.parametrize("method", sorted(INTEGRATORS))
def test_rotor_motor_turns_the_sleigh_back_at_the_closed_form_rates(backend, method):
    # blade under the centre of mass: the angular momentum about it stays 0, so
    # omega' = -T / I_s and phi'' = T (I_s + I_r) / (I_s I_r) (rotor_sleigh module docstring)
    m, Is, Ir, T = 1.0, 0.4, 0.1, 0.05
    sleigh = RotorSleigh(m, Is, Ir, 0.0, forces=[fe.Motor(torque=T)])
    traj = nhphys.simulate(sleigh, 1.0, 1e-2, integrator=INTEGRATORS[method], backend=backend)
    t = traj.t
    assert np.abs(traj.turning_rate + T / Is * t).max() <= 1e-12
    assert np.abs(traj.spin - T * (Is + Ir) / (Is * Ir) * t).max() <= 1e-12
    assert np.abs(traj.pose[:, 2] + 0.5 * T / Is * t**2).max() <= 1e-12
    assert np.abs(traj.velocity).max() <= 1e-13
    assert np.ptp(traj.energy - traj.work) <= 1e-12


def test_uniform_field_along_the_slope_is_the_inclined_plane(backend):
    # the knife edge's incline is the potential -m g sin(incline) C_x: a UniformField on a
    # level plane is the same system (Newmark's pair is the trapezoidal rule of that affine
    # potential, as the model's own), and the retraction integrator can now step it
    m, incline = 1.0, 0.2
    sloped = KnifeEdge(m, 0.2, 0.1, incline=incline)
    level = KnifeEdge(m, 0.2, 0.1, forces=[fe.UniformField([m * G * np.sin(incline), 0, 0])])
    a = nhphys.simulate(sloped, 1.0, 1e-2, integrator=Newmark(), backend=backend, **SLEIGH_IC)
    b = nhphys.simulate(level, 1.0, 1e-2, integrator=Newmark(), backend=backend, **SLEIGH_IC)
    assert np.abs(a.pose - b.pose).max() <= 1e-14
    assert np.abs(a.energy - b.energy).max() <= 1e-13  # a difference of terms of order one
    c = nhphys.simulate(level, 1.0, 1e-2, integrator=Retraction(), backend=backend, **SLEIGH_IC)
    assert 0 < np.abs(c.pose - a.pose).max() <= 1e-3  # another second-order method
    with pytest.raises(ValueError, match="UniformField"):
        nhphys.simulate(sloped, 1.0, 1e-2, integrator=Retraction(), **SLEIGH_IC)


# -- conservative elements: bounded energy, reversibility, order ---------------------------------

def spring_sleigh(extra=()):
    return KnifeEdge(1.0, 0.2, 0.15, forces=[
        fe.Spring(4.0, anchor=[0.3, 0.2, 0.0], point=[0.1, 0.05, 0.0], rest_length=0.1),
        fe.UniformField([0.3, -0.2, 0.0]), *extra])


def spring_disk(extra=()):
    return VerticalDisk(1.0, 0.3, 0.045, 0.0225, forces=[
        fe.Spring(4.0, anchor=[0.3, 0.2, 0.3], point=[0.1, 0.05, 0.02], rest_length=0.1),
        *extra])


SLEIGH_IC = {"velocity": 0.3, "turning_rate": 1.0}
DISK_IC = {"turning_rate": 0.7, "spin": 2.0}


@pytest.mark.kernels_only("10^6 steps take about 15 minutes on the twins (1 ms a step)")
@pytest.mark.parametrize("method", ["newmark", "retraction"])
def test_spring_energy_bounded_without_drift_over_a_million_steps(backend, method):
    for name, system, ic in (("disk", spring_disk(), DISK_IC),
                             ("sleigh", spring_sleigh(), SLEIGH_IC)):
        traj = nhphys.simulate(system, 1000.0, 1e-3, integrator=INTEGRATORS[method],
                               backend=backend, save_every=1000, **ic)
        error = traj.energy - traj.energy[0]
        assert np.abs(traj.work).max() == 0.0  # potentials only: no work is accumulated
        assert np.abs(error).max() <= 1e-5 * traj.energy[0]
        # no drift: over the last tenth of the run the error is no larger, and its mean no
        # farther off, than over the first tenth (the sleigh's motion is irregular, so its
        # error wanders; measured: 1.3e-7 against 1.1e-7 with Newmark, 1.3e-7 against 1.0e-7
        # with the retraction; the disk's stays at 2.1e-7)
        tenth = len(error) // 10
        first, last = error[:tenth], error[-tenth:]
        assert np.abs(last).max() <= 1.5 * np.abs(first).max(), name
        assert abs(last.mean() - first.mean()) <= np.abs(first).max(), name
        assert traj.constraint_residual.max() <= 1e-12
        if name == "disk":  # a regular motion: the error's trend is below its oscillation
            slope = np.polyfit(traj.t, error, 1)[0]
            assert abs(slope) * traj.t[-1] <= 0.1 * np.ptp(error)


def schedule_force():
    """A time-dependent force at a body point (reversible: time runs back with the steps)."""
    return fe.Force(fe.Schedule([0.0, 0.5, 1.0], [[0, 0, 0], [0.3, 0.1, 0], [-0.1, 0.2, 0]],
                                kind="cubic"), point=[0.05, 0.02, 0.0])


@pytest.mark.parametrize("method", sorted(INTEGRATORS))
@pytest.mark.parametrize("which", ["sleigh", "disk"])
def test_reversible_with_conservative_forces(backend, method, which):
    if which == "sleigh":
        system, ic = spring_sleigh([schedule_force()]), {"pose0": [0, 0, 0.3], "velocity0": 0.3,
                                                         "omega0": 1.0}
    else:
        system, ic = spring_disk([schedule_force()]), {"omega0": 0.7, "spin0": 2.0}
    run = INTEGRATORS[method].start(system, 1e-2, backend, **ic)
    names = ("g", "p") if method == "retraction" else ("q", "v")
    start = {name: getattr(run, name).copy() for name in names}
    run.advance(50, 50)
    moved = max(np.abs(getattr(run, name) - start[name]).max() for name in names)
    run.dt = -run.dt
    if method == "retraction":
        run.y = -run.y  # the warm start of the reversed step
    run.advance(50, 50)
    assert moved > 0.1
    for name, value in start.items():
        assert np.abs(getattr(run, name) - value).max() <= 1e-12, name
    assert abs(run.clock[0]) <= 1e-12  # the clock ran back to 0
    assert abs(run.clock[1]) <= 1e-12  # no work either way (potentials and a time force)


@pytest.fixture(scope="module")
def references():
    """Reference trajectories (DOP853) with springs, a field and a scheduled force."""
    out = {}
    for which, system, ic in (("sleigh", spring_sleigh([schedule_force()]), SLEIGH_IC),
                              ("disk", spring_disk([schedule_force(), fe.UniformField(
                                  [0.2, 0.1, 0.0])]), DISK_IC)):
        out[which] = system, ic, nhphys.simulate(system, 1.0, 0.1,
                                                 Reference(rtol=1e-12, atol=1e-14), **ic)
    return out


@pytest.mark.parametrize("method", sorted(INTEGRATORS))
@pytest.mark.parametrize("which", ["sleigh", "disk"])
def test_order_two_against_the_reference_with_forces(backend, references, method, which):
    system, ic, ref = references[which]
    hs = (0.01, 0.005, 0.0025)
    errors = []
    for h in hs:
        traj = nhphys.simulate(system, 1.0, h, integrator=INTEGRATORS[method], backend=backend,
                               save_every=round(0.1 / h), **ic)
        assert traj.constraint_residual.max() <= 1e-12
        errors.append(np.abs(traj.pose - ref.pose).max())
    assert log_log_slope(hs, errors) == pytest.approx(2.0, abs=0.1)


# -- dissipation: energy - work to the method's order --------------------------------------------

def dissipative(which):
    common = [fe.LinearDrag(0.3), fe.AngularDamping(2e-3), fe.SpinFriction(3e-3),
              fe.Torque(fe.Schedule([0.0, 0.7, 2.0], [[0, 0, 0.02], [0, 0, -0.01],
                                                     [0, 0, 0.01]], kind="cubic"))]
    if which == "sleigh":
        return KnifeEdge(1.0, 0.2, 0.15, forces=common + [
            fe.Force(fe.Schedule([0, 1, 2], [[0.2, 0, 0], [0, 0.3, 0], [0.1, 0, 0]]),
                     frame="body", point=[0.05, 0.01, 0.0])]), SLEIGH_IC
    if which == "disk":
        return thin_disk(common + [fe.RollingResistance(2e-3), fe.Motor(
            torque=fe.Schedule([0, 1, 2], [0.0, 0.2, -0.1]), target_speed=1.0, gain=0.02)],
            1.0, 0.3), DISK_IC
    return RotorSleigh(1.0, 0.4, 0.1, 0.2, forces=common + [
        fe.Motor(torque=0.02, target_speed=4.0, gain=0.01)]), dict(SLEIGH_IC, spin=1.0)


@pytest.mark.parametrize("method", ["newmark", "retraction"])
@pytest.mark.parametrize("which", ["sleigh", "disk", "rotor"])
def test_energy_minus_work_holds_to_second_order_with_dissipation(backend, method, which):
    system, ic = dissipative(which)
    drifts = []
    for h in (4e-3, 2e-3):
        traj = nhphys.simulate(system, 2.0, h, integrator=INTEGRATORS[method], backend=backend,
                               save_every=round(0.05 / h), **ic)
        assert traj.constraint_residual.max() <= 1e-12
        balance = traj.energy - traj.work
        drifts.append(np.abs(balance - balance[0]).max())
    assert np.abs(traj.work).max() > 1e-2 * traj.energy[0]  # the balance test is not vacuous
    assert drifts[0] / drifts[1] == pytest.approx(4.0, rel=0.1)


@pytest.mark.parametrize("which", ["sleigh", "disk"])
def test_work_matches_the_reference(backend, which):
    system, ic = dissipative(which)
    ref = nhphys.simulate(system, 2.0, 0.1, Reference(rtol=1e-12, atol=1e-14), **ic)
    traj = nhphys.simulate(system, 2.0, 1e-3, backend=backend, save_every=100, **ic)
    assert np.abs(traj.work - ref.work).max() <= 1e-5 * np.abs(ref.work).max()
    assert np.abs(traj.pose - ref.pose).max() <= 1e-5
    assert np.ptp(ref.energy - ref.work) <= 1e-9  # the Reference's own balance


# -- every element keeps the constraints -----------------------------------------------------------

ELEMENTS = {
    "force": lambda: fe.Force([0.3, -0.2, 0.1], point=[0.05, 0.02, 0.01]),
    "body force": lambda: fe.Force(fe.Schedule([0, 1], [[0.1, 0.2, 0], [0, -0.3, 0.1]]),
                                   frame="body"),
    "torque": lambda: fe.Torque([0.01, -0.02, 0.03], frame="space"),
    "spring": lambda: fe.Spring(3.0, anchor=[0.2, 0.1, 0.3], point=[0.05, 0.0, 0.02]),
    "field": lambda: fe.UniformField([0.4, 0.3, -0.2]),
    "drag": lambda: fe.LinearDrag(0.5),
    "damping": lambda: fe.AngularDamping(0.01),
    "spin friction": lambda: fe.SpinFriction(0.02),
    "motor": lambda: fe.Motor(torque=0.02, target_speed=2.0, gain=0.01),
    "rolling": lambda: fe.RollingResistance(0.01),
}
SYSTEMS = {
    "sleigh": (lambda els: KnifeEdge(1.0, 0.2, 0.15, forces=els), SLEIGH_IC),
    "disk": (lambda els: thin_disk(els, 1.0, 0.3), DISK_IC),
    "rotor": (lambda els: RotorSleigh(1.0, 0.4, 0.1, 0.2, forces=els), dict(SLEIGH_IC, spin=1.0)),
}


# rolling resistance only where something rolls (the others refuse it: test_bad_input)
@pytest.mark.parametrize(("which", "element"), [(w, e) for w in sorted(SYSTEMS)
                                                for e in sorted(ELEMENTS)
                                                if e != "rolling" or w == "disk"])
def test_constraints_hold_to_round_off_under_every_force_type(backend, which, element):
    make, ic = SYSTEMS[which]
    system = make([ELEMENTS[element]()])
    for method in ("newmark", "retraction"):
        traj = nhphys.simulate(system, 0.5, 5e-3, integrator=INTEGRATORS[method],
                               backend=backend, save_every=10, **ic)
        assert traj.constraint_residual.max() <= 1e-12, method
        assert np.all(np.isfinite(traj.energy))


# -- parity: kernel and twin ----------------------------------------------------------------------

def every_element(which):
    elements = [ELEMENTS[name]() for name in sorted(ELEMENTS) if name != "rolling"]
    if which == "disk":
        elements.append(fe.RollingResistance(0.01))
    if which == "rotor":
        elements = [e for e in elements if not isinstance(e, fe.Motor)] + [
            fe.Motor(torque=fe.Schedule([0, 5, 10], [0.02, -0.01, 0.0]), target_speed=3.0,
                     gain=0.01)]
    return elements


@pytest.mark.parity
@pytest.mark.parametrize(("which", "method"), [("sleigh", "newmark"), ("disk", "retraction"),
                                               ("rotor", "dla")])
def test_kernel_and_twin_agree_over_ten_thousand_steps(which, method):
    make, ic = SYSTEMS[which]
    system = make(every_element(which))
    kw = dict(integrator=INTEGRATORS[method], save_every=1000, **ic)
    a = nhphys.simulate(system, 10.0, 1e-3, backend="cython", **kw)
    b = nhphys.simulate(system, 10.0, 1e-3, backend="python", **kw)
    assert a.meta["backend"] == "cython" and b.meta["backend"] == "python"
    for name in ("pose", "energy", "work", "turning_rate"):
        assert np.abs(a[name] - b[name]).max() <= 1e-10, name
    assert np.abs(a.work).max() > 0.01


@pytest.mark.parity
@pytest.mark.parametrize("which", sorted(SYSTEMS))
def test_body_forces_kernel_matches_twin(rng, which):
    make, _ = SYSTEMS[which]
    system = make(every_element(which))
    from nhphys import _backend

    twin = system.body_forces(system.coordinates, "python")
    model = nhphys.twins.models.compiled_counterpart(system.coordinates,
                                                     _backend.kernel_module("models"))
    kernel = system.body_forces(model, "cython")
    for _ in range(30):
        q = rng.normal(size=system.coordinates.n)
        t = rng.uniform(-1.0, 12.0)
        for x, y in zip(kernel.py_terms(t, q), twin.py_terms(t, q)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-15)
        assert kernel.py_potential(q) == pytest.approx(twin.py_potential(q), rel=1e-15)
        for x, y in zip(model.py_body_frame(q), system.coordinates.body_frame(q)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-15)
        for x, y in zip(model.py_group_coordinates(q), system.coordinates.group_coordinates(q)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-15)


@pytest.mark.parity
@pytest.mark.parametrize("which", ["sleigh", "rotor"])
def test_closed_form_pull_backs_give_the_twins_numbers(rng, which):
    # Without damping the kernels take the sleighs' generalized forces from closed forms
    # (models.pxd, "Closed forms"): bit for bit the kernel's own J^T products (which form the
    # Jacobians), and the twin's numbers to round-off (numpy sums its products in its own order).
    make, _ = SYSTEMS[which]
    undamped = [ELEMENTS[name]() for name in ("force", "body force", "torque", "spring",
                                              "field")]
    undamped.append(fe.Motor(torque=fe.Schedule([0, 5, 10], [0.02, -0.01, 0.0])))
    system = make(undamped)
    from nhphys import _backend
    from nhphys.twins.se2_retraction import group_terms

    twin = system.body_forces(system.coordinates, "python")
    model = nhphys.twins.models.compiled_counterpart(system.coordinates,
                                                     _backend.kernel_module("models"))
    kernel = system.body_forces(model, "cython")
    assert kernel.closed and not kernel.damps
    for _ in range(30):
        q = rng.normal(size=system.coordinates.n)
        t = rng.uniform(-1.0, 12.0)
        Qc, Qa, C = twin.py_terms(t, q)
        assert not np.any(C)
        closed = kernel.py_undamped_terms(t, q)
        for x, y, z in zip(closed, kernel.py_terms(t, q), (Qc, Qa)):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_allclose(x, z, rtol=0, atol=1e-15 * np.abs(z).max())
        F0, Fa, _ = group_terms(twin, t, q, np.zeros_like(q))
        for x, y in zip(kernel.py_group_forces(t, q), (F0, Fa)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-15 * np.abs(Qc + Qa).max())
        assert np.abs(Fa).max() > 0.01


@pytest.mark.parity
@pytest.mark.parametrize(("which", "element"), [
    (w, e) for w in ("sleigh", "rotor", "disk")
    for e in ("drag", "damping", "spin friction", "motor", "rolling")
    if e != "rolling" or w == "disk"])
def test_damping_is_the_same_at_every_pose(rng, which, element):
    # The kernels form C and the group's C_g = T^T C T once (models.pxd, constant_damping);
    # the twin forms them at every step: the same numbers for the sleighs (constant
    # Jacobians), and to round-off for the disk (sin^2 + cos^2 of its roll angle).
    make, _ = SYSTEMS[which]
    system = make([ELEMENTS[element](), fe.LinearDrag(0.3)])
    from nhphys import _backend
    from nhphys.twins.se2_retraction import group_terms

    twin = system.body_forces(system.coordinates, "python")
    model = nhphys.twins.models.compiled_counterpart(system.coordinates,
                                                     _backend.kernel_module("models"))
    kernel = system.body_forces(model, "cython")
    Cg = kernel.py_group_damping()
    assert Cg is not None and np.abs(Cg).max() > 0.1
    for _ in range(30):
        g = rng.normal(size=system.coordinates.n) * 3.0
        q, _ = system.coordinates.group_coordinates(g)
        C, C_twin = kernel.py_terms(0.0, q)[2], twin.py_terms(0.0, q)[2]
        if which == "disk":
            np.testing.assert_allclose(C, C_twin, rtol=0, atol=1e-15 * np.abs(C).max())
        else:
            np.testing.assert_array_equal(C, C_twin)
        np.testing.assert_allclose(Cg, group_terms(twin, 0.0, g, np.zeros_like(g))[2], rtol=0,
                                   atol=1e-15 * np.abs(Cg).max())


def test_body_frame_velocities_are_the_derivatives_of_the_pose(rng):
    # da/dt = J_v dq/dt and A^T dA/dt = hat(J_W dq/dt), by central differences
    for make, _ in SYSTEMS.values():
        model = make([]).coordinates
        q, v = rng.normal(size=model.n), rng.normal(size=model.n)
        A, a, Jv, JW, _ = model.body_frame(q)
        eps = 1e-6
        A1, a1, *_ = model.body_frame(q + eps * v)
        A0, a0, *_ = model.body_frame(q - eps * v)
        W = A.T @ (A1 - A0) / (2 * eps)
        np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], JW @ v, atol=1e-9)
        np.testing.assert_allclose((a1 - a0) / (2 * eps), Jv @ v, atol=1e-9)
        np.testing.assert_allclose(A.T @ A, np.eye(3), atol=1e-15)


# -- Python callables ------------------------------------------------------------------------------

def test_callable_force_runs_on_the_twin_and_matches_the_builtin():
    force = np.array([0.4, 0.1, 0.0])
    builtin = KnifeEdge(1.0, 0.2, 0.15, forces=[fe.Force(force, point=[0.05, 0.01, 0])])
    called = KnifeEdge(1.0, 0.2, 0.15, forces=[fe.Force(lambda t, state: force,
                                                        point=[0.05, 0.01, 0])])
    for method in ("newmark", "retraction"):
        kw = dict(integrator=INTEGRATORS[method], **SLEIGH_IC)
        a = nhphys.simulate(builtin, 0.2, 1e-2, backend="python", **kw)
        b = nhphys.simulate(called, 0.2, 1e-2, **kw)
        assert b.meta["backend"].startswith("python") and "callable" in b.meta["backend"]
        np.testing.assert_allclose(b.pose, a.pose, rtol=0, atol=1e-15)
        # asked for the kernels, it still steps on the twin, and says so
        c = nhphys.simulate(called, 0.2, 1e-2, backend="cython", **kw)
        assert c.meta["backend"] == b.meta["backend"]


def test_callable_returning_nan_is_an_error_naming_the_element():
    def bad(t, state):
        return np.array([0.0, np.nan, 0.0]) if t > 0.05 else np.zeros(3)

    sleigh = KnifeEdge(1.0, 0.2, 0.15, forces=[fe.Torque(bad)])
    with pytest.raises(ValueError, match=r"Torque: expected the callable .* 3 finite numbers"):
        nhphys.simulate(sleigh, 0.2, 1e-2, integrator=Newmark(), **SLEIGH_IC)


# -- scenes ------------------------------------------------------------------------------------

def test_knife_edge_contact_takes_forces_in_space_on_an_inclined_plane(backend):
    # a force up the slope, in space, balancing gravity's downhill pull: the body slides at
    # constant speed; the same force on the plane's own KnifeEdge (x downhill) agrees
    from nhphys import KnifeEdgeContact, Scene
    from nhphys.surfaces import Ellipsoid, Plane

    incline = 0.3
    plane = Plane(normal=[np.sin(incline), 0.0, np.cos(incline)])
    contact = KnifeEdgeContact(plane, offset=0.1)
    body = nhphys.RigidBody(2.0, [0.004, 0.02, 0.02], Ellipsoid([0.3, 0.12, 0.07]))
    downhill = contact.frame[:, 0]
    push = -2.0 * G * np.sin(incline) * downhill
    scene = Scene()
    scene.add_body(body, contact, forces=[fe.Force(push)], velocity=0.2, heading=0.5)
    traj = scene.simulate(1.0, 1e-2, backend=backend)
    speed = np.linalg.norm(np.diff(traj.position[:, 0], axis=0), axis=1) / 1e-2
    assert np.abs(speed - 0.2).max() <= 1e-12
    assert traj.constraint_residual.max() <= 1e-12


def test_pushed_sleigh_scene_writes_its_figure_and_loads(tmp_path):
    from nhphys.scene import load_scene_file
    import nhphys.scenes

    path = os.path.join(os.path.dirname(nhphys.scenes.__file__), "pushed_sleigh.py")
    out = subprocess.run([sys.executable, path, "--out", str(tmp_path)], capture_output=True,
                         text=True, check=True, timeout=300)
    import matplotlib.image as mpimg

    for figure in ("push.png", "diagnostics.png"):
        assert str(tmp_path / figure) in out.stdout
        assert np.std(mpimg.imread(tmp_path / figure)[..., :3]) > 0.05
    scene, defaults = load_scene_file(path)
    traj = scene.simulate(50 * defaults["dt"], defaults["dt"])
    assert traj.constraint_residual.max() <= 1e-13


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("make", "error", "message"), [
    (lambda: KnifeEdge(1.0, 0.2, 0.1, forces=[fe.RollingResistance(0.1)]), ValueError,
     "RollingResistance: a KnifeEdge does not roll"),
    (lambda: RotorSleigh(1.0, 0.4, 0.1, 0.2, forces=[fe.RollingResistance(0.1)]), ValueError,
     "RollingResistance: a RotorSleigh does not roll"),
    (lambda: RotorSleigh(1.0, 0.4, 0.1, 0.2, forces=[fe.Motor(torque=1.0, axis=[1, 0, 0])]),
     ValueError, r"Motor: on a RotorSleigh a motor drives about the axis \[0.0, 0.0, 1.0\]"),
    (lambda: VerticalDisk(1.0, 0.3, 0.05, 0.02, forces=[1.0]), TypeError, r"forces\[0\]"),
    (lambda: KnifeEdge(1.0, 0.2, 0.1, forces=fe.Spring(-1.0, [0, 0, 0])), ValueError,
     "Spring: expected `stiffness`"),
    (lambda: KnifeEdge(1.0, 0.2, 0.1, forces=[fe.LinearDrag(0.1)],
                       placement=(2 * np.eye(3), np.zeros(3))), ValueError, "placement"),
    (lambda: VerticalDisk(1.0, 0.3, 0.05, 0.02, gravity=-1.0), ValueError, "gravity"),
])
def test_bad_input_is_a_clear_error_naming_the_element(make, error, message):
    with pytest.raises(error, match=message):
        make()
