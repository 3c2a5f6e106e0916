"""A wheel rolling over a wavy height field: a tyre (torus) follows the ground profile.

A wheel of radius 0.3 m with a tube of 5 cm (2 kg, a uniform torus) leans 0.1 rad and rolls at
1.4 m/s across the terrain z = 0.03 sin(3x) cos(2y); its contact point rides over the waves and
the wheel wobbles and turns as the ground tilts under it. The contact stays on the tube and the
no-slip condition holds to round-off at every step; the energy error stays small and bounded.
Figures: ``diagnostics.png`` (energy error, residuals, contact path) and ``profile.png`` (the
height of the contact point and the normal contact force along the run).

Run ``python -m nhphys.scenes.wheel_terrain [--out DIR]``: writes PNGs into ``out/wheel_terrain/`` and
prints their paths. ``nhphys view wheel_terrain`` shows it live.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys import RollingContact, Scene
from nhphys.shapes import Wheel
from nhphys.surfaces import HeightField
from nhphys.systems import RollingBody

MASS, RADIUS, TUBE, SPEED, LEAN = 2.0, 0.3, 0.05, 1.4, 0.1

terrain = HeightField.from_function("0.03*sin(3*x)*cos(2*y)", (-6, 6), (-6, 6), samples=241)
wheel = nhphys.RigidBody(MASS, Wheel.solid_inertia(MASS, RADIUS, TUBE), Wheel(RADIUS, TUBE),
                         name="wheel")

# rolling toward +x: body z (the axis) along +y tilted up by LEAN, body y along +x
c, s = np.cos(LEAN), np.sin(LEAN)
R0 = np.column_stack([[0.0, -s, c], [1.0, 0.0, 0.0], [0.0, c, s]])
START = {"orientation": R0, "omega": [0.0, 0.0, SPEED / (RADIUS + TUBE)],
         "position": [-4.0, 3.0, 0.0]}

scene = Scene(name="wheel_terrain", camera=(-5.5, -3.0, 1.5))
scene.add_ground(terrain, color="#8a9a6b", resolution=160)
scene.add_body(wheel, RollingContact(terrain), color="#303030", resolution=48, **START)

defaults = {"t_final": 5.0, "dt": 1e-3, "integrator": "exp", "fps": 20.0, "size": (480, 360)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "wheel_terrain"))
    parser.add_argument("--t-final", type=float, default=5.0)
    parser.add_argument("--dt", type=float, default=1e-3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nhphys.viz import plots

    system = RollingBody(wheel, terrain)
    traj = nhphys.simulate(system, args.t_final, args.dt, save_every=10, **START)
    paths = [os.path.join(args.out, "diagnostics.png"), os.path.join(args.out, "profile.png")]
    plt.close(plots.diagnostics(traj, paths[0], title="wheel over a wavy height field"))

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    ax0.plot(traj.t, traj.contact_point[:, 2] * 100)
    ax0.set_xlabel("t [s]")
    ax0.set_ylabel("height of the contact point [cm]")
    ax1.plot(traj.t[1:], traj.normal_force[1:])
    ax1.axhline(MASS * 9.81, color="k", ls=":", lw=1, label="weight")
    ax1.set_xlabel("t [s]")
    ax1.set_ylabel("normal contact force [N]")
    ax1.legend()
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    print(f"energy error {np.abs(traj.energy / traj.energy[0] - 1).max():.1e}; largest contact "
          f"residual {traj.contact_residual.max():.1e}, slip residual "
          f"{traj.slip_residual.max():.1e}; normal force {traj.normal_force[1:].min():.2f} .. "
          f"{traj.normal_force[1:].max():.2f} N")
    for p in paths:
        print(p)
    return paths


if __name__ == "__main__":
    main(sys.argv[1:])
