"""SE(2): maps and Jacobians against matrix exponentials and finite differences; the closed-form
discrete Legendre transforms of the SE(2) retraction integrator against their definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

from nhphys.lie import se2
from nhphys.twins import se2_retraction as twin

vectors = st.lists(st.floats(-2.5, 2.5), min_size=3, max_size=3).map(np.array)
small = st.lists(st.floats(-1e-3, 1e-3), min_size=3, max_size=3).map(np.array)


def _fd_jacobians(tau, xi, backend, eps=1e-6):
    T = se2.to_matrix(tau(xi, backend))
    JL, JR = np.zeros((3, 3)), np.zeros((3, 3))
    for i in range(3):
        d = np.zeros(3)
        d[i] = eps
        dT = (se2.to_matrix(tau(xi + d, backend)) - se2.to_matrix(tau(xi - d, backend))) / (2 * eps)
        JL[:, i] = se2.vee(dT @ np.linalg.inv(T))
        JR[:, i] = se2.vee(np.linalg.inv(T) @ dT)
    return JL, JR


@settings(max_examples=40, deadline=None)
@given(st.one_of(vectors, small))
def test_exp_is_the_matrix_exponential_and_log_inverts_it(backend, xi):
    np.testing.assert_allclose(se2.to_matrix(se2.exp(xi, backend)), expm(se2.hat(xi)),
                               atol=1e-14)
    np.testing.assert_allclose(se2.log(se2.exp(xi, backend), backend), xi, atol=1e-13)


@settings(max_examples=40, deadline=None)
@given(st.one_of(vectors, small))
def test_cayley_is_the_matrix_cayley_transform_and_inverts(backend, xi):
    X = se2.hat(xi)
    C = np.linalg.solve(np.eye(3) - X / 2, np.eye(3) + X / 2)
    np.testing.assert_allclose(se2.to_matrix(se2.cay(xi, backend)), C, atol=1e-14)
    np.testing.assert_allclose(se2.cay_inv(se2.cay(xi, backend), backend), xi, atol=1e-13)


@pytest.mark.parametrize("xi", [[0.3, -0.2, 1.3], [1.0, 2.0, 2.5], [0.3, 0.1, 1e-4], [0.2, 0.1, 0]])
def test_jacobians_match_finite_differences(backend, xi):
    xi = np.array(xi, dtype=float)
    for tau, jl, jr, jli, jri in [
        (se2.exp, se2.exp_jac_left, se2.exp_jac_right, se2.exp_jac_left_inv,
         se2.exp_jac_right_inv),
        (se2.cay, se2.cay_jac_left, se2.cay_jac_right, se2.cay_jac_left_inv,
         se2.cay_jac_right_inv),
    ]:
        JL, JR = _fd_jacobians(tau, xi, backend)
        np.testing.assert_allclose(jl(xi, backend), JL, atol=1e-8)
        np.testing.assert_allclose(jr(xi, backend), JR, atol=1e-8)
        np.testing.assert_allclose(jli(xi, backend) @ JL, np.eye(3), atol=1e-8)
        np.testing.assert_allclose(jri(xi, backend) @ JR, np.eye(3), atol=1e-8)


@settings(max_examples=30, deadline=None)
@given(vectors)
def test_left_jacobian_is_adjoint_times_right(backend, xi):
    np.testing.assert_allclose(se2.exp_jac_left(xi, backend),
                               se2.Ad(se2.exp(xi, backend)) @ se2.exp_jac_right(xi, backend),
                               atol=1e-13)


def test_e_coefficient_on_both_sides_of_the_series_switch():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    for w in (1e-7, 0.2, se2.SERIES_SWITCH * (1 - 1e-12), se2.SERIES_SWITCH * (1 + 1e-12), 2.0):
        x = mp.mpf(w)
        exact = float((1 - (x / 2) / mp.tan(x / 2)) / x)
        assert abs(se2.e_coeff(w) - exact) <= 1e-13 * abs(exact)
    h = 1e-6
    fd = (se2.e_coeff(0.3 + h) - se2.e_coeff(0.3 - h)) / (2 * h)
    assert abs(fd - se2.e_coeff_derivative(0.3)) < 1e-9


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1.5, 1.5), min_size=4, max_size=4).map(np.array),
       st.sampled_from([0, 1]))
def test_momenta_are_the_discrete_legendre_transforms(xi, map_code):
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    inertia = A @ A.T + 4 * np.eye(4)
    h = 0.3
    M = inertia @ xi / h
    jli, jri = ((se2.exp_jac_left_inv, se2.exp_jac_right_inv) if map_code == 0
                else (se2.cay_jac_left_inv, se2.cay_jac_right_inv))
    pm, pp = twin.momentum_pair(xi, inertia, h, map_code)
    np.testing.assert_allclose(pm[:3], jli(xi[:3]).T @ M[:3], atol=1e-12 * np.abs(M).max())
    np.testing.assert_allclose(pp[:3], jri(xi[:3]).T @ M[:3], atol=1e-12 * np.abs(M).max())
    assert pm[3] == pytest.approx(M[3]) and pp[3] == pytest.approx(M[3])
    D = twin.momentum_minus_jacobian(xi, inertia, h, map_code)
    eps = 1e-6
    for i in range(4):
        d = np.zeros(4)
        d[i] = eps
        fd = (twin.momentum(xi + d, inertia, h, map_code, 1) -
              twin.momentum(xi - d, inertia, h, map_code, 1)) / (2 * eps)
        np.testing.assert_allclose(D[:, i], fd, atol=1e-7 * np.abs(D).max())


# -- the array kernels and their twins -----------------------------------------------------------

@pytest.mark.parity
def test_se2_kernels_match_twins_near_every_branch():
    from nhphys.twins import se2 as twin
    from nhphys_ext import se2 as kernel

    angle = st.one_of(st.floats(-1e-6, 1e-6), st.floats(0.49, 0.51), st.floats(-0.51, -0.49),
                      st.floats(-3.1, 3.1))
    rows = st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5), angle), min_size=1,
                    max_size=8).map(np.array)

    @settings(max_examples=150, deadline=None)
    @given(xi=rows)
    def check(xi):
        xi = np.ascontiguousarray(xi, dtype=float)
        for name in se2.KERNEL_FUNCTIONS:
            arg = twin.hat(xi) if name == "vee" else xi
            a = getattr(kernel, name)(np.ascontiguousarray(arg))
            b = getattr(twin, name)(arg)
            assert np.all(np.abs(a - b) <= 1e-12 * np.maximum(1.0, np.abs(b))), name

    check()


def test_se2_functions_take_leading_axes(backend):
    rng = np.random.default_rng(3)
    xi = rng.normal(size=(2, 4, 3))
    assert se2.exp(xi, backend).shape == (2, 4, 3)
    assert se2.exp_jac_left(xi, backend).shape == (2, 4, 3, 3)
    np.testing.assert_allclose(se2.log(se2.exp(xi, backend), backend)[..., 2],
                               np.arctan2(np.sin(xi[..., 2]), np.cos(xi[..., 2])), atol=1e-14)
    single = se2.exp(xi[1, 2], backend)
    np.testing.assert_allclose(single, se2.exp(xi, backend)[1, 2], rtol=1e-15)
    with pytest.raises(ValueError, match=r"`xi` to have shape \(\.\.\., 3\)"):
        se2.exp([1.0, 2.0], backend)
