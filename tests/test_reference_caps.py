"""The Reference integrator's caps: a hard problem ends with an error naming the cap, with the
frames of the chunks finished before, instead of running for hours with growing memory."""

import sys
import time

import numpy as np
import pytest

import nhphys
from nhphys.integrators import Reference
from nhphys.integrators.reference import ReferenceLimitError

SUSLOV = nhphys.systems.Suslov([1.0, 2.0, 3.0], [0, 0, 1])


def test_defaults_are_documented_and_checked():
    ref = Reference()
    assert (ref.max_steps, ref.max_seconds) == (500_000, 600.0)
    assert Reference(1e-12, 1e-14).max_steps == 500_000  # positional tolerances still work
    assert Reference(max_steps=None, max_seconds=None).max_steps is None
    for bad in (0, -1, 2.5, True, "10"):
        with pytest.raises(ValueError, match="max_steps"):
            Reference(max_steps=bad)
    for bad in (0, -1.0, float("inf"), float("nan"), "1"):
        with pytest.raises(ValueError, match="max_seconds"):
            Reference(max_seconds=bad)


def test_step_cap_stops_the_run_and_keeps_the_finished_chunks(backend, monkeypatch):
    simulate_module = sys.modules["nhphys.simulate"]  # the module, not the function
    monkeypatch.setattr(simulate_module, "CHUNK_STEPS", 100)  # a chunk is 1 s of the run
    uncapped = nhphys.simulate(SUSLOV, 3.0, 0.01, Reference(), backend=backend,
                               omega=[1.0, 1.0, 0.0])
    with pytest.raises(ReferenceLimitError, match=r"more than max_steps = 12 solver steps.*"
                                                  r"Reference\(max_steps=\.\.\.\)") as err:
        nhphys.simulate(SUSLOV, 3.0, 0.01, Reference(max_steps=12), backend=backend,
                        omega=[1.0, 1.0, 0.0])
    error = err.value
    assert isinstance(error, nhphys.NewtonError) and error.cap == "max_steps"
    kept = error.trajectory
    assert 0 < error.time < 3.0 and kept.t[-1] <= error.time
    assert len(kept) > 1 and len(kept) % 100 == 1  # whole chunks, from t = 0
    assert np.array_equal(kept.omega, uncapped.omega[:len(kept)])  # the same frames
    assert kept.meta["failure"]["message"].startswith("Reference stopped")


def test_wall_time_cap_stops_a_slow_run(backend):
    def slow_rhs(t, state, rhs=SUSLOV.reference_rhs):
        time.sleep(0.002)  # a right-hand side that makes the solving slow
        return rhs(t, state)

    system = nhphys.systems.Suslov([1.0, 2.0, 3.0], [0, 0, 1])
    system.reference_rhs = slow_rhs
    start = time.perf_counter()
    with pytest.raises(ReferenceLimitError, match=r"more than max_seconds = 0.2 s") as err:
        nhphys.simulate(system, 1000.0, 0.01, Reference(max_seconds=0.2), backend=backend,
                        omega=[1.0, 1.0, 0.0])
    assert time.perf_counter() - start < 5.0
    assert err.value.cap == "max_seconds" and err.value.trajectory is not None
