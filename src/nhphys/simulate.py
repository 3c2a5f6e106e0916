"""``simulate``: the driver loop shared by every system and integrator."""

import contextlib
import numbers
import os
import re
import sys
import warnings
from typing import NamedTuple

import numpy as np

from nhphys import _backend, conditions
from nhphys._validation import as_positive_scalar
from nhphys.errors import NewtonError
from nhphys.integrators.names import integrator_from_name
from nhphys.trajectory import Trajectory, TrajectoryWriter, resume_source, with_checkpoint

CHUNK_STEPS = 20_000  # steps per kernel call: bounds the latency of progress and Ctrl-C
AUTO_PROGRESS_STEPS = 100_000  # runs at least this long show a bar on a terminal
MAX_RUN_BYTES = 2 * 2**30  # the default limit of the frames a run keeps in memory
MAX_RUN_BYTES_ENV = "NHPHYS_MAX_RUN_BYTES"  # replaces the default when set
# what must agree between a run and the one it resumes (those of the metadata that either has)
RESUME_KEYS = ("system", "systems", "bodies", "integrator", "integrators", "dt", "save_every",
               "backend")


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
    ratio = t_final / dt
    if not np.isfinite(ratio):  # a subnormal dt (5e-324): the ratio overflows to inf
        raise ValueError(
            f"Expected `t_final / dt` to be a finite number of steps, but t_final = "
            f"{t_final!r} with dt = {dt!r} is too many steps (the ratio overflows)."
        )
    n_steps = round(ratio)
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
             progress=None, out=None, resume=False, max_run_bytes=None, **initial_conditions):
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
        ``out + ".part"``, with the integrator's whole state at the chunk's end (a checkpoint),
        so that ``Trajectory.load`` reads it and ``resume`` continues it if the process is
        killed. A complete run replaces ``out`` atomically; a failed or interrupted one never
        replaces an existing file: it goes beside it, to ``NAME.failed.npz`` or
        ``NAME.interrupted.npz``.
    resume : bool, str or path
        Continue an unfinished run instead of starting again: ``True`` finds it beside ``out``
        (its ``.part`` folder, else ``NAME.interrupted.npz``, else ``NAME.killed.npz``, else a
        complete ``out`` to extend to a later ``t_final``; with none of them the run starts from
        the beginning); a path names the run file or ``.part`` folder. The run must be of the
        same system, integrator, ``dt``, ``save_every`` and backend, from the same initial
        state (else a ``ValueError`` naming what differs); it continues from the checkpoint at
        the end of its last chunk, and the result has the same arrays, bit for bit, as a run
        never interrupted. A complete resumed run that was found with ``resume=True`` in
        ``NAME.interrupted.npz`` or ``NAME.killed.npz`` removes that file (its frames are all in
        ``out``). Runs of ``Reference`` cannot be resumed.
    max_run_bytes : int, optional
        The most memory the returned frames may take: a run estimated to keep more is refused
        before any step (a ``ValueError`` giving the estimate). Default 2 GiB
        (``MAX_RUN_BYTES``), or the environment variable ``NHPHYS_MAX_RUN_BYTES``. Streaming to
        ``out`` does not lower it: the returned trajectory holds every frame too.
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
        so far (those of the chunk in progress included), with ``meta["interrupted"] = True``
        (and a warning). Its static arrays ``checkpoint.*`` hold the integrator's state at the
        end of the last chunk finished (:func:`nhphys.trajectory.checkpoint_of`).

    Raises
    ------
    TypeError
        An unknown initial condition (naming the system and the accepted names).
    ValueError, TypeError
        Bad arguments or initial conditions (an initial state that is not finite included),
        a run too large for ``max_run_bytes``, a run to resume that does not match, before any
        step is taken.
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
    limit = run_memory_limit(max_run_bytes)
    values = conditions.resolve(system, initial_conditions)
    source = None if resume is False or resume is None else resume_source(resume, out)
    # checks `out` before stepping
    writer = None if out is None else TrajectoryWriter(out, resume=bool(source and
                                                                        source.in_part))
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
                 writer=writer, resume=source, max_run_bytes=limit)


def run_memory_limit(max_run_bytes=None):
    """The checked ``max_run_bytes`` of :func:`simulate`: the argument, else
    ``$NHPHYS_MAX_RUN_BYTES``, else ``MAX_RUN_BYTES``."""
    if max_run_bytes is None:
        text = os.environ.get(MAX_RUN_BYTES_ENV)
        if not text:
            return MAX_RUN_BYTES
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"Expected ${MAX_RUN_BYTES_ENV} to be a number of bytes >= 1, "
                             f"got {text!r}.")
        return value
    if isinstance(max_run_bytes, bool) or not isinstance(max_run_bytes, numbers.Integral) \
            or max_run_bytes < 1:
        raise ValueError(f"Expected `max_run_bytes` to be an integer >= 1 or None, got "
                         f"{max_run_bytes!r}.")
    return int(max_run_bytes)


def _size(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return None


def check_run_memory(first, n_steps, save_every, limit):
    """Refuse a run whose frames would take more than ``limit`` bytes.

    Parameters
    ----------
    first : dict of str -> ndarray
        The initial frame (``t`` included, leading axis 1): its size is that of every frame.
    n_steps, save_every : int
    limit : int

    Returns
    -------
    int
        The estimate: frames kept (the initial one, every ``save_every``-th step and the final
        state) times bytes per frame.

    Raises
    ------
    ValueError
        Giving the estimate and what lowers it.
    """
    n_frames = 1 + n_steps // save_every + (1 if n_steps % save_every else 0)
    per_frame = sum(np.asarray(v).nbytes for v in first.values())
    estimate = n_frames * per_frame
    if estimate <= limit:
        return estimate
    # the smallest save_every that fits: 1 + ceil(n_steps / save_every) frames
    room = limit // per_frame - 1
    fewer = (f"Keep fewer frames with a larger `save_every` (save_every={-(-n_steps // room)} "
             f"is the smallest that fits), or raise") if room >= 1 else "Raise"
    raise ValueError(
        f"This run would keep {n_frames:,} frames of {per_frame:,} bytes in memory, about "
        f"{_size(estimate)}, more than the limit of {_size(limit)}. {fewer} the limit with "
        f"`max_run_bytes=` (or ${MAX_RUN_BYTES_ENV}). Streaming to `out=` writes the frames to "
        f"disk as they are computed, but the returned trajectory holds them too."
    )


def _comparable(value):
    """``value`` (a setting of the metadata) without the memory addresses that the repr of a
    Python callable holds (``<function f at 0x7f...>``): they differ from process to process, so
    a user's callable is compared by its name only."""
    if isinstance(value, str):
        return re.sub(r" at 0x[0-9a-fA-F]+", "", value)
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def check_resume(source, run, meta, first, n_steps, save_every):
    """Check that ``source`` (a :class:`~nhphys.trajectory.ResumeSource`) is a run that
    ``run`` (just started, with ``meta`` and initial frame ``first``) continues.

    Returns
    -------
    int
        The step to continue from.

    Raises
    ------
    ValueError
        Naming what differs: a setting of ``RESUME_KEYS`` (a Python callable in them, such as a
        force element's, compared by its name), the fields or the initial state; or a
        checkpoint past ``n_steps`` or off the ``save_every`` schedule; or a run that cannot be
        restored (``Reference``).
    """
    where = source.where
    old = source.trajectory.meta
    for key in RESUME_KEYS:
        if (key in old or key in meta) and _comparable(old.get(key)) != _comparable(
                meta.get(key)):
            raise ValueError(f"Cannot resume {where}: its {key} is {old.get(key)!r}, this "
                             f"run's is {meta.get(key)!r}.")
    if not hasattr(run, "restore"):
        raise ValueError(f"Cannot resume {where}: this run ({type(run).__name__}) cannot be "
                         "restored from a checkpoint (Reference runs cannot be resumed).")
    traj = source.trajectory
    if set(traj.fields) != set(first):
        raise ValueError(f"Cannot resume {where}: its fields {sorted(traj.fields)} are not "
                         f"this run's {sorted(first)}.")
    for key, value in first.items():
        stored = traj[key][:1]
        if stored.shape != value.shape or stored.dtype != value.dtype \
                or not np.array_equal(stored, value):
            raise ValueError(f"Cannot resume {where}: its initial state differs from this "
                             f"run's (field {key!r}: {stored[0]!r} there, {value[0]!r} here).")
    steps = source.steps
    if steps > n_steps:
        raise ValueError(f"Cannot resume {where}: it is already at step {steps} "
                         f"(t = {steps * meta['dt']:.6g}), past this run's {n_steps} steps.")
    if steps % save_every or int(source.checkpoint["frames"]) != 1 + steps // save_every:
        raise ValueError(f"Cannot resume {where}: its last frame (step {steps}) is not one of "
                         f"every save_every = {save_every} steps (it ended a shorter run); "
                         "it cannot be extended.")
    return steps


def drive(run, n_steps, dt, save_every, meta, *, progress=None, writer=None, static=None,
          chunk_steps=None, work_per_step=1, desc="nhphys", resume=None, max_run_bytes=None):
    """Step a started run ``n_steps`` times in kernel-sized chunks: the loop of :func:`simulate`
    and :meth:`nhphys.Scene.simulate`.

    It keeps the initial frame and every ``save_every``-th step, streams each chunk to
    ``writer`` (a :class:`~nhphys.trajectory.TrajectoryWriter`) when given, with the run's
    checkpoint at the chunk's end, shows a progress bar (by default for
    ``n_steps * work_per_step`` units of work or more), returns what was computed when Ctrl-C
    arrives (the frames the run committed in the chunk in progress included), and attaches it
    to a failing step's :class:`NewtonError` as ``.trajectory``.

    Parameters
    ----------
    run : object
        From ``integrator.start(...)``: ``initial()`` and ``advance(n, save_every)``, and
        ``checkpoint()`` and ``restore(checkpoint)`` when it can be resumed.
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
    resume : ResumeSource or None
        A run to continue (:func:`nhphys.trajectory.resume_source`), checked against this one
        by :func:`check_resume`.
    max_run_bytes : int or None
        Refuse a run whose frames would take more (:func:`check_run_memory`); default
        :func:`run_memory_limit`.

    Returns
    -------
    Trajectory
    """
    meta = dict(meta, interrupted=False)
    first = {"t": np.zeros(1), **run.initial()}
    for key, value in first.items():
        # initial conditions finite one by one can still overflow together (a spin of 1e176:
        # its energy is inf - inf); no step can leave such a state
        value = np.asarray(value)
        if value.dtype.kind in "fc" and not np.isfinite(value).all():
            raise ValueError(f"Expected the initial state to be finite, got {key} = "
                             f"{value.ravel().tolist()} (initial conditions too large?).")
    limit = run_memory_limit() if max_run_bytes is None else max_run_bytes
    check_run_memory(first, n_steps, save_every, limit)
    frames = [first]
    count = 1  # frames so far
    done = 0
    can_checkpoint = hasattr(run, "checkpoint")

    def take_checkpoint():
        state = run.checkpoint() if can_checkpoint else None
        if state is not None:
            state["frames"] = np.array(count, dtype=np.int64)
        return state

    if resume is not None:
        done = check_resume(resume, run, meta, first, n_steps, save_every)
        run.restore({k: v for k, v in resume.checkpoint.items() if k != "frames"})
        frames = [{k: resume.trajectory[k] for k in first}]
        count = len(resume.trajectory)
        meta.update(resumed_from=os.path.basename(resume.where), resumed_at_step=done)
        checkpoint = dict(resume.checkpoint)
    else:
        checkpoint = take_checkpoint()
    if writer is not None:
        if resume is not None and resume.in_part:
            writer.reopen(meta, static)
        else:
            writer.begin(meta, static)
            writer.append(frames[0], checkpoint)
    chunk_steps = CHUNK_STEPS if chunk_steps is None else chunk_steps
    chunk = save_every * max(1, chunk_steps // save_every)  # chunks end on saved steps
    bar = _progress_bar(n_steps, progress, desc, work=n_steps * work_per_step)
    if bar is not None and done:
        bar.update(done)

    def assemble():
        extra = {"events": run.event_list()} if hasattr(run, "event_list") else {}
        return Trajectory.concatenate(frames, dict(meta, steps=done, **extra),
                                      static=with_checkpoint(static, checkpoint))

    def keep(saved, every):
        """Append the frames of ``saved`` (the next saved steps, ``every`` apart)."""
        nonlocal done, count
        k = len(next(iter(saved.values()))) if saved else 0
        if k == 0:
            return False
        t = dt * np.arange(done + every, done + every * k + 1, every)
        frames.append({"t": t, **saved})
        count += k
        done += every * k
        return True

    def take(todo, every):
        nonlocal checkpoint
        try:
            saved = run.advance(todo, every)
        except NewtonError as err:
            # a scene's failure carries every body's frames saved before it
            keep(getattr(err, "scene_frames", None), every)
            raise
        except KeyboardInterrupt as exc:
            # the frames of the saved steps the run had committed in this call: kept, and
            # streamed without a checkpoint (the state past them is not a whole step's)
            if keep(getattr(exc, "frames", None), every) and writer is not None:
                writer.append(frames[-1])
            raise
        keep(saved, every)
        checkpoint = take_checkpoint()
        if writer is not None:
            writer.append(frames[-1], checkpoint)
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
        if resume is not None and resume.superseded and not meta["interrupted"] \
                and os.path.abspath(resume.where) != os.path.abspath(writer.written):
            with contextlib.suppress(OSError):  # its frames are all in the complete run
                os.remove(resume.where)
    return traj
