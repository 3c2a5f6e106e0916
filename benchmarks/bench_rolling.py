"""Speed of the rolling-body integrator: Cython kernel, its Python twin, and the eq.-29 reference.

Prints Markdown tables (medians over repeats, measured side by side in one run):

* steps per second of ``Retraction`` through the kernel and through the twin, for an ellipsoid
  on a plane, a ball on a torus and a ball on a height-field terrain;
* 10 s of an ellipsoid rolling on a plane: wall time and error against a tight reference
  (DOP853 at rtol 1e-13) for the kernel at second and fourth order, and for ``Reference`` at
  rtol 1e-10.

Run ``python benchmarks/bench_rolling.py [--repeats N]``.
"""

import argparse
import platform
import statistics
import time

import numpy as np

import nhphys
from nhphys.integrators import Reference, Retraction
from nhphys.lie import so3
from nhphys.surfaces import Ellipsoid, HeightField, Plane, Sphere, Torus
from nhphys.systems import RollingBody


def timed(fn, repeats):
    """Median wall time of ``fn()`` over ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def ellipsoid(axes=(0.1, 0.08, 0.06), mass=1.0):
    a, b, c = axes
    inertia = mass / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return nhphys.RigidBody(mass, inertia, Ellipsoid(axes))


def ball(radius=0.1, mass=1.0):
    return nhphys.RigidBody(mass, [0.4 * mass * radius**2] * 3, Sphere(radius))


CASES = {
    "ellipsoid on a plane": (
        lambda: RollingBody(ellipsoid(), Plane()),
        dict(R0=so3.exp([0.2, 0.1, 0.0]), omega0=[1.0, 0.5, 2.0])),
    "ball inside a torus tube": (
        lambda: RollingBody(ball(), Torus(1.0, 0.4).as_ground("inside")),
        dict(omega0=[2.0, 0.5, 0.3], ground_point=[1.1, 0.0, -0.38])),
    "ball on a height field": (
        lambda: RollingBody(ball(), HeightField.from_function(
            "0.05*sin(2*x)*cos(2*y)", (-4, 4), (-4, 4), samples=129)),
        dict(omega0=[1.0, 3.0, 0.0], ground_point=[0.0, 0.0, 0.0])),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    slow_repeats = max(1, args.repeats // 2)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}\n")

    print("| system (h = 1e-3, Retraction('exp')) | kernel steps/s | twin steps/s |"
          " kernel / twin |")
    print("|---|---:|---:|---:|")
    for label, (make, ic) in CASES.items():
        system = make()
        n_fast, n_slow = 20_000, 300
        t_fast, _ = timed(lambda: nhphys.simulate(system, n_fast * 1e-3, 1e-3, backend="cython",
                                                  save_every=100, **ic), args.repeats)
        t_slow, _ = timed(lambda: nhphys.simulate(system, n_slow * 1e-3, 1e-3, backend="python",
                                                  save_every=100, **ic), slow_repeats)
        fast, slow = n_fast / t_fast, n_slow / t_slow
        print(f"| {label} | {fast:,.0f} | {slow:,.0f} | {fast / slow:,.0f}x |")

    system, ic = CASES["ellipsoid on a plane"][0](), CASES["ellipsoid on a plane"][1]
    truth = nhphys.simulate(system, 10.0, 0.1, Reference(rtol=1e-13, atol=1e-15), **ic)
    print("\n10 s of the ellipsoid on a plane, error against DOP853 at rtol 1e-13:\n")
    print("| method | wall time [s] | orientation error | contact-point error |"
          " max constraint residual | time / kernel (order 2) |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = []
    for label, integ, dt, backend, repeats in (
        ("Retraction('exp'), h = 1e-3", Retraction("exp"), 1e-3, "cython", args.repeats),
        ("Retraction('exp', order=4), h = 1e-3", Retraction("exp", order=4), 1e-3, "cython",
         args.repeats),
        ("Reference(rtol=1e-10)", Reference(rtol=1e-10, atol=1e-12), 0.1, "auto", slow_repeats),
    ):
        wall, traj = timed(lambda: nhphys.simulate(system, 10.0, dt, integ, backend=backend,
                                                   save_every=round(0.1 / dt), **ic), repeats)
        rows.append((label, wall, np.abs(traj.R - truth.R).max(),
                     np.abs(traj.contact_point - truth.contact_point).max(),
                     traj.constraint_residual.max()))
    base = rows[0][1]
    for label, wall, e_r, e_x, res in rows:
        print(f"| {label} | {wall:.3f} | {e_r:.1e} | {e_x:.1e} | {res:.1e} |"
              f" {wall / base:,.1f}x |")


if __name__ == "__main__":
    main()
