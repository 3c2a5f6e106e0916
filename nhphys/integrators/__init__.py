"""Integrators: small immutable option objects, started on a system by :func:`nhphys.simulate`."""

from nhphys.integrators.reference import Reference
from nhphys.integrators.retraction import LiePoisson, Retraction

__all__ = ["Retraction", "LiePoisson", "Reference"]
