"""Python twin of ``nhphys_ext.so3``: the specification of the SO(3) kernels.

Every function takes stacked inputs with exactly one leading axis, ``(n, 3)`` vectors or
``(n, 3, 3)`` matrices (float64), and returns a new array. The public, validated and
leading-axis-agnostic API is :mod:`nhphys.lie.so3`; these functions assume valid input.

Conventions (shared by every module of nhphys)
----------------------------------------------
* ``hat(w) @ v == cross(w, v)``.
* Left and right Jacobians of a map ``tau: so(3) -> SO(3)`` (``tau`` = ``exp`` or ``cay``) are
  defined by first-order perturbation::

      tau(xi + d) = exp(hat(J_l(xi) d)) tau(xi) = tau(xi) exp(hat(J_r(xi) d)) + O(|d|^2)

  For both maps ``J_r(xi) = J_l(-xi) = J_l(xi)^T`` and ``J_l(xi) = tau(xi) J_r(xi)``.
* ``exp``:  ``J_l = I + a(t) hat(xi) + b(t) hat(xi)^2`` with ``a = (1 - cos t)/t^2``,
  ``b = (t - sin t)/t^3``, ``t = |xi|``; ``J_l^-1 = I - hat(xi)/2 + c(t) hat(xi)^2`` with
  ``c = 1/t^2 - (1 + cos t)/(2 t sin t)``.
* ``cay(xi) = (I - hat(xi)/2)^-1 (I + hat(xi)/2) = I + 4/(4 + t^2) (hat(xi) + hat(xi)^2/2)``.
  It agrees with ``exp`` to second order (``cay(xi) = exp(xi) + O(t^3)``) and rotates by the angle
  ``2 arctan(t/2)``. Its Jacobians: ``J_l = 4/(4 + t^2) (I + hat(xi)/2)`` and
  ``J_l^-1 = I - hat(xi)/2 + xi xi^T/4``.
  (Some texts write ``(I - hat(xi))^-1 (I + hat(xi))``, which is ``cay(2 xi)`` here.)

Small angles
------------
Below ``SERIES_SWITCH`` (in ``t = |xi|``) the coefficients ``sin t/t``, ``a``, ``b``, ``c`` and
``c'(t)/t`` are evaluated from their Taylor series (terms up to ``t^14``, truncation error below
1e-19 relative at the switch); above it from the closed forms, whose cancellation error there is
at most ~1e-14 relative for ``a, b, c`` and ~1e-12 for ``c'(t)/t`` (used only in Newton
Jacobians). ``log`` uses ``theta/sin(theta)`` from its series below ``LOG_SERIES_SWITCH`` and
reads the axis from the symmetric part of ``R`` when ``cos(theta) < 0`` (angles near pi).
"""

import numpy as np

SERIES_SWITCH = 0.5
LOG_SERIES_SWITCH = 1e-3
POLAR_MAX_ITER = 50  # Newton iterations of the polar factor; 2-3 from near SO(3)
POLAR_TOL = 2 * np.finfo(float).eps  # the last correction at round-off ends it

# Taylor coefficients in t^2 (constant term first).
_SINC = (1.0, -1 / 6, 1 / 120, -1 / 5040, 1 / 362880, -1 / 39916800, 1 / 6227020800,
         -1 / 1307674368000)
_A = (1 / 2, -1 / 24, 1 / 720, -1 / 40320, 1 / 3628800, -1 / 479001600, 1 / 87178291200,
      -1 / 20922789888000)
_B = (1 / 6, -1 / 120, 1 / 5040, -1 / 362880, 1 / 39916800, -1 / 6227020800,
      1 / 1307674368000, -1 / 355687428096000)
_C = (1 / 12, 1 / 720, 1 / 30240, 1 / 1209600, 1 / 47900160, 691 / 1307674368000,
      1 / 74724249600, 3617 / 10670622842880000)
_DC = (1 / 360, 1 / 7560, 1 / 201600, 1 / 5987520, 691 / 130767436800, 1 / 6227020800,
       3617 / 762187345920000, 43867 / 319318388573184000)


def _series(coeffs, t2):
    """Evaluate sum_k coeffs[k] t2^k by Horner's rule."""
    out = np.zeros_like(t2)
    for c in reversed(coeffs):
        out = out * t2 + c
    return out


def _branch(t, small, large):
    """``small(t)`` below SERIES_SWITCH, ``large(t)`` above, without evaluating 0/0."""
    is_small = t < SERIES_SWITCH
    t_large = np.where(is_small, 1.0, t)  # any safe value where the series is used
    return np.where(is_small, small(t), large(t_large))


def sinc(t):
    """``sin(t)/t``; shape of ``t``."""
    return _branch(t, lambda s: _series(_SINC, s * s), lambda s: np.sin(s) / s)


def exp_coeff_a(t):
    """``(1 - cos t)/t^2``; shape of ``t``."""
    return _branch(t, lambda s: _series(_A, s * s), lambda s: 2 * np.sin(s / 2) ** 2 / s**2)


def exp_coeff_b(t):
    """``(t - sin t)/t^3``; shape of ``t``."""
    return _branch(t, lambda s: _series(_B, s * s), lambda s: (s - np.sin(s)) / s**3)


def exp_coeff_c(t):
    """``1/t^2 - (1 + cos t)/(2 t sin t)``, the coefficient of ``J_l^-1``; shape of ``t``."""
    return _branch(
        t, lambda s: _series(_C, s * s), lambda s: 1 / s**2 - 1 / (2 * s * np.tan(s / 2))
    )


def exp_coeff_dc(t):
    """``c'(t)/t``, used by Newton Jacobians; shape of ``t``."""

    def closed(s):
        half = s / 2
        return -2 / s**4 + 1 / (2 * s**3 * np.tan(half)) + 1 / (4 * s**2 * np.sin(half) ** 2)

    return _branch(t, lambda s: _series(_DC, s * s), closed)


def hat(v):
    """Skew matrices ``hat(v) @ w == cross(v, w)``: (n, 3) -> (n, 3, 3)."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def rotation_about(axis, angle):
    """The rotation (3, 3) by ``angle`` about the unit ``axis`` (3,) (Rodrigues' formula)."""
    K = hat(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def vee(m):
    """Inverse of ``hat`` on the skew part of ``m``: (n, 3, 3) -> (n, 3)."""
    m = np.asarray(m, dtype=float)
    return 0.5 * np.stack(
        [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]],
        axis=-1,
    )


def _poly(xi, c1, c2):
    """``I + c1 hat(xi) + c2 hat(xi)^2`` for per-row scalars c1, c2: -> (n, 3, 3)."""
    k = hat(xi)
    return np.eye(3) + c1[..., None, None] * k + c2[..., None, None] * (k @ k)


def exp(xi):
    """Rodrigues' formula ``I + sinc(t) hat(xi) + a(t) hat(xi)^2``: (n, 3) -> (n, 3, 3)."""
    t = np.linalg.norm(xi, axis=-1)
    return _poly(xi, sinc(t), exp_coeff_a(t))


def log(R):
    """Rotation vector of ``R`` with angle in [0, pi]: (n, 3, 3) -> (n, 3)."""
    R = np.asarray(R, dtype=float)
    v = vee(R)  # sin(theta) * axis
    cos_t = (np.trace(R, axis1=-2, axis2=-1) - 1) / 2
    sin_t = np.linalg.norm(v, axis=-1)
    theta = np.arctan2(sin_t, cos_t)
    safe = np.where(theta < LOG_SERIES_SWITCH, 1.0, sin_t)
    ratio = np.where(
        theta < LOG_SERIES_SWITCH, 1 + theta**2 / 6 + 7 * theta**4 / 360, theta / safe
    )
    out = ratio[..., None] * v

    # Near pi, sin(theta) is small and v loses the axis: read it from the symmetric part,
    # S = (R + R^T)/2 - cos(theta) I = (1 - cos(theta)) n n^T.
    for i in np.flatnonzero(cos_t < 0):
        S = 0.5 * (R[i] + R[i].T) - cos_t[i] * np.eye(3)
        j = int(np.argmax(np.diag(S)))
        n = S[:, j] / np.sqrt(S[j, j] * (1 - cos_t[i]))
        if n @ v[i] < 0:
            n = -n
        out[i] = theta[i] * n
    return out


def cay(xi):
    """Cayley map ``(I - hat(xi)/2)^-1 (I + hat(xi)/2)``: (n, 3) -> (n, 3, 3)."""
    f = 4 / (4 + np.sum(xi * xi, axis=-1))
    return _poly(xi, f, f / 2)


def cay_inv(R):
    """Inverse Cayley map ``2 vee(R - R^T)/(1 + tr R)`` (angle < pi): (n, 3, 3) -> (n, 3)."""
    R = np.asarray(R, dtype=float)
    return 4 * vee(R) / (1 + np.trace(R, axis1=-2, axis2=-1))[..., None]


def exp_jac_left(xi):
    """Left Jacobian of ``exp``: (n, 3) -> (n, 3, 3)."""
    t = np.linalg.norm(xi, axis=-1)
    return _poly(xi, exp_coeff_a(t), exp_coeff_b(t))


def exp_jac_left_inv(xi):
    """Inverse left Jacobian of ``exp``: (n, 3) -> (n, 3, 3)."""
    t = np.linalg.norm(xi, axis=-1)
    return _poly(xi, np.full_like(t, -0.5), exp_coeff_c(t))


def exp_jac_right(xi):
    """Right Jacobian of ``exp``, ``J_l(-xi)``: (n, 3) -> (n, 3, 3)."""
    return exp_jac_left(-np.asarray(xi, dtype=float))


def exp_jac_right_inv(xi):
    """Inverse right Jacobian of ``exp``: (n, 3) -> (n, 3, 3)."""
    return exp_jac_left_inv(-np.asarray(xi, dtype=float))


def cay_jac_left(xi):
    """Left Jacobian of ``cay``, ``4/(4 + t^2) (I + hat(xi)/2)``: (n, 3) -> (n, 3, 3)."""
    f = 4 / (4 + np.sum(xi * xi, axis=-1))
    return f[..., None, None] * (np.eye(3) + 0.5 * hat(xi))


def cay_jac_left_inv(xi):
    """Inverse left Jacobian of ``cay``, ``I - hat(xi)/2 + xi xi^T/4``: (n, 3) -> (n, 3, 3)."""
    xi = np.asarray(xi, dtype=float)
    return np.eye(3) - 0.5 * hat(xi) + 0.25 * xi[..., :, None] * xi[..., None, :]


def cay_jac_right(xi):
    """Right Jacobian of ``cay``, ``J_l(-xi)``: (n, 3) -> (n, 3, 3)."""
    return cay_jac_left(-np.asarray(xi, dtype=float))


def cay_jac_right_inv(xi):
    """Inverse right Jacobian of ``cay``: (n, 3) -> (n, 3, 3)."""
    return cay_jac_left_inv(-np.asarray(xi, dtype=float))


def polar_factor(X):
    """The orthogonal polar factor ``U`` of ``X = U P`` (3, 3): the closest rotation to a
    matrix near SO(3) in the Frobenius norm, by Newton's iteration ``X <- (X + X^-T) / 2``
    (Higham, Functions of Matrices, 8.3: quadratic, two or three iterations near SO(3); more
    accurate than ``W V^T`` of an SVD when the singular values cluster, as they do near SO(3)).
    The kernel forms ``X^-T`` from the cross products of the rows over the determinant."""
    X = np.array(X, dtype=float)
    for _ in range(POLAR_MAX_ITER):
        X_next = 0.5 * (X + np.linalg.inv(X).T)
        change = np.abs(X_next - X).max()
        X = X_next
        if change <= POLAR_TOL:
            break
    return X
