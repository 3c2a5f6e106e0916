"""High-accuracy reference: scipy's DOP853 on a system's continuous equations.

For cross-checks only: it does not keep constraints or orthogonality exactly, and is slow. It
works for any system exposing

* ``reference_state(**initial_conditions)`` -> flat initial state (validated),
* ``reference_rhs(t, state)`` -> its time derivative,
* ``reference_unpack(states)`` -> the saved states of (n, k) packed states: the one argument
  of ``observables`` (a dict of arrays with leading axis n),
* ``observables(saved)`` -> dict of trajectory fields.

Two caps keep a hard problem (a stiff start, a near-singular contact) from running for hours
with growing memory: ``max_steps`` solver steps and ``max_seconds`` of solving over the whole
run. Reaching one raises :class:`ReferenceLimitError`, a :class:`~nhphys.errors.NewtonError`, so
the driver keeps the frames of the chunks already finished.
"""

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from nhphys.errors import NewtonError


class ReferenceLimitError(NewtonError):
    """The reference integration reached ``max_steps`` or ``max_seconds``.

    Attributes
    ----------
    cap : str
        ``"max_steps"`` or ``"max_seconds"``.
    step, time : int, float
        The step (of the run's ``dt``) the solver was in, and its start time.
    trajectory : Trajectory or None
        The frames of the chunks finished before (set by the driver).
    """

    def __init__(self, cap, value, step, time, reached):
        self.cap = cap
        super().__init__(step, time)
        what = f"{value} solver steps" if cap == "max_steps" else f"{value:g} s of solving"
        self.args = (f"Reference stopped at t = {reached:.6g} (step {step}): the integration "
                     f"took more than {cap} = {what}; the problem may be stiff there. Raise the "
                     f"cap with Reference({cap}=...) (None for no cap) to go on.",)


class _CapReached(Exception):
    def __init__(self, cap, t):
        self.cap, self.t = cap, t


class ReferenceRun:
    """Integrates chunk by chunk, evaluating the dense output at the saved times."""

    def __init__(self, system, state0, dt, rtol, atol, max_steps=None, max_seconds=None):
        self.system = system
        self.state = state0
        self.dt = dt
        self.rtol = rtol
        self.atol = atol
        self.steps_done = 0
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.solver_steps = 0  # accepted DOP853 steps over the run
        self.seconds = 0.0  # time spent solving over the run

    def _watch(self, started):
        """An "event" of solve_ivp, called once after every accepted step: it never fires, it
        counts the steps and the time, and stops the solver at a cap."""
        def watch(t, y):
            self.solver_steps += 1
            if self.max_steps is not None and self.solver_steps > self.max_steps:
                raise _CapReached("max_steps", t)
            if self.max_seconds is not None \
                    and self.seconds + time.perf_counter() - started > self.max_seconds:
                raise _CapReached("max_seconds", t)
            return 1.0
        return watch

    def _frames(self, states, times):
        # systems with time-dependent forces read the states' times too
        extra = {"times": times} if getattr(self.system, "reference_times", False) else {}
        return self.system.observables(self.system.reference_unpack(states, **extra))

    def initial(self):
        return self._frames(self.state[None], np.zeros(1))

    def advance(self, n_steps, save_every):
        from scipy.integrate import solve_ivp  # imported here: it costs half a second

        t0 = self.steps_done * self.dt
        t1 = (self.steps_done + n_steps) * self.dt
        saved = t0 + self.dt * save_every * np.arange(1, n_steps // save_every + 1)
        started = time.perf_counter()
        self.solver_steps -= 1  # solve_ivp also calls the watch once at the start
        try:
            sol = solve_ivp(
                self.system.reference_rhs, (t0, t1), self.state, method="DOP853",
                rtol=self.rtol, atol=self.atol, dense_output=True, events=self._watch(started),
            )
        except _CapReached as stop:
            step = self.steps_done + int((stop.t - t0) // self.dt)
            value = self.max_steps if stop.cap == "max_steps" else self.max_seconds
            raise ReferenceLimitError(stop.cap, value, step, step * self.dt, stop.t) from None
        finally:
            self.seconds += time.perf_counter() - started
        if not sol.success:
            raise RuntimeError(f"Reference integration failed after t = {t0:.6g}: {sol.message}")
        self.state = sol.y[:, -1]
        self.steps_done += n_steps
        states = sol.sol(saved).T if saved.size else np.empty((0, self.state.size))
        return self._frames(states, saved)


@dataclass(frozen=True)
class Reference:
    """scipy DOP853 on the continuous equations, with tolerances ``rtol`` and ``atol``.

    Parameters
    ----------
    rtol, atol : float
        In (0, 1).
    max_steps : int or None
        The most DOP853 steps over the whole run (default 500,000: ten minutes to over an hour
        of solving with the built-in right-hand sides, which take 1-10 ms a step; the dense
        output of a chunk keeps about 2 KB a step, so at most about 1 GB). ``None``: no cap.
    max_seconds : float or None
        The most wall-clock seconds of solving over the whole run (default 600). ``None``: no
        cap.

    Reaching a cap raises :class:`ReferenceLimitError` (a :class:`~nhphys.errors.NewtonError`)
    naming it; the driver keeps the frames of the chunks finished before.
    """

    rtol: float = 1e-11
    atol: float = 1e-13
    max_steps: Optional[int] = 500_000
    max_seconds: Optional[float] = 600.0

    def __post_init__(self):
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not (isinstance(value, float) and 0 < value < 1):
                raise ValueError(f"Expected `{name}` to be a float in (0, 1), got {value!r}.")
        steps = self.max_steps
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)
                                  or steps < 1):
            raise ValueError(f"Expected `max_steps` to be an integer >= 1 or None, got {steps!r}.")
        seconds = self.max_seconds
        if seconds is not None and (isinstance(seconds, bool)
                                    or not isinstance(seconds, (int, float))
                                    or not 0 < seconds < float("inf")):
            raise ValueError(f"Expected `max_seconds` to be a finite number > 0 or None, got "
                             f"{seconds!r}.")

    def start(self, system, dt, backend, **initial_conditions):
        if getattr(system, "lift_off", False):  # a unilateral contact: mode by mode
            from nhphys.integrators.modes import start_modes
            from nhphys.integrators.modes_reference import ModesReferenceRun
            from nhphys.integrators.retraction import Retraction

            mirror = start_modes(Retraction(), system, dt, "python", **initial_conditions)
            return ModesReferenceRun(mirror, self.rtol, self.atol)
        state0 = system.reference_state(**initial_conditions)
        return ReferenceRun(system, state0, dt, self.rtol, self.atol, self.max_steps,
                            self.max_seconds)
