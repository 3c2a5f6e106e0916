"""The fields' own DOP853 loop (``integrate``; nhphys/twins/dop853.py and
nhphys_ext/dop853.pxd) on the Suslov, coordinate and rolling fields: scipy's ``solve_ivp``
DOP853 step by step without the projection, on the manifold at every accepted step with it, the
kernel equal to the twin. (Its failures on a rolling body: tests/test_adaptive_rolling.py.)"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from nhphys import _backend
from nhphys.integrators.adaptive import field_of
from nhphys.lie import so3
from test_adaptive_rolling import scene_setup, thin_disk
from test_coordinate_field import SYSTEMS, field_of as coordinate_field, random_states

NON_PRINCIPAL = np.array([[1.0, 0.0, 0.2], [0.0, 2.0, 0.3], [0.2, 0.3, 3.0]])


def suslov(backend):
    """The Suslov field of issue 13's case and a start on its manifold."""
    field = _backend.choose("rhs", backend)[0].SuslovField(NON_PRINCIPAL, [0.0, 0.0, 1.0])
    y = np.concatenate([so3.exp([0.3, -0.2, 0.5]).ravel(), [1.0, 0.5, 0.0]])
    return field, y


def coordinates(name, backend):
    system = SYSTEMS[name]()
    y = random_states(system, np.random.default_rng(7), count=1)[0]
    return coordinate_field(system, backend), y


def rolling(setup, backend):
    """A rolling body's field (eq. 29) and its start (``reference_state`` first: it picks the
    ground chart the field works on)."""
    system, start = setup()
    y = system.reference_state(**start)
    return field_of(system, backend)[0], y


CASES = {"suslov": suslov, **{name: (lambda b, n=name: coordinates(n, b)) for name in SYSTEMS},
         "thin disk": lambda b: rolling(thin_disk, b),
         "rattleback": lambda b: rolling(lambda: scene_setup("rattleback"), b)}
# The fields whose right-hand side is smooth. With a force schedule or a speed-controlled motor
# the field's derivative jumps at the schedule's knots, and an accepted step across a knot errs
# by up to the tolerance, depending on where it starts: two loops whose step sizes differ by the
# round-off of the error estimate (relative eps / rtol, since the estimate is a difference of
# stages) then end up to the tolerance apart, not to round-off. Those fields are checked
# against Reference instead (tests/test_adaptive_coordinates.py).
SMOOTH = [name for name in CASES if "forces" not in name and "motor" not in name]


@pytest.mark.parametrize("case", SMOOTH)
def test_loop_is_scipys_dop853_step_by_step(case, backend):
    # solve_ivp(method="DOP853") is the independent specification: the same accepted steps, the
    # same number of field calls and the same end state, to round-off (the twin to the bit)
    field, y0 = CASES[case](backend)
    for rtol, first in ((1e-6, 0.0), (1e-10, 0.0), (1e-8, 1e-3)):
        y = y0.copy()
        field.evaluations = 0
        status, code, h_next, steps = field.integrate(y, 0.0, 2.0, rtol, rtol * 1e-2, first,
                                                      100_000, project=False)
        calls = field.evaluations
        assert (status, code) == (0, 0) and h_next > 0
        sol = solve_ivp(field, (0.0, 2.0), y0, method="DOP853", rtol=rtol, atol=rtol * 1e-2,
                        first_step=first or None)
        assert len(sol.t) - 1 == steps
        assert sol.nfev == calls
        assert np.abs(sol.y[:, -1] - y).max() <= 1e-12 * max(1.0, np.abs(y).max())
        if backend == "python":
            assert np.array_equal(sol.y[:, -1], y)


def on_manifold(field, y):
    """The distance of ``y`` from the field's manifold: what its projection moves."""
    z = y.copy()
    field.project(z)
    return np.abs(z - y).max()


@pytest.mark.parametrize("case", list(CASES))
def test_every_accepted_step_is_projected(case, backend):
    # max_steps = k stops the loop at its k-th accepted step (TOO_MANY_STEPS): with the
    # projection each of them is on the manifold to round-off, without it they drift off
    field, y0 = CASES[case](backend)
    rtol, atol = 1e-5, 1e-7
    drift = {}
    for project in (True, False):
        ends = []
        for k in range(1, 16):
            y = y0.copy()
            status, code, _, steps = field.integrate(y, 0.0, 100.0, rtol, atol, 0.0, k,
                                                     project=project)
            assert (status, code, steps) == (0, 1, k)
            ends.append(y)
        drift[project] = max(on_manifold(field, y) for y in ends)
    # (that the projection keeps the accuracy is tested against Reference in test_adaptive*.py)
    assert drift[True] <= 2e-15 * max(1.0, np.abs(y0).max())
    assert drift[False] > 1e-13 * max(1.0, np.abs(y0).max())


@pytest.mark.parametrize("case", ["suslov", "knife edge", "thin disk"])
def test_the_specification_projects_each_accepted_step_once(case):
    # the twin loop (which the kernel equals, test_kernel_loop_equals_the_twin) calls the
    # projection on every accepted step, before the next step starts from it: once a step,
    # and each call sees the state the step accepted
    from nhphys.twins import dop853

    field, y = CASES[case]("python")
    seen, times = [], []

    def project(t, state):
        seen.append(state.copy())
        times.append(t)
        field.project(state, t)
        return 0

    def rates(t, state):
        return 0, field(t, state)

    status, code, _, steps = dop853.integrate(rates, y, 0.0, 2.0, 1e-6, 1e-8, 0.0, 10_000,
                                              project)
    assert (status, code) == (0, 0) and steps == len(seen) > 3
    # each call gets the time of the state it projects: the accepted steps' ends, up to t1
    assert np.all(np.diff(times) > 0) and times[0] > 0.0 and times[-1] == 2.0
    assert max(on_manifold(field, state) for state in seen) > 0.0  # unprojected when seen
    assert on_manifold(field, y) <= 2e-15 * max(1.0, np.abs(y).max())


@pytest.mark.parity
@pytest.mark.parametrize("case", SMOOTH)
def test_kernel_loop_equals_the_twin(case):
    ends = []
    for backend in ("cython", "python"):
        field, y = CASES[case](backend)
        out = field.integrate(y, 0.0, 5.0, 1e-9, 1e-11, 0.0, 100_000)
        ends.append((y, out, field.evaluations))
    (y_fast, out_fast, calls_fast), (y_slow, out_slow, calls_slow) = ends
    assert out_fast[:2] == out_slow[:2] == (0, 0)
    assert out_fast[3] == out_slow[3] and calls_fast == calls_slow
    assert np.abs(y_fast - y_slow).max() <= 1e-11 * max(1.0, np.abs(y_slow).max())


@pytest.mark.parametrize("case", ["suslov", "knife edge", "thin disk"])
def test_bad_states_are_refused(case, backend):
    # the loop and the projection change the state in place: they refuse anything else than
    # a writable C-contiguous float64 array of the field's size, and leave a read-only one alone
    field, y = CASES[case](backend)
    frozen = y.copy()
    frozen.flags.writeable = False
    for bad in (y[:-1].copy(), y.astype(np.float32), np.repeat(y, 2)[::2], frozen):
        with pytest.raises(ValueError, match="writable C-contiguous float64"):
            field.integrate(bad, 0.0, 1.0, 1e-6, 1e-8, 0.0, 10)
        with pytest.raises(ValueError, match="writable C-contiguous float64"):
            field.project(bad)
    assert np.array_equal(frozen, y)
