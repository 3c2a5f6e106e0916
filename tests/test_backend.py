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


def _pytest_with_a_kernel_hidden(tmp_path, strict):
    """Run one small test file in a fresh pytest with ``nhphys_ext.suslov`` made unimportable
    (as after a partial build), strict switch on or off."""
    import subprocess
    import sys

    (tmp_path / "hide_suslov_kernel.py").write_text(
        "import sys\n\n\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'nhphys_ext.suslov':\n"
        "            raise ImportError('hidden by the test')\n\n\n"
        "sys.meta_path.insert(0, Hide())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NHPHYS_STRICT_BUILD="1" if strict else "0")
    tests = os.path.dirname(__file__)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "-p", "hide_suslov_kernel", os.path.join(tests, "test_so3.py"), "-k", "leading_axes"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )


def test_strict_build_makes_a_missing_kernel_fail_at_collection(tmp_path):
    out = _pytest_with_a_kernel_hidden(tmp_path, strict=True)
    assert out.returncode != 0
    assert "NHPHYS_STRICT_BUILD=1 but these nhphys_ext kernels cannot be imported: suslov" \
        in out.stdout + out.stderr
    assert "passed" not in out.stdout


def test_without_the_strict_switch_a_missing_kernel_skips_with_its_reason(tmp_path):
    out = _pytest_with_a_kernel_hidden(tmp_path, strict=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 skipped" in out.stdout
    assert "kernels are not built (missing: suslov)" in out.stdout
