"""Choosing between the Cython kernels (``nhphys_ext``) and their Python twins, per module.

Each kernel module (``nhphys_ext.so3``, ``nhphys_ext.rolling``, ...) is probed on its own, once:

* ``backend="auto"`` uses a module's kernel when it was built, unless ``NHPHYS_PUREPYTHON=1``
  is set; a missing one falls back to its twin with one warning naming it (a partial build runs
  what was built);
* ``"cython"`` insists on the kernel (a ``ValueError`` naming the missing module);
* ``"python"`` always runs the twins.

:func:`choose` returns the module together with the name of the implementation it is, so that a
run records which backend really stepped from that choice.
"""

import functools
import importlib
import os
import warnings

BACKENDS = ("auto", "cython", "python")
KERNELS = ("so3", "se2", "surfaces", "newton", "forces", "models", "suslov", "se2_retraction",
           "newmark", "rolling", "rhs", "multibody")
_warned = set()


def force_python() -> bool:
    """True when ``NHPHYS_PUREPYTHON=1`` asks for the Python twins everywhere."""
    return os.environ.get("NHPHYS_PUREPYTHON", "") == "1"


@functools.lru_cache(maxsize=None)
def kernel_module(name: str):
    """Import ``nhphys_ext.<name>``, or return None if that extension was not built."""
    try:
        return importlib.import_module(f"nhphys_ext.{name}")
    except ImportError:
        return None


def missing_kernels():
    """The kernel modules of :data:`KERNELS` that cannot be imported."""
    return [name for name in KERNELS if kernel_module(name) is None]


def extensions_built() -> bool:
    """True when every compiled kernel module can be imported."""
    return not missing_kernels()


def _check(backend):
    if backend not in BACKENDS:
        raise ValueError(f"Expected `backend` to be one of {BACKENDS}, got {backend!r}.")


def choose(name: str, backend: str = "auto"):
    """The implementation of kernel module ``name`` for a requested ``backend``.

    Returns
    -------
    module : module
        ``nhphys_ext.<name>`` or its twin ``nhphys.twins.<name>``.
    used : {"cython", "python"}
        Which of the two it is.

    Raises
    ------
    ValueError
        For an unknown backend name, or ``"cython"`` when that kernel was not built.
    """
    _check(backend)
    if backend == "python" or (backend == "auto" and force_python()):
        return importlib.import_module(f"nhphys.twins.{name}"), "python"
    module = kernel_module(name)
    if module is not None:
        return module, "cython"
    if backend == "cython":
        raise ValueError(
            f"backend='cython' was requested but the kernel nhphys_ext.{name} is not built; "
            "reinstall with a C compiler (NHPHYS_STRICT_BUILD=1 shows why the build failed)."
        )
    if name not in _warned:
        _warned.add(name)
        warnings.warn(
            f"The nhphys_ext.{name} kernel is not built: running its (much slower) Python twin.",
            RuntimeWarning,
            stacklevel=3,
        )
    return importlib.import_module(f"nhphys.twins.{name}"), "python"


def implementation(name: str, backend: str = "auto"):
    """The module implementing kernel ``name`` (see :func:`choose`)."""
    return choose(name, backend)[0]


def resolve(backend: str = "auto") -> str:
    """``"cython"`` or ``"python"``: the backend ``backend`` gives when every kernel is asked for.

    A partial build resolves ``"auto"`` to ``"python"`` here; each run still uses every kernel
    that was built (:func:`choose`) and records what really stepped.
    """
    _check(backend)
    if backend == "python" or (backend == "auto" and force_python()):
        return "python"
    if extensions_built():
        return "cython"
    if backend == "cython":
        raise ValueError(
            "backend='cython' was requested but the nhphys_ext kernels "
            f"{missing_kernels()} are not built; reinstall with a C compiler "
            "(NHPHYS_STRICT_BUILD=1 shows why the build failed)."
        )
    return "auto"


def described(runs):
    """What steps ``runs`` (started runs), for ``meta["backend"]``: ``"cython"``, ``"python"``,
    with the reason when a run steps on the twin for its own reasons (``"python (a force element
    is a Python callable)"``), or ``"mixed: ..."`` for runs that differ."""
    names = []
    for run in runs:
        name = getattr(run, "backend", "python")
        note = getattr(run, "backend_note", "")
        names.append(f"{name} ({note})" if note else name)
    unique = list(dict.fromkeys(names))
    return unique[0] if len(unique) == 1 else "mixed: " + ", ".join(unique)
