"""Build the Cython kernels in ``nhphys_ext``.

Every ``src/nhphys_ext/*.pyx`` becomes an extension module; the modules compile in parallel, one
job per available core. The importable packages live under ``src/``, so a script run from the
repository's root imports the installed (built) package, never an unbuilt source tree. If the build fails (no compiler, say), the
package still installs and ``nhphys`` runs on its pure-Python twins, with one warning at import.
``NHPHYS_STRICT_BUILD=1`` turns a failed build into an error instead, which is what CI uses.
"""

import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

STRICT = os.environ.get("NHPHYS_STRICT_BUILD", "") == "1"


def build_jobs():
    """The cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class OptionalBuildExt(build_ext):
    """``build_ext`` that compiles in parallel and degrades to a warning unless the strict switch
    is set."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = build_jobs()

    def run(self):
        try:
            super().run()
        except Exception as exc:  # compiler missing, Cython error, ...
            self._give_up(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._give_up(exc)

    def _give_up(self, exc):
        if STRICT:
            raise
        sys.stderr.write(
            f"WARNING: building the nhphys kernels failed ({exc}); "
            "nhphys will run on its pure-Python twins.\n"
        )


def extensions():
    try:
        import numpy
        from Cython.Build import cythonize
    except ImportError as exc:
        if STRICT:
            raise
        sys.stderr.write(f"WARNING: cannot cythonize ({exc}); pure-Python install.\n")
        return []
    modules = [
        Extension(
            f"nhphys_ext.{os.path.splitext(os.path.basename(path))[0]}",
            [path],
            include_dirs=[numpy.get_include()],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=["-O3"],
        )
        for path in sorted(glob.glob(os.path.join("src", "nhphys_ext", "*.pyx")))
    ]
    try:
        return cythonize(
            modules,
            language_level=3,
            nthreads=build_jobs(),
            include_path=["src"],
            compiler_directives={
                "boundscheck": False,
                "wraparound": False,
                "cdivision": True,
                "initializedcheck": False,
            },
        )
    except Exception as exc:
        if STRICT:
            raise
        sys.stderr.write(f"WARNING: cythonize failed ({exc}); pure-Python install.\n")
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
