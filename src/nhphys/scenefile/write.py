"""Writing scene files: a :class:`~nhphys.Scene` -> data -> TOML text.

:func:`describe` turns a scene into the tables of the format (the inverse of
:func:`nhphys.scenefile.read.build`), :func:`dumps` writes them as TOML. Numbers are written
with Python's shortest round-trip ``repr``, which TOML reads back to the same double, so a
scene read back from its file is the same scene to the last bit: a run of it gives the same
arrays. Only what the format can describe is written; a scene holding anything else (a surface
made from Python functions, a custom display mesh, an integrator with options that have no
name) raises ``ValueError`` naming the body or ground, never a file that would build another
scene.
"""

from __future__ import annotations

import math
import re

import numpy as np

from nhphys.scenefile.read import (
    FORMAT,
    INITIAL,
    MAX_GRID_SIDE,
    MAX_KNOTS,
    MAX_SAMPLES,
    MAX_SCHEDULE_TIMES,
    RESOLUTION_RANGE,
    RUN,
    SceneFileError,
    read_run,
)

HEADER = ("nhphys scene file (format {format}): data only, no code runs when it is read.\n"
          "Run it with `nhphys run FILE.toml`; the format is described in docs/scene-files.md.")
LINE_WIDTH = 96


def _same(value, default):
    """True when the float array ``value`` is ``default`` bit for bit (``-0.0`` is not ``0.0``,
    so leaving it out could change a run)."""
    a = np.asarray(value, dtype=float)
    b = np.asarray(default, dtype=float)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _floats(value):
    """Nested lists of Python floats from an array."""
    return np.asarray(value, dtype=float).tolist()


def _orientation(surface):
    return "outward" if surface.orientation == 1 else "inward"


def _placement(out, surface, center=True):
    """``center``, ``rotation`` (when not the defaults) and ``orientation`` (when inward)."""
    if center and not _same(surface.center, np.zeros(3)):
        out["center"] = _floats(surface.center)
    if center and not _same(surface.rotation, np.eye(3)):
        out["rotation"] = _floats(surface.rotation)
    if surface.orientation != 1:
        out["orientation"] = _orientation(surface)
    return out


class NotDescribable(ValueError):
    """A scene holds something a scene file cannot describe (a ``ValueError``)."""


def describe_surface(surface, owner):
    """The table of a ground surface or a body shape; ``NotDescribable`` naming ``owner``."""
    from nhphys.shapes import DEFAULT_FLAT_ANGLE, DEFAULT_SIDE_ANGLE, Cylinder, Disk, Wheel
    from nhphys.surfaces import (
        Ellipsoid,
        HeightField,
        Paraboloid,
        ParametricSurface,
        Plane,
        Sphere,
        SurfaceOfRevolution,
        Torus,
    )

    kind = type(surface)
    source = getattr(surface, "source", None) or {}
    if kind is Plane:
        out = {"type": "plane"}
        if not _same(surface.point0, np.zeros(3)):
            out["point"] = _floats(surface.point0)
        normal = source.get("normal", surface.unit_normal)
        if not _same(normal, [0.0, 0.0, 1.0]):
            out["normal"] = _floats(normal)
        if surface.extent != 1.0:
            out["extent"] = float(surface.extent)
        return _placement(out, surface, center=False)
    if kind is Sphere:
        return _placement({"type": "sphere", "radius": float(surface.radius)}, surface)
    if kind is Ellipsoid:
        return _placement({"type": "ellipsoid", "semi_axes": _floats(surface.semi_axes)},
                          surface)
    if kind is Torus:
        return _placement({"type": "torus", "major_radius": float(surface.major_radius),
                           "minor_radius": float(surface.minor_radius)}, surface)
    if kind is Paraboloid:
        out = {"type": "paraboloid", "a": float(surface.a), "b": float(surface.b)}
        if surface.kind != "elliptic":
            out["kind"] = surface.kind
        if surface.extent != 1.0:
            out["extent"] = float(surface.extent)
        return _placement(out, surface)
    if kind is HeightField:
        out = {"type": "height_field"}
        if "function" in source:
            out["function"] = source["function"]
            nx, ny = source["samples"]
            out["samples"] = nx if nx == ny else [nx, ny]
        else:
            if max(surface.heights.shape) > MAX_GRID_SIDE:
                raise NotDescribable(
                    f"{owner}: a height field of {surface.heights.shape} samples is larger than a "
                    f"scene file holds ({MAX_GRID_SIDE} per side)")
            out["heights"] = _floats(surface.heights)
        out["x_range"] = list(map(float, surface.x_range))
        out["y_range"] = list(map(float, surface.y_range))
        return _placement(out, surface)
    if kind is SurfaceOfRevolution:
        out = {"type": "surface_of_revolution"}
        if "radius" in source:
            out["radius"] = source["radius"]
            out["height"] = source["height"]
            out["t_range"] = list(map(float, surface.t_range))
        elif "samples" in source:
            samples = source["samples"]
            if len(samples["t"]) > MAX_SAMPLES:
                raise NotDescribable(f"{owner}: more profile samples than a scene file holds "
                                     f"({MAX_SAMPLES})")
            out["samples"] = {k: _floats(samples[k]) for k in ("t", "radius", "height")}
        else:
            raise NotDescribable(
                f"{owner}: a surface of revolution made from Python functions (or sympy "
                "objects) cannot be written as data; give its radius and height as expression "
                "strings")
        if surface.periodic:
            out["periodic"] = True
        if len(surface.knots) > MAX_KNOTS:
            raise NotDescribable(f"{owner}: more profile knots than a scene file holds "
                                 f"({MAX_KNOTS})")
        out["knots"] = len(surface.knots)
        return _placement(out, surface)
    if kind is ParametricSurface:
        if "x" not in source:
            raise NotDescribable(
                f"{owner}: a parametric surface made from Python functions (or sympy objects) "
                "cannot be written as data; build it with ParametricSurface.from_expressions "
                "and expression strings")
        out = {"type": "parametric", "x": source["x"], "y": source["y"], "z": source["z"]}
        if tuple(source["variables"]) != ("u", "v"):
            out["variables"] = list(source["variables"])
        out["u_range"] = list(map(float, surface.domain.u))
        out["v_range"] = list(map(float, surface.domain.v))
        if any(surface.domain.periodic):
            out["periodic"] = [bool(p) for p in surface.domain.periodic]
        if surface.closed:
            out["closed"] = True
        return _placement(out, surface, center=False)
    if kind is Disk:
        out = {"type": "disk", "radius": float(surface.radius)}
        if surface.flat_angle != DEFAULT_FLAT_ANGLE:
            out["flat_angle"] = float(surface.flat_angle)
        return out
    if kind is Cylinder:
        out = {"type": "cylinder", "radius": float(surface.radius),
               "half_length": float(surface.half_length)}
        if surface.flat_angle != DEFAULT_FLAT_ANGLE:
            out["flat_angle"] = float(surface.flat_angle)
        if surface.side_angle != DEFAULT_SIDE_ANGLE:
            out["side_angle"] = float(surface.side_angle)
        return out
    if kind is Wheel:
        out = {"type": "wheel", "radius": float(surface.radius),
               "tube_radius": float(surface.tube_radius)}
        if surface.flat_angle != DEFAULT_FLAT_ANGLE:
            out["flat_angle"] = float(surface.flat_angle)
        return out
    raise NotDescribable(f"{owner}: a {kind.__name__} cannot be written as data (scene files "
                         "describe the surfaces of nhphys.surfaces and the shapes of "
                         "nhphys.shapes)")


def integrator_name(integrator):
    """The name of ``integrator`` (an object) in :data:`INTEGRATOR_NAMES`, if it has the
    default options of that name, else ``None``."""
    from nhphys.integrators.names import INTEGRATORS

    if isinstance(integrator, str):
        integrator = INTEGRATORS[integrator.strip().lower()][0]()
    for key, (factory, _) in INTEGRATORS.items():
        if type(factory()) is type(integrator) and repr(factory()) == repr(integrator):
            return key
    return None


def _inertia(inertia):
    inertia = np.asarray(inertia, dtype=float)
    diagonal = np.diag(np.diag(inertia))
    return _floats(np.diag(inertia)) if _same(inertia, diagonal) else _floats(inertia)


def describe_body(b, ground_names):
    """The ``[[bodies]]`` table of a :class:`~nhphys.scene.SceneBody`."""
    from nhphys.contacts import KnifeEdgeContact, RollingContact, SuslovContact

    owner = f"body {b.name!r}"
    if not hasattr(b, "contact"):  # a SceneArticulated
        return describe_articulated(b, ground_names)
    body = b.body
    if getattr(b, "custom_mesh", False):
        raise NotDescribable(f"{owner}: a custom display mesh cannot be written in a scene file")
    forces = [describe_force(e, f"{owner} (forces[{i}])")
              for i, e in enumerate(getattr(b.system, "forces", None) or ())]
    out = {"name": b.name, "mass": float(body.mass), "inertia": _inertia(body.inertia)}
    if not _same(body.com, np.zeros(3)):
        out["com"] = _floats(body.com)
    out["color"] = b.color
    resolution = getattr(b, "resolution", None)
    if resolution is not None:
        if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) \
                or not RESOLUTION_RANGE[0] <= resolution <= RESOLUTION_RANGE[1]:
            raise NotDescribable(f"{owner}: resolution {resolution!r} is not an integer in "
                                 f"{list(RESOLUTION_RANGE)}")
        out["resolution"] = int(resolution)
    if b.integrator is not None:
        key = integrator_name(b.integrator)
        if key is None:
            raise NotDescribable(f"{owner}: its integrator {b.integrator!r} has options no "
                                 "integrator name stands for")
        out["integrator"] = key
    out["shape"] = describe_surface(body.shape, f"{owner} (its shape)")
    contact = b.contact
    if type(contact) is RollingContact:
        out["contact"] = {"type": "rolling", "ground": ground_names[id(contact.ground)]}
        if contact.lift_off:
            out["contact"].update(lift_off=True, restitution=float(contact.restitution))
            if np.isfinite(contact.mu):
                out["contact"]["mu"] = float(contact.mu)
            if contact.impact != "rough":
                out["contact"]["impact"] = contact.impact
    elif type(contact) is KnifeEdgeContact:
        out["contact"] = {"type": "knife_edge", "ground": ground_names[id(contact.ground)]}
        if contact.offset != 0.0 or math.copysign(1.0, contact.offset) < 0:
            out["contact"]["offset"] = float(contact.offset)
    elif type(contact) is SuslovContact:
        out["contact"] = {"type": "suslov", "axis": _floats(contact.axis)}
        if not _same(contact.pivot, np.zeros(3)):
            out["contact"]["pivot"] = _floats(contact.pivot)
    else:
        raise NotDescribable(f"{owner}: a {type(contact).__name__} cannot be written as data")
    initial = {}
    for key in INITIAL[out["contact"]["type"]]:  # in the vocabulary's order
        if key in b.conditions:
            value = b.conditions[key]
            initial[key] = float(value) if np.ndim(value) == 0 else _floats(value)
    if initial:
        out["initial"] = initial
    if forces:
        out["forces"] = forces
    return out


def _describe_tree(system):
    """The ``system`` table of a joint tree (the inverse of the reader's ``_tree_parts``)."""
    from nhphys.systems.articulated import Blade, EllipsoidHull, Joint, SuslovConstraint, Wheel

    def fields(item, defaults, keys, always):
        """The fields of ``item`` (a Joint, Wheel, Blade or SuslovConstraint) that differ
        from ``defaults``', and those in ``always``, each as the reader's type: integers,
        booleans, strings, floats and arrays of floats."""
        out = {}
        for key in keys:
            value, default = getattr(item, key), getattr(defaults, key)
            if key in ("parent", "body"):
                out[key] = int(value)
            elif key in ("held", "sideways"):
                if bool(value) != default:
                    out[key] = bool(value)
            elif key in ("kind", "name"):
                if value and value != default or key in always:
                    out[key] = str(value)
            elif key in always or not _same(value, default):
                out[key] = float(value) if np.ndim(value) == 0 else _floats(value)
        return out

    out = {"type": "tree"}
    if system.name != "Articulated":
        out["name"] = system.name
    gravity = system._tree_arguments["gravity"]
    if np.ndim(gravity) == 1:  # its own, tilted (a scalar is the file's gravity)
        out["gravity"] = _floats(gravity)
    out["joints"] = [fields(j, Joint(0, "revolute"), ("parent", "kind", "axis", "offset",
                                                      "mass", "com", "inertia", "name"),
                            ("kind",) if j.kind == "fixed" else ("kind", "axis"))
                     for j in system.joints]
    if system.wheels:
        out["wheels"] = [fields(w, Wheel(0, 1.0), ("body", "radius", "centre", "axis", "held",
                                                    "sideways"), ("body", "radius"))
                         for w in system.wheels]
    if system.blades:
        out["blades"] = [fields(b, Blade(0), ("body", "point", "direction"), ("body",))
                         for b in system.blades]
    if system.suslov:
        out["suslov"] = [fields(c, SuslovConstraint(0), ("body", "axis"), ("body",))
                         for c in system.suslov]
    if system.hulls:
        out["hulls"] = [fields(h, EllipsoidHull(0), ("body", "semi_axes", "centre", "held"),
                               ("body", "semi_axes")) for h in system.hulls]
    return out


def describe_articulated(b, ground_names):
    """The ``[[bodies]]`` table of an articulated system in a scene (a
    :class:`~nhphys.scene_articulated.SceneArticulated`)."""
    from nhphys.forces import JointMotor, JointSpring
    from nhphys.systems import Bicycle, GroundBicycle
    from nhphys.systems.bicycle import BENCHMARK

    owner = f"system {b.name!r}"
    system = b.system
    if type(system) in (Bicycle, GroundBicycle):
        # a GroundBicycle is a bicycle table on a curved ground, started from q and v
        bike = system if type(system) is Bicycle else system.bicycle
        table = {"type": "bicycle"}
        if bike.slope != 0.0 or math.copysign(1.0, bike.slope) < 0:
            table["slope"] = float(bike.slope)
        given = {k: v for k, v in bike.parameters.items() if not _same(v, BENCHMARK[k])}
        if given:
            table["parameters"] = {k: float(v) if np.ndim(v) == 0 else _floats(v)
                                   for k, v in given.items()}
        start_keys = ("speed", "roll", "steer", "roll_rate", "steer_rate", "yaw", "position") \
            if type(system) is Bicycle else ("q", "v")
    elif type(system).__name__ == "Articulated":
        table = _describe_tree(system)
        start_keys = ("q", "v")
    else:
        raise NotDescribable(f"{owner}: a {type(system).__name__} cannot be written as data "
                             "(scene files describe Bicycle and Articulated)")
    out = {"name": b.name, "system": table, "color": b.color}
    key = integrator_name(b.integrator)
    if key is None:
        raise NotDescribable(f"{owner}: its integrator {b.integrator!r} has no integrator name")
    out["integrator"] = key
    out["ground"] = ground_names[id(b.ground)]
    initial = {k: float(b.conditions[k]) if np.ndim(b.conditions[k]) == 0
               else _floats(b.conditions[k]) for k in start_keys if k in b.conditions}
    if initial:
        out["initial"] = initial
    motors = []
    for i, element in enumerate(system.forces or ()):
        if type(element) is JointSpring:
            motors.append({"type": "joint_spring", "joint": element.joint,
                           "stiffness": element.stiffness, "rest": element.rest})
            continue
        if type(element) is not JointMotor:
            raise NotDescribable(f"{owner} (forces[{i}]): a {type(element).__name__} cannot be "
                                 "written as data")
        motor = {"type": "joint_motor", "joint": element.joint, "gain": element.gain}
        if element.torque is not None:
            motor["torque"] = _force_value(element.torque, owner)
        if element.target_speed is not None:
            motor["target_speed"] = _force_value(element.target_speed, owner)
        motors.append(motor)
    if motors:
        out["forces"] = motors
    return out


def describe_motion(motion, owner):
    """The ``motion`` table of a moving ground: a steady rotation or a uniform translation."""
    from nhphys.surfaces.moving import SteadyRotation, UniformTranslation

    if type(motion) is SteadyRotation:
        return {"rate": motion.rate, "axis": _floats(motion._axis_given),
                "center": _floats(motion.center)}
    if type(motion) is UniformTranslation:
        return {"velocity": _floats(motion.velocity)}
    raise NotDescribable(f"{owner}: a {type(motion).__name__} (a motion given by a Python "
                         "callable) cannot be written as data; scene files describe steady "
                         "rotations and uniform translations")


def _force_value(value, owner):
    """A force element's value: a constant (a schedule of one value at ``t = 0``) as a number
    or ``[x, y, z]``, any other schedule as its table."""
    from nhphys.forces import Schedule

    if not isinstance(value, Schedule):
        raise NotDescribable(f"{owner}: a Python callable cannot be written as data; use a "
                             "constant or a Schedule")
    if value.times.size == 1 and _same(value.times, [0.0]):
        return float(value.values[0]) if value.values.ndim == 1 else _floats(value.values[0])
    if value.times.size > MAX_SCHEDULE_TIMES:
        raise NotDescribable(f"{owner}: a schedule of {value.times.size:,} times is more than "
                             f"a scene file holds ({MAX_SCHEDULE_TIMES:,})")
    return {"times": _floats(value.times), "values": _floats(value.values), "kind": value.kind}


def describe_force(element, owner):
    """The ``[[bodies.forces]]`` table of a force element (the inverse of the reader's
    :data:`~nhphys.scenefile.read.FORCE_KINDS`)."""
    from nhphys import forces as f

    kind = type(element)
    if kind is f.Force:
        out = {"type": "force", "value": _force_value(element.value, owner),
               "frame": element.frame}
        if element.point is not None:
            out["point"] = _floats(element.point)
        return out
    if kind is f.Torque:
        return {"type": "torque", "value": _force_value(element.value, owner),
                "frame": element.frame}
    if kind is f.Spring:
        return {"type": "spring", "stiffness": element.stiffness,
                "anchor": _floats(element.anchor), "point": _floats(element.point),
                "rest_length": element.rest_length}
    if kind is f.UniformField:
        return {"type": "uniform_field", "force": _floats(element.force)}
    if kind is f.LinearDrag:
        return {"type": "linear_drag", "coefficient": element.coefficient}
    if kind is f.AngularDamping:
        return {"type": "angular_damping", "coefficient": element.coefficient,
                "about": element.about}
    if kind is f.RollingResistance:
        return {"type": "rolling_resistance", "coefficient": element.coefficient}
    if kind is f.Motor:
        out = {"type": "motor", "axis": _floats(element._axis_given), "gain": element.gain}
        if element.torque is not None:
            out["torque"] = _force_value(element.torque, owner)
        if element.target_speed is not None:
            out["target_speed"] = _force_value(element.target_speed, owner)
        return out
    raise NotDescribable(f"{owner}: a {kind.__name__} cannot be written as data (scene files "
                         "describe the elements of nhphys.forces)")


def describe(scene, run=None):
    """The tables of a scene file for ``scene`` (a dict of plain Python values).

    Parameters
    ----------
    scene : Scene
    run : dict, optional
        Run settings (``t_final``, ``dt``, ``integrator``, ``save_every``, ``fps``, ``speed``,
        ``size``); default the scene's ``defaults``. ``integrator`` may be a name or an
        integrator with the default options of a name.

    Raises
    ------
    ValueError
        Naming the body or ground that a scene file cannot describe.
    """
    out = {"format": FORMAT, "name": scene.name}
    if getattr(scene, "description", ""):
        out["description"] = scene.description
    out["gravity"] = float(scene.gravity)
    if scene.camera is not None:
        out["camera"] = _floats(scene.camera)
    run = dict(getattr(scene, "defaults", None) or {}) if run is None else dict(run)
    if run.get("integrator") is not None and not isinstance(run["integrator"], str):
        key = integrator_name(run["integrator"])
        if key is None:
            raise NotDescribable(f"the run's integrator {run['integrator']!r} has options no "
                                 "integrator name stands for")
        run["integrator"] = key
    run = {k: v for k, v in run.items() if v is not None}
    if "size" in run:
        run["size"] = list(run["size"])
    try:
        checked = read_run(_plain(run))
    except SceneFileError as exc:
        raise NotDescribable(f"run settings: {exc}") from None
    if checked:
        out["run"] = {k: checked[k] for k in RUN if k in checked}
    names = {}
    grounds = []
    for g in scene.grounds:
        owner = f"ground {g['name']!r}"
        if g["name"] in names.values():
            raise NotDescribable(f"{owner}: two grounds have this name; a scene file needs "
                                 "distinct names")
        names[id(g["surface"])] = g["name"]
        resolution = g["resolution"]
        if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) \
                or not RESOLUTION_RANGE[0] <= resolution <= RESOLUTION_RANGE[1]:
            raise NotDescribable(f"{owner}: resolution {resolution!r} is not an integer in "
                                 f"{list(RESOLUTION_RANGE)}")
        surface = g["surface"]
        table = {"name": g["name"], "color": g["color"], "resolution": int(resolution),
                 "opacity": float(g["opacity"]),
                 "surface": describe_surface(getattr(surface, "surface", surface), owner)}
        if hasattr(surface, "motion"):  # a MovingGround
            table["motion"] = describe_motion(surface.motion, owner)
        grounds.append(table)
    if grounds:
        out["grounds"] = grounds
    out["bodies"] = [describe_body(b, names) for b in scene.bodies]
    return out


def _plain(value):
    """``value`` with NumPy scalars and arrays and tuples made plain Python values."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


# -- TOML ----------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def _string(text):
    """A TOML basic string."""
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        elif 0xD800 <= ord(c) <= 0xDFFF:
            raise ValueError(f"Expected text that is Unicode, got a lone surrogate in {text!r}.")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _key(key):
    if not isinstance(key, str):
        raise TypeError(f"Expected TOML keys to be strings, got {key!r}.")
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -2**63 <= value < 2**63:
            raise ValueError(f"Expected integers within 64 bits (TOML), got {value}.")
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Expected finite numbers, got {value}.")
        return repr(value)  # the shortest text that reads back to the same double
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"Expected a TOML value, got {type(value).__name__}.")


def _value(value, indent=""):
    """A TOML value: inline when it fits on a line, otherwise an array one row a line (or
    wrapped numbers)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }" \
            if value else "{}"
    if not isinstance(value, list):
        return _scalar(value)
    items = [_value(v, indent + "    ") for v in value]
    inline = "[" + ", ".join(items) + "]"
    if len(inline) + len(indent) <= LINE_WIDTH and "\n" not in inline:
        return inline
    inner = indent + "    "
    if any(isinstance(v, (list, dict)) for v in value):
        lines = [inner + item + "," for item in items]
    else:  # numbers: as many to a line as fit
        lines, line = [], ""
        for item in items:
            if line and len(inner) + len(line) + len(item) + 2 > LINE_WIDTH:
                lines.append(inner + line.rstrip())
                line = ""
            line += item + ", "
        lines.append(inner + line.rstrip())
    return "[\n" + "\n".join(lines) + "\n" + indent + "]"


def _is_table(value):
    return isinstance(value, dict)


def _is_table_array(value):
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _emit(lines, table, path):
    for key, value in table.items():
        if not _is_table(value) and not _is_table_array(value):
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in table.items():
        sub = path + (key,)
        header = ".".join(_key(k) for k in sub)
        if _is_table(value):
            lines += ["", f"[{header}]"]
            _emit(lines, value, sub)
        elif _is_table_array(value):
            for item in value:
                lines += ["", f"[[{header}]]"]
                _emit(lines, item, sub)


def dumps(data, header=None):
    """TOML text of ``data`` (a dict of strings, booleans, integers, finite floats, arrays and
    tables); floats are written so that they read back to the same double.

    Parameters
    ----------
    data : dict
    header : str, optional
        Comment lines at the top.
    """
    data = _plain(data)
    if not isinstance(data, dict):
        raise TypeError(f"Expected a dict, got {type(data).__name__}.")
    lines = [("# " + line).rstrip() for line in header.splitlines()] if header else []
    if lines:
        lines.append("")
    _emit(lines, data, ())
    return "\n".join(lines).lstrip("\n") + "\n"


def scene_to_toml(scene, run=None):
    """The scene file of ``scene`` (TOML text); see :meth:`nhphys.Scene.to_toml`."""
    return dumps(describe(scene, run), HEADER.format(format=FORMAT))


MAX_RUN_DATA = 2**16  # numbers of grids and samples a run copies into its metadata
MAX_RUN_TOML = 2**21  # characters of the scene file a run keeps


def _data_size(scene):
    """How many numbers of height grids and profile samples the scene file of ``scene`` holds
    (surfaces made from expressions hold none)."""
    total = 0
    for g in scene.grounds:
        surface, source = g["surface"], getattr(g["surface"], "source", None) or {}
        if hasattr(surface, "heights") and "function" not in source:
            total += surface.heights.size
        if "samples" in source and isinstance(source["samples"], dict):
            total += sum(len(v) for v in source["samples"].values())
    return total


def run_toml(scene, t_final, dt, integrator=None, save_every=1):
    """The scene file that repeats a run of ``scene`` (its ``[run]`` the run's settings, over
    the scene's ``defaults``), or ``None`` when the scene or the run cannot be described as
    data, or its grids of numbers are too large to copy into every run (more than
    ``MAX_RUN_DATA`` numbers, or ``MAX_RUN_TOML`` characters in all; ``scene.to_toml()``
    still writes them). :meth:`nhphys.Scene.simulate` stores it in ``meta["scene_toml"]``."""
    if _data_size(scene) > MAX_RUN_DATA:
        return None
    run = dict(getattr(scene, "defaults", None) or {})
    run.update(t_final=t_final, dt=dt, save_every=save_every)
    if integrator is None:
        run.pop("integrator", None)  # each contact's own default, as in the run
    else:
        run["integrator"] = integrator
    try:
        text = scene_to_toml(scene, run)
    except Exception:  # noqa: BLE001 -- describing the scene must never stop its run
        return None
    return text if len(text) <= MAX_RUN_TOML else None


def run_scene_toml(trajectory):
    """The scene file stored with a run (``meta["scene_toml"]``), checked.

    Parameters
    ----------
    trajectory : Trajectory or str or path
        A run, or the path of a saved one.

    Raises
    ------
    ValueError
        The run holds no scene file (its scene was made from Python code that a scene file
        cannot describe, or it is a run of a single system), or the one it holds does not read.
    """
    from nhphys.scenefile.read import loads
    from nhphys.trajectory import Trajectory

    if not isinstance(trajectory, Trajectory):
        trajectory = Trajectory.load(trajectory)
    where = trajectory.file or "the run"
    text = trajectory.meta.get("scene_toml")
    if text is None:
        what = ("a run of a single system (nhphys.simulate), not of a scene"
                if "bodies" not in trajectory.meta else
                "its scene holds something a scene file cannot describe (a surface made from "
                "Python functions, a custom mesh, an integrator with options), or an older "
                "nhphys made it")
        raise ValueError(f"{where} holds no scene file: {what}.")
    if not isinstance(text, str):
        raise ValueError(f"{where}: meta['scene_toml'] must be the text of a scene file, got "
                         f"{type(text).__name__}.")
    loads(text, source=f"{where} (its scene file)")
    return text
