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

(the coordinate model :class:`nhphys.twins.models.VerticalDiskModel`, compiled in
``nhphys_ext.models``).

*On SE(2) x R* the body velocity is ``xi = (v_x, v_y, omega, phi_dot)`` (velocity of the
contact point in the disk's axes, turning rate, spin); the constraint space is
``v_x = R phi_dot``, ``v_y = 0``.

Closed form. The constraint forces act along the rolling direction only, so
``I_d d omega/dt = 0`` and ``(I_a + m R^2) d^2 phi/dt^2 = 0``: the turning rate ``omega`` and the
spin ``s`` are constant and the contact point runs round a circle of radius
``rho = R |s / omega|`` at angular rate ``omega`` (period ``2 pi / |omega|``), centred at
``(x0, y0) + (R s / omega) (-sin theta0, cos theta0)``; with ``omega = 0`` it runs straight.

Force elements
--------------
``VerticalDisk(..., forces=[...])`` takes the elements of :mod:`nhphys.forces`; they act on
the disk, whose orientation is ``A = Rz(theta) Rx(-pi/2) Rz(phi)`` (the body ``z`` axis is the
axle, ``e_perp = (-sin theta, cos theta, 0)`` in space, as for :class:`nhphys.shapes.Disk`; at
``phi = 0`` body ``x`` points along ``e`` and body ``y`` down) and whose centre of mass is
``a = (x, y, R)`` above the contact point; its body angular velocity is ``Omega = phi_dot e_z +
theta_dot A^T e_z``. A wrench ``(f, tau)`` enters as ``Q = J_v^T f + J_W^T tau`` with
``da/dt = J_v dq/dt``, ``Omega = J_W dq/dt`` (:mod:`nhphys.twins.models`); a motor's default
axis ``(0, 0, 1)`` is the axle, so its torque ``T`` is ``Q_phi = T``. The plane is level:
tilt gravity with a :class:`~nhphys.forces.UniformField` (the disk has no weight of its own in
these equations, its normal force being carried by the plane). Rolling resistance
``-mu N P_t Omega`` (``P_t Omega = phi_dot e_z``, the rolling rate) takes the normal force
``N = m g`` with ``gravity``; spin friction acts about the vertical.

*Motor up an incline (closed form).* Rolling straight (``theta`` constant: the forces below
have no moment about the vertical) with a motor torque ``T`` about the axle and a uniform field
``F`` along ``e`` (``F = -m g sin(beta)``: the plane tilted by ``beta``, uphill along ``e``),
the constraint ``dx/dt = R phi_dot cos theta`` (and the same for ``y``) eliminates the
multipliers: the virtual work on the constraint is ``(F R + T) dphi``, the kinetic energy
``1/2 (m R^2 + I_a) phi_dot^2``, so::

    (I_a + m R^2) d^2 phi/dt^2 = T + F R,
    d^2 s/dt^2 = R (T + F R) / (I_a + m R^2) = (T/R - m g sin beta) / (m + I_a / R^2)

for the distance ``s`` rolled uphill. With drag ``-c v`` instead, ``(I_a + m R^2) d^2 phi/dt^2
= -c R^2 phi_dot``: the spin decays as ``exp(-c R^2 t / (I_a + m R^2))``; with rolling
resistance ``mu``, as ``exp(-mu N t / (I_a + m R^2))``.
"""

import numpy as np

from nhphys._validation import as_float_array, as_positive_scalar
from nhphys.systems.constrained import CoordinateSystem, initial_coordinates
from nhphys.systems.knife_edge import _real
from nhphys.twins.models import VerticalDiskModel


class VerticalDisk(CoordinateSystem):
    """A disk rolling upright on a level plane.

    Parameters
    ----------
    mass, radius, inertia_axial, inertia_diametral : float
        All > 0 (a uniform thin disk has ``I_a = m R^2 / 2``, ``I_d = m R^2 / 4``).
    forces : list of nhphys.forces elements, optional
        Forces, torques, springs, fields, drag, damping, rolling resistance and motors on the
        disk (module docstring, "Force elements"). The potentials of springs and fields are part
        of ``energy``; the work of the others is the trajectory's ``work``.
    gravity : float
        ``g`` >= 0: only for the normal force ``N = m g`` of rolling resistance.

    Initial conditions (for :func:`nhphys.simulate`, see :mod:`nhphys.conditions`):
    ``position`` (x, y) of the contact point and ``heading`` ``theta``, default zeros; ``phi``
    (default 0), ``turning_rate`` (``d theta/dt``) and ``spin`` (``d phi/dt``), default 0.

    Trajectory fields: ``pose`` (n, 3) ``(x, y, theta)``, ``phi`` (n,), ``turning_rate`` (n,),
    ``spin`` (n,), ``energy`` (n,), ``constraint_residual`` (n,) (slip speed of the contact
    point), ``work`` (n,) (of the force elements that are not potentials). There is no
    ``omega`` field: across nhphys ``omega`` is a body angular velocity (n, 3), and this
    system's state is the two rates.

    Attributes
    ----------
    coordinates : VerticalDiskModel
        The coordinate model (:mod:`nhphys.twins.models`) the integrators step.

    Examples
    --------
    >>> import numpy as np, nhphys
    >>> disk = nhphys.systems.VerticalDisk(1.0, 0.5, 0.125, 0.0625)
    >>> traj = nhphys.simulate(disk, 2 * np.pi, np.pi / 500, turning_rate=1.0, spin=2.0,
    ...                        integrator="newmark")
    >>> bool(np.allclose(traj.pose[-1, :2], [0, 0], atol=1e-10))   # back after one period
    True
    """

    conserved_rates = ("turning_rate", "spin")  # kept exactly by the SE(2) retraction

    group = "SE(2) x R"

    def __init__(self, mass, radius, inertia_axial, inertia_diametral, forces=None,
                 gravity=9.81):
        self.mass = as_positive_scalar(mass, "mass")
        self.radius = as_positive_scalar(radius, "radius")
        self.inertia_axial = as_positive_scalar(inertia_axial, "inertia_axial")
        self.inertia_diametral = as_positive_scalar(inertia_diametral, "inertia_diametral")
        self.gravity = _real(gravity, "gravity")
        if self.gravity < 0:
            raise ValueError(f"Expected `gravity` to be >= 0, got {self.gravity}.")
        self.coordinates = VerticalDiskModel(self.mass, self.radius, self.inertia_axial,
                                             self.inertia_diametral)
        self._set_forces(forces, self.mass * self.gravity)

    def __repr__(self):
        extra = f", forces={list(self.forces)!r}" if self.forces else ""
        return (f"VerticalDisk(mass={self.mass}, radius={self.radius}, "
                f"inertia_axial={self.inertia_axial}, "
                f"inertia_diametral={self.inertia_diametral}{extra})")

    def observables(self, saved):
        """Trajectory fields from saved coordinates ``{"q": (k, 4), "v": (k, 4)}``."""
        q = np.atleast_2d(saved["q"])
        v = np.atleast_2d(saved["v"])
        energy, work = self._energy_and_work(q, v, saved)
        return {
            "pose": q[:, :3].copy(),
            "phi": q[:, 3].copy(),
            "turning_rate": v[:, 2].copy(),
            "spin": v[:, 3].copy(),
            "energy": energy,
            "work": work,
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
        return initial_coordinates(self.coordinates, q0, v0)

    def group_inertia(self):
        """Locked inertia (4, 4) of ``l(xi)``, ``xi = (v_x, v_y, omega, phi_dot)``."""
        return self.coordinates.group_inertia.copy()

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
