"""The package as installed: what a script run from the checkout imports, and the bundled
scenes found from any folder."""

import os
import subprocess
import sys

import nhphys
import nhphys.scenes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python(code, cwd):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_the_checkout_root_holds_no_importable_package_to_shadow_the_built_one():
    """A script run from the repository's root (its folder first on sys.path) must import the
    installed, built package, never an unbuilt source tree beside it."""
    for name in ("nhphys", "nhphys_ext"):
        assert not os.path.exists(os.path.join(ROOT, name, "__init__.py")), name
    out = python("import nhphys, nhphys_ext; from nhphys import _backend; "
                 "print(nhphys.__file__); print(nhphys_ext.__file__); "
                 "print(_backend.missing_kernels())", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    package, kernels, missing = out.stdout.strip().splitlines()
    assert os.path.dirname(package) == os.path.dirname(nhphys.__file__)
    assert not os.path.dirname(kernels) == os.path.join(ROOT, "nhphys_ext")
    if not _kernels_expected_missing():
        assert missing == "[]"


def _kernels_expected_missing():
    from nhphys import _backend

    return bool(_backend.missing_kernels()) and os.environ.get("NHPHYS_STRICT_BUILD") != "1"


def test_bundled_scenes_are_installed_with_the_package_and_listed_from_any_folder(tmp_path):
    out = subprocess.run([sys.executable, "-m", "nhphys", "list"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    listed = {line.split()[0] for line in out.stdout.splitlines() if line.startswith("  ")}
    assert {"bowl", "rattleback", "sleigh", "suslov_top", "marbles"} <= listed
    bundled = os.path.dirname(nhphys.scenes.__file__)
    assert os.path.dirname(bundled) == os.path.dirname(nhphys.__file__)
    assert os.path.isfile(os.path.join(bundled, "rattleback.py"))


def test_a_bare_scene_name_never_runs_a_file_of_the_current_folder(tmp_path):
    """`nhphys run NAME` inside a folder that has scenes/NAME.py (or NAME.py) runs the bundled
    scene, not that file."""
    marker = tmp_path / "ran"
    for folder in (tmp_path / "scenes", tmp_path):
        folder.mkdir(exist_ok=True)
        (folder / "suslov_top.py").write_text(
            f"open({str(marker)!r}, 'w').write('x')\nscene = None\n")
    out = subprocess.run([sys.executable, "-m", "nhphys", "run", "suslov_top", "--t-final",
                          "0.05", "--dt", "0.01", "--out", str(tmp_path / "r.npz"),
                          "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    assert (tmp_path / "r.npz").is_file()
