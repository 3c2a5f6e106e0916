r"""Python twin of the line friction of ``nhphys_ext.rolling``: the Coulomb force and moment on a
cylinder lying on its side on a plane, sliding, rolling and turning on the line it touches.

The model
---------
A circular cylinder of radius ``R`` and half length ``L`` lies on its side on a plane (unit
normal ``n``): its axis ``u`` is in the plane, its centre ``R`` above it, and it touches the
plane along the line ``a - R n + s u``, ``-L <= s <= L``. With ``w = n x u`` (the direction it
rolls in) and the angular velocity ``Omega = psi' n + phi' u`` (a turn about the normal and a
roll about the axis; a tilt about ``w`` would lift one end), the line's point at ``s`` moves at

    sigma(s) = v + Omega x (-R n + s u) = v_u u + (v_w + R phi' + s psi') w

(``u x n = -w``, ``n x u = w``), ``v = v_u u + v_w w`` the centre's velocity in the plane. The
line rolls without slipping where ``sigma = 0`` on all of it: ``v_u = 0``, ``psi' = 0`` and
``v_w = -R phi'``. Otherwise every element ``ds`` of it feels the Coulomb force
``-mu p sigma / |sigma| ds`` under the uniform pressure ``p = N / (2 L)``. With the slip's
three numbers ``a = v_u``, ``b = v_w + R phi'`` (the midpoint's slip across the axis) and
``c = psi'``, ``x(s) = b + c s`` and ``r(s) = sqrt(a^2 + x^2)``, the totals are

    F_u = -mu p \int a / r ds,     F_w = -mu p \int x / r ds,     M = -mu p \int s x / r ds

over ``[-L, L]``: the force along ``u`` and ``w`` and its moment about ``n`` through the centre
(``(s u) x (f w) = s f n``). They depend on ``(a, b, c)`` only through its direction.

The integrals in closed form
----------------------------
With ``x_1 = b - c L``, ``x_2 = b + c L``, ``r_i = r(x_i)`` and, for ``c != 0``, the
substitution ``ds = dx / c``:

* ``\int x / r ds = (r_2 - r_1) / c = (x_2^2 - x_1^2) / (c (r_1 + r_2)) = 4 b L / (r_1 + r_2)``,
  which holds for ``c = 0`` too and has no cancellation;
* ``\int a / r ds = (a / c) Delta``, ``Delta = asinh(x_2 / |a|) - asinh(x_1 / |a|)``. Where
  ``x_1`` and ``x_2`` have the same sign the two terms cancel; then ``Delta = asinh((x_2^2 -
  x_1^2) / (x_2 r_1 + x_1 r_2)) = asinh(4 b c L / (x_2 r_1 + x_1 r_2))`` (from ``sinh(A - B)
  = sinh A cosh B - cosh A sinh B`` and ``x_2^2 r_1^2 - x_1^2 r_2^2 = a^2 (x_2^2 - x_1^2)``),
  whose denominator adds terms of one sign. With ``a = 0`` the integral is 0;
* by parts (``x / r = (1/c) dr/ds``) and ``\int r dx = (x r + a^2 asinh(x / |a|)) / 2``:
  ``\int s x / r ds = (1/c) [L (r_1 + r_2) - (x_2 r_2 - x_1 r_1 + a^2 Delta) / (2 c)]``.
  This cancels where the line's slip hardly varies along it: its bracket is ``O(c^2)``.

So where ``q = |c| L / sqrt(a^2 + b^2) <= QUADRATURE_LIMIT`` the three integrals are taken by
Gauss-Legendre quadrature on ``LINE_POINTS`` nodes instead: the integrands are analytic in
``s`` with their singularities at ``s = (-b +- i a) / c``, at least ``L / q`` from the line's
middle, so on the Bernstein ellipse through them (``rho >= 4 + sqrt(15)`` at ``q = 1/4``) the
quadrature's error is below ``rho^(-2 LINE_POINTS)``, round-off. Above the limit the closed form
loses at most ``(1/q)^2 = 16`` units of round-off.

Checks: a translation (``c = 0``) gives ``F = -mu N (a, b) / sqrt(a^2 + b^2)``, ``M = 0``; a
pure turn (``a = b = 0``) gives ``F = 0`` and ``M = -mu N L sgn(c) / 2``, the largest moment
the line's friction can have. At rest (``a = b = c = 0``) the direction is not defined: the
caller gives the friction a line at rest starts to slide with.
"""

import numpy as np

LINE_POINTS = 12  # Gauss-Legendre nodes of the quadrature (module docstring)
QUADRATURE_LIMIT = 0.25  # |c| L / |(a, b)| at or below which the quadrature is taken
NODES, WEIGHTS = np.polynomial.legendre.leggauss(LINE_POINTS)


def line_integrals(a, b, c, half_length):
    """``(\\int a / r, \\int x / r, \\int s x / r)`` over ``[-L, L]`` (module docstring), for a
    slip ``(a, b, c)`` that is not zero."""
    L = half_length
    # only the slip's direction matters: scaled to its largest part, nothing over- or
    # underflows (hypot keeps r of a tiny part)
    scale = max(abs(a), abs(b), abs(c) * L)
    a, b, c = a / scale, b / scale, c / scale
    size = np.hypot(a, b)
    if abs(c) * L <= QUADRATURE_LIMIT * size:
        s = L * NODES
        x = b + c * s
        r = np.hypot(a, x)
        wr = L * WEIGHTS / r
        return (float(np.sum(wr * a)), float(np.sum(wr * x)), float(np.sum(wr * (s * x))))
    x1, x2 = b - c * L, b + c * L
    r1, r2 = np.hypot(a, x1), np.hypot(a, x2)
    across = 4.0 * b * L / (r1 + r2)
    if a == 0.0:
        along, a2_delta = 0.0, 0.0
    else:
        if (x1 >= 0.0) == (x2 >= 0.0):  # one sign: the asinh's difference without cancellation
            delta = np.arcsinh(4.0 * b * c * L / (x2 * r1 + x1 * r2))
        else:
            delta = np.arcsinh(x2 / abs(a)) - np.arcsinh(x1 / abs(a))
        along, a2_delta = a * delta / c, a * a * delta
    moment = (L * (r1 + r2) - (x2 * r2 - x1 * r1 + a2_delta) / (2.0 * c)) / c
    return float(along), float(across), float(moment)


def line_friction(a, b, c, half_length, normal_force, mu):
    """The friction on a cylinder's side sliding on a plane (module docstring).

    Parameters
    ----------
    a, b : float
        The slip of the line's midpoint along the axis ``u`` and across it, along ``w``.
    c : float
        The turn about the normal, ``psi'``.
    half_length, normal_force, mu : float

    Returns
    -------
    F_u, F_w : float
        The friction force along ``u`` and ``w``.
    M : float
        Its moment about ``n`` through the centre.

    Raises
    ------
    ValueError
        For a slip that is zero (the caller gives the friction at rest).
    """
    if a == 0.0 and b == 0.0 and c == 0.0:
        raise ValueError("The line's friction has no direction at rest.")
    along, across, moment = line_integrals(a, b, c, half_length)
    scale = -mu * normal_force / (2.0 * half_length)
    return scale * along, scale * across, scale * moment
