"""The rotation group SO(3): hat/vee, exponential and Cayley maps, their inverses and Jacobians.

Every function accepts any number of leading axes (``xi`` of shape ``(..., 3)``, ``R`` of shape
``(..., 3, 3)``) and a ``backend`` (``"auto"``, ``"cython"`` or ``"python"``). The formulas,
conventions and small-angle branches are documented in :mod:`nhphys.twins.so3`, the Python
specification of the kernels in ``nhphys_ext.so3``. In short:

* ``hat(w) @ v == cross(w, v)``;
* ``tau(xi + d) = exp(hat(J_l(xi) d)) tau(xi) = tau(xi) exp(hat(J_r(xi) d)) + O(|d|^2)``
  for ``tau`` in ``{exp, cay}``, with ``J_r(xi) = J_l(-xi) = J_l(xi)^T``;
* ``cay(xi) = (I - hat(xi)/2)^-1 (I + hat(xi)/2)``.

Examples
--------
>>> import numpy as np
>>> from nhphys.lie import so3
>>> R = so3.exp([0.0, 0.0, np.pi / 2])
>>> np.allclose(R @ [1, 0, 0], [0, 1, 0])
True
"""

import numpy as np

from nhphys import _backend
from nhphys._validation import as_float_array


def _apply(name, x, in_shape, backend):
    arr = as_float_array(x, "xi" if in_shape == (3,) else "R", in_shape)
    lead = arr.shape[: arr.ndim - len(in_shape)]
    flat = np.ascontiguousarray(arr.reshape((-1,) + in_shape))
    out = getattr(_backend.implementation("so3", backend), name)(flat)
    return np.asarray(out).reshape(lead + out.shape[1:])


def _vector_function(name, doc):
    def f(xi, backend="auto"):
        return _apply(name, xi, (3,), backend)

    f.__name__ = name
    f.__doc__ = doc
    return f


def _matrix_function(name, doc):
    def f(R, backend="auto"):
        return _apply(name, R, (3, 3), backend)

    f.__name__ = name
    f.__doc__ = doc
    return f


hat = _vector_function("hat", "Skew matrix of ``w``: (..., 3) -> (..., 3, 3).")
vee = _matrix_function("vee", "Vector of the skew part of ``M``: (..., 3, 3) -> (..., 3).")
exp = _vector_function("exp", "Exponential map (Rodrigues): (..., 3) -> (..., 3, 3).")
log = _matrix_function("log", "Rotation vector, angle in [0, pi]: (..., 3, 3) -> (..., 3).")
cay = _vector_function(
    "cay", "Cayley map ``(I - hat/2)^-1 (I + hat/2)``: (..., 3) -> (..., 3, 3)."
)
cay_inv = _matrix_function(
    "cay_inv", "Inverse Cayley map (rotation angle < pi): (..., 3, 3) -> (..., 3)."
)
exp_jac_left = _vector_function("exp_jac_left", "Left Jacobian of exp: (..., 3) -> (..., 3, 3).")
exp_jac_left_inv = _vector_function(
    "exp_jac_left_inv", "Inverse left Jacobian of exp: (..., 3) -> (..., 3, 3)."
)
exp_jac_right = _vector_function(
    "exp_jac_right", "Right Jacobian of exp: (..., 3) -> (..., 3, 3)."
)
exp_jac_right_inv = _vector_function(
    "exp_jac_right_inv", "Inverse right Jacobian of exp: (..., 3) -> (..., 3, 3)."
)
cay_jac_left = _vector_function(
    "cay_jac_left", "Left Jacobian of cay: (..., 3) -> (..., 3, 3)."
)
cay_jac_left_inv = _vector_function(
    "cay_jac_left_inv", "Inverse left Jacobian of cay: (..., 3) -> (..., 3, 3)."
)
cay_jac_right = _vector_function(
    "cay_jac_right", "Right Jacobian of cay: (..., 3) -> (..., 3, 3)."
)
cay_jac_right_inv = _vector_function(
    "cay_jac_right_inv", "Inverse right Jacobian of cay: (..., 3) -> (..., 3, 3)."
)

KERNEL_FUNCTIONS = (
    "hat", "vee", "exp", "log", "cay", "cay_inv",
    "exp_jac_left", "exp_jac_left_inv", "exp_jac_right", "exp_jac_right_inv",
    "cay_jac_left", "cay_jac_left_inv", "cay_jac_right", "cay_jac_right_inv",
)


def to_quaternion(R) -> np.ndarray:
    """Unit quaternions ``(w, x, y, z)`` with ``w >= 0``: (..., 3, 3) -> (..., 4)."""
    xi = log(R)
    angle = np.linalg.norm(xi, axis=-1, keepdims=True)
    axis = np.divide(xi, angle, out=np.zeros_like(xi), where=angle > 0)
    return np.concatenate([np.cos(angle / 2), np.sin(angle / 2) * axis], axis=-1)
