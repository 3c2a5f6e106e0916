"""The run: the one life cycle of every integrator's stepping state.

An integrator is a small immutable option object; ``integrator.start(system, dt, backend,
**initial_conditions)`` validates the start once and returns a :class:`Run`, which owns the
evolving state. The driver (:func:`nhphys.simulate.drive`) owns time, chunking, saving, the
progress bar and interruption, and calls only :meth:`Run.initial` and :meth:`Run.advance`.

Life cycle
----------
1. **start**: the subclass's constructor copies the validated initial state into its own
   arrays (never the caller's) and chooses the implementation of its time loop
   (:func:`nhphys._backend.choose`), recording which one really steps in ``backend``.
2. **advance(n, save_every)**: the time loop (kernel or twin) takes ``n`` steps. A step is
   committed to the state only when the whole step, every sub-step of a composition included,
   succeeded; a failed step leaves the state exactly at its start, in the kernel and in the
   twin alike. The loop reports ``k + 1`` for a failure in its step ``k`` and the reason, one
   of the statuses of :mod:`nhphys.twins.newton`.
3. **failure**: :meth:`advance` turns the status into an exception in one place
   (:meth:`_error`): a contact event becomes :class:`~nhphys.errors.ContactEvent`, an exception
   raised by a user's Python callback inside the loop is re-raised as itself, with its
   traceback, and any other status a :class:`~nhphys.errors.NewtonError` with the status's
   message. The frames saved before the failure within this call travel with the exception.
   After a failure the run refuses to advance.

Implementing a run
------------------
A subclass sets ``dt``, ``backend`` (``"cython"`` or ``"python"``: what steps) and implements

* ``_initial_frame() -> dict``: the trajectory fields of the start (leading axis 1);
* ``_loop(n_steps, save_every, n_saved) -> (status, reason, saved)``: the time loop; ``saved``
  is what :meth:`_frames` reads, for the ``n_saved`` saved steps (or the first of them that
  were saved before a failure);
* ``_frames(saved, count) -> dict``: trajectory fields of the first ``count`` saved steps;
* optionally ``_detail(reason) -> str`` (more words for a failure) and
  ``_event(reason) -> (name, message)`` (for contact events), and ``_pending_error()``, an
  exception a Python callback raised inside the loop.
"""

import numbers

import numpy as np

from nhphys.errors import ContactEvent, NewtonError
from nhphys.twins import newton as status


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
        What ended the run; a failed run does not advance.
    """

    dt: float
    backend: str

    steps_done = 0
    failure = None

    # -- what a subclass implements -------------------------------------------------------
    def _initial_frame(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loop(self, n_steps, save_every, n_saved):  # pragma: no cover - abstract
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
        RuntimeError
            The run failed before and cannot go on.
        Exception
            Whatever a user's Python callback raised inside the loop.
        """
        if self.failure is not None:
            raise RuntimeError(
                f"This run stopped at step {self.failure.step} ({self.failure}); start a new "
                "one to go on."
            ) from self.failure
        n_saved = n_steps // save_every
        try:
            code, reason, saved = self._loop(n_steps, save_every, n_saved)
        except BaseException as exc:  # a twin loop's callback raised, or Ctrl-C arrived in it
            if self.failure is None:  # the steps it committed are not counted: stop here
                self.failure = NewtonError(self.steps_done, self.steps_done * self.dt,
                                           f"interrupted by {type(exc).__name__}")
            raise
        raised = self._pending_error()
        if raised is not None:
            self.failure = NewtonError(self.steps_done + max(code, 1) - 1,
                                       (self.steps_done + max(code, 1) - 1) * self.dt,
                                       status.message(status.CALLBACK_RAISED))
            raise raised
        if code:
            raise self._fail(code, reason, saved, save_every)
        self.steps_done += n_steps
        return self._frames(saved, n_saved)

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
