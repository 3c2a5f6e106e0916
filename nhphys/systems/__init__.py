"""Mechanical systems: each knows its continuous equations, energy and constraint residuals."""

from nhphys.systems.suslov import Suslov

__all__ = ["Suslov"]
from nhphys.systems.constrained import ConstrainedMechanicalSystem  # noqa: E402
from nhphys.systems.knife_edge import KnifeEdge  # noqa: E402
from nhphys.systems.vertical_disk import VerticalDisk  # noqa: E402
from nhphys.systems.contact_oscillator import ContactOscillator, NonReversibleContactOscillator  # noqa: E402,E501
__all__ += ["ConstrainedMechanicalSystem", "KnifeEdge", "VerticalDisk", "ContactOscillator", "NonReversibleContactOscillator"]  # noqa: E501
from nhphys.systems.rolling import RollingBody  # noqa: E402

__all__ += ["RollingBody"]
