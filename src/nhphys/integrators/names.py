"""Integrators by name: what ``integrator="cayley"`` means wherever an integrator is accepted.

:func:`nhphys.simulate`, :meth:`nhphys.Scene.simulate`, :meth:`nhphys.Scene.add_body`, scene
files' ``defaults`` and the ``nhphys --integrator`` option all read names through
:func:`integrator_from_name`, so they accept the same names with the same meaning.

>>> from nhphys.integrators import integrator_from_name
>>> integrator_from_name("cayley")
Retraction(map='cayley', newton_tol=1e-12, max_newton=30, order=2)
>>> integrator_from_name("exp8")
Retraction(map='exp', newton_tol=1e-12, max_newton=30, order=8)
"""

from nhphys.integrators.adaptive import Adaptive
from nhphys.integrators.coefficients import ORDERS, SOURCES
from nhphys.integrators.dla import DLA
from nhphys.integrators.newmark import Newmark
from nhphys.integrators.reference import Reference
from nhphys.integrators.retraction import Retraction

# name -> (factory, one line for messages and docs); each name makes the default options
INTEGRATORS = {
    "exp": (lambda: Retraction("exp"), "Retraction('exp'): exponential retraction, order 2"),
    "cayley": (lambda: Retraction("cayley"), "Retraction('cayley'): Cayley retraction, order 2"),
    "newmark": (lambda: Newmark(), "Newmark(0, 0, 1/2): nonholonomic Newmark, order 2"),
    "dla": (lambda: DLA(), "DLA('midpoint'): discrete Lagrange-d'Alembert, order 2"),
    "reference": (lambda: Reference(), "Reference(): scipy DOP853, rtol 1e-11 (cross-checks)"),
    "dop853": (lambda: Adaptive(), "Adaptive(1e-10, 1e-12): DOP853 on the compiled right-hand "
                                   "side, projected after every accepted step"),
    "dop853-energy": (lambda: Adaptive(conserve_energy=True),
                      "Adaptive(1e-10, 1e-12, conserve_energy=True): the same, holding the "
                      "energy (less the work) to round-off"),
}
# the symmetric compositions of the retraction step: "exp4" ... "cayley8" (Suslov, LiePoisson
# and RollingBody; nhphys.integrators.coefficients)
for _map in ("exp", "cayley"):
    for _order in ORDERS[1:]:
        INTEGRATORS[f"{_map}{_order}"] = (
            lambda m=_map, o=_order: Retraction(m, order=o),
            f"Retraction('{_map}', order={_order}): {SOURCES[_order]}, order {_order}",
        )
del _map, _order
INTEGRATOR_NAMES = tuple(INTEGRATORS)


def integrator_from_name(value, name="integrator"):
    """The integrator ``value`` names, or ``value`` itself if it already is an integrator.

    Parameters
    ----------
    value : str, integrator or None
        One of ``INTEGRATOR_NAMES`` (``"exp"``, ``"cayley"``, ``"newmark"``, ``"dla"``,
        ``"reference"``, ``"dop853"`` (``Adaptive()``), ``"dop853-energy"``
        (``Adaptive(conserve_energy=True)``), and the compositions ``"exp4"``,
        ``"exp6"``, ``"exp8"``, ``"cayley4"``, ``"cayley6"``, ``"cayley8"``, i.e.
        ``Retraction(map, order=k)``; case
        and surrounding spaces ignored), an object with a ``start`` method
        (from :mod:`nhphys.integrators`), or ``None``, returned unchanged (the caller's default).
    name : str
        The argument's name, for messages.

    Returns
    -------
    integrator or None

    Raises
    ------
    ValueError
        An unknown name; the message lists the known ones.
    TypeError
        Neither a name, an integrator nor ``None``.
    """
    if value is None:
        return None
    if isinstance(value, str):
        entry = INTEGRATORS.get(value.strip().lower())
        if entry is None:
            raise ValueError(
                f"Expected `{name}` to be one of {INTEGRATOR_NAMES} or an integrator from "
                f"nhphys.integrators, got {value!r}."
            )
        return entry[0]()
    if not callable(getattr(value, "start", None)):
        raise TypeError(
            f"Expected `{name}` to be an integrator from nhphys.integrators or one of "
            f"{INTEGRATOR_NAMES}, got {value!r}."
        )
    return value
