"""Fixed joints: a body welded to another is merged into it (``Joint(parent, "fixed", ...)``).

Checked against the same systems written without fixed joints: two point masses welded to a
chassis against the chassis with their closed-form mass, centre and inertia, and wheels hung
from a welded body against the same wheels hung from the body it is welded to. Every run test
runs on the kernel and on the twin.
"""

import numpy as np
import pytest

import nhphys
from nhphys.forces import JointMotor
from nhphys.integrators import DLA
from nhphys.systems import Articulated, Joint, Wheel
from test_scene_articulated import round_trip

R_WHEEL, B = 0.1, 0.2
WHEEL = {"mass": 0.3, "inertia": np.diag([1.5e-3, 3e-3, 1.5e-3])}


def cart(chassis, wheel_parent=2, wheel_offset=(0.0, 0.0, R_WHEEL)):
    """x, y, heading (carrying ``chassis``: a dict of mass properties, or a list of joints
    welded to it), then two wheels on an axle."""
    joints = [Joint(-1, "prismatic", (1, 0, 0), name="x"),
              Joint(0, "prismatic", (0, 1, 0), name="y")]
    if isinstance(chassis, dict):
        joints.append(Joint(1, "revolute", (0, 0, 1), offset=(0, 0, 0), name="heading",
                            **chassis))
    else:
        joints.append(Joint(1, "revolute", (0, 0, 1), name="heading"))
        joints += chassis
    o = np.asarray(wheel_offset, dtype=float)
    joints += [Joint(wheel_parent, "revolute", (0, 1, 0), offset=tuple(o + (0, B, 0)),
                     name="left", **WHEEL),
               Joint(wheel_parent, "revolute", (0, 1, 0), offset=tuple(o + (0, -B, 0)),
                     name="right", **WHEEL)]
    left, right = len(joints) - 2, len(joints) - 1
    return Articulated(joints, [Wheel(left, R_WHEEL), Wheel(right, R_WHEEL, sideways=False)],
                       forces=[JointMotor("left", torque=0.02), JointMotor("right", torque=0.01)])


def run(system, backend):
    q = np.zeros(system.n)
    v = system.rates(q, {3: 1.0, 4: 2.0})
    return nhphys.simulate(system, 0.5, 1e-3, integrator=DLA(), backend=backend, q=q, v=v,
                           save_every=50)


def test_welded_point_masses_are_their_closed_form(backend):
    m, d, h = 0.7, 0.12, 0.05
    welded = cart([Joint(2, "fixed", offset=(d, 0, h), mass=m, name="front"),
                   Joint(2, "fixed", offset=(-d, 0, h), mass=m, name="back")])
    # two point masses m at (+-d, 0, h): mass 2m at (0, 0, h), inertia 2 m d^2 about y and z
    direct = cart({"mass": 2 * m, "com": (0, 0, h),
                   "inertia": np.diag([0.0, 2 * m * d**2, 2 * m * d**2])})
    assert welded.n == direct.n == 5
    assert welded.joint_names == ["x", "y", "heading", "left", "right"]
    a, b = run(welded, backend), run(direct, backend)
    assert np.abs(a.q - b.q).max() < 1e-13
    assert np.abs(a.energy - b.energy).max() < 1e-13 * abs(b.energy[0])
    assert a.constraint_residual.max() < 1e-13


def test_wheels_on_a_welded_body_hang_where_they_would(backend):
    """A body welded at s to the chassis, the wheels hung from it at offsets o - s: the same
    as the wheels hung from the chassis at o, and the welded body's mass merged."""
    s = np.array([0.03, 0.0, 0.02])
    mounted = cart([Joint(2, "fixed", offset=tuple(s), mass=2.0, com=(0.02, 0, 0.03),
                          inertia=np.diag([0.02, 0.02, 0.03]), name="mount")],
                   wheel_parent=3, wheel_offset=tuple(np.array([0.0, 0.0, R_WHEEL]) - s))
    direct = cart({"mass": 2.0, "com": tuple(s + (0.02, 0, 0.03)),
                   "inertia": np.diag([0.02, 0.02, 0.03])})
    a, b = run(mounted, backend), run(direct, backend)
    assert np.abs(a.q - b.q).max() < 1e-13
    assert np.abs(a.work - b.work).max() < 1e-15


def test_fixed_joints_are_refused_where_they_make_no_sense():
    with pytest.raises(ValueError, match="fixed to the ground"):
        Articulated([Joint(-1, "fixed"), Joint(-1, "revolute", (0, 0, 1), mass=1.0)],
                    [Wheel(0, 0.1)])
    with pytest.raises(ValueError, match="at least one revolute or prismatic"):
        Articulated([Joint(-1, "fixed", mass=1.0)], [Wheel(0, 0.1)])
    welded = cart([Joint(2, "fixed", offset=(0.1, 0, 0), mass=1.0, name="front")])
    with pytest.raises(ValueError, match="JointMotor on the joint 'front'"):  # no coordinate
        Articulated(welded.joints, welded.wheels, forces=[JointMotor("front", torque=1.0)])


def test_a_welded_system_in_a_scene_file(backend):
    welded = cart([Joint(2, "fixed", offset=(0.1, 0, 0.05), mass=0.7, name="front")])
    scene = nhphys.Scene(name="yard")
    scene.add_articulated(welded, q=np.zeros(5), v=welded.rates(np.zeros(5), {3: 1.0, 4: 2.0}))
    assert 'kind = "fixed"' in round_trip(scene, backend)
    # the welded body is part of the chassis' link
    assert scene.body_names == ["articulated.heading", "articulated.left", "articulated.right"]
