"""The benchmark bicycle on a curved ground: a bowl, a saddle, a terrain.

:class:`~nhphys.systems.Bicycle` keeps its rear wheel on the plane by construction: its first
coordinates are the rear contact point's ``x``, ``y``, and the frame leans about the line
through it. On a curved ground no such construction exists, so :class:`GroundBicycle` puts the
same bodies (the benchmark's parameters, or any others) on a tree with one more coordinate, the
height ``z`` of that reference point, and holds both wheels on the ground
(``Articulated(..., ground=...)``): nine coordinates ``x, y, z, yaw, roll, pitch, rear_wheel,
steer, front_wheel``, two held gaps and four rolling rows, three degrees of freedom as on the
plane. On a level plane (a flat height field) it is the same mechanical system as ``Bicycle``,
which the tests check.
"""

from dataclasses import replace

import numpy as np

from nhphys.systems.articulated import Articulated, Joint, Wheel
from nhphys.systems.bicycle import FRONT, PITCH, REAR, ROLL, STEER, YAW, Bicycle

Z = 2  # the inserted coordinate; every later index of Bicycle's moves up by one


def _moved(index):
    """Bicycle's coordinate ``index`` in the ground bicycle's."""
    return index + 1 if index >= Z else index


class GroundBicycle(Articulated):
    """The Whipple-Carvallo bicycle with both wheels held on a curved ``ground``.

    Parameters
    ----------
    ground : nhphys.surfaces.Paraboloid or nhphys.surfaces.HeightField
        As for :class:`~nhphys.systems.Articulated` (a graph over ``(x, y)``, gravity along
        ``-z``).
    parameters : dict, optional
        As for :class:`~nhphys.systems.Bicycle` (default: the benchmark's).
    forces : sequence of nhphys.forces.JointMotor or JointSpring, optional
        On its joints, by name (``"rear_wheel"`` to pedal, ``"steer"``).

    Notes
    -----
    Initial conditions ``q`` and ``v`` (each (9,)), or from :meth:`start`: a speed, a roll and
    a steer, as for ``Bicycle``. No linearisation: its steady motions depend on where it is.
    """

    link_labels = {_moved(PITCH): "rear_frame", _moved(REAR): "rear_wheel",
                   _moved(STEER): "front_frame", _moved(FRONT): "front_wheel"}

    def __init__(self, ground, parameters=None, forces=None):
        self.bicycle = Bicycle(parameters)
        joints = list(self.bicycle.joints)
        # the yaw joint hangs from the new slide instead of y; the later joints' parents move
        moved = [j if i < Z else replace(j, parent=Z if j.parent == Z - 1 else _moved(j.parent))
                 for i, j in enumerate(joints)]
        moved.insert(Z, Joint(Z - 1, "prismatic", (0.0, 0.0, 1.0), name="z"))
        wheels = [Wheel(_moved(REAR), self.bicycle.rear_radius, held=True),
                  Wheel(_moved(FRONT), self.bicycle.front_radius, held=True)]
        super().__init__(moved, wheels, gravity=self.bicycle.gravity, name="Bicycle",
                         forces=forces, ground=ground)

    def __repr__(self):
        return f"GroundBicycle({self.ground!r})"

    def outline_parts(self, points=48, rims=True):
        """``Bicycle.outline_parts``, on this tree's bodies."""
        return {part: (_moved(body), pts)
                for part, (body, pts) in self.bicycle.outline_parts(points, rims).items()}

    def start(self, speed=0.0, roll=0.0, steer=0.0, roll_rate=0.0, steer_rate=0.0, yaw=0.0,
              position=(0.0, 0.0), tol=1e-14, max_iter=30):
        """``{"q": (9,), "v": (9,)}`` of the bicycle at ``position`` (its rear reference
        point's ``(x, y)``) with the given heading, roll, steer and rates (as
        ``Bicycle.state``), its reference point moving at ``speed`` along the heading (on a
        plane the rear contact point, as ``Bicycle``'s ``speed``).

        Its height ``z`` and pitch are Newton's solution of the two gaps (the held rows are
        their gradients), from the ground's height below and the plane's pitch, with no
        correction longer than 0.1 m and 0.1 rad. The solution must be the bicycle standing
        on the ground there: its pitch within 60 degrees of the plane's (a slope up to that),
        its height within a wheelbase of the ground's below, and its front wheel ahead of its
        rear wheel.

        Raises
        ------
        ValueError
            No height and pitch put both wheels on the ground, or only with the bicycle not
            standing there (overturned, or leaning on a wall of a ground too tight for it).
        """
        position = np.asarray(position, dtype=float)
        q8, _ = self.bicycle.state(roll=roll, steer=steer, yaw=yaw, position=position)
        q = np.insert(q8, Z, 0.0)
        q[Z] = float(self.ground.point(position[None] - self.ground.center[:2])[0, 2])
        first = q.copy()
        unknowns = [Z, _moved(PITCH)]
        held = [self.tree.holonomic_rows[0], self.tree.holonomic_rows[1]]
        refused = ValueError(f"No height and pitch put both wheels on the ground at "
                             f"{position.tolist()} with roll {roll!r} and steer {steer!r}, "
                             f"the bicycle standing there.")
        for _ in range(max_iter):
            gaps = self.tree.gaps(q)
            if not np.all(np.isfinite(gaps)):
                raise refused
            A = self.tree.constraint_matrix(q)
            step = np.linalg.solve(A[np.ix_(held, unknowns)], gaps)
            size = np.max(np.abs(step))
            if size > 0.1:  # no correction longer than 0.1 m and 0.1 rad
                step *= 0.1 / size
            q[unknowns] -= step
            if size <= tol * (1.0 + np.max(np.abs(q[unknowns]))):
                break
        else:
            raise refused
        kin = self.tree.kinematics(q, np.zeros(self.n), bias=False)
        rear, front = (self.tree.disk_contact(kin, k)[4] for k in (0, 1))
        heading = np.array([np.cos(yaw), np.sin(yaw)])
        if not (np.all(np.abs(self.tree.gaps(q)) <= 1e-12)
                and abs(q[_moved(PITCH)] - first[_moved(PITCH)]) < np.pi / 3
                and abs(q[Z] - first[Z]) < self.bicycle.wheelbase
                and heading @ (front - rear)[:2] > 0.0):
            raise refused
        given = {_moved(ROLL): roll_rate, _moved(STEER): steer_rate}
        base = self.rates(q, {**given, _moved(REAR): 0.0})
        unit = self.rates(q, {**given, _moved(REAR): 1.0}) - base
        heading = np.array([np.cos(q[_moved(YAW)]), np.sin(q[_moved(YAW)])])
        rate = (speed - heading @ base[:2]) / (heading @ unit[:2])
        return {"q": q, "v": base + rate * unit}
