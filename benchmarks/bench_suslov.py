"""Speed of the Suslov integrators: Cython kernel, its Python twin, and the scipy reference.

Prints a Markdown table (medians over repeats, measured side by side in one run):

* steps per second of ``Retraction`` (exp, Cayley; order 2 and the fourth-order composition)
  and ``LiePoisson`` through the kernel and through the twin, and their ratio;
* wall time of the 300-s non-principal run (h = 0.01 s, 30,000 steps) through the kernel and
  through ``Reference`` (DOP853, rtol 1e-10), with the energy error and constraint residual of
  each, and their ratio.

Run ``python benchmarks/bench_suslov.py [--repeats N]``.
"""

import argparse
import platform
import statistics
import time

import numpy as np

import nhphys
from nhphys.integrators import LiePoisson, Reference, Retraction
from nhphys.systems import Suslov

NON_PRINCIPAL = np.array([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]])
OMEGA0 = [1.0, 0.5, 0.0]


def timed(fn, repeats):
    """Median wall time of ``fn()`` over ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def energy_error(traj):
    return float(np.abs(traj.energy / traj.energy[0] - 1).max())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    body = Suslov(NON_PRINCIPAL, axis=[0, 0, 1])

    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
          f"Python {platform.python_version()}, numpy {np.__version__}\n")
    print("| integrator | kernel steps/s | twin steps/s | kernel / twin |")
    print("|---|---:|---:|---:|")
    for integ in (Retraction("exp"), Retraction("cayley"), Retraction("exp", order=4),
                  Retraction("cayley", order=4), LiePoisson("exp")):
        n_fast, n_slow = (300_000, 3_000) if integ.order == 2 else (100_000, 1_000)
        t_fast, _ = timed(lambda: nhphys.simulate(body, n_fast * 0.01, 0.01, integ,
                                                  backend="cython", omega0=OMEGA0), args.repeats)
        t_slow, _ = timed(lambda: nhphys.simulate(body, n_slow * 0.01, 0.01, integ,
                                                  backend="python", omega0=OMEGA0),
                          max(1, args.repeats // 2))
        fast, slow = n_fast / t_fast, n_slow / t_slow
        label = f"{type(integ).__name__}({integ.map!r}" + (", order=4)" if integ.order == 4
                                                           else ")")
        print(f"| {label} | {fast:,.0f} | {slow:,.0f} | {fast / slow:,.0f}x |")

    print("\n300 s of the non-principal Suslov problem (h = 0.01 s, every step saved):\n")
    print("| method | wall time [s] | max rel. energy error | max constraint residual |"
          " time / kernel |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    for label, integ, backend in (
        ("Retraction('exp'), kernel", Retraction("exp"), "cython"),
        ("Retraction('cayley'), kernel", Retraction("cayley"), "cython"),
        ("Reference(rtol=1e-10)", Reference(rtol=1e-10, atol=1e-12), "auto"),
    ):
        repeats = args.repeats if backend == "cython" else max(1, args.repeats // 2)
        wall, traj = timed(lambda: nhphys.simulate(body, 300.0, 0.01, integ, backend=backend,
                                                   omega0=OMEGA0), repeats)
        rows.append((label, wall, energy_error(traj), float(traj.constraint_residual.max())))
    base = rows[0][1]
    for label, wall, e, c in rows:
        print(f"| {label} | {wall:.4f} | {e:.1e} | {c:.1e} | {wall / base:,.1f}x |")


if __name__ == "__main__":
    main()
