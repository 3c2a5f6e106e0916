"""Reading scene files: TOML text -> checked data -> a :class:`~nhphys.Scene`.

Reading is three steps, each of which refuses bad input with a :class:`SceneFileError` naming
the field:

1. the text is parsed by :mod:`tomllib` (at most :data:`MAX_TEXT_BYTES`; malformed TOML is
   reported with its line and column);
2. every table is checked against the schema below: unknown keys (with the keys the table
   accepts, and the closest one), missing keys, wrong types and values out of range, before
   anything is built;
3. the grounds, bodies and contacts are built with the library's own constructors, in file
   order, and their refusals (a ``com`` outside the shape, a velocity violating a constraint, a
   body that does not fit its ground) are reported under the path of the table that made them.

Nothing in a scene file is executed. Expressions (height fields, surfaces of revolution,
parametric surfaces) are read by :func:`nhphys.surfaces.symbolic.parse_expression`, an ``ast``
whitelist; the sizes a file can ask for (grid samples, profile knots, mesh resolutions, numbers
of bodies) are bounded so that a small file cannot demand a huge allocation.
"""

from __future__ import annotations

import difflib
import json
import keyword
import math
import os
import re
import unicodedata

import numpy as np

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
    import tomli as tomllib

FORMAT = 1  # the version of the format this module reads and writes
MAX_TEXT_BYTES = 64 * 2**20  # a scene file larger than this is refused before parsing
MAX_GROUNDS = 1_000
MAX_BODIES = 10_000
MAX_GRID_SIDE = 2049  # height-field samples per side (a 2049 x 2049 grid: ~130 MB of nodes)
MAX_KNOTS = 100_001  # profile knots of a surface of revolution
MAX_SAMPLES = 100_000  # profile samples of a surface of revolution
MAX_FORCES = 1_000  # force elements of one body
MAX_SCHEDULE_TIMES = 100_000  # times of one force schedule
RESOLUTION_RANGE = (4, 2048)  # display mesh vertices along the longest direction
# what one file may ask for in all, whatever its number of grounds and bodies
TOTALS = {"display mesh vertices (resolution^2 summed over grounds and bodies)": 2**22,
          "height-field samples": 2**23, "profile knots": 2**20,
          "schedule times (summed over every force schedule)": 2**22}
DEFAULT_RESOLUTION = {"ground": 96, "body": 48}  # those of Scene.add_ground / add_body
MAX_NAME_LENGTH = 200
MAX_DESCRIPTION_LENGTH = 20_000



class Budget:
    """The sizes a file has asked for so far, against :data:`TOTALS`: a small file cannot
    make the reader allocate without bound by repeating a large table."""

    def __init__(self):
        self.used = dict.fromkeys(TOTALS, 0)

    def take(self, kind, amount, field):
        what = next(k for k in TOTALS if k.startswith(kind))
        self.used[what] += amount
        if self.used[what] > TOTALS[what]:
            _fail(field, f"the file asks for more than {TOTALS[what]:,} {what} in all; lower "
                         "the sizes")


class SceneFileError(ValueError):
    """A scene file that cannot be read; the message starts with the path of the bad field.

    Attributes
    ----------
    field : str or None
        The path of the field, ``"bodies[2].shape.radius"`` (``None`` for the file as a whole:
        not TOML, too large).
    source : str or None
        The file (or ``"<text>"``) it came from, when known.
    """

    def __init__(self, message, field=None, source=None):
        self.field = field
        self.source = source
        self.detail = message
        text = f"{field}: {message}" if field else message
        super().__init__(f"{source}: {text}" if source else text)

    def with_source(self, source):
        """The same error, naming the file it came from."""
        return SceneFileError(self.detail, self.field, source)


def _fail(field, message):
    raise SceneFileError(message, field)


_HIDDEN = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")  # characters a terminal would not show


def _quote(text):
    """``text`` in double quotes, with the characters a terminal would hide or act on (control
    and format characters, line separators) escaped: a message shows what the file holds."""
    return '"' + "".join(
        {'"': '\\"', "\\": "\\\\"}.get(c, c) if unicodedata.category(c) not in _HIDDEN
        else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
        for c in text) + '"'


def _show(value, width=60):
    """A value as TOML would spell it, cut to ``width`` characters, for messages."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = _quote(value[:width])
    elif isinstance(value, (int, float)):
        try:
            text = repr(value)
        except ValueError:  # an integer too long to print
            return "an integer too large"
    elif isinstance(value, dict):
        keys = ", ".join(str(k) for k in list(value)[:6])
        return f"a table {{{keys}{', ...' if len(value) > 6 else ''}}}" if value else \
            "an empty table"
    elif isinstance(value, list):
        inner = []
        for item in value:
            inner.append(_show(item, width))
            if sum(len(s) + 2 for s in inner) > width:
                return f"an array of {len(value)} values [{', '.join(inner)[:width]}, ...]"
        return f"[{', '.join(inner)}]"
    else:  # the TOML dates and times
        text = f"a date/time {value.isoformat() if hasattr(value, 'isoformat') else value}"
    return text if len(text) <= width else text[:width - 3] + "..."


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _join(field, key):
    """The path of ``key`` (a table's key, or an array's index) in ``field``."""
    if isinstance(key, int):
        return f"{field}[{key}]"
    key = key if _BARE.fullmatch(key) else _quote(key)
    return f"{field}.{key}" if field else key


# -- value parsers: (value, field) -> checked value --------------------------------------------

def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(low=None, high=None, low_open=False, what="a number"):
    """A parser of a finite number (TOML integer or float) in [``low``, ``high``] (``low``
    excluded with ``low_open``); returns a float."""
    if low_open and high is None:
        bounds = f" > {low:g}"
    elif low is not None and high is None:
        bounds = f" >= {low:g}"
    elif low is not None:
        bounds = f" in {'(' if low_open else '['}{low:g}, {high:g}]"
    else:
        bounds = ""

    def parse(value, field):
        if not _is_number(value):
            _fail(field, f"expected {what}{bounds}, got {_show(value)}")
        try:
            x = float(value)
        except OverflowError:
            _fail(field, f"expected a finite number, got {_show(value)}")
        if not math.isfinite(x):
            _fail(field, f"expected a finite number, got {_show(value)}")
        if low is not None and (x < low or (low_open and x == low)) \
                or high is not None and x > high:
            _fail(field, f"expected {what}{bounds}, got {_show(value)}")
        return x

    return parse


def integer(low, high):
    """A parser of a TOML integer in [``low``, ``high``]."""
    def parse(value, field):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            _fail(field, f"expected an integer in [{low}, {high}], got {_show(value)}")
        return int(value)
    return parse


real = number()
positive = number(0.0, low_open=True)
non_negative = number(0.0)


def vector(n, what=None):
    """A parser of an array of ``n`` finite numbers; returns a float array (n,)."""
    what = what or f"an array of {n} numbers"

    def parse(value, field):
        if not isinstance(value, list) or len(value) != n:
            _fail(field, f"expected {what}, got {_show(value)}")
        return np.array([real(v, _join(field, i)) for i, v in enumerate(value)])

    return parse


vector2 = vector(2, "an array of 2 numbers [x, y]")
vector3 = vector(3, "an array of 3 numbers [x, y, z]")


DIRECTION_RANGE = (1e-150, 1e150)  # largest component of a direction: its length is a float


def nonzero3(value, field):
    """A direction: a nonzero vector whose largest component lies in ``DIRECTION_RANGE`` in
    size (so that its length neither overflows nor underflows when it is normalised)."""
    v = vector3(value, field)
    if not np.any(v):
        _fail(field, f"expected a nonzero vector, got {_show(value)}")
    if not DIRECTION_RANGE[0] <= np.abs(v).max() <= DIRECTION_RANGE[1]:
        _fail(field, f"expected a direction whose largest component is between "
                     f"{DIRECTION_RANGE[0]:g} and {DIRECTION_RANGE[1]:g} in size, got "
                     f"{_show(value)}")
    return v


def matrix3(value, field):
    """A 3x3 array of finite numbers, given as 3 rows."""
    if not isinstance(value, list) or len(value) != 3 \
            or not all(isinstance(r, list) for r in value):
        _fail(field, f"expected a 3x3 matrix (3 rows of 3 numbers), got {_show(value)}")
    return np.array([vector(3, "a row of 3 numbers")(r, _join(field, i))
                     for i, r in enumerate(value)])


def interval(value, field):
    """``[lo, hi]`` with ``lo < hi``; returns a tuple of floats."""
    lo, hi = vector(2, "an interval [lo, hi]")(value, field)
    if not lo < hi:
        _fail(field, f"expected an interval [lo, hi] with lo < hi, got {_show(value)}")
    return float(lo), float(hi)


def boolean(value, field):
    if not isinstance(value, bool):
        _fail(field, f"expected true or false, got {_show(value)}")
    return value


def choice(options):
    """A parser of one of the strings ``options``."""
    def parse(value, field):
        if not isinstance(value, str) or value not in options:
            close = difflib.get_close_matches(value, options, n=1) if isinstance(value, str) \
                else []
            hint = f" (did you mean {json.dumps(close[0])}?)" if close else ""
            _fail(field, f"expected one of {', '.join(json.dumps(o) for o in options)}, got "
                         f"{_show(value)}{hint}")
        return value
    return parse


orientation = choice(("outward", "inward"))


def name(value, field):
    """A name: a non-empty string of printable characters, without surrounding spaces."""
    if not isinstance(value, str) or not value.strip():
        _fail(field, f"expected a non-empty string, got {_show(value)}")
    if value != value.strip() or len(value) > MAX_NAME_LENGTH \
            or any(unicodedata.category(c) in ("Cc", "Cs") for c in value):
        _fail(field, f"expected a name of at most {MAX_NAME_LENGTH} printable characters "
                     f"without spaces around it, got {_show(value)}")
    return value


def description(value, field):
    if not isinstance(value, str) or len(value) > MAX_DESCRIPTION_LENGTH \
            or any(unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t" for c in value):
        _fail(field, f"expected a string of at most {MAX_DESCRIPTION_LENGTH} printable "
                     f"characters, got {_show(value)}")
    return value


def rotation(value, field):
    """A rotation (3, 3): a 3x3 matrix (rows), a unit quaternion ``[w, x, y, z]``, or a table
    ``{ rotation_vector = [x, y, z] }`` (axis times angle in rad, the exponential map)."""
    from nhphys.conditions import as_orientation

    if isinstance(value, dict):
        table = Table(value, field, ("rotation_vector",), "a rotation table",
                      required=("rotation_vector",))
        from nhphys.lie import so3

        return so3.exp(table.get("rotation_vector", vector3))
    key = field.rsplit(".", 1)[-1]
    if isinstance(value, list) and len(value) == 4:
        q = vector(4)(value, field)
        try:
            return as_orientation(q, key)
        except (ValueError, TypeError) as exc:
            _fail(field, _lower(str(exc)))
    if isinstance(value, list) and len(value) == 3 and all(isinstance(r, list) for r in value):
        m = matrix3(value, field)
        try:
            return as_orientation(m, key)
        except (ValueError, TypeError) as exc:
            _fail(field, _lower(str(exc)))
    _fail(field, "expected a rotation: a 3x3 matrix (3 rows), a unit quaternion [w, x, y, z] "
                 f"or {{ rotation_vector = [x, y, z] }}, got {_show(value)}")


def color(value, field):
    """A colour: ``"#rrggbb"``, a colour name, or ``[r, g, b]`` in [0, 1]; returns ``#rrggbb``."""
    from nhphys.scene_display import as_color

    if isinstance(value, list):
        rgb = vector(3, "[r, g, b] in [0, 1]")(value, field)
        if np.any(rgb < 0) or np.any(rgb > 1):
            _fail(field, f"expected [r, g, b] in [0, 1], got {_show(value)}")
        return as_color(rgb)
    if not isinstance(value, str) or len(value) > 40:
        _fail(field, f"expected a colour: \"#rrggbb\", a colour name or [r, g, b], got "
                     f"{_show(value)}")
    try:
        return as_color(value)
    except (ValueError, TypeError):
        _fail(field, f"expected a colour: \"#rrggbb\", a colour name or [r, g, b], got "
                     f"{_show(value)}")


def integrator(value, field):
    """An integrator's name (:data:`nhphys.integrators.INTEGRATOR_NAMES`)."""
    from nhphys.integrators.names import INTEGRATOR_NAMES

    return choice(INTEGRATOR_NAMES)(value, field)


_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,15}")


def variables(value, field):
    """Two distinct chart variable names (identifiers that are not functions or constants)."""
    from nhphys.surfaces.symbolic import CONSTANTS, FUNCTIONS

    if not isinstance(value, list) or len(value) != 2:
        _fail(field, f"expected two variable names, got {_show(value)}")
    for i, v in enumerate(value):
        if not isinstance(v, str) or not _IDENTIFIER.fullmatch(v) or keyword.iskeyword(v) \
                or v in FUNCTIONS or v in CONSTANTS:
            _fail(_join(field, i), "expected a variable name (a letter, then up to 15 letters, "
                                   "digits or _; not a function, a constant or a keyword), got "
                                   f"{_show(v)}")
    if value[0] == value[1]:
        _fail(field, f"expected two different names, got {_show(value)}")
    return tuple(value)


def expression(names):
    """A parser of an expression in the variables ``names``: a string (read by the ``ast``
    whitelist of :mod:`nhphys.surfaces.symbolic`) or a number; returned as given."""
    def parse(value, field):
        from nhphys.surfaces.symbolic import parse_expression

        if not isinstance(value, str) and not _is_number(value):
            _fail(field, f"expected an expression in {', '.join(names)} (a string) or a number, "
                         f"got {_show(value)}")
        if _is_number(value):
            real(value, field)
        try:
            parse_expression(value, field.rsplit(".", 1)[-1], tuple(names))
        except (ValueError, TypeError) as exc:
            _fail(field, _lower(str(exc)))
        return value
    return parse


def _lower(message):
    """A library message (``Expected `x` to ...``) as the tail of ours (``expected `x` ...``)."""
    return message[:1].lower() + message[1:] if message.startswith("Expected") else message


# -- tables -------------------------------------------------------------------------------------

class Table:
    """A TOML table checked against the keys it accepts.

    Parameters
    ----------
    value : object
        What the file holds there (must be a dict).
    field : str
        Its path, for messages.
    keys : tuple of str
        The keys the table accepts (an unknown one is an error naming them).
    what : str
        The table in words, for messages ("a body").
    required : tuple of str
        Keys that must be present.
    """

    def __init__(self, value, field, keys, what, required=()):
        if not isinstance(value, dict):
            _fail(field, f"expected a table ({what}), got {_show(value)}")
        self.data, self.field, self.keys, self.what = value, field, tuple(keys), what
        for key in value:
            if key not in self.keys:
                close = difflib.get_close_matches(key, self.keys, n=1, cutoff=0.6)
                hint = f" (did you mean `{close[0]}`?)" if close else ""
                _fail(_join(field, key), f"unknown key{hint}; {what} accepts "
                                         f"{', '.join(self.keys)}")
        for key in required:
            if key not in value:
                _fail(_join(field, key), f"missing; {what} needs "
                                         f"{', '.join(k for k in self.keys if k in required)}")

    def __contains__(self, key):
        return key in self.data

    def at(self, key):
        return _join(self.field, key)

    def get(self, key, parse, default=None):
        """The value of ``key`` checked by ``parse``, or ``default`` when absent."""
        if key not in self.data:
            return default
        return parse(self.data[key], self.at(key))

    def kwargs(self, parsers, rename=None):
        """``{keyword: checked value}`` for the keys present among ``parsers``."""
        rename = rename or {}
        return {rename.get(k, k): parse(self.data[k], self.at(k))
                for k, parse in parsers.items() if k in self.data}


def table_array(value, field, what, limit):
    """An array of tables (``[[field]]``), at most ``limit`` long."""
    if isinstance(value, dict):
        _fail(field, f"expected an array of tables ([[{field}]], {what} each), got one table "
                     f"([{field}])")
    if not isinstance(value, list):
        _fail(field, f"expected an array of tables ([[{field}]], {what} each), got {_show(value)}")
    if len(value) > limit:
        _fail(field, f"expected at most {limit} entries, got {len(value)}")
    return value


def _built(field, make, *args, **kwargs):
    """``make(*args, **kwargs)``, with a library refusal reported under ``field``."""
    try:
        return make(*args, **kwargs)
    except SceneFileError:
        raise
    except (ValueError, TypeError, ArithmeticError) as exc:
        _fail(field, _lower(str(exc)))


# -- surfaces ------------------------------------------------------------------------------------

PLACEMENT = {"center": vector3, "rotation": rotation, "orientation": orientation}


def _plane(t):
    from nhphys.surfaces import Plane

    return Plane(**t.kwargs({"point": vector3, "normal": nonzero3, "extent": positive,
                             "orientation": orientation}))


def _sphere(t):
    from nhphys.surfaces import Sphere

    return Sphere(**t.kwargs({"radius": positive, **PLACEMENT}))


def _ellipsoid(t):
    from nhphys.surfaces import Ellipsoid

    return Ellipsoid(**t.kwargs({"semi_axes": _semi_axes, **PLACEMENT}))


def _semi_axes(value, field):
    v = vector3(value, field)
    if np.any(v <= 0):
        _fail(field, f"expected 3 numbers > 0, got {_show(value)}")
    return v


def _torus(t):
    from nhphys.surfaces import Torus

    return Torus(**t.kwargs({"major_radius": positive, "minor_radius": positive, **PLACEMENT}))


def _paraboloid(t):
    from nhphys.surfaces import Paraboloid

    return Paraboloid(**t.kwargs({"a": positive, "b": positive,
                                  "kind": choice(("elliptic", "hyperbolic")),
                                  "extent": positive, **PLACEMENT}))


def _samples(value, field):
    """Grid samples: an integer or ``[nx, ny]``, each in [4, MAX_GRID_SIDE]."""
    side = integer(4, MAX_GRID_SIDE)
    if isinstance(value, list):
        if len(value) != 2:
            _fail(field, f"expected an integer or [nx, ny], got {_show(value)}")
        return tuple(side(v, _join(field, i)) for i, v in enumerate(value))
    return side(value, field)


def _heights(value, field):
    """A grid of heights: nx rows of ny numbers, 4 <= nx, ny <= MAX_GRID_SIDE."""
    if not isinstance(value, list) or not 4 <= len(value) <= MAX_GRID_SIDE:
        _fail(field, f"expected 4 to {MAX_GRID_SIDE} rows of heights, got {_show(value)}")
    first = value[0]
    if not isinstance(first, list) or not 4 <= len(first) <= MAX_GRID_SIDE:
        _fail(_join(field, 0), f"expected a row of 4 to {MAX_GRID_SIDE} numbers, got "
                               f"{_show(first)}")
    row = vector(len(first), f"a row of {len(first)} numbers (like the first row)")
    return np.array([row(r, _join(field, i)) for i, r in enumerate(value)])


def _height_field(t):
    from nhphys.surfaces import HeightField

    if ("function" in t) == ("heights" in t):
        _fail(t.field, "expected exactly one of `function` (an expression in x and y) and "
                       "`heights` (a grid of numbers)")
    kwargs = t.kwargs(PLACEMENT)
    x_range, y_range = t.get("x_range", interval), t.get("y_range", interval)
    if "function" in t:
        if "x_range" not in t or "y_range" not in t:
            _fail(t.at("x_range" if "x_range" not in t else "y_range"),
                  "missing; a height field needs x_range and y_range")
        f = t.get("function", expression(("x", "y")))
        samples = t.get("samples", _samples, 129)
        nx, ny = samples if isinstance(samples, tuple) else (samples, samples)
        t.budget.take("height-field", nx * ny, t.at("samples"))
        return _built(t.at("function"), HeightField.from_function, f, x_range, y_range,
                      samples=samples, **kwargs)
    if "samples" in t:
        _fail(t.at("samples"), "only with `function`: `heights` gives its own grid")
    for key in ("x_range", "y_range"):
        if key not in t:
            _fail(t.at(key), "missing; a height field needs x_range and y_range")
    heights = t.get("heights", _heights)
    t.budget.take("height-field", heights.size, t.at("heights"))
    return HeightField(heights, x_range, y_range, **kwargs)


def _profile_samples(value, field):
    table = Table(value, field, ("t", "radius", "height"), "profile samples",
                  required=("t", "radius", "height"))
    out = {}
    for key in ("t", "radius", "height"):
        v = table.data[key]
        if not isinstance(v, list) or not 6 <= len(v) <= MAX_SAMPLES:
            _fail(table.at(key), f"expected an array of 6 to {MAX_SAMPLES} numbers, got "
                                 f"{_show(v)}")
        out[key] = vector(len(v))(v, table.at(key))
    for key in ("radius", "height"):
        if len(out[key]) != len(out["t"]):
            _fail(table.at(key), f"expected {len(out['t'])} numbers (one per t), got "
                                 f"{len(out[key])}")
    return out


def _surface_of_revolution(t):
    from nhphys.surfaces import SurfaceOfRevolution

    kwargs = t.kwargs(PLACEMENT)
    knots = t.get("knots", integer(8, MAX_KNOTS))
    periodic = t.get("periodic", boolean, False)
    t.budget.take("profile knots", 1025 if knots is None else knots, t.at("knots"))
    if "samples" in t:
        for key in ("radius", "height", "t_range"):
            if key in t:
                _fail(t.at(key), "not with `samples` (the profile is either expressions or "
                                 "samples)")
        s = t.get("samples", _profile_samples)
        return _built(t.at("samples"), SurfaceOfRevolution.from_samples, s["t"], s["radius"],
                      s["height"], periodic=periodic, knots=knots, **kwargs)
    for key in ("radius", "height", "t_range"):
        if key not in t:
            _fail(t.at(key), "missing; a surface of revolution needs radius, height and t_range "
                             "(expressions in t), or samples")
    profile = expression(("t",))
    return _built(t.field, SurfaceOfRevolution, t.get("radius", profile),
                  t.get("height", profile), t.get("t_range", interval), periodic=periodic,
                  **({} if knots is None else {"knots": knots}), **kwargs)


def _parametric(t):
    from nhphys.surfaces import ParametricSurface

    names = t.get("variables", variables, ("u", "v"))
    coordinate = expression(names)
    periodic = t.get("periodic", _two_bools, (False, False))
    return _built(t.field, ParametricSurface.from_expressions,
                  t.get("x", coordinate), t.get("y", coordinate), t.get("z", coordinate),
                  variables=names, periodic=periodic,
                  **t.kwargs({"u_range": interval, "v_range": interval, "closed": boolean,
                              "orientation": orientation}))


def _two_bools(value, field):
    if not isinstance(value, list) or len(value) != 2:
        _fail(field, f"expected [true/false, true/false], got {_show(value)}")
    return tuple(boolean(v, _join(field, i)) for i, v in enumerate(value))


# type -> (keys besides `type`, required keys, builder, words)
GROUND_SURFACES = {
    "plane": (("point", "normal", "extent", "orientation"), (), _plane, "a plane"),
    "sphere": (("radius", "center", "rotation", "orientation"), ("radius",), _sphere,
               "a sphere"),
    "ellipsoid": (("semi_axes", "center", "rotation", "orientation"), ("semi_axes",),
                  _ellipsoid, "an ellipsoid"),
    "torus": (("major_radius", "minor_radius", "center", "rotation", "orientation"),
              ("major_radius", "minor_radius"), _torus, "a torus"),
    "paraboloid": (("a", "b", "kind", "extent", "center", "rotation", "orientation"),
                   ("a", "b"), _paraboloid, "a paraboloid"),
    "height_field": (("function", "samples", "heights", "x_range", "y_range", "center",
                      "rotation", "orientation"), (), _height_field, "a height field"),
    "surface_of_revolution": (("radius", "height", "t_range", "samples", "periodic", "knots",
                               "center", "rotation", "orientation"), (),
                              _surface_of_revolution, "a surface of revolution"),
    "parametric": (("x", "y", "z", "variables", "u_range", "v_range", "periodic", "closed",
                    "orientation"), ("x", "y", "z"), _parametric, "a parametric surface"),
}


def _disk(t):
    from nhphys.shapes import Disk

    return Disk(**t.kwargs({"radius": positive, "flat_angle": positive}))


def _cylinder(t):
    from nhphys.shapes import Cylinder

    return Cylinder(**t.kwargs({"radius": positive, "half_length": positive,
                                "flat_angle": positive, "side_angle": positive}))


def _wheel(t):
    from nhphys.shapes import Wheel

    return Wheel(**t.kwargs({"radius": positive, "tube_radius": positive,
                             "flat_angle": positive}))


BODY_SHAPES = {
    "sphere": GROUND_SURFACES["sphere"],
    "ellipsoid": GROUND_SURFACES["ellipsoid"],
    "disk": (("radius", "flat_angle"), ("radius",), _disk, "a thin disk"),
    "cylinder": (("radius", "half_length", "flat_angle", "side_angle"),
                 ("radius", "half_length"), _cylinder, "a cylinder"),
    "wheel": (("radius", "tube_radius", "flat_angle"), ("radius", "tube_radius"), _wheel,
              "a wheel"),
}


def _typed(value, field, kinds, what, budget):
    """Build the surface or shape of the table ``value`` from its ``type``."""
    if not isinstance(value, dict):
        _fail(field, f"expected a table ({what}, with a `type`), got {_show(value)}")
    if "type" not in value:
        _fail(_join(field, "type"), f"missing; {what} needs a type: {', '.join(kinds)}")
    kind = choice(tuple(kinds))(value["type"], _join(field, "type"))
    keys, required, build, words = kinds[kind]
    table = Table(value, field, ("type",) + keys, words, required)
    table.budget = budget
    return _built(field, build, table), kind


# -- the scene -----------------------------------------------------------------------------------

def _uniform_inertia(shape, mass, field):
    """The inertia (3,) of a uniform solid of ``shape`` about its centre (a thin disk for a
    ``Disk``)."""
    from nhphys.shapes import Cylinder, Disk, Wheel
    from nhphys.surfaces import Ellipsoid

    if isinstance(shape, Disk):
        return Disk.solid_inertia(mass, shape.radius)
    if isinstance(shape, Cylinder):
        return Cylinder.solid_inertia(mass, shape.radius, shape.half_length)
    if isinstance(shape, Wheel):
        return Wheel.solid_inertia(mass, shape.radius, shape.tube_radius)
    if isinstance(shape, Ellipsoid):
        a, b, c = shape.semi_axes
        return 0.2 * mass * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    _fail(field, f"no uniform inertia is known for {type(shape).__name__}; give the inertia")


def _inertia(value, field):
    if value == "uniform":
        return "uniform"
    if isinstance(value, list) and len(value) == 3 and not isinstance(value[0], list):
        v = vector3(value, field)
        if np.any(v <= 0):
            _fail(field, f"expected principal moments > 0, got {_show(value)}")
        return v
    if isinstance(value, list) and len(value) == 3:
        return matrix3(value, field)
    _fail(field, f"expected \"uniform\", 3 principal moments [I1, I2, I3] or a 3x3 matrix, got "
                 f"{_show(value)}")


INITIAL = {  # contact type -> the initial conditions it takes (nhphys.conditions)
    "rolling": {"position": vector3, "orientation": rotation, "omega": vector3,
                "height": real, "velocity": vector3},
    "suslov": {"orientation": rotation, "omega": vector3, "momentum": vector3},
    "knife_edge": {"position": vector2, "heading": real, "velocity": real, "turning_rate": real},
}
CONTACTS = {
    "rolling": (("ground", "lift_off", "restitution", "mu", "impact"), "a rolling contact"),
    "knife_edge": (("ground", "offset"), "a knife-edge contact"),
    "suslov": (("axis", "pivot"), "a Suslov contact"),
}
RUN = {"t_final": positive, "dt": positive, "integrator": integrator,
       "save_every": integer(1, 2**62), "fps": None, "speed": positive, "size": None}
BODY_KEYS = ("name", "mass", "inertia", "com", "shape", "contact", "initial", "color",
             "resolution", "integrator", "forces")
GROUND_KEYS = ("name", "surface", "motion", "color", "resolution", "opacity")
TOP_KEYS = ("format", "name", "description", "gravity", "camera", "run", "grounds", "bodies")


def _run_parsers():
    from nhphys.cli import FPS_RANGE, SIZE_RANGE

    def size(value, field):
        if not isinstance(value, list) or len(value) != 2:
            _fail(field, f"expected [width, height] in pixels, got {_show(value)}")
        side = integer(*SIZE_RANGE)
        return [side(v, _join(field, i)) for i, v in enumerate(value)]

    return dict(RUN, fps=number(*FPS_RANGE), size=size)


def read_run(value, field="run"):
    """The run settings table: ``{key: value}`` for the keys given, checked (``t_final`` a
    whole number of steps ``dt`` when both are given)."""
    from nhphys.simulate import number_of_steps

    table = Table(value, field, tuple(RUN), "the run settings")
    settings = table.kwargs(_run_parsers())
    if "t_final" in settings and "dt" in settings:
        try:
            number_of_steps(settings["t_final"], settings["dt"])
        except (ValueError, OverflowError) as exc:
            _fail(field, f"t_final = {settings['t_final']!r} is not a whole number of steps "
                         f"dt = {settings['dt']!r} ({exc})")
    return settings


def _moving(surface, value, field):
    """``surface`` carried by the ground motion of the table ``value``: a steady rotation
    (``rate``, and ``axis`` and ``center``) or a uniform translation (``velocity``)."""
    table = Table(value, field, ("rate", "axis", "center", "velocity"), "a ground motion")
    if ("rate" in table) == ("velocity" in table):
        _fail(field, "expected a steady rotation (`rate`, with `axis` and `center`) or a "
                     "uniform translation (`velocity`), one of the two")
    if "velocity" in table:
        if "axis" in table or "center" in table:
            _fail(table.at("axis" if "axis" in table else "center"),
                  "a uniform translation takes only `velocity`")
        return _built(field, surface.moving, velocity=table.get("velocity", vector3))
    return _built(field, surface.moving, **table.kwargs({"rate": real, "axis": nonzero3,
                                                         "center": vector3}))


def _contact(value, field, grounds):
    from nhphys.contacts import KnifeEdgeContact, RollingContact, SuslovContact
    from nhphys.surfaces import Plane

    if not isinstance(value, dict):
        _fail(field, f"expected a table (a contact, with a `type`), got {_show(value)}")
    if "type" not in value:
        _fail(_join(field, "type"), f"missing; a contact needs a type: {', '.join(CONTACTS)}")
    kind = choice(tuple(CONTACTS))(value["type"], _join(field, "type"))
    keys, words = CONTACTS[kind]
    table = Table(value, field, ("type",) + keys, words,
                  required=("axis",) if kind == "suslov" else ())
    if kind == "suslov":
        return _built(field, SuslovContact, table.get("axis", nonzero3),
                      **table.kwargs({"pivot": vector3})), kind
    ground_field = table.at("ground")
    if "ground" in table:
        ground = name(table.data["ground"], ground_field)
        if ground not in grounds:
            known = ", ".join(json.dumps(g) for g in grounds) or "none"
            _fail(ground_field, f"no ground named {json.dumps(ground)} (the grounds: {known})")
    elif len(grounds) == 1:
        ground = next(iter(grounds))
    else:
        _fail(ground_field, f"missing; {words} needs the name of its ground "
                            f"({len(grounds)} grounds in the file)")
    surface = grounds[ground]
    if kind == "rolling":
        return _built(field, RollingContact, surface,
                      **table.kwargs({"lift_off": boolean, "restitution": real,
                                      "mu": real, "impact": choice(("rough", "coulomb"))})), kind
    if not isinstance(surface, Plane):
        what = "a moving ground" if hasattr(surface, "motion") else \
            f"a {type(surface).__name__}"
        _fail(ground_field, f"a knife edge slides on a plane at rest; {json.dumps(ground)} is "
                            f"{what}")
    return _built(field, KnifeEdgeContact, surface, table.get("offset", real, 0.0)), kind


# -- articulated systems -------------------------------------------------------------------------

ARTICULATED_KEYS = ("name", "system", "initial", "color", "integrator", "ground", "forces")
JOINT_KEYS = ("parent", "kind", "axis", "offset", "mass", "com", "inertia", "name")
WHEEL_KEYS = ("body", "radius", "centre", "axis", "held", "sideways")
BLADE_KEYS = ("body", "point", "direction")
SUSLOV_KEYS = ("body", "axis")
HULL_KEYS = ("body", "semi_axes", "centre", "held")
MAX_JOINTS, MAX_BLADES = 12, 4  # those of nhphys.systems.Articulated (4 wheels, blades, ...)
BICYCLE_INITIAL = {"speed": real, "roll": real, "steer": real, "roll_rate": real,
                   "steer_rate": real, "yaw": real, "position": vector2}


def _bicycle_parameters(value, field):
    """``{key: value}`` of a bicycle's ``parameters`` table (keys of
    :data:`nhphys.systems.bicycle.BENCHMARK`, each of the benchmark's kind)."""
    from nhphys.systems.bicycle import BENCHMARK

    table = Table(value, field, tuple(BENCHMARK), "the bicycle's parameters")
    parsers = {}
    for key, default in BENCHMARK.items():
        shape = np.shape(default)
        parsers[key] = real if shape == () else matrix3 if shape == (3, 3) else vector(shape[0])
    return table.kwargs(parsers)


def _joint_inertia(value, field):
    """A joint's inertia: 3 principal moments (>= 0) or a 3x3 matrix."""
    if isinstance(value, list) and len(value) == 3 and not isinstance(value[0], list):
        v = vector3(value, field)
        if np.any(v < 0):
            _fail(field, f"expected principal moments >= 0, got {_show(value)}")
        return np.diag(v)
    return matrix3(value, field)


def _tree_parts(table):
    """The joints, wheels, blades, Suslov constraints and hulls of a ``type = "tree"`` system
    table."""
    from nhphys.systems.articulated import Blade, EllipsoidHull, Joint, SuslovConstraint, Wheel

    joints = []
    values = table_array(table.data["joints"], table.at("joints"), "a joint", MAX_JOINTS)
    for i, value in enumerate(values):
        field = _join(table.at("joints"), i)
        t = Table(value, field, JOINT_KEYS, "a joint", required=("parent", "kind"))
        kind = t.get("kind", choice(("revolute", "prismatic", "fixed")))
        if kind != "fixed" and "axis" not in t:
            _fail(t.at("axis"), f"missing; a {kind} joint needs an axis")
        joints.append(_built(field, Joint, t.get("parent", integer(-1, i - 1)), kind,
                             **t.kwargs({"axis": nonzero3, "offset": vector3,
                                         "mass": non_negative, "com": vector3,
                                         "inertia": _joint_inertia, "name": name})))
    last = max(len(joints) - 1, 0)

    def attached(key, what, keys, make, options, required=None):
        """The ``key`` array: each ``make(body, *required values, **options)``, on a joint's
        body."""
        out = []
        for i, value in enumerate(table_array(table.data.get(key, []), table.at(key), what,
                                              MAX_BLADES)):
            field = _join(table.at(key), i)
            t = Table(value, field, keys, what, required=("body",) + tuple(required or ()))
            given = [t.get(k, parse) for k, parse in (required or {}).items()]
            out.append(_built(field, make, t.get("body", integer(0, last)), *given,
                              **t.kwargs(options)))
        return out

    wheels = attached("wheels", "a wheel", WHEEL_KEYS, Wheel,
                      {"centre": vector3, "axis": nonzero3, "held": boolean,
                       "sideways": boolean}, {"radius": positive})
    blades = attached("blades", "a blade", BLADE_KEYS, Blade,
                      {"point": vector3, "direction": nonzero3})
    suslov = attached("suslov", "a Suslov constraint", SUSLOV_KEYS, SuslovConstraint,
                      {"axis": nonzero3})
    hulls = attached("hulls", "a hull", HULL_KEYS, EllipsoidHull,
                     {"centre": vector3, "held": boolean}, {"semi_axes": _semi_axes})
    return joints, wheels, blades, suslov, hulls


def _system(value, field, gravity, forces, ground=None):
    """The articulated system of a ``system`` table: ``type = "bicycle"`` (with optional
    ``parameters``) or ``type = "tree"`` (``joints``, ``wheels``, ``blades``, ``name``), a
    tree on the curved ``ground`` if one is given."""
    from nhphys.systems import Articulated, Bicycle

    if not isinstance(value, dict):
        _fail(field, f"expected a table (a system, with a `type`), got {_show(value)}")
    if "type" not in value:
        _fail(_join(field, "type"), "missing; a system needs a type: \"bicycle\", \"tree\"")
    kind = choice(("bicycle", "tree"))(value["type"], _join(field, "type"))
    if kind == "bicycle":
        table = Table(value, field, ("type", "parameters", "slope"), "a bicycle")
        parameters = table.get("parameters", _bicycle_parameters, {})
        slope = table.get("slope", number(-1.5707963267948966, 1.5707963267948966), 0.0)
        if ground is not None and slope != 0.0:
            _fail(table.at("slope"), "a bicycle on a curved ground takes no slope")
        try:
            if ground is not None:  # both wheels held on a curved ground
                from nhphys.systems import GroundBicycle

                return GroundBicycle(ground, parameters, forces=forces), "ground_bicycle"
            return Bicycle(parameters, forces=forces, slope=slope), kind
        except (ValueError, TypeError, ArithmeticError) as exc:
            named = [k for k in parameters if re.search(rf"(?<!\w){k}(?!\w)", str(exc))]
            _fail(_join(table.at("parameters"), named[0]) if len(named) == 1 else field,
                  _lower(str(exc)))
    table = Table(value, field, ("type", "name", "joints", "wheels", "blades", "suslov",
                                 "hulls", "gravity"), "a joint tree", required=("joints",))
    joints, wheels, blades, suslov, hulls = _tree_parts(table)
    gravity = table.get("gravity", vector3, gravity)  # the tree's own: a tilted plane's
    return _built(field, Articulated, joints, wheels, gravity=gravity,
                  name=table.get("name", name, None), forces=forces, blades=blades,
                  suslov=suslov, ground=ground, hulls=hulls), kind


def _joint_elements(value, field, budget):
    """The ``[[bodies.forces]]`` of an articulated system: ``joint_motor`` and
    ``joint_spring`` tables."""
    from nhphys.forces import JointMotor, JointSpring

    kinds = {"joint_motor": (("torque", "target_speed", "gain"), (), JointMotor,
                             {"torque": _schedule(1, budget),
                              "target_speed": _schedule(1, budget), "gain": non_negative}),
             "joint_spring": (("stiffness", "rest"), ("stiffness",), JointSpring,
                              {"stiffness": non_negative, "rest": real})}
    words = "type = \"joint_motor\" or \"joint_spring\""
    elements = []
    for i, item in enumerate(table_array(value, field, "a joint element", MAX_FORCES)):
        at = _join(field, i)
        if isinstance(item, dict) and "type" not in item:
            _fail(_join(at, "type"), f"missing; an articulated system's force element is a "
                                     f"joint motor or a joint spring: {words}")
        if isinstance(item, dict) and item.get("type") not in kinds:
            _fail(_join(at, "type"), f"an articulated system takes joint motors and springs "
                                     f"only ({words}), got {_show(item.get('type'))}")
        keys, required, make, parsers = kinds[item["type"]] if isinstance(item, dict) \
            else kinds["joint_motor"]
        t = Table(item, at, ("type", "joint") + keys, "a joint element",
                  required=("type", "joint") + required)
        joint = t.data["joint"]
        joint = integer(0, MAX_JOINTS - 1)(joint, t.at("joint")) if _is_number(joint) \
            else name(joint, t.at("joint"))
        elements.append(_built(at, make, joint, **t.kwargs(parsers)))
    return elements


def _articulated(scene, value, field, grounds, taken, budget):
    """A ``[[bodies]]`` table with a ``system``: :meth:`Scene.add_articulated`."""
    table = Table(value, field, ARTICULATED_KEYS, "an articulated system",
                  required=("system",))
    entry_name = table.get("name", name, None)
    forces = _joint_elements(table.data["forces"], table.at("forces"), budget) \
        if "forces" in table else None
    from nhphys.surfaces import Plane

    ground = None
    if "ground" in table:
        ground = name(table.data["ground"], table.at("ground"))
        if ground not in grounds:
            known = ", ".join(json.dumps(g) for g in grounds) or "none"
            _fail(table.at("ground"), f"no ground named {json.dumps(ground)} (the grounds: "
                                      f"{known})")
    # a joint tree on a curved ground carries it (Articulated(..., ground=...))
    from nhphys.surfaces.moving import MovingGround

    curved = grounds[ground] if ground is not None \
        and not isinstance(grounds[ground], (Plane, MovingGround)) \
        and isinstance(table.data["system"], dict) else None
    system, kind = _system(table.data["system"], table.at("system"), scene.gravity, None,
                           curved)
    for i, motor in enumerate(forces or ()):  # each motor's joint, named under its field
        joint = motor.joint
        if isinstance(joint, str) and joint not in system.joint_names \
                or not isinstance(joint, str) and joint >= system.n:
            known = ", ".join(json.dumps(n) for n in system.joint_names if n)
            _fail(_join(_join(table.at("forces"), i), "joint"),
                  f"the system has no joint {json.dumps(joint)} ({system.n} joints: {known})")
    if forces:
        system, kind = _system(table.data["system"], table.at("system"), scene.gravity, forces,
                               curved)
    if entry_name is None:
        entry_name = system.name.lower()
    if entry_name in taken:
        _fail(table.at("name"), f"the name {json.dumps(entry_name)} is taken by "
                                f"{taken[entry_name]}")
    initial = {}
    if "initial" in table:
        parsers = BICYCLE_INITIAL if kind == "bicycle" else \
            {"q": vector(system.n), "v": vector(system.n)}
        what = {"bicycle": "a bicycle", "ground_bicycle": "a bicycle on a curved ground (q "
                "and v)"}.get(kind, "a joint tree")
        initial = Table(table.data["initial"], table.at("initial"), tuple(parsers),
                        f"the initial conditions of {what}").kwargs(parsers)
    options = table.kwargs({"color": color})
    chosen = table.get("integrator", integrator, "dla")
    if chosen not in ("dla", "reference"):
        _fail(table.at("integrator"), f"an articulated system steps by \"dla\" or "
                                      f"\"reference\", got {json.dumps(chosen)}")
    options["integrator"] = chosen
    if curved is not None:
        options["ground"] = curved
    elif ground is not None:
        from nhphys.scene_articulated import ground_frame

        if not isinstance(grounds[ground], Plane):
            _fail(table.at("ground"), f"{json.dumps(ground)} is not a plane, a paraboloid or "
                                      "a height field: an articulated system rolls on one of "
                                      "those")
        try:
            ground_frame(system.tree.gravity_vector, scene.gravity, grounds[ground])
        except ValueError as exc:
            _fail(table.at("ground"), f"{json.dumps(ground)} cannot carry it: {exc}")
        options["ground"] = grounds[ground]
    # the links' display meshes, counted as bodies of the default resolution
    links = sum(1 for b in range(system.n) if system.tree.mass[b] > 0
                or system.tree.inertia[b].any()) + len(system.tree.disks) \
        + len(system.tree.hulls) + len(system.tree.blades)
    budget.take("display", max(links, 1) * DEFAULT_RESOLUTION["body"] ** 2, field)
    try:
        scene.add_articulated(system, name=entry_name, **options, **initial)
    except (ValueError, TypeError, ArithmeticError) as exc:
        message = str(exc)
        for prefix in (f"Body {entry_name!r}: ", f"System {entry_name!r}: "):
            message = message[len(prefix):] if message.startswith(prefix) else message
        # the initial condition the refusal names: in backquotes, else as a word
        named = [k for k in initial if f"`{k}`" in message] or \
            [k for k in initial if re.search(rf"(?<![\w.(]){re.escape(k)}(?![\w)])", message)]
        _fail(table.at("initial") + f".{named[0]}" if len(named) == 1 else field,
              _lower(message))
    taken[entry_name] = field


def _body(scene, value, field, grounds, taken, budget):
    from nhphys.bodies import RigidBody

    if isinstance(value, dict) and "system" in value:
        return _articulated(scene, value, field, grounds, taken, budget)
    table = Table(value, field, BODY_KEYS, "a body",
                  required=("mass", "inertia", "shape", "contact"))
    body_name = table.get("name", name, None)
    if body_name is None:
        body_name = f"body{len(scene.bodies)}"
    if body_name in taken:
        _fail(table.at("name"), f"the name {json.dumps(body_name)} is taken by {taken[body_name]}")
    mass = table.get("mass", positive)
    shape, _ = _typed(table.data["shape"], table.at("shape"), BODY_SHAPES, "a body shape",
                      budget)
    inertia = table.get("inertia", _inertia)
    com = table.get("com", vector3)
    if isinstance(inertia, str):
        if com is not None and np.any(com):
            _fail(table.at("inertia"), "\"uniform\" is about the shape's centre; with `com` "
                                       "elsewhere, give the inertia about the centre of mass")
        inertia = _uniform_inertia(shape, mass, table.at("inertia"))
    else:
        from nhphys._validation import as_inertia

        _built(table.at("inertia"), as_inertia, inertia, "inertia")
    body = _built(field, RigidBody, mass, inertia, shape,
                  **({} if com is None else {"com": com}), name=body_name)
    contact, kind = _contact(table.data["contact"], table.at("contact"), grounds)
    initial = {}
    if "initial" in table:
        parsers = INITIAL[kind]
        words = {"rolling": "a rolling body", "suslov": "a Suslov body",
                 "knife_edge": "a knife edge"}[kind]
        initial = Table(table.data["initial"], table.at("initial"), tuple(parsers),
                        f"the initial conditions of {words}").kwargs(parsers)
        if "omega" in initial and "momentum" in initial:
            _fail(table.at("initial"), "give one of `omega` and `momentum`, not both")
    options = table.kwargs({"color": color, "resolution": integer(*RESOLUTION_RANGE),
                            "integrator": integrator})
    budget.take("display", options.get("resolution", DEFAULT_RESOLUTION["body"]) ** 2,
                table.at("resolution"))
    forces = _forces(table.data["forces"], table.at("forces"), budget) \
        if "forces" in table else []
    try:
        scene.add_body(body, contact, name=body_name, forces=forces, **options, **initial)
    except (ValueError, TypeError, ArithmeticError) as exc:
        _refused_start(exc, field, body_name, kind)
    taken[body_name] = field


# -- force elements ------------------------------------------------------------------------------

def _schedule(dim, budget):
    """A parser of a force value of ``dim`` components: a constant (a number for ``dim`` 1,
    else ``[x, y, z]``) or a schedule table ``{times, values, kind}`` (see
    :class:`nhphys.forces.Schedule`); returns what the element's constructor takes."""
    constant = real if dim == 1 else vector3
    words = "a number" if dim == 1 else "an array of 3 numbers [x, y, z]"

    def parse(value, field):
        from nhphys.forces import Schedule

        if not isinstance(value, dict):
            if isinstance(value, list) or _is_number(value):
                return constant(value, field)
            _fail(field, f"expected {words} or a schedule table {{times, values, kind}}, got "
                         f"{_show(value)}")
        table = Table(value, field, ("times", "values", "kind"), "a schedule",
                      required=("times", "values"))
        times = table.data["times"]
        if not isinstance(times, list) or not 1 <= len(times) <= MAX_SCHEDULE_TIMES:
            _fail(table.at("times"), f"expected an array of 1 to {MAX_SCHEDULE_TIMES:,} "
                                     f"numbers, got {_show(times)}")
        budget.take("schedule", len(times), table.at("times"))
        times = vector(len(times))(times, table.at("times"))
        values = table.data["values"]
        if not isinstance(values, list) or len(values) != len(times):
            _fail(table.at("values"), f"expected an array of {len(times)} values (one per "
                                      f"time), got {_show(values)}")
        values = np.array([constant(v, _join(table.at("values"), i))
                           for i, v in enumerate(values)])
        kind = table.get("kind", choice(("linear", "cubic")), "linear")
        return _built(field, Schedule, times, values, kind)

    return parse


# type -> (keys, required keys, constructor name in nhphys.forces, words)
FORCE_KINDS = {
    "force": (("value", "point", "frame"), ("value",), "Force", "a force at a body point"),
    "torque": (("value", "frame"), ("value",), "Torque", "a torque"),
    "spring": (("stiffness", "anchor", "point", "rest_length"), ("stiffness", "anchor"),
               "Spring", "a linear spring"),
    "uniform_field": (("force",), ("force",), "UniformField", "a uniform force field"),
    "linear_drag": (("coefficient",), ("coefficient",), "LinearDrag", "viscous drag"),
    "angular_damping": (("coefficient", "about"), ("coefficient",), "AngularDamping",
                        "angular damping"),
    "spin_friction": (("coefficient",), ("coefficient",), "SpinFriction", "spin friction"),
    "rolling_resistance": (("coefficient",), ("coefficient",), "RollingResistance",
                           "rolling resistance"),
    "motor": (("torque", "axis", "target_speed", "gain"), (), "Motor", "a motor"),
}
FORCE_FIELDS = {  # key -> its parser, shared by every type that takes the key
    "point": vector3, "frame": choice(("space", "body")), "stiffness": non_negative,
    "anchor": vector3, "rest_length": non_negative, "force": vector3,
    "coefficient": non_negative, "about": choice(("all", "normal")), "axis": nonzero3, "gain": non_negative,
}


def _force(value, field, budget):
    """One force element from its table (``type`` and the constructor's arguments)."""
    import nhphys.forces as forces

    if not isinstance(value, dict):
        _fail(field, f"expected a table (a force element, with a `type`), got {_show(value)}")
    if "type" not in value:
        _fail(_join(field, "type"), f"missing; a force element needs a type: "
                                    f"{', '.join(FORCE_KINDS)}")
    kind = choice(tuple(FORCE_KINDS))(value["type"], _join(field, "type"))
    keys, required, make, words = FORCE_KINDS[kind]
    table = Table(value, field, ("type",) + keys, words, required)
    parsers = {k: FORCE_FIELDS[k] for k in keys if k in FORCE_FIELDS}
    parsers.update({k: _schedule(3, budget) for k in ("value",) if k in keys})
    parsers.update({k: _schedule(1, budget) for k in ("torque", "target_speed") if k in keys})
    return _built(field, getattr(forces, make), **table.kwargs(parsers))


def _forces(value, field, budget):
    """The force elements of a body (``[[bodies.forces]]``): a list."""
    return [_force(v, _join(field, i), budget)
            for i, v in enumerate(table_array(value, field, "a force element", MAX_FORCES))]


def _refused_start(exc, field, body_name, kind):
    """Report a refusal of :meth:`Scene.add_body` (a velocity violating a constraint, a body
    that does not fit its ground) under the initial condition it names, in the file's words."""
    from nhphys import conditions

    message = str(exc)
    prefix = f"Body {body_name!r}: "
    if message.startswith(prefix):
        message = message[len(prefix):]
    vocabulary = {"rolling": conditions.ROLLING, "suslov": conditions.SUSLOV,
                  "knife_edge": conditions.KNIFE_EDGE}[kind]
    for alias, canonical in vocabulary.aliases.items():  # the system's words -> the file's
        if isinstance(canonical, str):
            message = message.replace(f"`{alias}`", f"`{canonical}`").replace(
                f" {alias} ", f" {canonical} ")
    named = [k for k in vocabulary.conditions if f"`{k}`" in message]
    _fail(f"{field}.initial.{named[0]}" if len(named) == 1 else field, _lower(message))


def build(data, default_name="scene"):
    """A :class:`~nhphys.Scene` from the parsed TOML ``data`` (a dict), checked field by field.

    Returns
    -------
    Scene
        With ``defaults`` (the ``[run]`` settings given) and ``description``.

    Raises
    ------
    SceneFileError
    """
    from nhphys.scene import Scene

    top = Table(data, "", TOP_KEYS, "a scene file", required=("bodies",))
    version = top.get("format", integer(1, 2**31), FORMAT)
    if version != FORMAT:
        _fail("format", f"this nhphys reads format {FORMAT}, got {version} (a newer nhphys "
                        "wrote the file?)")
    scene = _built("", Scene, top.get("gravity", non_negative, 9.81),
                   top.get("name", name, default_name),
                   **top.kwargs({"camera": nonzero3}))
    scene.description = top.get("description", description, "")
    scene.defaults = top.get("run", read_run, {})
    budget = Budget()
    grounds = {}
    for i, value in enumerate(table_array(top.data.get("grounds", []), "grounds", "a ground",
                                          MAX_GROUNDS)):
        field = f"grounds[{i}]"
        table = Table(value, field, GROUND_KEYS, "a ground", required=("surface",))
        ground_name = table.get("name", name, f"ground{i}")
        if ground_name in grounds:
            _fail(table.at("name"), f"the name {json.dumps(ground_name)} is taken by an earlier "
                                    "ground")
        surface, _ = _typed(table.data["surface"], table.at("surface"), GROUND_SURFACES,
                            "a ground surface", budget)
        options = table.kwargs({"color": color, "resolution": integer(*RESOLUTION_RANGE),
                                "opacity": number(0.0, 1.0, low_open=True)})
        budget.take("display", options.get("resolution", DEFAULT_RESOLUTION["ground"]) ** 2,
                    table.at("resolution"))
        if "motion" in table:
            surface = _moving(surface, table.data["motion"], table.at("motion"))
        _built(field, scene.add_ground, surface, name=ground_name, **options)
        grounds[ground_name] = surface
    bodies = table_array(top.data["bodies"], "bodies", "a body", MAX_BODIES)
    if not bodies:
        _fail("bodies", "expected at least one body ([[bodies]])")
    taken = {}
    for i, value in enumerate(bodies):
        _body(scene, value, f"bodies[{i}]", grounds, taken, budget)
    return scene


# -- text and files ------------------------------------------------------------------------------

def parse_text(text, source=None):
    """The TOML ``text`` (str or UTF-8 bytes) as a dict; :class:`SceneFileError` if it is not
    TOML (naming the line and column), too large, or not UTF-8."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > MAX_TEXT_BYTES:
            raise SceneFileError(f"larger than {MAX_TEXT_BYTES} bytes", source=source)
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SceneFileError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    if not isinstance(text, str):
        raise TypeError(f"Expected scene file text (str or bytes), got {type(text).__name__}.")
    if len(text) > MAX_TEXT_BYTES:
        raise SceneFileError(f"larger than {MAX_TEXT_BYTES} characters", source=source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SceneFileError(f"not valid TOML: {exc}", source=source) from None
    except RecursionError:
        raise SceneFileError("not a scene file: arrays or tables nested too deeply",
                             source=source) from None
    except UnicodeEncodeError:  # lone surrogates in a str
        raise SceneFileError("not valid TOML: text that is not Unicode", source=source) from None


def loads(text, source=None, default_name="scene"):
    """A :class:`~nhphys.Scene` from scene-file text (str or bytes).

    Parameters
    ----------
    text : str or bytes
        The TOML text.
    source : str, optional
        Where it came from, at the start of error messages.
    default_name : str
        The scene's name when the file gives none.

    Raises
    ------
    SceneFileError
        (a ``ValueError``) naming the field and what was expected.
    """
    data = parse_text(text, source)
    try:
        return build(data, default_name)
    except SceneFileError as exc:
        raise exc.with_source(source) from None
    except RecursionError:
        raise SceneFileError("arrays nested too deeply", source=source) from None


def load_file(path):
    """``(scene, defaults)`` of the scene file at ``path`` (what ``nhphys run`` reads).

    Raises
    ------
    FileNotFoundError
        No such file.
    SceneFileError
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No scene file {path!r}.")
    size = os.path.getsize(path)
    if size > MAX_TEXT_BYTES:
        raise SceneFileError(f"larger than {MAX_TEXT_BYTES} bytes ({size})", source=path)
    with open(path, "rb") as f:
        raw = f.read(MAX_TEXT_BYTES + 1)
    stem = os.path.splitext(os.path.basename(path))[0]
    scene = loads(raw, source=path, default_name=stem if stem.strip() else "scene")
    return scene, dict(scene.defaults)


def looks_like_path(value):
    """True when ``value`` is a path (``os.PathLike``, or a one-line str ending with .toml)."""
    if isinstance(value, os.PathLike):
        return True
    return isinstance(value, str) and "\n" not in value and value.strip().endswith(".toml")


def load(path_or_text):
    """A :class:`~nhphys.Scene` from a scene file's path (``os.PathLike`` or a str ending with
    ``.toml``) or from its text (any other str, or bytes); see :meth:`nhphys.Scene.from_toml`."""
    if looks_like_path(path_or_text):
        return load_file(path_or_text)[0]
    if isinstance(path_or_text, str) and "\n" not in path_or_text \
            and "=" not in path_or_text and "[" not in path_or_text:
        raise SceneFileError(
            f"expected a path ending with .toml or the text of a scene file, got "
            f"{_show(path_or_text)}")
    return loads(path_or_text)


def read_description(path):
    """The first line of the ``description`` of the scene file at ``path``, read without
    building it (``""`` when it has none); ``SceneFileError`` if it is not TOML."""
    with open(path, "rb") as f:
        raw = f.read(MAX_TEXT_BYTES + 1)
    data = parse_text(raw, os.fspath(path))
    text = data.get("description", "")
    if not isinstance(text, str):
        return ""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""
