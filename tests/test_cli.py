"""The `nhphys` command run as a user runs it: subprocesses, exit codes, files written."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import nhphys.scenes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENE_DIR = os.path.dirname(nhphys.scenes.__file__)  # the bundled scenes, installed with nhphys
TOP = os.path.join(SCENE_DIR, "suslov_top.py")


def nhphys(*args, cwd=None, timeout=300):
    env = dict(os.environ)
    env.pop("DISPLAY", None)  # as on a machine with no display
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.run([sys.executable, "-m", "nhphys", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_bundled_scene_script_renders_a_gif_with_no_display(tmp_path):
    """The README's first command, with a shorter run: prints where the GIF is."""
    import imageio.v3 as iio

    env = dict(os.environ)
    env.pop("DISPLAY", None)
    out = subprocess.run([sys.executable, TOP, "--t-final", "1", "--fps", "5", "--size",
                          "160x120"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    gif = tmp_path / "out" / "suslov_top.gif"
    assert str(gif) in out.stdout and str(tmp_path / "out" / "suslov_top.npz") in out.stdout
    frames = iio.imread(gif, index=None)
    assert frames.shape[0] == 6
    for a, b in zip(frames[:-1], frames[1:]):
        assert np.abs(a.astype(int) - b).sum() > 0
    assert sorted(os.listdir(tmp_path / "out")) == ["suslov_top.gif", "suslov_top.npz"]


def test_run_then_render_the_saved_run(tmp_path):
    import imageio.v3 as iio

    from nhphys import Trajectory

    result = nhphys("run", TOP, "--t-final", "0.5", "--dt", "0.01", "--integrator", "cayley",
                    "--out", tmp_path / "run.npz", "--no-progress")
    assert result.returncode == 0, result.stderr
    traj = Trajectory.load(tmp_path / "run.npz")
    assert len(traj) == 51 and "cayley" in traj.meta["integrator"]
    assert os.listdir(tmp_path) == ["run.npz"]  # --out alone: no GIF
    result = nhphys("render", tmp_path / "run.npz", "--png", tmp_path / "last.png",
                    "--size", "120x90")
    assert result.returncode == 0, result.stderr
    assert iio.imread(tmp_path / "last.png").shape[:2] == (90, 120)
    assert traj.meta["playback"] == {"fps": 20.0, "speed": 1.0, "size": [480, 360]}
    result = nhphys("render", tmp_path / "run.npz", "--fps", "4")  # default: run.gif beside it
    assert result.returncode == 0, result.stderr
    frames = iio.imread(tmp_path / "run.gif", index=None)
    assert frames.shape[:3] == (3, 360, 480)  # the scene's size, from the run's file


def test_view_steps_live_headless(tmp_path):
    import imageio.v3 as iio

    result = nhphys("view", "suslov_top", "--frames", "4", "--size", "120x90", "--record",
                    tmp_path / "live.gif", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "rendered 4 frames off screen" in result.stdout
    frames = iio.imread(tmp_path / "live.gif", index=None)
    assert frames.shape[0] == 4
    for a, b in zip(frames[:-1], frames[1:]):
        assert np.abs(a.astype(int) - b).sum() > 0


def test_list_names_the_bundled_scenes(tmp_path):
    result = nhphys("list", cwd=tmp_path)
    assert result.returncode == 0
    line = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("suslov_top")][0]
    assert "ellipsoid on a pivot" in line
    assert "suslov_paper" in result.stdout and "(script" in result.stdout


def test_a_reader_that_leaves_early_is_no_error(tmp_path):
    # `nhphys list | head -1`: the pipe closes before the listing ends
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    with subprocess.Popen([sys.executable, "-m", "nhphys", "list"], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        process.stdout.close()  # the reader leaves before the first line is written
        _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert b"Traceback" not in err and b"BrokenPipe" not in err


@pytest.mark.parametrize("args, message", [
    (["run", "NOSCENE"], "define `scene = nhphys.Scene"),
    (["run", TOP, "--integrator", "rk4"], "one of ('exp', 'cayley'"),
    (["run", TOP, "--gif", "missing/x.gif"], "cannot be written"),
    (["run", TOP, "--gif", "x.mp4"], "ending with .gif"),
    (["run", TOP, "--t-final", "1", "--dt", "0.3"], "whole number of steps"),
    (["run", "no_such_scene"], "no scene file or bundled scene 'no_such_scene'"),
    (["run", "CONTACTLESS"], "Expected a `contact` for body 'lonely'"),
    (["render", "missing.npz"], "no trajectory file"),
    (["run", TOP, "--dt", "-1"], "expected a number > 0"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_errors_exit_2_and_write_nothing(tmp_path, args, message):
    (tmp_path / "noscene.py").write_text("x = 1\n")
    (tmp_path / "contactless.py").write_text(
        "import nhphys\nfrom nhphys.scene import Scene\nfrom nhphys.surfaces import Sphere\n"
        "scene = Scene()\nscene.add_body(nhphys.RigidBody(1.0, [1, 1, 1], Sphere(1.0), "
        "name='lonely'))\n")
    args = [{"NOSCENE": tmp_path / "noscene.py", "CONTACTLESS": tmp_path / "contactless.py"}
            .get(a, a) for a in args]
    result = nhphys(*args, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["contactless.py", "noscene.py"]


def test_console_script_is_installed():
    # the README's install (pip install -e .) puts the script beside the interpreter
    exe = shutil.which("nhphys") or shutil.which("nhphys", path=os.path.dirname(sys.executable))
    assert exe is not None, "the console script `nhphys` is not installed"
    result = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "run" in result.stdout and "render" in result.stdout


@pytest.fixture
def virtual_display():
    """An X server of our own (Xvfb), when the machine has one: the live window's timer path."""
    exe = shutil.which("Xvfb")
    if exe is None:
        pytest.skip("Xvfb is not installed")
    read, write = os.pipe()  # Xvfb writes its display number there once it accepts clients
    server = subprocess.Popen([exe, "-displayfd", str(write), "-screen", "0", "640x480x24",
                               "-nolisten", "tcp"], pass_fds=(write,),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as ready:
            number = ready.readline().strip()
        if not number:
            pytest.skip("Xvfb did not start")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_view_steps_live_in_a_window_with_a_timer(virtual_display, tmp_path):
    import imageio.v3 as iio

    env = dict(os.environ, DISPLAY=virtual_display)
    attempts = []
    for _ in range(2):  # a loaded machine's X server may refuse the first connection
        result = subprocess.run([sys.executable, "-m", "nhphys", "view", TOP, "--frames", "5",
                                 "--size", "160x120", "--record", str(tmp_path / "window.gif")],
                                env=env, capture_output=True, text=True, timeout=120)
        attempts.append(result)
        if result.returncode == 0 and "in a window" in result.stdout:
            break
    assert result.returncode == 0, [(r.stdout, r.stderr[-2000:]) for r in attempts]
    assert "rendered 5 frames in a window" in result.stdout, (result.stdout, result.stderr)
    frames = iio.imread(tmp_path / "window.gif", index=None)
    assert frames.shape[0] == 5
    distinct = {frame.tobytes() for frame in frames}
    assert len(distinct) >= 4, "the window's frames do not move"


def test_bench_command(tmp_path):
    result = nhphys("bench", "suslov_top", "--frames", "3", "--size", "96x72", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "body-steps/s" in result.stdout and "ms/frame" in result.stdout


def test_ctrl_c_during_run_keeps_everything_computed(tmp_path):
    import signal
    import time

    from nhphys import Trajectory

    env = dict(os.environ)
    env.pop("DISPLAY", None)
    proc = subprocess.Popen([sys.executable, "-m", "nhphys", "run", TOP, "--t-final", "1e6",
                             "--save-every", "100", "--out", str(tmp_path / "long.npz"),
                             "--no-progress"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    part = tmp_path / "long.npz.part"
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (part.exists() and len(os.listdir(part)) >= 3):
            time.sleep(0.05)  # streaming has started: meta and two chunks are on disk
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert "interrupted at t =" in out and str(tmp_path / "long.interrupted.npz") in out
    traj = Trajectory.load(tmp_path / "long.interrupted.npz")
    assert traj.meta["interrupted"] and 1 < len(traj) < 10**5 + 1
    assert np.all(np.diff(traj.t) > 0) and traj.constraint_residual.max() < 1e-14
    assert sorted(os.listdir(tmp_path)) == ["long.interrupted.npz"]


def test_a_failing_simulation_exits_1_and_keeps_the_frames_before(tmp_path):
    from nhphys import Trajectory

    (tmp_path / "fast.py").write_text(
        "import nhphys\nfrom nhphys import Scene, SuslovContact\n"
        "from nhphys.surfaces import Ellipsoid\nscene = Scene(name='fast')\n"
        "scene.add_body(nhphys.RigidBody(1.0, [1, 2, 3], Ellipsoid([0.3, 0.2, 0.1])),\n"
        "               SuslovContact([0, 0, 1]), omega=[100.0, 0.0, 0.0])\n")
    result = nhphys("run", tmp_path / "fast.py", "--t-final", "1", "--dt", "0.05", "--out",
                    tmp_path / "fast.npz", cwd=tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "simulation failed" in result.stderr and "step 0 (t = 0)" in result.stderr
    # an incomplete run never takes the output's name: it is kept beside it, and said where
    assert str(tmp_path / "fast.failed.npz") in result.stdout and "wrote:" not in result.stdout
    traj = Trajectory.load(tmp_path / "fast.failed.npz")
    assert len(traj) == 1  # the initial state, all that was computed
    assert sorted(os.listdir(tmp_path)) == ["fast.failed.npz", "fast.py"]
