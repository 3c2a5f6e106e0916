"""A user's Python ground raising inside a rolling run: the run re-raises that exception, and
Ctrl-C inside it interrupts the run as usual, on both backends."""

import importlib
import traceback
import warnings

import numpy as np
import pytest

import nhphys
from nhphys import _backend
from nhphys.integrators import Retraction
from nhphys.surfaces import ParametricSurface, Sphere
from nhphys.systems import RollingBody

OMEGA0 = [0.0, 5.0, 0.0]  # rolls towards +x at 0.5 m/s, up to x = 0.19 in the bowl below
TRAP_X = 0.05  # where the ground's callback raises, once armed


class Boom(ValueError):
    """What the user's callback raises."""


def trapped_bowl(exception):
    """A paraboloid bowl ``z = (x^2 + y^2) / 2`` from Python callables whose ``point`` raises
    ``exception`` beyond ``x = TRAP_X`` once ``trap["armed"]`` is set."""
    trap = {"armed": False, "calls": 0}

    def point(u, v):
        trap["calls"] += 1
        if trap["armed"] and u > TRAP_X:
            raise exception(f"boom at u = {u:.3f}")
        return [u, v, 0.5 * (u * u + v * v)]

    def jacobian(u, v):
        return [[1.0, 0.0], [0.0, 1.0], [u, v]]

    def hessian(u, v):
        return [[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]]

    surface = ParametricSurface(point, jacobian, hessian, (-1.0, 1.0), (-1.0, 1.0))
    return surface, trap


def ball_system(ground, trap=None):
    """A ball on ``ground``; with ``trap``, the trap is armed once the ball has been placed
    (placement projects a grid of the whole chart onto the ground)."""
    system = RollingBody(nhphys.RigidBody(1.0, [0.004] * 3, Sphere(0.1)), ground)
    if trap is not None:
        place = system.place

        def place_then_arm(*args, **kwargs):
            state = place(*args, **kwargs)
            trap["armed"] = True
            return state

        system.place = place_then_arm
    return system


def test_a_raising_callback_is_reraised_with_its_traceback(backend):
    ground, trap = trapped_bowl(Boom)
    run = Retraction().start(ball_system(ground), 1e-3, backend, omega0=OMEGA0)
    assert run.backend == backend
    run.advance(50, 10)
    trap["armed"] = True
    with pytest.raises(Boom, match=r"boom at u = 0\.05") as info:
        run.advance(500, 10)
    # the user's frame is in the traceback: the exception itself, not a NaN turned into a
    # "Lambda is singular" failure
    assert "point" in [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    calls = trap["calls"]
    with pytest.raises(RuntimeError, match="start a new one"):
        run.advance(10, 10)
    assert trap["calls"] == calls  # a failed run does not step again
    assert run.a[0] <= TRAP_X + 0.1  # the state is that of a step before the trap, not NaN
    assert np.all(np.isfinite(run.A)) and np.all(np.isfinite(run.a))


@pytest.mark.parity
def test_kernel_stops_within_the_step_and_leaves_the_twins_state():
    """The kernel stops at the step whose evaluation raised and leaves the state at its start:
    the twin, which raises there naturally, leaves the same one."""
    states = {}
    for backend in ("cython", "python"):
        ground, trap = trapped_bowl(Boom)
        run = Retraction(order=4).start(ball_system(ground, trap), 1e-3, backend,
                                        omega0=OMEGA0)
        with pytest.raises(Boom):
            run.advance(500, 1)
        states[backend] = [x.copy() for x in (run.A, run.a, run.Pi, run.p, run.z)]
    for a, b in zip(states["cython"], states["python"]):
        assert np.abs(a - b).max() <= 1e-12


def test_simulate_reraises_the_callbacks_exception(backend):
    ground, trap = trapped_bowl(Boom)
    with pytest.raises(Boom, match=r"boom at u = 0\.05"):
        nhphys.simulate(ball_system(ground, trap), 0.5, 1e-3, backend=backend, omega0=OMEGA0)


def test_ctrl_c_inside_a_callback_interrupts_the_run(backend, monkeypatch):
    driver = importlib.import_module("nhphys.simulate")
    monkeypatch.setattr(driver, "CHUNK_STEPS", 20)
    ground, trap = trapped_bowl(KeyboardInterrupt)  # what Ctrl-C raises in Python code
    system = ball_system(ground, trap)
    with pytest.warns(RuntimeWarning, match="Interrupted at t = "):
        traj = nhphys.simulate(system, 1.0, 1e-3, backend=backend, omega0=OMEGA0)
    assert traj.meta["interrupted"] is True
    # the chunks before the one Ctrl-C interrupted, all of them short of the trap
    assert 1 < len(traj) < 1000 and traj.t[-1] < 0.2
    assert traj.contact_point[:, 0].max() <= TRAP_X
    assert traj.contact_point[-1, 0] > TRAP_X - 0.5 * 20e-3  # at most a chunk before it


@pytest.mark.parity
def test_compiled_array_methods_reraise_a_callbacks_exception():
    ground, trap = trapped_bowl(Boom)
    bridged = ground.with_backend("cython")
    trap["armed"] = True
    uv = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.0]])
    with pytest.raises(Boom, match=r"boom at u = 0\.100"):
        bridged.normal(uv)
    trap["armed"] = False  # the error was taken: the surface evaluates again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        normals = bridged.normal(uv)
    np.testing.assert_allclose(normals[1], np.array([-0.1, 0.0, 1.0]) / np.sqrt(1.01),
                               rtol=1e-14)
