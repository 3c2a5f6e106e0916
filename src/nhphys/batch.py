"""Many independent runs in one call: the batch layer under :mod:`nhphys.ensemble`.

:func:`run_batch` takes N systems (or one shared by every run) with N sets of initial
conditions and steps them all, each exactly as :func:`nhphys.simulate` would (the same run,
started the same way, driven in the same chunks), so that run ``i`` of a batch equals
``nhphys.simulate(systems[i], ..., **initial_conditions[i])`` bit for bit, field for field.

How the runs are stepped
------------------------
* **Rolling bodies** (:class:`~nhphys.systems.RollingBody`) that share the same body shape
  (and centre of mass), ground, ground motion, force elements, gravity and ``up`` form one
  *group*, stepped by one ``rolling_ensemble`` call per chunk (``nhphys_ext.rolling``, or its
  twin on the Python backend): the runs of a group may differ in their initial conditions and
  in mass and inertia. The kernel releases the GIL and spreads the runs over ``threads``
  OpenMP threads (``prange``, dynamic schedule); each run's failure is its own. Where the
  kernel was built without OpenMP it steps them one after another (one warning says so).
* **Every other run**: other systems (Suslov, KnifeEdge, ...), rolling bodies whose ground or
  body surface is a Python callable (a ``ParametricSurface``: the compiled kernel calls back
  into Python for it, which cannot be shared by threads) or whose force elements or ground
  motion are Python callables, and runs on the Python backend that call Python code: each run's
  own :class:`~nhphys.integrators.run.Run` (``integrator.start``, then ``advance`` chunk by
  chunk as :func:`nhphys.simulate.drive` does) in a ``concurrent.futures.ThreadPoolExecutor``
  of ``threads`` workers. Every compiled time loop releases the GIL, so compiled runs overlap;
  twin runs hold it and effectively take turns.

Chunks
------
Runs are driven in the chunks of :func:`nhphys.simulate.drive` (``CHUNK_STEPS`` steps, a
multiple of ``save_every``; the fields of each chunk are computed from its saved states as the
run's ``advance`` does). A group's chunk is itself stepped in kernel calls of at most about
``BODY_STEPS_PER_CALL`` body-steps (whole multiples of ``save_every``), so that progress is
reported and Ctrl-C is answered within a call's time however many runs there are. On Ctrl-C
the frames computed so far are kept (``result`` of the re-raised ``KeyboardInterrupt``, the
unfinished runs with status ``"interrupted"``).
"""

import concurrent.futures
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from nhphys import _backend, conditions
from nhphys._threads import check_threads
from nhphys.errors import ContactEvent, NewtonError, RoundingError
from nhphys.simulate import CHUNK_STEPS, check_run_arguments
from nhphys.twins import rolling as spec
from nhphys.twins.newton import INFO_COMMITTED, INFO_SIZE, INFO_STATUS

BODY_STEPS_PER_CALL = 200_000  # a group's kernel call: about 0.2 to 1 s of a rattleback's work
_STATE = ("A", "a", "Pi", "p", "s", "n", "F", "xi", "z", "clock", "history")  # stacked per group
_warned_serial = False


@dataclass
class BatchResult:
    """The results of :func:`run_batch`.

    Attributes
    ----------
    t : ndarray, shape (n_saved,)
        The saved times (those of ``nhphys.simulate``'s trajectory for the same arguments).
    fields : dict of str -> ndarray
        Each field of the systems' ``observables`` (``energy``, ``omega``, ...) with a leading
        run axis, ``(N, n_saved, ...)``; a failed or interrupted run's frames after its last
        saved step are NaN.
    status : ndarray, shape (N,), str
        ``"ok"``; or what stopped the run: a contact event's name (``"flat"``,
        ``"rim-to-side"``, ``"inner contact"``), ``"newton"`` (a failed step,
        :class:`~nhphys.errors.NewtonError`), ``"rounding"``
        (:class:`~nhphys.errors.RoundingError`), ``"error"`` (a user's callback raised) or
        ``"interrupted"`` (Ctrl-C).
    fail_time : ndarray, shape (N,)
        The time at the start of the failing step (NaN for runs that are ok).
    message : ndarray, shape (N,), str
        The failure's message (``""`` when ok).
    steps_done : ndarray, shape (N,), int
        Steps committed by each run.
    backend : str
        What stepped (``"cython"``, ``"python"``, or ``"mixed: ..."``).
    """

    t: np.ndarray
    fields: dict
    status: np.ndarray
    fail_time: np.ndarray
    message: np.ndarray
    steps_done: np.ndarray
    backend: str

    def __len__(self):
        return len(self.status)

    @property
    def ok(self):
        """(N,) bool: the runs that reached ``t_final``."""
        return self.status == "ok"


def _as_runs(systems, initial_conditions):
    """``(systems, conditions)`` as two lists of N, checked."""
    if isinstance(initial_conditions, dict) or not hasattr(initial_conditions, "__len__"):
        raise TypeError("Expected `initial_conditions` to be a list of N dicts (one per run), "
                        f"got {type(initial_conditions).__name__}.")
    initial_conditions = list(initial_conditions)
    n = len(initial_conditions)
    if n == 0:
        raise ValueError("Expected at least one run: `initial_conditions` is empty.")
    for i, given in enumerate(initial_conditions):
        if not isinstance(given, dict):
            raise TypeError(f"Expected `initial_conditions[{i}]` to be a dict of initial "
                            f"conditions, got {type(given).__name__}.")
    if isinstance(systems, (list, tuple)):
        if len(systems) != n:
            raise ValueError(f"Expected as many systems as runs: {len(systems)} systems for "
                             f"{n} sets of initial conditions.")
        systems = list(systems)
    else:
        systems = [systems] * n
    return systems, initial_conditions


def _calls_python(run):
    """True when stepping ``run`` calls Python code (a callable surface, force or motion)."""
    from nhphys.surfaces.parametric import ParametricSurface

    system = run.system
    return (getattr(run, "backend_note", None) is not None
            or isinstance(system.ground, ParametricSurface)
            or isinstance(getattr(system.body, "shape", None), ParametricSurface)
            or type(run.ground).__name__ == "PythonChartSurface")


def _group_key(run):
    """Runs with equal keys share one ``rolling_ensemble`` call (the same shape, ground,
    motion, forces, gravity, up, step and integrator options; mass and inertia are per run)."""
    system = run.system
    return (run.backend, id(system.body.shape), tuple(np.asarray(system.body.com, float)),
            id(system.ground), id(system.motion), tuple(id(f) for f in system.forces),
            system.gravity, tuple(run.up), run.dt, tuple(run.substeps), run.map_code,
            run.newton_tol, run.max_newton, run.options)


def _kind(error):
    """The ``status`` of a failure."""
    if isinstance(error, ContactEvent):
        return error.event
    if isinstance(error, RoundingError):
        return "rounding"
    if isinstance(error, NewtonError):
        return "newton"
    return "error"


def _segments(n_steps, save_every):
    """The ``(steps, every)`` of each ``advance`` call of :func:`nhphys.simulate.drive`."""
    chunk = save_every * max(1, CHUNK_STEPS // save_every)
    done = 0
    while done < n_steps:
        todo = min(chunk, n_steps - done)
        rest = todo % save_every  # only in the last chunk: the final state is kept too
        if todo - rest:
            yield todo - rest, save_every
        if rest:
            yield rest, rest
        done += todo


class _Record:
    """One run's frames and outcome as they come."""

    def __init__(self, run):
        self.run = run
        self.frames = [{"t": np.zeros(1), **run.initial()}]
        self.status, self.time, self.message = "ok", np.nan, ""
        self.finished = False
        self.steps = None  # steps committed, when not the run's steps_done

    def keep(self, saved, t):
        if saved and len(next(iter(saved.values()))):
            self.frames.append({"t": t, **saved})

    def fail(self, error, kind=None):
        partial = getattr(error, "_frames", None)
        if partial:
            self.frames.append(partial)
        self.status = kind or _kind(error)
        self.time = float(getattr(error, "time", np.nan))
        if kind == "error":  # a user's exception: where the run recorded that it stopped
            stopped = self.run.failure
            self.steps = stopped.step if stopped is not None else self.run.steps_done
            self.time = self.steps * self.run.dt
        self.message = str(error) if kind != "error" else f"{type(error).__name__}: {error}"
        self.finished = True


class _Group:
    """Rolling runs stepped together: their state arrays stacked (each run's attributes are
    rows of them, so the run, its checkpoint and its failure messages see the same numbers)."""

    def __init__(self, records):
        self.records = records
        runs = [r.run for r in records]
        self.runs = runs
        self.first = runs[0]
        self.kernel = self.first.kernel
        self.state = {}
        for name in _STATE:
            stacked = np.ascontiguousarray(np.stack([getattr(run, name) for run in runs]))
            self.state[name] = stacked
            for i, run in enumerate(runs):
                setattr(run, name, stacked[i])
        for name in ("chart", "filled"):
            stacked = np.ascontiguousarray(np.concatenate([getattr(run, name) for run in runs]))
            self.state[name] = stacked
            for i, run in enumerate(runs):
                setattr(run, name, stacked[i:i + 1])
        self.mass = np.array([run.system.mass for run in runs], dtype=float)
        self.inertia = np.ascontiguousarray(np.stack([run.inertia for run in runs]))
        self.inertia_inv = np.ascontiguousarray(np.stack([run.inertia_inv for run in runs]))
        self.active = np.ones(len(runs), dtype=np.uint8)

    def step(self, n_steps, every, out, info, threads):
        f, s = self.first, self.state
        return self.kernel.rolling_ensemble(
            f.shape, f.ground, f.motion, f.forces, self.mass, self.inertia, self.inertia_inv,
            f.system.gravity, f.up, f.dt, f.substeps, n_steps, every, f.map_code, f.newton_tol,
            f.max_newton, s["A"], s["a"], s["Pi"], s["p"], s["s"], s["n"], s["F"], s["xi"],
            s["chart"], s["z"], s["clock"], out, info, f.options, s["history"], s["filled"],
            threads, self.active)


def _warn_serial():
    global _warned_serial
    if not _warned_serial:
        _warned_serial = True
        warnings.warn("nhphys_ext.rolling was built without OpenMP: the runs of an ensemble "
                      "are stepped one after another on one thread.", RuntimeWarning,
                      stacklevel=4)


def _run_group(group, segments, dt, threads, tick):
    """Step a group through every segment (see the module docstring)."""
    if group.first.backend == "cython" and threads > 1 and not group.kernel.OPENMP:
        _warn_serial()
    done = 0
    n_runs = len(group.runs)
    for todo, every in segments:
        n_saved = todo // every
        saved = np.full((n_runs, n_saved, spec.FRAME_SIZE), np.nan)
        live = group.active.astype(bool)
        per_call = every * max(1, BODY_STEPS_PER_CALL // max(1, int(live.sum())) // every)
        offset = 0
        try:
            while offset < todo and group.active.any():
                n = min(per_call, todo - offset)
                out = np.empty((n_runs, n // every, spec.FRAME_SIZE))
                info = np.zeros((n_runs, INFO_SIZE), dtype=np.intp)
                group.step(n, every, out, info, threads)
                saved[:, offset // every:(offset + n) // every] = out
                for i in np.flatnonzero(group.active & (info[:, INFO_STATUS] != 0)):
                    group.active[i] = 0
                    record = group.records[i]
                    code = offset + int(info[i, INFO_COMMITTED]) + 1  # in this segment
                    error = record.run._fail(code, int(info[i, INFO_STATUS]), saved[i], every)
                    record.fail(error)
                offset += n
                tick()
        except KeyboardInterrupt:
            _keep_segment(group, live, saved, offset // every, done, every, dt)
            raise
        _keep_segment(group, live, saved, n_saved, done, every, dt, complete=todo)
        done += todo
    for record in group.records:
        record.finished = True


def _keep_segment(group, live, saved, count, done, every, dt, complete=None):
    """The fields of the first ``count`` saved rows of a segment, for its runs still going."""
    t = dt * np.arange(done + every, done + every * count + 1, every)
    for i in np.flatnonzero(live & group.active.astype(bool)):
        record = group.records[i]
        record.keep(record.run._frames(saved[i], count), t)
        if complete is not None:
            record.run.steps_done += complete
        else:
            record.run.steps_done += count * every


def _run_alone(record, segments, dt, stop):
    """Drive one run by itself, as :func:`nhphys.simulate.drive` does (the thread path)."""
    run = record.run
    done = 0
    try:
        for todo, every in segments:
            if stop.is_set():
                return
            saved = run.advance(todo, every)
            record.keep(saved, dt * np.arange(done + every, done + todo + 1, every))
            done += todo
    except NewtonError as error:
        record.fail(error)
        return
    except Exception as error:  # noqa: BLE001 -- a user's callback raised: only this run stops
        record.fail(error, "error")
        return
    record.finished = True


def run_batch(systems, initial_conditions, t_final, dt, integrator=None, save_every=1,
              backend="auto", threads=None, progress=None):
    """Step N independent runs; each equals ``nhphys.simulate`` of the same arguments.

    Parameters
    ----------
    systems : system or sequence of N systems
        One system shared by every run, or one per run (e.g. rattlebacks of different mass
        and inertia on the same ground object: they are stepped together, see the module
        docstring).
    initial_conditions : sequence of N dicts
        Each run's initial conditions, the names :func:`nhphys.simulate` accepts
        (:mod:`nhphys.conditions`: ``orientation``, ``omega``, ``position``, ...).
    t_final, dt : float
        As :func:`nhphys.simulate` (``t_final`` a whole number of steps).
    integrator : str or integrator, optional
        As :func:`nhphys.simulate` (default ``Retraction("exp")``); shared by every run.
    save_every : int
        Keep every ``save_every``-th step (the final state is always kept).
    backend : {"auto", "cython", "python"}
    threads : int, optional
        Threads to spread the runs over; default every core available to this process.
    progress : callable, optional
        ``progress(done_runs, failed_runs)``, called from this thread as runs finish and after
        each kernel call.

    Returns
    -------
    BatchResult

    Raises
    ------
    ValueError, TypeError
        Before any step: no runs, lengths that differ, unknown or invalid initial conditions
        (the message names the run), bad ``t_final``, ``dt``, ``save_every``, ``threads``.
    KeyboardInterrupt
        Ctrl-C: re-raised once the calls in progress have returned, with the frames computed
        so far as its ``result`` (a :class:`BatchResult`; unfinished runs ``"interrupted"``).
    """
    from nhphys.integrators import Retraction
    from nhphys.integrators.rolling import RollingRun

    systems, given = _as_runs(systems, initial_conditions)
    threads = check_threads(threads)
    if progress is not None and not callable(progress):
        raise TypeError(f"Expected `progress` to be callable or None, got {progress!r}.")
    args = check_run_arguments(dt, t_final, save_every, integrator, backend)
    integrator = Retraction() if args.integrator is None else args.integrator
    records = []
    for i, (system, values) in enumerate(zip(systems, given)):
        try:
            resolved = conditions.resolve(system, values)
            run = integrator.start(system, args.dt, args.backend,
                                   **conditions.start_arguments(system, resolved))
            record = _Record(run)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"Run {i}: {exc}") from exc
        for key, value in record.frames[0].items():
            value = np.asarray(value)
            if value.dtype.kind in "fc" and not np.isfinite(value).all():
                raise ValueError(f"Run {i}: expected the initial state to be finite, got "
                                 f"{key} = {value.ravel().tolist()}.")
        records.append(record)
    segments = list(_segments(args.n_steps, args.save_every))

    groups, alone = {}, []
    for record in records:
        run = record.run
        if isinstance(run, RollingRun) and not _calls_python(run):
            groups.setdefault(_group_key(run), []).append(record)
        else:
            alone.append(record)

    def counts():
        finished = sum(r.finished for r in records)
        failed = sum(r.finished and r.status != "ok" for r in records)
        return finished, failed

    def tick():
        if progress is not None:
            progress(*counts())

    try:
        for members in groups.values():
            _run_group(_Group(members), segments, args.dt, threads, tick)
            tick()
        if alone:
            stop = threading.Event()
            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                futures = [pool.submit(_run_alone, r, segments, args.dt, stop) for r in alone]
                try:
                    for _ in concurrent.futures.as_completed(futures):
                        tick()
                except KeyboardInterrupt:
                    stop.set()  # the workers end after their chunk in progress
                    for future in futures:
                        future.cancel()
                    raise
    except KeyboardInterrupt as exc:
        for record in records:
            if not record.finished:
                record.status, record.message = "interrupted", "interrupted by KeyboardInterrupt"
                record.time = record.run.steps_done * args.dt
        exc.result = _assemble(records, args)
        raise
    return _assemble(records, args)


def _assemble(records, args):
    """The :class:`BatchResult` of the records."""
    times, done = [np.zeros(1)], 0
    for todo, every in _segments(args.n_steps, args.save_every):  # as drive's `keep` does
        times.append(args.dt * np.arange(done + every, done + todo + 1, every))
        done += todo
    t = np.concatenate(times)
    n_frames = len(t)
    first = records[0].frames[0]
    fields = {}
    for key, value in first.items():
        if key == "t":
            continue
        value = np.asarray(value)
        dtype = value.dtype if value.dtype.kind in "fc" else float
        fields[key] = np.full((len(records), n_frames) + value.shape[1:], np.nan, dtype=dtype)
    for i, record in enumerate(records):
        for key, array in fields.items():
            parts = [np.asarray(frame[key]) for frame in record.frames]
            joined = np.concatenate(parts)
            if joined.shape[1:] != array.shape[2:]:
                raise ValueError(f"Run {i}: its field {key!r} has shape {joined.shape[1:]} "
                                 f"per frame, run 0's {array.shape[2:]}: batch runs of one "
                                 "kind of system.")
            array[i, :len(joined)] = joined
    keys = set(fields)
    for i, record in enumerate(records):
        if set(record.frames[0]) - {"t"} != keys:
            raise ValueError(f"Run {i} has fields {sorted(set(record.frames[0]) - {'t'})}, "
                             f"run 0 {sorted(keys)}: batch runs of one kind of system.")
    return BatchResult(
        t=t, fields=fields,
        status=np.array([r.status for r in records], dtype=object).astype(str),
        fail_time=np.array([r.time if r.status != "ok" else np.nan for r in records]),
        message=np.array([r.message for r in records], dtype=object).astype(str),
        steps_done=np.array([r.run.steps_done if r.steps is None else r.steps
                             for r in records], dtype=np.int64),
        backend=_backend.described([r.run for r in records]),
    )
