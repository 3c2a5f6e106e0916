"""Choosing between the Cython kernels (``nhphys_ext``) and their Python twins.

``backend="auto"`` uses the kernels when they were built, unless ``NHPHYS_PUREPYTHON=1`` is set;
if they are missing it falls back to the twins with one warning. ``"cython"`` insists on the
kernels (an error if they are missing); ``"python"`` always runs the twins.
"""

import importlib
import os
import warnings

BACKENDS = ("auto", "cython", "python")
_warned = False


def force_python() -> bool:
    """True when ``NHPHYS_PUREPYTHON=1`` asks for the Python twins everywhere."""
    return os.environ.get("NHPHYS_PUREPYTHON", "") == "1"


def kernel_module(name: str):
    """Import ``nhphys_ext.<name>``, or return None if the extension was not built."""
    try:
        return importlib.import_module(f"nhphys_ext.{name}")
    except ImportError:
        return None


def extensions_built() -> bool:
    """True when the compiled kernels can be imported."""
    return kernel_module("so3") is not None


def resolve(backend: str = "auto") -> str:
    """Return ``"cython"`` or ``"python"`` for a requested ``backend``.

    Raises
    ------
    ValueError
        For an unknown backend name, or ``"cython"`` when the kernels were not built.
    """
    global _warned
    if backend not in BACKENDS:
        raise ValueError(f"Expected `backend` to be one of {BACKENDS}, got {backend!r}.")
    if backend == "python" or (backend == "auto" and force_python()):
        return "python"
    if extensions_built():
        return "cython"
    if backend == "cython":
        raise ValueError(
            "backend='cython' was requested but the nhphys_ext kernels are not built; "
            "reinstall with a C compiler (NHPHYS_STRICT_BUILD=1 shows why the build failed)."
        )
    if not _warned:
        warnings.warn(
            "nhphys_ext kernels are not built: running the (much slower) Python twins.",
            RuntimeWarning,
            stacklevel=3,
        )
        _warned = True
    return "python"


def implementation(name: str, backend: str = "auto"):
    """The module implementing kernel ``name``: ``nhphys_ext.<name>`` or ``nhphys.twins.<name>``."""
    if resolve(backend) == "cython":
        return kernel_module(name)
    return importlib.import_module(f"nhphys.twins.{name}")
