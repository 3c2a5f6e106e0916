"""A scene's bodies stepped side by side on threads: the same results as one after the other."""

import os
import signal
import threading

import numpy as np
import pytest

import nhphys
from nhphys import KnifeEdgeContact, RollingContact, Scene, SuslovContact
from nhphys.errors import NewtonError
from nhphys.shapes import Disk
from nhphys.surfaces import Ellipsoid, Paraboloid, ParametricSurface, Plane, Sphere


def mixed_scene():
    """Rolling bodies on three grounds, a sleigh on a knife edge and a Suslov top."""
    scene = Scene(name="mixed")
    plane = scene.add_ground(Plane(extent=2.0))
    bowl = scene.add_ground(Paraboloid(1.0, 1.0, extent=0.8))
    scene.add_body(nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1)), RollingContact(bowl),
                   position=[0.3, 0.0, 0.0], omega=[0.0, 0.0, 2.0])
    scene.add_body(nhphys.RigidBody(1.0, [0.02, 0.03, 0.04], Ellipsoid([0.3, 0.2, 0.1])),
                   RollingContact(plane), position=[0.5, 0.5, 0.0], omega=[0.5, 0.2, 3.0],
                   orientation=nhphys.lie.so3.exp([0.1, 0.05, 0.0]))
    scene.add_body(nhphys.RigidBody(2.0, [0.01, 0.02, 0.03], Ellipsoid([0.4, 0.3, 0.2])),
                   KnifeEdgeContact(plane, offset=0.1), position=[-0.5, 0.2], heading=0.3,
                   velocity=0.4, turning_rate=1.0)
    scene.add_body(nhphys.RigidBody(1.0, [[1, 0, 0.2], [0, 2, 0.3], [0.2, 0.3, 3]],
                                    Ellipsoid([0.5, 0.35, 0.2])),
                   SuslovContact([0, 0, 1], pivot=[0, -1, 1]), omega=[1.0, 0.5, 0.0])
    return scene


def test_side_by_side_equals_one_after_the_other(backend):
    scene = mixed_scene()
    t_final = 0.5 if backend == "python" else 5.0
    serial = scene.simulate(t_final, 0.01, backend=backend, threads=1)
    threaded = scene.simulate(t_final, 0.01, backend=backend, threads=2)
    assert scene.start(0.01, backend=backend, threads=2).side_by_side == (backend == "cython")
    assert not scene.start(0.01, backend=backend, threads=1).side_by_side
    assert sorted(serial.fields) == sorted(threaded.fields)
    for name in serial.fields:
        assert np.array_equal(serial[name], threaded[name]), name
    # each body is its own system: the scene's ball equals the ball run alone
    alone = nhphys.simulate(scene.bodies[0].system, t_final, 0.01, backend=backend,
                            position=[0.3, 0.0, 0.0], omega=[0.0, 0.0, 2.0])
    assert np.array_equal(alone.R, threaded.R[:, 0])


def test_a_python_ground_steps_one_after_the_other():
    def point(u, v):
        return [u, v, 0.5 * (u * u + v * v)]

    def jacobian(u, v):
        return [[1.0, 0.0], [0.0, 1.0], [u, v]]

    def hessian(u, v):
        return [[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]]

    scene = Scene()
    bowl = scene.add_ground(ParametricSurface(point, jacobian, hessian))
    for x in (0.2, -0.2):
        scene.add_body(nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1)), RollingContact(bowl),
                       position=[x, 0.0, 0.0], omega=[0.0, 0.0, 1.0])
    run = scene.start(0.01, backend="cython", threads=2)
    assert not run.side_by_side  # its kernel calls back into Python, which takes the GIL
    threaded = scene.simulate(0.2, 0.01, backend="cython", threads=2)
    serial = scene.simulate(0.2, 0.01, backend="cython", threads=1)
    assert np.array_equal(serial.R, threaded.R)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_bad_threads(threads):
    with pytest.raises(ValueError, match="threads"):
        mixed_scene().simulate(0.1, 0.01, threads=threads)


def falling_coin_scene():
    """A sphere that rolls and a disk that falls flat (a contact event) at t of about 0.5 s."""
    scene = Scene()
    plane = scene.add_ground(Plane(extent=2.0))
    scene.add_body(nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1)), RollingContact(plane),
                   name="ball", position=[0.0, 0.0, 0.0], omega=[1.0, 0.0, 0.0])
    coin = nhphys.RigidBody(1.0, [0.25e-2, 0.25e-2, 0.5e-2], Disk(0.1), name="coin")
    scene.add_body(coin, RollingContact(plane), name="coin", position=[1.0, 0.0, 0.0],
                   orientation=nhphys.lie.so3.exp([1.2, 0.0, 0.0]))
    return scene


def test_a_failing_body_is_named_and_stops_the_run_on_threads(backend):
    scene = falling_coin_scene()
    messages = []
    for threads in (1, 2):
        with pytest.raises(NewtonError, match="Body 'coin'") as caught:
            scene.simulate(3.0, 0.01, backend=backend, threads=threads)
        messages.append(str(caught.value))
        partial = caught.value.trajectory
        assert len(partial) >= 1 and np.isfinite(partial.R).all()
    assert messages[0] == messages[1]


def test_ctrl_c_on_threads_keeps_every_body_s_frames(tmp_path, monkeypatch):
    """A real SIGINT while the bodies step side by side (in the third call, once every body's
    thread has started): the call's steps are finished and kept, the run is marked
    interrupted, and what was kept equals the uninterrupted run."""
    import nhphys.scene as scene_module

    scene = mixed_scene()
    full = scene.simulate(20.0, 0.001, backend="cython", threads=2, save_every=100)
    calls = []

    def wait_signalled(futures):
        calls.append(len(futures))
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)  # handled here, while the threads run
        return scene_module.wait.__wrapped__(futures)

    wait_signalled.__wrapped__ = scene_module.wait
    monkeypatch.setattr(scene_module, "wait", wait_signalled)
    with pytest.warns(RuntimeWarning, match="Interrupted at t = 15"):
        traj = scene.simulate(20.0, 0.001, backend="cython", threads=2, save_every=100,
                              out=tmp_path / "run.npz")
    assert calls[:3] == [4, 4, 4]
    assert traj.meta["interrupted"] and len(traj) == 1 + 3 * 50  # three whole calls kept
    for name in traj.fields:
        assert np.array_equal(traj[name], full[name][:len(traj)]), name
    saved = nhphys.Trajectory.load(tmp_path / "run.interrupted.npz")
    assert np.array_equal(saved.R, traj.R)


def test_an_interruption_inside_a_body_s_thread_keeps_the_calls_before(monkeypatch):
    """A KeyboardInterrupt raised in one body's thread (as a kernel returns): the bodies are
    then at different steps, so the call's frames are dropped and those before it kept."""
    import nhphys.scene as scene_module
    from nhphys import _backend

    monkeypatch.setattr(scene_module, "CHUNK_STEPS", 20)  # 5 steps per body per call
    scene = mixed_scene()
    full = scene.simulate(0.5, 0.01, backend="cython", threads=2)
    kernel = _backend.kernel_module("suslov")
    loop = kernel.retraction_run
    calls = []

    def interrupted(*args, **kwargs):
        code = loop(*args, **kwargs)
        calls.append(code)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return code

    monkeypatch.setattr(kernel, "retraction_run", interrupted)
    with pytest.warns(RuntimeWarning, match="Interrupted at t = 0.15"):
        traj = scene.simulate(0.5, 0.01, backend="cython", threads=2)
    assert traj.meta["interrupted"] and len(traj) == 1 + 3 * 5
    for name in traj.fields:
        assert np.array_equal(traj[name], full[name][:len(traj)]), name
