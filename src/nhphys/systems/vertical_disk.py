r"""The vertical rolling disk: a disk rolling upright, without slipping, on a level plane.

Configuration ``SE(2) x S^1``: the contact point ``(x, y)``, the heading ``theta`` (the disk's
plane contains ``e = (cos theta, sin theta)``) and the rolling angle ``phi``. Rolling without
slipping::

    dx/dt = R cos(theta) dphi/dt,     dy/dt = R sin(theta) dphi/dt.

With mass ``m``, radius ``R``, axial inertia ``I_a`` (spin about the axle) and diametral
inertia ``I_d`` (turning about the vertical diameter), the Lagrangian is
``L = 1/2 m (dx^2 + dy^2) + 1/2 I_d dtheta^2 + 1/2 I_a dphi^2``; the centre of mass is above the
contact point, so its horizontal velocity is that of ``(x, y)``.

*In coordinates* ``q = (x, y, theta, phi)``: ``M = diag(m, m, I_d, I_a)``, ``V = 0`` and::

    mu(q) = [[1, 0, 0, -R cos theta], [0, 1, 0, -R sin theta]].

*On SE(2) x R* the body velocity is ``xi = (v_x, v_y, omega, phi_dot)`` (velocity of the
contact point in the disk's axes, turning rate, spin); the constraint space is
``v_x = R phi_dot``, ``v_y = 0``.

Closed form. The constraint forces act along the rolling direction only, so
``I_d d omega/dt = 0`` and ``(I_a + m R^2) d^2 phi/dt^2 = 0``: the turning rate ``omega`` and the
spin ``s`` are constant and the contact point runs round a circle of radius
``rho = R |s / omega|`` at angular rate ``omega`` (period ``2 pi / |omega|``), centred at
``(x0, y0) + (R s / omega) (-sin theta0, cos theta0)``; with ``omega = 0`` it runs straight.
"""

import numpy as np

from nhphys._validation import as_float_array, as_positive_scalar
from nhphys.systems.constrained import ConstrainedMechanicalSystem
from nhphys.systems.knife_edge import _real

VERTICAL_DISK_CODE = 1  # model number in nhphys_ext.newmark


class VerticalDisk:
    """A disk rolling upright on a level plane.

    Parameters
    ----------
    mass, radius, inertia_axial, inertia_diametral : float
        All > 0 (a uniform thin disk has ``I_a = m R^2 / 2``, ``I_d = m R^2 / 4``).

    Initial conditions (for :func:`nhphys.simulate`, see :mod:`nhphys.conditions`):
    ``position`` (x, y) of the contact point and ``heading`` ``theta``, default zeros; ``phi``
    (default 0), ``turning_rate`` (``d theta/dt``) and ``spin`` (``d phi/dt``), default 0.

    Trajectory fields: ``pose`` (n, 3) ``(x, y, theta)``, ``phi`` (n,), ``turning_rate`` (n,),
    ``spin`` (n,), ``energy`` (n,), ``constraint_residual`` (n,) (slip speed of the contact
    point). There is no ``omega`` field: across nhphys ``omega`` is a body angular velocity
    (n, 3), and this system's state is the two rates.

    Examples
    --------
    >>> import numpy as np, nhphys
    >>> disk = nhphys.systems.VerticalDisk(1.0, 0.5, 0.125, 0.0625)
    >>> traj = nhphys.simulate(disk, 2 * np.pi, np.pi / 500, turning_rate=1.0, spin=2.0,
    ...                        integrator="newmark")
    >>> bool(np.allclose(traj.pose[-1, :2], [0, 0], atol=1e-10))   # back after one period
    True
    """

    def __init__(self, mass, radius, inertia_axial, inertia_diametral):
        self.mass = as_positive_scalar(mass, "mass")
        self.radius = as_positive_scalar(radius, "radius")
        self.inertia_axial = as_positive_scalar(inertia_axial, "inertia_axial")
        self.inertia_diametral = as_positive_scalar(inertia_diametral, "inertia_diametral")
        self.coordinates = self._coordinates()

    def __repr__(self):
        return (f"VerticalDisk(mass={self.mass}, radius={self.radius}, "
                f"inertia_axial={self.inertia_axial}, "
                f"inertia_diametral={self.inertia_diametral})")

    def _coordinates(self):
        R = self.radius

        def potential(q):
            return 0.0

        def grad_potential(q):
            return np.zeros(4)

        def hessian_potential(q):
            return np.zeros((4, 4))

        def constraint_matrix(q):
            return np.array([[1.0, 0.0, 0.0, -R * np.cos(q[2])],
                             [0.0, 1.0, 0.0, -R * np.sin(q[2])]])

        def constraint_matrix_derivative(q):
            D = np.zeros((2, 4, 4))
            D[0, 3, 2] = R * np.sin(q[2])
            D[1, 3, 2] = -R * np.cos(q[2])
            return D

        cs = ConstrainedMechanicalSystem(
            np.diag([self.mass, self.mass, self.inertia_diametral, self.inertia_axial]),
            potential, grad_potential, constraint_matrix, constraint_matrix_derivative,
            hessian_potential, name="VerticalDisk.coordinates",
        )
        cs.kernel_model = (VERTICAL_DISK_CODE, np.array([R]))
        return cs

    def observables(self, q, v):
        """Trajectory fields from coordinates ``q`` (k, 4) and velocities ``v`` (k, 4)."""
        q = np.atleast_2d(q)
        v = np.atleast_2d(v)
        return {
            "pose": q[:, :3].copy(),
            "phi": q[:, 3].copy(),
            "turning_rate": v[:, 2].copy(),
            "spin": v[:, 3].copy(),
            "energy": self.coordinates.energy(q, v),
            "constraint_residual": self.coordinates.constraint_residual(q, v),
        }

    def initial_state(self, pose0=None, phi0=0.0, omega0=0.0, spin0=0.0):
        pose0 = np.zeros(3) if pose0 is None else as_float_array(pose0, "pose0")
        if pose0.shape != (3,):
            raise ValueError(f"Expected `pose0` to have shape (3,), got {pose0.shape}.")
        return pose0, _real(phi0, "phi0"), _real(omega0, "omega0"), _real(spin0, "spin0")

    def coordinates_from_conditions(self, pose0=None, phi0=0.0, omega0=0.0, spin0=0.0):
        """``(q0, v0)`` in coordinates from the disk's initial conditions."""
        pose0, phi0, w0, s0 = self.initial_state(pose0, phi0, omega0, spin0)
        th = pose0[2]
        q0 = np.array([pose0[0], pose0[1], th, phi0])
        R = self.radius
        v0 = np.array([R * s0 * np.cos(th), R * s0 * np.sin(th), w0, s0])
        return self.coordinates.initial_coordinates(q0, v0)

    def group_inertia(self):
        """Locked inertia (4, 4) of ``l(xi)``, ``xi = (v_x, v_y, omega, phi_dot)``."""
        m = self.mass
        return np.diag([m, m, self.inertia_diametral, self.inertia_axial])

    def start_retraction(self, integrator, dt, backend, pose0=None, phi0=0.0, omega0=0.0,
                         spin0=0.0):
        """Run of :class:`nhphys.integrators.Retraction` on ``SE(2) x R``."""
        from nhphys.integrators.se2 import SE2RetractionRun

        pose0, phi0, w0, s0 = self.initial_state(pose0, phi0, omega0, spin0)
        R = self.radius
        basis = np.array([[0.0, R], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        xi0 = np.array([R * s0, 0.0, w0, s0])

        def frames(g, xi):
            th = g[:, 2]
            v = np.column_stack([xi[:, 0] * np.cos(th) - xi[:, 1] * np.sin(th),
                                 xi[:, 0] * np.sin(th) + xi[:, 1] * np.cos(th),
                                 xi[:, 2], xi[:, 3]])
            return self.observables(g, v)

        return SE2RetractionRun(self.group_inertia(), basis, np.append(pose0, phi0), xi0, dt,
                                integrator, backend, frames)

    def circle(self, pose0, omega0, spin0):
        """``(centre (2,), radius, angular rate)`` of the contact point's exact path."""
        pose0 = np.asarray(pose0, dtype=float)
        if omega0 == 0.0:
            raise ValueError("Expected `omega0` != 0: with no turning the disk runs straight.")
        rho = self.radius * spin0 / omega0
        th = pose0[2]
        centre = pose0[:2] + rho * np.array([-np.sin(th), np.cos(th)])
        return centre, abs(rho), omega0

    def closed_form(self, t, pose0, omega0, spin0, phi0=0.0):
        """Exact ``pose`` (k, 3) and ``phi`` (k,) at times ``t``."""
        t = np.asarray(t, dtype=float)
        x0, y0, th0 = np.asarray(pose0, dtype=float)
        R = self.radius
        th = th0 + omega0 * t
        if omega0 == 0.0:
            x = x0 + R * spin0 * t * np.cos(th0)
            y = y0 + R * spin0 * t * np.sin(th0)
        else:
            rho = R * spin0 / omega0
            x = x0 + rho * (np.sin(th) - np.sin(th0))
            y = y0 - rho * (np.cos(th) - np.cos(th0))
        return np.column_stack([x, y, th]), phi0 + spin0 * t

    def reference_state(self, **initial_conditions):
        q0, v0 = self.coordinates_from_conditions(**initial_conditions)
        return np.concatenate([q0, v0])

    def reference_rhs(self, t, state):
        return np.concatenate([state[4:], self.coordinates.acceleration(state[:4], state[4:])])

    def reference_unpack(self, states):
        return states[:, :4], states[:, 4:]
