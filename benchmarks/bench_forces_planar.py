"""What a force element adds to the cost of a step of the planar and Suslov kernels.

Each element is given a negligible size (1e-30, or zero values for schedules), so that the
motion, and with it the Newton iterations, are those of the run without it: the difference is
the element's own cost (its evaluation and the kicks). The size is small enough that the runs
take the same Newton iterations as the run without forces (checked: the table is printed only
when every run reports the same count of residual evaluations as the run without forces, and,
for the Suslov run, which reports no count, that every run ends in the state of the run without
forces, to 1e-9: the round-off of the steps, not the element), and
large enough that no product in the step underflows to a subnormal number: with 1e-300 the
damping elements' products did, and their cost then measured the processor's slow handling of
subnormal numbers, which no real coefficient meets. Cases run interleaved, repeat by repeat, so
they see the same machine load; each cell is the median over the repeats of the cost relative
to the run without forces in the same repeat. Each run starts afresh through the public
interface and times one ``run.advance(steps, steps)`` (the whole time loop in one kernel call).

With ``--compare PYTHON`` every repeat of every system runs in a fresh process, once under this
interpreter and once under ``PYTHON`` (another installation of nhphys, e.g. an earlier version),
alternating which goes first, and the table gives both versions' figures side by side
(``this / compared``); ``--systems`` picks systems by substrings of their names.

Run ``python benchmarks/bench_forces_planar.py [--repeats N] [--steps N] [--compare PYTHON]
[--systems NAME ...]``.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # keep BLAS threads out of the timing

import numpy as np  # noqa: E402

from nhphys import forces as fe  # noqa: E402
from nhphys.integrators import DLA, Newmark, Retraction  # noqa: E402
from nhphys.systems import KnifeEdge, Suslov, VerticalDisk  # noqa: E402

TINY = 1e-30  # negligible, and no subnormal products (see above)
ELEMENTS = {
    "no force element": [],
    "Force (constant, at a body point)": [fe.Force([TINY, 0, 0], point=[0.05, 0.0, 0.0])],
    "Force (linear schedule, 50 times)": [
        fe.Force(fe.Schedule(np.linspace(0, 10, 50), np.zeros((50, 3))), point=[0, 0.05, 0])],
    "Torque (cubic schedule, 50 times)": [
        fe.Torque(fe.Schedule(np.linspace(0, 10, 50), np.zeros((50, 3)), kind="cubic"))],
    "Spring": [fe.Spring(TINY, anchor=[0.3, 0.1, 0.0], point=[0.05, 0.0, 0.0])],
    "LinearDrag": [fe.LinearDrag(TINY)],
    "AngularDamping": [fe.AngularDamping(TINY)],
    "Motor (torque and speed control)": [fe.Motor(torque=TINY, target_speed=1.0, gain=TINY)],
}
NON_PRINCIPAL = np.array([[2.0, 0.3, 0.1], [0.3, 3.0, -0.2], [0.1, -0.2, 4.0]])


def on_a_fixed_point(elements):
    """The elements a Suslov body takes (no drag: its fixed point does not move)."""
    return [e for e in elements if not isinstance(e, fe.LinearDrag)]


SYSTEMS = {
    "KnifeEdge, Newmark()": (lambda e: KnifeEdge(1.0, 0.2, 0.15, forces=e), Newmark(),
                             dict(velocity0=0.3, omega0=3.0)),
    "KnifeEdge, DLA()": (lambda e: KnifeEdge(1.0, 0.2, 0.15, forces=e), DLA(),
                         dict(velocity0=0.3, omega0=3.0)),
    "KnifeEdge, Retraction()": (lambda e: KnifeEdge(1.0, 0.2, 0.15, forces=e), Retraction(),
                                dict(velocity0=0.3, omega0=3.0)),
    "VerticalDisk, Newmark()": (lambda e: VerticalDisk(1.0, 0.3, 0.045, 0.0225, forces=e),
                                Newmark(), dict(omega0=0.7, spin0=2.0)),
    "Suslov, Retraction()": (lambda e: Suslov(NON_PRINCIPAL, [0.2, 0.1, 1.0],
                                              forces=on_a_fixed_point(e)),
                             Retraction(), dict(momentum0=[1.0, 0.5, 0.0])),
}


def seconds_per_step(system, integrator, ic, steps):
    """Seconds per step of ``steps`` steps, the run's count of Newton residual evaluations
    (None where the run does not report it) and its final state (every saved quantity but the
    work and the constraint residual, flattened)."""
    run = integrator.start(system, 1e-3, "cython", **ic)
    start = time.perf_counter()
    frames = run.advance(steps, steps)
    seconds = (time.perf_counter() - start) / steps
    state = np.concatenate([np.ravel(v[-1]) for k, v in frames.items()
                            if k not in ("work", "constraint_residual")])
    return seconds, getattr(run, "newton_evaluations", None), state


def one_repeat(title, steps, warm=200):
    """Seconds per step of every element on system ``title``, once each, interleaved; raises
    if an element changed the Newton iterations (then it was not negligible)."""
    make, integrator, ic = SYSTEMS[title]
    systems = {name: make(elements) for name, elements in ELEMENTS.items()}
    for system in systems.values():  # warm up (imports, first calls)
        if warm:
            seconds_per_step(system, integrator, ic, warm)
    timed = {name: seconds_per_step(system, integrator, ic, steps)
             for name, system in systems.items()}
    _, base, base_state = timed["no force element"]
    for name, (_, evaluations, state) in timed.items():
        if evaluations != base or not np.allclose(state, base_state, rtol=1e-9, atol=1e-9):
            raise RuntimeError(f"{title}, {name}: {evaluations} Newton residual evaluations "
                               f"against {base} without forces, final state {state} against "
                               f"{base_state}: the element is not negligible.")
    return {name: seconds for name, (seconds, _, _) in timed.items()}


def in_process(python, title, steps):
    """:func:`one_repeat` in a fresh process of ``python``."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run([python, os.path.abspath(__file__), "--worker", title, "--steps",
                          str(steps)], capture_output=True, text=True,
                         cwd=os.path.expanduser("~"), env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--compare", metavar="PYTHON", help="another interpreter with nhphys")
    parser.add_argument("--systems", nargs="*", help="a subset of the systems (substrings)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(one_repeat(args.worker, args.steps)))
        return
    titles = [t for t in SYSTEMS if not args.systems or any(x in t for x in args.systems)]
    pythons = [sys.executable] + ([args.compare] if args.compare else [])
    results = {p: {} for p in pythons}
    for title in titles:
        times = {p: {name: [] for name in ELEMENTS} for p in pythons}
        if not args.compare:
            one_repeat(title, 200)
        for r in range(args.repeats):
            for python in (pythons if r % 2 == 0 else pythons[::-1]):
                got = (in_process(python, title, args.steps) if args.compare
                       else one_repeat(title, args.steps, warm=0))
                for name, value in got.items():
                    times[python][name].append(value)
        for python in pythons:
            base = times[python]["no force element"]
            results[python][title] = {
                name: statistics.median(v) if name == "no force element"
                else statistics.median(x / b for x, b in zip(v, base))
                for name, v in times[python].items()}
    print(f"# {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, {args.repeats} repeats of {args.steps:,} steps, "
          "medians; cost relative to no force element in the same repeat"
          + (f"; each cell this version / compared ({args.compare})" if args.compare else ""))
    print("| element | " + " | ".join(titles) + " |")
    print("|---|" + "---:|" * len(titles))
    for name in ELEMENTS:
        cells = []
        for title in titles:
            parts = []
            for python in pythons:
                value = results[python][title][name]
                parts.append(f"{value * 1e6:.2f} us" if name == "no force element"
                             else f"{value:.2f}")
            cells.append(" / ".join(parts))
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
