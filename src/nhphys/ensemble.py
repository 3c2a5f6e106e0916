"""``ensemble``: many independent runs in one call, returned as an :class:`xarray.Dataset`.

>>> import numpy as np, nhphys
>>> top = nhphys.systems.Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1])
>>> omega = np.column_stack([np.linspace(0.5, 1.5, 8), np.ones(8), np.zeros(8)])
>>> ds = nhphys.ensemble(top, 1.0, 0.01, omega=omega)
>>> ds.omega.dims, ds.omega.shape
(('run', 'time', 'i'), (8, 101, 3))

Initial conditions carry a leading batch axis (one row per run); ``parameters`` (name -> array
with one row per run) are passed to a factory that builds each run's system. Each run's failure
(a Newton solve that does not converge, a contact event) is recorded in the dataset
(``status``, ``fail_time``, ``message``, ``steps_done``) while the other runs complete.

The runs are stepped by a *batch engine* with the interface of ``nhphys.batch.run_batch``.
:func:`_serial_batch` is this module's reference engine: a loop over :func:`nhphys.simulate`,
which the batched kernel must match bit for bit.

xarray is imported when an ensemble is built, never by ``import nhphys``.
"""

from __future__ import annotations

import inspect
import numbers
import re
import sys
import types
import warnings

import numpy as np

from nhphys import conditions
from nhphys.errors import ContactEvent, NewtonError, RoundingError
from nhphys.simulate import AUTO_PROGRESS_STEPS, check_run_arguments

# the names of the per-run results (besides the fields); the Dataset's variables along `run`
RESULT_NAMES = ("status", "fail_time", "message", "steps_done")
INITIAL_PREFIX = "initial_"  # initial condition `omega` -> coordinate `initial_omega`
RESERVED = ("run", "time") + RESULT_NAMES  # names a parameter cannot take


# -- the batch engine ------------------------------------------------------------------------------

class BatchResult(types.SimpleNamespace):
    """What a batch engine returns (see :func:`_serial_batch`)."""


def failure_kind(error):
    """The ``status`` of a run that raised ``error``: the lower-case name of its entry of
    :data:`nhphys.twins.newton.STATUS` (``"not_converged"``, ``"flat"``, ...), ``"rounding"``
    for a :class:`~nhphys.errors.RoundingError`, else ``"newton"``."""
    from nhphys.twins.newton import STATUS

    if isinstance(error, ContactEvent):
        return error.event.replace("-", "_").replace(" ", "_")
    if isinstance(error, RoundingError):
        return "rounding"
    text = str(error)
    for name, (code, _, message) in STATUS.items():
        if code and message and message in text:
            return name.lower()
    return "newton"


def saved_times(n_steps, dt, save_every):
    """The times of the frames :func:`nhphys.simulate` keeps: every ``save_every``-th step and
    the final one, ``dt`` times the step (so bit for bit those of a run).

    Returns
    -------
    ndarray, shape (n_saved,)
    """
    steps = np.arange(0, n_steps + 1, save_every)
    if steps[-1] != n_steps:
        steps = np.append(steps, n_steps)
    return dt * steps


def _padded(value, n_saved):
    """``value`` (k, ...) with rows k..n_saved-1 NaN (a failed run's missing frames)."""
    value = np.asarray(value)
    dtype = value.dtype if value.dtype.kind in "fc" else np.float64
    out = np.full((n_saved,) + value.shape[1:], np.nan, dtype=dtype)
    out[:len(value)] = value
    return out


def _serial_batch(systems, t_final, dt, integrator="exp", *, initial_conditions, save_every=1,
                  backend="auto", threads=None, progress=None):
    """Step N runs one after another with :func:`nhphys.simulate`: the reference engine.

    It has the interface of ``nhphys.batch.run_batch`` and is what a batched kernel must equal,
    bit for bit.

    Parameters
    ----------
    systems : system or list of N systems
        One system shared by every run, or one per run.
    t_final, dt : float
    integrator : str or integrator
    initial_conditions : list of N dicts
        Each run's initial conditions, in the names :func:`nhphys.simulate` accepts.
    save_every : int
    backend : {"auto", "cython", "python"}
    threads : int or None
        Ignored: this engine runs on the calling thread.
    progress : callable or None
        ``progress(done_runs, failed_runs)``, called after each run.

    Returns
    -------
    BatchResult
        ``t`` (n_saved,); ``fields`` dict name -> ndarray (N, n_saved, ...), the runs'
        trajectory fields (a failed run keeps its frames up to the failure, NaN after);
        ``status`` (N,) str, ``"ok"`` or the failure's kind (:func:`failure_kind`);
        ``fail_time`` (N,) float, the time at the start of the failed step (NaN when ok);
        ``message`` (N,) str (``""`` when ok); ``steps_done`` (N,) int, the steps committed;
        ``backend`` str, what stepped the runs.

    Raises
    ------
    KeyboardInterrupt
        Ctrl-C: the batch stops (its runs are not returned).
    Exception
        Anything else a run raises (a user's callback, bad input): with the run's index.
    """
    from nhphys.simulate import simulate

    n = len(initial_conditions)
    per_run = isinstance(systems, (list, tuple))
    if per_run and len(systems) != n:
        raise ValueError(f"Expected {n} systems (one per run), got {len(systems)}.")
    args = check_run_arguments(dt, t_final, save_every, integrator, backend)
    t = saved_times(args.n_steps, args.dt, args.save_every)
    n_saved = len(t)
    fields = {}
    status = np.empty(n, dtype=object)
    fail_time = np.full(n, np.nan)
    message = np.empty(n, dtype=object)
    steps_done = np.zeros(n, dtype=np.int64)
    backends = []
    failed = 0
    for i in range(n):
        system = systems[i] if per_run else systems
        try:
            with warnings.catch_warnings():
                # simulate turns Ctrl-C into a warning and a short run; here it stops the batch
                warnings.filterwarnings("ignore", "Interrupted at t", RuntimeWarning)
                traj = simulate(system, t_final, dt, integrator=integrator, backend=backend,
                                save_every=save_every, progress=False, **initial_conditions[i])
            if traj.meta.get("interrupted"):
                raise KeyboardInterrupt
            status[i], message[i], steps_done[i] = "ok", "", args.n_steps
        except NewtonError as err:
            traj = err.trajectory
            status[i], message[i] = failure_kind(err), str(err)
            fail_time[i], steps_done[i] = err.time, err.step
            failed += 1
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as exc:
            if _plain(exc):  # the same kind of error, naming the run
                raise type(exc)(f"Run {i} of the batch: {exc}") from exc
            raise
        if traj is None:  # no frame could be assembled (never for the built-in runs)
            raise RuntimeError(f"Run {i} failed without frames: {message[i]}")
        if len(traj) > n_saved or not np.array_equal(traj.t, t[:len(traj)]):
            raise RuntimeError(f"Run {i}'s times do not follow the saved steps.")
        if not fields:
            check_ensemble_memory(traj, n, n_saved)
        for name in traj.fields:
            if name == "t":
                continue
            value = traj[name]
            if name not in fields:
                dtype = value.dtype if value.dtype.kind in "fc" else np.float64
                fields[name] = np.full((n,) + (n_saved,) + value.shape[1:], np.nan, dtype=dtype)
            fields[name][i] = _padded(value, n_saved)
        backends.append(traj.meta.get("backend", args.backend))
        if progress is not None:
            progress(i + 1, failed)
    return BatchResult(t=t, fields=fields, status=status.astype(str),
                       fail_time=fail_time, message=message.astype(str), steps_done=steps_done,
                       backend="+".join(sorted(set(backends))) or args.backend)


def check_ensemble_memory(traj, n_runs, n_saved, limit=None):
    """Refuse an ensemble whose frames would take more than ``limit`` bytes in memory
    (default :func:`nhphys.simulate.run_memory_limit`: 2 GiB, or ``$NHPHYS_MAX_RUN_BYTES``),
    from the size of a frame of ``traj`` (one run).

    Raises
    ------
    ValueError
        Giving the estimate and what lowers it.
    """
    from nhphys.simulate import _size, run_memory_limit

    limit = run_memory_limit() if limit is None else limit
    per_frame = sum(np.asarray(traj[k][:1]).nbytes for k in traj.fields if k != "t")
    estimate = n_runs * n_saved * per_frame
    if estimate > limit:
        raise ValueError(
            f"This ensemble would keep {n_runs:,} runs of {n_saved:,} frames of {per_frame:,} "
            f"bytes in memory, about {_size(estimate)}, more than the limit of {_size(limit)}. "
            "Stream it to disk in batches with nhphys.sweep(..., out=...), keep fewer frames "
            "(a larger `save_every`), or raise the limit ($NHPHYS_MAX_RUN_BYTES).")
    return estimate


def _plain(exc):
    """True when ``type(exc)(message)`` rebuilds ``exc`` with a new message (ValueError,
    TypeError, ...): then the message can name the run without changing the type."""
    return type(exc) in (ValueError, TypeError, RuntimeError, KeyError, IndexError,
                         ArithmeticError, ZeroDivisionError, OverflowError, AssertionError)


def _batched(systems, t_final, dt, integrator="exp", *, initial_conditions, save_every=1,
             backend="auto", threads=None, progress=None):
    """:func:`nhphys.batch.run_batch` (rolling bodies in one batched kernel call, the other
    runs on threads) with :func:`_serial_batch`'s interface and status names: a failed step's
    status is the lower-case name of its Newton status, a contact event's its name with
    underscores."""
    from nhphys.batch import run_batch
    from nhphys.twins.newton import STATUS

    n_runs = len(initial_conditions)
    first = systems[0] if isinstance(systems, (list, tuple)) else systems
    if n_runs:  # the same memory guard as the serial engine, before any step
        import nhphys

        try:
            probe = nhphys.simulate(first, dt, dt, integrator, backend=backend,
                                    **initial_conditions[0])
        except Exception:  # noqa: BLE001 - that run's failure is reported by run_batch
            probe = None
        if probe is not None:
            n_saved = len(saved_times(round(t_final / dt), dt, save_every))
            check_ensemble_memory(probe, n_runs, n_saved)
    result = run_batch(systems, initial_conditions, t_final, dt, integrator,
                       save_every=save_every, backend=backend, threads=threads,
                       progress=progress)
    status = np.array(result.status, dtype=object)
    for k, (kind, message) in enumerate(zip(result.status, result.message)):
        if kind == "newton":
            status[k] = next((name.lower() for name, (code, _, text) in STATUS.items()
                              if code and text and text in message), "newton")
        else:
            status[k] = kind.replace("-", "_").replace(" ", "_")
    result.status = status.astype(str)
    return result


def _engine():
    """The batch engine :func:`ensemble` uses: :func:`_batched` (``nhphys.batch.run_batch``);
    :func:`_serial_batch`, a loop over :func:`nhphys.simulate`, is the reference it equals."""
    return _batched


# -- the plan of an ensemble: N, each run's system and initial conditions ----------------------

def _leading_lengths(arrays, what):
    lengths = {}
    for name, value in arrays.items():
        arr = np.asarray(value)
        if arr.ndim == 0:
            raise ValueError(f"Expected {what} `{name}` to have a leading batch axis (one row "
                             f"per run), got a single value {value!r}.")
        lengths[name] = len(arr)
    return lengths


def _describe(params):
    """``mass=1.5, spin=2`` for messages."""
    return ", ".join(f"{k}={_short(v)}" for k, v in params.items()) or "no parameters"


def _short(value):
    arr = np.asarray(value)
    if arr.ndim == 0:
        return repr(arr.item())
    return np.array2string(arr, precision=6, separator=", ", threshold=12)


def plan_runs(system_or_factory, parameters, initial_conditions, first_run=0):
    """Check the batch axes and build each run's system and initial conditions.

    Parameters
    ----------
    system_or_factory : system or callable
        A system shared by every run, or a factory called once per run as
        ``factory(**params_of_run_i)``, which returns a system, or a pair ``(system, dict)``
        of the system and (some of) that run's initial conditions.
    parameters : dict of str -> array (N, ...) or None
    initial_conditions : dict of str -> array (N, ...)
    first_run : int
        The number of the first run in messages (a sweep's batch starts past 0).

    Returns
    -------
    n : int
    systems : system or list of N systems
    runs : list of N dicts
        Each run's initial conditions.
    parameters, initial_conditions : dict of str -> ndarray (N, ...)

    Raises
    ------
    ValueError
        No runs, lengths that disagree, a name given twice, a factory that raised (naming the
        run and its parameters).
    TypeError
        Parameters without a factory, a factory that does not take them, unknown initial
        condition names (naming the run and the accepted names).
    """
    parameters = dict(parameters or {})
    factory = callable(system_or_factory)
    if parameters and not factory:
        raise TypeError(f"`parameters` are passed to a factory that builds each run's system, "
                        f"but {type(system_or_factory).__name__} is not callable. Pass a "
                        "function (or class) taking the parameters as keywords.")
    for name in parameters:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Expected parameter names to be identifiers, got {name!r}.")
        if name in RESERVED or name.startswith(INITIAL_PREFIX):
            raise ValueError(f"The parameter name {name!r} is taken by the dataset ("
                             f"{', '.join(RESERVED)} and {INITIAL_PREFIX}...): rename it.")
    lengths = {**{f"parameter {k}": v for k, v in _leading_lengths(parameters, "parameter")
                  .items()},
               **_leading_lengths(initial_conditions, "initial condition")}
    if not lengths:
        raise ValueError("An ensemble needs its runs: give initial conditions with a leading "
                         "batch axis (e.g. omega of shape (N, 3)) or `parameters` (name -> "
                         "array of N values).")
    sizes = set(lengths.values())
    if len(sizes) > 1:
        listed = ", ".join(f"{k}: {v}" for k, v in lengths.items())
        raise ValueError(f"Expected every parameter and initial condition to have the same "
                         f"number of runs along its first axis, got {listed}.")
    n = sizes.pop()
    if n == 0:
        raise ValueError("An ensemble of 0 runs: the batch axes are empty.")
    parameters = {k: np.asarray(v) for k, v in parameters.items()}
    initial_conditions = {k: np.asarray(v) for k, v in initial_conditions.items()}
    if factory and parameters:
        _check_signature(system_or_factory, parameters)
    runs = [{k: v[i] for k, v in initial_conditions.items()} for i in range(n)]
    if not factory:
        systems = system_or_factory
        for i in range(n):
            _check_conditions(systems, runs[i], first_run + i, {})
        return n, systems, runs, parameters, initial_conditions
    systems = []
    for i in range(n):
        params = {k: _scalar(v[i]) for k, v in parameters.items()}
        try:
            built = system_or_factory(**params)
        except Exception as exc:
            raise ValueError(f"The factory {_name(system_or_factory)} raised for run "
                             f"{first_run + i} "
                             f"({_describe(params)}): {type(exc).__name__}: {exc}") from exc
        if isinstance(built, tuple):
            if len(built) != 2 or not isinstance(built[1], dict):
                raise TypeError(f"Expected the factory {_name(system_or_factory)} to return a "
                                f"system or a pair (system, dict of initial conditions), got a "
                                f"tuple of {len(built)} for run {first_run + i}.")
            built, extra = built
            twice = sorted(set(extra) & set(runs[i]))
            if twice:
                raise ValueError(f"Run {first_run + i} ({_describe(params)}): initial "
                                 f"conditions {twice} "
                                 "are given both by the factory and with a batch axis.")
            runs[i].update(extra)
        systems.append(built)
        _check_conditions(built, runs[i], first_run + i, params)
    return n, systems, runs, parameters, initial_conditions


def _scalar(value):
    """A numpy scalar (or 0-d array) as its Python number or string: what a factory expects
    for a scalar parameter."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    return value


def _name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _check_signature(factory, parameters):
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin without a signature: let the call say
        return
    try:
        signature.bind(**{k: None for k in parameters})
    except TypeError as exc:
        raise TypeError(f"The factory {_name(factory)} does not take the parameters "
                        f"{sorted(parameters)}: {exc}.") from None


def _check_conditions(system, values, i, params):
    """The names and kinds of run ``i``'s initial conditions, before any step."""
    try:
        conditions.resolve(system, values)
    except (TypeError, ValueError) as exc:
        where = f"Run {i}" + (f" ({_describe(params)})" if params else "")
        raise type(exc)(f"{where}: {exc}") from None


# -- the dataset -----------------------------------------------------------------------------

def component_dims(shape):
    """Dimension names of a value's component axes: ``i``, ``j`` (then ``k``, ``l``) for
    axes of length 3, ``i2``, ``i4``, ... (the letter and the length) for other lengths, so
    that every variable of a dataset agrees on a dimension's size.

    >>> component_dims((3, 3)), component_dims((4,)), component_dims(())
    (('i', 'j'), ('i4',), ())
    """
    letters = "ijkl"
    return tuple((letters[a] if a < 4 else f"axis{a}") + ("" if size == 3 else str(size))
                 for a, size in enumerate(shape))


def coordinates(n, parameters, initial_conditions, offset=0):
    """The coordinates along ``run``: its index, the parameters, and the initial conditions
    given with a batch axis (``initial_NAME``).

    Returns
    -------
    dict of str -> (dims, ndarray)
    """
    coords = {"run": ("run", np.arange(offset, offset + n, dtype=np.int64))}
    for name, value in parameters.items():
        coords[name] = (("run",) + component_dims(value.shape[1:]), value)
    for name, value in initial_conditions.items():
        coords[INITIAL_PREFIX + name] = (("run",) + component_dims(value.shape[1:]), value)
    return coords


def to_dataset(result, coords, attrs):
    """An :class:`xarray.Dataset` of a batch engine's ``result`` (:func:`_serial_batch`).

    Dims ``run``, ``time`` and the component dims of :func:`component_dims`; every field
    ``(run, time, ...)``, ``status``, ``fail_time``, ``message``, ``steps_done`` ``(run,)``.
    """
    import xarray as xr

    data = {}
    for name, value in result.fields.items():
        data[name] = (("run", "time") + component_dims(value.shape[2:]), value)
    clash = sorted(set(data) & (set(coords) | set(RESULT_NAMES)))
    if clash:
        raise ValueError(f"The names {clash} are both a field of the runs and a parameter or a "
                         "result: rename the parameter.")
    data["status"] = ("run", np.asarray(result.status, dtype=str))
    data["fail_time"] = ("run", np.asarray(result.fail_time, dtype=np.float64))
    data["message"] = ("run", np.asarray(result.message, dtype=str))
    data["steps_done"] = ("run", np.asarray(result.steps_done, dtype=np.int64))
    coords = dict(coords, time=("time", np.asarray(result.t)))
    return xr.Dataset(data, coords=coords, attrs=attrs)


def describe_system(system_or_factory):
    """What built the runs, for the dataset's attributes: a system's repr or a factory's
    qualified name."""
    if callable(system_or_factory):
        qualname = getattr(system_or_factory, "__qualname__", None)
        module = getattr(system_or_factory, "__module__", None)
        if qualname is None:  # a functools.partial, an object with __call__
            return "factory " + re.sub(r" at 0x[0-9a-fA-F]+", "", repr(system_or_factory))
        return f"factory {module + '.' if module else ''}{qualname}"
    return repr(system_or_factory)


def check_threads(threads):
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"Expected `threads` to be an integer >= 1 or None, got {threads!r}.")
    return int(threads)


def ensemble(system_or_factory, t_final, dt, integrator="exp", *, parameters=None,
             save_every=1, backend="auto", threads=None, progress=None, **initial_conditions):
    """Run N independent simulations in one call; the results as an :class:`xarray.Dataset`.

    Parameters
    ----------
    system_or_factory : system or callable
        A system shared by every run, or a factory that builds each run's system:
        ``factory(**params_of_run_i)`` with one value of each of ``parameters`` (a 0-d value
        as a Python number). The factory may also return a pair ``(system, dict)``: the
        system and initial conditions of that run (say an orientation made from a tilt).
    t_final, dt : float
        As :func:`nhphys.simulate`; the same for every run.
    integrator : str or integrator
        As :func:`nhphys.simulate`.
    parameters : dict of str -> array (N, ...), optional
        The factory's keyword arguments, one row per run (mass, inertia, sizes, ...).
    save_every : int
        As :func:`nhphys.simulate`.
    backend : {"auto", "cython", "python"}
    threads : int or None
        Threads of the batch engine (None: its default).
    progress : bool, callable or None
        ``True`` shows a tqdm bar of the runs (runs failed in its postfix); a callable is
        called as ``progress(done_runs, failed_runs)``; ``None`` shows the bar on a terminal
        when the ensemble takes 10^5 steps or more.
    **initial_conditions : array (N, ...)
        In the names of :func:`nhphys.simulate`, each with a leading batch axis: ``omega``
        (N, 3), ``orientation`` (N, 3, 3) or (N, 4), ``heading`` (N,), ...

    Returns
    -------
    xarray.Dataset
        Dims ``run`` (N), ``time`` (saved frames), and component dims: ``i`` (then ``j``)
        for axes of length 3 (``omega`` ``(run, time, i)``, ``R`` ``(run, time, i, j)``),
        ``i2``, ``i4``, ... for other lengths (:func:`component_dims`). Data variables: every
        field of the runs' trajectories, ``(run, time, ...)`` (a failed run's frames after its
        failure are NaN); ``status`` (``"ok"`` or the failure's kind, e.g.
        ``"not_converged"``, ``"flat"``), ``fail_time`` (the time at the start of the failed
        step, NaN when ok), ``message`` and ``steps_done``, ``(run,)``. Coordinates: ``run``
        (0..N-1), ``time``, each parameter, and each initial condition as ``initial_NAME``.
        Attributes: ``integrator``, ``dt``, ``t_final``, ``save_every``, ``backend`` (what
        stepped), ``system``, ``nhphys_version``.

    Raises
    ------
    ValueError, TypeError
        Before any step: bad ``t_final``/``dt``/..., no runs, batch axes of different lengths,
        parameters without a factory, a factory that raised or does not take the parameters,
        unknown or malformed initial conditions (each naming the run and its parameters). A
        state that a system refuses when its run starts (a velocity violating a constraint)
        is named by run too, when the engine reaches it; so is an ensemble whose frames
        would take more memory than ``$NHPHYS_MAX_RUN_BYTES`` (2 GiB by default), after its
        first run (:func:`check_ensemble_memory`).
    KeyboardInterrupt
        Ctrl-C stops the ensemble.

    Examples
    --------
    A family of Suslov tops, one inertia per run:

    >>> import functools
    >>> import numpy as np, nhphys
    >>> make = functools.partial(nhphys.systems.Suslov, axis=[0, 0, 1])
    >>> inertias = [[1.0, 2.0, 3.0], [1.0, 2.5, 3.0], [1.0, 3.5, 4.0]]
    >>> ds = nhphys.ensemble(make, 1.0, 0.01, parameters={"inertia": inertias},
    ...                      omega=np.tile([1.0, 0.5, 0.0], (len(inertias), 1)))
    >>> ds.inertia.dims, ds.omega.dims
    (('run', 'i'), ('run', 'time', 'i'))
    """
    return run_ensemble(system_or_factory, t_final, dt, integrator, parameters=parameters,
                        save_every=save_every, backend=backend, threads=threads,
                        progress=progress, initial_conditions=initial_conditions)


def run_ensemble(system_or_factory, t_final, dt, integrator="exp", *, parameters=None,
                 save_every=1, backend="auto", threads=None, progress=None,
                 initial_conditions=None, first_run=0):
    """:func:`ensemble`, its runs numbered from ``first_run`` (in ``run`` and in messages):
    a batch of a sweep."""
    from nhphys import __version__

    args = check_run_arguments(dt, t_final, save_every, integrator, backend)
    threads = check_threads(threads)
    n, systems, runs, parameters, initial = plan_runs(system_or_factory, parameters,
                                                      initial_conditions or {}, first_run)
    callback, close = progress_callback(progress, n, n * args.n_steps)
    try:
        result = _engine()(systems, args.t_final, args.dt, integrator, initial_conditions=runs,
                           save_every=args.save_every, backend=backend, threads=threads,
                           progress=callback)
    finally:
        close()
    attrs = {
        "integrator": repr(args.integrator if args.integrator is not None
                           else integrator_default()),
        "dt": args.dt, "t_final": args.t_final, "save_every": args.save_every,
        "backend": result.backend, "system": describe_system(system_or_factory),
        "nhphys_version": __version__,
    }
    return to_dataset(result, coordinates(n, parameters, initial, first_run), attrs)


def integrator_default():
    from nhphys.integrators import Retraction

    return Retraction()


def progress_callback(progress, total_runs, total_steps):
    """A ``progress(done, failed)`` callable for ``progress`` (see :func:`ensemble`) and the
    function that closes its bar.

    Returns
    -------
    callback : callable or None
    close : callable
    """
    if callable(progress):
        return progress, lambda: None
    if progress is None:
        progress = total_steps >= AUTO_PROGRESS_STEPS and sys.stderr.isatty()
    if not progress:
        return None, lambda: None
    from tqdm.auto import tqdm

    bar = tqdm(total=total_runs, unit="run", desc="nhphys ensemble")
    bar.set_postfix(failed=0)

    def update(done, failed):
        bar.update(done - bar.n)
        bar.set_postfix(failed=failed, refresh=False)

    return update, bar.close


__all__ = ["ensemble"]


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`ensemble`: ``import nhphys.ensemble`` binds
    ``nhphys.ensemble`` to the module, and ``nhphys.ensemble(...)`` must still run one."""

    def __call__(self, *args, **kwargs):
        return ensemble(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
