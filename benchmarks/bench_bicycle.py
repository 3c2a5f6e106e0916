"""The benchmark bicycle: cost of a step, and work against precision beside scipy's DOP853.

Two tables, measured side by side in one run:

1. **One step.** Microseconds per step of ``DLA()`` on the kernel (``nhphys_ext.multibody``)
   and on its twin, and of the order-4 composition on the kernel, over a run at 5 m/s (the
   kernel over ``--steps`` steps, the twin over 100).
2. **Work against precision.** The same motion (5 m/s, lean 0.05 rad, steer rate 0.5 rad/s,
   ``--t-final`` seconds) by ``DLA()`` and its order-4 composition at several steps, and by
   scipy's ``solve_ivp(method="DOP853")`` on the model's continuous field (numpy, the field
   ``Reference`` integrates) at several tolerances. The error is the largest difference of roll
   and steer at the end from a DOP853 run at ``rtol = 1e-13``; the time is the median of
   ``--repeats`` interleaved repeats. DOP853's field takes about 0.2 ms a call, which is what
   a user of the model's equations in scipy gets.

Run ``python benchmarks/bench_bicycle.py [--repeats 5] [--t-final 5] [--steps 20000]``.
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np

import nhphys
from nhphys.integrators import DLA, Composition
from nhphys.integrators.coefficients import composition
from nhphys.systems import Bicycle
from nhphys.systems.bicycle import ROLL, STEER

START = {"speed": 5.0, "roll": 0.05, "steer_rate": 0.5}
ORDER4 = Composition([(DLA(), w) for w in composition(4)])


def timed(function, repeats):
    times, result = [], None
    for _ in range(repeats):
        begin = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - begin)
    return statistics.median(times), result


def dop853(bike, t_final, rtol):
    from scipy.integrate import solve_ivp

    y0 = bike.reference_state(**START)
    sol = solve_ivp(bike.reference_rhs, (0.0, t_final), y0, method="DOP853", rtol=rtol,
                    atol=rtol * 1e-2)
    return sol.y[:, -1], sol.nfev


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--t-final", type=float, default=5.0)
    parser.add_argument("--steps", type=int, default=20000)
    args = parser.parse_args(argv)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}")
    bike = Bicycle()

    print("\n## One step (5 m/s, h = 1e-3)\n")
    print("| method | backend | us per step |")
    print("|---|---|---:|")
    rows = [("DLA()", DLA(), "cython", args.steps), ("DLA()", DLA(), "python", 100),
            ("order-4 composition", ORDER4, "cython", args.steps)]
    for name, integrator, backend, n in rows:
        seconds, _ = timed(lambda: nhphys.simulate(
            bike, n * 1e-3, 1e-3, integrator=integrator, backend=backend, save_every=n,
            progress=False, **START), args.repeats)
        print(f"| {name} | {backend} | {1e6 * seconds / n:,.1f} |")

    print(f"\n## Work against precision ({args.t_final:g} s; error: roll and steer at the end)\n")
    exact, _ = dop853(bike, args.t_final, 1e-13)
    exact = exact[[ROLL, STEER]]
    print("| method | setting | error | ms | field calls |")
    print("|---|---|---:|---:|---:|")
    cases = [("DLA()", DLA(), h) for h in (1e-2, 5e-3, 2e-3, 1e-3)]
    cases += [("order-4 composition", ORDER4, h) for h in (4e-2, 2e-2, 1e-2, 5e-3)]
    for name, integrator, h in cases:
        seconds, traj = timed(lambda: nhphys.simulate(
            bike, args.t_final, h, integrator=integrator, backend="cython",
            save_every=round(args.t_final / h), progress=False, **START), args.repeats)
        error = np.max(np.abs(traj.q[-1, [ROLL, STEER]] - exact))
        print(f"| {name} | h = {h:g} | {error:.1e} | {1e3 * seconds:,.1f} | |")
    for rtol in (1e-6, 1e-8, 1e-10):
        seconds, (y, calls) = timed(lambda: dop853(bike, args.t_final, rtol), args.repeats)
        error = np.max(np.abs(y[[ROLL, STEER]] - exact))
        print(f"| scipy DOP853 on the field | rtol = {rtol:g} | {error:.1e} | "
              f"{1e3 * seconds:,.1f} | {calls:,} |")
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
