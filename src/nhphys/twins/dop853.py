r"""DOP853 with a field evaluated in place: the specification of the kernels' shared step loop
(``nhphys_ext/dop853.pxd``), which the compiled fields (``RollingField``, ``SuslovField``,
``CoordinateField``) run over a whole output interval with no Python call per stage.

The algorithm is scipy's ``solve_ivp(method="DOP853")`` step by step (so that it can be checked
against it): stages ``K_s = f(y + h sum_j A_sj K_j)``, ``y_new = y + h sum_j B_j K_j``,
``K_12 = f(y_new)`` (reused as the next step's first stage); the error norm of Hairer's DOP853,
``|h| e5^2 / sqrt((e5^2 + 0.01 e3^2) n)`` with ``e5, e3`` the Euclidean norms of
``sum_j E5_j K_j / sc`` and ``sum_j E3_j K_j / sc``, ``sc = atol + max(|y|, |y_new|) rtol``; a
step is accepted when the norm is below 1, and the next step is ``h min(10, 0.9 norm^(-1/8))``
(not above ``h`` right after a rejection; a rejected step is retried with
``h max(0.2, 0.9 norm^(-1/8))``). The last step is cut to end on ``t1``. ``h_abs = 0`` asks for
scipy's ``select_initial_step`` (one more call).

The projection. With ``project`` given, every accepted ``y_new`` is put back on the manifold
(``project(t_new, y_new)``, in place) before the next step starts from it, so that the orientation is a
rotation and the constraints hold to round-off at every step, not only at the output times. The
next step's first stage stays ``f`` at the unprojected point: the projection moves the state by
no more than its distance to the manifold, which the exact flow keeps invariant, i.e. by the
order of the step's local error ``O(h^9)`` (8th order), so reusing the stage changes that step
by ``h O(h^9)`` and the method keeps its order (Hairer, Lubich & Wanner, Geometric Numerical
Integration, 2nd ed., IV.4, standard projection). The error estimate of the next step then sees
``K_0`` and ``f(y_proj)`` differ by as much, far below the tolerance.
"""

import numpy as np

SOLVER_OK, TOO_MANY_STEPS, STEP_TOO_SMALL = 0, 1, 2  # integrate's solver codes
SOLVER_MESSAGES = {TOO_MANY_STEPS: "more than max_steps steps in the interval",
                   STEP_TOO_SMALL: "the step size became too small"}
DOP_SAFETY, DOP_MIN_FACTOR, DOP_MAX_FACTOR = 0.9, 0.2, 10.0  # scipy's RungeKutta step control
DOP_EXPONENT = -1.0 / 8.0  # -1 / (order of the error estimator + 1), the estimator's order 7


def dop853_table():
    """Dormand and Prince's order-8 pair as in Hairer's DOP853 (Hairer, Norsett & Wanner,
    Solving Ordinary Differential Equations I, 2nd ed., II.10; the coefficients of dop853.f),
    taken from scipy's copy (``scipy.integrate._ivp.dop853_coefficients``): ``A`` (12, 12),
    ``B`` (12,), ``C`` (12,), and the error weights ``E3``, ``E5`` (13,) of the order-3 and
    order-5 embedded estimates (the 13th stage is the derivative at the new point)."""
    from scipy.integrate._ivp import dop853_coefficients as c

    n = c.N_STAGES
    return (np.array(c.A[:n, :n]), np.array(c.B), np.array(c.C[:n]), np.array(c.E3),
            np.array(c.E5))


def integrate(rates, y, t0, t1, rtol, atol, h_abs, max_steps, project=None):
    """Advance ``y`` in place from ``t0`` to ``t1`` by DOP853 (module docstring).

    Parameters
    ----------
    rates : callable
        ``rates(t, state) -> (status, dy/dt)``: status 0, or a field's failure, which ends the
        interval.
    y : ndarray, shape (n,)
        C-contiguous float64 state, advanced in place (left at the last accepted step on a
        failure).
    t0, t1 : float
        ``t1 > t0``.
    rtol, atol : float
    h_abs : float
        The first trial step, or 0.
    max_steps : int
        Accepted steps allowed in the interval.
    project : callable or None
        ``project(t, state) -> status`` puts an accepted state at time ``t`` back on the
        manifold in place (status 0, or a failure that ends the interval); None: no
        projection.

    Returns
    -------
    status : int
        0, or the status of a field call or projection that failed.
    solver_code : int
        ``SOLVER_OK``, ``TOO_MANY_STEPS`` or ``STEP_TOO_SMALL``.
    h_next : float
        The step to start the next interval with: the last accepted step's proposal, or, when
        that step was cut to end on ``t1``, the larger of it and the step it would have taken.
    steps : int
        Accepted steps.
    """
    A, B, C, E3, E5 = dop853_table()
    n_stages, n = len(B), len(y)
    K = np.empty((n_stages + 1, n))
    steps = 0
    status, K[0] = rates(t0, y)
    if status:
        return status, SOLVER_OK, h_abs, steps
    t = t0
    if not h_abs > 0:  # scipy.integrate._ivp.common.select_initial_step, order 7
        scale = atol + np.abs(y) * rtol
        d0 = np.linalg.norm(y / scale) / n ** 0.5
        d1 = np.linalg.norm(K[0] / scale) / n ** 0.5
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h0 = min(h0, abs(t1 - t))
        status, f1 = rates(t + h0, y + h0 * K[0])
        if status:
            return status, SOLVER_OK, h_abs, steps
        d2 = np.linalg.norm((f1 - K[0]) / scale) / n ** 0.5 / h0
        h1 = max(1e-6, h0 * 1e-3) if d1 <= 1e-15 and d2 <= 1e-15 else \
            (0.01 / max(d1, d2)) ** (1 / 8)
        h_abs = min(100 * h0, h1, abs(t1 - t))
    truncated, h_before = False, 0.0
    while t < t1:
        if steps >= max_steps:
            return 0, TOO_MANY_STEPS, h_abs, steps
        min_step = 10 * abs(np.nextafter(t, np.inf) - t)
        h_abs = max(h_abs, min_step)
        rejected = False
        while True:
            if h_abs < min_step:
                return 0, STEP_TOO_SMALL, h_abs, steps
            t_new = t + h_abs
            truncated = t_new > t1
            if truncated:
                h_before, t_new = h_abs, t1
            h = t_new - t
            h_abs = abs(h)
            for s in range(1, n_stages):
                status, K[s] = rates(t + C[s] * h, y + (K[:s].T @ A[s, :s]) * h)
                if status:
                    return status, SOLVER_OK, h_abs, steps
            y_new = y + h * (K[:-1].T @ B)
            status, f_new = rates(t + h, y_new)
            if status:
                return status, SOLVER_OK, h_abs, steps
            K[-1] = f_new
            scale = atol + np.maximum(np.abs(y), np.abs(y_new)) * rtol
            # squared norms as scipy forms them (norm, then squared), so that the twin takes
            # scipy's steps to the last bit
            n5 = np.linalg.norm(K.T @ E5 / scale) ** 2
            n3 = np.linalg.norm(K.T @ E3 / scale) ** 2
            norm = 0.0 if n5 == 0 and n3 == 0 else h_abs * n5 / np.sqrt((n5 + 0.01 * n3) * n)
            if norm < 1:
                factor = DOP_MAX_FACTOR if norm == 0 else min(
                    DOP_MAX_FACTOR, DOP_SAFETY * norm ** DOP_EXPONENT)
                if rejected:
                    factor = min(1.0, factor)
                h_abs *= factor
                break
            h_abs *= max(DOP_MIN_FACTOR, DOP_SAFETY * norm ** DOP_EXPONENT)
            rejected = True
            truncated = False  # a rejected step is retried from the smaller step
        t = t_new
        if project is not None:
            status = project(t, y_new)
            if status:
                return status, SOLVER_OK, h_abs, steps
        y[:] = y_new
        K[0] = f_new
        steps += 1
    return 0, SOLVER_OK, (max(h_abs, h_before) if truncated else h_abs), steps


def check_state(y, n):
    """Refuse a state the loop cannot advance in place: not a C-contiguous writable float64
    array of shape ``(n,)`` (a ``ValueError``, as the kernels raise)."""
    if not (isinstance(y, np.ndarray) and y.dtype == np.float64 and y.shape == (n,)
            and y.flags.c_contiguous and y.flags.writeable):
        raise ValueError(f"Expected a writable C-contiguous float64 state of shape ({n},).")
