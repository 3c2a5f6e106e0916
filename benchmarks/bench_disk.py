"""A thin disk rolling on a plane: nhphys's kernel against Kane's method compiled by PyDy.

The problem: a uniform disk (1 kg, radius 0.1 m) started near its steady circle (lean 0.3 rad,
heading rate 4 rad/s, lean rate 0.1 rad/s: it wobbles), ``--t-final`` seconds. Side by side:

* nhphys: ``Retraction("exp")`` (order 2) and ``Retraction("exp", order=4)`` through the kernel,
  every 100th step saved;
* the same equations by Kane's method (:mod:`nhphys.validation.kane_disk`), their right-hand side
  compiled by PyDy's Cython backend (``generate_ode_function(..., generator="cython")``) and
  integrated by SciPy's DOP853 at several tolerances.

For each: wall time per simulated second (median of ``--repeats``), the largest relative energy
error over the run, and the largest error in lean, heading and contact path against a tight
reference (Kane's equations, DOP853 at rtol 1e-13). ``--accuracy`` adds the convergence table
of the issue (error against h, the step at which it falls below 1e-6); ``--long T`` the energy
error of both over a long run; ``--twins`` the steps per second of the kernel and its Python
twin for a disk, a cylinder and a wheel on a plane, a height field and a bowl.

Run ``python benchmarks/bench_disk.py [--t-final T] [--repeats R] [--accuracy] [--long T]
[--twins]``.
"""

import argparse
import statistics
import time

import numpy as np

import nhphys
from nhphys.integrators import Retraction
from nhphys.shapes import Disk
from nhphys.surfaces import Plane
from nhphys.systems import RollingBody
from nhphys.validation import kane_disk as kane

M, G, R = 1.0, 9.81, 0.1
LEAN, TURN, LEAN_RATE = 0.3, 4.0, 0.1


def initial_state():
    y = np.array([0.0, LEAN, 0.0, LEAN_RATE, kane.steady_spin(LEAN, TURN, M, G, R),
                  TURN * np.cos(LEAN), 0.0, 0.0])
    return y


def kane_energy(y):
    """Energy of Kane states (n, >= 6): the centre moves with omega x (r L.z)."""
    q2, u1, u2, u3 = y[:, 1], y[:, 3], y[:, 4], y[:, 5]
    i_d, i_a = M * R * R / 4, M * R * R / 2
    return (0.5 * M * R * R * (u1**2 + u2**2) + 0.5 * (i_d * u1**2 + i_a * u2**2 + i_d * u3**2)
            + M * G * R * np.cos(q2))


def compare(states, ref):
    """Largest difference in lean, heading and contact path (Kane states (n, 8))."""
    return np.abs(states[:, [0, 1, 6, 7]] - ref[:, [0, 1, 6, 7]]).max()


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def pydy_rhs():
    """Kane's right-hand side for (q, u) compiled with PyDy's Cython backend, plus the contact
    path rate; returns ``(f(t, y) for the 8 states, compile seconds)``."""
    import sympy as sm
    from pydy.codegen.ode_function_generators import generate_ode_function

    eq = kane.equations()
    q, u, params = eq["q"], eq["u"], eq["params"]
    t0 = time.perf_counter()
    f6 = generate_ode_function(eq["forcing_full"], list(q), list(u), list(params),
                               mass_matrix=eq["mass_matrix_full"], generator="cython")
    compile_time = time.perf_counter() - t0
    path = sm.lambdify((*q, *u, *params), eq["contact_rate"], "numpy")
    p = np.array([M, G, R])

    def f(t, y):
        return np.concatenate([f6(y[:6], t, p), np.asarray(path(*y[:6], *p), float).ravel()])

    return f, compile_time


def run(args):
    from scipy.integrate import solve_ivp

    T = args.t_final
    y0 = initial_state()
    t_eval = np.linspace(0.0, T, round(T / 0.1) + 1)
    ref = kane.reference(y0, t_eval, M, G, R, rtol=1e-13, atol=1e-15)
    system = RollingBody(nhphys.RigidBody(M, Disk.solid_inertia(M, R), Disk(R)), Plane(),
                         gravity=G)
    ic = kane.to_nhphys(y0)
    rows = []
    for label, integrator, h in [("nhphys kernel, Retraction('exp'), h=1e-3", Retraction(), 1e-3),
                                 ("nhphys kernel, Retraction('exp'), h=1e-4", Retraction(), 1e-4),
                                 ("nhphys kernel, Retraction('exp', order=4), h=1e-3",
                                  Retraction("exp", order=4), 1e-3)]:
        every = round(0.1 / h)
        wall, traj = median_time(
            lambda h=h, integrator=integrator, every=every: nhphys.simulate(
                system, T, h, integrator, backend="cython", save_every=every, **ic),
            args.repeats)
        states = kane.from_nhphys(traj.R, traj.omega, traj.contact_point)
        energy = np.abs(traj.energy / traj.energy[0] - 1).max()
        rows.append((label, wall / T, energy, compare(states, ref)))

    f, compile_time = pydy_rhs()
    for rtol in (1e-6, 1e-8, 1e-11):
        def integrate(rtol=rtol):
            return solve_ivp(f, (0.0, T), y0, method="DOP853", t_eval=t_eval, rtol=rtol,
                             atol=rtol * 1e-2)
        wall, sol = median_time(integrate, args.repeats)
        states = sol.y.T
        e = kane_energy(states)
        rows.append((f"PyDy Cython RHS + DOP853, rtol={rtol:g} ({sol.nfev} RHS calls)", wall / T,
                     np.abs(e / e[0] - 1).max(), compare(states, ref)))

    print(f"Thin disk on a plane, {T:g} s (lean 0.3, heading rate 4, lean rate 0.1); medians of "
          f"{args.repeats}; PyDy's Cython compile took {compile_time:.1f} s (not counted)\n")
    print("| method | wall time per simulated second [s] | max rel. energy error "
          "| max error vs Kane (lean, heading, path) |")
    print("|---|---:|---:|---:|")
    for label, per_second, energy, err in rows:
        print(f"| {label} | {per_second:.4f} | {energy:.1e} | {err:.1e} |")


def kernel_and_twin(args):
    """Steps per second of the kernel and its Python twin for each shape on a ground."""
    from nhphys.lie import so3
    from nhphys.shapes import Cylinder, Wheel
    from nhphys.surfaces import HeightField, Sphere

    terrain = HeightField.from_function("0.03*sin(3*x)*cos(2*y)", (-6, 6), (-6, 6), samples=241)
    wheel = nhphys.RigidBody(2.0, Wheel.solid_inertia(2.0, 0.3, 0.05), Wheel(0.3, 0.05))
    cylinder = nhphys.RigidBody(1.0, Cylinder.solid_inertia(1.0, 0.1, 0.05), Cylinder(0.1, 0.05))
    disk = nhphys.RigidBody(M, Disk.solid_inertia(M, R), Disk(R))
    upright = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    cases = [
        ("disk on a plane", RollingBody(disk, Plane(), gravity=G), kane.to_nhphys(initial_state())),
        ("cylinder on a plane (on its rim)", RollingBody(cylinder, Plane()),
         {"R0": so3.exp([1.0, 0.0, 0.0]), "omega0": [0.5, 0.0, 8.0]}),
        ("wheel on a height field", RollingBody(wheel, terrain),
         {"R0": so3.exp([np.pi / 2 - 0.1, 0, 0]), "omega0": [0.0, 0.0, -4.0],
          "ground_point": [0.0, 0.0, 0.0]}),
        ("disk inside a spherical bowl", RollingBody(disk, Sphere(1.0).as_ground("inside")),
         {"R0": upright, "omega0": [0.0, 0.0, -20.0], "ground_point": [0.3, 0.0, -0.95]}),
    ]
    print(f"\nKernel and twin, Retraction('exp'), h = 1e-3 ({args.steps} kernel steps, "
          f"{args.twin_steps} twin steps; medians of {args.repeats} and 2)\n")
    print("| system | kernel steps/s | twin steps/s | kernel / twin |")
    print("|---|---:|---:|---:|")
    for label, system, ic in cases:
        rates = []
        for backend, steps, repeats in (("cython", args.steps, args.repeats),
                                        ("python", args.twin_steps, 2)):
            times = []
            for _ in range(repeats):  # a fresh start each time: the wheel must stay on the map
                run = Retraction().start(system, 1e-3, backend, **ic)
                t0 = time.perf_counter()
                run.advance(steps, steps)
                times.append(time.perf_counter() - t0)
            rates.append(steps / statistics.median(times))
        print(f"| {label} | {rates[0]:,.0f} | {rates[1]:,.0f} | {rates[0] / rates[1]:,.0f}x |")


def long_run(args):
    """Energy over ``--long`` seconds: the symmetric step against DOP853's slow drift."""
    from scipy.integrate import solve_ivp

    T = args.long
    y0 = initial_state()
    system = RollingBody(nhphys.RigidBody(M, Disk.solid_inertia(M, R), Disk(R)), Plane(),
                         gravity=G)
    rows = []
    for label, integrator, h in [("nhphys kernel, Retraction('exp'), h=1e-3", Retraction(), 1e-3),
                                 ("nhphys kernel, Retraction('exp', order=4), h=2e-3",
                                  Retraction("exp", order=4), 2e-3)]:
        t0 = time.perf_counter()
        traj = nhphys.simulate(system, T, h, integrator, backend="cython",
                               save_every=round(1.0 / h), **kane.to_nhphys(y0))
        wall = time.perf_counter() - t0
        rel = np.abs(traj.energy / traj.energy[0] - 1)
        half = len(rel) // 2
        rows.append((label, wall / T, rel[:half].max(), rel[half:].max()))
    f, _ = pydy_rhs()
    t_eval = np.linspace(0.0, T, int(T) + 1)
    for rtol in (1e-8, 1e-11):
        t0 = time.perf_counter()
        sol = solve_ivp(f, (0.0, T), y0, method="DOP853", t_eval=t_eval, rtol=rtol,
                        atol=rtol * 1e-2)
        wall = time.perf_counter() - t0
        e = kane_energy(sol.y.T)
        rel = np.abs(e / e[0] - 1)
        half = len(rel) // 2
        rows.append((f"PyDy Cython RHS + DOP853, rtol={rtol:g}", wall / T, rel[:half].max(),
                     rel[half:].max()))
    print(f"\nEnergy over {T:g} s (one run each): largest relative error in the first and the "
          "second half\n")
    print("| method | wall time per simulated second [s] | first half | second half |")
    print("|---|---:|---:|---:|")
    for label, per_second, first, second in rows:
        print(f"| {label} | {per_second:.4f} | {first:.1e} | {second:.1e} |")


def accuracy(args):
    y0 = initial_state()
    steady = y0.copy()
    steady[3] = 0.0
    t_eval = np.linspace(0.0, 10.0, 1001)
    system = RollingBody(nhphys.RigidBody(M, Disk.solid_inertia(M, R), Disk(R)), Plane(),
                         gravity=G)
    print("\nError against Kane's method (DOP853, rtol 1e-11) over 10 s: largest difference in "
          "lean, heading [rad] and contact path [m]\n")
    print("| motion | integrator | h = 5e-3 | 2.5e-3 | 1.25e-3 | 1e-3 | slope | h for 1e-6 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    hs = [5e-3, 2.5e-3, 1.25e-3, 1e-3]
    for motion, y in (("steady", steady), ("wobbling", y0)):
        ref = kane.reference(y, t_eval, M, G, R)
        for label, integrator in (("order 2", Retraction()),
                                  ("order 4", Retraction("exp", order=4))):
            errs = []
            for h in hs:
                traj = nhphys.simulate(system, 10.0, h, integrator, save_every=round(0.01 / h),
                                       **kane.to_nhphys(y))
                errs.append(compare(kane.from_nhphys(traj.R, traj.omega, traj.contact_point),
                                    ref))
            slope, c = np.polyfit(np.log(hs), np.log(errs), 1)
            h6 = np.exp((np.log(1e-6) - c) / slope)
            print(f"| {motion} | {label} | " + " | ".join(f"{e:.2e}" for e in errs)
                  + f" | {slope:.3f} | {h6:.2g} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-final", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--accuracy", action="store_true")
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--twin-steps", type=int, default=300)
    parser.add_argument("--twins", action="store_true", help="also time kernel against twin")
    parser.add_argument("--long", type=float, default=0.0,
                        help="also compare the energy over this many seconds")
    args = parser.parse_args(argv)
    run(args)
    if args.twins:
        kernel_and_twin(args)
    if args.long:
        long_run(args)
    if args.accuracy:
        accuracy(args)


if __name__ == "__main__":
    main()
