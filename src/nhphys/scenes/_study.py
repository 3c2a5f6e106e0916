"""What the grid studies (``rattleback_map``, ``coin_fall``) share: their command line, the
sweep over a grid of two parameters, and the map they draw."""

import argparse
import os

import numpy as np

import nhphys


def grid_parser(description, out, size, t_final, dt):
    """The arguments every grid study takes: ``--out``, ``--size``, ``--t-final``, ``--dt`` and
    ``--no-cluster``, with the study's defaults; the study adds its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", default=os.path.join("out", out))
    parser.add_argument("--size", type=int, default=size, help="grid points along each axis")
    parser.add_argument("--t-final", type=float, default=t_final)
    parser.add_argument("--dt", type=float, default=dt)
    parser.add_argument("--no-cluster", action="store_true",
                        help="run the batches in this process instead of a Dask LocalCluster")
    return parser


def run_grid(build, axes, args, save_every):
    """Sweep ``build`` over the grid of ``axes`` (``{name: (size,) values}``, two of them) into
    ``runs.zarr`` of ``args.out`` (a re-run continues it); returns the dataset and the store's
    path."""
    os.makedirs(args.out, exist_ok=True)
    store = os.path.join(args.out, "runs.zarr")
    ds = nhphys.sweep(build, axes, args.t_final, args.dt, out=store, save_every=save_every,
                      client=False if args.no_cluster else None)
    return ds, store


def save_map(path, values, x, y, *, xlabel, ylabel, title, label, cmap, grey=None, norm=None):
    """Draw ``values`` (len(y), len(x)) over the grid of ``x`` and ``y`` as an image (NaN
    cells white, the cells of the bool mask ``grey`` grey) with a colour bar, into ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5.2))
    extent = [x[0], x[-1], y[0], y[-1]]
    if grey is not None:
        ax.imshow(np.where(grey, 1.0, np.nan), origin="lower", extent=extent, aspect="auto",
                  cmap="Greys", vmin=0.0, vmax=2.5, interpolation="nearest")
    image = ax.imshow(values, origin="lower", extent=extent, aspect="auto", cmap=cmap,
                      norm=norm, interpolation="nearest")
    fig.colorbar(image, ax=ax, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_paths(*paths):
    print("wrote:")
    for p in paths:
        print("  " + os.path.abspath(p))
