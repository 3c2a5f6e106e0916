"""Symmetric composition tables: sub-step fractions that raise a symmetric step's order.

If ``Phi_h`` is a symmetric (``Phi_h^-1 = Phi_-h``) one-step method of order 2, the composition
``Phi_{g_s h} o ... o Phi_{g_1 h}`` with palindromic fractions (``g_i = g_{s+1-i}``) is again
symmetric, so its order is even; the fractions below make it 4, 6 or 8. They sum to 1 and some
are negative (a step of order above 2 built this way must go backwards somewhere: Sheng 1989,
Suzuki 1991). Every sub-step is a full step of the underlying method, so whatever it keeps
exactly (a constraint, an orthogonal rotation) the composition keeps at every sub-step.

Tables (``COMPOSITIONS[order]``, each a tuple of ``s`` floats, the fractions in the order they
are taken):

* order 4, ``s = 3``: the triple jump ``g1 = g3 = 1/(2 - 2^(1/3))``, ``g2 = 1 - 2 g1``
  (Creutz & Gocksch 1989; Suzuki 1990; Yoshida 1990, Phys. Lett. A 150, 262-268).
* order 6, ``s = 9``: ``s9odr6a`` of W. Kahan and R.-C. Li, "Composition constants for
  raising the orders of unconventional schemes for ordinary differential equations",
  Math. Comp. 66 (1997) 1089-1099, chosen there to make the leading error term small; also
  printed in E. Hairer, C. Lubich and G. Wanner, *Geometric Numerical Integration*, 2nd ed.
  (Springer 2006), Sec. V.3.2. (Yoshida's 7-stage order-6 method has larger fractions, up to
  1.3 in size.)
* order 8, ``s = 17``: ``s17odr8a`` of Kahan and Li (1997), ibid.; also in Hairer, Lubich and
  Wanner, Sec. V.3.2. (Alternatives: McLachlan's 15-stage method, SIAM J. Sci. Comput. 16
  (1995) 151-168, and Yoshida's 15-stage ones.)

The published constants have 26 digits; they are written here as published (decimal strings of
the first half of each palindrome) and rounded to float64 on import. At 26 digits they satisfy
``sum g = 1`` and ``sum g^3 = sum g^5 (= sum g^7) = 0`` to 1e-26. The tests check the sum and
the symmetry, the order conditions through the order of the composition of a symmetric
second-order map measured in 30-digit arithmetic, and the order on nhphys's own systems
(tests/test_compositions.py): a wrong digit shows there as order 2 or 4.

Unlike the triple jump's (which reach -0.35 and 1.35 of the step), the sub-steps of both
Kahan-Li tables stay inside the step: the partial sums of ``g`` lie in (0, 1], so every time
a sub-step reaches is in ``[t_k, t_k+1]``. A sliding contact needs that (a slip starting or
stopping at a step's end must keep its sense at every sub-step), so it takes
:data:`INSIDE_ORDER4`, Suzuki's five-stage table of order 4 whose sub-steps stay inside too,
in place of the triple jump (:data:`SLIDING_COMPOSITIONS`).
"""

# The first half (through the middle fraction) of each palindromic table, as published.
_KAHAN_LI_S9_ORDER6 = (
    "0.39216144400731413927925056",
    "0.33259913678935943859974864",
    "-0.70624617255763935980996482",
    "0.08221359629355080023149045",
    "0.79854399093482996339895035",  # the middle fraction
)
_KAHAN_LI_S17_ORDER8 = (
    "0.13020248308889008087881763",
    "0.56116298177510838456196441",
    "-0.38947496264484728640807860",
    "0.15884190655515560089621075",
    "-0.39590389413323757733623154",
    "0.18453964097831570709183254",
    "0.25837438768632204729397911",
    "0.29501172360931029887096624",
    "-0.60550853383003451169892108",  # the middle fraction
)


def _palindrome(half):
    """The full table from its first half (decimal strings, middle one last), as floats."""
    values = [float(v) for v in half]  # correctly rounded from the 26 published digits
    return tuple(values + values[-2::-1])


def _triple_jump():
    g1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
    return (g1, 1.0 - 2.0 * g1, g1)


COMPOSITIONS = {
    2: (1.0,),
    4: _triple_jump(),
    6: _palindrome(_KAHAN_LI_S9_ORDER6),
    8: _palindrome(_KAHAN_LI_S17_ORDER8),
}
"""order -> the sub-step fractions of one step (palindromic, summing to 1)."""

ORDERS = tuple(COMPOSITIONS)
"""The orders a symmetric second-order step can be composed to: (2, 4, 6, 8)."""

SOURCES = {
    2: "the symmetric step itself",
    4: "triple jump (Yoshida 1990, Phys. Lett. A 150)",
    6: "Kahan & Li 1997 s9odr6a (Math. Comp. 66)",
    8: "Kahan & Li 1997 s17odr8a (Math. Comp. 66)",
}
"""order -> where its table comes from (one line, for messages and docs)."""


def _suzuki_five():
    p = 1.0 / (4.0 - 4.0 ** (1.0 / 3.0))
    return (p, p, 1.0 - 4.0 * p, p, p)


INSIDE_ORDER4 = _suzuki_five()
"""Suzuki's five-stage composition of order 4, ``(p, p, 1 - 4p, p, p)`` with
``p = 1 / (4 - 4^(1/3))`` (M. Suzuki, "Fractal decomposition of exponential operators with
applications to many-body theories and Monte Carlo simulations", Phys. Lett. A 146 (1990)
319-323; also Hairer, Lubich and Wanner, Sec. II.4). ``4 p + (1 - 4p) = 1`` and
``4 p^3 + (1 - 4p)^3 = 0`` make it order 4; its partial sums ``p, 2p, 1 - 2p, 1 - p, 1``
(0.41, 0.83, 0.17, 0.59, 1) lie inside the step, unlike the triple jump's."""


def stays_inside(fractions):
    """Whether every partial sum of ``fractions`` lies in ``(0, 1]`` (to 1e-12): every time the
    composed step reaches is inside the step."""
    total = 0.0
    for fraction in fractions:
        total += fraction
        if not 0.0 < total <= 1.0 + 1e-12:
            return False
    return True


SLIDING_COMPOSITIONS = {
    2: COMPOSITIONS[2],
    4: INSIDE_ORDER4,
    6: COMPOSITIONS[6],
    8: COMPOSITIONS[8],
}
"""order -> the sub-step fractions a sliding contact takes (:mod:`nhphys.twins.modes`, "The
sliding step"): every table's sub-steps stay inside the step (:func:`stays_inside`), so the
triple jump of order 4 is replaced by :data:`INSIDE_ORDER4`."""


def composition(order):
    """The sub-step fractions of the symmetric composition of order ``order``.

    Parameters
    ----------
    order : {2, 4, 6, 8}

    Returns
    -------
    tuple of float, shape (s,)
        ``s = 1, 3, 9, 17`` fractions of the step, palindromic, summing to 1 (to round-off).

    Raises
    ------
    ValueError
        Any other order; the message lists the available ones.
    """
    try:
        return COMPOSITIONS[order]
    except (KeyError, TypeError):
        raise ValueError(
            f"Expected `order` to be one of {', '.join(map(str, ORDERS))}, got {order!r}."
        ) from None
