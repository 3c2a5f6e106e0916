"""High-accuracy reference: scipy's DOP853 on a system's continuous equations.

For cross-checks only: it does not keep constraints or orthogonality exactly, and is slow. It
works for any system exposing

* ``reference_state(**initial_conditions)`` -> flat initial state (validated),
* ``reference_rhs(t, state)`` -> its time derivative,
* ``reference_unpack(states)`` -> the saved states of (n, k) packed states: the one argument
  of ``observables`` (a dict of arrays with leading axis n),
* ``observables(saved)`` -> dict of trajectory fields.

(Systems not yet converted return a tuple of ``observables``' positional arguments.)
"""

from dataclasses import dataclass

import numpy as np


class ReferenceRun:
    """Integrates chunk by chunk, evaluating the dense output at the saved times."""

    def __init__(self, system, state0, dt, rtol, atol):
        self.system = system
        self.state = state0
        self.dt = dt
        self.rtol = rtol
        self.atol = atol
        self.steps_done = 0

    def _frames(self, states):
        saved = self.system.reference_unpack(states)
        if isinstance(saved, dict):
            return self.system.observables(saved)
        return self.system.observables(*saved)

    def initial(self):
        return self._frames(self.state[None])

    def advance(self, n_steps, save_every):
        from scipy.integrate import solve_ivp  # imported here: it costs half a second

        t0 = self.steps_done * self.dt
        t1 = (self.steps_done + n_steps) * self.dt
        saved = t0 + self.dt * save_every * np.arange(1, n_steps // save_every + 1)
        sol = solve_ivp(
            self.system.reference_rhs, (t0, t1), self.state, method="DOP853",
            rtol=self.rtol, atol=self.atol, dense_output=True,
        )
        if not sol.success:
            raise RuntimeError(f"Reference integration failed after t = {t0:.6g}: {sol.message}")
        self.state = sol.y[:, -1]
        self.steps_done += n_steps
        states = sol.sol(saved).T if saved.size else np.empty((0, self.state.size))
        return self._frames(states)


@dataclass(frozen=True)
class Reference:
    """scipy DOP853 on the continuous equations, with tolerances ``rtol`` and ``atol``."""

    rtol: float = 1e-11
    atol: float = 1e-13

    def __post_init__(self):
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not (isinstance(value, float) and 0 < value < 1):
                raise ValueError(f"Expected `{name}` to be a float in (0, 1), got {value!r}.")

    def start(self, system, dt, backend, **initial_conditions):
        state0 = system.reference_state(**initial_conditions)
        return ReferenceRun(system, state0, dt, self.rtol, self.atol)
