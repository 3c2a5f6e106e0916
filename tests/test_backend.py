import os

import numpy as np
import pytest

from nhphys import _backend
from nhphys.lie import so3


def test_strict_build_means_kernels_are_importable():
    # CI installs with NHPHYS_STRICT_BUILD=1: a silent fallback to the twins must fail here.
    if os.environ.get("NHPHYS_STRICT_BUILD", "") == "1":
        assert _backend.extensions_built()
        assert _backend.resolve("auto") in ("cython", "python")
        if os.environ.get("NHPHYS_PUREPYTHON", "") != "1":
            assert _backend.resolve("auto") == "cython"


def test_unknown_backend_is_rejected():
    with pytest.raises(ValueError, match="`backend`"):
        so3.exp([0.1, 0.2, 0.3], backend="fortran")


def test_purepython_switch_forces_twins(monkeypatch):
    monkeypatch.setenv("NHPHYS_PUREPYTHON", "1")
    assert _backend.resolve("auto") == "python"
    assert _backend.implementation("so3").__name__ == "nhphys.twins.so3"


def test_python_backend_runs_twins():
    R = so3.exp(np.array([0.0, 0.0, np.pi / 2]), backend="python")
    np.testing.assert_allclose(R @ [1, 0, 0], [0, 1, 0], atol=1e-15)


def test_import_is_light():
    import subprocess
    import sys

    code = "import sys, nhphys; print(sorted(m for m in ('pyvista', 'matplotlib', 'vtk', "
    code += "'sympy', 'tqdm', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
