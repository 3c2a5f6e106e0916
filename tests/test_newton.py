"""The shared Newton solver and status table (kernel and twin), and the per-module backends."""

import warnings

import numpy as np
import pytest

from nhphys import _backend
from nhphys.twins import newton as twin


def test_status_table_matches_between_kernel_and_twin(backend):
    module = _backend.implementation("newton", backend)
    if backend == "cython":
        assert module.status_table() == twin.CODES
    assert len(set(twin.CODES.values())) == len(twin.CODES)  # one code per status
    assert twin.EVENTS == {twin.FLAT, twin.RIM_TO_SIDE, twin.INNER_CONTACT}


@pytest.mark.parametrize("target", [(2.0, -1.0), (1e-3, 5.0), (-30.0, 0.25)])
def test_newton_solves_to_roundoff_and_both_backends_agree(backend, target):
    solve = _backend.implementation("newton", backend).solve_cubic
    st, x, evaluations, jacobians = solve(target, [1.0, 1.0], [1.0, 1.0], 1e-12, 0.0, 50)
    assert st == twin.OK
    x0, x1 = x
    residual = [x0 ** 3 + x1 - target[0], x1 ** 3 - x0 - target[1]]
    assert np.max(np.abs(residual)) <= 1e-12 * (1 + np.max(np.abs(target)))
    ref = twin.solve_cubic(target, [1.0, 1.0], [1.0, 1.0], 1e-12, 0.0, 50)
    assert ref[0] == st and ref[2:] == (evaluations, jacobians)  # the same iterations
    np.testing.assert_allclose(x, ref[1], rtol=1e-14, atol=1e-15)


def test_residual_test_ends_the_solve_without_a_further_correction(backend):
    solve = _backend.implementation("newton", backend).solve_cubic
    # (1, 1) solves it: from next to it, both rules stop after the second residual, but the
    # residual test there saves the second Jacobian and solve
    start = [1.0 + 1e-9, 1.0]
    st, x, _, with_residual = solve([2.0, 0.0], start, [1.0, 1.0], 1e-12, 8e-16, 50)
    assert st == twin.OK and with_residual == 1
    np.testing.assert_allclose(x, [1.0, 1.0], rtol=1e-15)
    st, _, _, correction_only = solve([2.0, 0.0], start, [1.0, 1.0], 1e-12, 0.0, 50)
    assert st == twin.OK and correction_only == 2


def test_newton_reports_failure_statuses(backend):
    solve = _backend.implementation("newton", backend).solve_cubic
    st, _, evaluations, _ = solve([2.0, -1.0], [10.0, -10.0], [1.0, 1.0], 1e-12, 0.0, 2)
    assert (st, evaluations) == (twin.NOT_CONVERGED, 2)
    st = solve([2.0, -1.0], [1e120, 1e120], [1.0, 1.0], 1e-12, 0.0, 50)[0]  # x^3 overflows
    assert st == twin.NOT_FINITE
    st = solve([2.0, -1.0], [1e120, 1e120], [1.0, 1.0], 1e-12, 1e-15, 50)[0]
    assert st == twin.NOT_FINITE


def test_a_missing_kernel_module_falls_back_alone_with_one_warning(monkeypatch):
    real = _backend.kernel_module

    def partial_build(name):
        return None if name == "rolling" else real(name)

    monkeypatch.setattr(_backend, "kernel_module", partial_build)
    monkeypatch.setattr(_backend, "_warned", set())
    monkeypatch.delenv("NHPHYS_PUREPYTHON", raising=False)
    with pytest.warns(RuntimeWarning, match="nhphys_ext.rolling") as record:
        module, used = _backend.choose("rolling", "auto")
        again, _ = _backend.choose("rolling", "auto")
    assert len(record) == 1
    assert used == "python" and module.__name__ == "nhphys.twins.rolling" and again is module
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if real("suslov") is not None:
            assert _backend.choose("suslov", "auto")[1] == "cython"
    with pytest.raises(ValueError, match="nhphys_ext.rolling"):
        _backend.choose("rolling", "cython")
    assert _backend.missing_kernels() == ["rolling"] or real("so3") is None
