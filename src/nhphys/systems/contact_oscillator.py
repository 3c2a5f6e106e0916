r"""The contact oscillator (McLachlan & Perlmutter 2006) and its non-reversible variant
(Modin & Verdier 2020): test problems for nonholonomic integrators.

Contact oscillator
------------------
``q = (x, y, z)``, unit masses, the constraint ``dx + y dz = 0`` (``mu(q) = [1, 0, y]``) and the
energy ``E = 1/2 |v|^2 + 1/2 |q|^2 + 1/2 epsilon x^2 z^2``, i.e.
``V(q) = 1/2 |q|^2 + 1/2 epsilon x^2 z^2``. The ``y`` motion is a free harmonic oscillator
(the constraint force has no ``y`` component), and both ``E`` and
``E - 1/2 (y^2 + v_y^2)`` are conserved: the system is integrable, and reversible with respect
to ``(q, v) -> (q, -v)``.

Non-reversible variant
----------------------
Modin & Verdier perturb the Hamiltonian to ``H(q, p) = 1/2 |p + grad S(q)|^2 + V(q)``; here
``S(q) = strength cos z``. In Lagrangian form this is

    L(q, v) = 1/2 |v|^2 - v . grad S(q) - V(q),     p = dL/dv = v - grad S(q),

with the same constraint. The extra term is the total derivative ``-dS/dt``: the motion
``q(t)`` and the energy ``E(q, v)`` are those of the contact oscillator, but the reversing
symmetry ``(q, p) -> (q, -p)`` of the canonical variables is lost. Integrators built on the
discrete Lagrangian (DLA) see the term through its discretisation; integrators built on the
second-order equation ``d^2q/dt^2 = Gamma(q, dq/dt, lambda)`` (the Newmark family) do not, and
give exactly the same steps on both problems.

Initial conditions: ``q0`` and ``v0`` (shape (3,)), with ``v0`` on the constraint
(``v0[0] + q0[1] v0[2] = 0``). Trajectory fields: ``q``, ``v``, ``energy``,
``constraint_residual``, and ``momentum`` (``p = v - grad S``) for the variant. Both are the
coordinate model :class:`nhphys.twins.models.ContactOscillatorModel` (compiled in
``nhphys_ext.models``), with ``strength = 0`` for the reversible one.
"""

import numpy as np

from nhphys.systems.constrained import CoordinateSystem, initial_coordinates
from nhphys.systems.knife_edge import _real
from nhphys.twins.models import ContactOscillatorModel


class ContactOscillator(CoordinateSystem):
    """The contact oscillator with nonlinearity ``epsilon`` (>= 0).

    Examples
    --------
    >>> import numpy as np, nhphys
    >>> osc = nhphys.systems.ContactOscillator(0.1)
    >>> q0, v0 = [1.0, 1.0, 0.0], [-0.5, 0.0, 0.5]
    >>> traj = nhphys.simulate(osc, 10.0, 0.1, integrator=nhphys.integrators.Newmark(),
    ...                        q0=q0, v0=v0)
    >>> bool(np.ptp(traj.energy) < 1e-2)
    True
    """

    strength = 0.0

    def __init__(self, epsilon=0.0):
        self.epsilon = _real(epsilon, "epsilon")
        if self.epsilon < 0:
            raise ValueError(f"Expected `epsilon` to be >= 0, got {self.epsilon}.")
        self.coordinates = ContactOscillatorModel(self.epsilon, self.strength)

    def __repr__(self):
        return f"ContactOscillator(epsilon={self.epsilon})"

    def coordinates_from_conditions(self, q0=None, v0=None):
        return initial_coordinates(self.coordinates, q0, v0)

    def observables(self, saved):
        return self.coordinates.observables(saved)


class NonReversibleContactOscillator(ContactOscillator):
    """The contact oscillator with the gauge term ``-v . grad S``, ``S = strength cos z``.

    Parameters
    ----------
    epsilon : float
        Nonlinearity, >= 0.
    strength : float
        Size of ``S``; 0 gives back the contact oscillator.
    """

    def __init__(self, epsilon=0.0, strength=1.0):
        self.strength = _real(strength, "strength")
        super().__init__(epsilon)

    def __repr__(self):
        return f"NonReversibleContactOscillator(epsilon={self.epsilon}, strength={self.strength})"

    def observables(self, saved):
        out = self.coordinates.observables(saved)
        q, v = out["q"], out["v"]
        p = v.copy()
        p[:, 2] += self.strength * np.sin(q[:, 2])  # p = v - grad S
        out["momentum"] = p
        return out
