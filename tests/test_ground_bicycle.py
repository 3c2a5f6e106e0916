"""The benchmark bicycle on a curved ground (``GroundBicycle``): both wheels held on it.

On a level ground (a flat height field) its tree (Bicycle's, with one more coordinate, the
height of the rear reference point, and the rear wheel held instead of kept on the plane by
construction) is the same mechanical system as ``Bicycle``, and its ``DLA()`` steps are the same
equations: the runs agree to round-off. In the bowl ``z = (x^2 + y^2) / 400`` its steps
converge at second order to its ``Reference``, kernel and twin agree, and the energy is
conserved while it rides; it rides up the far wall, slows below its weave speed (4.29 m/s,
``Bicycle.self_stable_speeds``) and then falls over, as the benchmark's linearisation says it
must. Every run test runs on the kernel and on the twin (shorter runs on the twin).
"""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import DLA, Reference
from nhphys.surfaces import HeightField, Paraboloid
from nhphys.systems import Bicycle, GroundBicycle
from test_tree_ground import documented_example

FLAT = HeightField(np.zeros((6, 6)), (-50, 50), (-50, 50))
BOWL = Paraboloid(20.0, 20.0)
START = {"speed": 5.0, "roll": 0.01}


def test_on_level_ground_it_is_the_bicycle(backend):
    bike = GroundBicycle(FLAT)
    T = 2.0 if backend == "cython" else 0.2
    ours = nhphys.simulate(bike, T, 1e-3, integrator=DLA(), save_every=20, backend=backend,
                           **bike.start(**START))
    plane = nhphys.simulate(Bicycle(), T, 1e-3, integrator=DLA(), save_every=20,
                            backend=backend, **START)
    assert np.abs(np.delete(ours.q, 2, axis=1) - plane.q).max() < 1e-11
    assert np.abs(ours.q[:, 2]).max() < 1e-15  # its reference point stays on the ground
    assert np.abs(ours.energy - plane.energy).max() < 1e-10 * plane.energy[0]


def test_the_start_puts_both_wheels_on_the_ground():
    bike = GroundBicycle(BOWL)
    ic = bike.start(speed=4.0, roll=0.05, steer=0.1, yaw=0.7, position=(3.0, -2.0))
    assert np.abs(bike.tree.gaps(ic["q"])).max() < 1e-14
    assert np.abs(bike.tree.constraint_matrix(ic["q"]) @ ic["v"]).max() < 1e-12
    speed = ic["v"][0] * np.cos(0.7) + ic["v"][1] * np.sin(0.7)
    assert abs(speed - 4.0) < 1e-12
    with pytest.raises(ValueError, match="roll"):
        bike.start(roll=2.0)
    # a bowl tighter than the bicycle (curvature radius 0.045 m): both wheels touch it only
    # with the bicycle overturned or leaning on a wall, which the start refuses
    tight = GroundBicycle(Paraboloid(0.3, 0.3))
    for position in ((0.0, 0.0), (1.0, 0.0)):
        with pytest.raises(ValueError, match="the bicycle standing there"):
            tight.start(position=position)


def test_in_the_bowl_the_steps_converge_at_second_order(backend):
    bike = GroundBicycle(BOWL)
    ic = bike.start(position=(-5.0, 0.0), **START)
    T = 0.2
    reference = nhphys.simulate(bike, T, T, integrator=Reference(rtol=1e-12, atol=1e-13), **ic)
    errors = []
    for n in (50, 100, 200):
        traj = nhphys.simulate(bike, T, T / n, integrator=DLA(), save_every=n, backend=backend,
                               **ic)
        errors.append(np.abs(traj.q[-1] - reference.q[-1]).max())
        assert traj.constraint_residual.max() < 1e-13
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(np.abs(np.log2(ratios) - 2) < 0.1), (errors, ratios)


@pytest.mark.parity
def test_kernel_and_twin_agree_in_the_bowl():
    bike = GroundBicycle(BOWL)
    ic = bike.start(position=(-5.0, 0.0), **START)
    runs = [nhphys.simulate(bike, 0.3, 1e-3, integrator=DLA(), save_every=10, backend=b, **ic)
            for b in ("cython", "python")]
    assert np.abs(runs[0].q - runs[1].q).max() < 1e-10
    assert np.abs(runs[0].v - runs[1].v).max() < 1e-10


@pytest.mark.kernels_only("8000 steps with two contact solves each: minutes on the twin")
def test_it_rides_up_the_wall_slows_and_falls(backend):
    """From 5 m from the bottom at 5 m/s: upright (|roll| < 0.06) while it rides across and up
    the far wall, below the weave speed from 3.5 s, fallen over (|roll| > 1) when the run
    stops at the lost contact (8.07 s); the energy error below 1e-7 until 7.5 s (it passes
    1e-7 at 7.96 s, as it falls)."""
    bike = GroundBicycle(BOWL)
    with pytest.raises(nhphys.NewtonError, match="contact point could not be found") as info:
        nhphys.simulate(bike, 12.0, 1e-3, integrator=DLA(), save_every=10, backend=backend,
                        **bike.start(position=(-5.0, 0.0), **START))
    traj = info.value.trajectory
    q, v = traj.q, traj.v
    speed = v[:, 0] * np.cos(q[:, 3]) + v[:, 1] * np.sin(q[:, 3])
    weave = Bicycle().self_stable_speeds()[0]
    slow = traj.t[np.argmax(speed < weave)]
    assert 3.0 < slow < 4.0
    upright = traj.t < 6.5
    assert np.abs(q[upright, 4]).max() < 0.06
    assert np.abs(q[-1, 4]) > 1.0 and 7.5 < traj.t[-1] < 8.5
    assert np.abs(traj.energy[traj.t < 7.5] / traj.energy[0] - 1).max() < 1e-7
    assert traj.constraint_residual.max() < 1e-12


def test_the_documented_example_runs():
    """The example of docs/multibody.md, "The bicycle on a curved ground"."""
    namespace = documented_example("### The bicycle on a curved ground",
                                   {"np": np, "nhphys": nhphys, "Paraboloid": Paraboloid})
    traj = namespace["traj"]
    assert traj.constraint_residual.max() < 1e-13
    assert np.abs(traj.energy / traj.energy[0] - 1).max() < 1e-7
