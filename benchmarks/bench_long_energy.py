"""Energy over 10^4 s of the rolling disk: the best structure-preserving setting against DOP853.

Issue 13 asks that nhphys's best structure-preserving setting that is within 1e-6 at 10 s keep
the relative energy error below 1e-10 with no drift over 10^4 s, at no more than twice the cost
of the cheapest DOP853 setting that reaches the same 10-s accuracy. The disk is the wobbling
thin disk of ``benchmarks/bench_disk.py`` (1 kg, radius 0.1 m, lean 0.3, heading rate 4, lean
rate 0.1 rad/s). Side by side:

* ``Retraction("exp", order=8)`` at ``--dt`` (0.04 s: the cheapest retraction setting within
  1e-6 at 10 s in ``bench_work_precision.py --case disk``);
* ``scipy.integrate.ode("dop853")`` on the compiled eq.-29 field (``RollingField``), unprojected,
  at ``--rtol`` (1e-9: the loosest tolerance within 1e-6 at 10 s there), and nhphys ``Adaptive``
  at the same tolerance (DOP853 compiled with the field, projected after every accepted step).

For each: the error at 10 s against Kane's equations at rtol 1e-13 (lean, heading, contact
point; the metric of ``bench_disk.py``), the wall time of the whole run, and the largest relative
energy error in each tenth of the run (frames every 10 s), which shows a drift.

Run ``python benchmarks/bench_long_energy.py [--t-final 10000] [--dt 0.04] [--rtol 1e-9]``.
"""

import argparse
import os
import platform
import sys
import time

import numpy as np

import nhphys
from nhphys.integrators import Adaptive, Retraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_work_precision import disk_case, disk_error  # noqa: E402

FRAME = 10.0  # seconds between frames


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t-final", type=float, default=1e4)
    parser.add_argument("--dt", type=float, default=0.04)
    parser.add_argument("--rtol", type=float, default=1e-9)
    args = parser.parse_args(argv)
    from scipy.integrate import ode

    from nhphys.integrators.adaptive import field_of
    from nhphys.validation import kane_disk as kane

    system, start, kane0 = disk_case()
    truth = kane.reference(kane0, np.array([0.0, 10.0]), 1.0, 9.81, 0.1, rtol=1e-13,
                           atol=1e-15)[-1]
    print(f"machine: {' '.join(platform.uname())}; cores: {os.cpu_count()}; "
          f"Python {platform.python_version()}, numpy {np.__version__}\n")

    def nh(integrator, dt):
        t0 = time.perf_counter()
        traj = nhphys.simulate(system, args.t_final, dt, integrator, backend="cython",
                               save_every=round(FRAME / dt), progress=False, **start)
        wall = time.perf_counter() - t0
        i10 = int(round(10.0 / FRAME))
        err10 = disk_error(traj.R[i10], traj.omega[i10], traj.contact_point[i10], truth)
        return wall, err10, traj.energy

    def dop853():
        y0 = system.reference_state(**start)
        field, _ = field_of(system, "cython")
        solver = ode(field).set_integrator("dop853", rtol=args.rtol, atol=args.rtol * 1e-2,
                                           nsteps=10**9)
        solver.set_initial_value(y0, 0.0)
        times = np.arange(0.0, args.t_final + FRAME / 2, FRAME)
        states = [y0]
        t0 = time.perf_counter()
        for t in times[1:]:
            states.append(solver.integrate(t))
        wall = time.perf_counter() - t0
        frames = system.observables(system.reference_unpack(np.array(states)))
        err10 = disk_error(frames["R"][1], frames["omega"][1], frames["contact_point"][1],
                           truth)
        return wall, err10, frames["energy"]

    rows = [(f"Retraction('exp', order=8), dt = {args.dt:g}",
             *nh(Retraction("exp", order=8), args.dt)),
            (f"Adaptive, rtol = {args.rtol:g}", *nh(Adaptive(args.rtol, args.rtol * 1e-2), FRAME)),
            (f"ode('dop853') on the compiled field, rtol = {args.rtol:g} (unprojected)",
             *dop853())]
    print(f"{args.t_final:g} s, frames every {FRAME:g} s; energy error: largest "
          "|E / E(0) - 1| in each tenth of the run\n")
    print("| method | error at 10 s | wall time [s] | energy error, each tenth of the run |")
    print("|---|---:|---:|---|")
    for label, wall, err10, energy in rows:
        rel = np.abs(np.asarray(energy) / energy[0] - 1)
        tenths = [part.max() for part in np.array_split(rel[1:], 10)]
        print(f"| {label} | {err10:.2e} | {wall:.2f} | "
              + " ".join(f"{x:.1e}" for x in tenths) + " |")


if __name__ == "__main__":
    main()
