"""Contacts: what turns a body placed in a :class:`~nhphys.Scene` into a mechanical system.

Each body of a scene has exactly one contact:

* :class:`RollingContact` ``(ground)``: the body's shape rolls without slipping on a ground
  surface (:class:`nhphys.systems.RollingBody`);
* :class:`KnifeEdgeContact` ``(plane, offset=...)``: the body slides on a plane on a blade that
  cannot move sideways (:class:`nhphys.systems.KnifeEdge`);
* :class:`SuslovContact` ``(axis, pivot=...)``: the body turns about its centre of mass, held at
  a fixed pivot, with no angular velocity along a body axis (:class:`nhphys.systems.Suslov`).

A contact builds the body's system, says which integrator it takes by default, and maps the
system's frames to the fields every body of a scene shares (``BODY_FIELDS``). The initial
conditions are the system's (:mod:`nhphys.conditions`): a body is started with the same words
in a scene as alone.
"""

from __future__ import annotations

import numbers

import numpy as np

from nhphys._validation import as_vector3
from nhphys.integrators.names import integrator_from_name

BODY_FIELDS = ("position", "R", "omega", "contact_point", "energy", "work",
               "constraint_residual")
# the fields of a body with a unilateral contact (RollingContact(lift_off=True)), in a scene
# with one: ``mode`` (0 rolling, 1 flight; 0 for the other bodies) and ``gap`` (m; 0 for them)
MODE_FIELDS = ("mode", "gap")
MODE_DTYPES = {"mode": np.int8, "gap": np.float64}


class Contact:
    """Base of the contacts: builds a body's system and reads its frames in common fields."""

    ground = None

    def system(self, body, gravity, forces=()):
        """The mechanical system of ``body`` (an :class:`nhphys.RigidBody`) under ``gravity``
        and the force elements ``forces`` (:mod:`nhphys.forces`)."""
        raise NotImplementedError

    def check(self, system, start_arguments):
        """Check the initial state early, when the body is added (the system checks values)."""

    def fields(self, body, system, saved):
        """Common fields (``BODY_FIELDS``) from the system's saved frames."""
        raise NotImplementedError

    def integrator(self, system):
        """The integrator a body takes when neither it nor the scene's run names one."""
        return integrator_from_name("exp")

    def display_extra(self):
        return {}


class SuslovContact(Contact):
    """The body turns about its centre of mass, held at ``pivot``, with ``axis . Omega = 0``.

    Parameters
    ----------
    axis : array_like, shape (3,)
        Nonzero body-fixed vector (body frame).
    pivot : array_like, shape (3,)
        Where the centre of mass is held, in space.

    Initial conditions (as :class:`nhphys.systems.Suslov`): ``orientation`` (3x3 rotation or
    quaternion (w, x, y, z), default the identity) and exactly one of ``omega`` (body angular
    velocity, satisfying the constraint) and ``momentum`` (body angular momentum; its part along
    the constraint force is ignored).

    Force elements (``scene.add_body(..., forces=[...])``): those that make a torque about the
    pivot (torques, forces at body points, springs anchored in space, angular damping, motors;
    see :class:`nhphys.systems.Suslov`).
    """

    def __init__(self, axis, pivot=(0.0, 0.0, 0.0)):
        self.axis = as_vector3(axis, "axis")
        if not np.linalg.norm(self.axis) > 0:
            raise ValueError(f"Expected `axis` to be a nonzero vector, got {self.axis}.")
        self.pivot = as_vector3(pivot, "pivot")

    def __repr__(self):
        return f"SuslovContact(axis={self.axis.tolist()}, pivot={self.pivot.tolist()})"

    def system(self, body, gravity, forces=()):
        # the force elements' springs are anchored in space, where the pivot is
        from nhphys.systems import Suslov

        return Suslov(body.inertia, self.axis, forces=forces, pivot=self.pivot)

    def check(self, system, start_arguments):
        system.initial_omega(omega0=start_arguments.get("omega0"),
                             momentum0=start_arguments.get("momentum0"))

    def fields(self, body, system, saved):
        n = len(saved["R"])
        pivot = np.broadcast_to(self.pivot, (n, 3)).copy()
        return {"position": pivot, "R": saved["R"], "omega": saved["omega"],
                "contact_point": pivot.copy(), "energy": saved["energy"],
                "work": saved.get("work", np.zeros(n)),
                "constraint_residual": saved["constraint_residual"]}

    def display_extra(self):
        return {"pivot": self.pivot}


class KnifeEdgeContact(Contact):
    """The body slides on a plane on a blade along its body ``x`` axis that cannot move sideways.

    The body's ``z`` axis stays along the plane's normal; the blade touches the plane under the
    body at its lowest point, and the centre of mass is ``offset`` ahead of the contact point
    along the blade. On an inclined plane gravity pulls the body downhill.

    Parameters
    ----------
    plane : nhphys.surfaces.Plane
        The ground (added to the scene if it is not there yet); the body is on the side of its
        normal (times its orientation).
    offset : float
        Distance of the centre of mass ahead of the blade's contact point.

    Initial conditions (as :class:`nhphys.systems.KnifeEdge`): ``position`` (x, y) of the
    contact point in the plane's coordinates (``x`` downhill on an inclined plane, the space
    ``x`` axis on a level one), ``heading`` (angle of the blade from the plane's ``x`` axis),
    ``velocity`` (speed of the contact point along the blade) and ``turning_rate``, all default 0.
    The body angular velocity is ``omega = (0, 0, turning_rate)``.

    Force elements (``scene.add_body(..., forces=[...])``) are given in space, as on any body;
    the plane carries their parts along its normal and the tilting torques (see
    :class:`nhphys.systems.KnifeEdge`).
    """

    def __init__(self, plane, offset=0.0):
        from nhphys.surfaces import Plane

        if not isinstance(plane, Plane):
            raise TypeError(f"Expected `plane` to be an nhphys.surfaces.Plane, got {plane!r}.")
        if isinstance(offset, bool) or not isinstance(offset, numbers.Real) \
                or not np.isfinite(offset):
            raise TypeError(f"Expected `offset` to be a finite real number, got {offset!r}.")
        self.ground = plane
        self.offset = float(offset)
        n = plane.unit_normal * plane.orientation
        up = np.array([0.0, 0.0, 1.0])
        cos_incline = float(np.clip(n @ up, -1.0, 1.0))
        if cos_incline < 0:
            raise ValueError(
                f"Expected the plane's normal to point up (the body rests on it), got {n.tolist()}."
            )
        self.incline = float(np.arccos(cos_incline))
        downhill = -(up - cos_incline * n)
        if np.linalg.norm(downhill) < 1e-12:
            e1 = np.array([1.0, 0.0, 0.0]) - n[0] * n
        else:
            e1 = downhill
        e1 = e1 / np.linalg.norm(e1)
        self.frame = np.column_stack([e1, np.cross(n, e1), n])  # plane coordinates -> space
        self.origin = plane.point0
        self._heights = {}

    def __repr__(self):
        return f"KnifeEdgeContact(plane={self.ground!r}, offset={self.offset})"

    def integrator(self, system):
        # the retraction integrator needs the left-invariant (level) sleigh
        return integrator_from_name("exp" if system.level else "newmark")

    def system(self, body, gravity, forces=()):
        # the force elements are given in space: the plane's coordinates sit there at
        # `frame`, with the centre of mass `height` above the plane
        from nhphys.systems import KnifeEdge

        origin = self.origin + self.height(body) * self.frame[:, 2]
        return KnifeEdge(body.mass, body.inertia[2, 2], self.offset, incline=self.incline,
                         gravity=gravity, forces=forces, placement=(self.frame, origin))

    def check(self, system, start_arguments):
        system.initial_state(**start_arguments)

    def height(self, body):
        """Height of the centre of mass above the plane: the depth of the shape's lowest point."""
        key = id(body)
        if key not in self._heights:
            self._heights[key] = self._height(body)
        return self._heights[key]

    def _height(self, body):
        if body.shape is None:
            return 0.0
        if getattr(body.shape, "strictly_convex", False):
            low = body.shape.point(body.shape.support_point([0.0, 0.0, -1.0]))
            return float(body.com[2] - low[2])
        points = body.shape.mesh_arrays(64)[0]
        return float(body.com[2] - points[:, 2].min())

    def fields(self, body, system, saved):
        pose = saved["pose"]
        x, y, th = pose[:, 0], pose[:, 1], pose[:, 2]
        c, s = np.cos(th), np.sin(th)
        E, o = self.frame, self.origin
        zeros = np.zeros_like(th)
        contact_local = np.stack([x, y, zeros], -1)
        com_local = np.stack([x + self.offset * c, y + self.offset * s,
                              np.full_like(th, self.height(body))], -1)
        turn = np.zeros((len(th), 3, 3))
        turn[:, 0, 0], turn[:, 0, 1], turn[:, 1, 0], turn[:, 1, 1] = c, -s, s, c
        turn[:, 2, 2] = 1.0
        return {"position": o + com_local @ E.T, "R": E @ turn, "omega": saved["omega"],
                "contact_point": o + contact_local @ E.T, "energy": saved["energy"],
                "work": saved.get("work", zeros),
                "constraint_residual": saved["constraint_residual"]}


class RollingContact(Contact):
    """The body's shape rolls without slipping on ``ground`` (:class:`nhphys.systems.RollingBody`).

    Parameters
    ----------
    ground : nhphys.surfaces.Surface or nhphys.surfaces.MovingGround
        Added to the scene if it is not there yet.

    lift_off : bool
        A unilateral contact: the body leaves the ground where the ground would have to pull
        it, flies and lands (``RollingBody(lift_off=True)``, ``docs/contact-modes.md``); the
        scene's trajectory then has ``mode`` and ``gap`` per body and ``traj.events``.
    restitution : float
        Newton's restitution in [0, 1] of its impacts (with ``lift_off``).
    mu : float
        Coulomb's friction coefficient, >= 0 (with ``lift_off``; ``inf``: it never slides).
    impact : {"rough", "coulomb"}
        The impact law at touchdown (with ``lift_off``; see ``RollingBody``).

    Initial conditions (as :class:`nhphys.systems.RollingBody`): ``position`` (a point on the
    ground where the body touches it), ``orientation`` (3x3 rotation or quaternion
    (w, x, y, z)), ``omega`` (body angular velocity); with ``lift_off`` also ``height`` and
    ``velocity`` (a start in flight).
    """

    def __init__(self, ground, lift_off=False, restitution=0.0, mu=np.inf, impact="rough"):
        if not hasattr(getattr(ground, "surface", ground), "mesh_arrays"):
            raise TypeError(f"Expected `ground` to be an nhphys.surfaces Surface or "
                            f"MovingGround, got {ground!r}.")
        from nhphys.systems.rolling import check_impact, check_modes

        self.ground = ground
        self.lift_off, self.restitution, self.mu = check_modes(lift_off, restitution, mu,
                                                               None)
        self.impact = check_impact(impact, self.lift_off)

    def __repr__(self):
        extra = (f", lift_off=True, restitution={self.restitution!r}, mu={self.mu!r}, "
                 f"impact={self.impact!r}" if self.lift_off else "")
        return f"RollingContact(ground={self.ground!r}{extra})"

    def system(self, body, gravity, forces=()):
        from nhphys.systems import RollingBody

        if body.shape is None:
            raise ValueError(f"Expected body {body.name!r} to have a `shape` to roll on.")
        return RollingBody(body, self.ground, gravity=gravity, forces=forces,
                           lift_off=self.lift_off, restitution=self.restitution, mu=self.mu,
                           impact=self.impact)

    def check(self, system, start_arguments):
        # a body that cannot be put on the ground fails here, when it is added
        if hasattr(system, "place"):
            system.place(start_arguments.get("R0", np.eye(3)),
                         start_arguments.get("omega0", np.zeros(3)),
                         start_arguments.get("ground_point", np.zeros(3)))

    def fields(self, body, system, saved):
        # a unilateral contact's mode and gap ride along (SceneRun fills them for the others)
        return {k: saved[k] for k in BODY_FIELDS + MODE_FIELDS if k in saved}


CONTACTS = (RollingContact, KnifeEdgeContact, SuslovContact)

__all__ = ["BODY_FIELDS", "MODE_DTYPES", "MODE_FIELDS", "CONTACTS", "Contact", "KnifeEdgeContact", "RollingContact",
           "SuslovContact"]
