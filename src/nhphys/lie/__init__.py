"""Lie groups: SO(3) (and SE(2)) maps, Jacobians, and retraction strategy objects."""

from nhphys.lie import se2, so3
from nhphys.lie.retraction import CayleyRetraction, ExponentialRetraction, get_retraction

__all__ = ["so3", "se2", "ExponentialRetraction", "CayleyRetraction", "get_retraction"]
