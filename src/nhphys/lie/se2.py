r"""SE(2), the rigid motions of the plane: poses, the Lie algebra, exp, Cayley, Jacobians.

Layout (the same as a planar pose ``(x, y, theta)``)
------------------------------------------------------
* A pose ``g = (x, y, theta)`` is the matrix ``[[R(theta), p], [0, 1]]`` with ``p = (x, y)``;
  it maps body coordinates to the plane's.
* A Lie-algebra element ``xi = (v_x, v_y, omega)`` is ``hat(xi) = [[omega J, v], [0, 0]]`` with
  ``J = [[0, -1], [1, 0]]``. For a moving pose, ``g^-1 dg/dt = hat(xi)``: ``v`` is the velocity
  of the body origin in body axes and ``omega`` the angular velocity (left trivialisation).
* ``ad_xi eta = [xi, eta] = (omega J v' - omega' J v, 0)``, i.e. ``ad_xi = [[omega J, -J v],
  [0, 0]]`` acting on ``eta = (v', omega')``.

Maps ``tau: se(2) -> SE(2)``
----------------------------
* ``exp(xi) = (V(omega) v, omega)``,
  ``V(omega) = sin(omega)/omega I + (1 - cos omega)/omega J``.
* ``cay(xi) = (I - hat(xi)/2)^-1 (I + hat(xi)/2) = ((I - omega J/2)^-1 v, 2 arctan(omega/2))``
  (the same half-argument convention as :mod:`nhphys.lie.so3`).

Jacobians are defined as for SO(3) by ``tau(xi + d) = exp(J_l d) tau(xi) = tau(xi) exp(J_r d)``
to first order in ``d``. Because ``ad_xi`` is block triangular with ``(omega J)^2 = -omega^2 I``,
every power series in ``ad_xi`` sums in closed form. For ``exp``::

    J_l(xi) = [[V(omega), W(omega) (-J v)], [0, 1]],   J_r(xi) = J_l(-xi),
    W(omega) = (1 - cos omega)/omega^2 I + (omega - sin omega)/omega^2 J,

and the inverse (Bernoulli series ``ad/(e^ad - 1) = I - ad/2 + E(ad)`` with ``E`` even)::

    J_l^-1(xi) = I - ad_xi/2 + E,  J_r^-1(xi) = I + ad_xi/2 + E,
    E = [[-omega e(omega) I, e(omega) v], [0, 0]],   e(omega) = (1 - (omega/2) cot(omega/2))/omega,

``e(omega) = omega c(omega)`` with ``c`` the SO(3) coefficient of :mod:`nhphys.twins.so3`
(``c = 1/12 + omega^2/720 + ...``), so the same small-angle series serves both groups. For
Cayley the inverse Jacobians are polynomial: ``J_l^-1 eta = eta - ad_xi eta/2 - K eta/4``,
``J_r^-1 eta = eta + ad_xi eta/2 - K eta/4`` with ``K eta = vee(hat(xi) hat(eta) hat(xi)) =
(-omega omega' v, -omega^2 omega')``.

``hat``, ``vee``, ``exp``, ``log``, ``cay``, ``cay_inv`` and the eight Jacobians accept any
leading axes (``(..., 3)`` elements, ``(..., 3, 3)`` matrices) and a ``backend``; they run the
compiled kernels of ``nhphys_ext.se2`` or their Python twins (:mod:`nhphys.twins.se2`). The
other helpers here take one element (shape (3,)); the integrator kernels
(:mod:`nhphys.twins.se2_retraction`) inline the same formulas.
"""

import numpy as np

from nhphys import _backend
from nhphys._validation import as_float_array
from nhphys.twins import so3 as _so3

J2 = np.array([[0.0, -1.0], [1.0, 0.0]])
SERIES_SWITCH = _so3.SERIES_SWITCH


def _vec3(value, name):
    arr = as_float_array(value, name)
    if arr.shape != (3,):
        raise ValueError(f"Expected `{name}` to have shape (3,), got {arr.shape}.")
    return arr


def rot(theta):
    """Rotation matrix ``R(theta)``, shape (2, 2)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])






def to_matrix(g):
    """Pose ``(x, y, theta)`` -> homogeneous matrix (3, 3)."""
    g = _vec3(g, "g")
    out = np.eye(3)
    out[:2, :2] = rot(g[2])
    out[:2, 2] = g[:2]
    return out


def from_matrix(m):
    """Homogeneous matrix (3, 3) -> pose ``(x, y, theta)``, ``theta`` in (-pi, pi]."""
    m = np.asarray(m, dtype=float)
    return np.array([m[0, 2], m[1, 2], np.arctan2(m[1, 0], m[0, 0])])


def compose(g1, g2):
    """Product ``g1 g2`` of two poses (no wrapping of the angle)."""
    g1, g2 = _vec3(g1, "g1"), _vec3(g2, "g2")
    p = g1[:2] + rot(g1[2]) @ g2[:2]
    return np.array([p[0], p[1], g1[2] + g2[2]])


def inverse(g):
    """Inverse pose ``g^-1``."""
    g = _vec3(g, "g")
    p = -rot(g[2]).T @ g[:2]
    return np.array([p[0], p[1], -g[2]])


def ad(xi):
    """Matrix of ``ad_xi`` (3, 3) in the layout ``(v_x, v_y, omega)``."""
    xi = _vec3(xi, "xi")
    w = xi[2]
    return np.array([[0.0, -w, xi[1]], [w, 0.0, -xi[0]], [0.0, 0.0, 0.0]])


def Ad(g):
    """Matrix of ``Ad_g`` (3, 3): ``hat(Ad_g xi) = g hat(xi) g^-1``."""
    g = _vec3(g, "g")
    out = np.zeros((3, 3))
    out[:2, :2] = rot(g[2])
    out[:2, 2] = -J2 @ g[:2]
    out[2, 2] = 1.0
    return out


def _sinc(w):
    return _so3.sinc(np.abs(np.asarray(w, dtype=float)))


def _cosc(w):
    """``(1 - cos w)/w`` (odd), from ``a(w) = (1 - cos w)/w^2``."""
    return w * _so3.exp_coeff_a(np.abs(np.asarray(w, dtype=float)))


def e_coeff(w):
    """``e(w) = (1 - (w/2) cot(w/2))/w = w c(|w|)`` (series below the SO(3) switch)."""
    w = np.asarray(w, dtype=float)
    return w * _so3.exp_coeff_c(np.abs(w))


def e_coeff_derivative(w):
    """``e'(w) = c(|w|) + w^2 c'(|w|)/|w|``."""
    w = np.asarray(w, dtype=float)
    t = np.abs(w)
    return _so3.exp_coeff_c(t) + w * w * _so3.exp_coeff_dc(t)


def _apply(name, x, in_shape, arg, backend):
    arr = as_float_array(x, arg, in_shape)
    lead = arr.shape[: arr.ndim - len(in_shape)]
    flat = np.ascontiguousarray(arr.reshape((-1,) + in_shape))
    out = getattr(_backend.implementation("se2", backend), name)(flat)
    return np.asarray(out).reshape(lead + out.shape[1:])


def _element_function(name, arg, doc):
    def f(x, backend="auto"):
        return _apply(name, x, (3,), arg, backend)

    f.__name__ = name
    f.__doc__ = doc
    return f


hat = _element_function("hat", "xi", "``(v_x, v_y, omega)`` -> ``[[omega J, v], [0, 0]]``: "
                        "(..., 3) -> (..., 3, 3).")
exp = _element_function("exp", "xi", "Group exponential ``(V(omega) v, omega)``: "
                        "(..., 3) -> poses (..., 3).")
log = _element_function("log", "g", "Inverse of :func:`exp`, the angle wrapped into "
                        "(-pi, pi]: (..., 3) -> (..., 3).")
cay = _element_function("cay", "xi", "Cayley map ``((I - omega J/2)^-1 v, 2 arctan(omega/2))``: "
                        "(..., 3) -> poses (..., 3).")
cay_inv = _element_function("cay_inv", "g", "Inverse of :func:`cay` (angle in (-pi, pi)): "
                            "(..., 3) -> (..., 3).")
exp_jac_left = _element_function("exp_jac_left", "xi", "``J_l(xi)`` of exp: (..., 3) -> "
                                 "(..., 3, 3).")
exp_jac_right = _element_function("exp_jac_right", "xi", "``J_r(xi) = J_l(-xi)`` of exp: "
                                  "(..., 3) -> (..., 3, 3).")
exp_jac_left_inv = _element_function("exp_jac_left_inv", "xi", "``J_l(xi)^-1 = I - ad_xi/2 + E`` "
                                     "of exp: (..., 3) -> (..., 3, 3).")
exp_jac_right_inv = _element_function("exp_jac_right_inv", "xi", "``J_r(xi)^-1`` of exp: "
                                      "(..., 3) -> (..., 3, 3).")
cay_jac_left = _element_function("cay_jac_left", "xi", "``J_l(xi)`` of Cayley: (..., 3) -> "
                                 "(..., 3, 3).")
cay_jac_right = _element_function("cay_jac_right", "xi", "``J_r(xi)`` of Cayley: (..., 3) -> "
                                  "(..., 3, 3).")
cay_jac_left_inv = _element_function("cay_jac_left_inv", "xi", "``J_l(xi)^-1 = I - ad_xi/2 - "
                                     "K/4`` of Cayley: (..., 3) -> (..., 3, 3).")
cay_jac_right_inv = _element_function("cay_jac_right_inv", "xi", "``J_r(xi)^-1 = I + ad_xi/2 - "
                                      "K/4`` of Cayley: (..., 3) -> (..., 3, 3).")


def vee(m, backend="auto"):
    """Inverse of :func:`hat` on its skew and translation parts: (..., 3, 3) -> (..., 3)."""
    return _apply("vee", m, (3, 3), "m", backend)


KERNEL_FUNCTIONS = (
    "hat", "vee", "exp", "log", "cay", "cay_inv",
    "exp_jac_left", "exp_jac_left_inv", "exp_jac_right", "exp_jac_right_inv",
    "cay_jac_left", "cay_jac_left_inv", "cay_jac_right", "cay_jac_right_inv",
)
