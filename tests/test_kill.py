"""Kill tests: SIGKILL at random (seeded) moments of 20 processes -- streaming a run to disk,
writing a run's final file, exporting -- leaves under the final name either the file that was
there before or the new complete one, never a torn file; and ``resume`` completes each killed
streaming run to the same arrays, bit for bit, as a run never killed.

Each process prints ``go`` when it starts the work the kill is aimed at (after its imports);
the kill comes a random delay later: a seeded random fraction, up to 1.6, of the time the same
work takes in the test's own process (so that the kills spread from before the work starts to
after it ends whatever the machine's speed)."""

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from nhphys import Trajectory, _backend
from nhphys.trajectory import TrajectoryWriter

CHILD = r'''
import importlib
import json
import sys

import numpy as np

import nhphys
import nhphys.export
from nhphys.surfaces import Ellipsoid, Sphere
from nhphys.systems import RollingBody, Suslov

driver = importlib.import_module("nhphys.simulate")
scene_module = importlib.import_module("nhphys.scene")


def ball():
    return nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1))


def scene():
    s = nhphys.Scene(name="mixed")
    bowl = s.add_ground(Sphere(1.0).as_ground("inside"))
    s.add_body(ball(), nhphys.RollingContact(bowl), name="ball", omega=[1.0, 2.0, 0.5],
               position=[0.2, 0.0, -1.0])
    s.add_body(nhphys.RigidBody(1.0, [1.0, 2.0, 3.0], Ellipsoid([0.5, 0.35, 0.2])),
               nhphys.SuslovContact([0, 0, 1], pivot=[1, 0, 1]), name="top",
               omega=[1.0, 0.5, 0.0])
    return s


def stream(spec, out=None, resume=False, steps=None):
    """The run of ``spec``: ``steps`` of ``dt`` (default ``spec["steps"]``)."""
    driver.CHUNK_STEPS = spec["chunk"]
    scene_module.CHUNK_STEPS = 2 * spec["chunk"]  # two bodies: the same chunks
    dt = spec["dt"]
    t_final = dt * (spec["steps"] if steps is None else steps)
    options = dict(backend=spec["backend"], save_every=spec["save_every"], out=out,
                   resume=resume, progress=False)
    if spec["case"] == "suslov":
        return nhphys.simulate(Suslov([1.0, 2.0, 3.0], axis=[0, 0, 1]), t_final, dt,
                               omega=[1.0, 0.5, 0.0], **options)
    if spec["case"] == "rolling":
        return nhphys.simulate(RollingBody(ball(), Sphere(1.0).as_ground("inside")), t_final,
                               dt, omega=[1.0, 2.0, 0.5], position=[0.2, 0.0, -1.0], **options)
    return scene().simulate(t_final, dt, **options)


def noise(seed, frames):
    """A run of random poses (for the final save and the exports)."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(frames, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    R = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                  2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                  2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], 1)
    return nhphys.Trajectory({"t": 0.01 * np.arange(frames), "R": R.reshape(frames, 3, 3),
                              "position": rng.normal(size=(frames, 3)),
                              "energy": rng.normal(size=frames)}, {"system": f"noise {seed}"})


def go():
    print("go", flush=True)


if __name__ == "__main__":
    mode, spec = sys.argv[1], json.loads(sys.argv[2])
    if mode == "stream":
        go()
        stream(spec, out=spec["out"])
    elif mode == "finish":  # the kill aimed at the run's final file
        finish = nhphys.trajectory.TrajectoryWriter.finish

        def announced(self, *args, **kwargs):
            go()
            return finish(self, *args, **kwargs)

        nhphys.trajectory.TrajectoryWriter.finish = announced
        stream(spec, out=spec["out"])
    elif mode == "save":
        traj = noise(spec["seed"], spec["frames"])
        go()
        traj.save(spec["out"])
    else:
        traj = nhphys.Trajectory.load(spec["source"])
        go()
        if mode == "csv":
            nhphys.export.to_csv(traj, spec["out"])
        else:
            nhphys.export.to_pvd(traj, spec["out"], mode="transform")
    print("done", flush=True)
'''

BACKEND = "cython" if _backend.extensions_built() else "python"
# (mode, spec): each piece of work lasts about 0.3-0.5 s (0.1-0.2 s for the final file of a run)
STREAMS = [
    ("stream", {"case": "suslov", "backend": BACKEND, "dt": 1e-3, "steps": 1_500_000,
                "chunk": 75_000, "save_every": 500}),
    ("stream", {"case": "suslov", "backend": "python", "dt": 1e-2, "steps": 2400,
                "chunk": 120, "save_every": 4}),
    ("stream", {"case": "rolling", "backend": BACKEND, "dt": 1e-3, "steps": 60_000,
                "chunk": 3000, "save_every": 50}),
    ("stream", {"case": "rolling", "backend": "python", "dt": 1e-2, "steps": 60,
                "chunk": 4, "save_every": 2}),
    ("stream", {"case": "scene", "backend": BACKEND, "dt": 1e-3, "steps": 40_000,
                "chunk": 2000, "save_every": 40}),
]
FINISHES = [
    ("finish", {"case": "suslov", "backend": BACKEND, "dt": 1e-4, "steps": 300_000,
                "chunk": 300_000, "save_every": 1}),
]
SAVES = [("save", {"seed": 11, "frames": 1_000_000})]
EXPORTS = [("csv", {"frames": 30_000}), ("pvd", {"frames": 60})]
# 20 runs: 10 streaming, 4 final saves of a run, 2 saves, 2 CSV and 2 ParaView exports
RUNS = STREAMS * 2 + FINISHES * 4 + SAVES * 2 + EXPORTS * 2


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    """The child's script, and its functions for this process."""
    path = tmp_path_factory.mktemp("child") / "kill_child.py"
    path.write_text(CHILD)
    functions = {"__name__": "kill_child"}
    exec(compile(CHILD, str(path), "exec"), functions)  # noqa: S102 - the test's own code
    return path, functions


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def same_arrays(a, b):
    return set(a.fields) == set(b.fields) and all(
        a[k].shape == b[k].shape and a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k])
        for k in a.fields)


def kill_later(script, mode, spec, delay):
    """Start the child, SIGKILL it ``delay`` seconds after it says go; whether it was killed
    before it finished."""
    proc = subprocess.Popen([sys.executable, str(script), mode, json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line == "go", (line, proc.stderr.read())
        time.sleep(delay)
        proc.kill()
        proc.wait(timeout=60)
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return "done" not in out


def timed(work, *args, **kwargs):
    """``work(*args, **kwargs)`` and the seconds it took."""
    began = time.perf_counter()
    result = work(*args, **kwargs)
    return result, time.perf_counter() - began


def test_sigkill_leaves_the_previous_or_the_new_complete_file_and_resume_completes(
        child, tmp_path, monkeypatch):
    script, functions = child
    driver = importlib.import_module("nhphys.simulate")
    scene_module = importlib.import_module("nhphys.scene")
    monkeypatch.setattr(driver, "CHUNK_STEPS", driver.CHUNK_STEPS)  # restored afterwards
    monkeypatch.setattr(scene_module, "CHUNK_STEPS", scene_module.CHUNK_STEPS)
    stream, noise = functions["stream"], functions["noise"]
    export = functions["nhphys"].export
    rng = np.random.default_rng(20261215)
    references = {}
    outcomes = []
    began = time.perf_counter()
    for i, (mode, spec) in enumerate(RUNS):
        folder = tmp_path / f"run{i:02d}"
        folder.mkdir()
        spec = dict(spec)
        fraction = float(rng.uniform(0.0, 1.6))
        if mode in ("stream", "finish"):
            key = json.dumps(spec, sort_keys=True)
            if key not in references:
                reference = stream(spec)
                finish = TrajectoryWriter.finish
                spent = []

                def finish_timed(self, *args, _finish=finish, _spent=spent, **kwargs):
                    result, seconds = timed(_finish, self, *args, **kwargs)
                    _spent.append(seconds)
                    return result

                monkeypatch.setattr(TrajectoryWriter, "finish", finish_timed)
                _, seconds = timed(stream, spec, out=tmp_path / "timing.npz")
                monkeypatch.setattr(TrajectoryWriter, "finish", finish)
                # the work killed: the whole streamed run, or its final file's writing
                references[key] = reference, seconds if mode == "stream" else spent[0]
            reference, seconds = references[key]
            out = folder / "run.npz"
            # the file there before: the same run, shorter (so that resume=True may extend it)
            stream(spec, out=out, steps=spec["steps"] // (2 * spec["save_every"])
                   * spec["save_every"])
            before = digest(out)
            spec["out"] = str(out)
            killed = kill_later(script, mode, spec, fraction * seconds)
            part = folder / "run.npz.part"
            state = ("previous" if digest(out) == before else "new") if out.exists() else "none"
            if state == "new":
                assert same_arrays(Trajectory.load(out), reference), (i, mode)
            assert state != "none"  # the previous file stays until the new one replaces it
            outcomes.append((mode, killed, state, part.is_dir()))
            resumed = stream(spec, out=out, resume=True)
            assert same_arrays(resumed, reference), (i, mode, fraction)
            assert same_arrays(Trajectory.load(out), reference), (i, mode, fraction)
            assert not part.exists()
            continue
        if mode == "save":
            out = folder / "noise.npz"
            previous = noise(spec["seed"] + 1, 1000)
            previous.save(out)
            new = noise(spec["seed"], spec["frames"])
            _, seconds = timed(new.save, folder / "timing.npz")
            os.remove(folder / "timing.npz")
            spec["out"] = str(out)
            killed = kill_later(script, mode, spec, fraction * seconds)
            loaded = Trajectory.load(out)
            state = "previous" if same_arrays(loaded, previous) else "new"
            if state == "new":
                assert same_arrays(loaded, new), i
        else:
            source, other = folder / "source.npz", folder / "other.npz"
            noise(7, spec["frames"]).save(source)
            noise(8, 40).save(other)
            suffix = ".csv" if mode == "csv" else ".pvd"
            out, expected = folder / f"export{suffix}", folder / "expected" / f"export{suffix}"
            expected.parent.mkdir()
            write = export.to_csv if mode == "csv" else \
                (lambda traj, path: export.to_pvd(traj, path, mode="transform"))
            write(Trajectory.load(other), out)
            _, seconds = timed(write, Trajectory.load(source), expected)
            before, new = digest(out), digest(expected)
            spec.update(source=str(source), out=str(out))
            killed = kill_later(script, mode, spec, fraction * seconds)
            assert digest(out) in (before, new), (i, mode, fraction)
            state = "previous" if digest(out) == before else "new"
            if mode == "pvd":  # whichever collection it is, its files are there
                for item in ET.parse(out).getroot().iter("DataSet"):
                    assert (folder / item.get("file")).is_file(), (i, item.get("file"))
        outcomes.append((mode, killed, state, False))
    took = time.perf_counter() - began
    assert len(outcomes) == 20
    killed = [o for o in outcomes if o[1]]
    # the kills spread from before the work to after it: many runs die in the middle of it
    assert len(killed) >= 8, outcomes
    assert any(o[0] == "stream" and o[3] for o in killed), outcomes  # some left a .part
    assert any(o[2] == "previous" for o in killed), outcomes
    print(f"{len(killed)} of 20 killed before the end; outcomes {outcomes}; {took:.1f} s")
    shutil.rmtree(tmp_path, ignore_errors=True)
