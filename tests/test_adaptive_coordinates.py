"""Adaptive DOP853 on the compiled right-hand side of the systems on coordinates (knife edge,
vertical disk, contact oscillator, rotor sleigh), projected at every frame."""

import numpy as np
import pytest

import nhphys
from nhphys import forces as fe
from nhphys.integrators import Adaptive, Reference
from nhphys.systems import ConstrainedMechanicalSystem, ContactOscillator, KnifeEdge, \
    RotorSleigh, VerticalDisk

DISSIPATIVE = [fe.LinearDrag(0.3), fe.AngularDamping(2e-3), fe.SpinFriction(3e-3),
               fe.Spring(4.0, anchor=[0.3, 0.2, 0.0], point=[0.1, 0.05, 0.0], rest_length=0.1),
               fe.Torque(fe.Schedule([0.0, 0.7, 2.0], [[0, 0, 0.02], [0, 0, -0.01],
                                                      [0, 0, 0.01]], kind="cubic"))]

CASES = {
    "knife edge": (lambda: KnifeEdge(1.0, 0.2, 0.15), {"velocity": 0.3, "turning_rate": 1.0}),
    "knife edge on an incline": (lambda: KnifeEdge(1.3, 0.2, 0.1, incline=0.3),
                                 {"velocity": 0.3, "turning_rate": 1.0}),
    "knife edge with forces": (lambda: KnifeEdge(1.0, 0.2, 0.15, forces=DISSIPATIVE),
                               {"velocity": 0.3, "turning_rate": 1.0}),
    "vertical disk with a motor": (lambda: VerticalDisk(1.0, 0.3, 0.045, 0.0225, forces=[
        fe.LinearDrag(0.2), fe.RollingResistance(2e-3),
        fe.Motor(torque=fe.Schedule([0, 1, 2], [0.0, 0.2, -0.1]), target_speed=1.0,
                 gain=0.02)]), {"turning_rate": 0.7, "spin": 2.0}),
    "contact oscillator": (lambda: ContactOscillator(0.3), {"q": [1.0, 1.0, 0.5],
                                                            "v": [0.0, 0.0, 0.0]}),
    "rotor sleigh": (lambda: RotorSleigh(1.0, 0.4, 0.1, 0.2, forces=DISSIPATIVE[:3] + [
        fe.Motor(torque=0.02, target_speed=4.0, gain=0.01)]),
        {"velocity": 0.3, "turning_rate": 1.0, "spin": 1.0}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_adaptive_agrees_with_reference_and_keeps_the_constraint(name, backend):
    make, ic = CASES[name]
    system = make()
    t_final = 4.0 if backend == "python" else 20.0
    rtol = 1e-10
    traj = nhphys.simulate(system, t_final, 0.25, Adaptive(rtol, rtol * 1e-2), backend=backend,
                           **ic)
    ref = nhphys.simulate(system, t_final, 0.25, Reference(rtol=1e-13, atol=1e-15),
                          backend=backend, **ic)
    assert traj.meta["backend"] == backend
    for key in traj.fields:
        if key == "constraint_residual":
            continue
        scale = np.abs(ref[key]).max() + 1.0
        assert np.abs(traj[key] - ref[key]).max() <= 100 * rtol * scale, key
    # the projection: the constraint at round-off at every frame (Reference drifts off it)
    assert traj.constraint_residual.max() <= 1e-15 * (np.abs(traj.energy).max() + 1.0) * 10
    if "work" in traj.fields:  # energy - work holds to the tolerance
        balance = traj.energy - traj.work
        assert np.abs(balance - balance[0]).max() <= 100 * rtol * (np.abs(traj.energy).max())


def test_a_user_model_runs_on_the_twin_field():
    """A ConstrainedMechanicalSystem of Python callables: the field is the twin's, and the
    run says so; it agrees with the built-in knife edge it copies."""
    sleigh = KnifeEdge(1.0, 0.2, 0.15)
    model = sleigh.coordinates
    user = ConstrainedMechanicalSystem(model.mass_matrix, model.potential, model.grad_potential,
                                       model.constraint_matrix,
                                       model.constraint_matrix_derivative)
    q0, v0 = sleigh.coordinates_from_conditions(velocity0=0.3, omega0=1.0)
    traj = nhphys.simulate(user, 5.0, 0.25, Adaptive(1e-10, 1e-12), q=q0, v=v0)
    assert traj.meta["backend"] == "python"
    built_in = nhphys.simulate(sleigh, 5.0, 0.25, Adaptive(1e-10, 1e-12), velocity=0.3,
                               turning_rate=1.0)
    assert np.abs(traj.q[:, 2] - built_in.pose[:, 2]).max() <= 1e-8  # the heading
    assert np.abs(traj.energy - built_in.energy).max() <= 1e-8


@pytest.mark.parity
def test_kernel_and_twin_runs_agree():
    make, ic = CASES["knife edge with forces"]
    runs = [nhphys.simulate(make(), 5.0, 0.25, Adaptive(1e-10, 1e-12), backend=b, **ic)
            for b in ("cython", "python")]
    for key in runs[0].fields:
        assert np.abs(runs[0][key] - runs[1][key]).max() <= 1e-9, key
