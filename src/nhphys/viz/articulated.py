"""Rendering of an articulated system's runs (``nhphys.systems.Articulated``, ``Bicycle``): off
screen to a GIF, an MP4 or a PNG (:func:`render_articulated`), or replayed in a window
(:func:`play_articulated`).

Each link is drawn with the meshes it has in a scene (:mod:`nhphys.scene_articulated`): its
wheels as rims with two spokes (so that their spin shows), its blades as thin plates, the
bicycle's frame and fork from its stick drawing, and for other trees a ball at each centre of
mass and a tube to each joint. The poses come from the twin's kinematics of the saved ``q``; the
camera follows the wheels' and blades' ground points.
"""

import os

import numpy as np

from nhphys.trajectory import check_writable
from nhphys.viz._pyvista import headless, polydata, pyvista
from nhphys.viz.live import Replay
from nhphys.viz.rendering import FORMATS, _even_size, write_frames
from nhphys.viz.view import conserved_energy, readout

FRAME_COLOR = "#b3402a"


class ArticulatedView:
    """The actors of an articulated system in a PyVista ``plotter``: the ground under the region
    its ground points sweep, its bodies, an optional readout, and a camera that follows.

    Parameters
    ----------
    system : nhphys.systems.Articulated
    plotter : pyvista.Plotter
    anchors : ndarray, shape (k, 3)
        The points the camera follows, per frame (the mean of the ground points).
    camera : (3,) floats or None
        The camera's offset from them (default scaled by the largest wheel).
    text : bool
        Show the readout (time, energy - work, residual).
    """

    def __init__(self, system, plotter, anchors, camera=None, text=False):
        import pyvista as pv

        self.system, self.plotter = system, plotter
        self.tree = system.tree
        # the wheels' and hulls' size
        self.scale = max([disk[3] for disk in self.tree.disks]
                         + [float(np.max(hull[2])) for hull in self.tree.hulls] + [0.1])
        self.camera = (self.scale * np.array([-3.5, -9.0, 3.7]) if camera is None
                       else np.asarray(camera, dtype=float))
        plotter.set_background("white")
        span = np.ptp(anchors[:, :2], axis=0).max() + 20.0 * self.scale
        middle = anchors.mean(axis=0)
        cells = max(1, int(span / (3 * self.scale)))
        plotter.add_mesh(pv.Plane(center=(middle[0], middle[1], 0.0), i_size=span, j_size=span,
                                  i_resolution=cells, j_resolution=cells),
                         color="#dfe4e8", show_edges=True, edge_color="#c3cad1")
        from nhphys.scene_articulated import SceneArticulated

        self.links = SceneArticulated(system, {}, "system", FRAME_COLOR, None)
        self.actors = []
        for j in range(len(self.links.links)):
            points, faces, colors = self.links.link_mesh(j)
            mesh = polydata(points, faces, pv)
            mesh.point_data["rgb"] = colors
            self.actors.append(plotter.add_mesh(mesh, scalars="rgb", rgb=True,
                                                smooth_shading=True))
        self.text = plotter.add_text("", position="upper_left", font_size=10,
                                     color="black") if text else None
        self._zero = np.zeros(system.n)

    def show(self, q, anchor):
        """Put the bodies at the configuration ``q`` (n,) and the camera on ``anchor`` (3,)."""
        kin = self.tree.kinematics(np.asarray(q, dtype=float), self._zero, bias=False)
        for actor, b, com in zip(self.actors, self.links.links, self.tree.com[self.links.links]):
            pose = np.eye(4)
            pose[:3, :3] = kin["R"][b]
            pose[:3, 3] = kin["o"][b] + kin["R"][b] @ com  # the meshes are about the centre
            actor.user_matrix = pose
        focus = np.asarray(anchor, dtype=float) + np.array([0.0, 0.0, 1.5 * self.scale])
        self.plotter.camera.focal_point = focus
        self.plotter.camera.position = focus + self.camera
        self.plotter.camera.up = (0.0, 0.0, 1.0)

    def set_text(self, text):
        if self.text is not None:
            self.text.SetText(2, text)  # corner 2: upper left


def _anchors(trajectory):
    return np.asarray(trajectory.contacts, dtype=float).mean(axis=1)


def _check_trajectory(system, trajectory):
    if "q" not in trajectory.fields or trajectory.q.shape[1:] != (system.n,):
        raise ValueError(f"Expected a trajectory of {system!r} (a field `q` of shape "
                         f"(k, {system.n})).")


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
    _check_trajectory(system, trajectory)
    check_writable(path, "path")
    if ext == ".mp4":
        size = _even_size(size, 16)
    frames = trajectory if ext == ".png" else trajectory.resample(fps, speed)
    indices = [len(frames) - 1] if ext == ".png" else list(range(len(frames)))
    if max_frames is not None:
        indices = indices[:int(max_frames)]
    q = np.asarray(frames.q, dtype=float)
    anchors = _anchors(frames)

    pv = pyvista(off_screen=True)
    plotter = pv.Plotter(off_screen=True, window_size=list(size))
    try:
        view = ArticulatedView(system, plotter, anchors, camera)
        plotter.enable_anti_aliasing("msaa", multi_samples=4)

        def draw(i):
            view.show(q[i], anchors[i])
            plotter.render()
            return plotter.screenshot(return_img=True)

        write_frames(path, ext, fps, draw, indices)
    finally:
        plotter.close()
    return {"path": path, "frames": len(indices), "size": tuple(size)}


class ArticulatedReplay(Replay):
    """A saved run of an articulated system shown at ``speed`` simulated seconds per second
    (the keys of :mod:`nhphys.viz.live`; its trails key does nothing here)."""

    def __init__(self, system, trajectory, view, fps, speed, loop=True):
        super().__init__(trajectory, view, fps, speed, loop)
        self.q = np.asarray(trajectory.q, dtype=float)
        self.anchors = _anchors(trajectory)
        self.energy = conserved_energy(trajectory)
        self.residual = trajectory.constraint_residual
        self.restart()

    def _show(self):
        self.view.show(self.q[self.index], self.anchors[self.index])
        self.refresh_text()

    def redraw_trails(self):
        pass

    def refresh_text(self):
        i = self.index
        self.view.set_text(readout(self.traj.t[i], self.energy[i], self.energy[0],
                                   self.residual[i], self.speed, self.paused))


def play_articulated(system, trajectory, fps=30, speed=1.0, frames=None, off_screen=None,
                     size=(1024, 768), loop=True, record=None):
    """Replay a run of an articulated system in a window (keys as :func:`nhphys.viz.play`).

    With no display (or ``off_screen=True``) ``frames`` frames are drawn off screen and
    returned (and saved as a GIF to ``record``, atomically): how the window is tested headless.

    Returns
    -------
    list or None
        With ``frames`` or ``record``: the frames shown; else None when the window is closed.
    """
    from nhphys.viz.live import _run

    _check_trajectory(system, trajectory)
    off_screen = headless() if off_screen is None else bool(off_screen)
    if off_screen and frames is None:
        raise ValueError("Expected `frames` (how many to render) when playing off screen.")
    pv = pyvista(off_screen=off_screen)
    plotter = pv.Plotter(off_screen=off_screen, window_size=list(size),
                         title=f"nhphys: {system.name}")
    view = ArticulatedView(system, plotter, _anchors(trajectory), text=True)
    session = ArticulatedReplay(system, trajectory, view, fps, speed, loop=loop)
    return _run(session, plotter, frames, record, off_screen)
