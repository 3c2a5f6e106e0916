"""Lie groups: SO(3) (and SE(2)) maps, Jacobians, and retraction strategy objects."""

from nhphys.lie import so3
from nhphys.lie.retraction import CayleyRetraction, ExponentialRetraction, get_retraction

__all__ = ["so3", "ExponentialRetraction", "CayleyRetraction", "get_retraction"]
