"""Mechanical systems: each knows its continuous equations, energy and constraint residuals."""

from nhphys.systems.suslov import Suslov

__all__ = ["Suslov"]
