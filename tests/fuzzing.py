"""What the fuzz tests share: the number of examples, the hypothesis settings, a hang guard, and
a count of what each target's examples gave.

``NHPHYS_FUZZ_EXAMPLES`` sets the examples per target (default 100, the CI size); with
``NHPHYS_FUZZ_REPORT=path`` each target appends one JSON line of its outcomes to ``path``.
"""

import contextlib
import json
import os
import signal
import time
from collections import Counter

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("NHPHYS_FUZZ_EXAMPLES", "100"))
HANG_SECONDS = 20.0  # no example may take longer: a hang fails the test instead of the suite
FUZZ = settings(max_examples=EXAMPLES, deadline=10_000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


class Hang(Exception):
    """An example ran past HANG_SECONDS."""


@contextlib.contextmanager
def hang_guard(seconds=HANG_SECONDS):
    """Raise :class:`Hang` in the body if it runs longer than ``seconds`` (SIGALRM)."""
    def alarm(signum, frame):
        raise Hang(f"an example took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Outcomes:
    """Counts of what each example of a target gave; one JSON line to ``NHPHYS_FUZZ_REPORT``
    when the target ends (:meth:`report`)."""

    def __init__(self, target):
        self.target, self.counts, self.slowest = target, Counter(), 0.0
        self.first = self.last = None

    @contextlib.contextmanager
    def example(self):
        start = time.perf_counter()
        self.first = start if self.first is None else self.first
        with hang_guard():
            yield
        self.last = time.perf_counter()
        self.slowest = max(self.slowest, self.last - start)

    def report(self):
        path = os.environ.get("NHPHYS_FUZZ_REPORT")
        if path:
            with open(path, "a") as f:
                f.write(json.dumps({"target": self.target,
                                    "examples": sum(self.counts.values()),
                                    "outcomes": dict(self.counts),
                                    "seconds": round((self.last or 0) - (self.first or 0), 1),
                                    "slowest_example_s": round(self.slowest, 3)}) + "\n")
