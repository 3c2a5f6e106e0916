r"""The Whipple–Carvallo bicycle: four rigid bodies, two revolute joints and two rolling wheels.

The model of the benchmark of Meijaard, Papadopoulos, Ruina and Schwab (Proc. R. Soc. A 463,
2007): a rear frame ``B`` with its rider, a front frame ``H`` (fork and handlebar) turning about
the tilted steer axis, and two thin wheels ``R``, ``F`` that roll without slipping on the plane.

Coordinates
-----------
nhphys's frame has ``z`` up, ``x`` forward and ``y`` to the left (the benchmark's has ``z`` down
and ``y`` to the right: the same ``x``, with ``y`` and ``z`` reversed). The bicycle is a
:class:`~nhphys.twins.multibody.JointTree` of eight joints, its coordinates ``q`` (8,)::

    index  name          joint                                     body it moves
    0      x             slides along x                            (bookkeeping)
    1      y             slides along y                            (bookkeeping)
    2      yaw           turns about z through the rear contact    (bookkeeping)
    3      roll          turns about the heading through the rear contact    (bookkeeping)
    4      pitch         turns about the rear axle, ``r_R`` above  the rear frame B
    5      rear_wheel    turns about the rear axle                 the rear wheel R
    6      steer         turns about the steer axis                the front frame H
    7      front_wheel   turns about the front axle                the front wheel F

``(x, y)`` is the rear wheel's contact point, which the tree keeps on the ground: the rear
wheel's centre is ``r_R`` above it along the rolled vertical, the lowest point of the disk. Roll
and steer have the benchmark's signs: positive roll leans to the right, and the steer axis points
down (``(sin lambda, 0, -cos lambda)`` in the rear frame) so that positive steer turns to the
right. In the reference configuration (all zero) the bicycle stands upright along ``x`` with both
wheels on the ground, as in the benchmark's figure.

Constraints
-----------
Five rows: the rear contact's two horizontal no-slip rows, and the front contact's three (the
vertical row is the derivative of the front wheel's height above the ground, which ``pitch``
keeps at zero: :meth:`Bicycle.pitch` solves it by Newton). Eight coordinates less five rows
leave three degrees of freedom in velocity: roll rate, steer rate and rear wheel rate, which
this module takes as the independent speeds.

Linearisation
-------------
About the upright straight motion at speed ``v`` the benchmark's linear equations are
``M qdd + v C1 qd + (g K0 + v^2 K2) q = 0`` in ``q = (roll, steer)``. :meth:`Bicycle.roll_steer_field`
is the nonlinear model's field restricted to the roll and steer: for given ``(roll, steer,
roll rate, steer rate)`` it builds the consistent state (yaw and position zero, pitch from the
front contact, the rear wheel turning at ``v / r_R``, the other rates from the constraints)
and returns ``(roll rate, steer rate, roll acceleration, steer acceleration)`` from the full
equations. Its Jacobian at zero (:mod:`nhphys.linearize`) is the linear model's state matrix
``[[0, 1], [-M^-1 (g K0 + v^2 K2), -v M^-1 C1]]``: the yaw, position and wheel angles are
ignorable, and the pitch and the speed change only at second order in roll and steer (the
bicycle's mirror symmetry), so they drop out of the linearisation.
"""

import numpy as np

from nhphys.conditions import BICYCLE
from nhphys.systems.articulated import Articulated, Joint, Wheel

COORDINATES = ("x", "y", "yaw", "roll", "pitch", "rear_wheel", "steer", "front_wheel")
X, Y, YAW, ROLL, PITCH, REAR, STEER, FRONT = range(8)
INDEPENDENT = (ROLL, STEER, REAR)  # the independent speeds
DEPENDENT = (X, Y, YAW, PITCH, FRONT)  # the speeds the five constraint rows fix

#: The benchmark's parameters (Meijaard et al. 2007, Table 1), in its own frame (x forward,
#: z down; lengths in m, masses in kg, inertias in kg m^2 about the centres of mass).
BENCHMARK = {
    "wheelbase": 1.02,
    "trail": 0.08,
    "steer_axis_tilt": np.pi / 10,
    "gravity": 9.81,
    "rear_wheel_radius": 0.3,
    "rear_wheel_mass": 2.0,
    "rear_wheel_inertia": (0.0603, 0.12),  # (I_xx = I_zz, I_yy: about the axle)
    "rear_frame_com": (0.3, -0.9),  # (x, z)
    "rear_frame_mass": 85.0,
    "rear_frame_inertia": ((9.2, 0.0, 2.4), (0.0, 11.0, 0.0), (2.4, 0.0, 2.8)),
    "front_frame_com": (0.9, -0.7),
    "front_frame_mass": 4.0,
    "front_frame_inertia": ((0.05892, 0.0, -0.00756), (0.0, 0.06, 0.0),
                            (-0.00756, 0.0, 0.00708)),
    "front_wheel_radius": 0.35,
    "front_wheel_mass": 3.0,
    "front_wheel_inertia": (0.1405, 0.28),
}

# The benchmark's frame to nhphys's: y and z reversed.
_FLIP = np.diag([1.0, -1.0, -1.0])


def _positive(value, name):
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"Expected `{name}` to be a finite number > 0, got {value!r}.")
    return value


def _inertia(value, name):
    I = np.asarray(value, dtype=float)
    if I.shape != (3, 3) or not np.all(np.isfinite(I)):
        raise ValueError(f"Expected `{name}` to be a finite 3x3 matrix, got shape {I.shape}.")
    if np.max(np.abs(I - I.T)) > 1e-12 * max(1.0, np.max(np.abs(I))):
        raise ValueError(f"Expected `{name}` to be symmetric.")
    eig = np.linalg.eigvalsh(I)
    if eig[0] <= 0 or eig[0] + eig[1] < eig[2] * (1 - 1e-12):
        raise ValueError(
            f"Expected `{name}` to be the inertia of a body (positive definite, each principal "
            f"moment at most the sum of the other two), got principal moments {eig.tolist()}."
        )
    return I


def _wheel_inertia(value, name):
    Ixx, Iyy = (float(x) for x in value)
    if not (Ixx > 0 and Iyy > 0 and Iyy <= 2 * Ixx * (1 + 1e-12)):
        raise ValueError(
            f"Expected `{name}` = (I_xx, I_yy) of a wheel: both > 0 and I_yy <= 2 I_xx, got "
            f"{(Ixx, Iyy)}."
        )
    return np.diag([Ixx, Iyy, Ixx])


class Bicycle(Articulated):
    """The Whipple–Carvallo bicycle on a horizontal plane.

    Parameters
    ----------
    parameters : dict, optional
        Any of the keys of :data:`BENCHMARK` (the benchmark's frame: ``x`` forward, ``z`` down;
        centres of mass as ``(x, z)``; wheel inertias as ``(I_xx, I_yy)``); the others keep
        the benchmark's values.
    forces : sequence of nhphys.forces.JointMotor, optional
        Drives on the joints, by name: a motor on ``"rear_wheel"`` (pedalling), a steer torque
        on ``"steer"``.
    slope : float
        The ground's slope, rad, in (-pi/2, pi/2): a hill falling along ``+x`` (a bicycle
        heading along ``x`` rides downhill; ``yaw = pi`` uphill). The ground stays the plane
        ``z = 0`` and gravity tilts: ``g (sin slope, 0, -cos slope)``.

    Raises
    ------
    ValueError
        An unknown key, a non-positive length or mass, an inertia that is not a body's, a
        centre of mass below the ground, or front geometry that puts the front wheel off the
        ground.

    Examples
    --------
    >>> import nhphys
    >>> bike = nhphys.systems.Bicycle()
    >>> weave, capsize = bike.self_stable_speeds()
    >>> print(f"{weave:.6f} {capsize:.6f}")
    4.292383 6.024262
    """

    initial_conditions = BICYCLE  # see `state`
    link_labels = {PITCH: "rear_frame", REAR: "rear_wheel", STEER: "front_frame",
                   FRONT: "front_wheel"}  # the bodies' names in a scene

    def __init__(self, parameters=None, forces=None, slope=0.0):
        p = dict(BENCHMARK)
        for key, value in (parameters or {}).items():
            if key not in BENCHMARK:
                raise ValueError(
                    f"Unknown bicycle parameter {key!r}; expected one of {sorted(BENCHMARK)}."
                )
            p[key] = value
        self.parameters = p
        w = _positive(p["wheelbase"], "wheelbase")
        c = float(p["trail"])
        lam = float(p["steer_axis_tilt"])
        if not (np.isfinite(c) and np.isfinite(lam) and -np.pi / 2 < lam < np.pi / 2):
            raise ValueError("Expected a finite `trail` and a `steer_axis_tilt` in (-pi/2, pi/2).")
        g = _positive(p["gravity"], "gravity")
        rR = _positive(p["rear_wheel_radius"], "rear_wheel_radius")
        rF = _positive(p["front_wheel_radius"], "front_wheel_radius")
        masses = [_positive(p[k], k) for k in ("rear_frame_mass", "rear_wheel_mass",
                                                "front_frame_mass", "front_wheel_mass")]
        mB, mR, mH, mF = masses
        IB = _FLIP @ _inertia(p["rear_frame_inertia"], "rear_frame_inertia") @ _FLIP
        IH = _FLIP @ _inertia(p["front_frame_inertia"], "front_frame_inertia") @ _FLIP
        IR = _wheel_inertia(p["rear_wheel_inertia"], "rear_wheel_inertia")
        IF = _wheel_inertia(p["front_wheel_inertia"], "front_wheel_inertia")
        xB, zB = (float(v) for v in p["rear_frame_com"])
        xH, zH = (float(v) for v in p["front_frame_com"])
        if zB >= 0 or zH >= 0:
            raise ValueError("Expected the frames' centres of mass above the ground (z < 0 in "
                             "the benchmark's frame, z down).")
        self.rear_radius, self.front_radius, self.gravity = rR, rF, g
        self.wheelbase, self.trail, self.steer_axis_tilt = w, c, lam

        ex, ey, ez = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
        steer_axis = (np.sin(lam), 0.0, -np.cos(lam))  # pointing down: positive steers right
        S = (w + c, 0.0, -rR)  # where the steer axis meets the ground, in the rear frame
        joints = [
            Joint(-1, "prismatic", ex, name="x"),
            Joint(X, "prismatic", ey, name="y"),
            Joint(Y, "revolute", ez, name="yaw"),
            Joint(YAW, "revolute", ex, name="roll"),
            Joint(ROLL, "revolute", ey, offset=(0.0, 0.0, rR), mass=mB,
                  com=(xB, 0.0, -zB - rR), inertia=IB, name="pitch"),
            Joint(PITCH, "revolute", ey, mass=mR, inertia=IR, name="rear_wheel"),
            Joint(PITCH, "revolute", steer_axis, offset=S, mass=mH,
                  com=(xH - w - c, 0.0, -zH), inertia=IH, name="steer"),
            Joint(STEER, "revolute", ey, offset=(-c, 0.0, rF), mass=mF, inertia=IF,
                  name="front_wheel"),
        ]
        wheels = [Wheel(REAR, rR, held=False), Wheel(FRONT, rF, held=True)]
        slope = float(slope)
        if not -np.pi / 2 < slope < np.pi / 2:
            raise ValueError(f"Expected `slope` in (-pi/2, pi/2), got {slope!r}.")
        self.slope = slope
        gravity = g if slope == 0.0 else g * np.array([np.sin(slope), 0.0, -np.cos(slope)])
        super().__init__(joints, wheels, gravity=gravity, name="Bicycle", forces=forces)
        gap = self.tree.gaps(np.zeros(8))[1]
        if abs(gap) > 1e-12 * max(rR, rF):
            raise ValueError(f"The front wheel does not touch the ground upright (gap {gap:.3g} "
                             "m): check `wheelbase`, `trail` and the radii.")

    def __repr__(self):
        return (f"Bicycle(wheelbase={self.wheelbase:g}, trail={self.trail:g}, "
                f"steer_axis_tilt={self.steer_axis_tilt:.6g})")

    # -- configurations -------------------------------------------------------------------------
    def pitch(self, roll, steer, guess=0.0, tol=1e-15, max_iter=30):
        """The rear frame's pitch (rad) that puts the front wheel on the ground.

        Newton on ``gap(pitch) = 0``; the derivative of the gap is the front contact's
        vertical constraint row, pitch column.

        Raises
        ------
        ValueError
            No pitch within ``max_iter`` iterations (the front wheel cannot reach the ground,
            or the front wheel lies flat).
        """
        q = np.zeros(8)
        q[ROLL], q[STEER], q[PITCH] = roll, steer, guess
        for _ in range(max_iter):
            kin = self.tree.kinematics(q, np.zeros(8), bias=False)
            gap = self.tree.disk_contact(kin, 1)[4][2]
            A = self.tree.constraint_matrix(q, kin)
            slope = A[4, PITCH]
            if not np.isfinite(gap) or slope == 0:
                break
            delta = gap / slope
            q[PITCH] -= delta
            if abs(delta) <= tol * max(1.0, abs(q[PITCH])):
                return float(q[PITCH])
        raise ValueError(
            f"The front wheel cannot touch the ground at roll {roll!r} and steer {steer!r} "
            "(no pitch found)."
        )

    def velocity(self, q, roll_rate, steer_rate, rear_wheel_rate):
        """The velocity ``v`` (8,) at ``q`` with the given independent rates, on the
        constraints (:meth:`Articulated.rates` for these three, without its checks)."""
        A = self.tree.constraint_matrix(q)
        v = np.zeros(8)
        v[list(INDEPENDENT)] = roll_rate, steer_rate, rear_wheel_rate
        v[list(DEPENDENT)] = np.linalg.solve(A[:, list(DEPENDENT)], -A[:, list(INDEPENDENT)]
                                             @ v[list(INDEPENDENT)])
        return v

    def state(self, speed=0.0, roll=0.0, steer=0.0, roll_rate=0.0, steer_rate=0.0, yaw=0.0,
              position=(0.0, 0.0)):
        """The consistent ``(q, v)`` (each (8,)) of a bicycle in motion.

        Parameters
        ----------
        speed : float
            Forward speed of the rear contact point, m/s (along the heading).
        roll, steer : float
            Angles, rad (benchmark signs: positive leans and steers right).
        roll_rate, steer_rate : float
            rad/s.
        yaw : float
            Heading from the ``x`` axis, rad (about ``z``, counter-clockwise from above).
        position : (float, float)
            The rear contact point.
        """
        values = {"speed": speed, "roll": roll, "steer": steer, "roll_rate": roll_rate,
                      "steer_rate": steer_rate, "yaw": yaw}
        for name, value in values.items():
            if not np.isfinite(float(value)):
                raise ValueError(f"Expected `{name}` to be a finite number, got {value!r}.")
        position = np.asarray(position, dtype=float)
        if position.shape != (2,) or not np.all(np.isfinite(position)):
            raise ValueError(f"Expected `position` to be (x, y), got {position!r}.")
        if abs(roll) >= np.pi / 2:
            raise ValueError(f"Expected |roll| < pi/2 (a bicycle on its wheels), got {roll!r}.")
        q = np.zeros(8)
        q[YAW], q[ROLL], q[STEER] = yaw, roll, steer
        q[PITCH] = self.pitch(roll, steer)
        heading = np.array([np.cos(yaw), np.sin(yaw)])
        # the rear contact's speed is affine in the rear wheel rate: solve for it (at x = y =
        # 0: nothing but the positions depends on them)
        base = self.velocity(q, roll_rate, steer_rate, 0.0)
        unit = self.velocity(q, roll_rate, steer_rate, 1.0) - base
        rate = (speed - heading @ base[:2]) / (heading @ unit[:2])
        q[X], q[Y] = position
        return q, base + rate * unit

    # -- the continuous equations: Articulated's ----------------------------------------------
    def observables(self, saved):
        """The trajectory's fields: those of :meth:`Articulated.observables` (``q``, ``v``,
        ``energy``, ``work``, ``constraint_residual``, ``contacts``) and ``roll``, ``steer``, ``yaw``,
        ``pitch``, ``speed`` (the rear contact's), ``rear_contact`` and ``front_contact``
        (k, 3)."""
        fields = super().observables(saved)
        q, v = fields["q"], fields["v"]
        speed = v[:, X] * np.cos(q[:, YAW]) + v[:, Y] * np.sin(q[:, YAW])
        fields.update(roll=q[:, ROLL], steer=q[:, STEER], yaw=q[:, YAW], pitch=q[:, PITCH],
                      speed=speed, rear_contact=fields["contacts"][:, 0],
                      front_contact=fields["contacts"][:, 1])
        return fields

    # -- drawing --------------------------------------------------------------------------------
    def outline_parts(self, points=48, rims=True):
        """The polylines of the stick drawing, each fixed in one body of the tree.

        Parameters
        ----------
        points : int
            Segments of each rim.
        rims : bool
            Include the wheels' rims (a scene draws the wheels itself).

        Returns
        -------
        dict of str -> (int, ndarray of shape (k, 3))
            Part name -> (the joint whose body carries it, its points in that body's frame):
            ``rear_wheel``, ``front_wheel`` (rims, ``points + 1`` points, closed), ``frame``
            (rear axle, head tube, back), ``fork`` (head tube to front axle) and ``handlebar``.
        """
        t = np.linspace(0.0, 2 * np.pi, points + 1)
        lam, rR = self.steer_axis_tilt, self.rear_radius

        def rim(radius):
            return np.column_stack([radius * np.cos(t), np.zeros_like(t), radius * np.sin(t)])

        def head(height, from_steer_point):
            # the steer axis at `height` above the ground, in the rear frame (or in the front
            # frame, whose origin is the steer axis' ground point)
            x = -height * np.tan(lam)
            if from_steer_point:
                return (x, 0.0, height)
            return (self.wheelbase + self.trail + x, 0.0, height - rR)

        low, top = self.front_radius + 0.12, max(1.0, self.front_radius + 0.4)
        parts = {
            "frame": (PITCH, np.array([(0.0, 0.0, 0.0), head(low, False), head(top, False),
                                       (0.0, 0.0, 0.0)])),
            "fork": (STEER, np.array([head(top, True), head(low, True),
                                      (-self.trail, 0.0, self.front_radius)])),
            "handlebar": (STEER, np.array([np.add(head(top, True), (0.0, 0.25, 0.0)),
                                           np.add(head(top, True), (0.0, -0.25, 0.0))])),
        }
        if rims:
            parts = {"rear_wheel": (REAR, rim(rR)), "front_wheel": (FRONT, rim(self.front_radius)),
                     **parts}
        return parts

    def outline(self, q, points=48):
        """Polylines of a stick drawing of the bicycle at ``q`` (8,), in space (m): the parts of
        :meth:`outline_parts` placed by the tree's kinematics.

        Returns
        -------
        dict of str -> ndarray, shape (k, 3)
        """
        kin = self.tree.kinematics(np.asarray(q, dtype=float), np.zeros(8), bias=False)
        return {part: kin["o"][body] + pts @ kin["R"][body].T
                for part, (body, pts) in self.outline_parts(points).items()}

    # -- linearisation --------------------------------------------------------------------------
    def roll_steer_field(self, x, speed):
        """The nonlinear field restricted to roll and steer (see the module's notes).

        Parameters
        ----------
        x : array_like, shape (4,)
            ``(roll, steer, roll rate, steer rate)``.
        speed : float
            The rear wheel turns at ``speed / r_R``.

        Returns
        -------
        ndarray, shape (4,)
            ``(roll rate, steer rate, roll acceleration, steer acceleration)``.
        """
        if self.slope != 0.0:
            raise ValueError("The upright straight motion is steady on level ground only: "
                             "linearise a Bicycle with slope=0.")
        roll, steer, roll_rate, steer_rate = x
        q = np.zeros(8)
        q[ROLL], q[STEER] = roll, steer
        q[PITCH] = self.pitch(roll, steer)
        v = self.velocity(q, roll_rate, steer_rate, speed / self.rear_radius)
        dv = self.tree.accelerations(q, v)[0]  # the free bicycle: no drives
        return np.array([roll_rate, steer_rate, dv[ROLL], dv[STEER]])

    def linearized(self, speed, step=1e-3):
        """The state matrix (4, 4) of roll and steer about the upright straight motion at
        ``speed``, and an estimate of its entries' errors (4, 4), by
        :func:`nhphys.linearize.jacobian` of :meth:`roll_steer_field`."""
        from nhphys.linearize import jacobian

        return jacobian(lambda x: self.roll_steer_field(x, speed), np.zeros(4), step)

    def eigenvalues(self, speed, step=1e-3):
        """The four eigenvalues (sorted by real, then imaginary part) of the upright straight
        motion at ``speed`` and an estimate of their error (see :mod:`nhphys.linearize`)."""
        from nhphys.linearize import eigenvalues

        return eigenvalues(lambda x: self.roll_steer_field(x, speed), np.zeros(4), step)

    def self_stable_speeds(self, bracket_weave=(3.0, 5.0), bracket_capsize=(5.0, 8.0),
                           xtol=1e-13):
        """The weave and capsize speeds (m/s): where the weave pair's real part, and then the
        capsize eigenvalue, cross zero. Between them every eigenvalue has a negative real part.

        Raises
        ------
        ValueError
            No crossing inside a bracket.
        """
        from scipy.optimize import brentq

        def weave(v):
            lam = self.eigenvalues(v)[0]
            return np.max(lam.real[np.abs(lam.imag) > 1e-9])

        def capsize(v):
            lam = self.eigenvalues(v)[0]
            return np.max(lam.real[np.abs(lam.imag) <= 1e-9])

        out = []
        for f, bracket, name in ((weave, bracket_weave, "weave"),
                                 (capsize, bracket_capsize, "capsize")):
            lo, hi = bracket
            if np.sign(f(lo)) == np.sign(f(hi)):
                raise ValueError(f"No {name} speed in {bracket}: the real part does not change "
                                 "sign there.")
            out.append(brentq(f, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps))
        return tuple(out)
