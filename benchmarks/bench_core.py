"""Kernel steps per second of every system and integrator, optionally side by side with another
installation of nhphys (an earlier version, to check that a change made no kernel slower).

Each measurement runs in a fresh process: the case's system is built, one short run warms it
up, then ``nhphys.simulate(..., backend="cython")`` is timed over a fixed number of steps
(saving only the last frame). With ``--compare PYTHON`` the same cases run under that
interpreter too, interleaved with this one repeat by repeat, so both see the same machine load;
the table gives the median over repeats of each and their ratio.

Run ``python benchmarks/bench_core.py [--repeats N] [--compare /path/to/other/python]``.
The cases use only the initial-condition names every version accepts.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

CASES = {
    # name: (steps, build) -- build() -> (system, integrator, dt, initial conditions)
    "Suslov, Retraction('exp')": 200_000,
    "Suslov, Retraction('cayley')": 200_000,
    "Suslov, Retraction('exp', order=4)": 100_000,
    "sleigh, Retraction('exp') on SE(2)": 200_000,
    "sleigh, Newmark(1/4, 1/4, 1/2)": 100_000,
    "sleigh, DLA('midpoint')": 100_000,
    "inclined knife edge, Newmark(0, 0, 0)": 200_000,
    "vertical disk, Newmark(0, 0, 1/2)": 100_000,
    "contact oscillator, Newmark(1/4, 1/4, 1/2)": 100_000,
    "ball in a bowl, Retraction('exp')": 20_000,
    "rattleback, Retraction('exp')": 20_000,
    "rattleback, Retraction('exp', order=4)": 10_000,
    "thin disk on a plane, Retraction('exp')": 20_000,
}


def build(name):
    """``(system, integrator, dt, initial conditions)`` of a case."""
    import numpy as np

    import nhphys
    from nhphys.integrators import DLA, Newmark, Retraction
    from nhphys.lie import so3
    from nhphys.surfaces import Ellipsoid, Plane, Sphere
    from nhphys.systems import (
        ContactOscillator,
        KnifeEdge,
        RollingBody,
        Suslov,
        VerticalDisk,
    )

    if name.startswith("Suslov"):
        system = Suslov([[1, 0, 0.2], [0, 2, 0.3], [0.2, 0.3, 3]], axis=[0, 0, 1])
        integrator = {"Suslov, Retraction('exp')": Retraction("exp"),
                      "Suslov, Retraction('cayley')": Retraction("cayley"),
                      "Suslov, Retraction('exp', order=4)": Retraction("exp", order=4)}[name]
        return system, integrator, 0.01, dict(omega0=[1.0, 0.5, 0.0])
    if name.startswith("sleigh"):
        system = KnifeEdge(mass=1.0, inertia=0.5, offset=0.5)
        integrator = {"sleigh, Retraction('exp') on SE(2)": Retraction("exp"),
                      "sleigh, Newmark(1/4, 1/4, 1/2)": Newmark(0.25, 0.25, 0.5),
                      "sleigh, DLA('midpoint')": DLA("midpoint")}[name]
        return system, integrator, 1e-3, dict(velocity0=0.1, omega0=1.0)
    if name.startswith("inclined"):
        system = KnifeEdge(mass=1.0, inertia=0.5, offset=0.0, incline=0.3)
        return system, Newmark(0.0, 0.0, 0.0), 1e-3, dict(velocity0=0.5, omega0=1.0)
    if name.startswith("vertical disk"):
        system = VerticalDisk(mass=1.0, radius=0.5, inertia_diametral=0.0625,
                              inertia_axial=0.125)
        return system, Newmark(0.0, 0.0, 0.5), 1e-3, dict(omega0=0.7, spin0=2.0)
    if name.startswith("contact oscillator"):
        system = ContactOscillator(epsilon=0.1)
        return system, Newmark(0.25, 0.25, 0.5), 1e-2, dict(q0=[1.0, 0.0, 0.0],
                                                           v0=[0.0, 1.0, 0.0])
    if name.startswith("ball in a bowl"):
        ball = nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1))
        system = RollingBody(ball, Sphere(1.0).as_ground("inside"))
        return system, Retraction("exp"), 1e-3, dict(omega0=[0.0, 3.0, 0.0],
                                                    ground_point=[0.2, 0.0, -0.98])
    if name.startswith("rattleback"):
        inertia = 1e-4 * np.array([[2, -0.2, 0], [-0.2, 16, 0], [0, 0, 17]])
        body = nhphys.RigidBody(1.0, inertia, Ellipsoid([0.2, 0.03, 0.02]), com=[0, 0, -0.01])
        system = RollingBody(body, Plane())
        order = 4 if "order=4" in name else 2
        tilt = np.deg2rad(0.5)
        return system, Retraction("exp", order=order), 1e-3, dict(
            R0=so3.exp([tilt, tilt, 0.0]), omega0=[0.0, 0.0, 5.0])
    if name.startswith("thin disk"):
        from nhphys.shapes import Disk

        radius, mass = 0.1, 1.0
        body = nhphys.RigidBody(mass, mass * radius**2 * np.array([0.25, 0.25, 0.5]),
                                Disk(radius))
        system = RollingBody(body, Plane())
        R0 = so3.exp([np.pi / 2 - 0.3, 0.0, 0.0])
        return system, Retraction("exp"), 1e-3, dict(R0=R0, omega0=[0.0, 0.0, 10.0])
    raise KeyError(name)


def worker(name, steps, inner):
    """Median steps per second of ``inner`` timed runs of ``steps`` steps (a JSON line)."""
    import nhphys

    system, integrator, dt, ic = build(name)
    nhphys.simulate(system, 100 * dt, dt, integrator, backend="cython", progress=False, **ic)
    rates = []
    for _ in range(inner):
        start = time.perf_counter()
        nhphys.simulate(system, steps * dt, dt, integrator, backend="cython", save_every=steps,
                        progress=False, **ic)
        rates.append(steps / (time.perf_counter() - start))
    print(json.dumps({"rate": statistics.median(rates), "version": nhphys.__file__}))


def measure(python, name, steps, inner):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run(
        [python, os.path.abspath(__file__), "--worker", name, "--steps", str(steps),
         "--inner", str(inner)],
        capture_output=True, text=True, cwd=os.path.expanduser("~"), env=env,
    )
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    return json.loads(out.stdout.strip().splitlines()[-1])["rate"], None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--inner", type=int, default=3, help="timed runs per process")
    parser.add_argument("--compare", metavar="PYTHON", help="another interpreter with nhphys")
    parser.add_argument("--cases", nargs="*", help="a subset of the case names (substrings)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.steps, args.inner)
        return 0
    names = [n for n in CASES if not args.cases or any(c in n for c in args.cases)]
    pythons = [sys.executable] + ([args.compare] if args.compare else [])
    rates = {(n, p): [] for n in names for p in pythons}
    errors = {}
    for r in range(args.repeats):
        for name in names:
            for python in (pythons if r % 2 == 0 else pythons[::-1]):  # alternate who goes first
                rate, err = measure(python, name, CASES[name], args.inner)
                if rate is None:
                    errors[(name, python)] = err
                else:
                    rates[(name, python)].append(rate)
        print(f"repeat {r + 1}/{args.repeats} done", file=sys.stderr)
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; {args.repeats} repeats x {args.inner} runs, "
          "median steps/s of the kernel\n")
    if args.compare:
        print(f"| case | this version | compared ({args.compare}) | this / compared |")
        print("|---|---:|---:|---:|")
    else:
        print("| case | steps/s |")
        print("|---|---:|")
    for name in names:
        cells = []
        for python in pythons:
            got = rates[(name, python)]
            cells.append(statistics.median(got) if got else None)
        text = [f"{c:,.0f}" if c else f"failed: {errors.get((name, p))}"
                for c, p in zip(cells, pythons)]
        if args.compare:
            ratio = f"{cells[0] / cells[1]:.2f}" if all(cells) else "-"
            print(f"| {name} | {text[0]} | {text[1]} | {ratio} |")
        else:
            print(f"| {name} | {text[0]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
