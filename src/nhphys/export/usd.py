"""USD export: time-sampled body transforms and meshes, for Blender, usdview and Omniverse."""

import os

import numpy as np

from nhphys.trajectory import atomic_path, check_writable

SUFFIXES = (".usd", ".usda", ".usdc")


def _pxr():
    try:
        from pxr import Gf, Sdf, Tf, Usd, UsdGeom, Vt
    except ImportError:
        raise ImportError(
            "USD export needs the optional extra `usd`: pip install \"nhphys[usd]\" "
            "(the usd-core package)."
        ) from None
    return Gf, Sdf, Tf, Usd, UsdGeom, Vt


def to_usd(trajectory, path, scene=None, fps=24.0, speed=1.0):
    """Write a USD stage: ``/World/Grounds/*`` meshes and ``/World/Bodies/<name>`` transforms
    sampled at every frame (time code = frame index, ``timeCodesPerSecond = fps``), each with
    its mesh as a child. A moving ground (a turntable) is likewise an ``Xform``
    ``/World/Grounds/<name>`` whose transform is its pose at each frame's time, with its mesh
    (in its own frame) as the child ``mesh``.

    Parameters
    ----------
    trajectory : nhphys.Trajectory
    path : str
        ``.usd`` or ``.usdc`` (binary) or ``.usda`` (text).
    scene : nhphys.Scene, optional
        For the meshes; default the display stored in the trajectory.
    fps : float
        The trajectory is resampled to this rate.
    speed : float
        Simulated seconds per second of animation.

    Returns
    -------
    str
        ``path``. Z is up and one unit is one metre. A body's transform is
        ``[[R^T, 0], [x, 1]]`` in USD's row-vector convention (``p' = p M``).
    """
    from nhphys.scene_display import two_tone
    from nhphys.surfaces.moving import motion_pose
    from nhphys.viz.rendering import display_for
    from nhphys.viz.view import ground_motions

    Gf, Sdf, Tf, Usd, UsdGeom, Vt = _pxr()
    path = os.fspath(path)
    if not path.endswith(SUFFIXES):
        raise ValueError(f"Expected `path` to end with one of {SUFFIXES}, got {path!r}.")
    check_writable(path, "path")
    frames = trajectory.resample(fps, speed)
    positions, rotations = frames.body_poses()
    display = display_for(scene, trajectory)
    with atomic_path(path) as tmp:
        os.remove(tmp)  # USD creates the layer itself
        stage = Usd.Stage.CreateNew(tmp)
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        stage.SetStartTimeCode(0)
        stage.SetEndTimeCode(max(0, len(frames) - 1))
        stage.SetTimeCodesPerSecond(float(fps))
        stage.SetFramesPerSecond(float(fps))
        world = UsdGeom.Xform.Define(stage, "/World")
        stage.SetDefaultPrim(world.GetPrim())
        used = set()

        def prim_name(name):
            base = Tf.MakeValidIdentifier(name)
            out, k = base, 1
            while out in used:
                out, k = f"{base}_{k}", k + 1
            used.add(out)
            return out

        def mesh(prim_path, points, faces, color, colors=None):
            m = UsdGeom.Mesh.Define(stage, prim_path)
            m.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(np.asarray(points, dtype=np.float32)))
            m.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(
                np.full(len(faces), 3, dtype=np.int32)))
            m.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(
                np.asarray(faces, dtype=np.int32).ravel()))
            m.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
            rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)]) / 255.0
            if colors is None:
                m.CreateDisplayColorAttr([Gf.Vec3f(*rgb)])
            else:
                primvar = UsdGeom.PrimvarsAPI(m).CreatePrimvar(
                    "displayColor", Sdf.ValueTypeNames.Color3fArray, UsdGeom.Tokens.vertex)
                primvar.Set(Vt.Vec3fArray.FromNumpy(
                    np.asarray(colors, dtype=np.float32) / 255.0))
            return m

        UsdGeom.Scope.Define(stage, "/World/Grounds")
        for g, motion in zip(display.grounds, ground_motions(display, scene)):
            ground_path = f"/World/Grounds/{prim_name(g['name'])}"
            if motion is None:
                mesh(ground_path, g["points"], g["faces"], g["color"])
                continue
            op = UsdGeom.Xform.Define(stage, ground_path).AddTransformOp(
                UsdGeom.XformOp.PrecisionDouble)
            Q, d = motion_pose(motion, frames.t)
            for i in range(len(frames)):  # row-vector convention, as the bodies'
                m = np.eye(4)
                m[:3, :3], m[3, :3] = Q[i].T, d[i]
                op.Set(Gf.Matrix4d(*m.ravel().tolist()), Usd.TimeCode(i))
            mesh(f"{ground_path}/mesh", g["points"], g["faces"], g["color"], g.get("colors"))
        UsdGeom.Scope.Define(stage, "/World/Bodies")
        matrices = np.zeros(positions.shape[:2] + (4, 4))
        matrices[..., :3, :3] = np.swapaxes(rotations, -1, -2)
        matrices[..., 3, :3] = positions
        matrices[..., 3, 3] = 1.0
        for b, body in enumerate(display.bodies):
            xform_path = f"/World/Bodies/{prim_name(body['name'])}"
            xform = UsdGeom.Xform.Define(stage, xform_path)
            op = xform.AddTransformOp(UsdGeom.XformOp.PrecisionDouble)
            for i in range(len(frames)):
                op.Set(Gf.Matrix4d(*matrices[i, b].ravel().tolist()), Usd.TimeCode(i))
            colors = body.get("colors")
            if colors is None:
                colors = two_tone(np.asarray(body["points"]), body["color"])
            mesh(f"{xform_path}/mesh", body["points"], body["faces"], body["color"], colors)
        stage.GetRootLayer().Save()
    return path
