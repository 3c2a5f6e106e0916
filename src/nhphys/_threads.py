"""How many threads a study may use: the one place that counts this process's cores."""

import numbers
import os


def available_threads():
    """The cores this process may run on (at least 1): its CPU affinity where the platform
    reports one (a container or ``taskset`` may allow fewer than the machine has)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_threads(threads):
    """``threads`` as a checked int; None means every available core.

    Raises
    ------
    ValueError
        If ``threads`` is not an integer >= 1 (a bool is refused too).
    """
    if threads is None:
        return available_threads()
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"Expected `threads` to be an integer >= 1 or None, got {threads!r}.")
    return int(threads)
