"""Run files as untrusted input, and runs that never replace a good file with a worse one.

Loading: every malformed file is a ValueError naming what is wrong, sizes are checked before
anything is allocated, nothing is unpickled. Writing: a failed or interrupted run is kept beside
the output, never over it; the frames of a killed run are kept, not deleted. CSV: rows are
matched to bodies by name.
"""

import io
import json
import os
import pickle
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest

import nhphys
from nhphys import Trajectory
from nhphys.lie import so3
from nhphys.trajectory import (META_KEY, STATIC_PREFIX, TrajectoryWriter, outcome_path,
                               read_npz)


def two_bodies(n=11):
    t = np.linspace(0.0, 1.0, n)
    R = so3.exp(t[:, None, None] * np.array([[0.3, -1.2, 0.8], [2.0, 0.5, -0.1]]))
    position = np.zeros((n, 2, 3)) + t[:, None, None]
    fields = {"t": t, "position": position, "R": R, "omega": np.ones((n, 2, 3)),
              "contact_point": position.copy(), "energy": np.ones((n, 2)),
              "constraint_residual": np.zeros((n, 2))}
    return Trajectory(fields, {"bodies": ["a", "b"], "dt": 0.1})


@pytest.fixture(scope="module")
def scene_run(tmp_path_factory):
    """A run of a bundled scene, with its stored display, saved as `nhphys run` saves it."""
    from nhphys.cli import load_scene

    scene = load_scene("suslov_top")[0]
    traj = scene.simulate(0.05, 0.01, progress=False)
    path = traj.save(tmp_path_factory.mktemp("runs") / "run.npz")
    return path, traj


def arrays_of(traj):
    """The arrays of ``traj`` as :meth:`Trajectory.save` stores them."""
    arrays = {k: traj[k] for k in traj.fields}
    arrays.update({STATIC_PREFIX + k: v for k, v in traj.static.items()})
    arrays[META_KEY] = np.array(json.dumps(traj.meta))
    return arrays


def write_npz(path, arrays, **kwargs):
    np.savez(path, **arrays, **kwargs)
    return str(path)


# -- malformed files: each a ValueError naming what is wrong --------------------------------

def _mutations(scene_path, traj):
    """``(name, writer(path), expected message)``: files every one of which is malformed."""
    good = open(scene_path, "rb").read()

    def raw(data):
        return lambda p: open(p, "wb").write(data)

    def flipped(offset):
        data = bytearray(good)
        data[offset] ^= 0x04
        return raw(bytes(data))

    def changed(edits):
        def write(p):
            arrays = arrays_of(traj)
            for key, value in edits.items():
                if value is None:
                    arrays.pop(key)
                else:
                    arrays[key] = value
            np.savez(p, **arrays)
        return write

    meta = dict(traj.meta)
    bad_scene = json.loads(json.dumps(meta["scene"]))
    bad_scene["bodies"][0]["mesh"] = "nowhere"
    bad_color = json.loads(json.dumps(meta["scene"]))
    bad_color["grounds"][0]["color"] = "red');"
    faces = traj.static["bodies.0.faces"].copy()
    faces[0, 0] = 10**6
    n = len(traj)
    members = zipfile.ZipFile(scene_path).infolist()
    data_start = members[1].header_offset + 30 + len(members[1].filename) + 200
    directory_name = good.index(b"PK\x01\x02") + 46  # the first name in the central directory
    def meta_with(**entries):
        return changed({META_KEY: np.array(json.dumps(dict(meta, **entries)))})

    return [
        ("empty", raw(b""), "is empty"),
        ("half", raw(good[:len(good) // 2]), "damaged"),
        ("no end", raw(good[:-10]), "damaged"),
        ("first bytes", raw(good[:100]), "damaged"),
        ("a .npy", lambda p: np.save(open(p, "wb"), np.zeros(3)), "single .npy array"),
        ("text", raw(b"scene = 1\n"), "not a run file"),
        ("flipped data", flipped(data_start), "damaged"),
        ("flipped directory", flipped(directory_name), "damaged"),
        ("meta not JSON", changed({META_KEY: np.array("{'bodies': ")}), "not valid JSON"),
        ("meta a list", changed({META_KEY: np.array("[1, 2]")}), "must be a JSON object"),
        ("meta an array", changed({META_KEY: np.zeros(3)}), "must be one JSON string"),
        ("meta nested deep", changed({META_KEY: np.array("[" * 100000 + "]" * 100000)}),
         "not valid JSON"),
        ("no times", changed({"t": None}), "no field 't'"),
        ("times 2-d", changed({"t": np.zeros((n, 2))}), "one number per frame"),
        ("times NaN", changed({"t": np.full(n, np.nan)}), "finite and non-decreasing"),
        ("times backwards", changed({"t": -traj.t}), "finite and non-decreasing"),
        ("one frame short", changed({"R": traj.R[:-1]}), "field 'R' has shape"),
        ("R not 3x3", changed({"R": traj.R[..., :2]}), "field 'R' must be numbers of shape"),
        ("position of strings", changed({"position": np.full(traj.position.shape, "x")}),
         "field 'position' must be numbers"),
        ("a body short", changed({"energy": np.zeros((n, 2))}), "expected 1 bodies"),
        ("bodies not names", meta_with(bodies=[1]), "meta['bodies']"),
        ("scene mesh missing", meta_with(scene=bad_scene), "the mesh 'nowhere' is missing"),
        ("scene colour", meta_with(scene=bad_color), "must be #rrggbb"),
        ("scene not a dict", meta_with(scene=3), "meta['scene'] must be an object"),
        ("faces out of range", changed({STATIC_PREFIX + "bodies.0.faces": faces}),
         "faces of mesh 'bodies.0'"),
        ("points missing", changed({STATIC_PREFIX + "bodies.0.points": None}),
         "mesh 'bodies.0' is missing"),
        ("playback a list", meta_with(playback=[1]), "meta['playback']"),
        ("an object array", changed({"t": np.array([None] * n, dtype=object)}),
         "Python objects are never unpickled"),
    ]


MALFORMED = ["empty", "half", "no end", "first bytes", "a .npy", "text", "flipped data",
             "flipped directory", "meta not JSON", "meta a list", "meta an array",
             "meta nested deep", "no times", "times 2-d", "times NaN", "times backwards",
             "one frame short", "R not 3x3", "position of strings", "a body short",
             "bodies not names", "scene mesh missing", "scene colour", "scene not a dict",
             "faces out of range", "points missing", "playback a list", "an object array"]


@pytest.mark.parametrize("name", MALFORMED)
def test_every_malformed_file_is_a_value_error_naming_the_problem(tmp_path, scene_run, name):
    scene_path, traj = scene_run
    cases = {case[0]: case[1:] for case in _mutations(scene_path, traj)}
    assert sorted(cases) == sorted(MALFORMED)
    write, message = cases[name]
    path = tmp_path / "bad.npz"
    write(path)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")) as err:
        Trajectory.load(path)
    assert "bad.npz" in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_the_good_file_loads_and_remembers_where_it_came_from(scene_run):
    path, traj = scene_run
    back = Trajectory.load(path)
    assert back.file == path
    for name in traj.fields:
        assert np.array_equal(back[name], traj[name])
    from nhphys.scene_display import SceneDisplay

    assert SceneDisplay.from_trajectory(back).body_names == ["top"]


def test_loading_never_unpickles(tmp_path):
    """An object array is refused from its header: its pickle (which would make a file) is
    never run."""
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = write_npz(tmp_path / "evil.npz", {"t": np.zeros(2),
                                             "x": np.array([Payload(), 1], dtype=object)})
    with pytest.raises(ValueError, match="never unpickled"):
        Trajectory.load(path)
    assert not marker.exists()
    # the same payload in the metadata's place
    buffer = io.BytesIO()
    np.save(buffer, np.array([Payload()], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(tmp_path / "evil2.npz", "w") as z:
        z.writestr("t.npy", _npy(np.zeros(2)))
        z.writestr(META_KEY + ".npy", buffer.getvalue())
    with pytest.raises(ValueError, match="never unpickled"):
        Trajectory.load(tmp_path / "evil2.npz")
    assert not marker.exists()
    assert b"pwned" in pickle.dumps(Payload())  # the payload is real


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _bomb(path, n_bytes, level=1):
    """An .npz of one float array of zeros, ``n_bytes`` of it, compressed (written in pieces,
    so making it takes no memory)."""
    header = {"descr": "<f8", "fortran_order": False, "shape": (n_bytes // 8,)}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as z:
        with z.open("t.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, header)
            piece = bytes(2**24)
            for start in range(0, n_bytes, len(piece)):
                member.write(piece[:min(len(piece), n_bytes - start)])
    return str(path)


def test_a_small_file_that_expands_hugely_is_refused_before_allocating(tmp_path, monkeypatch):
    path = _bomb(tmp_path / "bomb.npz", 256 * 2**20)  # 256 MiB of zeros in about 1 MB
    assert os.path.getsize(path) < 2 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"declares at least 256.0 MiB .*`max_bytes`"):
            Trajectory.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20  # nothing of the 256 MiB was allocated
    # a trusted file: the limit is an argument, or an environment variable
    small = _bomb(tmp_path / "small.npz", 80 * 2**20)
    with pytest.raises(ValueError, match="declares at least 80.0 MiB"):
        Trajectory.load(small)
    assert len(Trajectory.load(small, max_bytes=100 * 2**20)) == 10 * 2**20
    monkeypatch.setenv("NHPHYS_MAX_LOAD_BYTES", str(100 * 2**20))
    assert len(Trajectory.load(small)) == 10 * 2**20
    monkeypatch.setenv("NHPHYS_MAX_LOAD_BYTES", "lots")
    with pytest.raises(ValueError, match="NHPHYS_MAX_LOAD_BYTES"):
        Trajectory.load(small)


def test_a_header_declaring_more_than_its_member_holds_is_refused(tmp_path):
    """A header claiming 2**40 floats (8 TiB) over 16 bytes of data: refused from the sizes,
    before numpy would try to allocate it."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (2**40,)})
    with zipfile.ZipFile(tmp_path / "liar.npz", "w") as z:
        z.writestr("t.npy", header.getvalue() + bytes(16))
    with pytest.raises(ValueError, match=r"declares shape \(1099511627776,\) .* holds 16 bytes"):
        Trajectory.load(tmp_path / "liar.npz")


@pytest.mark.parametrize("header", [b"(4( 3)", b"(4, 3", b"'(4, 3)'", b"(4, -3)"])
def test_a_garbled_array_header_is_a_value_error(tmp_path, header):
    """Headers as bit flips leave them (the first found by the fuzzer: numpy's reader raised
    tokenize.TokenError for it)."""
    data = _npy(np.zeros((4, 3), dtype=np.int64)).replace(b"(4, 3)", header.ljust(6))
    with zipfile.ZipFile(tmp_path / "garbled.npz", "w") as z:
        z.writestr("t.npy", data)  # with a checksum that matches: the header itself is read
    with pytest.raises(ValueError, match="garbled.npz"):
        Trajectory.load(tmp_path / "garbled.npz")


def test_archive_members_must_be_arrays_stored_once(tmp_path):
    with zipfile.ZipFile(tmp_path / "extra.npz", "w") as z:
        z.writestr("t.npy", _npy(np.zeros(2)))
        z.writestr("notes.txt", b"hello")
    with pytest.raises(ValueError, match="'notes.txt' is not an .npy array"):
        Trajectory.load(tmp_path / "extra.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        with zipfile.ZipFile(tmp_path / "twice.npz", "w") as z:
            z.writestr("t.npy", _npy(np.zeros(2)))
            z.writestr("t.npy", _npy(np.zeros(3)))
    with pytest.raises(ValueError, match="'t' is stored twice"):
        Trajectory.load(tmp_path / "twice.npz")


def test_read_npz_reads_what_numpy_wrote(tmp_path):
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.asfortranarray(np.eye(3)),
              "c": np.array("text"), "d": np.zeros(0, dtype=np.int32), "e": np.array([True])}
    path = write_npz(tmp_path / "x.npz", arrays)
    back = read_npz(path)
    assert list(back) == list(arrays)
    for k in arrays:
        assert back[k].dtype == arrays[k].dtype and np.array_equal(back[k], arrays[k])
    compressed = tmp_path / "z.npz"
    np.savez_compressed(compressed, **arrays)
    assert np.array_equal(read_npz(compressed)["a"], arrays["a"])


# -- nothing computed is lost: the writer ------------------------------------------------------

def test_finish_replaces_the_output_only_with_a_complete_run(tmp_path):
    good, _ = two_bodies(), None
    path = str(tmp_path / "run.npz")
    writer = TrajectoryWriter(path)
    assert writer.finish(good, complete=True) == path and good.file == path
    before = open(path, "rb").read()

    failed = Trajectory({k: good[k][:3] for k in good.fields}, dict(good.meta))
    writer = TrajectoryWriter(path)
    kept = writer.finish(failed, complete=False)
    assert kept == str(tmp_path / "run.failed.npz") == writer.written == failed.file
    assert open(path, "rb").read() == before
    assert len(Trajectory.load(kept)) == 3

    interrupted = Trajectory({k: good[k][:5] for k in good.fields},
                             dict(good.meta, interrupted=True))
    kept = TrajectoryWriter(path).finish(interrupted, complete=False)
    assert kept == str(tmp_path / "run.interrupted.npz")
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["run.failed.npz", "run.interrupted.npz", "run.npz"]


def test_finish_without_complete_keeps_a_failed_run_beside(tmp_path):
    """The call of drivers that do not say whether the run completed: a trajectory recording a
    failure (as NewtonError leaves it) still never replaces the output."""
    good = two_bodies()
    path = good.save(tmp_path / "run.npz")
    before = open(path, "rb").read()
    failed = Trajectory({k: good[k][:2] for k in good.fields},
                        dict(good.meta, failure={"step": 1, "time": 0.1, "message": "x"}))
    assert TrajectoryWriter(path).finish(failed) == str(tmp_path / "run.failed.npz")
    assert open(path, "rb").read() == before
    event = Trajectory({k: good[k][:2] for k in good.fields}, dict(good.meta, event={}))
    assert TrajectoryWriter(path).finish(event).endswith("run.failed.npz")
    assert TrajectoryWriter(path).finish(good) == path  # complete: replaces


def test_outcome_paths():
    assert outcome_path("a/run.npz", "failed") == "a/run.failed.npz"
    assert outcome_path("run", "interrupted") == "run.interrupted.npz"
    with pytest.raises(ValueError, match="one of"):
        outcome_path("run.npz", "fine")


def test_a_failed_run_never_replaces_an_existing_output(tmp_path, backend):
    """`simulate(..., out=)`: the previous good file stays; the failed run's frames are kept
    beside it, and the error's trajectory says where."""
    body = nhphys.systems.Suslov([1.0, 2.0, 3.0], [0, 0, 1])
    out = tmp_path / "prev.npz"
    nhphys.simulate(body, 0.5, 0.01, omega=[1, 1, 0], out=out, backend=backend)
    before = open(out, "rb").read()
    with pytest.raises(nhphys.NewtonError) as err:
        nhphys.simulate(body, 1.0, 0.05, omega=[100.0, 0.0, 0.0], out=out, backend=backend)
    assert open(out, "rb").read() == before
    kept = tmp_path / "prev.failed.npz"
    assert err.value.trajectory.file == str(kept)
    back = Trajectory.load(kept)
    assert back.meta["failure"]["step"] == err.value.step
    assert np.array_equal(back.t, err.value.trajectory.t)
    assert sorted(os.listdir(tmp_path)) == ["prev.failed.npz", "prev.npz"]


def test_the_frames_of_a_killed_run_are_kept_when_a_new_run_starts(tmp_path):
    traj = two_bodies()
    path = tmp_path / "run.npz"
    writer = TrajectoryWriter(path)
    writer.begin(traj.meta)
    writer.append({k: traj[k][:4] for k in traj.fields})
    # killed here; a new run to the same file starts
    with pytest.warns(RuntimeWarning, match="kept in .*run.killed.npz"):
        again = TrajectoryWriter(path)
    assert again.kept == str(tmp_path / "run.killed.npz")
    kept = Trajectory.load(again.kept)
    assert len(kept) == 4 and np.array_equal(kept.R, traj.R[:4]) and kept.meta["interrupted"]
    assert not (tmp_path / "run.npz.part").exists()
    # a folder that cannot be read is never deleted: it is an error
    folder = tmp_path / "other.npz.part"
    folder.mkdir()
    (folder / "meta.npz").write_bytes(b"garbage")
    (folder / "chunk000000.npz").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="cannot be read .* move or remove it"):
        TrajectoryWriter(tmp_path / "other.npz")
    assert sorted(os.listdir(folder)) == ["chunk000000.npz", "meta.npz"]


def test_part_folders_are_checked_like_files(tmp_path):
    traj = two_bodies()
    writer = TrajectoryWriter(tmp_path / "run.npz")
    writer.begin(traj.meta)
    writer.append({k: traj[k][:4] for k in traj.fields})
    writer.append({k: traj[k][4:6] for k in traj.fields if k != "energy"})
    with pytest.raises(ValueError, match="chunk000001.npz: its fields"):
        Trajectory.load(tmp_path / "run.npz.part")
    open(tmp_path / "run.npz.part" / "chunk000001.npz", "wb").write(b"PK\x03\x04junk")
    with pytest.raises(ValueError, match="chunk000001.npz is damaged"):
        Trajectory.load(tmp_path / "run.npz.part")
    os.remove(tmp_path / "run.npz.part" / "meta.npz")
    with pytest.raises(ValueError, match="no meta.npz"):
        Trajectory.load(tmp_path / "run.npz.part")


# -- CSV -----------------------------------------------------------------------------------

def test_csv_rows_are_matched_to_bodies_by_name(tmp_path):
    traj = two_bodies(n=4)
    path = traj.to_csv(tmp_path / "run.csv")
    lines = open(path).read().splitlines()
    header, rows = lines[0], lines[1:]
    # swap the two bodies' rows in frames 1 and 3, as another tool might write them
    for frame in (1, 3):
        rows[2 * frame], rows[2 * frame + 1] = rows[2 * frame + 1], rows[2 * frame]
    open(path, "w").write("\n".join([header] + rows) + "\n")
    t, names, position, quaternion = Trajectory.read_csv(path)
    assert names == ["a", "b"] and np.array_equal(t, traj.t)
    assert np.array_equal(position, traj.position)
    assert np.array_equal(quaternion, traj.quaternion)


def _cell(row, column, text):
    cells = row.split(",")
    cells[column] = text
    return ",".join(cells)


@pytest.mark.parametrize("edit, message", [
    (lambda rows: rows[:-1], r"the bodies \['b'\] are missing"),
    (lambda rows: rows + [rows[-1]], "body 'b' appears twice"),
    (lambda rows: rows[:1] + [_cell(rows[1], 3, "abc")] + rows[2:],
     "line 2: expected a number in column 'y'"),
    (lambda rows: rows[:1] + [rows[1] + ",1"] + rows[2:], "line 2: expected 9 values"),
])
def test_malformed_csv_is_a_value_error_naming_the_line(tmp_path, edit, message):
    path = two_bodies(n=3).to_csv(tmp_path / "run.csv")
    rows = open(path).read().splitlines()
    open(path, "w").write("\n".join(edit(rows)) + "\n")
    with pytest.raises(ValueError, match=message):
        Trajectory.read_csv(path)
