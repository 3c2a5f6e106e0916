"""The `nhphys` command on bad input, run as a user runs it: exit status 2, one line on stderr
naming the problem, no traceback, and nothing written. And a failed run that never replaces a
good output file."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from nhphys import Trajectory
from nhphys.trajectory import META_KEY, STATIC_PREFIX

FAST = ("import nhphys\nfrom nhphys import Scene, SuslovContact\n"
        "from nhphys.surfaces import Ellipsoid\nscene = Scene(name='top')\n"
        "scene.add_body(nhphys.RigidBody(1.0, [1, 2, 3], Ellipsoid([0.3, 0.2, 0.1])),\n"
        "               SuslovContact([0, 0, 1]), omega=[{omega}, 0.0, 0.0])\n{extra}")


def nhphys(*args, cwd=None, timeout=300, **kwargs):
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.run([sys.executable, "-m", "nhphys", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kwargs)


def assert_usage_error(result, *fragments):
    """Exit 2, and stderr one line holding every fragment, without a traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def listing(folder):
    return sorted(os.listdir(folder))


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    """A small run of a scene, saved by `nhphys run` (with its playback settings)."""
    folder = tmp_path_factory.mktemp("run")
    (folder / "top.py").write_text(FAST.format(omega=1.0, extra=""))
    result = nhphys("run", folder / "top.py", "--t-final", "0.2", "--dt", "0.01", "--out",
                    folder / "run.npz", "--no-progress")
    assert result.returncode == 0, result.stderr
    return folder / "run.npz"


def damaged(run_file, folder):
    """``{name: (file, expected fragment)}``: a damaged copy of ``run_file`` of every kind."""
    good = open(run_file, "rb").read()
    traj = Trajectory.load(run_file)
    arrays = {k: traj[k] for k in traj.fields}
    arrays.update({STATIC_PREFIX + k: v for k, v in traj.static.items()})
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x01
    files = {
        "truncated.npz": (good[:len(good) * 2 // 3], "is damaged"),
        "flipped.npz": (bytes(flipped), "is damaged"),
        "empty.npz": (b"", "is empty"),
    }
    for name, (data, _) in files.items():
        (folder / name).write_bytes(data)
    np.save(folder / "array.npy", np.zeros(3))
    files["array.npy"] = (None, "single .npy array")
    np.savez(folder / "badjson.npz", **arrays, **{META_KEY: np.array('{"bodies": [')})
    files["badjson.npz"] = (None, "not valid JSON")
    meta = dict(traj.meta, scene=dict(traj.meta["scene"], bodies="top"))
    np.savez(folder / "badscene.npz", **arrays, **{META_KEY: np.array(json.dumps(meta))})
    files["badscene.npz"] = (None, "meta['scene']['bodies'] must be a list")
    return {name: message for name, (_, message) in files.items()}


def test_render_of_damaged_files_is_a_usage_error(tmp_path, run_file):
    for name, message in damaged(run_file, tmp_path).items():
        before = listing(tmp_path)
        result = nhphys("render", tmp_path / name, cwd=tmp_path)
        assert_usage_error(result, "nhphys render: error: cannot read the run", name, message)
        assert listing(tmp_path) == before, name  # no GIF, no temporary


def test_render_of_a_file_that_would_expand_hugely_is_a_usage_error(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("t.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f8", "fortran_order": False, "shape": (2**24,)})
            member.write(bytes(2**27))  # 128 MiB of zeros in about 130 KB
    result = nhphys("render", tmp_path / "bomb.npz", cwd=tmp_path)
    assert_usage_error(result, "declares at least 128.0 MiB", "NHPHYS_MAX_LOAD_BYTES")
    assert listing(tmp_path) == ["bomb.npz"]


@pytest.mark.parametrize("args, message", [
    (["--t-final", "inf"], "argument --t-final: expected a finite number, got inf"),
    (["--t-final", "nan"], "argument --t-final: expected a finite number, got nan"),
    (["--dt=-inf"], "argument --dt: expected a finite number"),
    (["--dt", "1e-400"], "argument --dt: expected a number > 0, got 0.0"),
    (["--fps", "inf"], "argument --fps: expected a finite number, got inf"),
    (["--fps", "1e-9"], "argument --fps: expected a number in [0.1, 240]"),
    (["--speed", "1e-9"], "would have 1.6e+11 frames, more than 100000"),
    (["--size", "100000x100"], "argument --size: '100000x100': each side expected an integer"),
    (["--save-every", "1e3"], "argument --save-every: expected an integer, got '1e3'"),
    (["--save-every", "1000"], "--save-every 1000 keeps no step of a run of 800 steps"),
    (["--t-final", "1e300", "--dt", "1e-300"], "is too many steps"),
    (["--integrator", "newmark"], "Expected a system with a `coordinates` description"),
])
def test_run_refuses_unusable_numbers_before_doing_anything(tmp_path, args, message):
    """Each would have overflowed, simulated and stored Infinity, or asked for billions of
    frames; `--integrator newmark` on a rolling scene used to leave an empty out/ behind."""
    scene = "rattleback" if "newmark" in args else "suslov_top"
    result = nhphys("run", scene, *args, cwd=tmp_path)
    assert_usage_error(result, message)
    assert listing(tmp_path) == []


def test_render_refuses_unusable_numbers(tmp_path, run_file):
    shutil.copy(run_file, tmp_path / "run.npz")
    for args, message in [(["--fps", "1e-9"], "argument --fps: expected a number in"),
                          (["--fps", "inf"], "argument --fps: expected a finite number"),
                          (["--speed", "1e-12"], "frames, more than 100000"),
                          (["--time", "nan"], "argument --time: expected a finite number")]:
        result = nhphys("render", tmp_path / "run.npz", *args, cwd=tmp_path)
        assert_usage_error(result, message)
    assert listing(tmp_path) == ["run.npz"]


def test_a_stored_playback_that_cannot_be_used_asks_for_the_option(tmp_path, run_file):
    """A file written before --fps was checked (it stored Infinity) renders with --fps."""
    traj = Trajectory.load(run_file)
    traj.meta["playback"]["fps"] = float("inf")
    traj.save(tmp_path / "old.npz")
    assert Trajectory.load(tmp_path / "old.npz").meta["playback"]["fps"] == float("inf")
    result = nhphys("render", tmp_path / "old.npz", cwd=tmp_path)
    assert_usage_error(result, "stored playback fps is unusable", "give --fps")
    assert listing(tmp_path) == ["old.npz"]
    result = nhphys("render", tmp_path / "old.npz", "--fps", "5", "--size", "64x48",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert listing(tmp_path) == ["old.gif", "old.npz"]


def test_scene_files_are_python_files(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "broken.py").write_text("scene = (\n")
    (tmp_path / "badfps.py").write_text(FAST.format(omega=1.0,
                                                    extra="defaults = {'fps': float('inf')}\n"))
    cases = [(notes, "is not a scene file: expected a Python file ending with .py"),
             (tmp_path / "broken.py", "broken.py is not a valid scene file: line 1"),
             (tmp_path / "badfps.py", "`defaults['fps']` in", "expected a finite number")]
    if os.path.isfile("/etc/passwd"):
        cases.append(("/etc/passwd", "'/etc/passwd' is not a scene file"))
    for path, *fragments in cases:
        assert_usage_error(nhphys("run", path, cwd=tmp_path), *fragments)
    assert listing(tmp_path) == ["badfps.py", "broken.py", "notes.txt"]


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder this user cannot write into: a read-only folder, or, for root (whom folder
    permissions do not stop), /sys, which the kernel does not let anyone create files in."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield str(folder)
        folder.chmod(0o755)
        return
    folder = "/sys"
    try:
        fd, probe = tempfile.mkstemp(dir=folder)
    except OSError:
        yield folder
        return
    os.close(fd)
    os.remove(probe)
    pytest.skip("no folder this user cannot write into")


def test_a_read_only_working_folder_is_a_usage_error(unwritable_folder):
    before = listing(unwritable_folder)
    result = nhphys("run", "suslov_top", "--t-final", "0.1", cwd=unwritable_folder)
    assert_usage_error(result, "cannot write the default outputs into", "/out/",
                       "give --out / --gif / --mp4")
    result = nhphys("view", "suslov_top", "--frames", "2", cwd=unwritable_folder)
    assert_usage_error(result, "cannot write the default outputs into")
    assert listing(unwritable_folder) == before


def test_a_failed_run_keeps_the_previous_output_and_says_where_its_frames_are(tmp_path):
    (tmp_path / "calm.py").write_text(FAST.format(omega=1.0, extra=""))
    (tmp_path / "wild.py").write_text(FAST.format(omega=100.0, extra=""))
    result = nhphys("run", tmp_path / "calm.py", "--t-final", "1", "--dt", "0.05", "--out",
                    tmp_path / "prev.npz", "--no-progress", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    before = open(tmp_path / "prev.npz", "rb").read()
    result = nhphys("run", tmp_path / "wild.py", "--t-final", "1", "--dt", "0.05", "--out",
                    tmp_path / "prev.npz", "--no-progress", cwd=tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "wrote:" not in result.stdout
    assert f"in {tmp_path / 'prev.failed.npz'}; {tmp_path / 'prev.npz'} is unchanged" \
        in result.stdout
    assert open(tmp_path / "prev.npz", "rb").read() == before
    failed = Trajectory.load(tmp_path / "prev.failed.npz")
    assert len(failed) == 1 and failed.meta["failure"]["step"] == 0
    assert failed.meta["playback"]["fps"] == 25.0  # renderable like any run
    assert listing(tmp_path) == ["calm.py", "prev.failed.npz", "prev.npz", "wild.py"]
