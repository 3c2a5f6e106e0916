"""Integrators: small immutable option objects, started on a system by :func:`nhphys.simulate`."""

from nhphys.integrators.reference import Reference
from nhphys.integrators.retraction import LiePoisson, Retraction

__all__ = ["Retraction", "LiePoisson", "Reference"]
from nhphys.integrators.newmark import Newmark  # noqa: E402
from nhphys.integrators.dla import DLA  # noqa: E402
from nhphys.integrators.composition import Composition  # noqa: E402
__all__ += ["Newmark", "DLA", "Composition"]
