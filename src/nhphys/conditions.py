"""Initial conditions: one vocabulary for :func:`nhphys.simulate` and :meth:`nhphys.Scene.add_body`.

Every built-in system takes its initial state under the same names, the scene's natural words,
whether it is simulated alone or placed in a scene:

================  =============================  ============================================
name              systems                        meaning (default)
================  =============================  ============================================
``orientation``   Suslov, RollingBody            3x3 rotation, body to space, or a unit
                                                 quaternion ``(w, x, y, z)`` (the identity)
``omega``         Suslov, RollingBody            body angular velocity, shape (3,) (zero; for
                                                 Suslov exactly one of ``omega``, ``momentum``)
``momentum``      Suslov                         body angular momentum, shape (3,)
``position``      RollingBody                    a point of the ground where the body touches
                                                 it, shape (3,) (the origin)
``height``        RollingBody (``lift_off``)     start that far above ``position``, along the
                                                 ground's normal there, in flight (0)
``velocity``      RollingBody (``lift_off``)     the centre's velocity in flight, shape (3,)
                                                 (at rest; only with ``height`` > 0)
``position``      KnifeEdge, VerticalDisk        ``(x, y)`` of the contact point in the plane's
                                                 coordinates (the origin)
``heading``       KnifeEdge, VerticalDisk        angle of the blade (the disk's plane) from the
                                                 ``x`` axis, rad (0)
``velocity``      KnifeEdge                      speed of the contact point along the blade (0)
``turning_rate``  KnifeEdge, VerticalDisk        ``d heading / dt``, rad/s (0)
``phi``           VerticalDisk                   rolling angle, rad (0)
``spin``          VerticalDisk                   rolling rate ``d phi / dt``, rad/s (0)
``q``, ``v``      ContactOscillator,             coordinates and velocities, shape (n,)
                  ConstrainedMechanicalSystem,   (required)
                  Articulated
``speed``, ...    Bicycle                        ``speed`` (of the rear wheel's ground point),
                                                 ``roll``, ``steer``, ``roll_rate``,
                                                 ``steer_rate``, ``yaw``, ``position`` (zero)
================  =============================  ============================================

The earlier spellings stay accepted as aliases: ``R0`` (orientation), ``omega0`` (omega; the
turning rate for the planar systems), ``momentum0``, ``ground_point`` (a rolling body's
position), ``pose0 = (x, y, heading)``, ``velocity0``, ``phi0``, ``spin0``, ``q0``, ``v0``; for the
knife edge also ``omega``, as the body angular velocity ``(0, 0, turning_rate)`` or its ``z``
component alone (the knife edge's body ``z`` axis is the plane's normal, the axis it turns about).

A name given as ``None`` means its default. An unknown or misspelt name is a ``TypeError`` naming
the system and the accepted names; a name given twice (``R0`` and ``orientation``) is one too.
This module is the one place where names are checked: :func:`nhphys.simulate` and
:meth:`nhphys.Scene.add_body` both call :func:`resolve` (which also checks each value's kind:
shape, finite, a rotation, under the name given), then :func:`start_arguments` turns the result
into the system's own keywords, which ``integrator.start`` takes. What depends on the system (a
velocity violating a constraint, a body that cannot touch its ground) is checked by the system
when it starts.

A system class outside this table takes its keywords unchanged, unless it declares its own
vocabulary as a class attribute ``initial_conditions = Vocabulary(...)``.
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nhphys._validation import as_float_array, as_rotation, as_vector3

# -- value parsers: (value, name the user gave) -> value ------------------------------------------

def as_orientation(value, name="orientation"):
    """A rotation (3, 3) from a 3x3 rotation matrix or a unit quaternion ``(w, x, y, z)``.

    Raises
    ------
    ValueError
        Not a rotation (orthogonal to 1e-9 with determinant +1), nor a quaternion of norm 1
        (to 1e-9), nor finite.
    TypeError
        ``None`` (which is not a rotation: leave the orientation out for the identity) or
        not numbers.
    """
    if value is None:
        raise TypeError(
            f"Expected `{name}` to be a 3x3 rotation or a unit quaternion (w, x, y, z), got "
            "None; leave it out for the identity."
        )
    arr = as_float_array(value, name)
    if arr.shape == (4,):
        norm = np.linalg.norm(arr)
        if abs(norm - 1.0) > 1e-9:
            raise ValueError(f"Expected `{name}` to be a unit quaternion, got norm {norm:.12g}.")
        w, x, y, z = arr
        return np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ])
    if arr.shape != (3, 3):
        raise ValueError(
            f"Expected `{name}` to be a 3x3 rotation or a unit quaternion (w, x, y, z), got "
            f"shape {arr.shape}."
        )
    return as_rotation(arr, name)


def as_real(value, name):
    """A finite real number (not a bool); a 0-d array counts as its number."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"Expected `{name}` to be a real number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"Expected `{name}` to be finite, got {value}.")
    return value


def as_point2(value, name):
    """``(x, y)``: a finite vector of shape (2,)."""
    arr = as_float_array(value, name)
    if arr.shape != (2,):
        raise ValueError(f"Expected `{name}` to have shape (2,) (x, y in the plane), got "
                         f"{arr.shape}.")
    return arr


def as_vector(value, name):
    """A finite vector of shape (n,)."""
    arr = as_float_array(value, name)
    if arr.ndim != 1:
        raise ValueError(f"Expected `{name}` to have shape (n,), got {arr.shape}.")
    return arr


def as_planar_omega(value, name):
    """The turning rate from a knife edge's body angular velocity ``(0, 0, w)`` or ``w`` alone."""
    if np.ndim(value) == 0:
        return as_real(value, name)
    omega = as_vector3(value, name)
    if omega[0] != 0.0 or omega[1] != 0.0:
        raise ValueError(
            f"Expected `{name}` to be (0, 0, turning rate): a knife edge turns only about the "
            f"plane's normal (its body z axis), got {omega.tolist()}."
        )
    return float(omega[2])


def split_pose(value, name):
    """``pose0 = (x, y, heading)`` -> ``{"position": (x, y), "heading": heading}``."""
    pose = as_float_array(value, name)
    if pose.shape != (3,):
        raise ValueError(f"Expected `{name}` to have shape (3,) (x, y, heading), got "
                         f"{pose.shape}.")
    return {"position": pose[:2].copy(), "heading": float(pose[2])}


# -- vocabularies -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Vocabulary:
    """The initial conditions one kind of system accepts.

    Parameters
    ----------
    conditions : dict
        Canonical name -> parser ``(value, given_name) -> value``, in documentation order.
    aliases : dict
        Old name -> canonical name, or -> ``(canonical names, splitter)`` where
        ``splitter(value, given_name)`` returns a dict of canonical values.
    start : callable
        ``start(values) -> dict``: the keywords of ``integrator.start`` from canonical values
        (only those given; the system supplies its defaults).
    alias_parsers : dict
        Parsers for aliases whose values differ from the canonical one's (``omega`` of a knife
        edge).
    hints : dict
        Name -> what to say when that name, which the system does not take, is given.
    """

    conditions: dict
    aliases: dict
    start: Callable[[dict], dict]
    alias_parsers: dict = field(default_factory=dict)
    hints: dict = field(default_factory=dict)

    @property
    def names(self):
        """Canonical names, in documentation order."""
        return tuple(self.conditions)

    def describe(self):
        """``"orientation, omega, momentum (also R0 -> orientation, ...)"``."""
        old = ", ".join(
            f"{a} -> {t if isinstance(t, str) else '/'.join(t[0])}"
            for a, t in self.aliases.items()
        )
        return ", ".join(self.names) + (f" (or the older {old})" if old else "")


def _renamed(mapping):
    """A ``start`` function renaming canonical keys to the system's keywords."""
    def start(values):
        return {mapping[k]: v for k, v in values.items()}
    return start


def _planar_start(extra):
    """``start`` for the planar systems: ``position`` and ``heading`` form ``pose0``."""
    def start(values):
        out = {}
        if "position" in values or "heading" in values:
            x, y = values.get("position", (0.0, 0.0))
            out["pose0"] = np.array([x, y, values.get("heading", 0.0)])
        for key, internal in extra.items():
            if key in values:
                out[internal] = values[key]
        return out
    return start


SUSLOV = Vocabulary(
    conditions={"orientation": as_orientation, "omega": as_vector3, "momentum": as_vector3},
    aliases={"R0": "orientation", "omega0": "omega", "momentum0": "momentum"},
    start=_renamed({"orientation": "R0", "omega": "omega0", "momentum": "momentum0"}),
)
ROLLING = Vocabulary(
    conditions={"orientation": as_orientation, "omega": as_vector3, "position": as_vector3,
                "height": as_real, "velocity": as_vector3},
    aliases={"R0": "orientation", "omega0": "omega", "ground_point": "position",
             "velocity0": "velocity"},
    start=_renamed({"orientation": "R0", "omega": "omega0", "position": "ground_point",
                    "height": "height", "velocity": "velocity0"}),
)
KNIFE_EDGE = Vocabulary(
    conditions={"position": as_point2, "heading": as_real, "velocity": as_real,
                "turning_rate": as_real},
    aliases={"pose0": (("position", "heading"), split_pose), "velocity0": "velocity",
             "omega0": "turning_rate", "omega": "turning_rate"},
    alias_parsers={"omega": as_planar_omega},
    start=_planar_start({"velocity": "velocity0", "turning_rate": "omega0"}),
)
VERTICAL_DISK = Vocabulary(
    conditions={"position": as_point2, "heading": as_real, "phi": as_real,
                "turning_rate": as_real, "spin": as_real},
    aliases={"pose0": (("position", "heading"), split_pose), "phi0": "phi",
             "omega0": "turning_rate", "spin0": "spin"},
    start=_planar_start({"phi": "phi0", "turning_rate": "omega0", "spin": "spin0"}),
    hints={"omega": "`omega` is a body angular velocity (3,); the disk's rates are "
                    "`turning_rate` and `spin`"},
)
COORDINATES = Vocabulary(
    conditions={"q": as_vector, "v": as_vector},
    aliases={"q0": "q", "v0": "v"},
    start=_renamed({"q": "q0", "v": "v0"}),
)
ARTICULATED = Vocabulary(
    conditions={"q": as_vector, "v": as_vector},
    aliases={"q0": "q", "v0": "v"},
    start=_renamed({"q": "q", "v": "v"}),
)
BICYCLE = Vocabulary(
    conditions={"speed": as_real, "roll": as_real, "steer": as_real, "roll_rate": as_real,
                "steer_rate": as_real, "yaw": as_real, "position": as_point2},
    aliases={},
    start=_renamed({name: name for name in ("speed", "roll", "steer", "roll_rate",
                                            "steer_rate", "yaw", "position")}),
    hints={"velocity": "the bicycle's forward speed is `speed`",
           "q": "a Bicycle starts from `speed`, `roll`, `steer`, their rates, `yaw` and "
                "`position`; Bicycle.state(...) gives its q and v"},
)


def vocabulary(system):
    """The :class:`Vocabulary` of ``system``, or ``None`` for a system outside the table."""
    own = getattr(type(system), "initial_conditions", None)
    if isinstance(own, Vocabulary):
        return own
    from nhphys import systems

    table = [
        ("Suslov", SUSLOV), ("RollingBody", ROLLING), ("KnifeEdge", KNIFE_EDGE),
        ("VerticalDisk", VERTICAL_DISK), ("ContactOscillator", COORDINATES),
        ("ConstrainedMechanicalSystem", COORDINATES),
    ]
    for class_name, vocab in table:
        cls = getattr(systems, class_name, None)
        if cls is not None and isinstance(system, cls):
            return vocab
    return None


def resolve(system, given, owner=None):
    """Check the names of ``given`` initial conditions against ``system``'s vocabulary.

    Parameters
    ----------
    system : object
        A system from :mod:`nhphys.systems` (or one declaring ``initial_conditions``).
    given : dict
        Keyword arguments as the user wrote them (canonical names or aliases).
    owner : str, optional
        Who they belong to in messages (default: the system's class name); a scene passes
        ``"body 'top' (Suslov)"``.

    Returns
    -------
    dict
        Canonical name -> parsed value, for the names given (``None`` values left out). For a
        system outside the table, ``given`` unchanged.

    Raises
    ------
    TypeError
        An unknown name (the message lists the accepted ones and suggests the closest), or two
        names for the same condition.
    ValueError, TypeError
        A value of the wrong kind (shape, not finite, not a rotation), naming it as given.
    """
    vocab = vocabulary(system)
    if vocab is None:
        return dict(given)
    owner = type(system).__name__ if owner is None else owner
    known = set(vocab.conditions) | set(vocab.aliases)
    unknown = [k for k in given if k not in known]
    if unknown:
        hints = []
        for k in unknown:
            if k in vocab.hints:
                hints.append(vocab.hints[k])
                continue
            close = difflib.get_close_matches(k, sorted(known), n=1, cutoff=0.6)
            if close:
                hints.append(f"`{k}` looks like `{close[0]}`")
        names = ", ".join(f"`{k}`" for k in unknown)
        raise TypeError(
            f"Unexpected initial condition{'s' if len(unknown) > 1 else ''} {names} for "
            f"{owner}; it accepts {vocab.describe()}."
            + (f" ({'; '.join(hints)}.)" if hints else "")
        )
    values, source = {}, {}
    for key, value in given.items():
        if value is None:  # None means the default
            continue
        target = vocab.aliases.get(key, key)
        if isinstance(target, tuple):
            canonical, split = target
            parsed = split(value, key)
        else:
            canonical = (target,)
            parse = vocab.alias_parsers.get(key, vocab.conditions[target])
            parsed = {target: parse(value, key)}
        for name in canonical:
            if name in source:
                raise TypeError(
                    f"Initial condition `{name}` of {owner} given twice, as `{source[name]}` and "
                    f"as `{key}`; give it once."
                )
            source[name] = key
        values.update(parsed)
    return values


def start_arguments(system, values):
    """The keywords of ``integrator.start(system, ...)`` from :func:`resolve`'s result."""
    vocab = vocabulary(system)
    return dict(values) if vocab is None else vocab.start(values)


def describe(system):
    """The accepted names of ``system``'s initial conditions, for messages and help."""
    vocab = vocabulary(system)
    return "its own keywords" if vocab is None else vocab.describe()
