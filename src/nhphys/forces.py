"""Force elements: push, pull, drive, damp and brake a body.

Attach a list of elements to a system (``RollingBody(body, ground, forces=[...])``) or to a
scene body (``scene.add_body(..., forces=[...])``). Every element acts on one rigid body:

==========================  ==================================================================
element                     what it applies
==========================  ==================================================================
:class:`Force`              a force at a body point (or the centre of mass), constant,
                            scheduled or a Python callable of ``(t, state)``
:class:`Torque`             a torque about the centre of mass, likewise
:class:`Spring`             a linear spring from a body point to a fixed point (a potential)
:class:`UniformField`       a constant force on the centre of mass, such as wind (a potential)
:class:`LinearDrag`         viscous drag ``-c v`` on the centre of mass
:class:`AngularDamping`     viscous damping ``-c Omega`` of the angular velocity, about all
                            axes, or only about the contact normal (spin friction:
                            :func:`SpinFriction`)
:class:`RollingResistance`  a torque ``-mu N Omega_t`` opposing the rolling rate
                            ``Omega_t`` (the angular velocity off the contact normal),
                            proportional to the normal contact force ``N``
:class:`Motor`              a torque about a body axis (a wheel's axle), constant or scheduled,
                            optionally speed-controlled: ``T(t) + gain (w(t) - Omega . e)``
:class:`JointMotor`         the same on a joint of an articulated system
                            (``nhphys.systems.Articulated``, ``Bicycle``): the generalized
                            force ``T(t) + gain (w(t) - dq_j/dt)``
:class:`JointSpring`        a linear spring on a joint's coordinate: the potential
                            ``k (q_j - rest)^2 / 2``
==========================  ==================================================================

Potentials (springs, fields) enter the energy the trajectory reports (``energy``); every other
element's work is accumulated in the trajectory's ``work``, so that ``energy - work`` is the
conserved quantity to check. The discretisation (the symmetric discrete Lagrange-d'Alembert
pair) and the equations are in :mod:`nhphys.twins.forces` and ``docs/forces.md``.

Built-in elements are compiled into the kernel's step; a Python callable runs on the Python
twin of the step, and the trajectory's ``meta["backend"]`` says so.
"""

import numbers

import numpy as np

from nhphys._validation import as_float_array, as_vector3

__all__ = [
    "AngularDamping",
    "Force",
    "ForceElement",
    "JointMotor",
    "JointSpring",
    "LinearDrag",
    "Motor",
    "RollingResistance",
    "Schedule",
    "SpinFriction",
    "Spring",
    "Torque",
    "UniformField",
    "build_force_set",
    "check_forces",
]

FRAMES = ("space", "body")


def _coefficient(value, name, owner):
    """A finite number >= 0 (a damping coefficient, a stiffness)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: expected `{name}` to be a real number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{owner}: expected `{name}` to be a finite number >= 0, got {value}.")
    return value


def _named(owner, func, *args):
    """``func(*args)`` with ``owner:`` in front of a TypeError/ValueError's message."""
    try:
        return func(*args)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{owner}: {exc}") from None


class Schedule:
    """A value tabulated in time: piecewise linear or cubic between the given times.

    Before the first time the schedule holds its first value, after the last its last value.

    Parameters
    ----------
    times : array_like, shape (m,)
        Strictly increasing, finite; at least 2 for ``"cubic"``.
    values : array_like, shape (m,) or (m, d)
        Finite.
    kind : {"linear", "cubic"}
        ``"cubic"`` is the not-a-knot cubic spline of :class:`scipy.interpolate.CubicSpline`.

    Examples
    --------
    >>> push = Schedule([0.0, 1.0, 2.0], [[0, 0, 0], [1.0, 0, 0], [0, 0, 0]])
    >>> push(0.5)
    array([0.5, 0. , 0. ])
    """

    def __init__(self, times, values, kind="linear"):
        times = as_float_array(times, "times")
        values = as_float_array(values, "values")
        if times.ndim != 1 or times.size < 1:
            raise ValueError(f"Expected `times` to be a non-empty 1-d array, got shape "
                             f"{times.shape}.")
        if values.ndim not in (1, 2) or values.shape[0] != times.size:
            raise ValueError(f"Expected `values` to have shape ({times.size},) or "
                             f"({times.size}, d), got {values.shape}.")
        steps = np.diff(times)
        if np.any(steps <= 0):
            where = int(np.flatnonzero(steps <= 0)[0])
            raise ValueError(
                f"Expected `times` to be strictly increasing, got times[{where}] = "
                f"{times[where]} and times[{where + 1}] = {times[where + 1]}."
            )
        if kind not in ("linear", "cubic"):
            raise ValueError(f"Expected `kind` to be 'linear' or 'cubic', got {kind!r}.")
        if kind == "cubic" and times.size < 2:
            raise ValueError("Expected at least 2 `times` for a cubic schedule.")
        self.times = times
        self.values = values
        self.kind = kind
        self.dim = 1 if values.ndim == 1 else values.shape[1]

    def coefficients(self):
        """Per interval and component, the cubic's coefficients in ascending powers of
        ``t - times[i]``: ndarray (max(m - 1, 1), d, 4)."""
        v = self.values.reshape(self.times.size, self.dim)
        m = self.times.size
        if m == 1:
            out = np.zeros((1, self.dim, 4))
            out[0, :, 0] = v[0]
            return out
        if self.kind == "linear":
            out = np.zeros((m - 1, self.dim, 4))
            out[:, :, 0] = v[:-1]
            out[:, :, 1] = np.diff(v, axis=0) / np.diff(self.times)[:, None]
            return out
        from scipy.interpolate import CubicSpline

        spline = CubicSpline(self.times, v, axis=0)
        return np.ascontiguousarray(np.moveaxis(spline.c[::-1], 0, -1))  # (m - 1, d, 4)

    def __call__(self, t):
        """The value at time ``t`` (the same arithmetic as the kernels)."""
        from nhphys.twins.forces import evaluate_schedule

        coef = self.coefficients().ravel()
        sched = np.array([[0, self.times.size, 0, self.dim]], dtype=np.intp)
        out = np.zeros(self.dim)
        evaluate_schedule(self.times, coef, sched, 0, float(t), out)
        return out if self.values.ndim == 2 else out[0]

    def __repr__(self):
        # the digest tells schedules apart where runs are compared by their settings (resume)
        import hashlib

        digest = hashlib.sha256(self.times.tobytes() + self.values.tobytes()).hexdigest()[:12]
        return (f"Schedule({self.times.size} times, dim={self.dim}, kind={self.kind!r}, "
                f"data={digest})")


def _value(value, dim, owner):
    """A constant (as a one-entry Schedule), a Schedule of dimension ``dim``, or a callable."""
    if isinstance(value, Schedule):
        if value.dim != dim or (dim > 1 and value.values.ndim != 2):
            raise ValueError(f"{owner}: expected a schedule of {dim} component(s), got "
                             f"{value!r}.")
        return value
    if callable(value):
        return value
    if dim == 1:
        arr = _named(owner, as_float_array, value, "value")
        if arr.shape != ():
            raise ValueError(f"{owner}: expected a number, got shape {arr.shape}.")
        return Schedule([0.0], [float(arr)])
    arr = _named(owner, as_vector3, value, "value")
    return Schedule([0.0], arr[None])


def _frame(frame, owner):
    if frame not in FRAMES:
        raise ValueError(f"{owner}: expected `frame` to be 'space' or 'body', got {frame!r}.")
    return frame


class ForceElement:
    """Base of the force elements (see the module docstring)."""

    potential = False  # True for elements whose energy is part of ``energy``
    uses_callable = False  # True when a Python callable is evaluated at every step

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


class Force(ForceElement):
    """A force at a body point.

    Parameters
    ----------
    value : array_like (3,), Schedule or callable
        Newtons. A callable is called as ``value(t, state)`` with ``state`` a dict of ``R``
        (3, 3), ``position`` (3,), ``velocity`` (3,) and ``omega`` (3,) (body frame), and
        returns shape (3,); it runs on the Python twin. The velocities it sees are those at
        the start of the step (the pose is the current one), so a force that depends on the
        velocities is first order in time: use :class:`LinearDrag` for drag.
    point : array_like (3,) or None
        The body point (body frame, from the centre of mass); ``None`` is the centre of mass.
    frame : {"space", "body"}
        The frame of ``value``: ``"body"`` turns with the body (a thruster).
    """

    def __init__(self, value, point=None, frame="space"):
        owner = "Force"
        self.value = _value(value, 3, owner)
        self.point = None if point is None else _named(owner, as_vector3, point, "point")
        self.frame = _frame(frame, owner)
        self.uses_callable = callable(self.value) and not isinstance(self.value, Schedule)


class Torque(ForceElement):
    """A torque about the centre of mass.

    Parameters
    ----------
    value : array_like (3,), Schedule or callable
        Newton metres; a callable as for :class:`Force`.
    frame : {"body", "space"}
    """

    def __init__(self, value, frame="body"):
        owner = "Torque"
        self.value = _value(value, 3, owner)
        self.frame = _frame(frame, owner)
        self.uses_callable = callable(self.value) and not isinstance(self.value, Schedule)


class Spring(ForceElement):
    """A linear spring from a body point to a fixed point in space.

    Energy ``k (|a + R r - anchor| - rest_length)^2 / 2``.

    Parameters
    ----------
    stiffness : float
        ``k`` >= 0, N/m.
    anchor : array_like (3,)
        The fixed end (space).
    point : array_like (3,)
        The body end (body frame, from the centre of mass).
    rest_length : float
        >= 0.
    """

    potential = True

    def __init__(self, stiffness, anchor, point=(0.0, 0.0, 0.0), rest_length=0.0):
        owner = "Spring"
        self.stiffness = _coefficient(stiffness, "stiffness", owner)
        self.anchor = _named(owner, as_vector3, anchor, "anchor")
        self.point = _named(owner, as_vector3, point, "point")
        self.rest_length = _coefficient(rest_length, "rest_length", owner)


class UniformField(ForceElement):
    """A constant force on the centre of mass (a uniform field other than gravity: a steady
    wind, a tilt of the apparent gravity); energy ``-force . a``.

    Parameters
    ----------
    force : array_like (3,)
        Newtons (space frame).
    """

    potential = True

    def __init__(self, force):
        self.force = _named("UniformField", as_vector3, force, "force")


class LinearDrag(ForceElement):
    """Viscous drag ``-c v`` on the centre of mass.

    Parameters
    ----------
    coefficient : float
        ``c`` >= 0, N s/m.
    """

    def __init__(self, coefficient):
        self.coefficient = _coefficient(coefficient, "coefficient", "LinearDrag")


class AngularDamping(ForceElement):
    """Viscous damping of the angular velocity: the torque ``-c Omega`` (``about="all"``) or
    ``-c (Omega . n) n`` about the contact normal ``n`` only (``about="normal"``: spin
    friction, for bodies in contact).

    Parameters
    ----------
    coefficient : float
        ``c`` >= 0, N m s.
    about : {"all", "normal"}
    """

    def __init__(self, coefficient, about="all"):
        owner = "AngularDamping"
        self.coefficient = _coefficient(coefficient, "coefficient", owner)
        if about not in ("all", "normal"):
            raise ValueError(f"{owner}: expected `about` to be 'all' or 'normal', got {about!r}.")
        self.about = about


def SpinFriction(coefficient):  # noqa: N802 - reads as an element
    """Viscous spin friction: :class:`AngularDamping` about the contact normal."""
    return AngularDamping(coefficient, about="normal")


class RollingResistance(ForceElement):
    """A torque ``-mu N Omega_t`` opposing the rolling rate: ``Omega_t`` is the angular velocity
    off the contact normal, ``N`` the normal contact force.

    Parameters
    ----------
    coefficient : float
        ``mu`` >= 0, in metre seconds (a torque per newton of normal force per rad/s).
    """

    def __init__(self, coefficient):
        self.coefficient = _coefficient(coefficient, "coefficient", "RollingResistance")


class Motor(ForceElement):
    """A motor torque about a body axis ``e``: ``(T(t) + gain (w(t) - Omega . e)) e``.

    Parameters
    ----------
    torque : float, Schedule or None
        ``T``, N m (a one-component schedule for a time profile).
    axis : array_like (3,)
        The axis ``e`` in the body frame (normalised): a disk's or wheel's axle is ``(0, 0, 1)``.
    target_speed : float, Schedule or None
        ``w``, rad/s, for speed control.
    gain : float
        >= 0, N m s: the speed controller's gain (a viscous coupling to the target speed).
    """

    def __init__(self, torque=None, axis=(0.0, 0.0, 1.0), target_speed=None, gain=0.0):
        owner = "Motor"
        self.torque, self.target_speed, self.gain = _drive(owner, torque, target_speed, gain)
        axis = _named(owner, as_vector3, axis, "axis")
        if np.linalg.norm(axis) == 0:
            raise ValueError(f"{owner}: expected `axis` to be a nonzero vector.")
        self.axis = axis / np.linalg.norm(axis)
        self._axis_given = axis  # what a scene file writes: normalising twice may move an ulp


def _drive(owner, torque, target_speed, gain):
    """``(torque, target_speed, gain)`` of a motor, validated: numbers or one-component
    schedules (as Schedules), at least one of the two, and a gain > 0 with a target speed."""
    if torque is None and target_speed is None:
        raise ValueError(f"{owner}: expected a `torque`, a `target_speed`, or both.")
    values = []
    for name, value in (("torque", torque), ("target_speed", target_speed)):
        value = None if value is None else _value(value, 1, owner)
        if value is not None and not isinstance(value, Schedule):
            raise TypeError(f"{owner}: expected `{name}` to be a number or a Schedule, "
                            f"got {value!r}.")
        values.append(value)
    gain = _coefficient(gain, "gain", owner)
    if target_speed is not None and gain == 0:
        raise ValueError(f"{owner}: a `target_speed` needs a `gain` > 0.")
    return values[0], values[1], gain


class JointMotor(ForceElement):
    """A drive on a joint of an articulated system (``nhphys.systems.Articulated``): the
    generalized force ``T(t) + gain (w(t) - dq_j/dt)`` on joint ``j`` (a torque, N m, on a
    revolute joint; a force, N, on a prismatic one).

    Parameters
    ----------
    joint : int or str
        The joint's index, or its name (``Joint(..., name=...)``; the bicycle's are
        ``"rear_wheel"``, ``"steer"``, ``"front_wheel"``, ...).
    torque : float, Schedule or None
        ``T`` (a one-component schedule for a time profile).
    target_speed : float, Schedule or None
        ``w``, the joint rate the speed control drives to.
    gain : float
        >= 0: the speed controller's gain (a viscous coupling to ``w``; with ``target_speed=0``
        it is viscous damping of the joint).
    """

    def __init__(self, joint, torque=None, target_speed=None, gain=0.0):
        owner = "JointMotor"
        self.joint = _joint(owner, joint)
        self.torque, self.target_speed, self.gain = _drive(owner, torque, target_speed, gain)


class JointSpring(ForceElement):
    """A linear spring on a joint of an articulated system: the potential
    ``stiffness (q_j - rest)^2 / 2`` of joint ``j``'s coordinate (a torsion spring on a
    revolute joint, N m/rad; a linear one on a prismatic joint, N/m).

    It enters the discrete Lagrangian (the midpoint rule evaluates its gradient at each step's
    midpoint, exact for a quadratic) and the system's energy, so that with no other force the
    energy stays bounded; its work is not in ``work``.

    Parameters
    ----------
    joint : int or str
        The coordinate's index, or its joint's name.
    stiffness : float
        >= 0.
    rest : float
        The coordinate where the spring is relaxed (rad or m).
    """

    potential = True

    def __init__(self, joint, stiffness, rest=0.0):
        owner = "JointSpring"
        self.joint = _joint(owner, joint)
        self.stiffness = _coefficient(stiffness, "stiffness", owner)
        if isinstance(rest, bool) or not isinstance(rest, numbers.Real) \
                or not np.isfinite(float(rest)):
            raise ValueError(f"{owner}: expected `rest` to be a finite number, got {rest!r}.")
        self.rest = float(rest)


def _joint(owner, joint):
    """A joint's index (>= 0) or name, checked."""
    if isinstance(joint, str):
        if not joint:
            raise ValueError(f"{owner}: expected a joint's name, got an empty string.")
        return joint
    if isinstance(joint, bool) or not isinstance(joint, (int, np.integer)) or joint < 0:
        raise ValueError(f"{owner}: expected `joint` to be a joint index >= 0 or a joint's "
                         f"name, got {joint!r}.")
    return int(joint)


def build_joint_drives(motors, joints, module):
    """The ``JointDrives`` of ``module`` (``nhphys_ext.multibody`` or
    :mod:`nhphys.twins.multibody`) of validated :class:`JointMotor` elements acting on the
    joints of index ``joints`` (one per motor)."""
    table = _Table()
    rows, gains = [], []
    for motor, joint in zip(motors, joints):
        rows.append([joint,
                     -1 if motor.torque is None else table.add(motor.torque),
                     -1 if motor.target_speed is None else table.add(motor.target_speed)])
        gains.append(motor.gain)
    breaks, coef, sched = table.arrays()
    return module.JointDrives(breaks, coef, sched, np.array(rows, dtype=np.intp).reshape(-1, 3),
                              np.array(gains, dtype=float))


def check_forces(forces, owner="forces"):
    """The validated tuple of force elements (``None`` is none).

    Raises
    ------
    TypeError
        An entry that is not a :class:`ForceElement` (naming its index).
    """
    if forces is None:
        return ()
    if isinstance(forces, ForceElement):
        forces = [forces]
    try:
        forces = tuple(forces)
    except TypeError:
        raise TypeError(f"Expected `{owner}` to be a list of force elements, got "
                        f"{forces!r}.") from None
    for i, element in enumerate(forces):
        if not isinstance(element, ForceElement):
            raise TypeError(f"Expected `{owner}[{i}]` to be a force element of nhphys.forces, "
                            f"got {element!r}.")
    return forces


def uses_callables(forces):
    """True when an element evaluates a Python callable (the run then steps on the twin)."""
    return any(element.uses_callable for element in forces)


class _Table:
    """The schedules of a force set, concatenated (see :mod:`nhphys.twins.forces`)."""

    def __init__(self):
        self.breaks, self.coef, self.rows = [], [], []

    def add(self, schedule):
        coef = schedule.coefficients()
        self.rows.append([sum(b.size for b in self.breaks), schedule.times.size,
                          sum(c.size for c in self.coef), schedule.dim])
        self.breaks.append(schedule.times)
        self.coef.append(coef.ravel())
        return len(self.rows) - 1

    def arrays(self):
        cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0))
        return cat(self.breaks), cat(self.coef), np.array(self.rows, dtype=np.intp).reshape(-1, 4)


def build_force_set(forces, module):
    """The ``ForceSet`` of ``module`` (``nhphys_ext.forces`` or :mod:`nhphys.twins.forces`) of
    the validated elements ``forces``; callables are kept on the twin's set only."""
    table = _Table()
    force_rows, force_points, torque_rows, springs, motors, motor_rows = [], [], [], [], [], []
    callables = []
    field = np.zeros(3)
    drag = spin_all = spin_normal = rolling = 0.0
    for element in forces:
        if isinstance(element, (Force, Torque)) and element.uses_callable:
            callables.append(element)
        elif isinstance(element, Force):
            point = np.zeros(3) if element.point is None else element.point
            force_rows.append([table.add(element.value), FRAMES.index(element.frame),
                               element.point is not None, 0])
            force_points.append(point)
        elif isinstance(element, Torque):
            torque_rows.append([table.add(element.value), FRAMES.index(element.frame)])
        elif isinstance(element, Spring):
            springs.append([*element.point, *element.anchor, element.stiffness,
                            element.rest_length])
        elif isinstance(element, UniformField):
            field = field + element.force
        elif isinstance(element, LinearDrag):
            drag += element.coefficient
        elif isinstance(element, AngularDamping):
            if element.about == "all":
                spin_all += element.coefficient
            else:
                spin_normal += element.coefficient
        elif isinstance(element, RollingResistance):
            rolling += element.coefficient
        elif isinstance(element, Motor):
            motors.append([*element.axis, element.gain, 0.0])
            motor_rows.append([
                -1 if element.torque is None else table.add(element.torque),
                -1 if element.target_speed is None else table.add(element.target_speed), 0,
            ])
        else:  # pragma: no cover - check_forces admits only the classes above
            raise TypeError(f"Unknown force element {element!r}.")
    breaks, coef, sched = table.arrays()
    as2d = (lambda rows, width, dtype=float: np.array(rows, dtype=dtype).reshape(-1, width))
    force_set = module.ForceSet(
        breaks, coef, sched, as2d(force_rows, 4, np.intp), as2d(force_points, 3),
        as2d(torque_rows, 2, np.intp), as2d(springs, 8), field, as2d(motors, 5),
        as2d(motor_rows, 3, np.intp), drag, spin_all, spin_normal, rolling,
    )
    if callables:
        force_set.callables = tuple(callables)
    return force_set
