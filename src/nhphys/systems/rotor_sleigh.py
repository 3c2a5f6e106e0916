r"""The Chaplygin sleigh carrying a rotor: a flywheel on the sleigh, spinning about the vertical
axis through the sleigh's centre of mass.

Mechanics
---------
The sleigh is the knife edge of :mod:`nhphys.systems.knife_edge` on a level plane: its blade
touches the plane at ``P = (x, y)``, points along ``e = (cos theta, sin theta)``
(``e_perp = (-sin theta, cos theta)``), and the centre of mass ``C = P + a e`` is ``a`` ahead of
the contact. The rotor turns by ``phi`` relative to the sleigh, so its absolute rate is
``omega + phi_dot`` (``omega = d theta/dt``). With ``m`` the total mass (rotor included), ``I_s``
the sleigh's moment of inertia about the vertical through ``C`` (rotor excluded) and ``I_r`` the
rotor's about its axle::

    L = 1/2 m |dC/dt|^2 + 1/2 I_s omega^2 + 1/2 I_r (omega + phi_dot)^2,

and the blade's contact point cannot slip sideways: ``dP/dt . e_perp = 0``. In the body
velocity ``(v, w)`` of ``P`` in blade axes, ``dC/dt = v e + (w + a omega) e_perp``, so
``L = 1/2 m (v^2 + (w + a omega)^2) + 1/2 I_s omega^2 + 1/2 I_r (omega + phi_dot)^2`` with the
constraint ``w = 0``: a left-invariant system on ``SE(2) x R`` (the retraction integrator), or,
in the coordinates ``q = (C_x, C_y, theta, phi)``, a constant non-diagonal mass matrix and
``mu = [-sin theta, cos theta, -a, 0]`` (the Newmark family; the coordinate model
:class:`nhphys.twins.models.RotorSleighModel`, compiled in ``nhphys_ext.models``).
``locked=True`` adds the constraint ``phi_dot = 0``.

Equations and closed forms
--------------------------
In coordinates, ``M d^2q/dt^2 = mu^T lambda`` reads::

    m d^2C/dt^2 = lambda e_perp,
    (I_s + I_r) d omega/dt + I_r d^2phi/dt^2 = -a lambda,
    I_r (d omega/dt + d^2phi/dt^2) = 0                     (free rotor).

*Free rotor.* The last line says that the rotor's angular momentum about its axle,
``sigma = I_r (omega + phi_dot)``, is conserved (``phi`` is cyclic and the constraint does not
involve ``phi_dot``). Subtracting it from the second line leaves ``I_s d omega/dt = -a lambda``.
On the constraint ``dC/dt = v e + a omega e_perp``, so
``d^2C/dt^2 = (dv/dt - a omega^2) e + (v omega + a d omega/dt) e_perp``; the ``e`` component of
the first line gives ``dv/dt = a omega^2`` and its ``e_perp`` component
``lambda = m (v omega + a d omega/dt)``, hence::

    dv/dt = a omega^2,       (I_s + m a^2) d omega/dt = -m a v omega:

exactly the equations of the plain sleigh with inertia ``I_s``. The rotor, spinning freely,
neither helps nor hinders the turning, and the sleigh moves by the tanh/sech closed form of
:meth:`KnifeEdge.sleigh_closed_form <nhphys.systems.KnifeEdge.sleigh_closed_form>` with
``J = I_s + m a^2``: ``v = V tanh(k t + c)``, ``omega = sign(omega0) V sqrt(m/J) sech(k t + c)``,
``V = sqrt(2 E_s / m)``, ``E_s = 1/2 m v0^2 + 1/2 J omega0^2``, ``k = a m V / J``,
``c = artanh(v0 / V)``. Integrating ``omega`` with ``int sech u du = gd(u) = 2 atan(tanh(u/2))``::

    theta(t) = theta0 + sign(omega0) (sqrt(J/m) / a) (gd(k t + c) - gd(c)),
    phi(t) = phi0 + sigma t / I_r - (theta(t) - theta0)       (phi_dot = sigma/I_r - omega),

so the sleigh turns by at most ``sqrt(J/m) pi / a`` in all, while the rotor ends spinning at
``sigma / I_r`` relative to it.

*Locked rotor.* With ``phi_dot = 0`` the second line reads ``(I_s + I_r) d omega/dt = -a
lambda`` (the rotor's reaction ``I_r d omega/dt`` is the multiplier of ``phi_dot = 0``): the
plain sleigh with inertia ``I_s + I_r``.

*Energy.* ``E = 1/2 m v^2 + 1/2 (I_s + m a^2) omega^2 + 1/2 I_r (omega + phi_dot)^2`` is
conserved (the constraint forces do no work); with the rotor free it splits into the sleigh's
``E_s`` and the rotor's ``sigma^2 / (2 I_r)``, each conserved.

Force elements
--------------
``RotorSleigh(..., forces=[...])`` takes the elements of :mod:`nhphys.forces`. A
:class:`~nhphys.forces.Motor` drives the rotor relative to the sleigh (its axis must be the
rotor's, ``(0, 0, 1)``): its torque ``T`` on the rotor and ``-T`` on the sleigh do the work
``T dphi``, so ``Q_phi = T`` (speed control on ``phi_dot``). Every other element acts on the
sleigh as on :class:`~nhphys.systems.KnifeEdge` (``A = Rz(theta)``, ``a = (C_x, C_y, 0)``,
``Q = (f_x, f_y, tau_z, 0)``); rolling resistance is refused (nothing rolls).

*Spinning the rotor up.* With the sleigh at rest and a motor torque ``T``, the rotor's reaction
``-T`` turns the sleigh; with the blade's contact under the centre of mass (``a = 0``) the
constraint force has no moment, so the angular momentum about the vertical stays 0:
``(I_s + I_r) omega + I_r phi_dot = 0`` and ``I_r (d omega/dt + d^2 phi/dt^2) = T``, hence
``d^2 phi/dt^2 = T (I_s + I_r) / (I_s I_r)`` and ``d omega/dt = -T / I_s``.
"""

import numpy as np

from nhphys._validation import as_float_array, as_positive_scalar
from nhphys.systems.constrained import CoordinateSystem, initial_coordinates
from nhphys.systems.knife_edge import KnifeEdge, _real
from nhphys.twins.models import RotorSleighModel


class RotorSleigh(CoordinateSystem):
    """A Chaplygin sleigh on a level plane carrying a rotor about the vertical through its
    centre of mass (see the module docstring for the mechanics and closed forms).

    Parameters
    ----------
    mass : float
        ``m`` > 0, the rotor's mass included.
    inertia : float
        ``I_s`` > 0, the sleigh's moment of inertia about the vertical through the centre of
        mass, the rotor's excluded.
    rotor_inertia : float
        ``I_r`` > 0, the rotor's moment of inertia about its axle.
    offset : float
        ``a``, the distance of the centre of mass ahead of the blade's contact point.
    locked : bool
        Lock the rotor to the sleigh (the constraint ``phi_dot = 0``).
    forces : list of nhphys.forces elements, optional
        On the sleigh; a motor drives the rotor (module docstring, "Force elements"). The
        potentials of springs and fields are part of ``energy``; the work of the others is the
        trajectory's ``work``.

    Initial conditions (for :func:`nhphys.simulate`): ``position`` ``(x, y)`` of the blade's
    contact point and ``heading`` ``theta`` (default zeros), ``phi`` (the rotor's angle
    relative to the sleigh, default 0), ``velocity`` (speed of the contact point along the
    blade), ``turning_rate`` (``omega = d theta/dt``) and ``spin`` (the rotor's rate relative to
    the sleigh, ``phi_dot``; 0 when locked), all default 0.

    Trajectory fields: ``pose`` (n, 3) ``(x, y, theta)``, ``phi`` (n,), ``velocity`` (n,),
    ``turning_rate`` (n,), ``omega`` (n, 3) the sleigh's body angular velocity
    ``(0, 0, turning_rate)``, ``spin`` (n,), ``rotor_momentum`` (n,)
    (``sigma = I_r (omega + phi_dot)``), ``energy`` (n,), ``constraint_residual`` (n,) (the
    sideways speed of the contact point, and the rotor's relative rate when locked), ``work``
    (n,) (of the force elements that are not potentials).

    Attributes
    ----------
    coordinates : RotorSleighModel
        The coordinate model (:mod:`nhphys.twins.models`) the integrators step.

    Examples
    --------
    >>> import nhphys
    >>> sleigh = nhphys.systems.RotorSleigh(mass=1.0, inertia=0.4, rotor_inertia=0.1,
    ...                                     offset=0.5)
    >>> traj = nhphys.simulate(sleigh, 10.0, 0.01, velocity=0.1, turning_rate=1.0, spin=2.0)
    >>> v, w = sleigh.equivalent_sleigh().sleigh_closed_form(traj.t, 0.1, 1.0)
    >>> bool(abs(traj.velocity - v).max() < 1e-4)
    True
    """

    group = "SE(2) x R"

    def __init__(self, mass, inertia, rotor_inertia, offset, locked=False, forces=None):
        self.mass = as_positive_scalar(mass, "mass")
        self.inertia = as_positive_scalar(inertia, "inertia")
        self.rotor_inertia = as_positive_scalar(rotor_inertia, "rotor_inertia")
        self.offset = _real(offset, "offset")
        if not isinstance(locked, (bool, np.bool_)):
            raise TypeError(f"Expected `locked` to be True or False, got {locked!r}.")
        self.locked = bool(locked)
        self.coordinates = RotorSleighModel(self.mass, self.inertia, self.rotor_inertia,
                                            self.offset, self.locked)
        # N only matters for rolling resistance, which is refused (standard gravity)
        self._set_forces(forces, self.mass * 9.81, rolls=False, motor_axis=np.array([0, 0, 1.0]))

    def __repr__(self):
        extra = f", forces={list(self.forces)!r}" if self.forces else ""
        return (f"RotorSleigh(mass={self.mass}, inertia={self.inertia}, "
                f"rotor_inertia={self.rotor_inertia}, offset={self.offset}, "
                f"locked={self.locked}{extra})")

    # -- initial conditions ------------------------------------------------------------------
    def initial_state(self, position=None, heading=0.0, phi=0.0, velocity=0.0,
                      turning_rate=0.0, spin=0.0):
        """Validated ``(pose (3,), phi, velocity, turning_rate, spin)``."""
        position = np.zeros(2) if position is None else as_float_array(position, "position")
        if position.shape != (2,):
            raise ValueError(f"Expected `position` to have shape (2,), got {position.shape}.")
        pose = np.append(position, _real(heading, "heading"))
        phi, v0 = _real(phi, "phi"), _real(velocity, "velocity")
        w0, s0 = _real(turning_rate, "turning_rate"), _real(spin, "spin")
        if self.locked and s0 != 0.0:
            raise ValueError(f"Expected `spin` = 0 with the rotor locked, got {s0}.")
        return pose, phi, v0, w0, s0

    def coordinates_from_conditions(self, **initial_conditions):
        """``(q0, v0)`` in coordinates ``q = (C_x, C_y, theta, phi)`` from the initial
        conditions (the keywords of :meth:`initial_state`)."""
        pose, phi, v0, w0, s0 = self.initial_state(**initial_conditions)
        q, v = self.coordinates.from_group(np.append(pose, phi)[None],
                                           np.array([[v0, 0.0, w0, s0]]))
        return initial_coordinates(self.coordinates, q[0], v[0])

    # -- trajectory fields -------------------------------------------------------------------
    def observables(self, saved):
        """Trajectory fields from saved coordinates ``{"q": (k, 4), "v": (k, 4)}``."""
        q = np.atleast_2d(saved["q"])
        v = np.atleast_2d(saved["v"])
        g, xi = self.coordinates.to_group(q, v)
        residual = np.abs(xi[:, 1])
        if self.locked:
            residual = np.hypot(residual, xi[:, 3])
        omega = np.zeros((len(q), 3))
        omega[:, 2] = xi[:, 2]  # the sleigh turns about the plane's normal only
        energy, work = self._energy_and_work(q, v, saved)
        return {
            "pose": g[:, :3],
            "phi": g[:, 3].copy(),
            "velocity": xi[:, 0],
            "turning_rate": xi[:, 2].copy(),
            "omega": omega,
            "spin": xi[:, 3].copy(),
            "rotor_momentum": self.rotor_inertia * (xi[:, 2] + xi[:, 3]),
            "energy": energy,
            "work": work,
            "constraint_residual": residual,
        }

    # -- closed forms ------------------------------------------------------------------------
    def equivalent_sleigh(self):
        """The plain sleigh that moves as this one: inertia ``I_s`` with the rotor free,
        ``I_s + I_r`` with it locked (a :class:`~nhphys.systems.KnifeEdge`)."""
        inertia = self.inertia + (self.rotor_inertia if self.locked else 0.0)
        return KnifeEdge(self.mass, inertia, self.offset)

    def closed_form(self, t, **initial_conditions):
        """Exact ``velocity``, ``turning_rate``, ``heading`` and rotor angle ``phi`` at times
        ``t`` (k,), each (k,), as a dict, from the initial conditions of
        :meth:`initial_state` (see the module docstring).

        With ``turning_rate`` or ``offset`` zero the sleigh runs straight, or turns at a
        constant rate; that is returned too.
        """
        pose0, phi0, v0, w0, s0 = self.initial_state(**initial_conditions)
        t = np.asarray(t, dtype=float)
        sleigh = self.equivalent_sleigh()
        v, w = sleigh.sleigh_closed_form(t, v0, w0)
        m, a = self.mass, self.offset
        if w0 == 0.0 or a == 0.0:
            theta = pose0[2] + w0 * t
        else:
            J = sleigh.inertia + m * a * a
            V = sleigh.terminal_speed(v0, w0)
            k, c = a * m * V / J, np.arctanh(v0 / V)

            def gd(u):  # the Gudermannian, int_0^u sech
                return 2.0 * np.arctan(np.tanh(0.5 * u))

            theta = pose0[2] + np.sign(w0) * np.sqrt(J / m) / a * (gd(k * t + c) - gd(c))
        if self.locked:
            phi = np.full_like(t, phi0)
        else:
            sigma = self.rotor_inertia * (w0 + s0)
            phi = phi0 + sigma * t / self.rotor_inertia - (theta - pose0[2])
        return {"velocity": v, "turning_rate": w, "heading": theta, "phi": phi}
