"""Speed of the surface kernels against their Python twins.

For every built-in surface, times ``point``, ``jacobian``, ``hessian`` and ``weingarten`` on
``--points`` random chart coordinates (default 10^6) through the compiled kernel, and on
``--twin-points`` coordinates (default 10^4) through the twin, whose per-point cost is constant,
so its time for ``--points`` is the measured time scaled linearly (``--twin-points`` equal to
``--points`` measures it outright). Prints a Markdown table of medians over repeats, measured
side by side in one run.

Run ``python benchmarks/bench_surfaces.py [--points N] [--twin-points M] [--repeats R]``.
"""

import argparse
import platform
import statistics
import time
from functools import partial

import numpy as np

from nhphys.surfaces import (
    Ellipsoid,
    HeightField,
    Paraboloid,
    Plane,
    Sphere,
    SurfaceOfRevolution,
    Torus,
)

METHODS = ("point", "jacobian", "hessian", "weingarten")


def surfaces():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    R = q * np.linalg.det(q)
    return {
        "Plane": Plane([0.1, 0.2, 0.3], [0.2, 0.1, 1.0]),
        "Sphere": Sphere(0.7, [0.1, 0.2, 0.3], R),
        "Ellipsoid": Ellipsoid([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], R),
        "Torus": Torus(2.0, 0.5, [0.1, 0.2, 0.3], R),
        "Paraboloid": Paraboloid(1.0, 2.0, "hyperbolic"),
        "SurfaceOfRevolution": SurfaceOfRevolution("1.5 + 0.3*sin(2*t)", "t", (-2.0, 2.0)),
        "HeightField": HeightField.from_function("0.3*sin(x)*cos(y)", (-3, 3), (-3, 3),
                                                 samples=129),
    }


def coordinates(surface, rng, n):
    chart = rng.integers(0, surface.n_charts, n).astype(np.intp)
    (u0, u1), (v0, v1) = surface._display_box()
    if isinstance(surface, Ellipsoid):
        (u0, u1), (v0, v1) = (-1.0, 1.0), (-1.0, 1.0)
    uv = np.stack([rng.uniform(u0, u1, n), rng.uniform(v0, v1, n)], -1)
    return chart, np.ascontiguousarray(uv)


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--twin-points", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(1)

    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
          f"Python {platform.python_version()}, numpy {np.__version__}\n")
    print(f"| surface | method | kernel, {args.points:,} pts [s] | twin, {args.points:,} pts [s] "
          "| kernel / twin |")
    print("|---|---|---:|---:|---:|")
    slowest = np.inf
    for name, s in surfaces().items():
        kernel = s.with_backend("cython").kernel
        twin = s.with_backend("python").kernel
        chart, uv = coordinates(s, rng, args.points)
        tchart, tuv = chart[: args.twin_points], uv[: args.twin_points]
        total_k = total_t = 0.0
        for method in METHODS:
            tk = median_time(partial(getattr(kernel, method), chart, uv), args.repeats)
            tt = median_time(partial(getattr(twin, method), tchart, tuv),
                             max(1, args.repeats // 2))
            tt *= args.points / len(tuv)
            total_k += tk
            total_t += tt
            print(f"| {name} | {method} | {tk:.4f} | {tt:.1f} | {tt / tk:,.0f}x |")
        slowest = min(slowest, total_t / total_k)
        print(f"| {name} | all four | {total_k:.4f} | {total_t:.1f} | "
              f"{total_t / total_k:,.0f}x |")
    print(f"\nsmallest speed-up over the four methods together: {slowest:,.0f}x")


if __name__ == "__main__":
    main()
