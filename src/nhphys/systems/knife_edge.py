r"""The knife edge (Chaplygin sleigh): a rigid body on a plane whose blade cannot move sideways.

Geometry and coordinates
------------------------
The blade touches the plane at the contact point ``P = (x, y)`` and points along
``e = (cos theta, sin theta)``; ``e_perp = (-sin theta, cos theta)``. The centre of mass is
``offset = a`` ahead of ``P`` along the blade: ``C = P + a e``. The plane is tilted by
``incline``; in its own coordinates gravity pulls along ``+x`` with acceleration
``g sin(incline)`` (so ``theta = 0`` points the blade downhill). ``inertia`` is the moment of
inertia about the vertical axis through the centre of mass.

The no-sideslip constraint is ``dP/dt . e_perp = 0``, i.e. ``dP/dt = v e`` with ``v`` the speed of
the contact point along the blade; ``omega = d theta/dt``.

*In coordinates* (what the Newmark and DLA integrators use) the configuration is
``q = (C_x, C_y, theta)``, so the mass matrix ``diag(m, m, I)`` is constant, the potential is
``V = -m g sin(incline) C_x`` and, since ``dC/dt = v e + a omega e_perp``, the constraint is::

    mu(q) = [-sin theta, cos theta, -a],      mu(q) dq/dt = 0

(the coordinate model :class:`nhphys.twins.models.KnifeEdgeModel`, compiled in
``nhphys_ext.models``).

*On SE(2)* (what the retraction integrator uses, level plane only) the pose of the blade
``(x, y, theta)`` has body velocity ``xi = (v, w, omega)`` (forward and sideways velocity of
``P`` in blade axes, and the turning rate); the constraint is ``w = 0`` and the reduced
Lagrangian ``l = 1/2 m (v^2 + (w + a omega)^2) + 1/2 I omega^2`` is left-invariant.

The sleigh on a level plane (closed form)
-----------------------------------------
With ``J = I + m a^2`` the equations are ``dv/dt = a omega^2``, ``J d omega/dt = -m a v omega``
and the energy ``E = 1/2 m v^2 + 1/2 J omega^2`` is conserved. Substituting
``omega^2 = (2E - m v^2)/J`` gives ``dv/dt = (a m / J)(V^2 - v^2)`` with ``V = sqrt(2E/m)``, so::

    v(t) = V tanh(k t + c),   omega(t) = sign(omega0) V sqrt(m/J) sech(k t + c),
    k = a m V / J,            c = artanh(v0 / V).

For ``a > 0`` the sleigh ends moving in a straight line at speed ``V`` (``v -> V``, ``omega -> 0``).

The knife edge on an inclined plane with ``a = 0`` (closed form)
----------------------------------------------------------------
Then ``d omega/dt = 0`` and ``dv/dt = g sin(incline) cos theta``; with
``theta = theta0 + omega t``::

    v(t) = v0 + (g sin(incline)/omega) (sin theta(t) - sin theta0),
    x(t) = x0 + int v cos theta,  y(t) = y0 + int v sin theta,

which for ``theta0 = 0`` reads ``x = x0 + v0 sin(wt)/w + g sin(incline) sin^2(wt) / (2 w^2)``,
``y = y0 + v0 (1 - cos wt)/w + g sin(incline) (wt - sin(wt) cos(wt)) / (2 w^2)``: the blade
drifts sideways across the slope, not down it.

Force elements
--------------
``KnifeEdge(..., forces=[...])`` takes the elements of :mod:`nhphys.forces`; they act on the
sleigh's rigid body, with ``A = Rz(theta)`` (body ``x`` along the blade, ``z`` along the
plane's normal) and centre of mass ``a = (C_x, C_y, 0)``, in the plane's coordinates (``x``
downhill on an inclined plane, ``z`` its normal). A wrench ``(f, tau)`` enters the equations
as the generalized force ``Q = (f_x, f_y, tau_z)`` on ``q = (C_x, C_y, theta)`` (the normal and
tilting parts are carried by the plane); a drag ``-c v`` and an angular damping ``-D Omega`` as
``-diag(c, c, D_zz) dq/dt``; spin friction acts about the plane's normal. Rolling resistance is
refused: the sleigh does not roll (its angular velocity is along the normal, so the torque
``-mu N P_t Omega`` vanishes). A motor is a torque about its body axis (only its ``z`` part
turns the sleigh). The discretisation (the symmetric discrete Lagrange-d'Alembert pair) is
derived in :mod:`nhphys.twins.newmark` and :mod:`nhphys.twins.se2_retraction`.

*Closed forms with forces.* Pushed by a constant force ``F`` along the blade while running
straight (``omega = 0``, ``omega`` stays 0 since the force has no moment), ``m dv/dt = F``:
``v = v0 + F t / m``. With drag ``-c v`` instead, ``m dv/dt = -c v``: ``v = v0 exp(-c t / m)``.
"""

import numpy as np

from nhphys._validation import as_float_array, as_positive_scalar
from nhphys.systems.constrained import CONSTRAINT_TOL, CoordinateSystem, initial_coordinates
from nhphys.twins.models import KnifeEdgeModel


def _real(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"Expected `{name}` to be a real number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"Expected `{name}` to be finite, got {value}.")
    return value


class KnifeEdge(CoordinateSystem):
    """A knife edge / Chaplygin sleigh on a (possibly inclined) plane.

    Parameters
    ----------
    mass : float
        > 0.
    inertia : float
        Moment of inertia about the vertical axis through the centre of mass, > 0.
    offset : float
        Distance ``a`` of the centre of mass ahead of the contact point along the blade (any
        sign; 0 puts the contact under the centre of mass).
    incline : float
        Tilt of the plane in radians, in [0, pi/2]; gravity pulls along ``+x``.
    gravity : float
        ``g`` >= 0.
    forces : list of nhphys.forces elements, optional
        Forces, torques, springs, fields, drag, damping and motors on the sleigh, in the
        plane's coordinates (module docstring, "Force elements"). The potentials of springs and
        fields are part of ``energy``; the work of the others is the trajectory's ``work``.
    placement : (frame (3, 3), origin (3,)), optional
        Where the plane's coordinates are in space (its axes as columns, and its origin, at
        the centre of mass's height), when the force elements are given in space (a scene's
        :class:`~nhphys.KnifeEdgeContact` sets it); default: the plane's coordinates.

    Initial conditions (for :func:`nhphys.simulate` and :class:`nhphys.KnifeEdgeContact`, see
    :mod:`nhphys.conditions`): ``position`` (x, y) of the contact point and ``heading`` (the
    blade's angle ``theta``), default zeros; ``velocity`` (speed of the contact point along the
    blade) and ``turning_rate`` (``d theta/dt``), default 0.

    Trajectory fields: ``pose`` (n, 3) ``(x, y, theta)``, ``velocity`` (n,), ``turning_rate``
    (n,), ``omega`` (n, 3) the body angular velocity ``(0, 0, turning_rate)`` (body axes: ``x``
    along the blade, ``z`` along the plane's normal), ``energy`` (n,), ``constraint_residual``
    (n,) (the sideways speed of the contact point), ``work`` (n,) (of the force elements that
    are not potentials).

    Attributes
    ----------
    coordinates : KnifeEdgeModel
        The coordinate model (:mod:`nhphys.twins.models`) the integrators step.

    Examples
    --------
    >>> import nhphys
    >>> sleigh = nhphys.systems.KnifeEdge(mass=1.0, inertia=0.5, offset=0.5)
    >>> traj = nhphys.simulate(sleigh, 10.0, 0.01, velocity=0.1, turning_rate=1.0)
    >>> bool(traj.velocity[-1] > 0.99 * sleigh.terminal_speed(0.1, 1.0))
    True
    """

    group = "SE(2)"  # on a level plane (see `level`)

    def __init__(self, mass, inertia, offset, incline=0.0, gravity=9.81, forces=None, *,
                 placement=None):
        self.mass = as_positive_scalar(mass, "mass")
        self.inertia = as_positive_scalar(inertia, "inertia")
        self.offset = _real(offset, "offset")
        self.incline = _real(incline, "incline")
        if not 0.0 <= self.incline <= np.pi / 2:
            raise ValueError(f"Expected `incline` to be in [0, pi/2], got {self.incline}.")
        self.gravity = _real(gravity, "gravity")
        if self.gravity < 0:
            raise ValueError(f"Expected `gravity` to be >= 0, got {self.gravity}.")
        self.downhill_force = self.mass * self.gravity * np.sin(self.incline)
        self.coordinates = KnifeEdgeModel(self.mass, self.inertia, self.offset,
                                          self.downhill_force)
        self._set_forces(forces, self.mass * self.gravity * np.cos(self.incline), placement,
                         rolls=False)

    def __repr__(self):
        extra = f", forces={list(self.forces)!r}" if self.forces else ""
        return (f"KnifeEdge(mass={self.mass}, inertia={self.inertia}, offset={self.offset}, "
                f"incline={self.incline}, gravity={self.gravity}{extra})")

    @property
    def level(self):
        """True on a level plane (or without gravity): the system is left-invariant on SE(2)."""
        return self.downhill_force == 0.0

    # -- coordinates q = (C_x, C_y, theta) of the blade's pose and speeds ----------------------
    def to_coordinates(self, pose, velocity, omega):
        """Pose (k, 3), speeds (k,), rates (k,) -> ``q`` (k, 3), ``dq/dt`` (k, 3)."""
        pose = np.atleast_2d(pose)
        velocity, omega = np.atleast_1d(velocity), np.atleast_1d(omega)
        xi = np.column_stack([velocity, np.zeros_like(velocity), omega])
        return self.coordinates.from_group(pose, xi)

    def observables(self, saved):
        """Trajectory fields from saved coordinates ``{"q": (k, 3), "v": (k, 3)}``."""
        q = np.atleast_2d(saved["q"])
        v = np.atleast_2d(saved["v"])
        th = q[:, 2]
        c, s = np.cos(th), np.sin(th)
        a = self.offset
        pose = np.column_stack([q[:, 0] - a * c, q[:, 1] - a * s, th])
        turning_rate = v[:, 2].copy()
        omega = np.zeros((len(turning_rate), 3))
        omega[:, 2] = turning_rate  # the body turns about the plane's normal only
        energy, work = self._energy_and_work(q, v, saved)
        return {
            "pose": pose,
            "velocity": v[:, 0] * c + v[:, 1] * s,
            "turning_rate": turning_rate,
            "omega": omega,
            "energy": energy,
            "work": work,
            "constraint_residual": np.abs(-s * v[:, 0] + c * v[:, 1] - a * v[:, 2]),
        }

    # -- initial conditions ------------------------------------------------------------------
    def initial_state(self, pose0=None, velocity0=0.0, omega0=0.0):
        """Validated ``(pose0 (3,), velocity0, omega0)``."""
        pose0 = np.zeros(3) if pose0 is None else as_float_array(pose0, "pose0")
        if pose0.shape != (3,):
            raise ValueError(f"Expected `pose0` to have shape (3,), got {pose0.shape}.")
        return pose0, _real(velocity0, "velocity0"), _real(omega0, "omega0")

    def coordinates_from_conditions(self, pose0=None, velocity0=0.0, omega0=0.0):
        """``(q0, v0)`` in coordinates from ``pose0``, ``velocity0``, ``omega0``."""
        pose0, v0, w0 = self.initial_state(pose0, velocity0, omega0)
        q, v = self.to_coordinates(pose0[None], np.array([v0]), np.array([w0]))
        return initial_coordinates(self.coordinates, q[0], v[0])

    # -- the retraction integrator (level plane) -------------------------------------------------
    def group_inertia(self):
        """Locked inertia ``I`` (3, 3) of ``l(xi) = 1/2 xi.I xi``, ``xi = (v, w, omega)``."""
        return self.coordinates.group_inertia.copy()

    def start_retraction(self, integrator, dt, backend, **initial_conditions):
        """Run of :class:`nhphys.integrators.Retraction` on SE(2) (level plane only)."""
        if not self.level:
            raise ValueError(
                "Expected a level plane (`incline` = 0 or `gravity` = 0) for the Retraction "
                "integrator, which needs a left-invariant system; use Newmark or DLA on an "
                "inclined plane, or a level one with the slope's pull as a force element "
                f"(nhphys.forces.UniformField) (got incline={self.incline})."
            )
        return super().start_retraction(integrator, dt, backend, **initial_conditions)

    # -- closed forms ------------------------------------------------------------------------
    def terminal_speed(self, velocity0, omega0):
        """``V = sqrt(2E/m)``: the limit of ``|v|`` on a level plane."""
        J = self.inertia + self.mass * self.offset**2
        E = 0.5 * self.mass * velocity0**2 + 0.5 * J * omega0**2
        return np.sqrt(2 * E / self.mass)

    def sleigh_closed_form(self, t, velocity0, omega0):
        """``(v(t), omega(t))`` of the sleigh on a level plane (see the module docstring).

        Requires ``omega0 != 0`` or ``offset == 0`` (otherwise the motion is a straight line
        at constant speed, also returned).
        """
        t = np.asarray(t, dtype=float)
        m, a = self.mass, self.offset
        J = self.inertia + m * a * a
        if omega0 == 0.0 or a == 0.0:
            return np.full_like(t, velocity0), np.full_like(t, omega0)
        V = self.terminal_speed(velocity0, omega0)
        k = a * m * V / J
        c = np.arctanh(velocity0 / V)
        u = k * t + c
        return V * np.tanh(u), np.sign(omega0) * V * np.sqrt(m / J) / np.cosh(u)

    def inclined_closed_form(self, t, pose0, velocity0, omega0):
        """Pose (k, 3) and speed (k,) on an inclined plane when ``offset == 0``, ``omega0 != 0``."""
        if self.offset != 0.0 or omega0 == 0.0:
            raise ValueError("Expected `offset` = 0 and `omega0` != 0 for this closed form.")
        t = np.asarray(t, dtype=float)
        x0, y0, th0 = np.asarray(pose0, dtype=float)
        w = omega0
        G = self.downhill_force / self.mass
        th = th0 + w * t
        v = velocity0 + G / w * (np.sin(th) - np.sin(th0))
        # x' = v cos th, y' = v sin th, integrated exactly
        A = velocity0 - G / w * np.sin(th0)
        x = x0 + A / w * (np.sin(th) - np.sin(th0)) + G / (2 * w * w) * (
            np.sin(th) ** 2 - np.sin(th0) ** 2)
        y = y0 - A / w * (np.cos(th) - np.cos(th0)) + G / (2 * w) * (
            t - (np.sin(2 * th) - np.sin(2 * th0)) / (2 * w))
        return np.column_stack([x, y, th]), v


__all__ = ["CONSTRAINT_TOL", "KnifeEdge"]
