"""When a rolling coin falls flat, over a grid of initial lean and rolling spin.

A parameter study with :func:`nhphys.sweep`. Each run is the coin of :mod:`nhphys.scenes.coin`
(radius 12.75 mm, 8.5 g) on a horizontal plane, started leaning ``lean`` rad from the vertical
and spinning about its own axis at ``spin`` rad/s (rolling, with no turning). A coin that falls
flat ends its run with the contact event ``"flat"``; the ensemble records that time for the run
(``fail_time``, the start of the step in which the disk's plane came within its flat angle of
the ground) while the other runs go on. The map (``fall_map.png``) shows the fall-flat time;
white cells stayed up for the whole run, grey cells (if any) stopped for another reason.

Run ``python -m nhphys.scenes.coin_fall [--out DIR] [--size 48]``: writes the runs' Zarr store
``runs.zarr`` and ``fall_map.png`` into ``out/coin_fall/`` and prints their paths. The study
runs on a Dask ``LocalCluster`` (``--no-cluster`` runs it in this process); a re-run with the
same arguments continues the store.
"""

import os
import sys

import numpy as np

from nhphys.lie import so3
from nhphys.scenes._study import grid_parser, print_paths, run_grid, save_map
from nhphys.scenes.coin import coin, ground
from nhphys.systems import RollingBody


def build(lean, spin):
    """One run: the coin leaning ``lean`` rad from the vertical, spinning at ``spin`` rad/s
    about its axis (module level, so that Dask's workers can import it)."""
    return RollingBody(coin, ground), {"orientation": so3.exp([np.pi / 2 - lean, 0.0, 0.0]),
                                       "omega": [0.0, 0.0, spin]}


def main(argv=None):
    parser = grid_parser(__doc__.splitlines()[0], "coin_fall", size=48, t_final=5.0, dt=2e-4)
    parser.add_argument("--max-spin", type=float, default=4.0, help="rad/s")
    args = parser.parse_args(argv)
    leans = np.linspace(0.02, 1.2, args.size)
    spins = np.linspace(0.0, args.max_spin, args.size)
    # only the status matters here: keep the first and the last frames
    ds, store = run_grid(build, {"lean": leans, "spin": spins}, args,
                         save_every=round(args.t_final / args.dt))
    status = np.asarray(ds.status).reshape(args.size, args.size)
    fell = status == "flat"
    fall_time = np.where(fell, np.asarray(ds.fail_time).reshape(args.size, args.size), np.nan)
    other = (status != "ok") & ~fell
    print(f"{args.size}x{args.size} runs: {fell.sum()} fell flat, "
          f"{(status == 'ok').sum()} stayed up for {args.t_final:g} s, {other.sum()} other "
          f"failures ({', '.join(sorted(set(status[other].tolist()))) or 'none'})")
    from matplotlib.colors import LogNorm

    path = os.path.join(args.out, "fall_map.png")
    # the falls span two decades (a coin barely turning drops in tenths of a second, one
    # near the boundary of steady rolling circles for seconds): a log scale shows both
    norm = LogNorm() if fell.any() else None
    save_map(path, fall_time, spins, leans, grey=other, cmap="magma", norm=norm,
             label="falls flat at [s]",
             xlabel="initial rolling spin about the coin's axis [rad/s]",
             ylabel="initial lean from the vertical [rad]",
             title=f"coin: fall-flat time (white: still rolling at {args.t_final:g} s)\n"
                   f"Retraction('exp'), h = {args.dt:g} s, {args.size}x{args.size} runs")
    print_paths(store, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
