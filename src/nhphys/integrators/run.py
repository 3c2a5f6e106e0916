"""The run: the one life cycle of every integrator's stepping state.

An integrator is a small immutable option object; ``integrator.start(system, dt, backend,
**initial_conditions)`` validates the start once and returns a :class:`Run`, which owns the
evolving state. The driver (:func:`nhphys.simulate.drive`) owns time, chunking, saving, the
progress bar and interruption, and calls only :meth:`Run.initial`, :meth:`Run.advance`,
:meth:`Run.checkpoint` and :meth:`Run.restore`.

Life cycle
----------
1. **start**: the subclass's constructor copies the validated initial state into its own
   arrays (never the caller's) and chooses the implementation of its time loop
   (:func:`nhphys._backend.choose`), recording which one really steps in ``backend``.
2. **advance(n, save_every)**: the base allocates the buffers of the saved steps
   (:meth:`_allocate`) and an ``info`` array (``INFO_SIZE`` slots, :mod:`nhphys.twins.newton`),
   and the time loop (kernel or twin) takes ``n`` steps into them. A step is committed to the
   state only when the whole step, every sub-step of a composition included, succeeded; a
   failed step leaves the state exactly at its start, in the kernel and in the twin alike. The
   loop reports ``k + 1`` for a failure in its step ``k`` and the reason, one of the statuses
   of :mod:`nhphys.twins.newton`, and counts the steps it committed in
   ``info[INFO_COMMITTED]`` (after each step's saved frame is written).
3. **failure**: :meth:`advance` turns the status into an exception in one place
   (:meth:`_error`): a contact event becomes :class:`~nhphys.errors.ContactEvent`, an exception
   raised by a user's Python callback inside the loop is re-raised as itself, with its
   traceback, and any other status a :class:`~nhphys.errors.NewtonError` with the status's
   message. The frames saved before the failure within this call travel with the exception.
   After a failure the run refuses to advance.
4. **interruption**: a ``KeyboardInterrupt`` (Ctrl-C) that arrives inside the loop (a twin's,
   or a Python callback's of a kernel) is re-raised as itself, carrying in ``frames`` the frames
   of the saved steps the loop had committed (``info[INFO_COMMITTED] // save_every`` of them,
   each complete); the run then refuses to advance, since Ctrl-C may have fallen between two
   of the assignments that commit a step.
5. **checkpoint / restore**: :meth:`checkpoint` copies every array of the state (Newton's warm
   starts included) and ``steps_done``; :meth:`restore` puts such a copy back into a run
   started the same way, which then continues bit for bit as the run it was taken from.

Implementing a run
------------------
A subclass sets ``dt``, ``backend`` (``"cython"`` or ``"python"``: what steps), names the
attributes holding its state in ``state_names`` (arrays, updated in place, or numbers), and
implements

* ``_initial_frame() -> dict``: the trajectory fields of the start (leading axis 1);
* ``_allocate(n_saved) -> saved``: the buffers of ``n_saved`` saved steps;
* ``_loop(n_steps, save_every, saved, info) -> code``: the time loop, writing the saved steps
  into ``saved`` and ``info`` as above;
* ``_frames(saved, count) -> dict``: trajectory fields of the first ``count`` saved steps;
* optionally ``_detail(reason) -> str`` (more words for a failure) and
  ``_event(reason) -> (name, message)`` (for contact events), and ``_pending_error()``, an
  exception a Python callback raised inside the loop.
"""

import numbers

import numpy as np

from nhphys.errors import ContactEvent, NewtonError
from nhphys.twins import newton as status
from nhphys.twins.newton import INFO_COMMITTED, INFO_SIZE


def check_newton_options(newton_tol, max_newton):
    """Validated ``(newton_tol, max_newton)`` of an integrator, as ``(float, int)``.

    ``newton_tol`` in (0, 1e-3): the relative size of a last Newton correction that ends a
    step's solve; ``max_newton`` >= 1: corrections before the step fails. Any real and integral
    number types are accepted (``numpy.int64(30)`` included), booleans are not.
    """
    if isinstance(newton_tol, bool) or not isinstance(newton_tol, numbers.Real) or not (
            0 < float(newton_tol) < 1e-3):
        raise ValueError(f"Expected `newton_tol` to be a number in (0, 1e-3), got {newton_tol!r}.")
    if isinstance(max_newton, bool) or not isinstance(max_newton, numbers.Integral) \
            or max_newton < 1:
        raise ValueError(f"Expected `max_newton` to be an integer >= 1, got {max_newton!r}.")
    return float(newton_tol), int(max_newton)


class Run:
    """Base of every run (see the module docstring for the life cycle).

    Attributes
    ----------
    dt : float
    backend : {"cython", "python"}
        The implementation that really steps this run.
    steps_done : int
        Steps committed so far.
    failure : Exception or None
        What ended the run (a failure, an exception escaping the loop, Ctrl-C); a run that
        ended does not advance.
    state_names : tuple of str
        The attributes that hold the state between steps: what :meth:`checkpoint` copies.
    """

    dt: float
    backend: str
    state_names: tuple = ()

    steps_done = 0
    failure = None

    # -- what a subclass implements -------------------------------------------------------
    def _initial_frame(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _allocate(self, n_saved):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loop(self, n_steps, save_every, saved, info):  # pragma: no cover - abstract
        raise NotImplementedError

    def _frames(self, saved, count):  # pragma: no cover - abstract
        raise NotImplementedError

    def _detail(self, reason):
        """Words added to the status message of a failure (e.g. where the contact was)."""
        return ""

    def _event(self, reason):  # pragma: no cover - only runs with contact events
        """``(name, message)`` of a contact event."""
        return status.NAMES[reason].lower(), status.message(reason)

    def _pending_error(self):
        """An exception raised by a Python callback inside the loop, or None."""
        return None

    # -- the life cycle -------------------------------------------------------------------
    def initial(self):
        """The trajectory fields of the start (leading axis of length 1)."""
        return self._initial_frame()

    def advance(self, n_steps, save_every):
        """Take ``n_steps`` steps; the frames of every ``save_every``-th.

        Raises
        ------
        NewtonError, ContactEvent
            A step failed (the frames saved before it in this call are attached).
        KeyboardInterrupt
            Ctrl-C arrived inside the loop: its ``frames`` attribute holds the frames of the
            saved steps committed before it (a dict of arrays, possibly of no frames).
        RuntimeError
            The run ended before and cannot go on.
        Exception
            Whatever a user's Python callback raised inside the loop.
        """
        if self.failure is not None:
            raise RuntimeError(
                f"This run stopped at step {self.failure.step} ({self.failure}); start a new "
                "one to go on."
            ) from self.failure
        n_saved = n_steps // save_every
        start = self.steps_done
        saved = self._allocate(n_saved)
        info = np.zeros(INFO_SIZE, dtype=np.intp)
        try:
            try:
                code = self._loop(n_steps, save_every, saved, info)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # a twin loop's callback raised: stop here
                self.steps_done = start + int(info[INFO_COMMITTED])
                if self.failure is None:
                    self.failure = NewtonError(self.steps_done, self.steps_done * self.dt,
                                               f"interrupted by {type(exc).__name__}")
                raise
            raised = self._pending_error()
            if isinstance(raised, KeyboardInterrupt):  # Ctrl-C in a callback of the kernel
                raise raised
            if raised is not None:
                self.failure = NewtonError(start + max(code, 1) - 1,
                                           (start + max(code, 1) - 1) * self.dt,
                                           status.message(status.CALLBACK_RAISED))
                raise raised
            if code:
                raise self._fail(code, reason_of(info), saved, save_every)
            frames = self._frames(saved, n_saved)
        except KeyboardInterrupt as exc:
            self._interrupted(exc, start, saved, info, save_every)
            raise
        self.steps_done = start + n_steps
        return frames

    def _interrupted(self, exc, start, saved, info, save_every):
        """Stop the run at Ctrl-C, and give ``exc`` the frames of the committed saved steps."""
        committed = int(info[INFO_COMMITTED])
        self.steps_done = start + committed
        if self.failure is None:
            self.failure = NewtonError(self.steps_done, self.steps_done * self.dt,
                                       "interrupted by KeyboardInterrupt")
        exc.frames = self._frames(saved, committed // save_every)

    # -- checkpoints ----------------------------------------------------------------------
    def checkpoint(self):
        """A copy of the whole state: ``steps_done`` and every attribute of ``state_names``.

        Returns
        -------
        dict of str -> ndarray
            Plain arrays (numbers only), for :meth:`restore`.

        Raises
        ------
        RuntimeError
            The run failed or was interrupted: its state may not be that of a whole step.
        """
        if self.failure is not None:
            raise RuntimeError(f"This run stopped at step {self.failure.step}; it has no "
                               "checkpoint after that.")
        state = {"steps_done": np.array(self.steps_done, dtype=np.int64)}
        for name in self.state_names:
            state[name] = np.array(getattr(self, name), copy=True)
        return state

    def restore(self, checkpoint):
        """Put the state of :meth:`checkpoint` (of a run started the same way) back.

        Raises
        ------
        ValueError
            A name is missing or unexpected, or an array has another shape or kind, or is not
            finite (the message names it).
        """
        expected = {"steps_done", *self.state_names}
        missing = sorted(expected - set(checkpoint))
        extra = sorted(set(checkpoint) - expected)
        if missing or extra:
            raise ValueError(
                f"Expected a checkpoint of {type(self).__name__} with "
                f"{sorted(expected)}; " + "; ".join(
                    part for part in (f"missing {missing}" if missing else "",
                                      f"unexpected {extra}" if extra else "") if part) + ".")
        values = {}
        for name in ("steps_done", *self.state_names):
            value = np.asarray(checkpoint[name])
            current = self.steps_done if name == "steps_done" else getattr(self, name)
            shape = np.shape(current)
            kind = np.asarray(current).dtype.kind
            if value.shape != shape or (value.dtype.kind != kind
                                        and not (kind in "iu" and value.dtype.kind in "iu")):
                raise ValueError(f"Checkpoint array {name!r} has shape {value.shape} of "
                                 f"{value.dtype}; this run's is {shape} of "
                                 f"{np.asarray(current).dtype}.")
            if kind == "f" and not np.all(np.isfinite(value)):
                raise ValueError(f"Checkpoint array {name!r} is not finite.")
            values[name] = value
        if values["steps_done"] < 0:
            raise ValueError(f"Checkpoint `steps_done` must be >= 0, got {values['steps_done']}.")
        for name in self.state_names:
            current = getattr(self, name)
            if isinstance(current, np.ndarray):
                current[...] = values[name]
            else:
                setattr(self, name, type(current)(values[name][()]))
        self.steps_done = int(values["steps_done"])
        self.failure = None

    def _fail(self, code, reason, saved, save_every):
        """The exception of a failure in step ``code - 1`` of this call (state at its start)."""
        failed = self.steps_done + code - 1
        kept = (code - 1) // save_every
        partial = self._frames(saved, kept)
        partial["t"] = self.dt * (self.steps_done + save_every * np.arange(1, kept + 1))
        self.steps_done = failed
        error = self._error(reason, failed, partial)
        self.failure = error
        return error

    def _error(self, reason, step, partial):
        """The one translation of a status into an exception."""
        time = step * self.dt
        if reason in status.EVENTS:
            name, what = self._event(reason)
            return ContactEvent(step, time, name, what, partial)
        detail = status.message(reason) if reason in status.NAMES else f"status {reason}"
        extra = self._detail(reason)
        return NewtonError(step, time, detail + (f"; {extra}" if extra else ""), partial)


def reason_of(info):
    """The status of a failure, from a loop's ``info``."""
    return int(info[status.INFO_STATUS])
