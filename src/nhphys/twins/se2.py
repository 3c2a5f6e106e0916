"""Python twin of ``nhphys_ext.se2``: the specification of the SE(2) kernels.

Every function takes stacked inputs with exactly one leading axis, ``(n, 3)`` algebra elements
``xi = (v_x, v_y, omega)`` or poses ``g = (x, y, theta)``, or ``(n, 3, 3)`` matrices, and returns a
new array. The formulas, conventions and their derivation are in :mod:`nhphys.lie.se2`, the public
API, which also accepts any leading axes. Small angles use the SO(3) coefficients of
:mod:`nhphys.twins.so3` and their series below its ``SERIES_SWITCH``.
"""

import numpy as np

from nhphys.twins import so3

J2 = np.array([[0.0, -1.0], [1.0, 0.0]])


def _sinc(w):
    return so3.sinc(np.abs(w))


def _cosc(w):
    """``(1 - cos w)/w`` (odd in w)."""
    return w * so3.exp_coeff_a(np.abs(w))


def _e(w):
    """``e(w) = (1 - (w/2) cot(w/2))/w = w c(|w|)``."""
    return w * so3.exp_coeff_c(np.abs(w))


def _rotate(M2, v):
    """Apply per-row 2x2 matrices (n, 2, 2) to (n, 2) vectors."""
    return np.einsum("nij,nj->ni", M2, v)


def _planar(c_identity, c_j):
    """Per-row ``c_identity I + c_j J``: (n,), (n,) -> (n, 2, 2)."""
    return c_identity[:, None, None] * np.eye(2) + c_j[:, None, None] * J2


def hat(xi):
    """``[[omega J, v], [0, 0]]``: (n, 3) -> (n, 3, 3)."""
    xi = np.asarray(xi, dtype=float)
    out = np.zeros((len(xi), 3, 3))
    out[:, 0, 1], out[:, 1, 0] = -xi[:, 2], xi[:, 2]
    out[:, :2, 2] = xi[:, :2]
    return out


def vee(m):
    """Inverse of ``hat``: (n, 3, 3) -> (n, 3)."""
    m = np.asarray(m, dtype=float)
    return np.stack([m[:, 0, 2], m[:, 1, 2], 0.5 * (m[:, 1, 0] - m[:, 0, 1])], axis=-1)


def exp(xi):
    """``(V(omega) v, omega)``, ``V = sinc(omega) I + (1 - cos omega)/omega J``: (n, 3) -> (n, 3)."""
    xi = np.asarray(xi, dtype=float)
    w = xi[:, 2]
    p = _rotate(_planar(_sinc(w), _cosc(w)), xi[:, :2])
    return np.column_stack([p, w])


def log(g):
    """Inverse of ``exp`` with the angle wrapped into (-pi, pi]: (n, 3) -> (n, 3)."""
    g = np.asarray(g, dtype=float)
    w = np.arctan2(np.sin(g[:, 2]), np.cos(g[:, 2]))
    v = _rotate(_planar(1.0 - w * _e(w), -0.5 * w), g[:, :2])
    return np.column_stack([v, w])


def cay(xi):
    """``((I - omega J/2)^-1 v, 2 arctan(omega/2))``: (n, 3) -> (n, 3)."""
    xi = np.asarray(xi, dtype=float)
    w = xi[:, 2]
    p = _rotate(_planar(np.ones_like(w), 0.5 * w), xi[:, :2]) / (1.0 + 0.25 * w * w)[:, None]
    return np.column_stack([p, 2.0 * np.arctan(0.5 * w)])


def cay_inv(g):
    """Inverse of ``cay`` (angle in (-pi, pi)): (n, 3) -> (n, 3)."""
    g = np.asarray(g, dtype=float)
    w = 2.0 * np.tan(0.5 * g[:, 2])
    v = _rotate(_planar(np.ones_like(w), -0.5 * w), g[:, :2])
    return np.column_stack([v, w])


def ad(xi):
    """``ad_xi`` in the layout ``(v_x, v_y, omega)``: (n, 3) -> (n, 3, 3)."""
    xi = np.asarray(xi, dtype=float)
    out = np.zeros((len(xi), 3, 3))
    out[:, 0, 1], out[:, 1, 0] = -xi[:, 2], xi[:, 2]
    out[:, 0, 2], out[:, 1, 2] = xi[:, 1], -xi[:, 0]
    return out


def exp_jac_left(xi):
    """``[[V, W (-J v)], [0, 1]]``, ``W = a(w) I + (w - sin w)/w^2 J``: (n, 3) -> (n, 3, 3)."""
    xi = np.asarray(xi, dtype=float)
    w = xi[:, 2]
    out = np.zeros((len(xi), 3, 3))
    out[:, :2, :2] = _planar(_sinc(w), _cosc(w))
    W = _planar(so3.exp_coeff_a(np.abs(w)), w * so3.exp_coeff_b(np.abs(w)))
    out[:, :2, 2] = _rotate(W, -xi[:, :2] @ J2.T)
    out[:, 2, 2] = 1.0
    return out


def exp_jac_left_inv(xi):
    """``I - ad_xi/2 + [[-w e(w) I, e(w) v], [0, 0]]``: (n, 3) -> (n, 3, 3)."""
    xi = np.asarray(xi, dtype=float)
    e = _e(xi[:, 2])
    out = np.eye(3) - 0.5 * ad(xi)
    out[:, :2, :2] -= (xi[:, 2] * e)[:, None, None] * np.eye(2)
    out[:, :2, 2] += e[:, None] * xi[:, :2]
    return out


def exp_jac_right(xi):
    """``J_l(-xi)``: (n, 3) -> (n, 3, 3)."""
    return exp_jac_left(-np.asarray(xi, dtype=float))


def exp_jac_right_inv(xi):
    """``J_l(-xi)^-1``: (n, 3) -> (n, 3, 3)."""
    return exp_jac_left_inv(-np.asarray(xi, dtype=float))


def cay_jac_left_inv(xi):
    """``I - ad_xi/2 - K/4``, ``K = [[0, -w v], [0, -w^2]]``: (n, 3) -> (n, 3, 3)."""
    xi = np.asarray(xi, dtype=float)
    w = xi[:, 2]
    out = np.eye(3) - 0.5 * ad(xi)
    out[:, :2, 2] += 0.25 * w[:, None] * xi[:, :2]
    out[:, 2, 2] += 0.25 * w * w
    return out


def cay_jac_left(xi):
    """Inverse of ``cay_jac_left_inv``: (n, 3) -> (n, 3, 3)."""
    return np.linalg.inv(cay_jac_left_inv(xi))


def cay_jac_right_inv(xi):
    """``J_l(-xi)^-1`` of Cayley: (n, 3) -> (n, 3, 3)."""
    return cay_jac_left_inv(-np.asarray(xi, dtype=float))


def cay_jac_right(xi):
    """``J_l(-xi)`` of Cayley: (n, 3) -> (n, 3, 3)."""
    return cay_jac_left(-np.asarray(xi, dtype=float))
