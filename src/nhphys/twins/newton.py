r"""Python twin of ``nhphys_ext/newton.pxd``: the one Newton solver of every implicit step and
contact solve, and the one table of step statuses.

The stopping rule
-----------------
A problem has ``n`` unknowns ``x`` and ``n`` equations ``F(x) = 0``. Each caller states the
size of each unknown and of each equation's terms, and the rule compares every component with
its own size (an unknown of order 1e-8 next to one of order 1 is not judged by the larger):

* **correction test**, after each correction ``dx = J^-1 F``: converged when, for every ``i``,
  ``|dx_i| <= correction_tol * (|x_i| + x_floor_i)``. ``x_floor_i`` (given by the caller) is the
  size below which ``x_i`` counts as zero: a step's typical size, so that an unknown passing
  through zero does not demand an impossible relative accuracy. It is never taken below the
  smallest normal double (``SMALLEST_NORMAL``, 2.2e-308): subnormal numbers lose relative
  precision, so a step whose every unknown is subnormal (a velocity decayed to 1e-313) could
  otherwise pass no relative test;
* **residual test**, before each correction (only when ``residual_tol > 0``): converged when,
  for every ``i``, ``|F_i| <= residual_tol * F_scale_i``, where ``F_scale_i`` (returned by the
  residual) is the size of the terms that make up ``F_i``. Set to a few units of round-off, it
  ends the iteration as soon as the equations hold to round-off, without one more Jacobian;
* otherwise, after ``max_iter`` corrections, the solve fails with ``NOT_CONVERGED``.

A singular Newton matrix gives ``SINGULAR_JACOBIAN``, an iterate or residual that is not finite
``NOT_FINITE``; a residual or Jacobian may also return a status of its own (a contact event, a
failed contact solve), which is passed up unchanged. Newton converges quadratically near a
regular root, so the iterate returned by the correction test is accurate far beyond the
correction that stopped it.

The statuses
------------
``STATUS`` is the single table of what a step can report: its code (the kernels' ``Status``
enum in ``newton.pxd`` has the same codes; a test checks it), whether it is a contact event
(the run ends at the event with every frame before it) and the message of a failure.
"""

from dataclasses import dataclass

import numpy as np

SMALLEST_NORMAL = float(np.finfo(float).tiny)  # the least x_floor (the stopping rule)

# name: (code, contact event?, message of the failure)
STATUS = {
    "OK": (0, False, ""),
    "NOT_CONVERGED": (1, False, "the step's Newton solve did not converge (the step may be "
                                "too large)"),
    "SINGULAR_JACOBIAN": (2, False, "the step's Newton matrix is singular"),
    "NOT_FINITE": (3, False, "the step's Newton iterates are not finite (the step may be too "
                             "large)"),
    "FAR_BRANCH": (4, False, "the step turns the body by pi or more (the step is too large)"),
    "CONTACT_FAILED": (5, False, "the contact point could not be found (the body left the "
                                 "ground's chart or the step is too large)"),
    "SINGULAR_CONTACT": (6, False, "the contact is not regular: body and ground curvatures "
                                   "match (Lambda is singular)"),
    "SUPPORT_FAILED": (7, False, "the body's support point could not be found"),
    "FLAT": (8, True, "contact event: flat"),
    "RIM_TO_SIDE": (9, True, "contact event: rim to side"),
    "INNER_CONTACT": (10, True, "contact event: inner contact"),
    "CALLBACK_RAISED": (11, False, "a Python callback raised an exception"),
    "TOO_MANY_EVENTS": (12, False, "more mode changes in one step than a step may hold (a "
                                   "cascade of ever shorter bounces or flights)"),
}
CODES = {name: code for name, (code, _, _) in STATUS.items()}
NAMES = {code: name for name, code in CODES.items()}
EVENTS = frozenset(code for code, event, _ in STATUS.values() if event)

OK = CODES["OK"]
NOT_CONVERGED = CODES["NOT_CONVERGED"]
SINGULAR_JACOBIAN = CODES["SINGULAR_JACOBIAN"]
NOT_FINITE = CODES["NOT_FINITE"]
FAR_BRANCH = CODES["FAR_BRANCH"]
CONTACT_FAILED = CODES["CONTACT_FAILED"]
SINGULAR_CONTACT = CODES["SINGULAR_CONTACT"]
SUPPORT_FAILED = CODES["SUPPORT_FAILED"]
FLAT = CODES["FLAT"]
RIM_TO_SIDE = CODES["RIM_TO_SIDE"]
INNER_CONTACT = CODES["INNER_CONTACT"]
CALLBACK_RAISED = CODES["CALLBACK_RAISED"]
TOO_MANY_EVENTS = CODES["TOO_MANY_EVENTS"]

# The slots of a time loop's ``info`` array (intp, INFO_SIZE long), the same in every kernel
# (the InfoSlot enum of newton.pxd) and every twin:
INFO_STATUS = 0  # the status of the failed step (OK when none failed)
INFO_EVALUATIONS = 1  # residual evaluations of every Newton solve (the loops that count them)
# steps committed to the IN/OUT state in this call, written after a step's commit and its saved
# frame: ``out[:info[INFO_COMMITTED] // save_every]`` are complete frames even when the loop
# was stopped in the middle of a step (Ctrl-C in a twin), and the state arrays hold exactly
# that many steps unless the stop fell inside the commit itself
INFO_COMMITTED = 2
INFO_SIZE = 3


def message(code):
    """The failure message of a status ``code``."""
    return STATUS[NAMES[code]][2]


@dataclass(frozen=True)
class NewtonRule:
    """The stopping rule of one Newton solve (see the module docstring).

    Attributes
    ----------
    correction_tol : float
        Relative size of a last correction that ends the iteration.
    residual_tol : float
        Relative size of residuals that end it without a correction; 0 turns the test off.
    max_iter : int
        Corrections before the solve fails.
    """

    correction_tol: float
    residual_tol: float
    max_iter: int


def newton_solve(residual, jacobian, x, x_floor, rule):
    """Solve ``F(x) = 0`` in place by Newton's method under ``rule``.

    Parameters
    ----------
    residual : callable
        ``residual(x) -> (status, F (n,), F_scale (n,))``; may change ``x`` in place to an
        equivalent point (a change of chart).
    jacobian : callable
        ``jacobian(x) -> (status, J (n, n))`` at the ``x`` of the residual call just made.
    x : ndarray, shape (n,)
        IN first guess, OUT solution.
    x_floor : array_like, shape (n,)
        The size below which each unknown counts as zero.
    rule : NewtonRule

    Returns
    -------
    int
        ``OK`` or the status that ended the solve.
    """
    x_floor = np.maximum(np.asarray(x_floor, dtype=float), SMALLEST_NORMAL)
    for _ in range(rule.max_iter):
        status, F, F_scale = residual(x)
        if status != OK:
            return status
        if rule.residual_tol > 0.0:
            if not np.all(np.isfinite(F)):
                return NOT_FINITE
            if np.all(np.abs(F) <= rule.residual_tol * np.asarray(F_scale)):
                return OK
        status, J = jacobian(x)
        if status != OK:
            return status
        try:
            dx = np.linalg.solve(J, F)
        except np.linalg.LinAlgError:
            return SINGULAR_JACOBIAN
        x -= dx
        if not np.all(np.isfinite(x)):
            return NOT_FINITE
        if np.all(np.abs(dx) <= rule.correction_tol * (np.abs(x) + x_floor)):
            return OK
    return NOT_CONVERGED


# The globalised rule (:func:`newton_solve_damped`): at most this many halvings of a correction,
# and the sufficient decrease asked of the merit (Armijo's constant on ``1/2 |F|^2``)
MAX_HALVINGS = 12
ARMIJO = 1e-4


def _merit(F, weight):
    """``sum (F_i weight_i)^2``: the merit of the globalised rule, or ``inf`` off the finite
    numbers."""
    m = float(np.sum((np.asarray(F) * weight) ** 2))
    return m if np.isfinite(m) else np.inf


def newton_solve_damped(residual, jacobian, x, x_floor, rule):
    """Solve ``F(x) = 0`` in place by Newton's method with step halving (a backtracking line
    search): the globalised form of :func:`newton_solve`, for a start outside Newton's
    region of convergence.

    Each correction ``dx = J^-1 F`` is tried at full length first, then halved (at most
    ``MAX_HALVINGS`` times) until the merit ``m(y) = sum_i (F_i(y) / F_scale_i(x))^2`` (the
    residual scaled by the sizes at the current iterate ``x``, so that both points are judged
    by the same weights; a zero size counts as 1) decreases sufficiently,
    ``m(x - lam dx) <= (1 - 2 ARMIJO lam) m(x)``. A trial point whose residual fails (a
    status, or non-finite numbers) counts as no decrease. The stopping rule is the one of
    :func:`newton_solve`: the residual test before each correction, and the correction test
    after a full-length correction only (a shortened one says nothing about convergence).
    Near a regular root the full correction is always accepted, so the iteration is Newton's
    and converges quadratically to the same root; it differs only far from it. When no halving
    decreases the merit the solve fails with ``NOT_CONVERGED`` (a local minimum of the merit:
    no root nearby). Each trial costs one residual evaluation; the residual of the accepted
    point is the next iteration's, so the Jacobian sees the ``x`` of the residual call just
    made, as in :func:`newton_solve`.

    Parameters and result as for :func:`newton_solve`.
    """
    x_floor = np.maximum(np.asarray(x_floor, dtype=float), SMALLEST_NORMAL)
    status, F, F_scale = residual(x)
    if status != OK:
        return status
    for _ in range(rule.max_iter):
        F = np.asarray(F, dtype=float)
        if not np.all(np.isfinite(F)):
            return NOT_FINITE
        scale = np.asarray(F_scale, dtype=float)
        if rule.residual_tol > 0.0 and np.all(np.abs(F) <= rule.residual_tol * scale):
            return OK
        status, J = jacobian(x)
        if status != OK:
            return status
        try:
            dx = np.linalg.solve(J, F)
        except np.linalg.LinAlgError:
            return SINGULAR_JACOBIAN
        weight = 1.0 / np.where(scale > 0.0, scale, 1.0)
        merit = _merit(F, weight)
        lam = 1.0
        for _halving in range(MAX_HALVINGS + 1):
            y = x - lam * dx
            if np.all(np.isfinite(y)):
                status, F_y, scale_y = residual(y)  # may re-chart y
                if status == OK and _merit(F_y, weight) <= (1.0 - 2.0 * ARMIJO * lam) * merit:
                    break
            lam *= 0.5
        else:
            return NOT_CONVERGED
        full = lam == 1.0
        x[:] = y
        F, F_scale = F_y, scale_y
        if full and np.all(np.abs(dx) <= rule.correction_tol * (np.abs(x) + x_floor)):
            return OK
    return NOT_CONVERGED


def solve_cubic(target, x0, x_floor, correction_tol, residual_tol, max_iter):
    """Solve ``(x0^3 + x1, x1^3 - x0) = target`` with :func:`newton_solve`: the small problem
    on which the kernel's solver is checked against this one.

    Returns ``(status, x (2,), residual evaluations, Jacobian evaluations)``.
    """
    target = np.asarray(target, dtype=float)
    count = [0, 0]

    def residual(x):
        count[0] += 1
        F = np.array([x[0] ** 3 + x[1] - target[0], x[1] ** 3 - x[0] - target[1]])
        scale = np.array([abs(x[0] ** 3) + abs(x[1]) + abs(target[0]),
                          abs(x[1] ** 3) + abs(x[0]) + abs(target[1])])
        return OK, F, scale

    def jacobian(x):
        count[1] += 1
        return OK, np.array([[3 * x[0] ** 2, 1.0], [-1.0, 3 * x[1] ** 2]])

    x = np.array(x0, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is a NOT_FINITE status
        status = newton_solve(residual, jacobian, x, x_floor,
                              NewtonRule(correction_tol, residual_tol, max_iter))
    return status, list(x), count[0], count[1]
