"""Speed of the Newmark / DLA / composition kernel and of the SE(2) retraction kernel against
their Python twins, per step, and a long contact-oscillator run against the reference.

Each kernel is called directly (its whole time loop, nothing saved but the last state) over
``--steps`` steps, the twin over ``--twin-steps``; the table shows medians over ``--repeats``
runs (2 for the twin) in steps per second and their ratio.

Run ``python benchmarks/bench_newmark.py [--steps N] [--twin-steps N] [--repeats R]``.
"""

import argparse
import statistics
import time

import numpy as np

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
H = 0.01

NEWMARK_CASES = [
    ("ContactOscillator", ContactOscillator(0.1), OSC_IC, "Newmark(0,0,0) explicit",
     Newmark(0.0, 0.0, 0.0)),
    ("ContactOscillator", ContactOscillator(0.1), OSC_IC, "Newmark(0,0,1/2)",
     Newmark(0.0, 0.0, 0.5)),
    ("ContactOscillator", ContactOscillator(0.1), OSC_IC, "Newmark(1/4,1/4,1/2,'average')",
     Newmark(0.25, 0.25, 0.5, "average")),
    ("ContactOscillator", ContactOscillator(0.1), OSC_IC, "F001(h/2) o F000(h/2)",
     Composition.symmetric(Newmark(0.0, 0.0, 0.0))),
    ("NonReversibleContactOscillator", NonReversibleContactOscillator(0.1), OSC_IC,
     "DLA('midpoint')", DLA("midpoint")),
    ("KnifeEdge, incline 0.4", KnifeEdge(2.0, 0.3, 0.2, incline=0.4), EDGE_IC,
     "Newmark(0,0,1/2)", Newmark(0.0, 0.0, 0.5)),
    ("KnifeEdge, incline 0.4", KnifeEdge(2.0, 0.3, 0.2, incline=0.4), EDGE_IC,
     "DLA('trapezoidal')", DLA("trapezoidal")),
    ("VerticalDisk", VerticalDisk(1.0, 0.5, 0.125, 0.0625), DISK_IC, "Newmark(0,0,1/2)",
     Newmark(0.0, 0.0, 0.5)),
]

RETRACTION_CASES = [
    ("KnifeEdge (sleigh)", KnifeEdge(1.0, 0.5, 0.5), {"velocity0": 0.1, "omega0": 1.0}),
    ("VerticalDisk", VerticalDisk(1.0, 0.5, 0.125, 0.0625), DISK_IC),
]


def newmark_rate(system, ic, method, backend, steps, repeats):
    """Median steps per second of ``nonholonomic_run`` over ``steps`` steps."""
    impl = _backend.implementation("newmark", backend)
    cs = system.coordinates
    q0, v0 = system.coordinates_from_conditions(**ic)
    lam0 = cs.multiplier(q0, v0)
    model = impl.Model(*cs.kernel_model)
    stages = method.stage_rows()
    times = []
    for _ in range(repeats):
        q, v, lam = q0.copy(), v0.copy(), np.array(lam0)
        out_q, out_v = np.empty((1, q.size)), np.empty((1, q.size))
        t0 = time.perf_counter()
        status = impl.nonholonomic_run(model, cs.mass_matrix, stages, q, v, lam, H, steps,
                                       steps, 1e-12, 30, out_q, out_v)
        times.append(time.perf_counter() - t0)
        assert status == 0
    return steps / statistics.median(times)


def retraction_rate(system, ic, map_, backend, steps, repeats):
    run = Retraction(map_).start(system, H, backend, **ic)
    times = []
    for _ in range(repeats):
        g, p, y = run.g.copy(), run.p.copy(), run.y.copy()
        out_g, out_p = np.empty((1, g.size)), np.empty((1, p.size))
        t0 = time.perf_counter()
        status = run.kernel.retraction_run(run.inertia, run.basis, g, p, y, H, steps, steps,
                                           run.map_code, 1e-12, 30, out_g, out_p)
        times.append(time.perf_counter() - t0)
        assert status == 0
    return steps / statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--twin-steps", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if not _backend.extensions_built():
        raise SystemExit("the nhphys_ext kernels are not built")

    print(f"kernel: {args.steps} steps, median of {args.repeats}; twin: {args.twin_steps} "
          f"steps, median of 2; h = {H}\n")
    print("| system | integrator | kernel steps/s | twin steps/s | kernel / twin |")
    print("|---|---|---:|---:|---:|")
    for label, system, ic, name, method in NEWMARK_CASES:
        fast = newmark_rate(system, ic, method, "cython", args.steps, args.repeats)
        slow = newmark_rate(system, ic, method, "python", args.twin_steps, 2)
        print(f"| {label} | {name} | {fast:,.0f} | {slow:,.0f} | {fast / slow:,.0f}x |")
    for label, system, ic in RETRACTION_CASES:
        for map_ in ("exp", "cayley"):
            fast = retraction_rate(system, ic, map_, "cython", args.steps, args.repeats)
            slow = retraction_rate(system, ic, map_, "python", args.twin_steps, 2)
            print(f"| {label} | Retraction('{map_}') | {fast:,.0f} | {slow:,.0f} | "
                  f"{fast / slow:,.0f}x |")

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
