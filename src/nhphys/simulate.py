"""``simulate``: the driver loop shared by every system and integrator."""

import numbers
import sys
import warnings
from typing import NamedTuple

import numpy as np

from nhphys import _backend, conditions
from nhphys._validation import as_positive_scalar
from nhphys.errors import NewtonError
from nhphys.integrators.names import integrator_from_name
from nhphys.trajectory import Trajectory, TrajectoryWriter

CHUNK_STEPS = 20_000  # steps per kernel call: bounds the latency of progress and Ctrl-C
AUTO_PROGRESS_STEPS = 100_000  # runs at least this long show a bar on a terminal


def _progress_bar(total, enabled, desc="nhphys", work=None):
    """A tqdm bar of ``total`` steps; ``enabled=None`` shows it when ``work`` (default ``total``)
    reaches AUTO_PROGRESS_STEPS on a terminal."""
    if enabled is None:
        enabled = (total if work is None else work) >= AUTO_PROGRESS_STEPS and sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="step", unit_scale=True, desc=desc)


def number_of_steps(t_final: float, dt: float) -> int:
    """``t_final / dt`` as a whole number >= 1 (to 1e-9 relative), else ``ValueError``."""
    n_steps = round(t_final / dt)
    if n_steps < 1 or abs(n_steps * dt - t_final) > 1e-9 * t_final:
        raise ValueError(
            f"Expected `t_final` to be a whole number of steps `dt`, got t_final / dt = "
            f"{t_final / dt:.12g}."
        )
    return n_steps


class RunArguments(NamedTuple):
    """The checked arguments of a run (see :func:`check_run_arguments`)."""

    dt: float
    t_final: float | None
    n_steps: int | None
    save_every: int
    integrator: object
    backend: str


def check_run_arguments(dt, t_final=None, save_every=1, integrator=None,
                        backend="auto") -> RunArguments:
    """Check the arguments every run shares, once: :func:`simulate`, :meth:`nhphys.Scene.simulate`
    and :meth:`nhphys.Scene.start` (the live viewer's open-ended run) all call this.

    Parameters
    ----------
    dt : float
        Step size, > 0.
    t_final : float or None
        End time, > 0 and a whole number of steps (to 1e-9 relative); ``None`` for a run without
        an end (then ``n_steps`` is ``None``).
    save_every : int
        >= 1.
    integrator : str, integrator or None
        A name from :data:`nhphys.integrators.INTEGRATOR_NAMES` or an integrator object;
        ``None`` stays ``None`` (the caller's default).
    backend : {"auto", "cython", "python"}
        Resolved to the implementation that will step (``"cython"`` or ``"python"``).

    Returns
    -------
    RunArguments

    Raises
    ------
    ValueError, TypeError
        Naming the argument.
    """
    dt = as_positive_scalar(dt, "dt")
    n_steps = None
    if t_final is not None:
        t_final = as_positive_scalar(t_final, "t_final")
        n_steps = number_of_steps(t_final, dt)
    if isinstance(save_every, bool) or not isinstance(save_every, numbers.Integral) \
            or save_every < 1:
        raise ValueError(f"Expected `save_every` to be an integer >= 1, got {save_every!r}.")
    integrator = integrator_from_name(integrator)
    return RunArguments(dt, t_final, n_steps, int(save_every), integrator,
                        _backend.resolve(backend))


def simulate(system, t_final, dt, integrator=None, backend="auto", save_every=1,
             progress=None, out=None, **initial_conditions):
    """Integrate ``system`` from t = 0 to ``t_final`` with steps of ``dt``.

    Parameters
    ----------
    system : object
        A system from :mod:`nhphys.systems`.
    t_final : float
        End time, > 0; must be a whole number of steps (to 1e-9 relative).
    dt : float
        Step size, > 0.
    integrator : str or object, optional
        An integrator from :mod:`nhphys.integrators`, or its name (``"exp"``, ``"cayley"``,
        ``"newmark"``, ``"dla"``, ``"reference"``); default ``Retraction("exp")``.
    backend : {"auto", "cython", "python"}
        Compiled kernels or their Python twins.
    save_every : int
        Keep every ``save_every``-th step; the initial and the final state are always kept
        (when ``save_every`` does not divide the number of steps, the last frame is the final
        state, less than ``save_every`` steps after the one before it).
    progress : bool or None
        Show a progress bar; ``None`` shows one for long runs on a terminal.
    out : str or path, optional
        An ``.npz`` file written as the run goes: each chunk of frames is streamed to the folder
        ``out + ".part"`` (``Trajectory.load`` reads it if the process is killed). A complete
        run replaces ``out`` atomically; a failed or interrupted one never replaces an existing
        file: it goes beside it, to ``NAME.failed.npz`` or ``NAME.interrupted.npz``.
    **initial_conditions
        In the vocabulary of :mod:`nhphys.conditions`, shared with :meth:`nhphys.Scene.add_body`:
        ``orientation``, ``omega``, ``momentum`` (Suslov); ``orientation``, ``omega``,
        ``position`` (RollingBody); ``position``, ``heading``, ``velocity``, ``turning_rate``
        (KnifeEdge); ``position``, ``heading``, ``phi``, ``turning_rate``, ``spin``
        (VerticalDisk); ``q``, ``v`` (ContactOscillator, ConstrainedMechanicalSystem). The
        earlier spellings (``R0``, ``omega0``, ``pose0``, ...) are accepted too.

    Returns
    -------
    Trajectory
        With ``t`` (n,) and the system's fields. If interrupted with Ctrl-C, the frames computed
        so far, with ``meta["interrupted"] = True`` (and a warning).

    Raises
    ------
    TypeError
        An unknown initial condition (naming the system and the accepted names).
    ValueError, TypeError
        Bad arguments or initial conditions, before any step is taken.
    NewtonError
        A step failed; names the step and time, with the frames before it in ``.trajectory``.

    Examples
    --------
    >>> import nhphys
    >>> top = nhphys.systems.Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1])
    >>> traj = nhphys.simulate(top, 1.0, 0.01, integrator="cayley", omega=[1.0, 0.5, 0.0])
    >>> traj.omega.shape
    (101, 3)
    """
    from nhphys.integrators import Retraction

    args = check_run_arguments(dt, t_final, save_every, integrator, backend)
    values = conditions.resolve(system, initial_conditions)
    writer = None if out is None else TrajectoryWriter(out)  # checks `out` before stepping
    integrator = Retraction() if args.integrator is None else args.integrator
    run = integrator.start(system, args.dt, args.backend,
                           **conditions.start_arguments(system, values))

    meta = {
        "system": repr(system),
        "integrator": repr(integrator),
        "dt": args.dt,
        "backend": _backend.described([run]),  # what really steps (the run chose it)
        "save_every": args.save_every,
    }
    return drive(run, args.n_steps, args.dt, args.save_every, meta, progress=progress,
                 writer=writer)


def drive(run, n_steps, dt, save_every, meta, *, progress=None, writer=None, static=None,
          chunk_steps=None, work_per_step=1, desc="nhphys"):
    """Step a started run ``n_steps`` times in kernel-sized chunks: the loop of :func:`simulate`
    and :meth:`nhphys.Scene.simulate`.

    It keeps the initial frame and every ``save_every``-th step, streams each chunk to
    ``writer`` (a :class:`~nhphys.trajectory.TrajectoryWriter`) when given, shows a progress bar
    (by default for ``n_steps * work_per_step`` units of work or more), returns what was computed when Ctrl-C arrives between
    chunks, and attaches it to a failing step's :class:`NewtonError` as ``.trajectory``.

    Parameters
    ----------
    run : object
        From ``integrator.start(...)``: ``initial()`` and ``advance(n, save_every)``.
    n_steps : int
    dt : float
    save_every : int
    meta : dict
        The trajectory's metadata (``interrupted`` and ``steps`` are filled in here).
    progress : bool or None
    writer : TrajectoryWriter or None
    static : dict or None
        Non-time data stored with the trajectory (a scene's display meshes).
    chunk_steps : int, optional
        Steps per ``advance`` call (rounded to a multiple of ``save_every``); default
        ``CHUNK_STEPS``.
    work_per_step : int
        Units of work per step (the number of bodies of a scene), for the automatic bar.
    desc : str
        The progress bar's label.

    Returns
    -------
    Trajectory
    """
    meta = dict(meta, interrupted=False)
    frames = [{"t": np.zeros(1), **run.initial()}]
    if writer is not None:
        writer.begin(meta, static)
        writer.append(frames[0])
    chunk_steps = CHUNK_STEPS if chunk_steps is None else chunk_steps
    chunk = save_every * max(1, chunk_steps // save_every)  # chunks end on saved steps
    bar = _progress_bar(n_steps, progress, desc, work=n_steps * work_per_step)
    done = 0

    def assemble():
        return Trajectory.concatenate(frames, dict(meta, steps=done), static=static)

    def take(todo, every):
        nonlocal done
        saved = run.advance(todo, every)
        t = dt * np.arange(done + every, done + todo + 1, every)
        frames.append({"t": t, **saved})
        if writer is not None:
            writer.append(frames[-1])
        done += todo
        if bar is not None:
            bar.update(todo)

    try:
        while done < n_steps:
            todo = min(chunk, n_steps - done)
            rest = todo % save_every  # only in the last chunk: the final state is kept too
            if todo - rest:
                take(todo - rest, save_every)
            if rest:
                take(rest, rest)
    except KeyboardInterrupt:
        meta["interrupted"] = True
        warnings.warn(
            f"Interrupted at t = {done * dt:.6g}: returning the {done} steps computed so far.",
            RuntimeWarning,
            stacklevel=3,
        )
    except NewtonError as err:
        err.trajectory = assemble()
        if writer is not None:
            writer.finish(err.trajectory, complete=False)  # kept beside `out`, never over it
        raise
    finally:
        if bar is not None:
            bar.close()
    traj = assemble()
    if writer is not None:
        writer.finish(traj, complete=not meta["interrupted"])
    return traj
