"""``Trajectory``: the saved frames of a run, as named arrays sharing a leading time axis."""

import json

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
    """

    def __init__(self, fields, meta=None):
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
        """Write every field and the metadata to an ``.npz`` file (lossless)."""
        np.savez(path, **self._fields, __meta__=np.array(json.dumps(self.meta)))

    @classmethod
    def load(cls, path):
        """Read a trajectory written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as data:
            fields = {k: data[k] for k in data.files if k != "__meta__"}
            meta = json.loads(str(data["__meta__"])) if "__meta__" in data.files else {}
        return cls(fields, meta)

    @classmethod
    def concatenate(cls, parts, meta=None):
        """Join lists of frame dicts (each with the same keys) into one trajectory."""
        keys = parts[0].keys()
        return cls({k: np.concatenate([p[k] for p in parts]) for k in keys}, meta)
