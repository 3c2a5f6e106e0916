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
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

STRICT = os.environ.get("NHPHYS_STRICT_BUILD", "") == "1"
# the modules compiled with OpenMP (their prange loops spread over threads) where the compiler
# takes -fopenmp; NHPHYS_NO_OPENMP=1 builds them without it (their loops then run serially)
OPENMP_MODULES = ("nhphys_ext.rolling",)
OPENMP_FLAG = "-fopenmp"
NO_OPENMP = os.environ.get("NHPHYS_NO_OPENMP", "") == "1"
OPENMP_PROBE = """#include <omp.h>
int main(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    return omp_get_max_threads() > 0 && n > 0 ? 0 : 1;
}
"""


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
        if ext.name in OPENMP_MODULES and self._openmp():
            ext.extra_compile_args = [*ext.extra_compile_args, OPENMP_FLAG]
            ext.extra_link_args = [*ext.extra_link_args, OPENMP_FLAG]
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._give_up(exc)

    def _openmp(self):
        """True when this compiler compiles and links a tiny OpenMP program with -fopenmp
        (probed once; never with NHPHYS_NO_OPENMP=1)."""
        if NO_OPENMP:
            return False
        if getattr(self, "_has_openmp", None) is None:
            self._has_openmp = False
            with tempfile.TemporaryDirectory() as tmp:
                source = os.path.join(tmp, "probe.c")
                with open(source, "w") as f:
                    f.write(OPENMP_PROBE)
                try:
                    objects = self.compiler.compile([source], output_dir=tmp,
                                                    extra_postargs=[OPENMP_FLAG])
                    self.compiler.link_executable(objects, "probe", output_dir=tmp,
                                                  extra_postargs=[OPENMP_FLAG])
                    self._has_openmp = True
                except Exception:  # CompileError, LinkError: no OpenMP here
                    sys.stderr.write("NOTE: the compiler does not take -fopenmp; "
                                     "nhphys_ext.rolling steps ensembles on one thread.\n")
        return self._has_openmp

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
