"""The integrator protocol shared by every method.

An integrator is a small immutable object holding its options (``Retraction(map="exp")``).
``integrator.start(system, dt, backend, **initial_conditions)`` validates the initial state once
and returns a *run*, which owns the evolving state:

* ``run.initial()`` -> dict of arrays, one saved frame (leading axis of length 1);
* ``run.advance(n_steps, save_every)`` -> dict of arrays, the ``n_steps // save_every`` frames
  saved while taking ``n_steps`` steps; raises :class:`nhphys.errors.NewtonError` naming the
  failed step (the state is then left at the start of that step).

The driver :func:`nhphys.simulate` owns time, chunking, the progress bar and interruption.
"""

from typing import Protocol


class Run(Protocol):
    steps_done: int

    def initial(self) -> dict: ...

    def advance(self, n_steps: int, save_every: int) -> dict: ...


class Integrator(Protocol):
    def start(self, system, dt: float, backend: str, **initial_conditions) -> Run: ...
