"""Off-screen rendering of an articulated system's trajectory (``nhphys.systems.Articulated``,
``Bicycle``) to a GIF, an MP4 or a PNG.

Each body is drawn from the tree itself: its wheels as rims with two spokes (so that their spin
shows), its blades as thin plates, a ball at its centre of mass (sized by its mass) and a tube
from its origin to each joint it carries. A system with an ``outline(q)`` (the bicycle's stick
drawing) is drawn from it instead of balls and tubes. The poses come from the twin's kinematics
of the saved ``q``; the camera follows the wheels' and blades' ground points.
"""

import os

import numpy as np

from nhphys.trajectory import check_writable
from nhphys.viz._pyvista import pyvista
from nhphys.viz.rendering import FORMATS, _even_size, write_frames

WHEEL_COLOR = "#2c3e70"
FRAME_COLOR = "#b3402a"
BLADE_COLOR = "#6b6b6b"


def wheel_mesh(pv, centre, axis, radius):
    """A rim and two crossed spokes of a wheel (in its body's frame)."""
    u = np.cross(axis, [0.0, 0.0, 1.0] if abs(axis[2]) < 0.9 else [1.0, 0.0, 0.0])
    u = u / np.linalg.norm(u)
    w = np.cross(axis, u)
    t = np.linspace(0.0, 2 * np.pi, 73)
    rim = centre + radius * (np.outer(np.cos(t), u) + np.outer(np.sin(t), w))
    mesh = pv.lines_from_points(rim).tube(radius=0.05 * radius)
    for spoke in (u, w):
        mesh = mesh.merge(pv.Line(centre - radius * spoke, centre + radius * spoke)
                          .tube(radius=0.025 * radius))
    return mesh


def body_meshes(system, pv):
    """``{body: [(mesh in the body's frame, colour), ...]}`` of ``system``'s tree (without
    balls and tubes when the system draws its own ``outline``)."""
    tree = system.tree
    meshes = {b: [] for b in range(tree.n)}
    size = max([disk[3] for disk in tree.disks] + [0.1])
    for body, centre, axis, radius, *_ in tree.disks:
        meshes[body].append((wheel_mesh(pv, centre, axis, radius), WHEEL_COLOR))
    for body, point, direction in tree.blades:
        meshes[body].append((pv.Box(bounds=(-1.5 * size, 1.5 * size, -0.01 * size, 0.01 * size,
                                            0.0, 0.4 * size))
                             .rotate_z(np.degrees(np.arctan2(direction[1], direction[0])))
                             .translate(point), BLADE_COLOR))
    if hasattr(system, "outline"):
        return meshes
    heaviest = max(float(np.max(tree.mass)), 1e-12)
    wheeled = {disk[0] for disk in tree.disks}
    for b in range(tree.n):
        if tree.mass[b] > 0 and b not in wheeled:
            radius = size * (0.15 + 0.25 * (tree.mass[b] / heaviest) ** (1 / 3))
            meshes[b].append((pv.Sphere(radius=radius, center=tree.com[b]), FRAME_COLOR))
        for j in range(tree.n):
            if tree.parent[j] == b and np.linalg.norm(tree.offset[j]) > 0:
                meshes[b].append((pv.Line((0.0, 0.0, 0.0), tree.offset[j])
                                  .tube(radius=0.06 * size), FRAME_COLOR))
    return meshes


def render_articulated(system, trajectory, path, fps=30, speed=1.0, size=(640, 480),
                       max_frames=None, camera=None):
    """Render ``trajectory`` of ``system`` off screen to ``path`` (``.gif``, ``.mp4``, or the
    last frame as ``.png``).

    Parameters
    ----------
    system : nhphys.systems.Articulated
        The system the trajectory was made from (its tree draws the bodies).
    trajectory : nhphys.Trajectory
        With the field ``q``.
    path : str or path
        Its suffix chooses the format; written atomically.
    fps, speed : float
        Frames per second, and simulated seconds per second of animation.
    size : (int, int)
    max_frames : int, optional
        At most this many frames (the start of the run).
    camera : (3,) floats, optional
        The camera's offset (m) from the point it follows (default: behind and to the right,
        at a distance scaled by the largest wheel).

    Returns
    -------
    dict
        ``path``, ``frames``, ``size``.
    """
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"Expected `path` to end with one of {FORMATS}, got {path!r}.")
    if "q" not in trajectory.fields or trajectory.q.shape[1:] != (system.n,):
        raise ValueError(f"Expected a trajectory of {system!r} (a field `q` of shape "
                         f"(k, {system.n})).")
    check_writable(path, "path")
    if ext == ".mp4":
        size = _even_size(size, 16)
    frames = trajectory if ext == ".png" else trajectory.resample(fps, speed)
    indices = [len(frames) - 1] if ext == ".png" else list(range(len(frames)))
    if max_frames is not None:
        indices = indices[:int(max_frames)]
    tree = system.tree
    q = np.asarray(frames.q, dtype=float)
    anchors = np.asarray(frames.contacts, dtype=float).mean(axis=1)  # followed by the camera
    scale = max([disk[3] for disk in tree.disks] + [0.1])  # the system's size: its wheels
    camera = scale * np.array([-3.5, -9.0, 3.7]) if camera is None else np.asarray(camera,
                                                                                  dtype=float)

    pv = pyvista(off_screen=True)
    plotter = pv.Plotter(off_screen=True, window_size=list(size))
    try:
        plotter.set_background("white")
        span = np.ptp(anchors[:, :2], axis=0).max() + 20.0 * scale
        middle = anchors.mean(axis=0)
        plotter.add_mesh(pv.Plane(center=(middle[0], middle[1], 0.0), i_size=span, j_size=span,
                                  i_resolution=max(1, int(span / (3 * scale))),
                                  j_resolution=max(1, int(span / (3 * scale)))),
                         color="#dfe4e8", show_edges=True, edge_color="#c3cad1")
        actors = {b: [plotter.add_mesh(mesh, color=color, smooth_shading=True)
                      for mesh, color in parts]
                  for b, parts in body_meshes(system, pv).items()}
        plotter.enable_anti_aliasing("msaa", multi_samples=4)
        zero = np.zeros(system.n)
        drawn = []  # the outline's actors of the last frame

        def draw(i):
            kin = tree.kinematics(q[i], zero, bias=False)
            if hasattr(system, "outline"):
                for actor in drawn:
                    plotter.remove_actor(actor, render=False)
                drawn[:] = [plotter.add_mesh(pv.lines_from_points(line).tube(radius=0.015),
                                             color=FRAME_COLOR, smooth_shading=True)
                            for part, line in system.outline(q[i]).items()
                            if "wheel" not in part]
            for b, parts in actors.items():
                pose = np.eye(4)
                pose[:3, :3] = kin["R"][b]
                pose[:3, 3] = kin["o"][b]
                for actor in parts:
                    actor.user_matrix = pose
            focus = anchors[i] + np.array([0.0, 0.0, 1.5 * scale])
            plotter.camera.focal_point = focus
            plotter.camera.position = focus + camera
            plotter.camera.up = (0.0, 0.0, 1.0)
            plotter.render()
            return plotter.screenshot(return_img=True)

        write_frames(path, ext, fps, draw, indices)
    finally:
        plotter.close()
    return {"path": path, "frames": len(indices), "size": tuple(size)}
