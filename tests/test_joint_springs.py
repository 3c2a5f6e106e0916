"""Joint springs (``nhphys.forces.JointSpring``): a potential on a joint's coordinate.

The check is a closed form of the discretisation itself: a body sliding on a blade, pulled
back along it by a spring ``k x^2 / 2``, is the harmonic oscillator ``m x'' = -k x``. The
midpoint discrete Lagrangian ``h [m ((x1 - x0)/h)^2 / 2 - k ((x0 + x1)/2)^2 / 2]`` gives the
recurrence ``(1 + a) x2 - 2 (1 - a) x1 + (1 + a) x0 = 0`` with ``a = (w h / 2)^2``: each step
turns the phase by ``theta = 2 arctan(w h / 2)``, and from rest (``p0 = 0`` gives
``x1 / x0 = cos theta``) ``x_n = A cos(n theta)`` exactly, and the energy, a quadratic invariant, stays constant to
round-off. ``Reference`` follows ``A cos(w t)``. Every run test runs on the kernel and on the twin.
"""

import numpy as np
import pytest

import nhphys
from nhphys.forces import JointMotor, JointSpring
from nhphys.integrators import DLA, Reference
from nhphys.systems import Articulated, Blade, Joint
from test_scene_articulated import round_trip

MASS, K, A = 2.0, 50.0, 0.3
OMEGA = np.sqrt(K / MASS)


def slider(forces=None):
    joints = [Joint(-1, "prismatic", (1, 0, 0), name="x"),
              Joint(0, "prismatic", (0, 1, 0), name="y"),
              Joint(1, "revolute", (0, 0, 1), mass=MASS, inertia=np.diag([0.01, 0.01, 0.02]),
                    name="heading")]
    return Articulated(joints, blades=[Blade(2)], name="slider",
                       forces=[JointSpring("x", K)] if forces is None else forces)


@pytest.mark.parametrize("h", [1e-2, 2e-3])
def test_the_step_is_the_midpoint_oscillator_exactly(h, backend):
    steps = round(2.0 / h)
    traj = nhphys.simulate(slider(), steps * h, h, integrator=DLA(), backend=backend,
                           q=[A, 0.0, 0.0], v=np.zeros(3))
    theta = 2.0 * np.arctan(OMEGA * h / 2.0)
    expected = A * np.cos(theta * np.arange(steps + 1))
    assert np.abs(traj.q[:, 0] - expected).max() < 1e-13
    assert np.abs(traj.q[:, 1:]).max() < 1e-14  # it stays on its line, heading 0
    # the energy (spring included) is a quadratic invariant of a linear system, which the
    # midpoint rule keeps exactly: constant to round-off
    energy = 0.5 * K * A**2
    assert traj.energy[0] == pytest.approx(energy, rel=1e-15)
    assert np.abs(traj.energy - energy).max() < 1e-13 * energy


def test_reference_is_the_oscillator():
    traj = nhphys.simulate(slider(), 2.0, 0.05, integrator=Reference(rtol=1e-12, atol=1e-14),
                           q=[A, 0.0, 0.0], v=np.zeros(3))
    assert np.abs(traj.q[:, 0] - A * np.cos(OMEGA * traj.t)).max() < 1e-10
    assert np.ptp(traj.energy) < 1e-10 * traj.energy[0]


def test_a_spring_with_a_rest_position_and_a_motor(backend):
    """With ``rest`` the oscillation is about it; a constant force F on the same joint moves
    the centre to ``rest + F / k``, and ``energy - work`` stays (the motor's work in
    ``work``)."""
    F, rest = 5.0, 0.1
    system = slider([JointSpring(0, K, rest=rest), JointMotor("x", torque=F)])
    h = 1e-3
    traj = nhphys.simulate(system, 2.0, h, integrator=DLA(), backend=backend,
                           q=[rest, 0.0, 0.0], v=np.zeros(3), save_every=10)
    centre = rest + F / K
    theta = 2.0 * np.arctan(OMEGA * h / 2.0)
    n = np.arange(len(traj)) * 10
    assert np.abs(traj.q[:, 0] - (centre - (F / K) * np.cos(theta * n))).max() < 1e-13
    # energy - work: the potential k (x - centre)^2 / 2 up to a constant, kept exactly too
    balance = traj.energy - traj.work
    assert np.ptp(balance) < 1e-13 * 0.5 * K * (F / K) ** 2


def test_bad_springs_are_refused():
    with pytest.raises(ValueError, match="JointSpring: expected `stiffness`"):
        JointSpring("x", -1.0)
    with pytest.raises(ValueError, match="JointSpring: expected `rest`"):
        JointSpring("x", 1.0, rest=np.nan)
    with pytest.raises(ValueError, match="JointSpring on the joint 'z'"):
        slider([JointSpring("z", 1.0)])
    with pytest.raises(TypeError, match="JointMotor or a JointSpring"):
        slider([nhphys.forces.LinearDrag(1.0)])


def test_a_scene_file_holds_the_spring(backend):
    scene = nhphys.Scene(name="slider")
    scene.add_articulated(slider([JointSpring("x", K, rest=0.05)]), q=[A, 0.0, 0.0],
                          v=np.zeros(3))
    assert 'type = "joint_spring"' in round_trip(scene, backend, t_final=0.1)
