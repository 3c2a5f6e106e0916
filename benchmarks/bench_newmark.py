"""Speed of the Newmark / DLA / composition kernel and of the SE(2) retraction kernel against
their Python twins, per step, and a long contact-oscillator run against the reference.

Each case starts a run through the public interface (``integrator.start(system, dt, backend,
**initial_conditions)``) and times one ``run.advance(steps, steps)``: the whole time loop in
one kernel call, nothing saved but the last state. The kernel takes ``--steps`` steps, the twin
``--twin-steps``; the table shows medians over ``--repeats`` runs (2 for the twin) in steps
per second and their ratio.

``--against PYTHON`` compares the kernels with another installation of nhphys instead (e.g. the
previous main in its own virtual environment): one worker process per interpreter, taking
turns run by run on each case, ``--repeats`` runs each, so that the load of a shared machine
falls on both alike; the table shows both medians and their ratio. Only the public interface is used, so the
script runs unchanged on older versions (cases the other version lacks are left out).

Run ``python benchmarks/bench_newmark.py [--steps N] [--twin-steps N] [--repeats R]
[--against /path/to/other/python]``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# CPU time counts every thread of the process: keep BLAS from spinning up worker threads that
# busy-wait after numpy's linear algebra while the kernel is timed
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # after the thread settings

import nhphys
from nhphys import _backend
from nhphys.integrators import DLA, Composition, Newmark, Reference, Retraction
from nhphys.systems import (
    ContactOscillator,
    KnifeEdge,
    NonReversibleContactOscillator,
    VerticalDisk,
)

OSC_IC = {"q0": [1.0, 1.0, 0.5], "v0": [-0.5, 0.0, 0.5]}
EDGE_IC = {"velocity0": 0.3, "omega0": 1.5}
DISK_IC = {"omega0": 1.3, "spin0": 2.0}
SLEIGH_IC = {"velocity0": 0.1, "omega0": 1.0}
ROTOR_IC = {"velocity": 0.1, "turning_rate": 1.0, "spin": 2.0}
H = 0.01


def cases():
    """``(system label, integrator label, system, initial conditions, integrator)`` rows."""
    rows = [
        ("ContactOscillator", "Newmark(0,0,0) explicit", ContactOscillator(0.1), OSC_IC,
         Newmark(0.0, 0.0, 0.0)),
        ("ContactOscillator", "Newmark(0,0,1/2)", ContactOscillator(0.1), OSC_IC,
         Newmark(0.0, 0.0, 0.5)),
        ("ContactOscillator", "Newmark(1/4,1/4,1/2,'average')", ContactOscillator(0.1), OSC_IC,
         Newmark(0.25, 0.25, 0.5, "average")),
        ("ContactOscillator", "F001(h/2) o F000(h/2)", ContactOscillator(0.1), OSC_IC,
         Composition.symmetric(Newmark(0.0, 0.0, 0.0))),
        ("NonReversibleContactOscillator", "DLA('midpoint')",
         NonReversibleContactOscillator(0.1), OSC_IC, DLA("midpoint")),
        ("KnifeEdge, incline 0.4", "Newmark(0,0,1/2)", KnifeEdge(2.0, 0.3, 0.2, incline=0.4),
         EDGE_IC, Newmark(0.0, 0.0, 0.5)),
        ("KnifeEdge, incline 0.4", "DLA('trapezoidal')", KnifeEdge(2.0, 0.3, 0.2, incline=0.4),
         EDGE_IC, DLA("trapezoidal")),
        ("VerticalDisk", "Newmark(0,0,1/2)", VerticalDisk(1.0, 0.5, 0.125, 0.0625), DISK_IC,
         Newmark(0.0, 0.0, 0.5)),
    ]
    for map_ in ("exp", "cayley"):
        rows.append(("KnifeEdge (sleigh)", f"Retraction('{map_}')", KnifeEdge(1.0, 0.5, 0.5),
                     SLEIGH_IC, Retraction(map_)))
    for map_ in ("exp", "cayley"):
        rows.append(("VerticalDisk", f"Retraction('{map_}')",
                     VerticalDisk(1.0, 0.5, 0.125, 0.0625), DISK_IC, Retraction(map_)))
    RotorSleigh = getattr(nhphys.systems, "RotorSleigh", None)
    if RotorSleigh is not None:  # not in versions before it was added
        rotor = RotorSleigh(mass=1.0, inertia=0.4, rotor_inertia=0.1, offset=0.5)
        for label, method in [("Retraction('exp')", Retraction("exp")),
                              ("Newmark(0,0,1/2)", Newmark(0.0, 0.0, 0.5)),
                              ("DLA('midpoint')", DLA("midpoint"))]:
            rows.append(("RotorSleigh", label, rotor, ROTOR_IC, method))
    return rows


def rate(system, ic, method, backend, steps, repeats):
    """Median steps per second of one ``advance(steps, steps)`` of a fresh run.

    Time is the CPU time of this process (``time.process_time``), not the wall clock: on a
    shared machine the time spent waiting for a core is not the kernel's.
    """
    times = []
    for _ in range(repeats):
        run = method.start(system, H, backend, **ic)
        t0 = time.process_time()
        run.advance(steps, steps)
        times.append(time.process_time() - t0)
    return steps / statistics.median(times)


def worker():
    """Serve ``compare``: read ``index steps`` lines, answer each with the kernel steps/s of one
    run of that case (JSON, ``null`` for a case this version lacks)."""
    rows = {f"{s} | {m}": (system, ic, method) for s, m, system, ic, method in cases()}
    print(json.dumps(list(rows)), flush=True)
    for line in sys.stdin:
        key, steps = json.loads(line)
        if key not in rows:
            print("null", flush=True)
            continue
        system, ic, method = rows[key]
        print(json.dumps(rate(system, ic, method, "cython", steps, 1)), flush=True)


def compare(other, args):
    """Kernel speeds of this installation and of ``other``, interleaved run by run; prints the
    table."""
    script = os.path.abspath(__file__)
    workers = {}
    for side, python in (("other", other), ("this", sys.executable)):
        # started from a neutral folder so that each interpreter imports its own installation
        workers[side] = subprocess.Popen([python, script, "--worker"], cwd="/", text=True,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        workers[side].keys = json.loads(workers[side].stdout.readline())

    def ask(side, key):
        workers[side].stdin.write(json.dumps([key, args.steps]) + "\n")
        workers[side].stdin.flush()
        return json.loads(workers[side].stdout.readline())

    print(f"kernels: {args.steps} steps per run, median of {args.repeats} runs, the two "
          f"installations taking turns run by run; CPU time; h = {H}\nother: {other}\n"
          f"this:  {sys.executable}\n")
    print("| system | integrator | other steps/s | this steps/s | this / other |")
    print("|---|---|---:|---:|---:|")
    for key in workers["this"].keys:
        rates = {"other": [], "this": []}
        for _ in range(args.repeats):
            for side in ("other", "this"):
                rates[side].append(ask(side, key))
        new = statistics.median(rates["this"])
        if rates["other"][0] is None:
            print(f"| {key} | - | {new:,.0f} | - |")
            continue
        old = statistics.median(rates["other"])
        print(f"| {key} | {old:,.0f} | {new:,.0f} | {new / old:.3f} |", flush=True)
    for w in workers.values():
        w.stdin.close()
        w.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--twin-steps", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", metavar="PYTHON", default=None,
                        help="another interpreter with nhphys installed, to compare kernels")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not _backend.extensions_built():
        raise SystemExit("the nhphys_ext kernels are not built")
    if args.worker:
        worker()
        return
    if args.against:
        compare(args.against, args)
        return

    print(f"kernel: {args.steps} steps, median of {args.repeats}; twin: {args.twin_steps} "
          f"steps, median of 2; h = {H}\n")
    print("| system | integrator | kernel steps/s | twin steps/s | kernel / twin |")
    print("|---|---|---:|---:|---:|")
    for label, name, system, ic, method in cases():
        fast = rate(system, ic, method, "cython", args.steps, args.repeats)
        slow = rate(system, ic, method, "python", args.twin_steps, 2)
        print(f"| {label} | {name} | {fast:,.0f} | {slow:,.0f} | {fast / slow:,.0f}x |")

    print("\nContact oscillator (epsilon = 0.1), 1000 time units at h = 0.01 (10^5 steps, "
          "every 100th saved):\n")
    print("| method | wall time [s] | max abs. energy error | max constraint residual |")
    print("|---|---:|---:|---:|")
    system = ContactOscillator(0.1)
    for name, method in [("Newmark(0,0,1/2), kernel", Newmark(0.0, 0.0, 0.5)),
                         ("F001(h/2) o F000(h/2), kernel",
                          Composition.symmetric(Newmark(0.0, 0.0, 0.0))),
                         ("Reference(rtol=1e-10)", Reference(1e-10, 1e-12))]:
        times = []
        for _ in range(3 if "kernel" in name else 1):
            t0 = time.perf_counter()
            traj = nhphys.simulate(system, 1000.0, H, integrator=method, save_every=100,
                                   **OSC_IC)
            times.append(time.perf_counter() - t0)
        err = np.abs(traj.energy - traj.energy[0]).max()
        print(f"| {name} | {statistics.median(times):.3f} | {err:.1e} | "
              f"{traj.constraint_residual.max():.1e} |")


if __name__ == "__main__":
    main()
