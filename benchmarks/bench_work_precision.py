"""Work-precision of the Suslov integrators: error of the final rotation against wall time.

The case of issue 13: inertia [[1, 0, .2], [0, 2, .3], [.2, .3, 3]], axis e3,
omega0 = (1, .5, 0), 300 s. Every contender runs side by side in one process, each setting timed
as the minimum over interleaved repeats (all settings once, then all again, ...):

* nhphys ``Retraction("exp", order=k)``, k = 2, 4, 6, 8, over a range of steps (compiled kernel);
* nhphys ``Adaptive(rtol, rtol / 100)`` on the compiled field of ``nhphys_ext.rhs``: its own
  compiled DOP853 loop (``loop="compiled"``, the default, every accepted step projected; one
  interval of 300 s, and a run saving every second) and ``scipy.integrate.ode``'s
  (``loop="scipy"``, projected at the end of the interval);
* ``scipy.integrate.ode("dop853")`` on the same compiled field, unprojected (the issue's bar:
  "DOP853 on a compiled right-hand side");
* ``scipy.integrate.solve_ivp(method="DOP853")`` on the compiled field and on the numpy
  right-hand side that ``Reference`` integrates (``Suslov.reference_rhs``).

The runs of nhphys are timed from ``integrator.start`` to the last ``advance`` (the fixed cost
of ``nhphys.simulate``'s checks and frames is printed apart). The error is the Frobenius norm
of ``R(300) - R_true``, with ``R_true`` from ``Retraction("exp", order=8)`` at dt = 0.05,
cross-checked against ``Reference(rtol=1e-13, atol=1e-15)``, the compiled DOP853 at rtol 1e-13
and order 8 at dt = 0.02 (their differences are printed: about 1e-12, so errors below ~1e-11
are not resolved). It also prints the cost of one right-hand-side call
on each path, the time each family needs to reach the accuracies 1e-3 ... 1e-10 (interpolated
log-log along its curve) and the ratios to the compiled DOP853, and draws
``docs/images/work_precision_suslov.png``.

Rolling cases (``--case disk``, ``ellipsoid``, ``torus`` or ``rattleback``): the wobbling thin disk
of ``benchmarks/bench_disk.py``, the ellipsoid of the ``ellipsoid_plane`` scene on a plane and on
top of a torus's tube, and the rattleback of the ``rattleback`` scene (10 s each), with nhphys
``Retraction("exp", order=k)``, ``Adaptive`` on the compiled ``nhphys_ext.rolling.RollingField``
(its own compiled DOP853 loop, ``loop="compiled"``, and ``scipy.integrate.ode``'s,
``loop="scipy"``), ``scipy.integrate.ode("dop853")`` and ``solve_ivp`` DOP853 on the same compiled
field unprojected (``ode`` timed twice: from the placed state alone, the issue's bar, and with the
same placement from the initial conditions and final frame as an nhphys run), ``solve_ivp``
DOP853 on the numpy right-hand side of ``Reference``
(``RollingBody.reference_rhs``, loose tolerances only: it costs 0.2-0.3 ms a call) and, for the
disk, Kane's equations with PyDy's Cython right-hand side under ``ode("dop853")`` and
``solve_ivp``. The error at t = 10 s is, for the disk, the largest difference in lean, heading and
contact point (x, y) from Kane's equations at rtol 1e-13 (the metric of bench_disk.py, at the final
time); for the others, ``max(|R - R_true|_max, |a - a_true|_max / 0.1 m)`` against
``Retraction("exp", order=8)`` at dt = 1e-3, cross-checked against the compiled DOP853 at rtol
1e-13.


Run ``python benchmarks/bench_work_precision.py [--case suslov|disk|ellipsoid|torus|rattleback]
[--repeats N] [--quick] [--png PATH]``.
"""

import argparse
import os
import platform
import time
import warnings

import numpy as np

import nhphys
from nhphys.errors import NewtonError
from nhphys.integrators import Adaptive, Reference, Retraction
from nhphys.systems import Suslov

NON_PRINCIPAL = np.array([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]])
OMEGA0 = np.array([1.0, 0.5, 0.0])
T_FINAL = 300.0
Y0 = np.concatenate([np.eye(3).ravel(), OMEGA0])
STEPS = {  # order -> steps dt (each divides 300 s)
    2: [0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001],
    4: [0.6, 0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01],
    6: [0.75, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05, 0.025],
    8: [1.0, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1],  # (0.05 is the truth)
}
TOLERANCES = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13]
TARGETS = [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10]
BAR = "DOP853 (scipy.integrate.ode) compiled RHS"
ADAPTIVE_COMPILED = "nhphys Adaptive, compiled loop (1 frame)"
# the bar timed with the same start and final frame as an nhphys run (rolling cases)
BAR_FROM_START = "DOP853 (scipy.integrate.ode) compiled RHS, with placement and frame"


def body():
    return Suslov(NON_PRINCIPAL, axis=[0, 0, 1])


def compiled_field(system):
    from nhphys_ext.rhs import SuslovField

    return SuslovField(system.inertia, system.axis)


# -- the contenders: each returns (final rotation (3, 3), right-hand-side calls or None) --------

def run_nhphys(system, integrator, dt):
    n = int(round(T_FINAL / dt))
    run = integrator.start(system, dt, "cython", omega0=OMEGA0)
    frames = run.advance(n, n)
    calls = getattr(getattr(run, "field", None), "evaluations", None)
    return frames["R"][-1], calls


def run_ode(system, rtol):
    from scipy.integrate import ode

    field = compiled_field(system)
    solver = ode(field).set_integrator("dop853", rtol=rtol, atol=rtol * 1e-2, nsteps=10**7)
    solver.set_initial_value(Y0, 0.0)
    y = solver.integrate(T_FINAL)
    return y[:9].reshape(3, 3), field.evaluations


def run_ivp(fun, y0, rtol, counter=None):
    from scipy.integrate import solve_ivp

    sol = solve_ivp(fun, (0.0, T_FINAL), y0, method="DOP853", rtol=rtol, atol=rtol * 1e-2)
    return sol.y[:9, -1].reshape(3, 3), sol.nfev


def contenders(system, quick):
    """label -> list of (setting, thunk); thunk() -> (R_final, calls)."""
    table = {}
    for order, steps in STEPS.items():
        steps = steps[::2] if quick else steps
        table[f"nhphys Retraction exp order {order}"] = [
            (f"dt={dt:g}", lambda dt=dt, o=order: run_nhphys(system, Retraction("exp", order=o),
                                                            dt)) for dt in steps]
    tols = TOLERANCES[::2] if quick else TOLERANCES
    for loop, name in (("compiled", "compiled loop"), ("scipy", "scipy ode loop")):
        table[f"nhphys Adaptive, {name} (1 frame)"] = [
            (f"rtol={r:g}", lambda r=r, loop=loop: run_nhphys(
                system, Adaptive(r, r * 1e-2, loop=loop), T_FINAL)) for r in tols]
    table["nhphys Adaptive, compiled loop (a frame every 1 s)"] = [
        (f"rtol={r:g}", lambda r=r: run_nhphys(system, Adaptive(r, r * 1e-2), 1.0))
        for r in tols]
    table[BAR] = [(f"rtol={r:g}", lambda r=r: run_ode(system, r)) for r in tols]
    field = compiled_field(system)
    table["solve_ivp DOP853 compiled RHS"] = [
        (f"rtol={r:g}", lambda r=r: run_ivp(field, Y0, r)) for r in tols]
    y13 = np.concatenate([Y0, [0.0]])
    system.reference_state(omega0=OMEGA0)  # sets the (empty) force set reference_rhs reads
    table["solve_ivp DOP853 numpy RHS (Reference's)"] = [
        (f"rtol={r:g}", lambda r=r: run_ivp(system.reference_rhs, y13, r))
        for r in tols if r >= 1e-11]
    return table


def truth(system):
    """R_true (3, 3) and the cross-checks' differences from it."""
    exp8 = run_nhphys(system, Retraction("exp", order=8), 0.05)[0]
    ref = nhphys.simulate(system, T_FINAL, T_FINAL, Reference(rtol=1e-13, atol=1e-15),
                          omega=OMEGA0).R[-1]
    return exp8, {"Reference(rtol=1e-13)": np.linalg.norm(ref - exp8),
                  "compiled DOP853 rtol 1e-13": np.linalg.norm(run_ode(system, 1e-13)[0] - exp8),
                  "Retraction exp order 8, dt = 0.02": np.linalg.norm(
                      run_nhphys(system, Retraction("exp", order=8), 0.02)[0] - exp8)}


def per_call_costs(system, repeats):
    """Seconds per right-hand-side call on each path."""
    from scipy.integrate import ode, solve_ivp

    from nhphys.twins.rhs import SuslovField as TwinField

    fast, slow = compiled_field(system), TwinField(system.inertia, system.axis)
    y13 = np.concatenate([Y0, [0.0]])
    system.reference_state(omega0=OMEGA0)
    out = {}

    def direct(fun, y, n):
        best = np.inf
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(n):
                fun(0.0, y)
            best = min(best, time.perf_counter() - start)
        return best / n

    out["compiled field, called from Python"] = direct(fast, Y0, 20000)
    out["numpy twin field (nhphys.twins.rhs)"] = direct(slow, Y0, 2000)
    out["Suslov.reference_rhs (Reference's numpy RHS)"] = direct(system.reference_rhs, y13, 2000)
    # inside the solvers: the whole run over its calls (the solver's own work included)
    best_ode, best_ivp = np.inf, np.inf
    for _ in range(repeats):
        field = compiled_field(system)
        solver = ode(field).set_integrator("dop853", rtol=1e-10, atol=1e-12, nsteps=10**7)
        solver.set_initial_value(Y0, 0.0)
        start = time.perf_counter()
        solver.integrate(T_FINAL)
        best_ode = min(best_ode, (time.perf_counter() - start) / field.evaluations)
        field = compiled_field(system)
        start = time.perf_counter()
        solve_ivp(field, (0.0, T_FINAL), Y0, method="DOP853", rtol=1e-10, atol=1e-12)
        best_ivp = min(best_ivp, (time.perf_counter() - start) / field.evaluations)
    out["scipy.integrate.ode dop853 on the compiled field (run / calls)"] = best_ode
    out["solve_ivp DOP853 on the compiled field (run / calls)"] = best_ivp
    return out


def time_to_reach(points, target):
    """Wall time at which a family's curve reaches ``target``: the cheapest measured point
    at or below it, or the log-log interpolation between the two points around it (None
    when the family never gets there)."""
    pts = sorted(points, key=lambda p: p[1])  # by time
    best = None
    for (e0, t0), (e1, t1) in zip(pts, pts[1:]):
        if e0 > target >= e1:  # crossing between two consecutive (by time) points
            f = (np.log(target) - np.log(e0)) / (np.log(e1) - np.log(e0))
            cand = float(np.exp(np.log(t0) + f * (np.log(t1) - np.log(t0))))
            best = cand if best is None else min(best, cand)
    for e, t in pts:
        if e <= target:
            best = t if best is None else min(best, t)
            break
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("suslov", "disk", "ellipsoid", "torus", "rattleback"),
                        default="suslov")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="every other setting, 2 repeats")
    parser.add_argument("--png", default=None, help="default docs/images/work_precision_CASE.png")
    args = parser.parse_args(argv)
    if args.png is None:
        args.png = os.path.join(os.path.dirname(__file__), "..", "docs", "images",
                                f"work_precision_{args.case}.png")
    if args.case != "suslov":
        return rolling_main(args)
    repeats = 2 if args.quick else args.repeats
    system = body()
    warnings.simplefilter("ignore", UserWarning)

    print(f"machine: {' '.join(platform.uname())}; cores: {os.cpu_count()}; "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    R_true, checks = truth(system)
    print("truth: Retraction exp order 8, dt = 0.05; |R - R_true|_F of the cross-checks: "
          + ", ".join(f"{k} {v:.2e}" for k, v in checks.items()))
    start = time.perf_counter()
    for _ in range(20):
        nhphys.simulate(system, 1.0, 1.0, Retraction("exp"), omega=OMEGA0, progress=False)
    print(f"fixed cost of nhphys.simulate (1 step, checks and frames): "
          f"{(time.perf_counter() - start) / 20 * 1e3:.2f} ms (not in the times below)\n")

    print("| right-hand side, per call | us |\n|---|---:|")
    for name, seconds in per_call_costs(system, repeats).items():
        print(f"| {name} | {seconds * 1e6:.2f} |")
    print()

    table = contenders(system, args.quick)
    results = {label: [[setting, np.inf, None, None] for setting, _ in runs]
               for label, runs in table.items()}
    for rep in range(repeats):  # interleaved: every setting once per round
        for label, runs in table.items():
            for row, (setting, thunk) in zip(results[label], runs):
                if rep > 0 and row[1] > 5.0:  # one repeat of the settings slower than 5 s
                    continue
                t0 = time.perf_counter()
                R, calls = thunk()
                row[1] = min(row[1], time.perf_counter() - t0)
                row[2] = float(np.linalg.norm(R - R_true))
                row[3] = calls

    print(f"| method | setting | error of R(300) | wall ms (min of {repeats}) | RHS calls |")
    print("|---|---|---:|---:|---:|")
    for label, rows in results.items():
        for setting, seconds, error, calls in rows:
            print(f"| {label} | {setting} | {error:.2e} | {seconds * 1e3:.2f} | "
                  f"{'' if calls is None else calls} |")
    print()

    points = {label: [(max(r[2], 1e-16), r[1]) for r in rows] for label, rows in results.items()}
    retraction = [label for label in points if "Retraction" in label]
    print("| accuracy | " + " | ".join(["best Retraction", "Adaptive, compiled loop (1 frame)",
                                        BAR, "best Retraction / bar",
                                        "Adaptive compiled loop / bar"]) + " |")
    print("|---:|---:|---:|---:|---:|---:|")
    for target in TARGETS:
        bar = time_to_reach(points[BAR], target)
        times = [(time_to_reach(points[label], target), label) for label in retraction]
        times = [(t, label) for t, label in times if t is not None]
        best, best_label = min(times) if times else (None, "")
        adaptive = time_to_reach(points[ADAPTIVE_COMPILED], target)

        def ms(value):
            return "not reached" if value is None else f"{value * 1e3:.2f}"

        def ratio(value):
            return "-" if value is None or bar is None else f"{value / bar:.2f}"

        order = best_label.split("order ")[-1] if best_label else "-"
        print(f"| {target:.0e} | {ms(best)} (order {order}) | {ms(adaptive)} | {ms(bar)} | "
              f"{ratio(best)} | {ratio(adaptive)} |")

    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 6))
        styles = {"Retraction": "o-", "Adaptive": "s-", "ode": "^--", "solve_ivp": "v:"}
        for label, rows in results.items():
            style = next((s for k, s in styles.items() if k in label), "x-")
            if label == BAR:
                style = "k^--"
            times = [r[1] * 1e3 for r in rows]
            errors = [max(r[2], 1e-16) for r in rows]
            ax.loglog(times, errors, style, label=label, markersize=4)
        ax.axhspan(1e-10, 1e-3, color="0.93", zorder=0)  # the accuracies of the issue
        ax.set_ylim(1e-13, 10.0)
        ax.set_xlabel("wall time [ms] (minimum of interleaved repeats)")
        ax.set_ylabel("|R(300) - R_true| (Frobenius)")
        ax.set_title("Suslov, non-principal inertia, 300 s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"\nwrote {os.path.normpath(args.png)}")


# -- rolling bodies -------------------------------------------------------------------------------

ROLLING_T = 10.0
ROLLING_STEPS = {  # order -> steps dt (each divides 10 s)
    2: [1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4],
    4: [2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4],
    6: [4e-2, 2e-2, 1e-2, 5e-3, 2.5e-3, 1.25e-3],
    8: [5e-2, 4e-2, 2.5e-2, 2e-2, 1e-2, 5e-3, 2.5e-3],
}
ROLLING_TOLERANCES = [1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13]


def disk_case():
    """The wobbling thin disk of bench_disk.py: system, start keywords, Kane state (8,)."""
    from nhphys.shapes import Disk
    from nhphys.surfaces import Plane
    from nhphys.systems import RollingBody
    from nhphys.validation import kane_disk as kane

    m, g, r, lean, turn = 1.0, 9.81, 0.1, 0.3, 4.0
    y0 = np.array([0.0, lean, 0.0, 0.1, kane.steady_spin(lean, turn, m, g, r),
                   turn * np.cos(lean), 0.0, 0.0])
    system = RollingBody(nhphys.RigidBody(m, Disk.solid_inertia(m, r), Disk(r)), Plane(),
                         gravity=g)
    return system, kane.to_nhphys(y0), y0


def scene_case(name):
    """The first body of the bundled scene ``name``: system and start keywords."""
    import importlib

    from nhphys import conditions

    entry = importlib.import_module(f"nhphys.scenes.{name}").scene.bodies[0]
    return entry.system, conditions.start_arguments(entry.system, entry.conditions)


def torus_case():
    """The ellipsoid of the ellipsoid_plane scene started on top of a torus's tube (major
    radius 1 m, tube 0.4 m): it rolls along the top of the tube, pressing on it throughout."""
    from nhphys.surfaces import Torus
    from nhphys.systems import RollingBody

    system, start = scene_case("ellipsoid_plane")
    return (RollingBody(system.body, Torus(1.0, 0.4), gravity=9.81),
            {"R0": start["R0"], "omega0": start["omega0"], "ground_point": [1.0, 0.0, 0.4]})


ROLLING_CASES = {  # case -> (system and start, title)
    "disk": (lambda: disk_case()[:2], "Thin disk rolling on a plane (wobbling), 10 s"),
    "ellipsoid": (lambda: scene_case("ellipsoid_plane"),
                  "Ellipsoid (0.1, 0.08, 0.06 m) rolling on a plane, 10 s"),
    "torus": (torus_case, "Ellipsoid (0.1, 0.08, 0.06 m) rolling on a torus's tube, 10 s"),
    "rattleback": (lambda: scene_case("rattleback"),
                   "Rattleback (Kane and Levinson) on a plane, spun at 5 rad/s, 10 s"),
}


def disk_error(R, omega, x, truth):
    """Largest of |lean - lean_true|, |heading - heading_true| (mod 2 pi) and the contact
    point's |x - x_true|, |y - y_true| at the final time; ``truth`` the Kane state (8,)."""
    from nhphys.validation import kane_disk as kane

    q = kane.from_nhphys(R[None], omega[None], x[None])[0]
    return kane_state_error(q, truth)


def kane_state_error(q, truth):
    heading = (q[0] - truth[0] + np.pi) % (2 * np.pi) - np.pi
    return float(max(abs(q[1] - truth[1]), abs(heading), abs(q[6] - truth[6]),
                     abs(q[7] - truth[7])))


def rolling_contenders(case, system, start, quick):
    """label -> list of (setting, thunk); thunk() -> (final state tuple, calls)."""
    from scipy.integrate import ode, solve_ivp

    from nhphys.integrators.adaptive import field_of

    def nh(integrator, dt):
        n = int(round(ROLLING_T / dt))
        run = integrator.start(system, dt, "cython", **start)
        frames = run.advance(n, n)
        calls = getattr(getattr(run, "field", None), "evaluations", None)
        return (frames["R"][-1], frames["omega"][-1], frames["contact_point"][-1],
                frames["position"][-1]), calls

    y0 = system.reference_state(**start)

    def final_of(y):  # a field state (15,) -> (R, omega, contact point, centre)
        frame = system.observables(system.reference_unpack(np.asarray(y)[None]))
        return (frame["R"][-1], frame["omega"][-1], frame["contact_point"][-1],
                frame["position"][-1])

    # the other solvers start from the placed state y0 and return the final field state:
    # neither the placement nor the conversion to frames is timed for them
    def compiled_ode(rtol):
        field, _ = field_of(system, "cython")
        solver = ode(field).set_integrator("dop853", rtol=rtol, atol=rtol * 1e-2,
                                           nsteps=10**7)
        solver.set_initial_value(y0, 0.0)
        return solver.integrate(ROLLING_T), field.evaluations

    def compiled_ode_from_start(rtol):
        # the same work as an nhphys run: the body placed from the initial conditions
        # (reference_state) and the final state made a frame, both timed here too
        y = system.reference_state(**start)
        field, _ = field_of(system, "cython")
        solver = ode(field).set_integrator("dop853", rtol=rtol, atol=rtol * 1e-2,
                                           nsteps=10**7)
        solver.set_initial_value(y, 0.0)
        return final_of(solver.integrate(ROLLING_T)), field.evaluations

    def compiled_ivp(rtol):
        field, _ = field_of(system, "cython")
        sol = solve_ivp(field, (0.0, ROLLING_T), y0, method="DOP853", rtol=rtol,
                        atol=rtol * 1e-2)
        return sol.y[:, -1], sol.nfev

    def numpy_ivp(rtol):
        sol = solve_ivp(system.reference_rhs, (0.0, ROLLING_T), y0, method="DOP853",
                        rtol=rtol, atol=rtol * 1e-2)
        return sol.y[:, -1], sol.nfev

    def bare_loop(rtol):
        field, _ = field_of(system, "cython")
        y = y0.copy()
        field.integrate(y, 0.0, ROLLING_T, rtol, rtol * 1e-2, 0.0, 10**7)
        return y, field.evaluations

    table = {}
    for order, steps in ROLLING_STEPS.items():
        steps = steps[::2] if quick else steps
        table[f"nhphys Retraction exp order {order}"] = [
            (f"dt={dt:g}", lambda dt=dt, o=order: nh(Retraction("exp", order=o), dt))
            for dt in steps]
    tols = ROLLING_TOLERANCES[::2] if quick else ROLLING_TOLERANCES
    table[ADAPTIVE_COMPILED] = [
        (f"rtol={r:g}", lambda r=r: nh(Adaptive(r, r * 1e-2, loop="compiled"), ROLLING_T))
        for r in tols]
    table["nhphys Adaptive, compiled loop (a frame every 0.1 s)"] = [
        (f"rtol={r:g}", lambda r=r: nh(Adaptive(r, r * 1e-2, loop="compiled"), 0.1))
        for r in tols]
    table["nhphys Adaptive, scipy ode loop (1 frame)"] = [
        (f"rtol={r:g}", lambda r=r: nh(Adaptive(r, r * 1e-2, loop="scipy"), ROLLING_T))
        for r in tols]
    table[BAR] = [(f"rtol={r:g}", lambda r=r: compiled_ode(r)) for r in tols]
    table[BAR_FROM_START] = [(f"rtol={r:g}", lambda r=r: compiled_ode_from_start(r))
                             for r in tols]
    table["RollingField.integrate alone (no start, no frames)"] = [
        (f"rtol={r:g}", lambda r=r: bare_loop(r)) for r in tols]
    table["solve_ivp DOP853 compiled RHS"] = [(f"rtol={r:g}", lambda r=r: compiled_ivp(r))
                                              for r in tols]
    table["solve_ivp DOP853 numpy RHS (Reference's)"] = [
        (f"rtol={r:g}", lambda r=r: numpy_ivp(r)) for r in tols if r >= 1e-7]
    if case == "disk":
        from bench_disk import pydy_rhs

        f, _ = pydy_rhs()
        kane0 = disk_case()[2]

        def pydy(rtol, driver):
            if driver == "ode":
                solver = ode(f).set_integrator("dop853", rtol=rtol, atol=rtol * 1e-2,
                                               nsteps=10**7)
                solver.set_initial_value(kane0, 0.0)
                return solver.integrate(ROLLING_T), None
            sol = solve_ivp(f, (0.0, ROLLING_T), kane0, method="DOP853", rtol=rtol,
                            atol=rtol * 1e-2)
            return sol.y[:, -1], sol.nfev

        table["PyDy Cython RHS + ode dop853"] = [
            (f"rtol={r:g}", lambda r=r: pydy(r, "ode")) for r in tols]
        table["PyDy Cython RHS + solve_ivp DOP853"] = [
            (f"rtol={r:g}", lambda r=r: pydy(r, "ivp")) for r in tols if r >= 1e-10]
    return table, final_of


def rolling_main(args):
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_disk
    repeats = 2 if args.quick else args.repeats
    warnings.simplefilter("ignore", UserWarning)
    case = args.case
    setup, title = ROLLING_CASES[case]
    system, start = setup()
    print(f"machine: {' '.join(platform.uname())}; cores: {os.cpu_count()}; "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    table, final_of = rolling_contenders(case, system, start, args.quick)

    def as_final(result):  # a field state (15,) -> (R, omega, contact point, centre)
        return final_of(result) if isinstance(result, np.ndarray) and result.shape == (15,) \
            else result

    if case == "disk":
        from nhphys.validation import kane_disk as kane

        kane0 = disk_case()[2]
        truth = kane.reference(kane0, np.array([0.0, ROLLING_T]), 1.0, 9.81, 0.1, rtol=1e-13,
                               atol=1e-15)[-1]

        def error(result):
            if isinstance(result, np.ndarray) and result.shape == (8,):  # a Kane state (PyDy)
                return kane_state_error(result, truth)
            R, omega, x, _ = as_final(result)
            return disk_error(R, omega, x, truth)

        setting, thunk = table[BAR][-1]
        print(f"truth: Kane's equations, DOP853 rtol 1e-13; the compiled eq.-29 field under "
              f"ode dop853 at {setting} differs from it by {error(thunk()[0]):.1e}")
        ylabel = "error at 10 s: lean, heading, contact point"
    else:
        truth_run = Retraction("exp", order=8).start(system, 1e-3, "cython", **start)
        n = int(round(ROLLING_T / 1e-3))
        frames = truth_run.advance(n, n)
        truth = (frames["R"][-1], frames["position"][-1])

        def error(result):
            R, _, _, a = as_final(result)
            return float(max(np.abs(R - truth[0]).max(), np.abs(a - truth[1]).max() / 0.1))

        setting, thunk = table[BAR][-1]
        print(f"truth: Retraction exp order 8 at dt = 1e-3; the compiled DOP853 at {setting} "
              f"differs from it by {error(thunk()[0]):.1e}")
        ylabel = "error at 10 s: max(|R - R_true|, |a - a_true| / 0.1 m)"

    fixed = []
    for _ in range(20):
        t0 = time.perf_counter()
        run = Adaptive(1e-6, 1e-8).start(system, ROLLING_T, "cython", **start)
        t1 = time.perf_counter()
        run._frames(np.concatenate([run.state, [0.0]])[None], 1)
        fixed.append((t1 - t0, time.perf_counter() - t1))
    print(f"fixed cost of an nhphys run (in its times below, not in the other solvers'): "
          f"start (placing the body: numpy) {min(f[0] for f in fixed) * 1e3:.2f} ms, "
          f"a frame {min(f[1] for f in fixed) * 1e3:.3f} ms")

    results = {label: [[setting, np.inf, None, None] for setting, _ in runs]
               for label, runs in table.items()}
    for rep in range(repeats):  # interleaved: every setting once per round
        for label, runs in table.items():
            for row, (setting, thunk) in zip(results[label], runs):
                if rep > 0 and (row[1] > 3.0 or isinstance(row[3], str)):
                    continue  # one repeat of the settings slower than 3 s or failing
                t0 = time.perf_counter()
                try:
                    result, calls = thunk()
                except NewtonError as exc:  # a step too large for the structure-preserving step
                    row[1:] = [np.inf, np.nan, f"failed at t = {exc.time:g} s"]
                    continue
                row[1] = min(row[1], time.perf_counter() - t0)
                row[2] = error(result)
                row[3] = calls

    print(f"\n| method | setting | error at 10 s | wall ms (min of {repeats}) | RHS calls |")
    print("|---|---|---:|---:|---:|")
    for label, rows in results.items():
        for setting, seconds, err, calls in rows:
            print(f"| {label} | {setting} | {err:.2e} | {seconds * 1e3:.2f} | "
                  f"{'' if calls is None else calls} |")
    print()
    points = {label: [(max(r[2], 1e-16), r[1]) for r in rows if np.isfinite(r[1])]
              for label, rows in results.items()}
    retraction = [label for label in points if "Retraction" in label]
    others = [label for label in points if "Retraction" not in label and label != BAR]

    def ms(value):
        return "-" if value is None else f"{value * 1e3:.2f}"

    print("| accuracy | best Retraction | " + " | ".join(others + [BAR])
          + " | best Retraction / bar | Adaptive compiled loop (1 frame) / bar"
          " | Adaptive / bar with placement and frame |")
    print("|---:|---:|" + "---:|" * (len(others) + 4))
    for target in TARGETS:
        bar = time_to_reach(points[BAR], target)
        times = [(time_to_reach(points[label], target), label) for label in retraction]
        times = [(t, label) for t, label in times if t is not None]
        best, best_label = min(times) if times else (None, "")
        cols = [ms(time_to_reach(points[label], target)) for label in others]
        adaptive = time_to_reach(points[ADAPTIVE_COMPILED], target)
        order = best_label.split("order ")[-1] if best_label else "-"
        ratio = "-" if best is None or bar is None else f"{best / bar:.2f}"
        aratio = "-" if adaptive is None or bar is None else f"{adaptive / bar:.2f}"
        same = time_to_reach(points[BAR_FROM_START], target)
        sratio = "-" if adaptive is None or same is None else f"{adaptive / same:.2f}"
        print(f"| {target:.0e} | {ms(best)} (order {order}) | " + " | ".join(cols)
              + f" | {ms(bar)} | {ratio} | {aratio} | {sratio} |")

    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(11, 6))
        styles = {"Retraction": "o-", "Adaptive": "s-", "PyDy": "D-.", "ode": "^--",
                  "solve_ivp": "v:"}
        for label, rows in results.items():
            style = next((s for k, s in styles.items() if k in label), "x-")
            if label == BAR:
                style = "k^--"
            rows = [r for r in rows if np.isfinite(r[1])]  # not the failed settings
            ax.loglog([r[1] * 1e3 for r in rows], [max(r[2], 1e-16) for r in rows], style,
                      label=label, markersize=4)
        ax.axhspan(1e-10, 1e-3, color="0.93", zorder=0)
        ax.set_xlabel("wall time [ms] (minimum of interleaved repeats)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"\nwrote {os.path.normpath(args.png)}")


if __name__ == "__main__":
    main()
