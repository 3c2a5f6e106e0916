"""Retraction maps ``tau: so(3) -> SO(3)`` as strategy objects.

An integrator takes a map by name (``"exp"`` or ``"cayley"``) or as one of these objects; each
bundles the map, its inverse and its trivialised Jacobians, the ingredients of the discrete
Legendre transforms (see :mod:`nhphys.twins.suslov`).
"""

from dataclasses import dataclass

from nhphys.lie import so3


@dataclass(frozen=True)
class ExponentialRetraction:
    """``tau = exp``: exact geodesics of the bi-invariant metric."""

    name: str = "exp"
    code: int = 0  # the map's number in the kernels

    def __call__(self, xi, backend="auto"):
        return so3.exp(xi, backend)

    def inverse(self, R, backend="auto"):
        return so3.log(R, backend)

    def jac_left(self, xi, backend="auto"):
        return so3.exp_jac_left(xi, backend)

    def jac_left_inv(self, xi, backend="auto"):
        return so3.exp_jac_left_inv(xi, backend)


@dataclass(frozen=True)
class CayleyRetraction:
    """``tau = cay``: rational, cheaper, agrees with ``exp`` to second order."""

    name: str = "cayley"
    code: int = 1

    def __call__(self, xi, backend="auto"):
        return so3.cay(xi, backend)

    def inverse(self, R, backend="auto"):
        return so3.cay_inv(R, backend)

    def jac_left(self, xi, backend="auto"):
        return so3.cay_jac_left(xi, backend)

    def jac_left_inv(self, xi, backend="auto"):
        return so3.cay_jac_left_inv(xi, backend)


RETRACTIONS = {"exp": ExponentialRetraction(), "cayley": CayleyRetraction()}


def get_retraction(map):
    """Return the retraction for a name (``"exp"``, ``"cayley"``) or pass an object through."""
    if isinstance(map, (ExponentialRetraction, CayleyRetraction)):
        return map
    if map not in RETRACTIONS:
        raise ValueError(f"Expected `map` to be one of {tuple(RETRACTIONS)}, got {map!r}.")
    return RETRACTIONS[map]
