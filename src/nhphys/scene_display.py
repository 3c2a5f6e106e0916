"""What a viewer needs to draw a scene, as NumPy arrays: meshes, colours, a camera direction.

:class:`SceneDisplay` is built by :meth:`nhphys.Scene.display`, stored in every trajectory that
:meth:`nhphys.Scene.simulate` returns, and read back from a saved run, so a run can be shown
without the script that made it. Nothing here imports PyVista (only named colours import
matplotlib, when used): :mod:`nhphys.viz` turns these arrays into actors.
"""

from __future__ import annotations

import numpy as np

from nhphys._validation import as_float_array

PALETTE = ("#d1495b", "#2e86ab", "#edae49", "#66a182", "#8e6c8a", "#00798c", "#f18f01",
           "#6a4c93")
GROUND_COLOR = "#c9c3b8"


def as_color(value, name="color"):
    """A colour as ``#rrggbb`` (from a name matplotlib knows, a hex string or an RGB triple)."""
    if isinstance(value, str) and len(value) == 7 and value.startswith("#"):
        try:
            int(value[1:], 16)
            return value.lower()
        except ValueError:
            pass
    if not isinstance(value, str):
        rgb = as_float_array(value, name)
        if rgb.shape != (3,) or np.any(rgb < 0) or np.any(rgb > 1):
            raise ValueError(f"Expected `{name}` to be 3 numbers in [0, 1], got {value!r}.")
        return "#" + "".join(f"{round(255 * c):02x}" for c in rgb)
    from matplotlib import colors  # only for named colours; not imported by `import nhphys`

    try:
        return colors.to_hex(value)
    except ValueError:
        raise ValueError(f"Expected `{name}` to be a colour name or '#rrggbb', got {value!r}.") \
            from None


def mesh_from(value, name="mesh"):
    """``(points (m, 3), faces (k, 3))`` from a PyVista mesh or a ``(points, faces)`` pair."""
    if hasattr(value, "points") and hasattr(value, "faces"):
        poly = value.triangulate() if hasattr(value, "triangulate") else value
        points = np.asarray(poly.points, dtype=float)
        flat = np.asarray(poly.faces, dtype=np.int64)
        if len(flat) % 4 or np.any(flat[::4] != 3):
            raise ValueError(f"Expected `{name}` to triangulate into triangles only.")
        return points, flat.reshape(-1, 4)[:, 1:].copy()
    try:
        points, faces = value
    except (TypeError, ValueError):
        raise TypeError(
            f"Expected `{name}` to be a PyVista mesh or a (points, faces) pair, got {value!r}."
        ) from None
    points = as_float_array(points, f"{name} points", (3,)).reshape(-1, 3)
    faces = np.asarray(faces)
    if faces.ndim != 2 or faces.shape[1] != 3 or not np.issubdtype(faces.dtype, np.integer):
        raise ValueError(f"Expected `{name}` faces to be integers of shape (k, 3), got "
                         f"{faces.shape} {faces.dtype}.")
    if faces.size and (faces.min() < 0 or faces.max() >= len(points)):
        raise ValueError(f"Expected `{name}` faces to index its {len(points)} points.")
    return points, faces.astype(np.int64)


def two_tone(points, color, center=None):
    """Per-vertex RGB (m, 3) uint8: ``color`` with a darker shade on alternate octants, so that
    a spinning or rolling body visibly turns."""
    base = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
    p = points - (points.mean(axis=0) if center is None else center)
    odd = (p[:, 0] > 0) ^ (p[:, 1] > 0) ^ (p[:, 2] > 0)
    rgb = np.where(odd[:, None], 0.72 * base, 0.3 * 255 + 0.7 * base)
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)


MARK_COLOR = "#d1495b"  # the sector that shows a turntable's turn
SECTORS = 12


def motion_description(motion):
    """A ground motion as JSON data (stored with a run): ``{"kind": "steady_rotation", "rate",
    "axis", "center"}``, ``{"kind": "uniform_translation", "velocity"}``, or
    ``{"kind": "prescribed"}`` (a Python callable, which a run cannot store)."""
    from nhphys.surfaces.moving import SteadyRotation, UniformTranslation

    if isinstance(motion, SteadyRotation):
        return {"kind": "steady_rotation", "rate": motion.rate, "axis": motion.axis.tolist(),
                "center": motion.center.tolist()}
    if isinstance(motion, UniformTranslation):
        return {"kind": "uniform_translation", "velocity": motion.velocity.tolist()}
    return {"kind": "prescribed"}


def motion_from_description(description):
    """The :class:`~nhphys.surfaces.moving.GroundMotion` of :func:`motion_description`'s
    data, or ``None`` for a prescribed motion (its callable is not stored)."""
    from nhphys.surfaces.moving import SteadyRotation, UniformTranslation

    kind = description.get("kind")
    if kind == "steady_rotation":
        return SteadyRotation(description["rate"], description["axis"], description["center"])
    if kind == "uniform_translation":
        return UniformTranslation(description["velocity"])
    return None


def ground_marks(points, color, description):
    """Per-vertex RGB (m, 3) uint8 that make a moving ground's motion visible: about a steady
    rotation's axis, ``SECTORS`` sectors alternating ``color`` and a darker shade, the first
    (angles [0, 2 pi / SECTORS) from the first axis perpendicular to the rotation axis)
    in ``MARK_COLOR``; for any other motion a checkerboard of 1/16 of the mesh's size."""
    p = np.asarray(points, dtype=float)
    base = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
    dark = 0.8 * base
    if description.get("kind") == "steady_rotation":
        k = np.asarray(description["axis"], dtype=float)
        e1 = np.cross(k, [1.0, 0.0, 0.0] if abs(k[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(k, e1)
        r = p - np.asarray(description["center"], dtype=float)
        angle = np.mod(np.arctan2(r @ e2, r @ e1), 2 * np.pi)
        sector = np.minimum((angle * SECTORS / (2 * np.pi)).astype(int), SECTORS - 1)
        rgb = np.where((sector % 2 == 1)[:, None], dark, base)
        mark = np.array([int(MARK_COLOR[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
        rgb[sector == 0] = mark
    else:
        size = max(float(np.ptp(p, axis=0).max()), 1e-12) / 16
        cells = np.floor(p / size).astype(int)
        rgb = np.where((cells.sum(axis=1) % 2 == 1)[:, None], dark, base)
    return np.clip(np.round(rgb), 0, 255).astype(np.uint8)


class SceneDisplay:
    """What a viewer needs to draw a scene: meshes (body meshes in body frames) and colours.

    Built by :meth:`Scene.display`, stored in every trajectory that :meth:`Scene.simulate`
    returns (``meta["scene"]`` and its static arrays), and read back by
    :meth:`SceneDisplay.from_trajectory`, so a saved run can be shown without its scene file.

    Attributes
    ----------
    grounds, bodies : list of dict
        Each with ``name``, ``color`` (``#rrggbb``), ``points`` (m, 3), ``faces`` (k, 3) and
        optionally ``colors`` (m, 3) uint8; bodies also have ``contact`` (a short description)
        and, for pivots, ``pivot`` (3,); a moving ground has ``motion`` (the data of
        :func:`motion_description`), its points in its own frame (where it is at ``t = 0``).
    """

    def __init__(self, grounds, bodies, name="scene", camera=None):
        self.grounds = grounds
        self.bodies = bodies
        self.name = name
        self.camera = None if camera is None else np.asarray(camera, dtype=float)

    @property
    def body_names(self):
        return [b["name"] for b in self.bodies]

    def to_meta(self):
        """``(meta dict, static arrays dict)``: JSON description and the mesh arrays."""
        static = {}
        desc = {"name": self.name, "grounds": [], "bodies": []}
        if self.camera is not None:
            desc["camera"] = self.camera.tolist()
        for kind, items in (("grounds", self.grounds), ("bodies", self.bodies)):
            for i, item in enumerate(items):
                key = f"{kind}.{i}"
                entry = {k: v for k, v in item.items() if k not in ("points", "faces", "colors")}
                for k in ("pivot",):
                    if k in entry:
                        entry[k] = np.asarray(entry[k]).tolist()
                entry["mesh"] = key
                desc[kind].append(entry)
                static[f"{key}.points"] = np.asarray(item["points"], dtype=float)
                static[f"{key}.faces"] = np.asarray(item["faces"], dtype=np.int64)
                if item.get("colors") is not None:
                    static[f"{key}.colors"] = np.asarray(item["colors"], dtype=np.uint8)
        return desc, static

    @classmethod
    def from_trajectory(cls, trajectory):
        """The display stored in a trajectory made by :meth:`Scene.simulate`.

        For a trajectory of a single system (from :func:`nhphys.simulate`), a plain display:
        one grey box per body.
        """
        desc = trajectory.meta.get("scene")
        if desc is None:
            return cls.default_for(trajectory)
        static = trajectory.static
        out = {}
        for kind in ("grounds", "bodies"):
            out[kind] = []
            for entry in desc[kind]:
                key = entry["mesh"]
                item = {k: v for k, v in entry.items() if k != "mesh"}
                item["points"] = static[f"{key}.points"]
                item["faces"] = static[f"{key}.faces"]
                item["colors"] = static.get(f"{key}.colors")
                if "pivot" in item:
                    item["pivot"] = np.asarray(item["pivot"], dtype=float)
                out[kind].append(item)
        return cls(out["grounds"], out["bodies"], desc.get("name", "scene"), desc.get("camera"))

    @classmethod
    def default_for(cls, trajectory):
        """A box per body (and a floor), for trajectories without a stored scene."""
        corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)],
                           dtype=float) * np.array([0.3, 0.2, 0.1])
        faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                          [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
        names = trajectory.body_names
        bodies = [{"name": n, "color": PALETTE[i % len(PALETTE)], "points": corners,
                   "faces": faces, "colors": two_tone(corners, PALETTE[i % len(PALETTE)]),
                   "contact": "none"} for i, n in enumerate(names)]
        return cls([], bodies, trajectory.meta.get("system", "trajectory"))
