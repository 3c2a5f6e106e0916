"""Triangle meshes of simple solids as NumPy arrays, for display: cylinders, tori, spheres, boxes.

Each function returns ``(points (m, 3), faces (k, 3))`` with outward-facing triangles, and
:func:`merge` joins several into one mesh. They draw the links of articulated systems in a
scene (:mod:`nhphys.scene_articulated`) without importing PyVista, so that a scene's display
description stays plain arrays.
"""

from __future__ import annotations

import numpy as np


def _frame(axis):
    """Two unit vectors ``u``, ``w`` (3,) with ``(u, w, axis / |axis|)`` right-handed."""
    k = np.asarray(axis, dtype=float)
    size = np.linalg.norm(k)
    if not size > 0:
        raise ValueError(f"Expected a nonzero axis, got {k.tolist()}.")
    k = k / size
    u = np.cross(k, [1.0, 0.0, 0.0] if abs(k[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    return u, np.cross(k, u)


def _grid_faces(rows, columns, close_rows=False):
    """Two triangles per cell of a ``rows`` x ``columns`` grid of points (row-major), the
    columns wrapping around; the rows too with ``close_rows``."""
    faces = []
    last = rows if close_rows else rows - 1
    for i in range(last):
        i1 = (i + 1) % rows
        for j in range(columns):
            j1 = (j + 1) % columns
            a, b, c, d = i * columns + j, i * columns + j1, i1 * columns + j1, i1 * columns + j
            faces += [(a, b, c), (a, c, d)]
    return np.array(faces, dtype=np.int64)


def cylinder(start, end, radius, sides=12):
    """A capped cylinder of ``radius`` from ``start`` (3,) to ``end`` (3,)."""
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    u, w = _frame(end - start)
    t = 2 * np.pi * np.arange(sides) / sides
    ring = radius * (np.outer(np.cos(t), u) + np.outer(np.sin(t), w))
    points = np.concatenate([start + ring, end + ring, [start, end]])
    faces = _grid_faces(2, sides)
    j = np.arange(sides)
    j1 = (j + 1) % sides
    caps = np.concatenate([np.column_stack([np.full(sides, 2 * sides), j1, j]),
                           np.column_stack([np.full(sides, 2 * sides + 1), sides + j,
                                            sides + j1])])
    return points, np.concatenate([faces, caps]).astype(np.int64)


def torus(center, axis, radius, tube, segments=48, sides=10):
    """A ring of tube radius ``tube`` around the circle of ``radius`` about ``axis`` (3,)."""
    u, w = _frame(axis)
    k = np.cross(u, w)
    a = 2 * np.pi * np.arange(segments) / segments
    b = 2 * np.pi * np.arange(sides) / sides
    radial = np.cos(a)[:, None] * u + np.sin(a)[:, None] * w  # (segments, 3)
    points = (np.asarray(center, dtype=float) + radius * radial[:, None, :]
              + tube * (np.cos(b)[None, :, None] * radial[:, None, :]
                        + np.sin(b)[None, :, None] * k))
    return points.reshape(-1, 3), _grid_faces(segments, sides, close_rows=True)[:, ::-1].copy()


def sphere(center, radius, rings=10, sectors=16):
    """A UV sphere (``rings`` >= 3, ``sectors`` >= 3)."""
    if rings < 3 or sectors < 3:
        raise ValueError(f"Expected rings and sectors >= 3, got {rings} and {sectors}.")
    theta = np.pi * np.arange(1, rings) / rings
    phi = 2 * np.pi * np.arange(sectors) / sectors
    ring = np.stack([np.sin(theta)[:, None] * np.cos(phi), np.sin(theta)[:, None] * np.sin(phi),
                     np.repeat(np.cos(theta)[:, None], sectors, axis=1)], -1).reshape(-1, 3)
    points = np.concatenate([ring, [[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]])
    faces = _grid_faces(rings - 1, sectors)[:, ::-1]
    j = np.arange(sectors)
    j1 = (j + 1) % sectors
    top, bottom, last = len(ring), len(ring) + 1, (rings - 2) * sectors
    caps = np.concatenate([np.column_stack([np.full(sectors, top), j, j1]),
                           np.column_stack([np.full(sectors, bottom), last + j1, last + j])])
    return (np.asarray(center, dtype=float) + radius * points,
            np.concatenate([faces, caps]).astype(np.int64))


def box(low, high):
    """An axis-aligned box between the corners ``low`` (3,) and ``high`` (3,)."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    low, high = np.minimum(low, high), np.maximum(low, high)  # outward whichever way given
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    points = low + corners * (high - low)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return points, faces


def tube(points, radius, sides=10):
    """A polyline ``points`` (k, 3) drawn as capped cylinders, one per segment, with a ball at
    each inner vertex so that the bends are closed."""
    points = np.asarray(points, dtype=float)
    parts = [cylinder(a, b, radius, sides) for a, b in zip(points[:-1], points[1:])
             if np.linalg.norm(b - a) > 0]
    parts += [sphere(p, radius, rings=6, sectors=sides) for p in points[1:-1]]
    return merge(parts)


def merge(parts):
    """One mesh of several ``(points, faces)`` pairs."""
    points, faces, offset = [], [], 0
    for p, f in parts:
        points.append(np.asarray(p, dtype=float))
        faces.append(np.asarray(f, dtype=np.int64) + offset)
        offset += len(p)
    if not points:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
    return np.concatenate(points), np.concatenate(faces)
