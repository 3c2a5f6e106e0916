"""Throughput of rattleback ensembles: ``nhphys.batch.run_batch`` against a loop over simulate.

Rattlebacks (``nhphys.scenes.rattleback``) of varied initial tilt and spin, ``t_final`` (default
10 s) at ``dt`` = 1e-3, saving every 100th step. For N = 1, 10, 100 and 1,000 runs (10,000 with
``--big``, which takes about half an hour on two cores) it prints the throughput in body-steps
per second of one ``run_batch`` call on 1 and on 2 threads (kernel backend), and of a Python loop
calling ``nhphys.simulate`` once per run: on the kernel backend over ``--loop-runs`` runs (the
loop's throughput does not depend on how many runs it makes: each is a separate call) and on the
twin backend over 2 runs of ``--twin-steps`` steps (the twin costs about 5 ms per step). Each
figure is the median of ``--repeats`` interleaved repeats (1 thread, 2 threads, the loop, in
turn), measured side by side in one run; the machine's load (``os.getloadavg``) is printed
before and after, since the two cores are shared. Two more columns tell the stepping apart from
the rest: the speed-up of the kernel calls alone (the time inside ``rolling_ensemble``, without
the runs' starts, which place each body in Python as ``simulate`` does, and their fields), and
the cores the 2-thread runs really got (process CPU time over wall time: below 2 when other
processes hold a core).

Run ``python benchmarks/bench_ensemble.py [--repeats 3] [--sizes 1 10 100 1000] [--big]``.
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np

import nhphys
from nhphys import batch
from nhphys._threads import available_threads
from nhphys.batch import run_batch
from nhphys.lie import so3
from nhphys.scenes.rattleback import ground, rattleback
from nhphys.systems import RollingBody

DT = 1e-3
SAVE_EVERY = 100


def starts(n):
    """n starts of tilt 0.2 to 1 degree and spin -5 to 5 rad/s (a reversal map's grid)."""
    rng = np.random.default_rng(14)
    tilts = np.deg2rad(rng.uniform(0.2, 1.0, n))
    spins = rng.uniform(-5.0, 5.0, n)
    return [{"orientation": so3.exp([t, t, 0.0]), "omega": [0.0, 0.0, w]}
            for t, w in zip(tilts, spins)]


KERNEL_SECONDS = [0.0]  # wall time inside the groups' rolling_ensemble calls


def count_kernel_time():
    """Time every kernel call of run_batch (the stepping alone: no starts, no fields)."""
    step = batch._Group.step

    def timed_step(self, *args, **kw):
        start = time.perf_counter()
        try:
            return step(self, *args, **kw)
        finally:
            KERNEL_SECONDS[0] += time.perf_counter() - start

    batch._Group.step = timed_step


def wall(fn):
    """``(wall seconds, process CPU seconds, kernel-call seconds, result)`` of ``fn()``."""
    KERNEL_SECONDS[0] = 0.0
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return (time.perf_counter() - start, time.process_time() - cpu, KERNEL_SECONDS[0],
            result)


def loop(system, ics, t_final, backend):
    for ic in ics:
        nhphys.simulate(system, t_final, DT, backend=backend, save_every=SAVE_EVERY, **ic)


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--t-final", type=float, default=10.0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--big", action="store_true", help="also N = 10,000 (long)")
    parser.add_argument("--loop-runs", type=int, default=10)
    parser.add_argument("--twin-steps", type=int, default=20)
    args = parser.parse_args(argv)
    sizes = args.sizes + ([10_000] if args.big else [])
    steps = round(args.t_final / DT)
    system = RollingBody(rattleback, ground)
    from nhphys_ext import rolling

    print(f"machine: {platform.machine()}, Python {platform.python_version()}, numpy "
          f"{np.__version__}, cores available: {available_threads()}, kernel built with "
          f"OpenMP: {rolling.OPENMP}")
    print(f"load average (1, 5, 15 min) before: {load()}")
    print(f"rattlebacks, {args.t_final:g} s at dt = {DT:g} ({steps:,} steps a run), save every "
          f"{SAVE_EVERY}; medians of {args.repeats} interleaved repeats\n")

    count_kernel_time()
    loop_ics = starts(args.loop_runs)
    twin_ics = starts(2)
    times = {}
    loop_times, twin_times = [], []
    for _ in range(args.repeats):
        for n in sizes:
            ics = starts(n)
            for threads in (1, 2):
                *measured, result = wall(lambda ics=ics, threads=threads: run_batch(
                    system, ics, args.t_final, DT, save_every=SAVE_EVERY, backend="cython",
                    threads=threads))
                assert result.ok.all(), result.status
                times.setdefault((n, threads), []).append(measured)
            if n == sizes[0]:
                loop_times.append(wall(lambda: loop(system, loop_ics, args.t_final,
                                                    "cython"))[0])
                twin_times.append(wall(lambda: loop(system, twin_ics, args.twin_steps * DT,
                                                    "python"))[0])
    loop_rate = args.loop_runs * steps / statistics.median(loop_times)
    twin_rate = 2 * args.twin_steps / statistics.median(twin_times)

    def median(n, threads, what):
        return statistics.median(m[what] for m in times[(n, threads)])

    print("| runs N | 1 thread [body-steps/s] | 2 threads [body-steps/s] | 2 threads / 1 |"
          " kernel calls alone, 2 threads / 1 | cores the 2 threads got (CPU / wall) |"
          " 2 threads / loop over simulate (kernel) | 2 threads / loop over simulate (twin) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        one = n * steps / median(n, 1, 0)
        two = n * steps / median(n, 2, 0)
        kernel = median(n, 1, 2) / median(n, 2, 2)
        cores = median(n, 2, 1) / median(n, 2, 0)
        print(f"| {n:,} | {one:,.0f} | {two:,.0f} | {two / one:.2f}x | {kernel:.2f}x |"
              f" {cores:.2f} | {two / loop_rate:.2f}x | {two / twin_rate:,.0f}x |")
    print(f"\nPython loop over nhphys.simulate, one call per run (its throughput per run does "
          f"not depend on N):\n\n| loop | runs timed | steps a run | body-steps/s |\n"
          f"|---|---:|---:|---:|\n"
          f"| simulate, kernel backend | {args.loop_runs} | {steps:,} | {loop_rate:,.0f} |\n"
          f"| simulate, twin backend | 2 | {args.twin_steps} | {twin_rate:,.0f} |")
    print(f"\nload average (1, 5, 15 min) after: {load()}")


if __name__ == "__main__":
    main()
