"""The one place that imports PyVista (lazily): off-screen set-up for machines with no display."""

import os
import sys


def headless() -> bool:
    """True when no window can be opened (Linux without ``DISPLAY`` or ``WAYLAND_DISPLAY``)."""
    if not sys.platform.startswith("linux"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def pyvista(off_screen: bool = False):
    """Import and return :mod:`pyvista`.

    With no display, VTK is pointed at its EGL render window before it is loaded (its default
    X window would only print a warning and fall back), and PyVista renders off screen.
    """
    if (off_screen or headless()) and "vtkmodules" not in sys.modules:
        os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")
    import pyvista as pv

    if headless():
        pv.OFF_SCREEN = True
    return pv


def polydata(points, faces, pv=None):
    """A triangle ``PolyData`` from ``points`` (m, 3) float64 and ``faces`` (k, 3) ints."""
    import numpy as np

    pv = pv or pyvista()
    faces = np.asarray(faces, dtype=np.int64)
    cells = np.hstack([np.full((len(faces), 1), 3, dtype=np.int64), faces]).ravel()
    return pv.PolyData(np.asarray(points, dtype=float), cells)
