"""The compiled right-hand side of the coordinate models (``CoordinateField``) against its twin
and against each system's own ``reference_rhs``, and its projection onto the constraint space."""

import numpy as np
import pytest

from nhphys import _backend, conditions
from nhphys import forces as fe
from nhphys.systems import ContactOscillator, KnifeEdge, RotorSleigh, VerticalDisk
from nhphys.twins.models import compiled_counterpart

DISSIPATIVE = [fe.LinearDrag(0.3), fe.AngularDamping(2e-3), fe.SpinFriction(3e-3),
               fe.Torque(fe.Schedule([0.0, 0.7, 2.0], [[0, 0, 0.02], [0, 0, -0.01],
                                                      [0, 0, 0.01]], kind="cubic")),
               fe.Spring(4.0, anchor=[0.3, 0.2, 0.0], point=[0.1, 0.05, 0.0], rest_length=0.1),
               fe.UniformField([0.3, -0.2, 0.0])]

SYSTEMS = {
    "knife edge": lambda: KnifeEdge(1.0, 0.2, 0.15),
    "knife edge on an incline": lambda: KnifeEdge(1.3, 0.2, 0.1, incline=0.3),
    "knife edge with forces": lambda: KnifeEdge(1.0, 0.2, 0.15, forces=DISSIPATIVE + [
        fe.Force(fe.Schedule([0, 1, 2], [[0.2, 0, 0], [0, 0.3, 0], [0.1, 0, 0]]),
                 frame="body", point=[0.05, 0.01, 0.0])]),
    "vertical disk": lambda: VerticalDisk(1.0, 0.3, 0.045, 0.0225),
    "vertical disk with a motor": lambda: VerticalDisk(1.0, 0.3, 0.045, 0.0225, forces=[
        fe.LinearDrag(0.2), fe.RollingResistance(2e-3),
        fe.Motor(torque=fe.Schedule([0, 1, 2], [0.0, 0.2, -0.1]), target_speed=1.0,
                 gain=0.02)]),
    "contact oscillator": lambda: ContactOscillator(0.3),
    "rotor sleigh": lambda: RotorSleigh(1.0, 0.4, 0.1, 0.2, forces=DISSIPATIVE[:3] + [
        fe.Motor(torque=0.02, target_speed=4.0, gain=0.01)]),
}


def field_of(system, backend):
    """The field of ``system`` from the kernel or the twin module ``rhs``."""
    rhs = _backend.choose("rhs", backend)[0]
    models = _backend.choose("models", backend)[0]
    model = system.coordinates if backend == "python" else compiled_counterpart(
        system.coordinates, models)
    forces = system.body_forces(model, backend)
    return rhs.CoordinateField(model, forces)


def random_states(system, rng, count=20):
    """States (count, 2 n + 1) with velocities on the constraint space and a nonzero work."""
    model = system.coordinates
    n = model.n
    states = []
    for _ in range(count):
        q = rng.uniform(-1.5, 1.5, n)
        mu = np.asarray(model.constraint_matrix(q), dtype=float)
        basis = np.linalg.svd(mu)[2][mu.shape[0]:]  # rows spanning the null space of mu
        v = rng.normal(size=basis.shape[0]) @ basis
        states.append(np.concatenate([q, v, [rng.normal()]]))
    return np.array(states)


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_the_field_is_the_systems_reference_rhs(name, backend, rng):
    system = SYSTEMS[name]()
    field = field_of(system, backend)
    if system.forces:  # the reference's start sets its force terms
        system.reference_state(**conditions.start_arguments(system, initial_conditions(system)))
    for y in random_states(system, rng):
        t = rng.uniform(0.0, 2.0)
        expected = system.reference_rhs(t, y)
        got = field(t, y)
        scale = np.abs(expected).max() + 1.0
        assert np.abs(got - expected).max() <= 1e-13 * scale, name
    assert field.evaluations == 20


def initial_conditions(system):
    if isinstance(system, VerticalDisk):
        return {"turning_rate": 0.7, "spin": 2.0}
    if isinstance(system, RotorSleigh):
        return {"velocity": 0.3, "turning_rate": 1.0, "spin": 1.0}
    return {"velocity": 0.3, "turning_rate": 1.0}


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_the_projection_is_the_closest_allowed_velocity_in_the_mass_metric(name, backend, rng):
    system = SYSTEMS[name]()
    field = field_of(system, backend)
    model = system.coordinates
    n = model.n
    for y in random_states(system, rng, 10):
        mu = np.asarray(model.constraint_matrix(y[:n]), dtype=float)
        off = y.copy()
        off[n:2 * n] += 1e-3 * rng.normal(size=n)  # off the constraint space
        projected = off.copy()
        field.project(projected)
        v = projected[n:2 * n]
        assert np.abs(mu @ v).max() <= 1e-14 * np.abs(mu).max() * np.abs(off[n:2 * n]).max()
        assert np.array_equal(projected[:n], off[:n]) and projected[-1] == off[-1]
        # M-orthogonal: the correction is M^-1 mu^T c, so M (v_off - v) lies in mu's row space
        correction = model.mass_matrix @ (off[n:2 * n] - v)
        rows = np.linalg.lstsq(mu.T, correction, rcond=None)
        round_off = 1e-14 * np.abs(model.mass_matrix).max() * np.abs(off[n:2 * n]).max()
        assert np.abs(mu.T @ rows[0] - correction).max() <= round_off
        again = projected.copy()
        field.project(again)  # idempotent to round-off
        assert np.abs(again - projected).max() <= 1e-15 * (np.abs(projected).max() + 1.0) * 4


@pytest.mark.parity
@pytest.mark.parametrize("name", list(SYSTEMS))
def test_kernel_and_twin_agree(name, rng):
    system = SYSTEMS[name]()
    kernel, twin = field_of(system, "cython"), field_of(system, "python")
    for y in random_states(system, rng, 10):
        t = rng.uniform(0.0, 2.0)
        a, b = kernel(t, y), twin(t, y)
        assert np.abs(a - b).max() <= 1e-14 * (np.abs(b).max() + 1.0)
        y_off = y.copy()
        y_off[system.coordinates.n:-1] += 1e-3
        pa, pb = y_off.copy(), y_off.copy()
        kernel.project(pa)
        twin.project(pb)
        assert np.abs(pa - pb).max() <= 1e-15 * (np.abs(pb).max() + 1.0) * 4


def test_bad_states_are_refused(backend):
    field = field_of(KnifeEdge(1.0, 0.2, 0.15), backend)
    with pytest.raises(ValueError, match="shape"):
        field(0.0, np.zeros(5))
    with pytest.raises(ValueError, match="writable"):
        field.project(np.zeros(7, dtype=np.float32))
    frozen = np.zeros(7)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        field.project(frozen)
