"""The benchmark bicycle: self-stable at 5 m/s, falling over at 3 m/s.

The Whipple–Carvallo bicycle with the parameters of the benchmark of Meijaard et al. (2007),
nhphys's nonlinear model (``nhphys.systems.Bicycle``) stepped by the symmetric discrete
Lagrange-d'Alembert method (``DLA()``):

* released at 5 m/s with a lean of 0.05 rad, it steers into the lean, weaves with a shrinking
  amplitude and runs on upright: 5 m/s is inside the self-stable range, between the weave and
  capsize speeds that the linearisation of the same model gives;
* released at 3 m/s with a lean of 0.01 rad, its weave grows and it falls over; the run ends
  when the bicycle lies on the ground (the model has no frame touching it);
* released at 3 m/s with the same lean but pedalled (a constant torque of 14.6 N m on the rear
  wheel, ``JointMotor("rear_wheel", torque=14.6)``: about 0.5 m/s^2), its weave grows until
  it passes the weave speed, then dies away; past the capsize speed the lean creeps;
* released at 3 m/s with the same lean on a hill (a 3 degree slope, ``Bicycle(slope=...)``),
  it coasts down, speeding up at about 0.49 m/s^2, and does the same.

Figures: ``eigenvalues.png`` (the four eigenvalues of the upright motion against the speed,
from the nonlinear model linearised), ``runs.png`` (roll and steer of both runs against the
linear solution), ``strobe.png`` (the bicycle drawn every 0.5 s) and ``diagnostics.png``
(energy error and constraint residual).

Run ``python -m nhphys.scenes.bicycle [--out DIR] [--dt H] [--t-final T] [--gif]``: writes the
PNGs into ``out/bicycle/`` (with ``--gif`` also ``ride.gif`` and ``fall.gif``, rendered off
screen) and prints their paths.

``nhphys view bicycle`` steps two of them live, side by side (``scene``): one released at 5 m/s
with a lean of 0.05 rad, which recovers, and one at 3 m/s with a lean of 0.01 rad, pedalled,
whose weave grows and then dies away once it is past the weave speed.
"""

import argparse
import os

import numpy as np

import nhphys
from nhphys.errors import NewtonError
from nhphys.forces import JointMotor
from nhphys.integrators import DLA
from nhphys.surfaces import Plane
from nhphys.systems import Bicycle

RUNS = {"5 m/s": {"speed": 5.0, "roll": 0.05}, "3 m/s": {"speed": 3.0, "roll": 0.01},
        "3 m/s, pedalled": {"speed": 3.0, "roll": 0.01},
        "3 m/s, downhill": {"speed": 3.0, "roll": 0.01}}
SLOPE = np.deg2rad(3.0)
PEDAL_TORQUE = 14.6  # N m on the rear wheel
STROBE_SECONDS = 4.5  # the strobe figure's time span
STROBE_EVERY = 0.3

# The viewable scene: the self-stable run and the pedalled one, 2 m apart.
scene = nhphys.Scene(name="bicycle", camera=(-0.6, -1.0, 0.5))
scene.add_ground(Plane(point=(12.5, -2.0, 0.0), extent=14.0), color="#b9c4a8", resolution=129)
scene.add_articulated(Bicycle(), name="stable", color="#b3402a", **RUNS["5 m/s"])
scene.add_articulated(Bicycle(forces=[JointMotor("rear_wheel", torque=PEDAL_TORQUE)]),
                      name="pedalled", color="#2e86ab", position=(0.0, 2.0), **RUNS["3 m/s"])
defaults = {"t_final": 4.0, "dt": 1e-3, "fps": 25.0, "size": (640, 400)}


def run(bike, t_final, dt, start):
    """The run from ``start``, to ``t_final`` or to where the bicycle lies on the ground
    (then the frames before it, and the message)."""
    save = max(1, round(0.01 / dt))
    try:
        return nhphys.simulate(bike, t_final, dt, integrator=DLA(), save_every=save,
                               **start), None
    except NewtonError as error:
        return error.trajectory, str(error)


def linear_solution(bike, speed, start, t):
    """Roll and steer (2, k) of the linearised equations from the same start."""
    from scipy.linalg import expm

    A = bike.linearized(speed)[0]
    x0 = np.array([start.get("roll", 0.0), start.get("steer", 0.0), 0.0, 0.0])
    return np.array([expm(A * ti) @ x0 for ti in t])[:, :2].T


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "bicycle"))
    parser.add_argument("--t-final", type=float, default=10.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--gif", action="store_true",
                        help="also render the runs at 5 and 3 m/s to ride.gif and fall.gif")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bike = Bicycle()
    weave, capsize = bike.self_stable_speeds()
    print(f"self-stable from the weave speed {weave:.10f} m/s to the capsize speed "
          f"{capsize:.10f} m/s")
    speeds = np.linspace(0.0, 10.0, 101)
    eigenvalues = np.array([bike.eigenvalues(v)[0] for v in speeds])

    systems = {"3 m/s, pedalled": Bicycle(forces=[JointMotor("rear_wheel",
                                                              torque=PEDAL_TORQUE)]),
               "3 m/s, downhill": Bicycle(slope=SLOPE)}
    runs = {}
    for name, start in RUNS.items():
        traj, ended = run(systems.get(name, bike), args.t_final, args.dt, start)
        runs[name] = traj
        balance = traj.energy - traj.work
        error = np.abs(balance - balance[0]) / traj.energy[0]
        end = f"ended: {ended}" if ended else f"speed at the end {traj.speed[-1]:.2f} m/s"
        print(f"{name}: to t = {traj.t[-1]:.2f} s, largest |roll| {np.abs(traj.roll).max():.3f} "
              f"rad, relative error of energy - work {error.max():.1e}, largest constraint "
              f"residual {traj.constraint_residual.max():.1e}; {end}")

    paths = [os.path.join(args.out, name) for name in
             ("eigenvalues.png", "runs.png", "strobe.png", "diagnostics.png")]

    fig, ax = plt.subplots(figsize=(8, 5))
    order = np.argsort(eigenvalues.real, axis=1)
    real = np.take_along_axis(eigenvalues.real, order, axis=1)
    ax.plot(speeds, real, "k.", ms=3)
    ax.plot(speeds, np.abs(eigenvalues.imag).max(axis=1), "b.", ms=3,
            label="|imaginary part| (the weave)")
    ax.axvspan(weave, capsize, color="green", alpha=0.15, label="self-stable")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_ylim(-10, 10)
    ax.set_xlabel("speed [m/s]")
    ax.set_ylabel("eigenvalue [1/s]")
    ax.set_title("upright straight motion: real parts (black), from the nonlinear model")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(4, 1, figsize=(9, 11.5), sharex=True)
    for ax, (name, traj) in zip(axes, runs.items()):
        start = RUNS[name]
        ax.plot(traj.t, traj.roll, label="roll")
        ax.plot(traj.t, traj.steer, label="steer")
        if name in systems:
            speed = ax.twinx()
            speed.plot(traj.t, traj.speed, "g", lw=0.8)
            speed.axhline(weave, color="g", ls=":", lw=0.8)
            speed.axhline(capsize, color="g", ls=":", lw=0.8)
            speed.set_ylabel("speed [m/s]")
        else:
            linear = linear_solution(bike, start["speed"], start, traj.t)
            ax.plot(traj.t, linear[0], "k--", lw=0.8, label="linearised")
            ax.plot(traj.t, linear[1], "k--", lw=0.8)
        if name == "3 m/s":
            ax.set_ylim(-2, 2)
        extra = " (green: speed; dotted: weave and capsize speeds)" if name in systems else ""
        ax.set_title(f"{name}, released with a lean of {start['roll']:g} rad{extra}")
        ax.set_ylabel("angle [rad]")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)

    fig = plt.figure(figsize=(13, 8))
    for i, (name, traj) in enumerate(list(runs.items())[:2]):
        ax = fig.add_subplot(2, 1, i + 1, projection="3d")
        shown = traj.t <= STROBE_SECONDS
        every = max(1, round(STROBE_EVERY / (traj.t[1] - traj.t[0])))
        frames = list(np.flatnonzero(shown)[::every])
        last = np.flatnonzero(shown)[-1]
        if frames[-1] != last:
            frames.append(last)
        for k in frames:
            shade = 0.25 + 0.75 * traj.t[k] / max(traj.t[last], 1e-9)
            for part, line in bike.outline(traj.q[k]).items():
                ax.plot(*line.T, color=(0.1, 0.2, 0.6, shade) if "wheel" in part
                        else (0.7, 0.2, 0.1, shade), lw=1.2)
        path = traj.rear_contact[shown]
        ax.plot(path[:, 0], path[:, 1], 0 * path[:, 0], "k", lw=0.6)
        lo, hi = path.min(axis=0) - 0.7, path.max(axis=0) + 0.7
        hi[0] += 1.0
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_zlim(0.0, 1.5)
        ax.set_box_aspect((hi[0] - lo[0], hi[1] - lo[1], 1.5), zoom=1.5)  # true proportions
        ax.set_zticks([0.0, 1.0])
        ax.locator_params(axis="y", nbins=3)
        ax.view_init(elev=18, azim=-65)
        ax.set_title(f"{name}: the first {min(STROBE_SECONDS, traj.t[last]):.1f} s, every "
                     f"{STROBE_EVERY:g} s (darker later) [m]")
    fig.tight_layout()
    fig.savefig(paths[2], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, traj in runs.items():
        balance = traj.energy - traj.work
        axes[0].semilogy(traj.t, np.abs(balance - balance[0]) / traj.energy[0] + 1e-18,
                         label=name)
        axes[1].semilogy(traj.t, traj.constraint_residual + 1e-18, label=name)
    axes[0].set_title("relative error of energy - work (the motor's)")
    axes[1].set_title("constraint residual (|A v|, front wheel's gap)")
    for ax in axes:
        ax.set_xlabel("t [s]")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"DLA(), h = {args.dt:g} s")
    fig.tight_layout()
    fig.savefig(paths[3], dpi=110)
    plt.close(fig)
    if args.gif:
        from nhphys.viz import render_articulated

        for name, gif in (("5 m/s", "ride.gif"), ("3 m/s", "fall.gif")):
            paths.append(render_articulated(bike, runs[name], os.path.join(args.out, gif),
                                            fps=25)["path"])
    for path in paths:
        print(path)


if __name__ == "__main__":
    main()
