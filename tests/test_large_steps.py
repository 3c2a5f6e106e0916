"""Large rolling steps: the extrapolated Newton start and the globalised Newton of the rolling
step (``Retraction(extrapolate=..., globalize=...)``, :mod:`nhphys.twins.rolling`, "Finding the
step"), and the rattleback at dt = 1e-2.

The independent facts: the root of the check problem is known in closed form; the rattleback's
first spin reversal time comes from a run at a hundredth of the step (dt = 1e-4, which agrees
with dt = 5e-4 to 2e-4 s), and the error of the dt = 1e-2 run must shrink like h^2; how the step
is found must not change the step (the same trajectory to the Newton tolerance).
"""

import collections
import math

import numpy as np
import pytest

import nhphys
import nhphys.twins.rolling as twin
from nhphys import _backend
from nhphys.integrators import Retraction
from nhphys.scenes import ellipsoid_plane, rattleback
from nhphys.systems import RollingBody
from nhphys.twins.newton import NOT_CONVERGED, OK

# the first reversal of the bundled rattleback's vertical spin (scene's start, spun at +5 rad/s)
# with Retraction('exp') at dt = 1e-4 (11.459018 at dt = 5e-4, 11.459680 at dt = 1e-3)
REVERSAL_REFERENCE = 11.458817
ROOT = (1.0 + math.tan(0.2), -2.0)  # of the check problem solve_arctan


def solver(backend):
    """The ``solve_arctan`` of ``backend`` (kernel or twin)."""
    return _backend.choose("rolling", backend)[0].solve_arctan


def first_reversal(traj):
    """Time of the first sign change of the vertical spin (linear interpolation)."""
    w = rattleback.vertical_spin(traj)
    i = np.flatnonzero(np.sign(w[:-1]) != np.sign(w[1:]))
    assert i.size, "the spin does not reverse"
    i = i[0]
    return traj.t[i] + (traj.t[i + 1] - traj.t[i]) * w[i] / (w[i] - w[i + 1])


def run_rattleback(dt, t_final, backend, **options):
    system = RollingBody(rattleback.rattleback, rattleback.ground)
    return nhphys.simulate(system, t_final, dt, Retraction("exp", **options),
                           orientation=rattleback.R0, omega=[0.0, 0.0, rattleback.SPIN],
                           backend=backend, save_every=1)


# -- the globalised Newton ----------------------------------------------------------------------

@pytest.mark.parametrize("start", [(3.0, 0.0), (4.0, -6.0)])
def test_globalised_newton_converges_where_plain_newton_diverges(backend, start):
    status, x, _ = solver(backend)(start, False, 30)
    assert status != OK  # Newton on atan overshoots: the iterates run off to infinity
    status, x, points = solver(backend)(start, True, 30)
    assert status == OK
    np.testing.assert_allclose(x, ROOT, rtol=0, atol=1e-15)
    assert len(points) <= 12


def test_globalised_newton_takes_newtons_steps_near_a_root(backend):
    # inside Newton's region every full correction decreases the merit: the same iterates
    plain = solver(backend)((1.5, -2.0), False, 30)
    damped = solver(backend)((1.5, -2.0), True, 30)
    assert plain[0] == damped[0] == OK
    np.testing.assert_array_equal(plain[2], damped[2])


def test_globalised_newton_reports_no_root_nearby(backend):
    # far out the merit's valley runs off to infinity: the halvings find no decrease, or the
    # corrections run out, but the solve never claims a root
    status, _, _ = solver(backend)((-5.0, 3.0), True, 30)
    assert status == NOT_CONVERGED


@pytest.mark.parity
@pytest.mark.parametrize("start", [(3.0, 0.0), (4.0, -6.0), (1.5, -2.0)])
def test_kernel_and_twin_globalised_newton_take_the_same_iterates(start):
    k = _backend.choose("rolling", "cython")[0].solve_arctan(start, True, 30)
    t = twin.solve_arctan(start, True, 30)
    assert k[0] == t[0]
    assert k[2].shape == t[2].shape
    np.testing.assert_allclose(k[2], t[2], rtol=1e-12, atol=0)


# -- the rolling step ---------------------------------------------------------------------------

def test_how_the_step_is_found_does_not_change_the_step(backend):
    # the same ellipsoid trajectory with the plain start and with the extrapolated, globalised
    # one: the solutions agree to the Newton tolerance, not only to the method's accuracy
    system = RollingBody(ellipsoid_plane.egg, ellipsoid_plane.ground)
    start = ellipsoid_plane.START
    steps = 200 if backend == "python" else 5000
    runs = [nhphys.simulate(system, steps * 1e-3, 1e-3, Retraction(extrapolate=e, globalize=g),
                            orientation=start["orientation"], omega=start["omega"],
                            backend=backend, save_every=10)
            for e, g in ((False, False), (True, True))]
    np.testing.assert_allclose(runs[1].R, runs[0].R, rtol=0, atol=1e-11)
    np.testing.assert_allclose(runs[1].omega, runs[0].omega, rtol=0, atol=1e-10)
    assert runs[1].constraint_residual.max() < 1e-14


def test_extrapolated_start_saves_newton_work():
    # on the twin, counting: the step's solve needs one correction instead of two, and the
    # contact solves inside it start closer (ellipsoid on a plane, dt = 1e-3)
    counts = {}
    for setting in (False, True):
        count = collections.Counter()
        plain = twin.newton_solve

        def counting(residual, jacobian, x, x_floor, rule, count=count, plain=plain):
            def res(y):
                count[len(y)] += 1
                return residual(y)
            return plain(res, jacobian, x, x_floor, rule)

        twin.newton_solve = counting
        try:
            system = RollingBody(ellipsoid_plane.egg, ellipsoid_plane.ground)
            nhphys.simulate(system, 0.1, 1e-3, Retraction(extrapolate=setting),
                            orientation=ellipsoid_plane.START["orientation"],
                            omega=ellipsoid_plane.START["omega"], backend="python")
        finally:
            twin.newton_solve = plain
        counts[setting] = {n: c / 100 for n, c in count.items()}
    assert counts[False][6] > 2.9 and counts[True][6] < 2.1  # residuals of the step's solve
    assert counts[True][2] < 0.8 * counts[False][2]  # residuals of the contact solves


@pytest.mark.kernels_only("2000 rattleback steps, about 15 s on the twins; the first 100 steps "
                          "are compared with the twin by the parity test below")
def test_rattleback_at_a_hundredth_runs_twenty_seconds_and_reverses(backend):
    traj = run_rattleback(1e-2, 20.0, backend)
    assert traj.t[-1] == pytest.approx(20.0)
    assert traj.constraint_residual.max() < 1e-14
    t_coarse = first_reversal(traj)
    # measured: 11.800 s against 11.459 s, 3.0 % late; the error of an order-2 run shrinks
    # like h^2: at dt = 5e-3 it is a quarter (measured 0.0836 s against 0.341 s, ratio 4.08)
    assert abs(t_coarse - REVERSAL_REFERENCE) < 0.05 * REVERSAL_REFERENCE
    t_half = first_reversal(run_rattleback(5e-3, 20.0, backend))
    ratio = (t_coarse - REVERSAL_REFERENCE) / (t_half - REVERSAL_REFERENCE)
    assert 3.5 < ratio < 4.6


@pytest.mark.parity
def test_kernel_and_twin_agree_on_the_rattleback_at_a_hundredth():
    a = run_rattleback(1e-2, 1.0, "cython")
    b = run_rattleback(1e-2, 1.0, "python")
    np.testing.assert_allclose(a.R, b.R, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.omega, b.omega, rtol=0, atol=1e-10)
