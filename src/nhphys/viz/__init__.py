"""Viewing: live PyVista windows, off-screen rendering to GIF/MP4/PNG, diagnostic plots.

This package is the only place nhphys imports PyVista and VTK, and it does so when a function
is called, so ``import nhphys`` (and ``import nhphys.viz``) stays fast and works with no display.
With no display, VTK's EGL path renders off screen.

* :func:`render` ``(scene, trajectory, "out.gif" | "out.mp4" | "frame.png", fps=...)``;
* :func:`render_articulated` ``(system, trajectory, path)`` and :func:`play_articulated`
  ``(system, trajectory)``: the same, and a replay window, for an articulated system
  (``nhphys.systems.Articulated``, ``Bicycle``);
* :func:`show` ``(scene, ...)``: a window stepping the simulation live;
* :func:`play` ``(trajectory, scene=None)``: a window replaying a run;
* :mod:`nhphys.viz.plots`: matplotlib figures of energy error, residuals, contact paths and
  integrator comparisons.
"""

from nhphys.viz._pyvista import headless
from nhphys.viz.live import play, show
from nhphys.viz.articulated import play_articulated, render_articulated
from nhphys.viz.rendering import render
from nhphys.viz.view import SceneView

__all__ = ["render", "render_articulated", "play_articulated", "show", "play", "SceneView", "headless", "plots"]


def __getattr__(name):
    if name == "plots":  # matplotlib, loaded when asked for
        import importlib

        return importlib.import_module("nhphys.viz.plots")
    raise AttributeError(f"module 'nhphys.viz' has no attribute {name!r}")
