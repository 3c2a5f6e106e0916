"""Soak (opt-in: ``pytest -m soak tests/test_soak.py -s``): 10^7 rolling steps of a ball in a
bowl on the compiled kernel, streamed to disk chunk by chunk, with the resident memory of the
process flat (within 10%) from the end of the first chunk to the end of the run.

Deselected by default (``-m "not soak"`` in pyproject's pytest options): it takes a minute or
two. The figures of a run are in docs/reliability.md."""

import os
import time

import numpy as np
import pytest

import nhphys
from nhphys import _backend
from nhphys.surfaces import Sphere
from nhphys.systems import RollingBody
from nhphys.trajectory import Trajectory, TrajectoryWriter, checkpoint_of

STEPS = 10_000_000
DT = 1e-3
SAVE_EVERY = 10_000

pytestmark = [
    pytest.mark.soak,
    pytest.mark.skipif(not _backend.extensions_built(), reason="needs the compiled kernels"),
    pytest.mark.skipif(not os.path.exists("/proc/self/statm"),
                       reason="reads the resident memory from /proc/self/statm (Linux)"),
]


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_ten_million_rolling_steps_stream_with_flat_resident_memory(tmp_path, monkeypatch):
    samples = []  # (steps written, resident bytes) after each chunk reaches the disk
    append = TrajectoryWriter.append

    def measured(self, frames, checkpoint=None):
        append(self, frames, checkpoint)
        if checkpoint is not None:
            samples.append((int(checkpoint["steps_done"]), resident_bytes()))

    monkeypatch.setattr(TrajectoryWriter, "append", measured)
    ball = nhphys.RigidBody(1.0, [0.4 * 0.01] * 3, Sphere(0.1))
    system = RollingBody(ball, Sphere(1.0).as_ground("inside"))
    out = tmp_path / "soak.npz"
    began = time.perf_counter()
    traj = nhphys.simulate(system, STEPS * DT, DT, backend="cython", save_every=SAVE_EVERY,
                           out=out, progress=False, omega=[1.0, 2.0, 0.5],
                           position=[0.2, 0.0, -1.0])
    seconds = time.perf_counter() - began
    assert len(traj) == 1 + STEPS // SAVE_EVERY and traj.t[-1] == STEPS * DT
    assert int(checkpoint_of(traj)["steps_done"]) == STEPS
    assert samples[0][0] == 0 and samples[-1][0] == STEPS
    chunks = samples[2:]  # from the end of the first chunk of steps on
    first = chunks[0][1]
    peak = max(r for _, r in chunks)
    drift = np.abs(traj.energy - traj.energy[0]).max() / abs(traj.energy[0])
    print(f"\n{STEPS:,} steps in {seconds:.1f} s ({STEPS / seconds / 1e6:.2f} M steps/s), "
          f"{len(chunks)} chunks; resident memory after the first chunk {first / 2**20:.1f} "
          f"MiB, highest after it {peak / 2**20:.1f} MiB (+{100 * (peak / first - 1):.2f}%), "
          f"at the end {chunks[-1][1] / 2**20:.1f} MiB; file {os.path.getsize(out) / 1e3:.0f} "
          f"kB; max |dE/E| {drift:.2e}")
    assert peak <= 1.10 * first
    assert np.array_equal(Trajectory.load(out).t, traj.t)
