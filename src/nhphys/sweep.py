"""``sweep``: a parameter study split into batches, scheduled with Dask, streamed to Zarr.

::

    ds = nhphys.sweep(build, {"tilt": tilts, "spin": spins}, 10.0, 1e-3, out="reversal.zarr")

The points of the study (the outer product of 1-D grids, or an explicit list) are cut into
batches of consecutive runs; each batch is one :func:`nhphys.ensemble` call, a task of a
``dask.distributed`` cluster (a ``LocalCluster`` of this machine's cores by default). The
driver, this process, writes each batch into the Zarr store ``out`` as it finishes (a region
write along ``run``), then marks it finished in the store's own index (``batch_done``), so a
batch is either entirely written and marked or recomputed by the next run of the same sweep.
Only the driver writes, so the workers of a remote cluster need not see ``out``.

Dask moves tasks and results between its processes with pickle (its own protocol); nothing
nhphys stores is pickled: the store holds plain arrays and JSON attributes.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import sys
import types
import uuid
import warnings

import numpy as np

from nhphys._threads import available_threads
from nhphys.ensemble import (
    _check_signature,
    check_threads,
    coordinates,
    describe_system,
    run_ensemble,
)
from nhphys.simulate import check_run_arguments

IDENTITY_ATTR = "nhphys_sweep"  # the store's attribute that says which sweep made it
INDEX = "batch_done"  # the store's index of finished batches: (batch,), 1 when written
MAX_DEFAULT_BATCH = 1000
BATCH_BYTES = 256 * 2**20  # the default batch size keeps a batch's frames below this
FRAME_BYTES = 400  # a frame of one run, about: 152 bytes for Suslov, 392 for a rolling body
LOCK_FILE = ".nhphys-sweep.lock"  # in the store while a sweep writes it, held by flock


# -- the points of a study ----------------------------------------------------------------------

def study_points(parameters):
    """The runs of a study: one value of each parameter per run.

    Parameters
    ----------
    parameters : dict of str -> 1-D sequence, or sequence of dicts
        A dict of grids: their outer product, in row-major order (the last name varies
        fastest). A list of dicts (all with the same names): those points, in that order.

    Returns
    -------
    columns : dict of str -> ndarray (N, ...)
    grid : dict or None
        ``{"names": [...], "shape": [...]}`` for a grid (``shape`` the grids' lengths), None
        for a list of points.

    Raises
    ------
    ValueError, TypeError
        No points, an empty grid, points of different names, names that are not identifiers.
    """
    if isinstance(parameters, dict):
        if not parameters:
            raise ValueError("Expected `parameters` to name at least one grid, got {}.")
        grids = {}
        for name, grid in parameters.items():
            arr = np.asarray(grid)
            if arr.ndim == 0 or len(arr) == 0:
                raise ValueError(f"Expected the grid of `{name}` to be a non-empty 1-D sequence "
                                 f"of values, got {grid!r}.")
            grids[name] = arr
        shape = [len(g) for g in grids.values()]
        index = np.indices(shape).reshape(len(shape), -1)  # row-major: the last fastest
        columns = {name: g[index[k]] for k, (name, g) in enumerate(grids.items())}
        grid = {"names": list(grids), "shape": shape}
    elif isinstance(parameters, (list, tuple)) and all(isinstance(p, dict) for p in parameters):
        if not parameters:
            raise ValueError("Expected `parameters` to hold at least one point, got [].")
        names = list(parameters[0])
        for i, point in enumerate(parameters):
            if set(point) != set(names):
                raise ValueError(f"Expected every point to name {sorted(names)}; point {i} "
                                 f"names {sorted(point)}.")
        columns = {name: np.asarray([p[name] for p in parameters]) for name in names}
        grid = None
    else:
        raise TypeError("Expected `parameters` to be a dict of 1-D grids (name -> values) or a "
                        f"list of points (dicts), got {type(parameters).__name__}.")
    for name in columns:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Expected parameter names to be identifiers, got {name!r}.")
    return columns, grid


def default_batch_size(n_runs, n_saved):
    """About 64 batches, of at most ``MAX_DEFAULT_BATCH`` runs, and of at most about
    ``BATCH_BYTES`` of frames (at ``FRAME_BYTES`` a frame: a batch is held in memory whole):
    enough tasks to keep a cluster busy and to lose little when a worker dies, few enough
    that scheduling and writing (some 30 ms a batch) cost little."""
    by_memory = BATCH_BYTES // (n_saved * FRAME_BYTES)
    return int(max(1, min(MAX_DEFAULT_BATCH, math.ceil(n_runs / 64), by_memory)))


def _jsonable(value):
    arr = np.asarray(value)
    return arr.tolist() if arr.dtype.kind in "biufcUS" else repr(value)


def _summary(value):
    """A short description of a JSON value for messages (a grid of 64 values ...)."""
    if isinstance(value, list):
        flat = np.asarray(value, dtype=object).ravel()
        if len(flat) > 6:
            return f"{len(value)} values from {flat[0]!r} to {flat[-1]!r}"
    return repr(value)


# -- the store --------------------------------------------------------------------------------

class SweepStore:
    """The Zarr store of a sweep: its identity, its index of finished batches, region writes.

    Parameters
    ----------
    path : str or path
        A local folder: absent, empty, or a store that this same sweep made.
    identity : dict
        What makes two sweeps the same (JSON-able): stored in the store's attributes and
        compared with a store found at ``path``.
    """

    def __init__(self, path, identity):
        self.path = os.fspath(path)
        self.identity = identity
        self.exists = False
        self._lock = None

    def lock(self):
        """Hold the store against other sweeps until :meth:`unlock`: an exclusive ``flock`` on
        the file ``.nhphys-sweep.lock`` inside it, which exists only while a sweep holds it.
        The operating system drops the lock when this process ends, however it ends, so a
        killed sweep never leaves the store locked (only the file, which the next sweep takes
        over). Where ``fcntl`` is missing (Windows), or the folder cannot be written (a
        finished store on a read-only disk, say), the store is not locked.

        Raises
        ------
        ValueError
            Another sweep (in any process) holds it. Nothing is changed.
        """
        try:
            import fcntl
        except ImportError:  # no advisory locks here: documented
            return
        path = os.path.join(self.path, LOCK_FILE)
        while self._lock is None:
            try:
                handle = open(path, "a+")
            except OSError:  # not writable: nor is the store, for this sweep (documented)
                return
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip()
                handle.close()
                raise self._held(holder) from None
            try:  # the holder before may have removed the file after we opened it: retry
                same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                handle.close()
                continue
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {_hostname()}\n")
            handle.flush()
            self._lock = handle

    def unlock(self):
        """Let other sweeps write the store again (the lock file goes, then the lock)."""
        if self._lock is not None:
            try:
                os.unlink(os.path.join(self.path, LOCK_FILE))
            except FileNotFoundError:
                pass
            self._lock.close()  # closing the file drops the flock
            self._lock = None

    def _held(self, holder):
        return ValueError(f"The store {self.path!r} is being written by another sweep "
                          f"({holder or 'another process'}). Nothing was changed; wait for it "
                          "to finish (a re-run then continues the store) or choose another "
                          "`out`.")

    def _check_not_held(self):
        """Raise if another sweep holds the lock of the folder, without writing anything (the
        folder may be another's: it is only read here)."""
        try:
            import fcntl

            handle = open(os.path.join(self.path, LOCK_FILE))
        except (ImportError, OSError):  # no locks here, or no lock file: nobody holds it
            return
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._held(handle.read().strip()) from None

    def check(self):
        """Look at ``path``: the finished batches of this sweep's store there (a set of
        indices), or an empty set when there is none yet. The store found is locked
        (:meth:`lock`) until :meth:`unlock`.

        Raises
        ------
        ValueError
            ``path`` is a file, a folder that is not a sweep's store, a store of another sweep
            (naming what differs), a store another sweep is writing (or creating), or an
            incomplete store. Nothing is changed.
        """
        path = self.path
        if not os.path.lexists(path):
            return set()
        if not os.path.isdir(path):
            raise ValueError(f"Cannot write the sweep to {path!r}: it is a file. Nothing was "
                             "changed; choose another `out`.")
        self._check_not_held()  # a sweep creating or writing it now: say so, read nothing
        if not [name for name in os.listdir(path) if name != LOCK_FILE]:
            return set()  # empty, or a killed sweep's lock file alone: create() locks it
        import zarr

        try:
            attrs = dict(zarr.open_group(path, mode="r").attrs)
        except (OSError, ValueError, LookupError, TypeError) as exc:  # zarr's are ValueErrors
            raise ValueError(f"Cannot write the sweep to {path!r}: the folder exists and is not "
                             f"a Zarr store ({type(exc).__name__}). Nothing was changed; choose "
                             "another `out`.") from None
        if IDENTITY_ATTR not in attrs:
            raise ValueError(f"Cannot write the sweep to {path!r}: it is a Zarr store that "
                             "nhphys.sweep did not write. Nothing was changed; choose another "
                             "`out`.")
        stored = json.loads(attrs[IDENTITY_ATTR])
        for key in sorted(set(stored) | set(self.identity)):
            if stored.get(key) != self.identity.get(key):
                if key == "batch_size" and self.identity.get(key) is None:
                    continue
                raise ValueError(
                    f"The store {path!r} holds another sweep: its {key} is "
                    f"{_summary(stored.get(key))}, this sweep's is "
                    f"{_summary(self.identity.get(key))}. Nothing was changed; choose another "
                    "`out` (or run the same sweep to continue it).")
        self.identity = stored  # its batch size, when this sweep left it to the store
        self.lock()  # before reading its index: a sweep writing it now would change it
        try:
            done = np.asarray(zarr.open_group(path, mode="r")[INDEX][:])
        except (OSError, ValueError, LookupError, TypeError):
            self.unlock()
            raise ValueError(f"The store {path!r} of this sweep has no readable index of "
                             f"finished batches ({INDEX!r}): it was stopped while it was being "
                             "created. Remove it to start again.") from None
        self.exists = True
        return set(np.flatnonzero(done).tolist())

    def create(self, first, coords, n_batches, batch_size, attrs):
        """Write the store's layout (no data) from ``first``, the dataset of a batch.

        Floating-point variables are NaN and strings empty until their batch is written; each
        variable is chunked by ``batch_size`` runs, so a batch's region write touches its own
        chunks only.
        """
        import dask.array as da
        import xarray as xr

        n = len(coords["run"][1])
        data, encoding = {}, {}
        for name, var in first.data_vars.items():
            shape = (n,) + var.shape[1:]
            chunks = (batch_size,) + var.shape[1:]
            if var.dtype.kind in "fc":
                array = da.full(shape, np.nan, dtype=var.dtype, chunks=chunks)
                encoding[name] = {"_FillValue": np.nan}
            elif var.dtype.kind in "iub":
                array = da.zeros(shape, dtype=var.dtype, chunks=chunks)
            else:  # strings of any length: written with the layout (they are small)
                array = np.full(shape, "", dtype=object)
                encoding[name] = {"chunks": chunks}
            data[name] = (var.dims, array)
        data[INDEX] = (("batch",), da.zeros(n_batches, dtype=np.int8, chunks=1))
        coords = dict(coords, time=("time", first["time"].values))
        for name, (dims, values) in coords.items():
            if values.dtype.kind == "U":  # Zarr's variable-length strings (v3 has no fixed-width)
                coords[name] = (dims, values.astype(object))
        layout = xr.Dataset(data, coords=coords, attrs=attrs)
        # the folder, then its lock, then the layout: a second sweep creating the same store at
        # the same time is refused at lock() before either writes anything; mode "a" keeps
        # the lock file ("w" would clear the folder, "w-" refuses a folder with a file in it)
        os.makedirs(self.path, exist_ok=True)
        self.lock()
        if [name for name in os.listdir(self.path) if name != LOCK_FILE]:
            raise ValueError(f"Cannot write the sweep to {self.path!r}: the folder is no longer "
                             "empty. Nothing in it was changed; run the same sweep again to "
                             "continue a store another sweep made there.")
        with warnings.catch_warnings():
            # Zarr lists the folder and names the lock file as not part of the store: it is not
            warnings.filterwarnings("ignore", message=f".*{re.escape(LOCK_FILE)}.*")
            layout.to_zarr(self.path, mode="a", compute=False, encoding=encoding,
                           consolidated=False)
        self.exists = True

    def write(self, batch, lo, hi, part):
        """Write ``part`` (the dataset of runs ``lo..hi-1``) into its region of every array,
        then mark ``batch`` finished in the index.

        The arrays are written with Zarr directly (xarray's region writes check the whole
        layout at every call, ten times the cost); each chunk file is replaced atomically by
        the store, so a kill leaves a chunk old or new, never torn.
        """
        group = self._group()
        for name, var in part.data_vars.items():
            array = group[name]
            if array.shape[1:] != var.shape[1:] or array.shape[0] < hi:
                raise ValueError(f"Batch {batch}'s {name!r} has shape {var.shape}; the store's "
                                 f"is {array.shape}.")
            array[lo:hi] = var.values
        group[INDEX][batch] = 1  # last: a batch marked finished has all its data in the store

    def _group(self):
        if getattr(self, "_open", None) is None:
            import zarr

            self._open = zarr.open_group(self.path, mode="r+")
        return self._open

    def failed_runs(self, batches):
        """How many runs of the finished ``batches`` ([(b, lo, hi)]) did not end ``"ok"``."""
        import zarr

        if not batches:
            return 0
        status = zarr.open_group(self.path, mode="r")["status"]
        return sum(sum(str(s) != "ok" for s in np.asarray(status[lo:hi]).ravel())
                   for _, lo, hi in batches)

    def open(self):
        """The dataset in the store (lazy, Dask arrays), without its index; its strings
        (``status``, ``message``: one per run) read as NumPy ``str`` arrays, as in memory."""
        import xarray as xr

        ds = xr.open_zarr(self.path, consolidated=False).drop_vars(INDEX)
        strings = {}
        for name, var in ds.variables.items():
            if var.dtype.kind not in "biufcmM":
                strings[name] = (var.dims, np.array([str(x) for x in var.values.ravel()],
                                                    dtype=str).reshape(var.shape))
        coords = {k: v for k, v in strings.items() if k in ds.coords}
        return ds.assign({k: v for k, v in strings.items() if k not in coords}) \
            .assign_coords(coords)


# -- one batch: a task --------------------------------------------------------------------------

def compute_batch(build, columns, lo, t_final, dt, integrator, save_every, backend, threads,
                  fixed, progress=None):
    """Runs ``lo .. lo + len(columns)-1`` of a sweep: one :func:`nhphys.ensemble` call (the task
    a worker runs).

    Returns
    -------
    xarray.Dataset
        With ``run`` numbered from ``lo``.
    """
    n = len(next(iter(columns.values())))
    initial = {k: np.broadcast_to(v, (n,) + v.shape) for k, v in fixed.items()}
    return run_ensemble(build, t_final, dt, integrator, parameters=columns,
                        save_every=save_every, backend=backend, threads=threads,
                        progress=progress or False, initial_conditions=initial, first_run=lo)


# -- progress ---------------------------------------------------------------------------------

class StudyProgress:
    """One bar for the whole study: runs done, runs failed (postfix), time left; or the user's
    ``progress(done_runs, failed_runs)``."""

    def __init__(self, progress, total, done, failed):
        self.total, self.done, self.failed = total, done, failed
        self.callback = progress if callable(progress) else None
        if progress is None:
            progress = sys.stderr.isatty()
        self.bar = None
        if progress and self.callback is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=done, unit="run", desc="nhphys sweep",
                            dynamic_ncols=True)
            self.bar.set_postfix(failed=failed)

    def show(self, done, failed):
        """Done and failed runs of the whole study so far."""
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
            self.bar.set_postfix(failed=failed, refresh=False)
        if self.callback is not None:
            self.callback(done, failed)

    def restart_clock(self):
        """Count the time left from now (after a cluster has started, which takes seconds)."""
        if self.bar is not None:
            import time

            self.bar.start_t = self.bar.last_print_t = time.time()

    def note(self, text):
        """A line above the bar (none without a bar)."""
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)

    def batch_done(self, n_runs, n_failed):
        self.done += n_runs
        self.failed += n_failed
        self.show(self.done, self.failed)

    def within(self):
        """A ``progress(done, failed)`` for an ensemble run in this process (its runs)."""
        return lambda done, failed: self.show(self.done + done, self.failed + failed)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# -- the sweep -----------------------------------------------------------------------------------

def sweep(build, parameters, t_final, dt, integrator="exp", *, out=None, batch_size=None,
          client=None, save_every=1, backend="auto", threads=1, progress=None, **fixed):
    """Run a parameter study on a Dask cluster, in batches, streamed to a Zarr store.

    Parameters
    ----------
    build : callable
        ``build(**point)`` builds one run: it returns its system, or a pair ``(system,
        dict)`` of the system and that run's initial conditions (see
        :func:`nhphys.ensemble`). On a cluster it is sent to the workers: it must be a
        module-level function (or a picklable callable) whose module the workers can import.
    parameters : dict of str -> 1-D sequence, or list of dicts
        A dict of grids (their outer product is the study, row-major: the last name varies
        fastest), or an explicit list of points.
    t_final, dt, integrator, save_every, backend
        As :func:`nhphys.simulate`, the same for every run.
    out : str or path, optional
        A Zarr store (a local folder) to stream the batches to: absent, empty, or the store of
        this same sweep, which is continued (its finished batches are not computed again). A
        store of another sweep (other grids, ``t_final``, ``dt``, integrator, ...) is refused,
        naming the difference; a path that is not such a store is never written to. With
        ``out=None`` the results are gathered in memory.
    batch_size : int, optional
        Runs per batch (per task); a batch's frames are held in memory whole. Default: the
        store's when continuing one, else about N / 64, at most 1000 and at most about
        256 MiB of frames (:func:`default_batch_size`).
    client : None, False, str or dask.distributed.Client
        ``None``: start a ``LocalCluster`` on this machine (processes, one per core, one thread
        each) and close it at the end. A scheduler address (``"tcp://host:8786"``) or a
        ``Client``: use that cluster (a client made here from an address is closed at the end;
        a given one is left open). ``False``: run the batches one after another in this
        process, without Dask.
    threads : int or None
        Threads of each batch's engine. Default 1: Dask runs one batch per worker thread.
    progress : bool, callable or None
        A tqdm bar of the whole study (runs done, runs failed, time left), fed by the batches
        as they finish (and by each run with ``client=False``); ``None`` shows it on a terminal.
        A callable is called as ``progress(done_runs, failed_runs)`` instead.
    **fixed
        Initial conditions shared by every run (no batch axis), in the names of
        :func:`nhphys.simulate`.

    Returns
    -------
    xarray.Dataset
        The dataset of :func:`nhphys.ensemble` over every run of the study, ``run`` numbered
        in the study's order; the parameters are coordinates along ``run`` (for a grid,
        ``attrs["grid_names"]`` and ``attrs["grid_shape"]`` say how ``run`` unfolds into it).
        Opened from ``out`` (lazily: Dask arrays) or in memory when ``out=None``.

    Raises
    ------
    ValueError, TypeError
        Bad arguments, or an ``out`` that this sweep cannot write, before anything is computed.
    Exception
        A batch that raised (its factory, say): the sweep stops; finished batches stay in the
        store.
    KeyboardInterrupt
        Ctrl-C: the sweep stops, its finished batches stay in the store, and the same call
        continues it.
    """
    args = check_run_arguments(dt, t_final, save_every, integrator, backend)
    threads = check_threads(threads)
    if not callable(build):
        raise TypeError(f"Expected `build` to be a callable building each run's system from "
                        f"its parameters, got {type(build).__name__}.")
    if not (client is None or client is False or isinstance(client, str)):
        from dask.distributed import Client

        if not isinstance(client, Client):
            raise TypeError(f"Expected `client` to be None, False, a scheduler address or a "
                            f"dask.distributed.Client, got {type(client).__name__}.")
    columns, grid = study_points(parameters)
    _check_signature(build, columns)
    fixed = {k: np.asarray(v) for k, v in fixed.items()}
    n = len(next(iter(columns.values())))
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(
            batch_size, numbers.Integral) or batch_size < 1):
        raise ValueError(f"Expected `batch_size` to be an integer >= 1 or None, got "
                         f"{batch_size!r}.")
    identity = {
        "parameters": {k: _jsonable(v) for k, v in columns.items()} if grid is None
        else {k: _jsonable(np.asarray(parameters[k])) for k in grid["names"]},
        "points": "list" if grid is None else "grid",
        "n_runs": n, "t_final": args.t_final, "dt": args.dt,
        "integrator": repr(args.integrator) if args.integrator is not None else "default",
        "save_every": args.save_every, "backend": args.backend,
        "build": describe_system(build),
        "fixed": {k: _jsonable(v) for k, v in fixed.items()},
        "batch_size": None if batch_size is None else int(batch_size),
    }
    store = None if out is None else SweepStore(out, identity)
    finished = store.check() if store is not None else set()
    if store is not None and store.exists:
        batch_size = store.identity["batch_size"]
    if batch_size is None:
        n_steps = args.n_steps
        n_saved = 1 + n_steps // args.save_every + (1 if n_steps % args.save_every else 0)
        batch_size = default_batch_size(n, n_saved)
    batch_size = int(batch_size)
    identity["batch_size"] = batch_size
    if store is not None and not store.exists:
        store.identity = identity
    batches = [(b, lo, min(lo + batch_size, n))
               for b, lo in enumerate(range(0, n, batch_size))]
    todo = [batch for batch in batches if batch[0] not in finished]
    done = [batch for batch in batches if batch[0] in finished]
    try:
        failed = store.failed_runs(done) if store is not None else 0
        bar = StudyProgress(progress, n, sum(hi - lo for _, lo, hi in done), failed)
    except BaseException:
        if store is not None:
            store.unlock()
        raise
    parts = {}
    study = types.SimpleNamespace(store=store, columns=columns, fixed=fixed, n=n, grid=grid,
                                  batches=batches, parts=parts, bar=bar, identity=identity,
                                  batch_size=batch_size)
    task_args = (args.t_final, args.dt, integrator, args.save_every, backend, threads, fixed)
    try:  # the store's lock, taken by check() or create(), is dropped at the end however it ends
        if todo and client is False:
            for b, lo, hi in todo:
                part = compute_batch(build, _slice(columns, lo, hi), lo, *task_args,
                                     progress=bar.within())
                _finished(study, b, lo, hi, part)
        elif todo:
            _on_dask(client, build, todo, task_args, study)
    finally:
        bar.close()
        if store is not None:
            store.unlock()
    if store is not None:
        return store.open()
    import xarray as xr

    return xr.concat([parts[b] for b, _, _ in batches], dim="run",
                     combine_attrs="override").assign_attrs(_study_attrs(study))


def _hostname():
    import socket

    return socket.gethostname()


def _slice(columns, lo, hi):
    return {k: v[lo:hi] for k, v in columns.items()}


def _study_attrs(study):
    attrs = {IDENTITY_ATTR: json.dumps(study.identity)}
    if study.grid is not None:
        attrs["grid_names"] = study.grid["names"]
        attrs["grid_shape"] = study.grid["shape"]
    return attrs


def _finished(study, b, lo, hi, part):
    """A batch's dataset arrived: into the store (creating it with the first), or kept."""
    store = study.store
    if store is None:
        study.parts[b] = part
    else:
        if not store.exists:
            full = {k: np.broadcast_to(v, (study.n,) + v.shape) for k, v in study.fixed.items()}
            store.create(part, coordinates(study.n, study.columns, full), len(study.batches),
                         study.batch_size, dict(part.attrs, **_study_attrs(study)))
        store.write(b, lo, hi, part)
    study.bar.batch_done(hi - lo, int(np.sum(part["status"].values.astype(str) != "ok")))


def _on_dask(client, build, todo, task_args, study):
    """Submit every batch of ``todo`` to the cluster and take each result as it finishes."""
    from dask.distributed import Client, as_completed

    own_cluster = own_client = None
    if client is None:
        own_cluster, dashboard = local_cluster()
        client = own_client = Client(own_cluster)
        if dashboard:
            study.bar.note(f"Dask dashboard: {client.dashboard_link}")
        study.bar.restart_clock()
    elif isinstance(client, str):
        client = own_client = Client(client)
    # a key of this call only: a re-run on the same cluster (after Ctrl-C, say) must not meet
    # the cancelled futures of the run before; the dashboard groups them as "nhphys-batch"
    token = uuid.uuid4().hex[:12]
    futures = {}
    try:
        for b, lo, hi in todo:
            future = client.submit(compute_batch, build, _slice(study.columns, lo, hi), lo,
                                   *task_args, key=f"nhphys-batch-{b}-{token}", pure=False)
            futures[future] = (b, lo, hi)
        for future, part in as_completed(futures, with_results=True):
            _finished(study, *futures[future], part)
            future.release()  # the worker may forget it: it is on disk (or kept here)
    finally:
        if futures:
            client.cancel(list(futures))
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()


def local_cluster():
    """A ``LocalCluster`` of this machine: one process per core, one thread each (the kernels
    hold no GIL, but a batch is one thread's work; Dask spreads the batches). Its dashboard, on
    a free port, needs bokeh.

    Returns
    -------
    cluster : dask.distributed.LocalCluster
    dashboard : bool
        Whether it serves a dashboard.
    """
    from dask.distributed import LocalCluster

    try:
        import bokeh  # noqa: F401
        dashboard = ":0"
    except ImportError:
        dashboard = None
    cluster = LocalCluster(n_workers=available_threads(), threads_per_worker=1, processes=True,
                           dashboard_address=dashboard)
    return cluster, dashboard is not None


__all__ = ["sweep"]


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`sweep` (see ``nhphys.ensemble``)."""

    def __call__(self, *args, **kwargs):
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
