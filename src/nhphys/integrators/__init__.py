"""Integrators: small immutable option objects, started on a system by :func:`nhphys.simulate`.

Wherever an integrator is accepted it may also be given by name (:data:`INTEGRATOR_NAMES`:
``"exp"``, ``"cayley"``, ``"newmark"``, ``"dla"``, ``"reference"``, ``"dop853"``; see
:func:`integrator_from_name`).
"""

from nhphys.integrators.reference import Reference
from nhphys.integrators.retraction import LiePoisson, Retraction

__all__ = ["Retraction", "LiePoisson", "Reference"]
from nhphys.integrators.newmark import Newmark  # noqa: E402
from nhphys.integrators.dla import DLA  # noqa: E402
from nhphys.integrators.composition import Composition  # noqa: E402
from nhphys.integrators.adaptive import Adaptive  # noqa: E402
from nhphys.integrators.names import INTEGRATOR_NAMES, integrator_from_name
__all__ += ["Newmark", "DLA", "Composition", "Adaptive", "INTEGRATOR_NAMES",
            "integrator_from_name"]
