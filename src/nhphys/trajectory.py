"""``Trajectory``: the saved frames of a run, as named arrays sharing a leading time axis."""

import contextlib
import json
import math
import os
import re
import shutil
import struct
import tempfile
import tokenize
import warnings
import zipfile
import zlib

import numpy as np


class Trajectory:
    """Saved frames of a simulation.

    Every field is an array whose first axis is time: ``t`` (n,), and, depending on the system,
    ``R`` (n, 3, 3), ``omega`` (n, 3), ``momentum`` (n, 3), ``energy`` (n,),
    ``constraint_residual`` (n,), ... Fields are attributes (``traj.energy``) and items
    (``traj["energy"]``).

    Parameters
    ----------
    fields : dict of str -> ndarray
        Must contain ``t``; all arrays share its length.
    meta : dict, optional
        JSON-serialisable description of the run (system, integrator, step, ...).
    static : dict of str -> ndarray, optional
        Arrays without a time axis kept with the run (a scene's display meshes), saved and loaded
        with it.

    A run of a :class:`~nhphys.Scene` has a body axis after the time axis (``position``
    (n, B, 3), ``R`` (n, B, 3, 3), ...; ``meta["bodies"]`` names them); :meth:`body` picks one.
    A run of a single system from :func:`nhphys.simulate` has none and counts as one body.
    """

    def __init__(self, fields, meta=None, static=None):
        if "t" not in fields:
            raise ValueError("Expected `fields` to contain the times 't'.")
        n = len(fields["t"])
        for name, value in fields.items():
            if len(value) != n:
                raise ValueError(
                    f"Expected field `{name}` to have {n} frames like `t`, got {len(value)}."
                )
        self._fields = {k: np.asarray(v) for k, v in fields.items()}
        self.meta = dict(meta or {})
        self.static = {k: np.asarray(v) for k, v in (static or {}).items()}
        self.file = None  # the file last saved to or read from (see save / load)

    @property
    def events(self):
        """The mode changes of a body with a unilateral contact (``RollingBody(...,
        lift_off=True)``), in time order: a list of dicts with ``t``, ``kind`` (``"lift-off"``,
        ``"touchdown"``), ``before`` and ``after`` (``"rolling"``, ``"flight"``), ``impulse``
        (the normal impulse of an impact, N s) and ``energy_change`` (J). Empty for other
        runs."""
        return list(self.meta.get("events", []))

    @property
    def fields(self):
        """Names of the stored arrays."""
        return tuple(self._fields)

    def __getitem__(self, name):
        return self._fields[name]

    def __getattr__(self, name):
        try:
            return self.__dict__["_fields"][name]
        except KeyError:
            raise AttributeError(
                f"Trajectory has no field {name!r}; it has {tuple(self._fields)}."
            ) from None

    def __len__(self):
        return len(self._fields["t"])

    def __repr__(self):
        t = self._fields["t"]
        span = f"t = {t[0]:.6g} .. {t[-1]:.6g}" if len(t) else "empty"
        return f"<Trajectory {len(t)} frames, {span}, fields {list(self._fields)}>"

    @property
    def quaternion(self):
        """Orientation as unit quaternions ``(w, x, y, z)``, ``w >= 0``: (n, 4)."""
        from nhphys.lie.so3 import to_quaternion

        return to_quaternion(self._fields["R"])

    def save(self, path):
        """Write every field, the metadata and the static arrays to an ``.npz`` file.

        Lossless (arrays are stored as they are) and atomic: the file is written under a
        temporary name in the same folder, then renamed, so ``path`` is never half-written.
        Like :func:`numpy.savez`, ``.npz`` is appended to a path without it. Returns the path.
        """
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
        arrays = dict(self._fields)
        arrays.update({STATIC_PREFIX + k: v for k, v in self.static.items()})
        arrays[META_KEY] = np.array(json.dumps(self.meta))
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
        self.file = path
        return path

    @classmethod
    def load(cls, path, *, max_bytes=None):
        """Read a trajectory written by :meth:`save` (or the ``.part`` folder of a streamed run
        that was killed: everything it had written).

        The file is checked before anything is allocated: it must be an ``.npz`` archive whose
        arrays each hold exactly the bytes their headers declare, of plain numeric, boolean or
        string types (nothing is ever unpickled), and whose declared sizes add up to at most
        ``max_bytes``. Then the run itself is checked: the times ``t`` (finite, non-decreasing),
        one frame per time in every field, the shapes of the fields every reader relies on
        (``R`` (..., 3, 3), ``position`` / ``pose`` / ``contact_point`` (..., 3), ``energy``
        and ``constraint_residual`` one number per body), the body names and the stored scene
        description (meshes, colours) against the arrays they refer to.

        Parameters
        ----------
        path : str or path
            An ``.npz`` file, or a ``.part`` folder.
        max_bytes : int, optional
            The most memory the arrays may take once read. Default: ``LOAD_EXPANSION_LIMIT``
            (64) times the file's size, at least ``LOAD_FLOOR_BYTES`` (64 MiB) and at most
            ``LOAD_LIMIT_BYTES`` (16 GiB); the environment variable ``NHPHYS_MAX_LOAD_BYTES``
            replaces this default. Files written by :meth:`save` are not compressed and take
            about their own size.

        Returns
        -------
        Trajectory
            With ``file`` set to ``path``.

        Raises
        ------
        ValueError
            The file is not such a run (empty, truncated, corrupt, a lone ``.npy``, malformed
            metadata, missing or misshapen fields, ...) or is larger than ``max_bytes``: the
            message names the file and what is wrong.
        OSError
            The file cannot be read (missing, no permission).
        """
        path = os.fspath(path)
        if os.path.isdir(path):
            return TrajectoryWriter.recover(path, max_bytes=max_bytes)
        arrays = read_npz(path, max_bytes)
        fields, static = {}, {}
        for k, v in arrays.items():
            if k == META_KEY:
                continue
            if k.startswith(STATIC_PREFIX):
                static[k[len(STATIC_PREFIX):]] = v
            else:
                fields[k] = v
        meta = parse_meta(arrays[META_KEY], path) if META_KEY in arrays else {}
        check_run(fields, meta, static, path)
        traj = cls(fields, meta, static)
        traj.file = path
        return traj

    @classmethod
    def concatenate(cls, parts, meta=None, static=None):
        """Join lists of frame dicts (each with the same keys) into one trajectory."""
        keys = parts[0].keys()
        return cls({k: np.concatenate([p[k] for p in parts]) for k in keys}, meta, static)

    # -- bodies and poses -----------------------------------------------------------------------
    @property
    def body_names(self):
        """Names of the bodies: ``meta["bodies"]``, or ``["body"]`` for a single system."""
        return list(self.meta.get("bodies", ["body"]))

    @property
    def multibody(self):
        """True when the fields have a body axis (a run of a Scene)."""
        return "bodies" in self.meta

    def body(self, which):
        """One body's frames, by name or index: a single-body trajectory (no body axis)."""
        if not self.multibody:
            raise ValueError("This trajectory holds a single system; it has no body axis.")
        names = self.body_names
        if isinstance(which, str):
            if which not in names:
                raise ValueError(f"Expected `which` to be one of {names}, got {which!r}.")
            index = names.index(which)
        else:
            index = int(which)
            if not -len(names) <= index < len(names):
                raise ValueError(f"Expected `which` to index {len(names)} bodies, got {which}.")
        fields = {k: (v if k == "t" else v[:, index]) for k, v in self._fields.items()}
        meta = {k: v for k, v in self.meta.items() if k not in ("bodies", "scene")}
        meta["body"] = names[index]
        return Trajectory(fields, meta)

    def body_poses(self):
        """Centre-of-mass positions (n, B, 3) and rotations body -> space (n, B, 3, 3).

        From ``position`` and ``R``; a system without ``position`` sits at the origin, and a
        planar one with ``pose`` (x, y, theta) becomes a turn about ``z`` at (x, y, 0).
        """
        f = self._fields
        n = len(self)
        if "R" in f:
            R = f["R"]
            position = f["position"] if "position" in f else np.zeros(R.shape[:-2] + (3,))
        elif "pose" in f:
            pose = f["pose"]
            c, s = np.cos(pose[..., 2]), np.sin(pose[..., 2])
            R = np.zeros(pose.shape[:-1] + (3, 3))
            R[..., 0, 0], R[..., 0, 1], R[..., 1, 0], R[..., 1, 1] = c, -s, s, c
            R[..., 2, 2] = 1.0
            position = np.concatenate([pose[..., :2], np.zeros(pose.shape[:-1] + (1,))], -1)
        else:
            raise ValueError(f"Trajectory has no poses: it needs `R` or `pose`, got {self.fields}.")
        if not self.multibody:
            R, position = R.reshape(n, 1, 3, 3), position.reshape(n, 1, 3)
        return position, R

    # -- conversions ----------------------------------------------------------------------------
    def to_csv(self, path):
        """Write one row per body per frame: ``t, body, x, y, z, qw, qx, qy, qz``.

        Positions are of the centre of mass, the quaternion ``(w, x, y, z)`` (``w >= 0``) turns
        body to space. Numbers are written with 17 significant digits (they read back exactly);
        the file is written atomically. Returns the path.
        """
        import csv

        from nhphys.lie.so3 import to_quaternion

        path = os.fspath(path)
        position, R = self.body_poses()
        q = to_quaternion(R)
        names = self.body_names
        t = self._fields["t"]
        with atomic_path(path) as tmp:
            with open(tmp, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(CSV_COLUMNS)
                for i in range(len(t)):
                    for b, name in enumerate(names):
                        w.writerow([repr(float(t[i])), name]
                                   + [repr(float(v)) for v in position[i, b]]
                                   + [repr(float(v)) for v in q[i, b]])
        return path

    @staticmethod
    def read_csv(path):
        """Read a file written by :meth:`to_csv`: ``t`` (n,), ``names``, ``position`` (n, B, 3),
        ``quaternion`` (n, B, 4).

        Rows are matched to bodies by the ``body`` column, frame by frame (a frame is the rows
        sharing one ``t``), so the order of the rows within a frame does not matter. Bodies are
        named in the order they first appear.

        Raises
        ------
        ValueError
            Not such a file: wrong columns, a row of the wrong length, a value that is not a
            number, a body listed twice in a frame or missing from one (the line is named).
        """
        import csv

        path = os.fspath(path)
        with open(path, newline="") as f:
            try:
                rows = list(csv.reader(f))
            except (csv.Error, UnicodeDecodeError) as exc:
                raise ValueError(f"{path} is not a CSV file: {exc}.") from None
        if not rows or rows[0] != list(CSV_COLUMNS):
            raise ValueError(f"Expected {path} to start with the columns {CSV_COLUMNS}.")
        frames = {}  # t -> {body name: (line, 7 numbers)}, in the order of the file
        names = {}
        for line, row in enumerate(rows[1:], start=2):
            if len(row) != len(CSV_COLUMNS):
                raise ValueError(f"{path}, line {line}: expected {len(CSV_COLUMNS)} values, "
                                 f"got {len(row)}.")
            try:
                values = [float(v) for i, v in enumerate(row) if i != 1]
            except ValueError:
                bad = next(c for c, v in zip(CSV_COLUMNS, row) if c != "body"
                           and not _is_number(v))
                raise ValueError(f"{path}, line {line}: expected a number in column "
                                 f"{bad!r}.") from None
            t, name = values[0], row[1]
            frame = frames.setdefault(t, {})
            if name in frame:
                raise ValueError(f"{path}, line {line}: body {name!r} appears twice at "
                                 f"t = {t!r} (also on line {frame[name][0]}).")
            frame[name] = (line, values[1:])
            names.setdefault(name, None)
        names = list(names)
        for t, frame in frames.items():
            if len(frame) != len(names):
                missing = [n for n in names if n not in frame]
                raise ValueError(f"{path}: at t = {t!r} the bodies {missing} are missing.")
        data = np.array([[frame[n][1] for n in names] for frame in frames.values()],
                        dtype=float).reshape(len(frames), len(names), 7)
        return np.array(list(frames), dtype=float), names, data[..., 0:3], data[..., 3:7]

    def resample(self, fps, speed=1.0):
        """Frames at a fixed rate for playback: times ``t0, t0 + speed/fps, ...`` up to the end.

        Rotations are interpolated along the geodesic of SO(3) (``R_i exp(s log(R_i^T R_{i+1}))``),
        every other field linearly; frames at saved times are reproduced exactly.

        Parameters
        ----------
        fps : float
            Frames per second of the result, > 0.
        speed : float
            Simulated seconds per second of playback, > 0.
        """
        from nhphys._validation import as_positive_scalar
        from nhphys.lie import so3

        fps = as_positive_scalar(fps, "fps")
        speed = as_positive_scalar(speed, "speed")
        t = self._fields["t"]
        if len(t) < 2:
            return Trajectory(dict(self._fields), dict(self.meta), self.static)
        step = speed / fps
        count = int(np.floor((t[-1] - t[0]) / step * (1 + 1e-12))) + 1
        new_t = t[0] + step * np.arange(count)
        i = np.clip(np.searchsorted(t, new_t, side="right") - 1, 0, len(t) - 2)
        s = (new_t - t[i]) / (t[i + 1] - t[i])
        at_start = np.isclose(s, 0.0, rtol=0.0, atol=1e-9)  # on a saved frame: take it as is
        at_end = np.isclose(s, 1.0, rtol=0.0, atol=1e-9)
        fields = {"t": new_t}
        for name, v in self._fields.items():
            if name == "t" or not np.issubdtype(v.dtype, np.floating):
                if name != "t":
                    fields[name] = v[i]
                continue
            shape = (-1,) + (1,) * (v.ndim - 1)
            if name == "R":
                rel = np.swapaxes(v[i], -1, -2) @ v[i + 1]
                sb = s.reshape((-1,) + (1,) * (v.ndim - 3))
                out = v[i] @ so3.exp(sb[..., None] * so3.log(rel))
            else:
                out = v[i] + s.reshape(shape) * (v[i + 1] - v[i])
            out[at_start] = v[i][at_start]
            out[at_end] = v[i + 1][at_end]
            fields[name] = out
        meta = dict(self.meta, resampled_fps=fps, resampled_speed=speed)
        return Trajectory(fields, meta, self.static)

    def play(self, scene=None, **options):
        """Replay this run in a window (see :func:`nhphys.viz.play`)."""
        from nhphys import viz

        return viz.play(self, scene, **options)


META_KEY = "__meta__"
STATIC_PREFIX = "__static__."
CSV_COLUMNS = ("t", "body", "x", "y", "z", "qw", "qx", "qy", "qz")

# -- reading run files safely ------------------------------------------------------------------
# A run file is a zip archive of .npy arrays. Everything is checked before an array is allocated:
# the sizes the headers declare against what the archive holds and against a memory limit, so a
# corrupt or hostile file is a ValueError, never a huge allocation, a pickle or a traceback.

LOAD_LIMIT_BYTES = 16 * 2**30  # the default limit never exceeds this
LOAD_FLOOR_BYTES = 64 * 2**20  # ... and never goes below this, whatever the file's size
LOAD_EXPANSION_LIMIT = 64  # ... and in between is this many times the size of the file(s)
LOAD_LIMIT_ENV = "NHPHYS_MAX_LOAD_BYTES"  # replaces the default when set
ARRAY_KINDS = "biufcUS"  # bool, integers, floats, complex, strings: no objects, no records
_ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")  # a member, or an empty archive
_NPY_START = b"\x93NUMPY"
# what reading a damaged archive raises, from zipfile, zlib, numpy's .npy reader (which tokenizes
# the header text: a garbled header can raise TokenError or SyntaxError) and struct
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, struct.error, NotImplementedError,
            RuntimeError, ValueError, OverflowError, KeyError, OSError, tokenize.TokenError,
            SyntaxError)
# the fields every reader relies on, and their shape after the time (and body) axes
FIELD_SHAPES = {"R": (3, 3), "position": (3,), "pose": (3,), "contact_point": (3,),
                "energy": (), "constraint_residual": ()}


def default_load_limit(size):
    """The default ``max_bytes`` of :meth:`Trajectory.load` for files of ``size`` bytes."""
    text = os.environ.get(LOAD_LIMIT_ENV)
    if text:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"Expected ${LOAD_LIMIT_ENV} to be a number of bytes >= 1, got "
                             f"{text!r}.")
        return value
    return min(LOAD_LIMIT_BYTES, max(LOAD_FLOOR_BYTES, LOAD_EXPANSION_LIMIT * size))


def _size(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return None


def read_npz(path, max_bytes=None):
    """The arrays of an ``.npz`` file, each checked before it is allocated.

    Parameters
    ----------
    path : str or path
    max_bytes : int, optional
        The most the arrays may take together; default :func:`default_load_limit` of the file's
        size.

    Returns
    -------
    dict of str -> ndarray
        By member name (without ``.npy``), in the order of the archive.

    Raises
    ------
    ValueError
        Not an archive of ``.npy`` arrays (empty, truncated, corrupt, a lone ``.npy``), an array
        of Python objects or records, a header that declares more or fewer bytes than its member
        holds, a member whose checksum does not match, or more than ``max_bytes`` in all.
    OSError
        The file cannot be opened.
    """
    path = os.fspath(path)
    size = os.path.getsize(path)
    limit = default_load_limit(size) if max_bytes is None else int(max_bytes)
    with open(path, "rb") as f:
        start = f.read(8)
        if not start:
            raise ValueError(f"{path} is empty: not a run file (.npz).")
        if start.startswith(_NPY_START):
            raise ValueError(f"{path} is a single .npy array, not a run file (.npz).")
        if start[:4] not in _ZIP_STARTS:
            raise ValueError(f"{path} is not a run file: an .npz starts like a zip archive, "
                             f"this starts with {start[:8]!r}.")
        f.seek(0)
        try:
            return _read_members(f, path, limit)
        except _DAMAGED as exc:
            if isinstance(exc, ValueError) and str(exc).startswith(path):
                raise  # already says what is wrong
            if isinstance(exc, OSError) and not isinstance(exc, zipfile.BadZipFile) \
                    and exc.errno not in (None, 22):  # a real read error, not a bad offset
                raise
            raise ValueError(f"{path} is damaged (truncated or corrupt): "
                             f"{type(exc).__name__}: {exc}".rstrip(": ") + ".") from None


def _read_members(f, path, limit):
    fmt = np.lib.format
    arrays = {}
    with zipfile.ZipFile(f) as archive:
        members, total = [], 0
        for info in archive.infolist():
            name = info.filename
            if not name.endswith(".npy"):
                raise ValueError(f"{path}: member {name!r} is not an .npy array.")
            key = name[:-4]
            if key in arrays or any(key == m[0] for m in members):
                raise ValueError(f"{path}: the array {key!r} is stored twice.")
            with archive.open(info) as member:
                version = fmt.read_magic(member)
                if version == (1, 0):
                    shape, fortran, dtype = fmt.read_array_header_1_0(member)
                elif version == (2, 0):
                    shape, fortran, dtype = fmt.read_array_header_2_0(member)
                else:
                    raise ValueError(f"{path}: array {key!r} has .npy format version "
                                     f"{version}; expected 1.0 or 2.0.")
                header = member.tell()
            if dtype.hasobject or dtype.kind not in ARRAY_KINDS or dtype.fields is not None \
                    or dtype.subdtype is not None:
                raise ValueError(f"{path}: array {key!r} has type {dtype}; run files hold only "
                                 f"numbers, booleans and strings (Python objects are never "
                                 f"unpickled).")
            if any(d < 0 for d in shape):
                raise ValueError(f"{path}: array {key!r} declares the shape {shape}.")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes != info.file_size - header:
                raise ValueError(
                    f"{path}: array {key!r} declares shape {shape} of {dtype} "
                    f"({nbytes} bytes), but its member holds {info.file_size - header} bytes: "
                    f"the file is truncated or corrupt.")
            total += nbytes
            if total > limit:
                raise ValueError(
                    f"{path} declares at least {_size(total)} of arrays, more than the limit "
                    f"of {_size(limit)} for a file of {_size(os.path.getsize(path))}; if the "
                    f"file is trusted, pass a larger `max_bytes` (or set ${LOAD_LIMIT_ENV}).")
            members.append((key, info))
        for key, info in members:
            with archive.open(info) as member:
                arrays[key] = fmt.read_array(member, allow_pickle=False)
                if member.read(1):  # also completes the checksum test of the member
                    raise ValueError(f"{path}: array {key!r} is followed by extra bytes.")
    return arrays


def parse_meta(array, source):
    """The metadata dict stored as one JSON string in ``array`` (0-d, of strings)."""
    if array.ndim != 0 or array.dtype.kind not in "US":
        raise ValueError(f"{source}: the metadata {META_KEY!r} must be one JSON string, got an "
                         f"array of shape {array.shape} and type {array.dtype}.")
    text = array[()]
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        meta = json.loads(str(text))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{source}: the metadata is not valid JSON ({exc}).") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{source}: the metadata must be a JSON object, got "
                         f"{type(meta).__name__}.")
    return meta


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _finite_numbers(value, count):
    return isinstance(value, list) and len(value) == count and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for v in value)


def check_run(fields, meta, static, source):
    """Raise ``ValueError`` naming the first thing in a run's arrays and metadata that a reader
    of it (:class:`Trajectory`, the viewer, the exporters) could not use."""
    if "t" not in fields:
        raise ValueError(f"{source}: no field 't' (the times); it holds {sorted(fields)}.")
    t = fields["t"]
    if t.ndim != 1 or t.dtype.kind not in "iuf":
        raise ValueError(f"{source}: the times 't' must be one number per frame, got shape "
                         f"{t.shape} of {t.dtype}.")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ValueError(f"{source}: the times 't' must be finite and non-decreasing.")
    n = len(t)
    bodies = meta.get("bodies")
    if bodies is not None:
        if not (isinstance(bodies, list) and bodies and all(isinstance(b, str) for b in bodies)
                and len(set(bodies)) == len(bodies)):
            raise ValueError(f"{source}: meta['bodies'] must be a list of distinct body names, "
                             f"got {bodies!r}.")
    lead = 1 if bodies is None else 2
    for name, v in fields.items():
        if name == "t":
            continue
        if v.ndim < lead or len(v) != n:
            raise ValueError(f"{source}: field {name!r} has shape {v.shape}; expected "
                             f"{n} frames like 't'" + ("." if bodies is None else
                                                      f", then {len(bodies)} bodies."))
        if bodies is not None and v.shape[1] != len(bodies):
            raise ValueError(f"{source}: field {name!r} has shape {v.shape}; expected "
                             f"{len(bodies)} bodies ({bodies}) after its {n} frames.")
        want = FIELD_SHAPES.get(name)
        if want is not None and (v.shape[lead:] != want or v.dtype.kind not in "iuf"):
            head = "(n)" if bodies is None else "(n, B)"
            raise ValueError(f"{source}: field {name!r} must be numbers of shape "
                             f"{head[:-1]}{''.join(', ' + str(d) for d in want)}), got "
                             f"{v.shape} of {v.dtype}.")
    playback = meta.get("playback")
    if playback is not None and not isinstance(playback, dict):
        raise ValueError(f"{source}: meta['playback'] must be an object, got {playback!r}.")
    if "scene" in meta:
        _check_scene(meta["scene"], static, 1 if bodies is None else len(bodies), source)


def _check_scene(desc, static, n_bodies, source):
    """The stored display (see :meth:`nhphys.scene_display.SceneDisplay.to_meta`) against the
    meshes it refers to."""
    where = f"{source}: meta['scene']"
    if not isinstance(desc, dict):
        raise ValueError(f"{where} must be an object, got {type(desc).__name__}.")
    if not isinstance(desc.get("name", ""), str):
        raise ValueError(f"{where}['name'] must be a string, got {desc['name']!r}.")
    camera = desc.get("camera")
    if camera is not None and not (_finite_numbers(camera, 3) and any(camera)):
        raise ValueError(f"{where}['camera'] must be a direction of 3 numbers, got {camera!r}.")
    for kind in ("grounds", "bodies"):
        items = desc.get(kind)
        if not isinstance(items, list):
            raise ValueError(f"{where}[{kind!r}] must be a list, got {items!r}.")
        for i, item in enumerate(items):
            at = f"{where}[{kind!r}][{i}]"
            if not isinstance(item, dict):
                raise ValueError(f"{at} must be an object, got {item!r}.")
            for key in ("name", "mesh", "color"):
                if not isinstance(item.get(key), str):
                    raise ValueError(f"{at}[{key!r}] must be a string, got {item.get(key)!r}.")
            if not re.fullmatch(r"#[0-9a-fA-F]{6}", item["color"]):
                raise ValueError(f"{at}['color'] must be #rrggbb, got {item['color']!r}.")
            if "pivot" in item and not _finite_numbers(item["pivot"], 3):
                raise ValueError(f"{at}['pivot'] must be 3 numbers, got {item['pivot']!r}.")
            opacity = item.get("opacity", 1.0)
            if not (_finite_numbers([opacity], 1) and 0 <= opacity <= 1):
                raise ValueError(f"{at}['opacity'] must be a number in [0, 1], got {opacity!r}.")
            key = item["mesh"]
            points, faces = static.get(f"{key}.points"), static.get(f"{key}.faces")
            colors = static.get(f"{key}.colors")
            if points is None or faces is None:
                raise ValueError(f"{at}: the mesh {key!r} is missing (no arrays "
                                 f"'{key}.points' and '{key}.faces').")
            if points.ndim != 2 or points.shape[1] != 3 or len(points) == 0 \
                    or points.dtype.kind not in "iuf" or not np.all(np.isfinite(points)):
                raise ValueError(f"{at}: the points of mesh {key!r} must be finite numbers of "
                                 f"shape (m >= 1, 3), got {points.shape} of {points.dtype}.")
            if faces.ndim != 2 or faces.shape[1] != 3 or faces.dtype.kind not in "iu" \
                    or (faces.size and (faces.min() < 0 or faces.max() >= len(points))):
                raise ValueError(f"{at}: the faces of mesh {key!r} must be (k, 3) indices of "
                                 f"its {len(points)} points.")
            if colors is not None and (colors.shape != points.shape or colors.dtype.kind != "u"
                                       or colors.dtype.itemsize != 1):
                raise ValueError(f"{at}: the colours of mesh {key!r} must be uint8 of shape "
                                 f"{points.shape}, got {colors.shape} of {colors.dtype}.")
    if len(desc["bodies"]) != n_bodies:
        raise ValueError(f"{where} draws {len(desc['bodies'])} bodies; the run has {n_bodies}.")


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; rename it to ``path`` only if the block succeeds.

    Nothing half-written is ever left at ``path``: on an error (or Ctrl-C) the temporary file is
    removed and ``path`` keeps what it had.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    stem, ext = os.path.splitext(base)
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".tmp{ext}", dir=folder)
    os.close(fd)
    try:
        yield tmp
        if os.path.isfile(tmp):  # mkstemp makes it private; give it the usual permissions
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            if os.path.isdir(tmp):
                shutil.rmtree(tmp)
            else:
                os.remove(tmp)
        raise


def check_writable(path, name="out"):
    """Raise ``ValueError`` unless a file can be created at ``path`` (tried, then removed)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"Expected `{name}` to be a file path, got the folder {path!r}.")
    if not os.path.isdir(folder):
        raise ValueError(f"Expected `{name}` in an existing folder, got {path!r} "
                         f"({folder} does not exist).")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".nhphys-check.", dir=folder)
        os.close(fd)
        os.remove(tmp)
    except OSError as exc:
        raise ValueError(f"Expected `{name}` to be writable, got {path!r}: {exc.strerror}.") \
            from None
    return path


OUTCOMES = ("failed", "interrupted", "killed")
# A run's checkpoint (the whole integrator state at a chunk's end, see
# nhphys.integrators.run.Run.checkpoint) is stored under names with this prefix: beside the
# frames in each chunk of a .part folder, and among the static arrays of a whole run's file.
# Besides the run's own arrays it holds `frames`, the number of frames up to its step.
CHECKPOINT_PREFIX = "checkpoint."


def outcome_path(path, outcome):
    """Where a run that did not complete is kept, beside ``path``: ``NAME.npz`` ->
    ``NAME.failed.npz``, ``NAME.interrupted.npz`` or ``NAME.killed.npz`` (frames of a killed run
    found when a new run starts writing to ``path``)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"Expected `outcome` to be one of {OUTCOMES}, got {outcome!r}.")
    path = os.fspath(path)
    stem = path[:-4] if path.endswith(".npz") else path
    return f"{stem}.{outcome}.npz"


def records_failure(trajectory):
    """True when ``trajectory`` ended at a failed step or a contact event (the metadata
    ``failure`` / ``event`` that :class:`nhphys.errors.NewtonError` writes)."""
    return "failure" in trajectory.meta or "event" in trajectory.meta


def split_checkpoint(arrays):
    """``(others, checkpoint)``: the arrays of ``arrays`` without the prefix
    :data:`CHECKPOINT_PREFIX`, and those with it (prefix removed), or ``None`` if none."""
    others, checkpoint = {}, {}
    for k, v in arrays.items():
        if k.startswith(CHECKPOINT_PREFIX):
            checkpoint[k[len(CHECKPOINT_PREFIX):]] = v
        else:
            others[k] = v
    return others, (checkpoint or None)


def with_checkpoint(static, checkpoint):
    """``static`` with ``checkpoint`` (a dict of arrays, or None) in place of any it had."""
    static, _ = split_checkpoint(dict(static or {}))
    static.update({CHECKPOINT_PREFIX + k: np.asarray(v) for k, v in (checkpoint or {}).items()})
    return static


def checkpoint_of(trajectory):
    """The checkpoint stored with ``trajectory`` (its static arrays ``checkpoint.*``), or None.

    A run streamed to disk stores one with every chunk of frames, and every whole-run file the
    driver writes holds the last one: the state at the end of the last chunk finished. Its
    ``frames`` is the number of frames up to that step, ``steps_done`` the step.
    """
    return split_checkpoint(trajectory.static)[1]


def _remove_folder(folder):
    """Remove ``folder`` without ever leaving it half-removed under its name: it is renamed
    (one atomic step) to a hidden name beside it, then deleted; a kill in between leaves the
    hidden folder, never a ``.part`` folder with some of its chunks gone."""
    parent, base = os.path.split(os.path.abspath(folder))
    trash = os.path.join(parent, f".{base}.removing-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.rename(folder, trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


class TrajectoryWriter:
    """Streams a run to disk as it is computed, and never lets an incomplete run replace a file.

    Each chunk of frames goes to its own file in the folder ``path + ".part"`` (each written
    atomically), with the run's checkpoint at the chunk's end when the driver gives one, so a
    killed process loses at most the chunk being computed: ``Trajectory.load(path + ".part")``
    reads what is there, and ``nhphys.simulate(..., resume=True)`` continues from it.
    :meth:`finish` writes the whole run in one file and removes the folder: at ``path`` only when
    the run is complete; a failed or interrupted run goes beside it (:func:`outcome_path`) and
    ``path`` keeps what it had.

    A ``.part`` folder already there when the writer is made holds the frames of a run that was
    killed: they are kept in ``NAME.killed.npz`` (with a warning) before anything else happens,
    unless ``resume`` asks to continue that run in it (:meth:`reopen`); one that cannot be read
    is an error rather than something to delete. One run at a time may write to a given path.

    Parameters
    ----------
    path : str or path
        The run's file; ``.npz`` is appended if missing. Checked to be writable here.
    resume : bool
        Leave a ``.part`` folder found at ``path`` for :meth:`reopen` (a resumed run continues
        writing into it) instead of keeping its frames in ``NAME.killed.npz``.

    Attributes
    ----------
    path : str
    folder : str
        The chunk folder, ``path + ".part"``.
    written : str or None
        The file :meth:`finish` wrote.
    kept : str or None
        Where the frames of a killed run found at the start were kept.
    """

    def __init__(self, path, *, resume=False):
        path = check_writable(os.fspath(path))
        if not path.endswith(".npz"):
            path = check_writable(path + ".npz")
        self.path = path
        self.folder = path + ".part"
        self.count = 0
        self.written = None
        self.kept = None
        if os.path.isdir(self.folder) and not (resume and self.has_chunks()):
            self.kept = self._keep_killed_run()
        self._remove_leftovers()

    def _remove_leftovers(self):
        """Delete what a process killed while removing this path's chunk folder left (the
        folder under its hidden name, see ``_remove_folder``)."""
        parent, base = os.path.split(os.path.abspath(self.folder))
        for name in os.listdir(parent):
            if name.startswith(f".{base}.removing-"):
                shutil.rmtree(os.path.join(parent, name), ignore_errors=True)

    def has_chunks(self):
        """True when the chunk folder holds at least one chunk of frames."""
        return os.path.isdir(self.folder) and any(
            f.startswith("chunk") for f in os.listdir(self.folder))

    def _keep_killed_run(self):
        """Move the frames of a killed run out of the way (into ``NAME.killed.npz``)."""
        if not self.has_chunks():
            _remove_folder(self.folder)  # started but never computed a frame: nothing to keep
            return None
        try:
            traj = self.recover(self.folder)
        except ValueError as exc:
            raise ValueError(
                f"{self.folder} holds the frames of an earlier run that was killed, and they "
                f"cannot be read ({exc}); move or remove it before writing {self.path}."
            ) from None
        kept = traj.save(outcome_path(self.path, "killed"))
        _remove_folder(self.folder)
        warnings.warn(f"{self.folder} held the frames of a run that was killed "
                      f"({len(traj)} frames); they are kept in {kept}.", RuntimeWarning,
                      stacklevel=3)
        return kept

    def begin(self, meta, static=None):
        """Start the chunk folder with the run's metadata and static arrays."""
        if os.path.isdir(self.folder):  # left by an earlier begin() of this writer
            _remove_folder(self.folder)
        os.makedirs(self.folder)
        self.count = 0
        Trajectory({"t": np.zeros(0)}, meta, static).save(os.path.join(self.folder, "meta.npz"))

    def reopen(self, meta, static=None):
        """Continue writing into the chunk folder of a run being resumed.

        The chunks up to the last one holding a checkpoint stay (they are the frames the
        resumed run starts from); later ones (the frames an interruption kept past the last
        checkpoint, which the resumed run computes again) and temporary files of a killed write
        are removed, and the metadata is rewritten.

        Returns
        -------
        int
            The number of frames in the chunks kept.
        """
        names = sorted(os.listdir(self.folder))
        for name in names:
            if name.startswith(".") and ".tmp" in name:  # a write a kill cut short
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.folder, name))
        chunks = [f for f in names if f.startswith("chunk") and f.endswith(".npz")]
        frames = 0
        keep = 0
        for i, name in enumerate(chunks):
            _, checkpoint = split_checkpoint(read_npz(os.path.join(self.folder, name)))
            if checkpoint is not None:
                keep, frames = i + 1, int(checkpoint["frames"])
        for name in reversed(chunks[keep:]):  # from the last, so the chunks stay contiguous
            os.remove(os.path.join(self.folder, name))
        Trajectory({"t": np.zeros(0)}, meta, static).save(os.path.join(self.folder, "meta.npz"))
        self.count = keep
        return frames

    def append(self, frames, checkpoint=None):
        """Write one chunk of frames (a dict of arrays with a leading time axis), with the
        run's ``checkpoint`` (a dict of arrays) at the chunk's end if given."""
        name = os.path.join(self.folder, f"chunk{self.count:06d}.npz")
        arrays = dict(frames)
        arrays.update({CHECKPOINT_PREFIX + k: v for k, v in (checkpoint or {}).items()})
        with atomic_path(name) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
        self.count += 1

    def finish(self, trajectory, complete=None):
        """Write the whole run in one file (atomically) and remove the chunks.

        Parameters
        ----------
        trajectory : Trajectory
        complete : bool or None
            ``True``: the run reached its end; it replaces ``path``. ``False``: it failed or was
            interrupted; it goes to ``NAME.interrupted.npz`` when ``trajectory.meta`` says
            ``interrupted``, else to ``NAME.failed.npz``, and ``path`` is left as it was.
            ``None`` (the call of drivers that do not pass it): complete unless the trajectory
            records a failure (:func:`records_failure`), so a failed run never replaces
            ``path``; an interrupted run then still goes to ``path`` -- drivers pass
            ``complete=not meta["interrupted"]`` to keep it beside instead.

        Returns
        -------
        str
            The file written (also ``self.written`` and ``trajectory.file``).
        """
        if complete is None:
            complete = not records_failure(trajectory)
        if complete:
            target = self.path
        else:
            target = outcome_path(self.path, "interrupted" if trajectory.meta.get("interrupted")
                                  else "failed")
        trajectory.save(target)
        self.discard()
        self.written = target
        return target

    def discard(self):
        """Remove the chunk folder (its frames are in the file :meth:`finish` wrote)."""
        if os.path.isdir(self.folder):
            _remove_folder(self.folder)

    @staticmethod
    def recover(folder, max_bytes=None):
        """The trajectory in a ``.part`` folder (of a run that did not finish), checked like
        :meth:`Trajectory.load` (``max_bytes`` for all its files together).

        Its static arrays hold the last checkpoint found in the chunks (see
        :func:`checkpoint_of`), if any.
        """
        folder = os.fspath(folder)
        names = sorted(os.listdir(folder))
        if "meta.npz" not in names:
            raise ValueError(f"{folder} is not the chunk folder of a run: it has no meta.npz.")
        chunks = [f for f in names if f.startswith("chunk") and f.endswith(".npz")]
        if not chunks:
            raise ValueError(f"Expected saved frames in {folder}, found none.")
        expected = [f"chunk{i:06d}.npz" for i in range(len(chunks))]
        if chunks != expected:
            missing = sorted(set(expected) - set(chunks))
            raise ValueError(f"{folder}: the chunks are not numbered from chunk000000.npz "
                             f"without gaps (missing {missing[:3]}, found {chunks[:3]} ...).")
        if max_bytes is None:
            size = sum(os.path.getsize(os.path.join(folder, f)) for f in chunks + ["meta.npz"])
            max_bytes = default_load_limit(size)
        head = Trajectory.load(os.path.join(folder, "meta.npz"), max_bytes=max_bytes)
        budget = max_bytes - sum(v.nbytes for v in head.static.values())
        parts = []
        checkpoint, count = None, 0
        for name in chunks:
            path = os.path.join(folder, name)
            part, state = split_checkpoint(read_npz(path, max(budget, 0)))
            budget -= sum(v.nbytes for v in part.values())
            budget -= sum(v.nbytes for v in (state or {}).values())
            if parts and (set(part) != set(parts[0]) or any(
                    part[k].shape[1:] != parts[0][k].shape[1:] for k in part)):
                raise ValueError(f"{path}: its fields {sorted(part)} or their shapes differ "
                                 f"from those of {chunks[0]}.")
            if "t" not in part:
                raise ValueError(f"{path}: no field 't' (the times); it holds {sorted(part)}.")
            parts.append(part)
            count += len(part["t"])
            if state is not None:
                frames = state.get("frames")
                if frames is None or frames.shape != () or frames.dtype.kind not in "iu" \
                        or int(frames) != count:
                    raise ValueError(f"{path}: its checkpoint does not say it follows the "
                                     f"{count} frames up to it (`frames` = {frames!r}).")
                checkpoint = state
        meta = dict(head.meta, interrupted=True, recovered_from=os.path.basename(folder))
        try:
            fields = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        except ValueError as exc:
            raise ValueError(f"{folder}: the chunks do not fit together ({exc}).") from None
        check_run(fields, meta, head.static, folder)
        traj = Trajectory(fields, meta, with_checkpoint(head.static, checkpoint))
        traj.file = folder
        return traj


class ResumeSource:
    """A run to continue (see :func:`resume_source`).

    Attributes
    ----------
    trajectory : Trajectory
        Its frames up to its checkpoint's step (later frames are dropped: the resumed run
        computes them again), with its metadata.
    checkpoint : dict of str -> ndarray
        The run's state at that step (``frames`` and ``steps_done`` included).
    where : str
        The file or ``.part`` folder it was read from.
    in_part : bool
        ``where`` is the ``.part`` folder of the output the resumed run writes (it continues
        writing into it).
    superseded : bool
        ``where`` is the ``NAME.interrupted.npz`` or ``NAME.killed.npz`` of that output: a
        complete resumed run holds all its frames, and removes it.
    """

    def __init__(self, trajectory, checkpoint, where, in_part=False, superseded=False):
        self.trajectory = trajectory
        self.checkpoint = checkpoint
        self.where = where
        self.in_part = in_part
        self.superseded = superseded

    @property
    def steps(self):
        """The step of the checkpoint."""
        return int(self.checkpoint["steps_done"])


def read_resume_source(where, in_part=False, superseded=False):
    """The :class:`ResumeSource` of a run file or a ``.part`` folder.

    Raises
    ------
    ValueError
        Not a run, or a run without a checkpoint (one run with ``Reference``, which cannot be
        resumed, or written before checkpoints were stored), or a checkpoint that does not
        match the frames.
    OSError
        It cannot be read.
    """
    traj = Trajectory.load(where)
    checkpoint = checkpoint_of(traj)
    if checkpoint is None:
        raise ValueError(f"{where} holds no checkpoint to resume from: only runs streamed or "
                         "saved by nhphys.simulate / Scene.simulate with an integrator that "
                         "keeps its state (not Reference) can be resumed.")
    for key in ("frames", "steps_done"):
        value = checkpoint.get(key)
        if value is None or value.shape != () or value.dtype.kind not in "iu":
            raise ValueError(f"{where}: its checkpoint has no whole number `{key}`.")
    frames = int(checkpoint["frames"])
    if not 1 <= frames <= len(traj):
        raise ValueError(f"{where}: its checkpoint follows {frames} frames, but the run has "
                         f"{len(traj)}.")
    if frames < len(traj):  # frames an interruption kept past the checkpoint
        fields = {k: traj[k][:frames] for k in traj.fields}
        kept = Trajectory(fields, traj.meta, traj.static)
        kept.file = traj.file
        traj = kept
    return ResumeSource(traj, checkpoint, os.fspath(where), in_part, superseded)


def resume_source(resume, out=None):
    """What ``resume=`` of :func:`nhphys.simulate` names: a :class:`ResumeSource`, or None.

    Parameters
    ----------
    resume : bool, str or path
        ``True``: the unfinished run of ``out``, the first of its ``.part`` folder (a killed
        run), ``NAME.interrupted.npz``, ``NAME.killed.npz``, or ``out`` itself (a complete
        run, to extend); ``None`` when there is none of them (the run starts from the
        beginning). A path: that run file or ``.part`` folder, which must exist.
    out : str or path, optional

    Raises
    ------
    ValueError
        ``resume=True`` without ``out``; a named file that does not exist or holds no
        checkpoint.
    """
    if resume is True:
        if out is None:
            raise ValueError("Expected `out` with resume=True (it finds the run to continue "
                             "beside `out`); or give the run's file as `resume`.")
        path = os.fspath(out)
        if not path.endswith(".npz"):
            path += ".npz"
        folder = path + ".part"
        if os.path.isdir(folder) and any(f.startswith("chunk") for f in os.listdir(folder)):
            return read_resume_source(folder, in_part=True)
        for candidate in (outcome_path(path, "interrupted"), outcome_path(path, "killed")):
            if os.path.isfile(candidate):
                return read_resume_source(candidate, superseded=True)
        return read_resume_source(path) if os.path.isfile(path) else None
    if isinstance(resume, bool) or not isinstance(resume, (str, os.PathLike)):
        raise TypeError(f"Expected `resume` to be True, False or the path of a run file or "
                        f".part folder, got {resume!r}.")
    where = os.fspath(resume)
    if not os.path.exists(where):
        raise ValueError(f"Expected `resume` to name an existing run file or .part folder, "
                         f"got {where!r}.")
    in_part = False
    if out is not None and os.path.isdir(where):
        path = os.fspath(out)
        path = path if path.endswith(".npz") else path + ".npz"
        in_part = os.path.abspath(where) == os.path.abspath(path + ".part")
    return read_resume_source(where, in_part)
