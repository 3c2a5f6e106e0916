"""``Scene``: grounds, bodies and their contacts, simulated together and shown together.

A scene holds static *grounds* (surfaces, with a colour) and *bodies*, each with exactly one
*contact* (:mod:`nhphys.contacts`) that turns it into a mechanical system:
:class:`~nhphys.contacts.RollingContact`, :class:`~nhphys.contacts.KnifeEdgeContact` or
:class:`~nhphys.contacts.SuslovContact`. A body's initial conditions are its system's, in the
vocabulary :func:`nhphys.simulate` shares (:mod:`nhphys.conditions`).

Bodies are independent: **they do not collide with each other**, nor with grounds other than
their own contact's, and several bodies in one scene are simply several systems stepped side by
side with the same time step. :meth:`Scene.simulate` returns one :class:`~nhphys.Trajectory`
holding every body, with a body axis after the time axis (``position`` (n, B, 3), ``R``
(n, B, 3, 3), ``omega`` (n, B, 3), ...), and the scene's display description
(:mod:`nhphys.scene_display`), so that a saved run can be shown again without the script that
made it. Scene files are read by :func:`nhphys.scene_file.load_scene_file`.

Nothing here imports PyVista: display meshes are NumPy arrays (``Surface.mesh_arrays``) and
:mod:`nhphys.viz` turns them into actors.
"""

from __future__ import annotations

import numbers
import warnings
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from nhphys import _backend, conditions
from nhphys._threads import check_threads
from nhphys._validation import as_positive_scalar, as_vector3
from nhphys.contacts import (
    BODY_FIELDS,
    CONTACTS,
    MODE_DTYPES,
    MODE_FIELDS,
    Contact,
    KnifeEdgeContact,
    RollingContact,
    SuslovContact,
)
from nhphys.errors import NewtonError
from nhphys.integrators.names import INTEGRATOR_NAMES, integrator_from_name
from nhphys.scene_display import (
    GROUND_COLOR,
    PALETTE,
    SceneDisplay,
    as_color,
    mesh_from,
    two_tone,
)
from nhphys.scene_file import load_scene_file
from nhphys.simulate import check_run_arguments
from nhphys.trajectory import TrajectoryWriter, resume_source

CHUNK_STEPS = 20_000  # steps per body per call: bounds the latency of progress and Ctrl-C

Rolling = RollingContact  # the shorter name; no system is called Rolling

__all__ = [
    "BODY_FIELDS",
    "GROUND_COLOR",
    "INTEGRATOR_NAMES",
    "PALETTE",
    "Contact",
    "KnifeEdgeContact",
    "Rolling",
    "RollingContact",
    "Scene",
    "SceneBody",
    "SceneDisplay",
    "SceneRun",
    "SuslovContact",
    "integrator_from_name",
    "load_scene_file",
    "mesh_from",
    "two_tone",
]

# contacts once named like the systems they make; kept importable, with a warning
_DEPRECATED = {"Suslov": SuslovContact, "KnifeEdge": KnifeEdgeContact}


def __getattr__(name):
    if name in _DEPRECATED:
        cls = _DEPRECATED[name]
        warnings.warn(
            f"nhphys.scene.{name} is the contact {cls.__name__}; the old name, which clashed "
            f"with the system nhphys.systems.{name}, will be removed.",
            DeprecationWarning,
            stacklevel=2,
        )
        return cls
    raise AttributeError(f"module 'nhphys.scene' has no attribute {name!r}")


def _releases_gil(run):
    """Whether ``run`` steps in a compiled loop that never takes the GIL (no Python ground)."""
    if getattr(run, "backend", None) != "cython" or getattr(run, "holds_gil", False):
        return False
    ground = getattr(run, "ground", None)
    return ground is None or type(ground).__name__ != "PythonChartSurface"


def _as_name(value, name):
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"Expected `{name}` to be a non-empty string, got {value!r}.")
    return value.strip()


def _partial(error):
    """The frames a failing run saved before its failure (a dict of arrays, or None when the
    error carries none)."""
    return getattr(error, "_frames", None)


def _named(exc, body_name):
    """``exc`` with the body's name in front of its message (plain TypeError/ValueError only)."""
    if type(exc) in (TypeError, ValueError):
        return type(exc)(f"Body {body_name!r}: {exc}")
    return exc


class SceneBody:
    """A body placed in a scene: the body, its contact, system, initial conditions and looks.

    ``conditions`` holds the checked initial conditions under their canonical names
    (:mod:`nhphys.conditions`).
    """

    def __init__(self, body, contact, system, conditions, name, color, mesh, integrator):
        self.body = body
        self.contact = contact
        self.system = system
        self.conditions = conditions
        self.name = name
        self.color = color
        self.mesh = mesh
        self.integrator = integrator

    def __repr__(self):
        return f"<SceneBody {self.name!r}: {self.contact!r}>"

    @property
    def names(self):
        """Its name in the scene's trajectory and display (one body)."""
        return [self.name]

    def default_integrator(self):
        return self.contact.integrator(self.system)

    def fields(self, saved):
        """The scene's body fields from its system's saved frames, with a body axis of one
        after the time axis (``position`` (k, 1, 3), ...)."""
        return {k: v[:, None] for k, v in
                self.contact.fields(self.body, self.system, saved).items()}

    def display_items(self):
        """Its entry of the scene display's bodies (a list of one)."""
        points, faces = self.mesh
        item = {"name": self.name, "color": self.color, "points": points, "faces": faces,
                "colors": two_tone(points, self.color, center=np.zeros(3)),
                "contact": type(self.contact).__name__}
        item.update(self.contact.display_extra())
        return [item]


class Scene:
    """Grounds and bodies with contacts, simulated together and shown together.

    Bodies do not collide with each other: each is an independent system (see the module
    documentation).

    Parameters
    ----------
    gravity : float
        ``g`` >= 0, pulling along ``-z``.
    name : str
        Used for window titles and default output names.
    camera : array_like, shape (3,), optional
        The direction from which views look at the bodies (default ``(1, -1.5, 1.5)``: from
        the front right, 45 degrees up).

    Examples
    --------
    >>> import nhphys
    >>> from nhphys.surfaces import Ellipsoid
    >>> scene = nhphys.Scene()
    >>> top = nhphys.RigidBody(1.0, [1.0, 2.0, 3.0], Ellipsoid([0.5, 0.35, 0.2]), name="top")
    >>> _ = scene.add_body(top, nhphys.SuslovContact(axis=[0, 0, 1], pivot=[0, 0, 1]),
    ...                    omega=[1.0, 0.5, 0.0])
    >>> traj = scene.simulate(1.0, 0.01, integrator="cayley")
    >>> traj.R.shape, traj.body_names
    ((101, 1, 3, 3), ['top'])
    """

    def __init__(self, gravity=9.81, name="scene", camera=None):
        if isinstance(gravity, bool) or not isinstance(gravity, numbers.Real) \
                or not np.isfinite(gravity) or gravity < 0:
            raise ValueError(f"Expected `gravity` to be a finite number >= 0, got {gravity!r}.")
        self.gravity = float(gravity)
        self.name = _as_name(name, "name")
        self.camera = None
        if camera is not None:
            self.camera = as_vector3(camera, "camera")
            if not np.linalg.norm(self.camera) > 0:
                raise ValueError(f"Expected `camera` to be a nonzero vector, got {self.camera}.")
        self.grounds = []
        self.bodies = []
        self.description = ""  # a scene file's `description`
        self.defaults = {}  # run settings (t_final, dt, ...): a scene file's [run]

    def __repr__(self):
        return (f"<Scene {self.name!r}: {len(self.grounds)} ground(s), "
                f"{len(self.bodies)} body(ies)>")

    # -- building ----------------------------------------------------------------------------
    def add_ground(self, surface, color=GROUND_COLOR, name=None, resolution=96, opacity=1.0):
        """Add a static surface; returns it (pass it to a contact).

        Parameters
        ----------
        surface : nhphys.surfaces.Surface or nhphys.surfaces.MovingGround
            Placed by its own parameters (``center``, ``rotation``, ``point``, ``normal``); a
            moving ground (``Plane().moving(rate=...)``) is shown carried by its motion.
        color : str or (3,) floats
        name : str, optional
        resolution : int
            Vertices along the longest direction of the display mesh.
        opacity : float
            In (0, 1].
        """
        if not hasattr(getattr(surface, "surface", surface), "mesh_arrays"):
            raise TypeError(f"Expected `surface` to be an nhphys.surfaces Surface or "
                            f"MovingGround, got {surface!r}.")
        for g in self.grounds:
            if g["surface"] is surface:
                return surface
        name = f"ground{len(self.grounds)}" if name is None else _as_name(name, "name")
        opacity = as_positive_scalar(opacity, "opacity")
        if opacity > 1:
            raise ValueError(f"Expected `opacity` to be in (0, 1], got {opacity}.")
        self.grounds.append({"surface": surface, "name": name, "color": as_color(color),
                             "resolution": resolution, "opacity": opacity})
        return surface

    def add_body(self, body, contact=None, *, name=None, color=None, mesh=None, integrator=None,
                 resolution=48, forces=None, **initial_conditions):
        """Add a body with its contact and initial conditions.

        Parameters
        ----------
        body : nhphys.RigidBody
            Mass, inertia about the centre of mass, shape.
        contact : RollingContact, KnifeEdgeContact or SuslovContact
            Required: a body without a contact is an error.
        name : str, optional
            Default: the body's name, else ``body<i>``; names are unique in a scene.
        color : str or (3,) floats, optional
        mesh : pyvista mesh or (points, faces), optional
            Display mesh in the shape frame, instead of the shape's.
        integrator : str or integrator, optional
            For this body only (overrides :meth:`simulate`'s).
        resolution : int
            Of the shape's display mesh.
        forces : list of nhphys.forces elements, optional
            Forces, torques, springs, fields, damping and motors acting on this body.
        **initial_conditions
            The contact's system's, under the names :func:`nhphys.simulate` takes
            (:mod:`nhphys.conditions`): ``orientation``, ``omega``, ``momentum`` (Suslov);
            ``position``, ``orientation``, ``omega`` (rolling); ``position``, ``heading``,
            ``velocity``, ``turning_rate`` (knife edge).

        Returns
        -------
        SceneBody

        Raises
        ------
        TypeError
            An unknown initial condition (naming the body, its system and the accepted names),
            a contact of the wrong type.
        ValueError
            No contact; an initial state the system refuses (a velocity violating the
            constraint, a body that cannot touch its ground), naming the body.
        """
        for attr in ("mass", "inertia"):
            if not hasattr(body, attr):
                raise TypeError(f"Expected `body` to be an nhphys.RigidBody, got {body!r}.")
        contact_names = ", ".join(c.__name__ for c in CONTACTS[:-1]) + f" or {CONTACTS[-1].__name__}"
        if contact is None:
            raise ValueError(
                f"Expected a `contact` for body {getattr(body, 'name', None) or body!r}: every "
                "body needs one (RollingContact(ground), KnifeEdgeContact(plane), "
                "SuslovContact(axis)); bodies do not collide with each other or with grounds "
                "they have no contact with."
            )
        if not isinstance(contact, Contact):
            raise TypeError(f"Expected `contact` to be {contact_names}, got {contact!r}.")
        taken = {b.name for b in self.bodies} | set(self.body_names)
        if name is None:
            name = getattr(body, "name", None) or "body"
            base, k = name, len(self.bodies)
            while name in taken:  # several bodies left with the same default name
                name, k = f"{base}{k}", k + 1
        name = _as_name(name, "name")
        if name in taken:
            raise ValueError(f"Expected a new body name, got {name!r} twice.")
        color = as_color(PALETTE[len(self.bodies) % len(PALETTE)] if color is None else color)
        integrator = integrator_from_name(integrator)
        from nhphys.forces import check_forces

        system = contact.system(body, self.gravity, check_forces(forces))
        values = conditions.resolve(system, initial_conditions,
                                    owner=f"body {name!r} ({type(system).__name__})")
        try:
            contact.check(system, conditions.start_arguments(system, values))
        except (TypeError, ValueError) as exc:
            raise _named(exc, name) from exc
        if contact.ground is not None:
            self.add_ground(contact.ground)
        com = np.asarray(getattr(body, "com", np.zeros(3)), dtype=float)
        if mesh is not None:
            points, faces = mesh_from(mesh)
        elif getattr(body, "shape", None) is not None:
            points, faces, _ = body.shape.mesh_arrays(resolution)
        else:
            raise ValueError(f"Expected body {name!r} to have a `shape` or a display `mesh`.")
        points = np.asarray(points, dtype=float) - com
        entry = SceneBody(body, contact, system, values, name, color,
                          (points, np.asarray(faces, dtype=np.int64)), integrator)
        entry.resolution, entry.custom_mesh = resolution, mesh is not None  # for to_toml
        self.bodies.append(entry)
        return entry

    @property
    def body_names(self):
        """The names of the trajectory's bodies: each body's, and each link of each
        articulated system (``"bicycle.rear_wheel"``, ...)."""
        return [name for b in self.bodies for name in b.names]

    def add_articulated(self, system, *, name=None, color=None, integrator=None, ground=None,
                        **initial_conditions):
        """Add an articulated system (:class:`~nhphys.systems.Articulated`,
        :class:`~nhphys.systems.Bicycle`) with its initial conditions.

        It steps as one system by its own integrator, and each of its links is a body of the
        scene's trajectory and display, named ``"<name>.<link>"`` (see
        :mod:`nhphys.scene_articulated`).

        Parameters
        ----------
        system : nhphys.systems.Articulated
            Its wheels and blades are on its plane ``z = 0``, laid on ``ground``.
        name : str, optional
            Default: the system's ``name`` in lower case; unique in the scene.
        color : str or (3,) floats, optional
            Of its frames (wheels and blades have their own colours).
        integrator : str or integrator, optional
            ``DLA()`` (``"dla"``, the default), a composition of it
            (``Composition([(DLA(), w) for w in coefficients.composition(4)])``) or
            ``Reference``. The scene's integrator does not apply to it.
        ground : nhphys.surfaces.Plane, optional
            The plane it rides on (:func:`nhphys.scene_articulated.ground_frame`), which
            must fit its gravity: level
            for a level system, tilted by ``s`` for a ``Bicycle(slope=s)``. Default: a plane
            of the scene that fits, else a new one through the origin (``extent`` 25 m);
            added to the scene's grounds if it is not there. A system with a curved ground
            of its own (``Articulated(..., ground=...)``) rides that one, in the scene's
            frame, under the scene's gravity.
        **initial_conditions
            The system's (:mod:`nhphys.conditions`): ``q`` and ``v``, or a bicycle's ``speed``,
            ``roll``, ``steer``, ``roll_rate``, ``steer_rate``, ``yaw`` and ``position``.

        Returns
        -------
        nhphys.scene_articulated.SceneArticulated

        Raises
        ------
        TypeError
            Not an articulated system; an unknown initial condition (listing the accepted
            names); a ground that is not a ``Plane``.
        ValueError
            A ground that does not fit its gravity (its slope, or the size of gravity,
            differs), or whose normal points down; an integrator the tree cannot take; a name
            taken; an initial state the system refuses (naming it).
        """
        from nhphys.integrators.multibody import tree_fractions
        from nhphys.scene_articulated import SceneArticulated, default_ground, ground_frame
        from nhphys.surfaces import Plane
        from nhphys.systems.articulated import Articulated

        if not isinstance(system, Articulated):
            raise TypeError(f"Expected `system` to be an nhphys.systems.Articulated (a Bicycle, "
                            f"a joint tree); got {system!r}. Add single bodies with add_body.")
        name = _as_name(name if name is not None else system.name.lower(), "name")
        taken = set(self.body_names) | {b.name for b in self.bodies}
        if name in taken or any(n.startswith(name + ".") for n in taken):
            raise ValueError(f"Expected a new name, got {name!r} twice.")
        if system.ground is not None:  # its own curved ground, in the scene's frame
            if ground is not None and ground is not system.ground:
                raise ValueError(f"System {name!r} rolls on its own ground "
                                 f"{system.ground!r}: expected `ground` None or that surface.")
            ground, frame = system.ground, None
            if abs(system.tree.gravity - self.gravity) > 1e-12 * max(self.gravity, 1.0):
                raise ValueError(f"System {name!r}: its gravity {system.tree.gravity} differs "
                                 f"from the scene's {self.gravity}.")
        else:
            if ground is None:
                ground = default_ground(system, self)
            if not isinstance(ground, Plane):
                raise TypeError(f"Expected `ground` to be an nhphys.surfaces.Plane, got "
                                f"{ground!r}; a system on a curved ground takes it as "
                                "Articulated(..., ground=...).")
            try:
                frame = ground_frame(system.tree.gravity_vector, self.gravity, ground)
            except ValueError as exc:
                raise ValueError(f"System {name!r}: {exc}") from None
        from nhphys.integrators import Reference

        integrator = integrator_from_name("dla" if integrator is None else integrator)
        try:
            if not isinstance(integrator, Reference):
                tree_fractions(integrator.stage_rows())
        except (AttributeError, TypeError):
            raise ValueError(f"System {name!r}: expected DLA(), a Composition of it or "
                             f"Reference for a joint tree, got {integrator!r}.") from None
        values = conditions.resolve(system, initial_conditions,
                                    owner=f"system {name!r} ({type(system).__name__})")
        try:
            system.state(**conditions.start_arguments(system, values))
        except (TypeError, ValueError) as exc:
            raise _named(exc, name) from exc
        color = as_color(PALETTE[len(self.bodies) % len(PALETTE)] if color is None else color)
        entry = SceneArticulated(system, values, name, color, integrator, frame)
        entry.ground = ground  # for its scene file
        self.add_ground(ground)
        self.bodies.append(entry)
        return entry

    def display(self):
        """The :class:`SceneDisplay` of this scene (meshes as arrays)."""
        grounds = []
        from nhphys.scene_display import ground_marks, motion_description
        from nhphys.surfaces.moving import MovingGround

        for g in self.grounds:
            moving = isinstance(g["surface"], MovingGround)
            surface = g["surface"].surface if moving else g["surface"]
            points, faces, _ = surface.mesh_arrays(g["resolution"])
            item = {"name": g["name"], "color": g["color"], "opacity": g["opacity"],
                    "points": points, "faces": faces}
            if moving:  # drawn in its own frame, carried per frame by its pose
                item["motion"] = motion_description(g["surface"].motion)
                item["colors"] = ground_marks(points, g["color"], item["motion"])
            grounds.append(item)
        bodies = []
        for b in self.bodies:
            bodies += b.display_items()
        return SceneDisplay(grounds, bodies, self.name, self.camera)

    # -- stepping ----------------------------------------------------------------------------
    def start(self, dt, integrator=None, backend="auto", threads=None):
        """Validate and start every body for an open-ended run (the live viewer's): a
        :class:`SceneRun`. Arguments as for :meth:`simulate`."""
        args = check_run_arguments(dt, integrator=integrator, backend=backend)
        return SceneRun(self, args.dt, args.integrator, args.backend, threads)

    def simulate(self, t_final, dt, integrator=None, backend="auto", save_every=1,
                 progress=None, out=None, resume=False, max_run_bytes=None, threads=None):
        """Step every body from t = 0 to ``t_final``; returns one :class:`Trajectory`.

        Parameters
        ----------
        t_final, dt : float
            As for :func:`nhphys.simulate` (``t_final`` a whole number of steps).
        integrator : str, integrator or None
            For every body without its own; ``None`` takes each contact's default (the
            exponential retraction, or Newmark on an inclined plane).
        backend : {"auto", "cython", "python"}
        save_every : int
        progress : bool or None
            A progress bar (tqdm); ``None`` shows one for long runs on a terminal.
        out : str or path, optional
            An ``.npz`` file written as the run goes: frames are streamed chunk by chunk to
            ``out + ".part"`` (which :meth:`Trajectory.load` reads if the process is killed). A
            complete run replaces ``out`` atomically; a failed or interrupted one goes beside it
            (``NAME.failed.npz``, ``NAME.interrupted.npz``) and never replaces an existing file.
            Each chunk carries every body's integrator state at its end (a checkpoint).
        resume : bool, str or path
            Continue a killed or interrupted run of this scene, bit for bit, as for
            :func:`nhphys.simulate`: ``True`` finds it beside ``out``, a path names its file or
            ``.part`` folder.
        max_run_bytes : int, optional
            Refuse a run whose frames would take more memory (default 2 GiB, or
            ``$NHPHYS_MAX_RUN_BYTES``), as for :func:`nhphys.simulate`.

        Returns
        -------
        Trajectory
            Fields ``t`` (n,), ``position`` (n, B, 3), ``R`` (n, B, 3, 3), ``omega`` (n, B, 3),
            ``contact_point`` (n, B, 3), ``energy`` (n, B), ``constraint_residual`` (n, B);
            ``meta["bodies"]`` names the bodies and ``meta["scene"]`` describes the display.
            Interrupted with Ctrl-C: the frames so far, ``meta["interrupted"] = True``.
        """
        from nhphys.simulate import drive, run_memory_limit

        args = check_run_arguments(dt, t_final, save_every, integrator, backend)
        if not self.bodies:
            raise ValueError("Expected the scene to have at least one body; add one with "
                             "scene.add_body(body, contact, ...).")
        limit = run_memory_limit(max_run_bytes)
        source = None if resume is False or resume is None else resume_source(resume, out)
        writer = TrajectoryWriter(out, resume=bool(source and source.in_part)) \
            if out is not None else None  # checks `out` early
        try:
            run = SceneRun(self, args.dt, args.integrator, args.backend, threads)
        except BaseException:
            if writer is not None:
                writer.discard()
            raise
        meta = dict(run.meta, save_every=args.save_every)
        display_meta, static = self.display().to_meta()
        meta["scene"] = display_meta
        from nhphys.scenefile import run_toml

        scene_toml = run_toml(self, args.t_final, args.dt, args.integrator, args.save_every)
        if scene_toml is not None:  # the scene file that repeats this run
            meta["scene_toml"] = scene_toml
        return drive(run, args.n_steps, args.dt, args.save_every, meta, progress=progress,
                     writer=writer, static=static,
                     chunk_steps=max(1, CHUNK_STEPS // len(self.bodies)),
                     work_per_step=len(self.bodies), desc=self.name, resume=source,
                     max_run_bytes=limit)

    # -- scene files -------------------------------------------------------------------------
    def to_toml(self, path=None, *, run=None):
        """This scene as a declarative scene file (TOML text; see ``docs/scene-files.md``).

        Parameters
        ----------
        path : str or path, optional
            Also write the text there (atomically).
        run : dict, optional
            Run settings for its ``[run]`` table (``t_final``, ``dt``, ``integrator``,
            ``save_every``, ``fps``, ``speed``, ``size``); default :attr:`defaults`.

        Returns
        -------
        str
            Read back by :meth:`from_toml`, it builds the same scene to the last bit.

        Raises
        ------
        ValueError
            Naming the body or ground that a scene file cannot describe (a surface made from
            Python functions, a custom display mesh, an integrator whose options have no name).
        """
        from nhphys.scenefile import scene_to_toml
        from nhphys.trajectory import atomic_path

        text = scene_to_toml(self, run)
        if path is not None:
            with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    @classmethod
    def from_toml(cls, path_or_text):
        """A scene from a declarative scene file; no code in it runs.

        Parameters
        ----------
        path_or_text : str, bytes or path
            A path (``os.PathLike``, or a one-line str ending with ``.toml``) or the TOML text.

        Returns
        -------
        Scene
            With :attr:`defaults` holding the file's ``[run]`` settings.

        Raises
        ------
        nhphys.scenefile.SceneFileError
            A ``ValueError`` naming the field, e.g. ``bodies[2].shape.radius: expected a
            number > 0, got -1``.
        FileNotFoundError
        """
        from nhphys.scenefile import load

        return load(path_or_text)

    # -- viewing -----------------------------------------------------------------------------
    def show(self, dt=0.01, integrator=None, backend="auto", **options):
        """Open a window and step the scene live (see :func:`nhphys.viz.show`)."""
        from nhphys import viz

        return viz.show(self, dt=dt, integrator=integrator, backend=backend, **options)

    def render(self, trajectory, path, **options):
        """Render a trajectory of this scene to a GIF, MP4 or PNG (see :func:`nhphys.viz.render`)."""
        from nhphys import viz

        return viz.render(self, trajectory, path, **options)


class SceneRun:
    """Every body of a scene started with the same step: advances them side by side.

    Made by :meth:`Scene.start` and :meth:`Scene.simulate` from arguments already checked by
    :func:`nhphys.simulate.check_run_arguments` (``dt`` a float, ``integrator`` an object or
    ``None``, ``backend`` resolved). ``initial()`` and ``advance(n_steps, save_every)`` return
    the common fields stacked over bodies (leading axes (k, B)); ``steps_done`` counts the steps
    taken. ``checkpoint()`` and ``restore(checkpoint)`` save and put back every body's state
    (see :class:`nhphys.integrators.run.Run`).

    When every body steps in a compiled kernel (and no ground calls back into Python), the
    bodies take each call's steps side by side on ``threads`` threads: the kernels' time loops
    release the GIL, so a scene of B bodies on two cores takes about half the time. Otherwise
    (a twin, a ``Reference`` run, a Python ground or force) they take them one after the other.
    The results are the same either way, bit for bit: each body's run is its own.

    A failure, an exception or Ctrl-C in one body stops the whole run (it refuses to advance
    after it, since the bodies may then be at different steps). Ctrl-C carries in its
    ``frames`` attribute the frames that every body had computed: stepping one after the
    other, those of the saved steps the last body committed when Ctrl-C came in its loop (none
    when it came in an earlier body's); side by side, the bodies finish the call's steps (a
    kernel loop cannot be stopped) and Ctrl-C carries all of them.
    """

    def __init__(self, scene, dt, integrator, backend, threads=None):
        self.scene = scene
        self.dt = dt
        self.backend = backend
        self.threads = check_threads(threads)
        self.runs = []
        integrators = []
        for b in scene.bodies:
            chosen = b.integrator or integrator or b.default_integrator()
            integrators.append(chosen)
            try:
                self.runs.append(chosen.start(b.system, dt, backend,
                                              **conditions.start_arguments(b.system,
                                                                           b.conditions)))
            except (TypeError, ValueError) as exc:
                raise _named(exc, b.name) from exc
        self.steps_done = 0
        self.failure = None
        self.meta = {
            "bodies": scene.body_names,
            "entries": [b.name for b in scene.bodies],
            "systems": [repr(b.system) for b in scene.bodies],
            "integrators": [repr(i) for i in integrators],
            "integrator": repr(integrators[0]) if len(set(map(repr, integrators))) == 1
            else "mixed",
            "dt": dt,
            "backend": _backend.described(self.runs),
            "gravity": scene.gravity,
        }

    def _stack(self, per_entry):
        """The entries' fields (each with its body axis) joined along the body axis."""
        stacked = {k: np.concatenate([f[k] for f in per_entry], axis=1) for k in BODY_FIELDS}
        if any(getattr(getattr(b, "contact", None), "lift_off", False)
               for b in self.scene.bodies):
            for k in MODE_FIELDS:  # the bodies in permanent contact: mode 0 and gap 0
                stacked[k] = np.concatenate(
                    [f[k] if k in f else np.zeros(f["position"].shape[:2], dtype=MODE_DTYPES[k])
                     for f in per_entry], axis=1)
        return stacked

    def event_list(self):
        """The mode changes of the bodies with a unilateral contact, in time order, each with
        the ``body`` it happened to (see :attr:`nhphys.Trajectory.events`)."""
        events = [dict(event, body=b.name) for b, r in zip(self.scene.bodies, self.runs)
                  if hasattr(r, "event_list") for event in r.event_list()]
        return sorted(events, key=lambda event: event["t"])

    def initial(self):
        return self._stack([b.fields(r.initial())
                            for b, r in zip(self.scene.bodies, self.runs)])

    def advance(self, n_steps, save_every=None):
        """Take ``n_steps`` steps on every body; the frames saved every ``save_every`` steps
        (default: only the last)."""
        if self.failure is not None:
            raise RuntimeError(f"This run stopped after step {self.steps_done} "
                               f"({type(self.failure).__name__}); start a new one to go on.") \
                from self.failure
        save_every = n_steps if save_every is None else save_every
        if self.side_by_side:
            return self._advance_side_by_side(n_steps, save_every)
        out = []
        last = len(self.runs) - 1
        for i, (b, r) in enumerate(zip(self.scene.bodies, self.runs)):
            try:
                saved = r.advance(n_steps, save_every)
            except KeyboardInterrupt as exc:
                self.failure = exc
                frames = getattr(exc, "frames", None)
                exc.frames = None  # an earlier body's interruption: no frame has every body
                if i == last and frames is not None:
                    exc.frames = self._cut(out + [frames], len(next(iter(frames.values()))))
                raise
            except NewtonError as err:
                self.failure = err
                err.args = (f"Body {b.name!r}: {err.args[0]}",)
                # the later bodies step as far as this one saved, so that the frames before
                # the failure are kept for every body
                partial = _partial(err)
                kept = len(partial["t"]) if partial and "t" in partial else 0
                raw = out + [partial]
                try:
                    raw += [r_.advance(kept * save_every, save_every) if kept else {}
                            for r_ in self.runs[i + 1:]]
                except (NewtonError, ArithmeticError, ValueError):
                    raw = None
                err.scene_frames = self._cut(raw, kept) if raw is not None and kept else None
                raise
            except BaseException as exc:
                self.failure = exc
                raise
            out.append(saved)
        self.steps_done += n_steps
        return self._stack([b.fields(saved) for b, saved in zip(self.scene.bodies, out)])

    def _cut(self, raw, kept):
        """The entries' frames ``raw`` (each a run's saved frames, at least ``kept`` long) cut
        to the first ``kept``, as the scene's fields."""
        return self._stack([b.fields({k: v[:kept] for k, v in frames.items() if k != "t"})
                            for b, frames in zip(self.scene.bodies, raw)])

    @property
    def side_by_side(self):
        """Whether the bodies step on threads: several bodies, several threads, and every
        body's loop a compiled kernel that never calls Python."""
        return (self.threads > 1 and len(self.runs) > 1
                and all(_releases_gil(r) for r in self.runs))

    def _advance_side_by_side(self, n_steps, save_every):
        """:meth:`advance` with one thread per body (at most ``threads`` at once)."""
        pool = ThreadPoolExecutor(max_workers=min(self.threads, len(self.runs)))
        futures = []
        try:
            for r in self.runs:
                futures.append(pool.submit(r.advance, n_steps, save_every))
            wait(futures)
        except KeyboardInterrupt as exc:
            # the kernels cannot be stopped: every body started finishes the call's steps,
            # and when all had started, their frames go with the interruption
            self.failure = exc
            exc.frames = None
            wait(futures)
            if len(futures) == len(self.runs) and all(f.exception() is None for f in futures):
                exc.frames = self._stack([b.fields(f.result())
                                          for b, f in zip(self.scene.bodies, futures)])
                self.steps_done += n_steps
            raise
        finally:
            pool.shutdown(wait=True)
        for b, f in zip(self.scene.bodies, futures):  # the first failing body, in body order
            err = f.exception()
            if err is None:
                continue
            self.failure = err
            if isinstance(err, NewtonError):
                err.args = (f"Body {b.name!r}: {err.args[0]}",)
                # every body's frames up to the earliest failure's last saved frame
                raw = [f_.result() if f_.exception() is None else _partial(f_.exception())
                       for f_ in futures]
                if all(frames is not None for frames in raw):
                    kept = min(len(frames["t"]) if "t" in frames else
                               len(next(iter(frames.values()), ())) for frames in raw)
                    err.scene_frames = self._cut(raw, kept) if kept else None
            if isinstance(err, KeyboardInterrupt):  # raised in a body's thread: the bodies
                err.frames = None                   # are at different steps, keep none
            raise err
        self.steps_done += n_steps
        return self._stack([b.fields(f.result())
                            for b, f in zip(self.scene.bodies, futures)])

    def checkpoint(self):
        """Every body's :meth:`~nhphys.integrators.run.Run.checkpoint` (names prefixed by the
        body's index, ``"0.R"``, ...) and ``steps_done``; ``None`` when a body's run has none
        (a :class:`~nhphys.integrators.Reference` run).

        Raises
        ------
        RuntimeError
            The run stopped (a failure or Ctrl-C): its bodies are at different steps.
        """
        if self.failure is not None:
            raise RuntimeError(f"This run stopped after step {self.steps_done}; it has no "
                               "checkpoint after that.")
        if not all(hasattr(r, "checkpoint") for r in self.runs):
            return None
        state = {"steps_done": np.array(self.steps_done, dtype=np.int64)}
        for i, r in enumerate(self.runs):
            state.update({f"{i}.{k}": v for k, v in r.checkpoint().items()})
        return state

    def restore(self, checkpoint):
        """Put back a :meth:`checkpoint` of a run of the same scene, started the same way.

        Raises
        ------
        ValueError
            The checkpoint is not of this scene's bodies and runs (naming the body and what
            differs).
        """
        names = [b.name for b in self.scene.bodies]
        known = {"steps_done"} | {f"{i}." for i in range(len(self.runs))}
        stray = sorted(k for k in checkpoint if k != "steps_done"
                       and k[:k.find(".") + 1] not in known)
        if "steps_done" not in checkpoint or stray:
            raise ValueError(f"Expected a checkpoint of a scene with {len(names)} bodies "
                             f"{names}, got the arrays {sorted(checkpoint)}.")
        steps = int(np.asarray(checkpoint["steps_done"]))
        for i, (name, r) in enumerate(zip(names, self.runs)):
            if not hasattr(r, "restore"):
                raise ValueError(f"Body {name!r}: its run ({type(r).__name__}) cannot be "
                                 "resumed from a checkpoint.")
            prefix = f"{i}."
            part = {k[len(prefix):]: v for k, v in checkpoint.items() if k.startswith(prefix)}
            try:
                r.restore(part)
            except ValueError as exc:
                raise ValueError(f"Body {name!r}: {exc}") from None
            if r.steps_done != steps:
                raise ValueError(f"Body {name!r}: its checkpoint is at step {r.steps_done}, "
                                 f"the scene's at step {steps}.")
        self.steps_done = steps
        self.failure = None
