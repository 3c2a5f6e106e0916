"""Where a rolling body may start: on the ground, where the ground pushes it."""

import re

import numpy as np
import pytest

import nhphys
from nhphys.surfaces import Plane, Sphere
from nhphys.systems import RollingBody

G = 9.81


def solid_ball(radius=0.1, mass=1.0):
    return nhphys.RigidBody(mass, [0.4 * mass * radius**2] * 3, Sphere(radius))


def test_a_ground_point_off_the_ground_is_an_error_naming_the_distance():
    bowl = RollingBody(solid_ball(), Sphere(1.0).as_ground("inside"))
    # the default ground point (the origin) is the bowl's centre: 1 m from its surface
    with pytest.raises(ValueError, match=r"`ground_point`.*body's size 0\.1.* is 1 from"):
        nhphys.simulate(bowl, 0.01, 1e-3, omega=[0, 1.0, 0])
    with pytest.raises(ValueError, match="is 0.5 from"):
        nhphys.simulate(RollingBody(solid_ball(), Plane()), 0.01, 1e-3,
                        ground_point=[0.3, 0.0, 0.5])
    # within the body's size of the ground, the point is projected onto it
    traj = nhphys.simulate(bowl, 0.01, 1e-3, ground_point=[0.2, 0.0, -0.9])
    assert abs(np.linalg.norm(traj.contact_point[0]) - 1.0) <= 1e-12


def test_the_twin_evaluators_are_made_once_for_the_body_and_ground_held():
    # reference_rhs and the placement ask for them at every call: the same objects come back
    # while the system holds the same body and ground, new ones after either is replaced
    system = RollingBody(solid_ball(), Plane())
    first = system._twins()
    assert all(a is b for a, b in zip(system._twins(), first))
    bowl = Sphere(1.0).as_ground("inside")
    system.ground = bowl
    shape, ground = system._twins()
    assert ground is not first[1]
    x = ground.point(np.array([0]), np.array([[0.1, 0.2]]))
    np.testing.assert_allclose(x, bowl.with_backend("python").kernel.point(
        np.array([0]), np.array([[0.1, 0.2]])), rtol=0, atol=0)
    system.body = solid_ball(0.2)
    assert system._twins()[0] is not shape


def test_body_size_is_its_largest_radius():
    assert RollingBody(solid_ball(0.25), Plane()).size == pytest.approx(0.25, rel=1e-12)
    ellipsoid = nhphys.RigidBody(1.0, [1, 1, 1], nhphys.surfaces.Ellipsoid([0.3, 0.2, 0.1]))
    assert RollingBody(ellipsoid, Plane()).size == pytest.approx(0.3, rel=1e-9)


def test_a_start_where_the_ground_must_pull_is_an_error_unless_asked_for(backend):
    # a ball of radius r rolling over the top of a sphere of radius R at speed v = omega r:
    # its centre moves on a circle of radius R + r, so N = m g - m v^2 / (R + r)
    m, r, R, omega = 1.0, 0.1, 1.0, 40.0
    top = {"omega": [0.0, omega, 0.0], "ground_point": [0.0, 0.0, R]}
    expected = m * G - m * (omega * r) ** 2 / (R + r)
    assert expected < 0
    with pytest.raises(ValueError, match="normal contact force there is") as err:
        nhphys.simulate(RollingBody(solid_ball(r, m), Sphere(R)), 1e-3, 1e-4, backend=backend,
                        **top)
    reported = float(re.search(r"is (-?[\d.]+) N", str(err.value)).group(1))
    assert reported == pytest.approx(expected, abs=1e-3)  # the message's 4 digits
    system = RollingBody(solid_ball(r, m), Sphere(R), allow_negative_normal_force=True)
    with pytest.warns(RuntimeWarning, match="normal contact force is negative"):
        traj = nhphys.simulate(system, 1e-3, 1e-4, backend=backend, **top)
    assert traj.normal_force[1] == pytest.approx(expected, rel=1e-3)
    # slower, the ground pushes and the start is accepted
    nhphys.simulate(RollingBody(solid_ball(r, m), Sphere(R)), 1e-3, 1e-4, backend=backend,
                    omega=[0.0, 20.0, 0.0], ground_point=[0.0, 0.0, R])
