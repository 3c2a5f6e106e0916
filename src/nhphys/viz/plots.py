"""Diagnostic figures with matplotlib: energy error, constraint residuals, contact paths, and an
integrator comparison (error against step size, energy against time).

Each panel function draws on a given ``ax`` (or a new figure) and returns the axes; the figure
functions take an optional ``path`` and write the image atomically.
"""

import os

import numpy as np

from nhphys.trajectory import atomic_path, check_writable


def _pyplot():
    import matplotlib

    if not os.environ.get("DISPLAY") and matplotlib.get_backend().lower() not in ("agg", "pdf"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _axes(ax):
    if ax is not None:
        return ax
    return _pyplot().subplots(figsize=(6, 4))[1]


def _per_body(trajectory, name):
    values = np.asarray(trajectory[name], dtype=float)
    return values if trajectory.multibody else values[:, None]


def _save(fig, path):
    if path is not None:
        path = os.fspath(path)
        check_writable(path, "path")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=110, format=os.path.splitext(path)[1][1:] or "png")
    return fig


def _zero_note(ax, values, what):
    """Say so when a quantity is exactly zero (a log axis cannot show it)."""
    if np.all(np.asarray(values) == 0):
        ax.text(0.5, 0.5, f"{what}: exactly 0 at every saved frame", transform=ax.transAxes,
                ha="center", va="center")


def energy_error(trajectory, ax=None, label=None):
    """Relative energy error ``|E(t) - E(0)| / |E(0)|`` per body, log scale."""
    ax = _axes(ax)
    energy = _per_body(trajectory, "energy")
    scale = np.where(np.abs(energy[0]) > 0, np.abs(energy[0]), 1.0)
    err = np.abs(energy - energy[0]) / scale
    for b, name in enumerate(trajectory.body_names):
        text = label or (name if err.shape[1] > 1 else None)
        ax.semilogy(trajectory.t, np.maximum(err[:, b], 1e-18), lw=1, label=text)
    ax.set_xlabel("t [s]")
    _zero_note(ax, err, "energy error")
    ax.set_ylabel(r"$|E - E_0| / |E_0|$")
    ax.set_title("energy error")
    ax.grid(True, which="both", alpha=0.3)
    return ax


def energy_balance(trajectory, path=None, title=None, work_label="work of the forces"):
    """Energy against the work of the force elements (and a moving ground), above, and the drift
    of their difference ``energy - work``, the conserved quantity, below: a figure (one body).

    Parameters
    ----------
    trajectory : Trajectory
        With ``energy`` and ``work`` (n,).
    path : str or path, optional
        Written atomically.
    title : str, optional
    work_label : str
        The legend of the work curve.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    t, energy, work = trajectory.t, trajectory.energy, trajectory.work
    axes[0].plot(t, energy - energy[0], lw=1, label="energy - energy(0)")
    axes[0].plot(t, work, lw=1, ls="--", label=work_label)
    axes[0].set_ylabel("J")
    axes[0].legend()
    balance = energy - work
    axes[1].plot(t, balance - balance[0], lw=1, color="k")
    axes[1].set_ylabel("(energy - work) drift [J]")
    axes[1].set_xlabel("t [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def constraint_residuals(trajectory, ax=None, label=None):
    """Constraint residual per body, log scale (exact zeros drawn at 1e-18)."""
    ax = _axes(ax)
    res = _per_body(trajectory, "constraint_residual")
    for b, name in enumerate(trajectory.body_names):
        text = label or (name if res.shape[1] > 1 else None)
        ax.semilogy(trajectory.t, np.maximum(res[:, b], 1e-18), lw=1, label=text)
    ax.set_xlabel("t [s]")
    _zero_note(ax, res, "residual")
    ax.set_ylabel("residual")
    ax.set_title("constraint residual")
    ax.grid(True, which="both", alpha=0.3)
    return ax


def contact_paths(trajectory, ax=None):
    """Paths of the contact points on the ground, seen from above (x, y)."""
    ax = _axes(ax)
    if "contact_point" in trajectory.fields:
        points = _per_body(trajectory, "contact_point") if trajectory.multibody \
            else trajectory.contact_point[:, None]
    else:
        points = trajectory.body_poses()[0]
    for b, name in enumerate(trajectory.body_names):
        line, = ax.plot(points[:, b, 0], points[:, b, 1], lw=1, label=name)
        ax.plot(points[0, b, 0], points[0, b, 1], "o", ms=3, color=line.get_color())
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("contact paths")
    ax.grid(True, alpha=0.3)
    return ax


def diagnostics(trajectory, path=None, title=None):
    """Energy error, constraint residual and contact paths side by side; returns the figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    energy_error(trajectory, axes[0])
    constraint_residuals(trajectory, axes[1])
    contact_paths(trajectory, axes[2])
    if len(trajectory.body_names) > 1 and len(trajectory.body_names) <= 10:
        axes[2].legend(fontsize=8)
    fig.suptitle(title or trajectory.meta.get("scene", {}).get("name", "nhphys run"))
    fig.tight_layout()
    return _save(fig, path)


def _final_error(run, ref):
    """Largest position + rotation error over bodies at the last common time."""
    p, R = run.body_poses()
    q, S = ref.body_poses()
    k = int(np.argmin(np.abs(ref.t - run.t[-1])))
    return float(np.max(np.linalg.norm(p[-1] - q[k], axis=-1)
                        + np.linalg.norm(R[-1] - S[k], axis=(-2, -1))))


def integrator_comparison(scene, integrators, dts, t_final, reference="reference",
                          reference_dt=None, path=None, backend="auto"):
    """Run ``scene`` with each integrator at each step size; plot the error at ``t_final``
    against the step (log-log, with fitted slopes) and the energy error against time.

    Parameters
    ----------
    scene : nhphys.Scene
    integrators : dict of label -> integrator (or name)
    dts : sequence of float
        Step sizes (``t_final`` must be a whole number of each).
    t_final : float
    reference : str, integrator or Trajectory
        The solution errors are measured against: a trajectory, or an integrator run at
        ``reference_dt`` (default the smallest step / 4).
    path : str, optional
        Image file to write.

    Returns
    -------
    fig, results
        ``results[label] = {"dt": [...], "error": [...], "order": fitted slope}``.
    """
    from nhphys import Trajectory

    dts = sorted(float(h) for h in dts)
    if isinstance(reference, Trajectory):
        ref = reference
    else:
        h = reference_dt or dts[0] / 4
        ref = scene.simulate(t_final, h, integrator=reference, backend=backend, progress=False)
    plt = _pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    results = {}
    for label, integrator in integrators.items():
        errors, runs = [], []
        for h in dts:
            run = scene.simulate(t_final, h, integrator=integrator, backend=backend,
                                 progress=False)
            runs.append(run)
            errors.append(_final_error(run, ref))
        errors = np.array(errors)
        good = errors > 0
        order = float(np.polyfit(np.log(np.array(dts)[good]), np.log(errors[good]), 1)[0]) \
            if good.sum() >= 2 else float("nan")
        results[label] = {"dt": dts, "error": errors.tolist(), "order": order}
        line, = ax1.loglog(dts, errors, "o-", label=f"{label} (slope {order:.2f})")
        energy_error(runs[len(runs) // 2], ax2, label=f"{label}, h = {dts[len(runs) // 2]:g}")
        ax2.lines[-1].set_color(line.get_color())
    ax1.set_xlabel("step size h [s]")
    ax1.set_ylabel(f"error at t = {t_final:g} s")
    ax1.set_title("convergence")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8)
    fig.suptitle(f"integrator comparison: {scene.name}")
    fig.tight_layout()
    _save(fig, path)
    return fig, results
