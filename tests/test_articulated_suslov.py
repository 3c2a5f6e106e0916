"""Suslov constraints in a joint tree (``SuslovConstraint``), against the Suslov top itself.

The Suslov top (``nhphys.systems.Suslov``: a body turning about its fixed centre of mass with no
angular velocity along a body axis) is built as a tree of three revolute joints (z, then y,
then x: ``R = R_z(q0) R_y(q1) R_x(q2)``) carrying the body, with a ``SuslovConstraint`` on it.
Its runs are compared with the Suslov system's own ``Reference``, an independent formulation
(Euler's equations with the constraint's multiplier, on the rotation group): the tree's
``Reference`` (its constrained equations, with the Suslov row's bias ``a . gamma``) to 1e-11,
and its ``DLA()`` steps at second order. Every run test runs on the kernel and on the twin.
"""

import numpy as np
import pytest

import nhphys
from nhphys.integrators import DLA, Reference
from nhphys.systems import Articulated, Joint, Suslov, SuslovConstraint
from test_scene_articulated import round_trip

INERTIA = np.array([[2.0, 0.0, 0.2], [0.0, 3.0, 0.3], [0.2, 0.3, 4.0]])  # a body's (triangle)
OMEGA0 = np.array([1.0, 0.5, 0.0])  # body frame, orthogonal to the constrained axis e3
T_FINAL = 1.0


def top_tree(axis=(0.0, 0.0, 1.0)):
    joints = [Joint(-1, "revolute", (0, 0, 1), name="yaw"),
              Joint(0, "revolute", (0, 1, 0), name="pitch"),
              Joint(1, "revolute", (1, 0, 0), mass=1.0, inertia=INERTIA, name="roll")]
    return Articulated(joints, suslov=[SuslovConstraint(2, axis)], name="top")


def start():
    """At R = I the joint rates are the body rates about z, y, x."""
    return {"q": np.zeros(3), "v": np.array([OMEGA0[2], OMEGA0[1], OMEGA0[0]])}


def rotations(tree_system, q):
    zero = np.zeros(3)
    return np.array([tree_system.tree.kinematics(qi, zero, bias=False)["R"][2] for qi in q])


@pytest.fixture(scope="module")
def suslov_reference():
    top = Suslov(INERTIA, axis=[0, 0, 1])
    return nhphys.simulate(top, T_FINAL, 0.05, integrator=Reference(rtol=1e-13, atol=1e-14),
                           omega=OMEGA0)


def test_the_trees_reference_is_the_suslov_tops(suslov_reference):
    tree = top_tree()
    traj = nhphys.simulate(tree, T_FINAL, 0.05, integrator=Reference(rtol=1e-13, atol=1e-14),
                           **start())
    R = rotations(tree, traj.q)
    assert np.abs(R - suslov_reference.R).max() < 1e-11
    assert np.abs(traj.energy - suslov_reference.energy[0]).max() < 1e-11


def test_dla_converges_at_second_order_with_the_row_exact(suslov_reference, backend):
    tree = top_tree()
    errors = []
    for h in (0.01, 0.005, 0.0025):
        traj = nhphys.simulate(tree, T_FINAL, h, integrator=DLA(), backend=backend,
                               save_every=round(0.05 / h), **start())
        assert traj.constraint_residual.max() < 1e-13
        errors.append(np.abs(rotations(tree, traj.q) - suslov_reference.R).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((3.7 < ratios) & (ratios < 4.3)), (errors, ratios)


def test_a_tilted_axis_and_refusals(backend):
    """A constrained axis off the body axes: the tree's row holds, and the energy stays."""
    axis = np.array([0.0, 0.6, 0.8])
    tree = top_tree(axis)
    v = tree.rates(np.zeros(3), {1: 0.8, 2: 1.0})  # pitch and roll rates; yaw from the row
    traj = nhphys.simulate(tree, 0.5, 1e-3, integrator=DLA(), backend=backend, q=np.zeros(3),
                           v=v, save_every=50)
    for q, qdot in zip(traj.q, traj.v):
        kin = tree.tree.kinematics(q, qdot, bias=False)
        assert abs(kin["omega"][2] @ (kin["R"][2] @ axis)) < 1e-13
    assert np.ptp(traj.energy) < 1e-6 * traj.energy[0]
    with pytest.raises(ValueError, match=r"suslov\[0\].body in \[0, 3\)"):
        Articulated(top_tree().joints, suslov=[SuslovConstraint(3)])
    with pytest.raises(ValueError, match=r"suslov\[0\].axis"):
        Articulated(top_tree().joints, suslov=[SuslovConstraint(2, (0, 0, 0))])
    with pytest.raises(TypeError, match="SuslovConstraint"):
        Articulated(top_tree().joints, suslov=[(2, (0, 0, 1))])


def test_a_scene_file_holds_the_top(backend):
    """In a scene, written to a file and read back: the same run, bit for bit."""
    scene = nhphys.Scene(name="top", gravity=0.0)
    scene.add_articulated(Articulated(top_tree().joints, gravity=0.0, name="top",
                                      suslov=[SuslovConstraint(2, (0.0, 0.6, 0.8))]),
                          q=np.zeros(3), v=top_tree((0.0, 0.6, 0.8)).rates(np.zeros(3),
                                                                            {1: 0.8, 2: 1.0}))
    text = round_trip(scene, backend)
    assert "[[bodies.system.suslov]]" in text or "suslov = [" in text
