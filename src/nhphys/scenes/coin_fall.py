"""When a rolling coin falls flat, over a grid of initial lean and rolling spin.

A parameter study with :func:`nhphys.sweep`. Each run is the coin of :mod:`nhphys.scenes.coin`
(radius 12.75 mm, 8.5 g) on a horizontal plane, started leaning ``lean`` rad from the vertical
and spinning about its own axis at ``spin`` rad/s (rolling, with no turning). A coin that falls
flat ends its run with the contact event ``"flat"``; the ensemble records that time for the run
(``fail_time``, the start of the step in which the disk's plane came within its flat angle of
the ground) while the other runs go on. The map (``fall_map.png``) shows the fall-flat time;
white cells stayed up for the whole run.

Run ``python -m nhphys.scenes.coin_fall [--out DIR] [--size 48]``: writes the runs' Zarr store
``runs.zarr`` and ``fall_map.png`` into ``out/coin_fall/`` and prints their paths. The study
runs on a Dask ``LocalCluster`` (``--no-cluster`` runs it in this process); a re-run with the
same arguments continues the store.
"""

import argparse
import os
import sys

import numpy as np

import nhphys
from nhphys.lie import so3
from nhphys.scenes.coin import coin, ground
from nhphys.systems import RollingBody


def build(lean, spin):
    """One run: the coin leaning ``lean`` rad from the vertical, spinning at ``spin`` rad/s
    about its axis (module level, so that Dask's workers can import it)."""
    return RollingBody(coin, ground), {"orientation": so3.exp([np.pi / 2 - lean, 0.0, 0.0]),
                                       "omega": [0.0, 0.0, spin]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("out", "coin_fall"))
    parser.add_argument("--size", type=int, default=48, help="grid points along each axis")
    parser.add_argument("--t-final", type=float, default=3.0)
    parser.add_argument("--dt", type=float, default=2e-4)
    parser.add_argument("--max-spin", type=float, default=15.0, help="rad/s")
    parser.add_argument("--no-cluster", action="store_true",
                        help="run the batches in this process instead of a Dask LocalCluster")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    leans = np.linspace(0.02, 1.2, args.size)
    spins = np.linspace(0.0, args.max_spin, args.size)
    store = os.path.join(args.out, "runs.zarr")
    n_steps = round(args.t_final / args.dt)
    # only the status matters here: keep the first and the last frames
    ds = nhphys.sweep(build, {"lean": leans, "spin": spins}, args.t_final, args.dt,
                      out=store, save_every=n_steps,
                      client=False if args.no_cluster else None)
    status = np.asarray(ds.status).reshape(args.size, args.size)
    fell = status == "flat"
    fall_time = np.where(fell, np.asarray(ds.fail_time).reshape(args.size, args.size), np.nan)
    other = (status != "ok") & ~fell
    print(f"{args.size}x{args.size} runs: {fell.sum()} fell flat, "
          f"{(status == 'ok').sum()} stayed up for {args.t_final:g} s, {other.sum()} other "
          f"failures ({', '.join(sorted(set(status[other].tolist()))) or 'none'})")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5.2))
    extent = [spins[0], spins[-1], leans[0], leans[-1]]
    image = ax.imshow(fall_time, origin="lower", extent=extent, aspect="auto", cmap="magma",
                      interpolation="nearest")
    fig.colorbar(image, ax=ax, label="falls flat at [s]")
    ax.set_xlabel("initial rolling spin about the coin's axis [rad/s]")
    ax.set_ylabel("initial lean from the vertical [rad]")
    ax.set_title(f"coin: fall-flat time (white: still rolling at {args.t_final:g} s)\n"
                 f"Retraction('exp'), h = {args.dt:g} s, {args.size}x{args.size} runs")
    fig.tight_layout()
    path = os.path.join(args.out, "fall_map.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote:")
    for p in (store, path):
        print("  " + os.path.abspath(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
