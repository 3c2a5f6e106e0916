"""The rattleback's reversal map: when it first turns round, over a grid of tilt and spin.

A parameter study with :func:`nhphys.sweep`. Each run is Kane and Levinson's rattleback
(:mod:`nhphys.scenes.rattleback`) on a horizontal plane, started at rest but for a spin ``s``
about the vertical, tilted by ``theta`` about its long and its short horizontal axes (the
orientation ``exp(theta (e1 + e2))``). The map (``reversal_map.png``) shows the first time its
vertical spin changes sign within ``t_final`` (the frames are ``save_every`` steps apart and
the sign change is located between them linearly); white cells did not reverse; grey cells are
runs that stopped on a failed Newton solve before reversing (large tilts and spins, where the
rolling model would lift the body off: the normal force falls through zero).

Run ``python -m nhphys.scenes.rattleback_map [--out DIR] [--size 64]``: writes the runs' Zarr
store ``runs.zarr`` and ``reversal_map.png`` into ``out/rattleback_map/`` and prints their paths.
The study runs on a Dask ``LocalCluster`` (one worker a core; ``--no-cluster`` runs it in this
process); a re-run with the same arguments continues the store and recomputes nothing written.
"""

import os
import sys

import numpy as np

from nhphys.lie import so3
from nhphys.scenes._study import grid_parser, print_paths, run_grid, save_map
from nhphys.scenes.rattleback import ground, rattleback
from nhphys.systems import RollingBody


def build(tilt, spin):
    """One run: the rattleback tilted by ``tilt`` degrees about e1 and e2, spun at ``spin``
    rad/s about the vertical (module level, so that Dask's workers can import it)."""
    theta = np.deg2rad(tilt)
    return RollingBody(rattleback, ground), {"orientation": so3.exp([theta, theta, 0.0]),
                                             "omega": [0.0, 0.0, spin]}


def vertical_spin(R, omega):
    """The spin about the vertical, ``(R Omega)_z``: (..., 3, 3) and (..., 3) -> (...)."""
    return (R[..., 2, :] * omega).sum(axis=-1)


def first_sign_change(t, w):
    """The first time ``w`` (runs, frames) changes sign, by linear interpolation between the
    frames at times ``t`` (frames,); NaN where it never does (NaN frames never count)."""
    before, after = w[:, :-1], w[:, 1:]
    change = (np.sign(before) * np.sign(after) < 0)
    first = np.where(change.any(axis=1), change.argmax(axis=1), -1)
    out = np.full(len(w), np.nan)
    rows = np.flatnonzero(first >= 0)
    k = first[rows]
    w0, w1 = before[rows, k], after[rows, k]
    out[rows] = t[k] + (t[k + 1] - t[k]) * w0 / (w0 - w1)
    return out


def main(argv=None):
    parser = grid_parser(__doc__.splitlines()[0], "rattleback_map", size=64, t_final=20.0,
                         dt=2e-3)
    parser.add_argument("--frame-every", type=float, default=0.05,
                        help="seconds between saved frames")
    parser.add_argument("--max-tilt", type=float, default=4.0, help="degrees")
    parser.add_argument("--max-spin", type=float, default=6.0, help="rad/s")
    args = parser.parse_args(argv)
    tilts = np.linspace(0.05, args.max_tilt, args.size)
    spins = np.linspace(-args.max_spin, args.max_spin, args.size)
    ds, store = run_grid(build, {"tilt": tilts, "spin": spins}, args,
                         save_every=max(1, round(args.frame_every / args.dt)))
    t = np.asarray(ds.time)
    w = vertical_spin(np.asarray(ds.R), np.asarray(ds.omega))
    reversal = first_sign_change(t, w).reshape(args.size, args.size)
    failed = (np.asarray(ds.status) != "ok").reshape(args.size, args.size)
    failed &= np.isnan(reversal)  # a run that reversed before it failed still counts
    print(f"{args.size}x{args.size} runs: {np.isfinite(reversal).sum()} reversed, "
          f"{failed.sum()} stopped by a failed step first, "
          f"{(np.isnan(reversal) & ~failed).sum()} did not reverse within {args.t_final:g} s")
    path = os.path.join(args.out, "reversal_map.png")
    save_map(path, reversal, spins, tilts, grey=failed, cmap="viridis",
             label="first reversal [s]", xlabel="initial spin about the vertical [rad/s]",
             ylabel="initial tilt about e1 and e2 [deg]",
             title=f"rattleback: first reversal within {args.t_final:g} s "
                   f"(white: none; grey: failed step)\nRetraction('exp'), h = {args.dt:g} s, "
                   f"{args.size}x{args.size} runs")
    print_paths(store, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
