"""Largest steps of the bundled rolling scenes, and the cost of a rolling step, with the rolling
step's Newton start and globalisation off ("before") and on ("after").

Prints Markdown tables (measured side by side in one run, on the kernels):

* for each bundled scene whose bodies are all :class:`nhphys.systems.RollingBody`: the largest
  step ``dt`` (a multiple of the scene's default step, found by doubling and then bisection on
  the multiple) with which the scene's integrator runs its full ``t_final`` (rounded to whole
  steps) without a failure, with ``Retraction(extrapolate=False, globalize=False)`` (the former
  iteration) and with the defaults ``extrapolate=True, globalize=True``;
* the rattleback (the bundled scene's body and initial state) at dt = 1e-2, order 2, 20 s: the
  time of the first reversal of the vertical spin, against a run at dt = 1e-4;
* the cost of one step of an ellipsoid on a plane (the ``ellipsoid_plane`` scene's body and
  start, dt = 1e-3, ``--steps`` steps, minimum over interleaved repeats of the process's CPU
  time and of the wall time), before and after, and the Newton work per step counted on the
  twin.

A scene "fails" at a step when the run raises (a ``NewtonError``, a contact event, or an input
error such as a step too large for the scene): the table says which error bounded the search.

Run ``python benchmarks/bench_large_steps.py [--repeats N] [--bisections K] [--max-multiple M]``.
"""

import argparse
import collections
import importlib
import pkgutil
import platform
import time
import warnings

import numpy as np

import nhphys
import nhphys.scenes
from nhphys.integrators import Retraction
from nhphys.systems import RollingBody

SETTINGS = {"before": {"extrapolate": False, "globalize": False},
            "after": {"extrapolate": True, "globalize": True}}


def rolling_scenes():
    """``[(name, module)]`` of the bundled scenes whose bodies all roll."""
    out = []
    for info in sorted(pkgutil.iter_modules(nhphys.scenes.__path__), key=lambda m: m.name):
        module = importlib.import_module("nhphys.scenes." + info.name)
        scene = getattr(module, "scene", None)
        if scene is None or not scene.bodies:
            continue
        if all(isinstance(b.system, RollingBody) for b in scene.bodies):
            out.append((info.name, module))
    return out


def integrator_of(module, setting):
    """The scene's default integrator (a ``Retraction`` map name) with ``setting``'s options."""
    name = module.defaults.get("integrator", "exp")
    return Retraction(name, **SETTINGS[setting])


def runs(module, multiple, setting):
    """``(True, "")`` if the scene runs its full time at ``multiple`` x its default step, else
    ``(False, why)``."""
    d = module.defaults
    dt = d["dt"] * multiple
    n = max(1, round(d["t_final"] / dt))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lift-off warnings of large steps
        try:
            module.scene.simulate(n * dt, dt, integrator=integrator_of(module, setting),
                                  backend="cython", save_every=n, progress=False)
        except Exception as exc:  # noqa: BLE001 - any failure bounds the step
            return False, f"{type(exc).__name__}: {exc}".split("\n")[0]
    return True, ""


def largest_multiple(module, setting, bisections, max_multiple):
    """The largest multiple of the default step that runs (doubling, then ``bisections``
    bisections), and the failure just above it."""
    good, bad, why = 0.0, None, ""
    m = 1.0
    while m <= max_multiple:
        ok, reason = runs(module, m, setting)
        if not ok:
            bad, why = m, reason
            break
        good = m
        m *= 2
    if bad is None:
        return good, f"runs at the largest multiple tried ({max_multiple:g}x)"
    for _ in range(bisections):
        mid = 0.5 * (good + bad) if good else 0.5 * bad
        ok, reason = runs(module, mid, setting)
        if ok:
            good = mid
        else:
            bad, why = mid, reason
    return good, why


def shorten(reason):
    """The gist of a failure message, for the table."""
    for key in ("did not converge", "turns the body by pi", "contact point could not be found",
                "contact event", "not regular", "whole number of steps"):
        if key in reason:
            return key
    return reason[:60]


def first_reversal(system, R0, spin, dt, t_final, integrator):
    """Time of the first sign change of the vertical spin (linear interpolation)."""
    from nhphys.scenes.rattleback import vertical_spin

    traj = nhphys.simulate(system, t_final, dt, integrator, orientation=R0,
                           omega=[0.0, 0.0, spin], save_every=1, backend="cython")
    w = vertical_spin(traj)
    i = np.flatnonzero(np.sign(w[:-1]) != np.sign(w[1:]))
    if not i.size:
        return None
    i = i[0]
    return traj.t[i] + (traj.t[i + 1] - traj.t[i]) * w[i] / (w[i] - w[i + 1])


def step_cost(setting, steps):
    """``(wall, cpu)`` time per step [s] of ``steps`` steps of the ellipsoid on a plane. The
    process's CPU time leaves out the time it waited for a core, which on a shared machine is
    most of the difference."""
    from nhphys.scenes import ellipsoid_plane as ep

    system = RollingBody(ep.egg, ep.ground)
    run = integrator_of(ep, setting).start(
        system, 1e-3, "cython", R0=ep.START["orientation"], omega0=ep.START["omega"])
    run.initial()
    wall, cpu = time.perf_counter(), time.process_time()
    run.advance(steps, steps)
    return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps


def newton_work(setting, steps=200):
    """Residual and Jacobian evaluations per step of the ellipsoid on a plane, counted on the
    twin: ``{(unknowns, "res" | "jac"): per step}`` (6: the step's solve, 2: contact solves)."""
    import nhphys.twins.rolling as twin
    from nhphys.scenes import ellipsoid_plane as ep

    counts = collections.Counter()
    plain, damped = twin.newton_solve, twin.newton_solve_damped

    def counting(solve):
        def wrapped(residual, jacobian, x, x_floor, rule):
            def res(y):
                counts[(len(y), "res")] += 1
                return residual(y)

            def jac(y):
                counts[(len(y), "jac")] += 1
                return jacobian(y)
            return solve(res, jac, x, x_floor, rule)
        return wrapped

    twin.newton_solve, twin.newton_solve_damped = counting(plain), counting(damped)
    try:
        system = RollingBody(ep.egg, ep.ground)
        nhphys.simulate(system, steps * 1e-3, 1e-3, integrator_of(ep, setting),
                        orientation=ep.START["orientation"], omega=ep.START["omega"],
                        backend="python", save_every=steps)
    finally:
        twin.newton_solve, twin.newton_solve_damped = plain, damped
    return {k: v / steps for k, v in counts.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bisections", type=int, default=3)
    parser.add_argument("--max-multiple", type=float, default=64.0)
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args(argv)
    print(f"machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, numpy {np.__version__}\n")

    print("### Largest step of each bundled rolling scene (kernel, full t_final)\n")
    print(f"Doubling from the default step, then {args.bisections} bisections of the multiple; "
          "the failure is the one just above the step found.\n")
    print("| scene | t_final [s] | default dt | largest dt, before | failure above it | "
          "largest dt, after | failure above it | after / default |")
    print("|---|---:|---:|---:|---|---:|---|---:|")
    for name, module in rolling_scenes():
        d = module.defaults
        cols = []
        for setting in SETTINGS:
            m, why = largest_multiple(module, setting, args.bisections, args.max_multiple)
            cols.append((m * d["dt"], shorten(why)))
        after = cols[1][0] / d["dt"]
        print(f"| {name} | {d['t_final']:g} | {d['dt']:g} | {cols[0][0]:.3g} | {cols[0][1]} | "
              f"{cols[1][0]:.3g} | {cols[1][1]} | {after:.3g}x |", flush=True)

    print("\n### Rattleback at dt = 1e-2 (order 2, 20 s)\n")
    from nhphys.scenes import rattleback as rb

    system = RollingBody(rb.rattleback, rb.ground)
    ref = first_reversal(system, rb.R0, rb.SPIN, 1e-4, 20.0, Retraction("exp"))
    print("| setting | first spin reversal [s] | reference (dt = 1e-4) [s] | difference [s] |")
    print("|---|---:|---:|---:|")
    for setting, options in SETTINGS.items():
        try:
            t = first_reversal(system, rb.R0, rb.SPIN, 1e-2, 20.0, Retraction("exp", **options))
            cell = (f"{t:.3f} | {ref:.3f} | {t - ref:+.3f}" if t is not None
                    else f"none | {ref:.3f} | -")
        except nhphys.NewtonError as exc:
            cell = f"NewtonError at t = {exc.time:.3g} | {ref:.3f} | -"
        print(f"| {setting} | {cell} |")

    print("\n### One step of an ellipsoid on a plane (dt = 1e-3, kernel)\n")
    best = {s: np.array([np.inf, np.inf]) for s in SETTINGS}
    for _ in range(args.repeats):  # interleaved: both settings see the same load
        for setting in SETTINGS:
            best[setting] = np.minimum(best[setting], step_cost(setting, args.steps))
    print(f"| setting | us per step, CPU (min of {args.repeats}) | us per step, wall | "
          "step solve: residuals / Jacobians | contact solves: residuals / Jacobians |")
    print("|---|---:|---:|---:|---:|")
    for setting in SETTINGS:
        w = newton_work(setting)
        print(f"| {setting} | {best[setting][1] * 1e6:.2f} | {best[setting][0] * 1e6:.2f} | "
              f"{w.get((6, 'res'), 0):.2f} / {w.get((6, 'jac'), 0):.2f} | "
              f"{w.get((2, 'res'), 0):.2f} / {w.get((2, 'jac'), 0):.2f} |")
    ratio = best["after"][1] / best["before"][1]
    print(f"\nafter / before (CPU): {ratio:.2f}; bar: at most 4 us per step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
