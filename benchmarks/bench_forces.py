"""What a force element, or a moving ground, adds to the cost of a rolling step (compiled
kernel).

A ball rolls in a bowl (``Retraction('exp')``, h = 1e-3) with no force element, with each
element alone, with all of them, and in the bowl turning about its axis (``SteadyRotation``: the
same motion relative to the bowl's material, on a moving ground); the cases run interleaved,
repeat by repeat, in one process, so they see the same machine load. The table gives the median steps per second of
each and its cost relative to the run without forces.

Run ``python benchmarks/bench_forces.py [--repeats N] [--steps N]``.
"""

import argparse
import platform
import statistics
import time

import numpy as np

import nhphys
from nhphys import forces as fe
from nhphys.integrators import Retraction
from nhphys.surfaces import Sphere
from nhphys.systems import RollingBody

CASES = {
    "no force element": [],
    "Force (constant, at a body point)": [fe.Force([0.1, 0.0, 0.0], point=[0, 0, 0.05])],
    "Force (linear schedule, 50 times)": [
        fe.Force(fe.Schedule(np.linspace(0, 10, 50), np.zeros((50, 3))))],
    "Torque (cubic schedule, 50 times)": [
        fe.Torque(fe.Schedule(np.linspace(0, 10, 50), np.zeros((50, 3)), kind="cubic"))],
    "Spring": [fe.Spring(1.0, anchor=[0.0, 0.0, 0.5])],
    "UniformField": [fe.UniformField([0.1, 0.0, 0.0])],
    "LinearDrag": [fe.LinearDrag(0.01)],
    "AngularDamping": [fe.AngularDamping(1e-4)],
    "SpinFriction": [fe.SpinFriction(1e-4)],
    "RollingResistance": [fe.RollingResistance(1e-3)],
    "Motor (torque and speed control)": [fe.Motor(torque=0.001, target_speed=1.0, gain=1e-4)],
}
CASES["all of the above"] = [e for elements in list(CASES.values()) for e in elements]


def steps_per_second(system, steps):
    ball_ic = dict(omega=[0.0, 3.0, 0.0], ground_point=[0.2, 0.0, -0.98])
    start = time.perf_counter()
    nhphys.simulate(system, steps * 1e-3, 1e-3, Retraction("exp"), backend="cython",
                    save_every=steps, progress=False, **ball_ic)
    return steps / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20_000)
    args = parser.parse_args(argv)
    ball = nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1))
    bowl = Sphere(1.0).as_ground("inside")
    systems = {name: RollingBody(ball, bowl, forces=elements) for name, elements in CASES.items()}
    systems["bowl turning at 1 rad/s (moving ground)"] = RollingBody(ball, bowl.moving(rate=1.0))
    for system in systems.values():  # warm up (imports, first calls)
        steps_per_second(system, 200)
    rates = {name: [] for name in systems}
    for _ in range(args.repeats):
        for name, system in systems.items():
            rates[name].append(steps_per_second(system, args.steps))
    base = statistics.median(rates["no force element"])
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{args.repeats} repeats of {args.steps:,} steps, medians")
    print("| case | steps/s | cost / no force element |")
    print("|---|---:|---:|")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"| {name} | {rate:,.0f} | {base / rate:.2f} |")


if __name__ == "__main__":
    main()
