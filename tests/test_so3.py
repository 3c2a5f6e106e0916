"""SO(3) maps and Jacobians: identities, finite differences, and kernel/twin parity."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nhphys.lie import so3
from nhphys.twins import so3 as twin

VECTOR_FUNCTIONS = [f for f in so3.KERNEL_FUNCTIONS if f not in ("vee", "log", "cay_inv")]
MAPS = {
    "exp": (so3.exp, so3.exp_jac_left, so3.exp_jac_right,
            so3.exp_jac_left_inv, so3.exp_jac_right_inv),
    "cayley": (so3.cay, so3.cay_jac_left, so3.cay_jac_right,
               so3.cay_jac_left_inv, so3.cay_jac_right_inv),
}
SWITCH = twin.SERIES_SWITCH

# Angles that stress the branches: ~0, both sides of the series switch, near pi, generic.
angles = st.one_of(
    st.floats(0.0, 1e-6),
    st.floats(SWITCH * (1 - 1e-6), SWITCH * (1 + 1e-6)),
    st.floats(twin.LOG_SERIES_SWITCH * 0.999, twin.LOG_SERIES_SWITCH * 1.001),
    st.floats(np.pi - 1e-6, np.pi),
    st.floats(0.0, np.pi),
)
directions = st.tuples(*[st.floats(-1, 1)] * 3).filter(lambda v: np.linalg.norm(v) > 1e-3)


def rotation_vectors(n_max=8):
    return st.lists(st.tuples(directions, angles), min_size=1, max_size=n_max).map(
        lambda rows: np.array([np.array(d) / np.linalg.norm(d) * a for d, a in rows])
    )


def rel_close(a, b, rtol=1e-12):
    scale = np.maximum(1.0, np.abs(b))
    return np.all(np.abs(a - b) <= rtol * scale)


@pytest.mark.parity
@settings(max_examples=200, deadline=None)
@given(xi=rotation_vectors())
def test_vector_kernels_match_twins(xi):
    from nhphys_ext import so3 as kernel

    for name in VECTOR_FUNCTIONS:
        a = getattr(kernel, name)(np.ascontiguousarray(xi))
        b = getattr(twin, name)(xi)
        assert rel_close(a, b), name


@pytest.mark.parity
@settings(max_examples=200, deadline=None)
@given(xi=rotation_vectors())
def test_matrix_kernels_match_twins(xi):
    from nhphys_ext import so3 as kernel

    R = twin.exp(xi)
    assert rel_close(kernel.vee(R), twin.vee(R))
    a, b = kernel.log(R), twin.log(R)
    # At an angle of exactly pi, xi and -xi are the same rotation; either is a correct answer.
    flip = np.sum(a * b, axis=-1) < 0
    assert np.all(np.abs(np.linalg.norm(a[flip], axis=-1) - np.pi) < 1e-7)
    a[flip] *= -1
    assert rel_close(a, b)
    ok = np.linalg.norm(xi, axis=-1) < np.pi - 1e-3  # cay_inv is singular at pi
    if ok.any():
        Rc = twin.cay(xi[ok])
        assert rel_close(kernel.cay_inv(Rc), twin.cay_inv(Rc), 1e-11)


def test_hat_is_cross_product(rng, backend):
    w, v = rng.normal(size=(2, 50, 3))
    np.testing.assert_allclose(np.einsum("nij,nj->ni", so3.hat(w, backend), v), np.cross(w, v),
                               rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(so3.vee(so3.hat(w, backend), backend), w)


def test_exp_closed_forms(backend):
    R = so3.exp([0.0, 0.0, np.pi / 2], backend)
    np.testing.assert_allclose(R @ [1.0, 0, 0], [0, 1.0, 0], atol=1e-15)
    np.testing.assert_array_equal(so3.exp(np.zeros(3), backend), np.eye(3))
    # the Cayley map turns by 2 arctan(|xi| / 2)
    R = so3.cay([0.0, 0.0, 2.0], backend)
    angle = np.arctan2(R[1, 0], R[0, 0])
    assert angle == pytest.approx(2 * np.arctan(1.0), rel=1e-15)


@pytest.mark.parametrize("name", ["exp", "cayley"])
def test_maps_are_rotations(rng, backend, name):
    tau = MAPS[name][0]
    xi = rng.normal(size=(200, 3)) * rng.choice([1e-9, 1e-3, 0.5, 2.0, 3.0], size=(200, 1))
    R = tau(xi, backend)
    err = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max()
    assert err < 3e-15  # a few units in the last place
    np.testing.assert_allclose(np.linalg.det(R), 1.0, rtol=3e-15)


def test_log_inverts_exp_up_to_pi(rng, backend):
    directions = rng.normal(size=(400, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    theta = np.concatenate([
        rng.uniform(0, np.pi, 100), rng.uniform(0, 1e-6, 100),
        np.pi - rng.uniform(0, 1e-6, 100), rng.uniform(2.5, np.pi, 100),
    ])
    xi = directions * theta[:, None]
    back = so3.log(so3.exp(xi, backend), backend)
    near_pi = theta > np.pi - 1e-6
    np.testing.assert_allclose(back[~near_pi], xi[~near_pi], rtol=1e-9, atol=1e-15)
    # at the cut locus the sign of the axis is free: compare the rotations instead
    np.testing.assert_allclose(so3.exp(back[near_pi], backend), so3.exp(xi[near_pi], backend),
                               atol=3e-15)
    assert np.all(np.linalg.norm(back, axis=1) <= np.pi + 1e-15)


def test_cay_inv_inverts_cay(rng, backend):
    xi = rng.normal(size=(300, 3)) * rng.choice([1e-9, 0.1, 1.0, 10.0], size=(300, 1))
    np.testing.assert_allclose(so3.cay_inv(so3.cay(xi, backend), backend), xi, rtol=1e-12,
                               atol=1e-15)


def test_cayley_agrees_with_exp_to_second_order(rng, backend):
    d = rng.normal(size=3)
    d /= np.linalg.norm(d)
    err = [np.abs(so3.cay(s * d, backend) - so3.exp(s * d, backend)).max() for s in (1e-1, 5e-2)]
    assert np.log2(err[0] / err[1]) == pytest.approx(3.0, abs=0.05)


@pytest.mark.parametrize("name", ["exp", "cayley"])
def test_jacobians_by_central_differences(rng, backend, name):
    tau, jac_l, jac_r, jac_l_inv, jac_r_inv = MAPS[name]
    eps = 1e-5
    for scale in (1e-7, 0.3, SWITCH, 1.5, 3.0):
        xi = rng.normal(size=3)
        xi *= scale / np.linalg.norm(xi)
        for d in np.eye(3):
            dR = (tau(xi + eps * d, backend) - tau(xi - eps * d, backend)) / (2 * eps)
            R = tau(xi, backend)
            right = so3.vee(R.T @ dR)  # tau(xi + d) = tau(xi) exp(hat(J_r d))
            left = so3.vee(dR @ R.T)  # tau(xi + d) = exp(hat(J_l d)) tau(xi)
            np.testing.assert_allclose(jac_r(xi, backend) @ d, right, atol=1e-9)
            np.testing.assert_allclose(jac_l(xi, backend) @ d, left, atol=1e-9)
        np.testing.assert_allclose(jac_l(xi, backend) @ jac_l_inv(xi, backend), np.eye(3),
                                   atol=1e-13)
        np.testing.assert_allclose(jac_r(xi, backend) @ jac_r_inv(xi, backend), np.eye(3),
                                   atol=1e-13)
        np.testing.assert_allclose(jac_r(xi, backend), jac_l(xi, backend).T, atol=1e-15)
        np.testing.assert_allclose(jac_l(xi, backend), tau(xi, backend) @ jac_r(xi, backend),
                                   atol=1e-14)


def test_coefficients_against_high_precision():
    # Both branches (Taylor below the switch, closed form above) against 40-digit arithmetic,
    # across the switch, near 0 and up to pi.
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    exact = {
        twin.sinc: lambda t: mp.sin(t) / t,
        twin.exp_coeff_a: lambda t: (1 - mp.cos(t)) / t**2,
        twin.exp_coeff_b: lambda t: (t - mp.sin(t)) / t**3,
        twin.exp_coeff_c: lambda t: 1 / t**2 - (1 + mp.cos(t)) / (2 * t * mp.sin(t)),
        twin.exp_coeff_dc: lambda t: mp.diff(
            lambda s: 1 / s**2 - (1 + mp.cos(s)) / (2 * s * mp.sin(s)), t) / t,
    }
    ts = np.concatenate([
        SWITCH * (1 + np.linspace(-1e-3, 1e-3, 7)), [1e-8, 1e-4, 0.1, 0.3, 1.0, 2.0, 3.0],
    ])
    for f, g in exact.items():
        # c'(t)/t enters only Newton Jacobians; its closed form loses ~1e-12 near the switch
        rtol = 2e-12 if f is twin.exp_coeff_dc else 2e-15
        for t in ts:
            want = float(g(mp.mpf(float(t))))
            assert float(f(np.array(t))) == pytest.approx(want, rel=rtol), (f.__name__, t)


def test_leading_axes(rng, backend):
    xi = rng.normal(size=(2, 5, 3))
    R = so3.exp(xi, backend)
    assert R.shape == (2, 5, 3, 3)
    assert so3.log(R, backend).shape == (2, 5, 3)
    assert so3.exp(np.zeros(3), backend).shape == (3, 3)


def test_quaternion_of_a_quarter_turn():
    q = so3.to_quaternion(so3.exp([0.0, 0.0, np.pi / 2]))
    np.testing.assert_allclose(q, [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-15)


def test_bad_input():
    with pytest.raises(ValueError, match=r"`xi` to have shape \(\.\.\., 3\)"):
        so3.exp([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        so3.exp([np.nan, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"`R` to have shape"):
        so3.log(np.eye(2))
    with pytest.raises(TypeError, match="`xi`"):
        so3.exp(["a", "b", "c"])
