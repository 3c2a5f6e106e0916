"""Live viewing: a window that steps a scene in a timer callback, and replay of saved runs.

Keys: ``space`` pause / resume, ``Right`` / ``Left`` twice / half the speed, ``BackSpace``
restart from the initial conditions, ``l`` trails on / off, ``q`` quit.

With no display (or ``off_screen=True``) the same per-frame callback runs ``frames`` times off
screen, and the frames can be saved as a GIF: this is how the live path is tested headless.
"""

import numpy as np

from nhphys.viz._pyvista import headless, pyvista
from nhphys.viz.view import SceneView, conserved_energy, readout

PREVIEW_SECONDS = 4.0  # simulated ahead (coarsely saved) to place the camera
TRAIL_FRAMES = 3000  # a live trail shows the contact path of the last frames only


class _Playback:
    """State shared by live stepping and replay: speed, pause, key bindings."""

    def __init__(self, view, fps, speed):
        self.view = view
        self.fps = float(fps)
        self.speed = float(speed)
        self.paused = False
        self.finished = False

    def bind_keys(self, plotter):
        plotter.add_key_event("space", self.toggle_pause)
        plotter.add_key_event("Right", lambda: self.set_speed(2.0 * self.speed))
        plotter.add_key_event("Left", lambda: self.set_speed(0.5 * self.speed))
        plotter.add_key_event("BackSpace", self.restart)
        plotter.add_key_event("l", self.toggle_trails)

    def toggle_pause(self):
        self.paused = not self.paused
        self.refresh_text()

    def set_speed(self, speed):
        self.speed = float(min(max(speed, 1.0 / 64), 64.0))
        self.refresh_text()

    def toggle_trails(self):
        self.view.show_trails = not self.view.show_trails
        self.redraw_trails()

    def restart(self):
        raise NotImplementedError

    def refresh_text(self):
        raise NotImplementedError

    def redraw_trails(self):
        raise NotImplementedError


class LiveSession(_Playback):
    """A scene stepped as it is shown: each :meth:`tick` advances every body by the steps of one
    frame (``speed / (fps dt)``, at least one) and moves the actors."""

    def __init__(self, scene, view, dt, integrator, backend, fps, speed, t_final=None):
        super().__init__(view, fps, speed)
        self.scene = scene
        self.dt = dt
        self.integrator = integrator
        self.backend = backend
        self.t_final = t_final
        self.restart()

    def restart(self):
        self.run = self.scene.start(self.dt, self.integrator, self.backend)
        first = self.run.initial()
        self.t = 0.0
        self.energy0 = conserved_energy(first)[0]
        self.last = {k: v[0] for k, v in first.items()}
        self.trail = [first["contact_point"]]
        self.view.clear_trails()
        self.finished = False
        self._show()

    def tick(self):
        """One frame: step, move, update trails and text. Returns False once finished."""
        if self.finished:
            return False
        if self.paused:
            return True
        steps = max(1, round(self.speed / (self.fps * self.dt)))
        if self.t_final is not None:
            steps = min(steps, round((self.t_final - self.t) / self.dt))
        if steps <= 0:
            self.finished = True
            return False
        frame = self.run.advance(steps)
        self.t = self.run.steps_done * self.dt  # the run's own time (a moving ground's clock)
        self.last = {k: v[-1] for k, v in frame.items()}
        self.trail.append(frame["contact_point"])
        self._show()
        return True

    def _show(self):
        self.view.set_poses(self.last["position"], self.last["R"])
        self.view.set_ground_time(self.t)
        self.redraw_trails()
        self.refresh_text()

    def redraw_trails(self):
        if len(self.trail) > 256:  # keep the list short, and the trail to its last frames
            self.trail = [np.concatenate(self.trail)[-TRAIL_FRAMES:]]
        self.view.set_trails(np.concatenate(self.trail)[-TRAIL_FRAMES:])

    def refresh_text(self):
        self.view.set_text(readout(self.t, conserved_energy(self.last), self.energy0,
                                   self.last["constraint_residual"], self.speed, self.paused))


class Replay(_Playback):
    """A saved trajectory's clock: each :meth:`tick` moves ``speed / fps`` simulated seconds on
    (looping, or finishing at the end) and shows the last saved frame before that time
    (``_show``, the subclass's)."""

    def __init__(self, trajectory, view, fps, speed, loop=True):
        super().__init__(view, fps, speed)
        self.traj = trajectory
        self.loop = loop

    def restart(self):
        self.t = float(self.traj.t[0])
        self.index = 0
        self.finished = False
        self._show()

    def tick(self):
        if self.finished:
            return False
        if self.paused:
            return True
        t = self.traj.t
        self.t += self.speed / self.fps
        if self.t > t[-1]:
            if not self.loop:
                self.finished = True
                return False
            self.t = float(t[0])
        self.index = int(np.clip(np.searchsorted(t, self.t, side="right") - 1, 0, len(t) - 1))
        self._show()
        return True

    def _show(self):  # pragma: no cover - overridden
        raise NotImplementedError


class ReplaySession(Replay):
    """A saved trajectory of a scene shown at ``speed`` simulated seconds per second."""

    def __init__(self, trajectory, view, fps, speed, loop=True):
        super().__init__(trajectory, view, fps, speed, loop)
        self.positions, self.rotations = trajectory.body_poses()
        cp = trajectory.contact_point if "contact_point" in trajectory.fields else None
        self.contact = None if cp is None else (cp if trajectory.multibody else cp[:, None])
        self.energy = conserved_energy(trajectory)  # energy - work with force elements
        self.residual = trajectory.constraint_residual \
            if "constraint_residual" in trajectory.fields else None
        self.restart()

    def _show(self):
        i = self.index
        self.view.set_poses(self.positions[i], self.rotations[i])
        self.view.set_ground_time(self.traj.t[i])
        self.redraw_trails()
        self.refresh_text()

    def redraw_trails(self):
        if self.contact is not None:
            self.view.set_trails(self.contact[:self.index + 1])

    def refresh_text(self):
        if self.energy is None:
            self.view.set_text(f"t = {self.t:8.3f} s   speed x{self.speed:g}")
            return
        residual = self.residual[self.index] if self.residual is not None else 0.0
        self.view.set_text(readout(self.traj.t[self.index], self.energy[self.index],
                                   self.energy[0], residual, self.speed, self.paused))


def _camera_preview(scene, dt, integrator, backend, t_final):
    """Body positions (n, B, 3) over the first seconds, coarsely, to frame the camera."""
    from nhphys.simulate import number_of_steps

    horizon = min(PREVIEW_SECONDS, t_final) if t_final else PREVIEW_SECONDS
    n = max(1, round(horizon / dt))
    try:
        number_of_steps(n * dt, dt)
        traj = scene.simulate(n * dt, dt, integrator=integrator, backend=backend,
                              save_every=max(1, n // 40), progress=False)
        return traj.position
    except (ValueError, TypeError, ArithmeticError, RuntimeError):
        # the live run reports real errors; the camera only needs a guess
        return scene.start(dt, integrator, backend).initial()["position"]


def _opens_windows(plotter):
    """False when VTK fell back to an off-screen render window (no usable display)."""
    name = plotter.ren_win.GetClassName()
    return not ("EGL" in name or "OSMesa" in name)


def _run(session, plotter, frames, record, off_screen):
    """Drive ``session``: a timer in a window, or ``frames`` ticks off screen."""
    if not off_screen and not _opens_windows(plotter):
        if frames is None:
            plotter.close()
            raise RuntimeError("No window can be opened here (VTK has no usable display); "
                               "give a number of frames to step off screen.")
        off_screen = True
    if off_screen:
        images = []
        plotter.render()
        images.append(plotter.screenshot(return_img=True))
        for _ in range(int(frames) - 1):
            if not session.tick():
                break
            plotter.render()
            images.append(plotter.screenshot(return_img=True))
        if record is not None:
            from nhphys.trajectory import atomic_path
            from nhphys.viz.rendering import _write_animation

            with atomic_path(record) as tmp:
                _write_animation(tmp, ".gif", session.fps, images)
        plotter.close()
        return images

    images = []
    keep = record is not None or frames is not None

    def on_timer(step):
        if frames is not None and len(images) >= frames:
            plotter.iren.terminate_app()  # ends the window's event loop; show() returns
            return
        if session.tick() or not images:
            plotter.render()
            if keep:
                images.append(plotter.screenshot(return_img=True) if record is not None
                              else None)

    session.bind_keys(plotter)
    plotter.add_timer_event(max_steps=10**9 if frames is None else int(frames) + 1,
                            duration=max(1, int(1000 / session.fps)), callback=on_timer)
    plotter.show(auto_close=False)
    if record is not None and images:
        from nhphys.trajectory import atomic_path
        from nhphys.viz.rendering import _write_animation

        with atomic_path(record) as tmp:
            _write_animation(tmp, ".gif", session.fps, images)
    plotter.close()
    return images if keep else None


def show(scene, dt=0.01, integrator=None, backend="auto", fps=30, speed=1.0, t_final=None,
         frames=None, off_screen=None, size=(1024, 768), trails=True, record=None):
    """Open a window and step ``scene`` live.

    Parameters
    ----------
    scene : nhphys.Scene
    dt : float
        Step size.
    integrator, backend
        As for :meth:`Scene.simulate`.
    fps : float
        Target frame rate of the window.
    speed : float
        Simulated seconds per second (changed with the arrow keys).
    t_final : float, optional
        Stop stepping there.
    frames : int, optional
        Stop after this many frames (required off screen).
    off_screen : bool, optional
        Default: True when there is no display. Then ``frames`` ticks run without a window.
    size : (int, int)
    trails : bool
    record : str, optional
        Save the frames shown as a GIF (written atomically).

    Returns
    -------
    list or None
        With ``frames`` or ``record``: the frames shown (images (h, w, 3) off screen or when
        recording); else None when the window is closed.
    """
    from nhphys._validation import as_positive_scalar

    dt = as_positive_scalar(dt, "dt")
    off_screen = headless() if off_screen is None else bool(off_screen)
    if off_screen and frames is None:
        raise ValueError("Expected `frames` (how many to render) when showing off screen.")
    run_check = scene.start(dt, integrator, backend)  # bad input fails before any window opens
    del run_check
    pv = pyvista(off_screen=off_screen)
    plotter = pv.Plotter(off_screen=off_screen, window_size=list(size),
                         title=f"nhphys: {scene.name}")
    view = SceneView(scene.display(), plotter, trails=trails, help_text=not off_screen,
                     scene=scene)
    view.frame_camera(_camera_preview(scene, dt, integrator, backend, t_final))
    session = LiveSession(scene, view, dt, integrator, backend, fps, speed, t_final)
    return _run(session, plotter, frames, record, off_screen)


def play(trajectory, scene=None, fps=30, speed=1.0, frames=None, off_screen=None,
         size=(1024, 768), trails=True, loop=True, record=None):
    """Replay a saved run in a window (``trajectory.play(scene)``); arguments as :func:`show`.

    ``scene`` may be ``None`` for runs of :meth:`Scene.simulate`, which carry their display.
    """
    from nhphys.viz.rendering import display_for

    off_screen = headless() if off_screen is None else bool(off_screen)
    if off_screen and frames is None:
        raise ValueError("Expected `frames` (how many to render) when playing off screen.")
    display = display_for(scene, trajectory)
    pv = pyvista(off_screen=off_screen)
    plotter = pv.Plotter(off_screen=off_screen, window_size=list(size),
                         title=f"nhphys: {display.name}")
    view = SceneView(display, plotter, trails=trails, help_text=not off_screen, scene=scene)
    view.frame_camera(trajectory.body_poses()[0])
    session = ReplaySession(trajectory, view, fps, speed, loop=loop)
    return _run(session, plotter, frames, record, off_screen)
