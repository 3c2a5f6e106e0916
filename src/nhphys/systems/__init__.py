"""Mechanical systems: each knows its continuous equations, energy and constraint residuals."""

from nhphys.systems.articulated import (Articulated, Blade, EllipsoidHull, Joint,
                                        SuslovConstraint, Wheel)
from nhphys.systems.bicycle import Bicycle
from nhphys.systems.constrained import ConstrainedMechanicalSystem
from nhphys.systems.ground_bicycle import GroundBicycle
from nhphys.systems.contact_oscillator import ContactOscillator, NonReversibleContactOscillator
from nhphys.systems.knife_edge import KnifeEdge
from nhphys.systems.rolling import RollingBody
from nhphys.systems.rotor_sleigh import RotorSleigh
from nhphys.systems.suslov import Suslov
from nhphys.systems.vertical_disk import VerticalDisk

__all__ = [
    "Articulated", "Bicycle", "Blade", "ConstrainedMechanicalSystem", "ContactOscillator",
    "EllipsoidHull", "GroundBicycle", "Joint",
    "SuslovConstraint",
    "KnifeEdge", "NonReversibleContactOscillator", "RollingBody", "RotorSleigh", "Suslov",
    "VerticalDisk", "Wheel",
]
