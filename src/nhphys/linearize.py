r"""Linearisation of a model's continuous field about a steady motion, with an error estimate.

The Jacobian of a field ``f`` (k,) -> (k,) at ``x0`` is taken by central differences at the steps
``H``, ``H/2`` and ``H/4`` (``H`` relative to the size of each coordinate, at least ``H``
absolute). Each pair ``(D(H), D(H/2))`` of central differences gives a Richardson value
``(4 D(H/2) - D(H)) / 3`` whose error is ``O(H^4)`` (the field is smooth); the two Richardson
values of ``(H, H/2)`` and ``(H/2, H/4)`` differ by about the error of the first, so their
difference is the error estimate of the finer one, which is returned. With ``H = 1e-2`` the
truncation error is about ``H^4 |f^(5)| / 30 ~ 1e-10 |f^(5)|`` and the round-off about
``eps |f| / H ~ 1e-14 |f|``.

The eigenvalues come with the largest distance between the eigenvalues of the two Richardson
Jacobians (each paired with its nearest): a first-order estimate of their error, valid while
the eigenvalues are simple.
"""

import numpy as np


def _richardson(field, x0, step):
    """The Richardson Jacobians of ``(H, H/2)`` and ``(H/2, H/4)``: (coarse, fine)."""
    x0 = np.asarray(x0, dtype=float)
    if x0.ndim != 1 or not np.all(np.isfinite(x0)):
        raise ValueError(f"Expected `x0` to be a finite vector, got {x0!r}.")
    if not (isinstance(step, float) and 0 < step < 1):
        raise ValueError(f"Expected `step` to be a float in (0, 1), got {step!r}.")

    def central(H):
        columns = []
        for i in range(x0.size):
            d = np.zeros_like(x0)
            d[i] = H * max(1.0, abs(x0[i]))
            columns.append((np.asarray(field(x0 + d)) - np.asarray(field(x0 - d))) / (2 * d[i]))
        return np.stack(columns, axis=1)

    D1, D2, D3 = central(step), central(step / 2), central(step / 4)
    return (4 * D2 - D1) / 3, (4 * D3 - D2) / 3


def jacobian(field, x0, step=1e-2):
    """The Jacobian of ``field`` at ``x0`` and an estimate of its error.

    Parameters
    ----------
    field : callable
        ``f(x)`` (k,) -> (m,), smooth near ``x0``.
    x0 : array_like, shape (k,)
    step : float
        ``H``, the largest difference step (relative to ``max(1, |x0_i|)``).

    Returns
    -------
    J : ndarray, shape (m, k)
    error : ndarray, shape (m, k)
        Entry-wise estimate of ``|J - exact|``.
    """
    coarse, fine = _richardson(field, x0, step)
    return fine, np.abs(fine - coarse)


def paired_distance(a, b):
    """The largest distance from an eigenvalue of ``a`` (k,) to its nearest in ``b`` (k,)."""
    a = np.asarray(a)
    b = np.asarray(b)
    return float(max(np.min(np.abs(b - x)) for x in a))


def eigenvalues(field, x0, step=1e-2):
    """The eigenvalues of the Jacobian of ``field`` at ``x0``, sorted by real then imaginary
    part, and an estimate of their error (float; see the module's notes)."""
    coarse, fine = _richardson(field, x0, step)
    lam = np.linalg.eigvals(fine)
    lam = lam[np.lexsort((lam.imag, lam.real))]
    return lam, paired_distance(lam, np.linalg.eigvals(coarse))
