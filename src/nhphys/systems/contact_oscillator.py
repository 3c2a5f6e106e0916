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
``constraint_residual``, and ``momentum`` (``p = v - grad S``) for the variant.
"""

import numpy as np

from nhphys.systems.constrained import ConstrainedMechanicalSystem
from nhphys.systems.knife_edge import _real

CONTACT_OSCILLATOR_CODE = 2  # model number in nhphys_ext.newmark


def _coordinates(epsilon, strength, name):
    eps = epsilon

    def potential(q):
        return 0.5 * (q @ q) + 0.5 * eps * q[0] ** 2 * q[2] ** 2

    def grad_potential(q):
        x, y, z = q
        return np.array([x + eps * x * z * z, y, z + eps * x * x * z])

    def hessian_potential(q):
        x, _, z = q
        return np.array([[1 + eps * z * z, 0.0, 2 * eps * x * z],
                         [0.0, 1.0, 0.0],
                         [2 * eps * x * z, 0.0, 1 + eps * x * x]])

    def constraint_matrix(q):
        return np.array([[1.0, 0.0, q[1]]])

    def constraint_matrix_derivative(q):
        D = np.zeros((1, 3, 3))
        D[0, 2, 1] = 1.0
        return D

    cs = ConstrainedMechanicalSystem(
        np.eye(3), potential, grad_potential, constraint_matrix, constraint_matrix_derivative,
        hessian_potential, name=name,
    )
    cs.kernel_model = (CONTACT_OSCILLATOR_CODE, np.array([eps, strength]))
    if strength != 0.0:
        k = strength

        def grad_s(q):
            return np.array([0.0, 0.0, -k * np.sin(q[2])])

        def hess_s(q):
            H = np.zeros((3, 3))
            H[2, 2] = -k * np.cos(q[2])
            return H

        def third_s(q, d):
            """``T[i, j] = sum_l d^3 S / dq_i dq_j dq_l d_l``."""
            T = np.zeros((3, 3))
            T[2, 2] = k * np.sin(q[2]) * d[2]
            return T

        cs.gauge = (grad_s, hess_s, third_s)
    return cs


class ContactOscillator:
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
        self.coordinates = _coordinates(self.epsilon, self.strength, type(self).__name__)

    def __repr__(self):
        return f"ContactOscillator(epsilon={self.epsilon})"

    def coordinates_from_conditions(self, q0=None, v0=None):
        return self.coordinates.initial_coordinates(q0, v0)

    def observables(self, q, v):
        return self.coordinates.observables(np.atleast_2d(q), np.atleast_2d(v))

    def start_retraction(self, integrator, dt, backend, **initial_conditions):
        return self.coordinates.start_retraction(integrator, dt, backend, **initial_conditions)

    def reference_state(self, **initial_conditions):
        q0, v0 = self.coordinates_from_conditions(**initial_conditions)
        return np.concatenate([q0, v0])

    def reference_rhs(self, t, state):
        return np.concatenate([state[3:], self.coordinates.acceleration(state[:3], state[3:])])

    def reference_unpack(self, states):
        return states[:, :3], states[:, 3:]


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

    def observables(self, q, v):
        q, v = np.atleast_2d(q), np.atleast_2d(v)
        out = self.coordinates.observables(q, v)
        p = v.copy()
        p[:, 2] += self.strength * np.sin(q[:, 2])  # p = v - grad S
        out["momentum"] = p
        return out
