"""The cost of one call of the rolling field (``Adaptive``'s right-hand side) on a moving
ground: the compiled field called from Python and inside its own DOP853 loop, its numpy twin,
and ``RollingBody.reference_rhs`` (what ``Reference`` calls), measured side by side in one
process.

The bodies are those of the moving-ground tests of ``tests/test_adaptive_rolling.py``: the
``ellipsoid_plane`` scene's ellipsoid on a wobbling turntable, on a floor moving at
(0.3, -0.2, 0) m/s with drag and rolling resistance, and on top of a torus's tube turning at
0.8 rad/s; and, for comparison, the same ellipsoid on a plane at rest. Each cost is the median
of many calls at the placed start (microseconds); "in loop" is the wall time of a 2-s
``RollingField.integrate`` at rtol 1e-10 divided by its field calls (the loop's own work
included).

Run ``python benchmarks/bench_moving_field.py [--calls N]``.
"""

import argparse
import importlib
import platform
import statistics
import time

import numpy as np

from nhphys import conditions, forces
from nhphys.integrators.adaptive import field_of
from nhphys.surfaces import Plane, Torus
from nhphys.systems import RollingBody


def cases():
    """(name, system, start keywords) of the bodies measured."""
    entry = importlib.import_module("nhphys.scenes.ellipsoid_plane").scene.bodies[0]
    body, start = entry.system.body, conditions.start_arguments(entry.system, entry.conditions)
    on_torus = {"R0": start["R0"], "omega0": start["omega0"], "ground_point": [1.0, 0.0, 0.4]}
    return [
        ("plane at rest", RollingBody(body, Plane()), start),
        ("wobbling turntable", RollingBody(body, Plane().moving(
            rate=1.5, axis=[0.15, -0.1, 1.0], center=[0.05, 0.0, 0.0])), start),
        ("moving floor, drag, rolling resistance", RollingBody(
            body, Plane().moving(velocity=[0.3, -0.2, 0.0]),
            forces=[forces.LinearDrag(0.3), forces.RollingResistance(0.002)]), start),
        ("turning torus", RollingBody(body, Torus(1.0, 0.4).moving(rate=0.8), gravity=9.81),
         on_torus),
    ]


def median_call(function, y, calls):
    """Median wall time (us) of ``function(0.3, y)`` over ``calls`` calls."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        function(0.3, y)
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def in_loop(field, y):
    """Wall time per field call (us) of a 2-s compiled DOP853 run at rtol 1e-10."""
    field.integrate(y.copy(), 0.0, 0.1, 1e-10, 1e-12, 0.0, 10**6)  # the loop's tables, once
    field.evaluations = 0
    state = y.copy()
    start = time.perf_counter()
    field.integrate(state, 0.0, 2.0, 1e-10, 1e-12, 0.0, 10**6)
    return 1e6 * (time.perf_counter() - start) / field.evaluations


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000,
                        help="calls of the compiled field (a tenth of them for the numpy ones)")
    args = parser.parse_args(argv)
    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print()
    print("| ground | compiled field [us] | in its loop [us] | twin [us] | reference_rhs [us] "
          "| reference_rhs / compiled |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, system, start in cases():
        y = np.asarray(system.reference_state(**start), dtype=float)
        compiled, _ = field_of(system, "cython")
        twin, _ = field_of(system, "python")
        fast = median_call(compiled, y, args.calls)
        loop = in_loop(compiled, y)
        slow = median_call(twin, y, args.calls // 10)
        reference = median_call(system.reference_rhs, y, args.calls // 10)
        print(f"| {name} | {fast:.2f} | {loop:.2f} | {slow:.0f} | {reference:.0f} "
              f"| {reference / fast:.0f} |")


if __name__ == "__main__":
    main()
