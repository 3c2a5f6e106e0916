"""``Trajectory``: the saved frames of a run, as named arrays sharing a leading time axis."""

import contextlib
import json
import os
import shutil
import tempfile

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
        return path

    @classmethod
    def load(cls, path):
        """Read a trajectory written by :meth:`save` (or the ``.part`` folder of a streamed run
        that was killed: everything it had written)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            return TrajectoryWriter.recover(path)
        with np.load(path, allow_pickle=False) as data:
            fields, static = {}, {}
            for k in data.files:
                if k == META_KEY:
                    continue
                if k.startswith(STATIC_PREFIX):
                    static[k[len(STATIC_PREFIX):]] = data[k]
                else:
                    fields[k] = data[k]
            meta = json.loads(str(data[META_KEY])) if META_KEY in data.files else {}
        return cls(fields, meta, static)

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
        ``quaternion`` (n, B, 4)."""
        import csv

        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if not rows or rows[0] != list(CSV_COLUMNS):
            raise ValueError(f"Expected {path} to start with the columns {CSV_COLUMNS}.")
        rows = rows[1:]
        names = list(dict.fromkeys(r[1] for r in rows))
        B = len(names)
        data = np.array([[float(v) for i, v in enumerate(r) if i != 1] for r in rows])
        data = data.reshape(-1, B, 8)
        return data[:, 0, 0], names, data[..., 1:4], data[..., 4:8]

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


class TrajectoryWriter:
    """Streams a run to disk as it is computed.

    Each chunk of frames goes to its own file in the folder ``path + ".part"`` (each written
    atomically), so a killed process loses at most the chunk being computed:
    ``Trajectory.load(path + ".part")`` reads what is there. :meth:`finish` writes the complete
    ``.npz`` atomically and removes the folder.
    """

    def __init__(self, path):
        path = check_writable(os.fspath(path))
        if not path.endswith(".npz"):
            path = check_writable(path + ".npz")
        self.path = path
        self.folder = path + ".part"
        self.count = 0

    def begin(self, meta, static=None):
        if os.path.isdir(self.folder):
            shutil.rmtree(self.folder)
        os.makedirs(self.folder)
        Trajectory({"t": np.zeros(0)}, meta, static).save(os.path.join(self.folder, "meta.npz"))

    def append(self, frames):
        name = os.path.join(self.folder, f"chunk{self.count:06d}.npz")
        with atomic_path(name) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **frames)
        self.count += 1

    def finish(self, trajectory):
        """Write the whole trajectory to ``path`` (atomically) and remove the chunks."""
        trajectory.save(self.path)
        self.discard()
        return self.path

    def discard(self):
        if os.path.isdir(self.folder):
            shutil.rmtree(self.folder, ignore_errors=True)

    @staticmethod
    def recover(folder):
        """The trajectory in a ``.part`` folder (of a run that did not finish)."""
        head = Trajectory.load(os.path.join(folder, "meta.npz"))
        chunks = sorted(f for f in os.listdir(folder) if f.startswith("chunk")
                        and f.endswith(".npz"))
        parts = []
        for name in chunks:
            with np.load(os.path.join(folder, name), allow_pickle=False) as data:
                parts.append({k: data[k] for k in data.files})
        if not parts:
            raise ValueError(f"Expected saved frames in {folder}, found none.")
        meta = dict(head.meta, interrupted=True, recovered_from=os.path.basename(folder))
        return Trajectory.concatenate(parts, meta, head.static)
