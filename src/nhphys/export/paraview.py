"""ParaView time series: a ``.pvd`` collection of ``.vtp`` files, one per body per frame."""

import os
import shutil
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

from nhphys.trajectory import atomic_path, check_writable

MODES = ("mesh", "transform")


def _frames(trajectory, fps, speed):
    return trajectory if fps is None else trajectory.resample(fps, speed)


def to_pvd(trajectory, path, scene=None, mode="mesh", fps=None, speed=1.0):
    """Write a ParaView time series.

    Parameters
    ----------
    trajectory : nhphys.Trajectory
    path : str
        The collection file, ending with ``.pvd``; the ``.vtp`` files go to the folder
        ``<path without .pvd>_files`` beside it.
    scene : nhphys.Scene, optional
        For the meshes; default the display stored in the trajectory.
    mode : {"mesh", "transform"}
        ``"mesh"``: each body's mesh moved to its pose (points in float64), one file per body
        per frame, and each ground at rest once; a moving ground (a turntable) one file per
        frame too, its mesh carried to its pose at that frame's time. ``"transform"``: one file per frame with a point per body
        at its centre of mass and point arrays ``rotation`` (9, row-major, body to space),
        ``quaternion`` (w, x, y, z) and ``body`` (index).
    fps : float, optional
        Resample to this rate first (default: every saved frame).
    speed : float
        Simulated seconds per second when resampling.

    Returns
    -------
    str
        ``path``.
    """
    from nhphys.lie.so3 import to_quaternion
    from nhphys.surfaces.moving import motion_pose
    from nhphys.viz._pyvista import polydata, pyvista
    from nhphys.viz.rendering import display_for
    from nhphys.viz.view import ground_motions

    path = os.fspath(path)
    if not path.endswith(".pvd"):
        raise ValueError(f"Expected `path` to end with .pvd, got {path!r}.")
    if mode not in MODES:
        raise ValueError(f"Expected `mode` to be one of {MODES}, got {mode!r}.")
    check_writable(path, "path")
    frames = _frames(trajectory, fps, speed)
    positions, rotations = frames.body_poses()
    names = frames.body_names
    display = display_for(scene, trajectory) if mode == "mesh" else None
    motions = ground_motions(display, scene) if mode == "mesh" else []
    pv = pyvista(off_screen=True)
    folder = path[:-4] + "_files"
    rel = os.path.basename(folder)
    parent = os.path.dirname(os.path.abspath(path))
    staging = tempfile.mkdtemp(prefix=f".{rel}.", dir=parent)
    collection = ET.Element("VTKFile", type="Collection", version="0.1",
                            byte_order="LittleEndian")
    datasets = ET.SubElement(collection, "Collection")
    try:
        statics = []
        moving = []  # (name, stem, points, mesh, motion) of the grounds that move
        if mode == "mesh":
            ground_stems = unique_stems([g["name"] for g in display.grounds])
            for g, stem, motion in zip(display.grounds, ground_stems, motions):
                mesh = polydata(g["points"], g["faces"], pv)
                if g.get("colors") is not None:
                    mesh.point_data["rgb"] = np.asarray(g["colors"], dtype=np.uint8)
                if motion is not None:
                    moving.append((g["name"], f"ground_{stem}",
                                   np.asarray(g["points"], dtype=float), mesh, motion))
                    continue
                name = f"ground_{stem}.vtp"
                mesh.save(os.path.join(staging, name))
                statics.append((g["name"], name))
            meshes = [(np.asarray(b["points"], dtype=float), polydata(b["points"], b["faces"], pv))
                      for b in display.bodies]
        else:
            quats = to_quaternion(rotations)
        body_stems = unique_stems(names)
        for i, t in enumerate(frames.t):
            entries = []
            if mode == "mesh":
                for b, name in enumerate(names):
                    points, mesh = meshes[b]
                    mesh.points = points @ rotations[i, b].T + positions[i, b]
                    fname = f"{body_stems[b]}_{i:06d}.vtp"
                    mesh.save(os.path.join(staging, fname))
                    entries.append((name, fname))
                for name, stem, points, mesh, motion in moving:
                    Q, d = motion_pose(motion, float(t))
                    mesh.points = points @ Q.T + d
                    fname = f"{stem}_{i:06d}.vtp"
                    mesh.save(os.path.join(staging, fname))
                    entries.append((name, fname))
                entries += statics
            else:
                cloud = pv.PolyData(np.ascontiguousarray(positions[i], dtype=float))
                cloud.point_data["rotation"] = rotations[i].reshape(len(names), 9)
                cloud.point_data["quaternion"] = quats[i]
                cloud.point_data["body"] = np.arange(len(names))
                fname = f"poses_{i:06d}.vtp"
                cloud.save(os.path.join(staging, fname))
                entries.append(("poses", fname))
            for part, (name, fname) in enumerate(entries):
                ET.SubElement(datasets, "DataSet", timestep=repr(float(t)), group="",
                              part=str(part), name=name, file=f"{rel}/{fname}")
        old = None
        if os.path.exists(folder):
            old = folder + ".old"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(folder, old)
        os.replace(staging, folder)
        if old:
            shutil.rmtree(old, ignore_errors=True)
        ET.indent(collection)
        with atomic_path(path) as tmp:
            ET.ElementTree(collection).write(tmp, xml_declaration=True, encoding="utf-8")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path


def unique_stems(names):
    """File-name stems for ``names``: letters, digits, ``-`` and ``_`` only (so no name can
    leave the export's folder), never empty, and distinct even where the file system ignores
    case (``"ball 1"`` and ``"ball_1"`` get ``ball_1`` and ``ball_1_2``). The original names stay
    in the collection's ``name`` attributes."""
    stems, taken = [], set()
    for name in names:
        base = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_"
                       for c in str(name))[:100] or "unnamed"
        stem, k = base, 2
        while stem.lower() in taken:
            stem, k = f"{base}_{k}", k + 1
        taken.add(stem.lower())
        stems.append(stem)
    return stems
