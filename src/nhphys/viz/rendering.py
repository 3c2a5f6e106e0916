"""Off-screen rendering of a trajectory to a GIF, an MP4 or a PNG (works with no display)."""

import os

import numpy as np

from nhphys.trajectory import atomic_path, check_writable
from nhphys.viz._pyvista import pyvista
from nhphys.viz.view import SceneView, conserved_energy, readout

FORMATS = (".gif", ".mp4", ".png")


def display_for(scene, trajectory):
    """The display of ``scene`` (or the one stored in ``trajectory``), checked against it."""
    from nhphys.scene_display import SceneDisplay

    display = scene.display() if scene is not None else SceneDisplay.from_trajectory(trajectory)
    names = trajectory.body_names
    if len(display.bodies) != len(names):
        raise ValueError(
            f"Expected the trajectory to have the scene's {len(display.bodies)} bodies, got "
            f"{len(names)} ({names})."
        )
    return display


def _even_size(size, multiple):
    w, h = (int(v) for v in size)
    return (max(multiple, -(-w // multiple) * multiple), max(multiple, -(-h // multiple) * multiple))


def _contact_points(trajectory):
    if "contact_point" in trajectory.fields:
        cp = trajectory.contact_point
        return cp if trajectory.multibody else cp[:, None]
    return None


def render(scene, trajectory, path, fps=30, speed=1.0, size=(640, 480), time=None,
           max_frames=None, trails=True, text=True, camera_direction=None, locate=False):
    """Render ``trajectory`` off screen to ``path``: an animated ``.gif``, an ``.mp4`` or one
    frame as ``.png``.

    Parameters
    ----------
    scene : nhphys.Scene or None
        The scene the trajectory was made from; ``None`` uses the display stored in the
        trajectory (every run of :meth:`Scene.simulate` has one).
    trajectory : nhphys.Trajectory
    path : str or path
        Its suffix chooses the format. Written atomically (a temporary file, then renamed).
    fps : float
        Frames per second of the animation; the trajectory is resampled to it.
    speed : float
        Simulated seconds per second of animation.
    size : (int, int)
        Window size in pixels (rounded up to a multiple of 16 for MP4).
    time : float, optional
        For ``.png``: the time shown (default the last frame).
    max_frames : int, optional
        Render at most this many frames (the start of the run).
    trails : bool
        Draw the contact paths.
    text : bool
        Draw the time / energy / residual readout.
    camera_direction : (3,) floats, optional
        From where the camera looks at the region the bodies sweep (default: the scene's
        ``camera``, else from the front right, 45 degrees up).
    locate : bool
        Also return where each body's centre and contact point are in each image.

    Returns
    -------
    dict
        ``path``, ``frames`` (number rendered), ``seconds`` (wall time), ``size``; with
        ``locate``, ``center`` and ``contact``: image coordinates (column, row from the top) of
        shape (frames, B, 2).

    Raises
    ------
    ValueError
        An unknown suffix, a path that cannot be written, a scene that does not match.
    """
    import time as _time

    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"Expected `path` to end with one of {FORMATS}, got {path!r}.")
    check_writable(path, "path")
    display = display_for(scene, trajectory)
    if ext == ".mp4":
        size = _even_size(size, 16)
    start = _time.perf_counter()
    if ext == ".png":
        frames = trajectory
        index = len(trajectory) - 1 if time is None else int(
            np.argmin(np.abs(trajectory.t - float(time))))
        indices = [index]
    else:
        frames = trajectory.resample(fps, speed)
        indices = list(range(len(frames)))
        if max_frames is not None:
            indices = indices[:int(max_frames)]
    positions, rotations = frames.body_poses()
    contact = _contact_points(frames)
    energy = conserved_energy(frames)  # energy - work with force elements
    residual = frames.constraint_residual if "constraint_residual" in frames.fields else None

    pixels = {"center": [], "contact": []}
    pv = pyvista(off_screen=True)
    plotter = pv.Plotter(off_screen=True, window_size=list(size))
    try:
        view = SceneView(display, plotter, trails=trails and contact is not None, readout=text,
                         scene=scene)
        view.frame_camera(positions, camera_direction)
        plotter.enable_anti_aliasing("msaa", multi_samples=4)

        def draw(i):
            view.set_poses(positions[i], rotations[i])
            view.set_ground_time(frames.t[i])  # a moving ground where it is at that time
            if contact is not None and trails:
                view.set_trails(contact[:i + 1])
            if text and energy is not None:
                e = energy[i] if energy.ndim else energy
                view.set_text(readout(frames.t[i], e, energy[0],
                                      residual[i] if residual is not None else 0.0))
            plotter.render()
            if locate:
                pixels["center"].append(view.to_pixels(positions[i]))
                if contact is not None:
                    pixels["contact"].append(view.to_pixels(contact[i]))
            return plotter.screenshot(return_img=True)

        write_frames(path, ext, fps, draw, indices)
    finally:
        plotter.close()
    info = {"path": path, "frames": len(indices), "seconds": _time.perf_counter() - start,
            "size": tuple(size)}
    if locate:
        info.update({k: np.array(v) for k, v in pixels.items() if v})
    return info


def write_frames(path, ext, fps, draw, indices):
    """Write the images ``draw(i)`` for ``i`` in ``indices`` to ``path`` atomically: the first
    one as a ``.png``, or all as a ``.gif`` or ``.mp4`` at ``fps``."""
    with atomic_path(path) as tmp:
        if ext == ".png":
            import imageio.v3 as iio

            iio.imwrite(tmp, draw(indices[0]))
        else:
            _write_animation(tmp, ext, fps, (draw(i) for i in indices))


def _write_animation(path, ext, fps, images):
    import imageio.v2 as imageio

    if ext == ".gif":
        writer = imageio.get_writer(path, format="GIF", mode="I", duration=1000.0 / fps, loop=0)
    else:
        writer = imageio.get_writer(path, format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                    quality=7, pixelformat="yuv420p", macro_block_size=16)
    with writer:
        for image in images:
            writer.append_data(image)
