"""Input checks shared by the public API: each names the argument it rejects.

Messages follow one shape: ``Expected `name` to ..., got ...``.
"""

import numbers

import numpy as np


def as_float_array(value, name: str, shape=None) -> np.ndarray:
    """Convert ``value`` to a finite float64 array, checking its trailing ``shape``.

    ``shape`` is a tuple matched against the last axes (``None`` entries match any length).
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"Expected `{name}` to be an array of numbers, got {value!r}.") from exc
    if shape is not None:
        ok = arr.ndim >= len(shape) and all(
            want is None or have == want
            for have, want in zip(arr.shape[arr.ndim - len(shape):], shape)
        )
        if not ok:
            want_txt = "(..., " + ", ".join("n" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"Expected `{name}` to have shape {want_txt}, got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Expected all entries of `{name}` to be finite, got {arr}.")
    return arr


def as_vector3(value, name: str) -> np.ndarray:
    """A finite float64 vector of shape exactly (3,)."""
    arr = as_float_array(value, name)
    if arr.shape != (3,):
        raise ValueError(f"Expected `{name}` to have shape (3,), got {arr.shape}.")
    return arr


def as_positive_scalar(value, name: str) -> float:
    """A finite float > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"Expected `{name}` to be a real number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"Expected `{name}` to be a finite number > 0, got {value}.")
    return value


def as_inertia(value, name: str = "inertia") -> np.ndarray:
    """A symmetric positive-definite 3x3 matrix; a length-3 vector means its diagonal."""
    arr = as_float_array(value, name)
    if arr.shape == (3,):
        arr = np.diag(arr)
    if arr.shape != (3, 3):
        raise ValueError(f"Expected `{name}` to have shape (3, 3) or (3,), got {arr.shape}.")
    asym = np.max(np.abs(arr - arr.T))
    if asym > 1e-12 * max(1.0, np.max(np.abs(arr))):
        raise ValueError(f"Expected `{name}` to be symmetric, got asymmetry {asym:.3g}.")
    eig = np.linalg.eigvalsh(arr)
    if eig[0] <= 0:
        raise ValueError(
            f"Expected `{name}` to be positive definite, got eigenvalues {np.round(eig, 12)}."
        )
    return 0.5 * (arr + arr.T)


def as_rotation(value, name: str, tol: float = 1e-9) -> np.ndarray:
    """A 3x3 rotation matrix (orthogonal to ``tol``, determinant +1)."""
    arr = as_float_array(value, name)
    if arr.shape != (3, 3):
        raise ValueError(f"Expected `{name}` to have shape (3, 3), got {arr.shape}.")
    err = np.max(np.abs(arr.T @ arr - np.eye(3)))
    if err > tol or np.linalg.det(arr) <= 0:
        raise ValueError(
            f"Expected `{name}` to be a rotation matrix, got |R^T R - I| = {err:.3g} "
            f"and det = {np.linalg.det(arr):.6g}."
        )
    return arr


def as_choice(value, name: str, choices) -> str:
    """One of a fixed set of strings."""
    if value not in choices:
        raise ValueError(f"Expected `{name}` to be one of {tuple(choices)}, got {value!r}.")
    return value
