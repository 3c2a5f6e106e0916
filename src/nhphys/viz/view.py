"""``SceneView``: the actors of a scene in a PyVista plotter, built once and moved per frame."""

import numpy as np

from nhphys.viz._pyvista import polydata, pyvista

BACKGROUND = ("#ffffff", "#d9e2ec")  # bottom, top
TRAIL_COLOR = "#1d3557"
PIVOT_COLOR = "#5c5c5c"
DIRECTION = (1.0, -1.5, 1.5)  # from the front right, 45 degrees up
HELP = "space pause | left/right speed | backspace restart | l trails | q quit"


def _empty_lines(pv):
    """A polyline of one zero-length segment: draws nothing (VTK refuses empty meshes)."""
    return pv.PolyData(np.zeros((1, 3)), lines=np.array([2, 0, 0]))


def _rgb(color):
    return np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)], dtype=float) / 255.0


def ground_motions(display, scene=None):
    """For each ground of ``display``: its :class:`~nhphys.surfaces.moving.GroundMotion`, or
    ``None`` for a ground at rest.

    A moving ground's motion is read from the display's data (``motion``), or taken from
    ``scene`` when given (the same grounds in the same order): a prescribed motion's callable is
    not stored with a run, so without its scene such a ground is drawn where it is at
    ``t = 0``, with a warning.
    """
    from nhphys.scene_display import motion_from_description
    from nhphys.surfaces.moving import MovingGround

    out = []
    for i, g in enumerate(display.grounds):
        if g.get("motion") is None:
            out.append(None)
            continue
        live = None
        if scene is not None and i < len(scene.grounds):
            live = scene.grounds[i]["surface"]
        if isinstance(live, MovingGround):
            out.append(live.motion)
            continue
        motion = motion_from_description(g["motion"])
        if motion is None:
            import warnings

            warnings.warn(f"Ground {g['name']!r} moves by a Python callable, which the run does "
                          "not store: it is drawn at rest; pass its scene to show it moving.",
                          stacklevel=3)
        out.append(motion)
    return out


def pose_matrix(Q, d):
    """The 4x4 homogeneous transform ``[[Q, d], [0, 1]]`` (ground frame to space)."""
    m = np.eye(4)
    m[:3, :3] = Q
    m[:3, 3] = d
    return m


class SceneView:
    """Grounds, bodies, contact trails and a text readout in a plotter.

    Every mesh is built once; a frame only changes each body actor's ``user_matrix`` (a 4x4
    transform, body to space), each moving ground actor's (its pose at the frame's time), the
    trail polyline's points and the text. Grounds at rest are never touched again.

    Parameters
    ----------
    display : nhphys.scene_display.SceneDisplay
    plotter : pyvista.Plotter
    trails : bool
        Draw each body's path of contact points on the ground.
    readout : bool
        Show time, speed, energy error and constraint residual.
    help_text : bool
        Show the key bindings (live windows).
    scene : nhphys.Scene, optional
        The scene of ``display``, for grounds moved by a Python callable (see
        :func:`ground_motions`).
    """

    def __init__(self, display, plotter, trails=True, readout=True, help_text=False,
                 scene=None):
        pv = pyvista()
        self.display = display
        self.plotter = plotter
        self.show_trails = trails
        plotter.set_background(BACKGROUND[0], top=BACKGROUND[1])
        self.ground_bounds = None
        from vtkmodules.vtkCommonMath import vtkMatrix4x4

        self.ground_actors = []
        self.moving_grounds = []  # (motion, actor, matrix) of the grounds that move
        for g, motion in zip(display.grounds, ground_motions(display, scene)):
            mesh = polydata(g["points"], g["faces"], pv)
            kwargs = {"smooth_shading": True, "specular": 0.1}
            if g.get("colors") is not None:  # marks that show a moving ground's motion
                mesh.point_data["rgb"] = np.asarray(g["colors"], dtype=np.uint8)
                kwargs.update(scalars="rgb", rgb=True)
            else:
                kwargs.update(color=g["color"])
            actor = plotter.add_mesh(mesh, opacity=g.get("opacity", 1.0),
                                     name=f"ground:{g['name']}", **kwargs)
            self.ground_actors.append(actor)
            if motion is not None:
                matrix = vtkMatrix4x4()
                actor.SetUserMatrix(matrix)
                self.moving_grounds.append((motion, actor, matrix))
            b = np.asarray(mesh.bounds, dtype=float)
            self.ground_bounds = b if self.ground_bounds is None else np.concatenate(
                [np.minimum(self.ground_bounds[::2], b[::2]),
                 np.maximum(self.ground_bounds[1::2], b[1::2])])[[0, 3, 1, 4, 2, 5]]
        self.actors = []
        self.matrices = []
        self.radius = []
        for b in display.bodies:
            mesh = polydata(b["points"], b["faces"], pv)
            kwargs = {"smooth_shading": True, "specular": 0.3, "specular_power": 20}
            if b.get("colors") is not None:
                mesh.point_data["rgb"] = np.asarray(b["colors"], dtype=np.uint8)
                kwargs.update(scalars="rgb", rgb=True)
            else:
                kwargs.update(color=b["color"])
            actor = plotter.add_mesh(mesh, name=f"body:{b['name']}", **kwargs)
            matrix = vtkMatrix4x4()
            actor.SetUserMatrix(matrix)
            self.actors.append(actor)
            self.matrices.append(matrix)
            self.radius.append(float(np.linalg.norm(b["points"], axis=1).max()))
            if b.get("pivot") is not None:
                self._add_pivot(pv, np.asarray(b["pivot"], dtype=float), self.radius[-1],
                                b["name"])
        self.radius = np.array(self.radius)
        self.trail = None
        self._trail_points = []
        if trails:
            self.trail = _empty_lines(pv)
            width = 3 if len(display.bodies) <= 10 else 1.5
            self.trail_actor = plotter.add_mesh(self.trail, color=TRAIL_COLOR, line_width=width,
                                                name="trails", reset_camera=False)
            self.trail_actor.mapper.SetResolveCoincidentTopologyToPolygonOffset()
        self.text = plotter.add_text("", position="upper_left", font_size=10, color="black",
                                     name="readout") if readout else None
        if help_text:
            plotter.add_text(HELP, position="lower_left", font_size=8, color="#333333",
                             name="help")

    def _add_pivot(self, pv, pivot, radius, name):
        floor = pivot[2] - 2.0 * radius
        if self.ground_bounds is not None:
            floor = self.ground_bounds[4] if self.ground_bounds[5] < pivot[2] else floor
        height = max(pivot[2] - floor, 1e-3)
        rod = pv.Cylinder(center=(pivot[0], pivot[1], floor + height / 2), direction=(0, 0, 1),
                          radius=0.04 * radius, height=height, resolution=24)
        self.plotter.add_mesh(rod, color=PIVOT_COLOR, name=f"rod:{name}", reset_camera=False)
        self.plotter.add_mesh(pv.Sphere(radius=0.08 * radius, center=pivot), color=PIVOT_COLOR,
                              name=f"pivot:{name}", reset_camera=False)

    # -- per frame --------------------------------------------------------------------------
    def set_poses(self, position, R):
        """Move the bodies: ``position`` (B, 3) of the centres of mass, ``R`` (B, 3, 3)."""
        m = np.zeros((len(position), 4, 4))
        m[:, :3, :3] = R
        m[:, :3, 3] = position
        m[:, 3, 3] = 1.0
        for matrix, values in zip(self.matrices, m.reshape(len(m), 16).tolist()):
            matrix.DeepCopy(values)
        for actor in self.actors:
            actor.Modified()

    def set_ground_time(self, t):
        """Carry each moving ground to its pose at time ``t`` (a user transform; its mesh is
        not rebuilt). Nothing to do for grounds at rest."""
        from nhphys.surfaces.moving import motion_pose

        for motion, actor, matrix in self.moving_grounds:
            Q, d = motion_pose(motion, float(t))
            matrix.DeepCopy(pose_matrix(Q, d).ravel().tolist())
            actor.Modified()

    def clear_trails(self):
        self._trail_points = []
        if self.trail is not None:
            self.trail.copy_from(_empty_lines(pyvista()))

    def add_trail_points(self, contact_points):
        """Extend the trails with contact points (k, B, 3) (k new frames)."""
        if self.trail is None:
            return
        self._trail_points.append(np.asarray(contact_points, dtype=float))
        pts = np.concatenate(self._trail_points)  # (n, B, 3)
        if len(self._trail_points) > 64:
            self._trail_points = [pts]
        self.set_trails(pts)

    def set_trails(self, contact_points):
        """Show the trails of contact points (n, B, 3) (frames so far)."""
        if self.trail is None:
            return
        pts = np.asarray(contact_points, dtype=float)
        n, B = pts.shape[:2]
        if n < 2 or not self.show_trails:
            self.trail.copy_from(_empty_lines(pyvista()))
            return
        flat = np.ascontiguousarray(np.swapaxes(pts, 0, 1).reshape(-1, 3))
        ids = np.arange(n * B).reshape(B, n)
        lines = np.hstack([np.full((B, 1), n), ids]).ravel()
        poly = pyvista().PolyData(flat, lines=lines)
        self.trail.copy_from(poly)

    def set_text(self, text):
        if self.text is not None:
            self.text.SetText(2, text)  # corner 2: upper left

    def to_pixels(self, points):
        """Image coordinates (column, row from the top) of world ``points`` (k, 3): (k, 2)."""
        renderer = self.plotter.renderer
        height = self.plotter.window_size[1]
        out = []
        for p in np.asarray(points, dtype=float).reshape(-1, 3):
            renderer.SetWorldPoint(p[0], p[1], p[2], 1.0)
            renderer.WorldToDisplay()
            x, y, _ = renderer.GetDisplayPoint()
            out.append((x, height - 1 - y))
        return np.array(out)

    # -- camera -----------------------------------------------------------------------------
    def frame_camera(self, positions, direction=None):
        """Look at the region the bodies sweep (``positions`` (n, B, 3)) from ``direction``
        (default: the display's ``camera``, else ``DIRECTION``)."""
        if direction is None:
            direction = DIRECTION if self.display.camera is None else self.display.camera
        pts = np.asarray(positions, dtype=float).reshape(-1, 3)
        pad = 1.6 * (self.radius.max() if len(self.radius) else 0.5)
        lo, hi = pts.min(axis=0) - pad, pts.max(axis=0) + pad
        if self.ground_bounds is not None:  # keep some floor in view
            lo[2] = min(lo[2], max(self.ground_bounds[4], lo[2] - pad))
        center = 0.5 * (lo + hi)
        span = float(np.linalg.norm(hi - lo))
        d = np.asarray(direction, dtype=float)
        d /= np.linalg.norm(d)
        cam = self.plotter.camera
        cam.focal_point = center
        cam.position = center + 1.8 * span * d
        cam.up = (0.0, 0.0, 1.0)
        cam.view_angle = 30.0
        self.plotter.reset_camera_clipping_range()
        self.focus_bounds = np.stack([lo, hi])


def conserved_energy(fields):
    """``energy - work`` of a trajectory or a frame dict (``energy`` alone without ``work``):
    the quantity the readout watches, conserved with force elements and moving grounds too."""
    names = fields.fields if hasattr(fields, "fields") else tuple(fields)
    if "energy" not in names:
        return None
    energy = np.asarray(fields["energy"], dtype=float)
    return energy - np.asarray(fields["work"], dtype=float) if "work" in names else energy


def readout(t, energy, energy0, residual, speed=None, paused=False):
    """The text line: time, playback speed, worst relative energy error and residual."""
    energy = np.atleast_1d(energy)
    energy0 = np.atleast_1d(energy0)
    scale = np.where(np.abs(energy0) > 0, np.abs(energy0), 1.0)
    err = float(np.max(np.abs(energy - energy0) / scale))
    text = (f"t = {t:.3f} s    energy error {err:.1e}    "
            f"constraint residual {float(np.max(residual)):.1e}")
    if speed is not None:
        text += f"   speed x{speed:g}"
    if paused:
        text += "   [paused]"
    return text
