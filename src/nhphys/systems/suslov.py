"""The Suslov problem: a rigid body about a fixed point whose body angular velocity has no
component along a body-fixed axis ``a``.

Continuous equations (the reference the integrators are checked against)::

    I dOmega/dt = (I Omega) x Omega + lambda a,    a . Omega = 0,    dR/dt = R hat(Omega).

Differentiating the constraint gives the multiplier
``lambda = -a . I^-1 ((I Omega) x Omega) / (a . I^-1 a)``. The constraint force does no work,
so the energy ``E = 1/2 Omega . I Omega`` is conserved; the momentum is not.

The model, as the integrators read it:

* configuration group ``group = "SO(3)"``: the orientation ``R`` (body to space), body angular
  velocity ``Omega`` with ``dR/dt = R hat(Omega)``;
* reduced Lagrangian ``l(Omega) = 1/2 Omega . I Omega``: ``inertia`` ``I`` (3, 3) about the
  fixed point, no potential (``potential = None``);
* constraint: ``Omega`` in the subspace ``d = axis^perp``, given by ``constraint_basis`` (3, 2),
  an orthonormal basis of ``d`` (left-invariant: the same in every orientation);
* ``observables(saved)``: the trajectory fields from the saved states ``{"R": (n, 3, 3),
  "omega": (n, 3)}`` (and ``"work"`` (n,)).

Force elements
--------------
``Suslov(..., forces=[...])`` takes the elements of :mod:`nhphys.forces` that make a torque
about the fixed point: torques, forces at body points (``r`` from the fixed point, body frame:
the torque ``r x A^T f``; the fixed point carries the force itself), springs from a body point
to a point in space (the fixed point is at ``pivot``), angular damping about all axes and
motors. Elements that act only on the centre of mass or need a contact are refused with an
error naming them (a force with no ``point``, a uniform field, linear drag: the fixed point
holds the body still; spin friction, rolling resistance: there is no contact normal). With the
torque ``tau = tau_c + tau_a(t) - D Omega`` (springs; applied; damping) the equations are::

    I dOmega/dt = (I Omega) x Omega + tau + lambda a,     a . Omega = 0,

and the constraint's multiplier absorbs the torque's part that would turn the body about
``a``: ``lambda = -a . I^-1 ((I Omega) x Omega + tau) / (a . I^-1 a)``, i.e. only the torque
projected by ``P = I - a (I^-1 a)^T / (a . I^-1 a)`` (onto the forces compatible with
``a . dOmega/dt = 0``) moves the body. The spring's energy is part of ``energy``; the work of
the other elements is ``work`` (``energy - work`` is conserved). The discretisation, the
symmetric discrete Lagrange-d'Alembert pair in the retraction scheme's momentum, is derived in
:mod:`nhphys.twins.suslov`.
"""

import numpy as np

from nhphys._validation import as_inertia, as_rotation, as_vector3


def orthonormal_complement(axis: np.ndarray) -> np.ndarray:
    """Orthonormal basis (3, 2) of the plane perpendicular to ``axis`` (3,).

    For a coordinate axis the basis is made of coordinate axes exactly (no rounding), so
    principal-axis problems keep their exact structure: e3 -> (e2, -e1).
    """
    a = axis / np.linalg.norm(axis)
    e = np.zeros(3)
    e[int(np.argmin(np.abs(a)))] = 1.0
    b1 = np.cross(a, e)
    b1 /= np.linalg.norm(b1)
    b2 = np.cross(a, b1)
    return np.column_stack([b1, b2])


class Suslov:
    """Rigid body with a fixed point and the constraint ``axis . Omega = 0``.

    Parameters
    ----------
    inertia : array_like, shape (3, 3) or (3,)
        Inertia tensor about the fixed point in body axes: symmetric positive definite (a
        length-3 vector is a diagonal).
    axis : array_like, shape (3,)
        Nonzero body-fixed vector ``a``; only its direction matters.
    forces : list of nhphys.forces elements, optional
        Torques, forces at body points, springs, angular damping and motors (module docstring,
        "Force elements").
    pivot : array_like, shape (3,)
        Where the fixed point is in space (the springs' anchors are in space); default the
        origin.

    Examples
    --------
    >>> import nhphys
    >>> body = nhphys.systems.Suslov([1.0, 10.0, 100.0], axis=[0, 0, 1])
    >>> traj = nhphys.simulate(body, 1.0, 0.01, momentum0=[1, 1, 0])
    >>> float(traj.constraint_residual.max()) < 1e-14
    True
    """

    group = "SO(3)"  # the configuration group (see the module docstring)
    potential = None  # no potential energy: the reduced Lagrangian is the kinetic energy
    start_keywords = ("R0", "omega0", "momentum0")  # Retraction.start's own names

    reference_times = True  # reference_unpack takes the states' times (scheduled forces)

    def __init__(self, inertia, axis, forces=None, *, pivot=(0.0, 0.0, 0.0)):
        self.inertia = as_inertia(inertia, "inertia")
        a = as_vector3(axis, "axis")
        norm = np.linalg.norm(a)
        if norm == 0 or norm < 1e-300:
            raise ValueError(f"Expected `axis` to be a nonzero vector, got {a}.")
        self.axis = a / norm
        self.constraint_basis = orthonormal_complement(self.axis)
        self.inertia_inv = np.linalg.inv(self.inertia)
        self.forces = check_fixed_point_forces(forces)
        self.pivot = as_vector3(pivot, "pivot")

    def force_set(self, backend):
        """The ``ForceSet`` of the force elements on ``backend`` (``"python"`` or
        ``"cython"``), or None without them."""
        if not self.forces:
            return None
        from nhphys import _backend
        from nhphys.forces import build_force_set

        return build_force_set(self.forces, _backend.choose("forces", backend)[0])

    def potential_energy(self, R):
        """The springs' energy at orientations (..., 3, 3) -> (...)."""
        R = np.asarray(R, dtype=float)
        if not any(element.potential for element in self.forces):
            return np.zeros(R.shape[:-2])
        if getattr(self, "_twin_forces", None) is None:
            self._twin_forces = self.force_set("python")
        flat = R.reshape(-1, 3, 3)
        return np.array([self._twin_forces.potential(A, self.pivot) for A in flat]).reshape(
            R.shape[:-2])

    def torques(self, forces, t, R, omega):
        """``(tau_0, tau_a, D)`` of the ``ForceSet`` ``forces`` at ``(t, R)``: the torque
        about the fixed point (body frame) of every element but the damping ``tau_0`` (3,), of
        the applied ones ``tau_a`` (3,) (a callable sees ``omega``), and the damping matrix
        ``D`` (3, 3) (the torque ``-D Omega``)."""
        f, tau = np.zeros(3), np.zeros(3)
        forces.potential_wrench(R, self.pivot, f, tau)
        fa, tau_a = np.zeros(3), np.zeros(3)
        forces.applied_wrench(t, R, self.pivot, fa, tau_a)
        if forces.callables:
            forces.callable_wrench(t, R, self.pivot, np.zeros(3), omega, fa, tau_a)
        D = np.zeros((3, 3))
        forces.damping(R, np.array([0.0, 0.0, 1.0]), D)
        return tau + tau_a, tau_a, D

    @property
    def basis(self):
        """The orthonormal basis (3, 2) of the allowed velocities (``constraint_basis``)."""
        return self.constraint_basis

    def __repr__(self):
        extra = f", forces={list(self.forces)!r}" if self.forces else ""
        return f"Suslov(inertia={self.inertia.tolist()}, axis={self.axis.tolist()}{extra})"

    # -- continuous model -------------------------------------------------------------------
    def multiplier(self, omega, torque=None):
        """Constraint multiplier ``lambda``: (..., 3) -> (...), with an applied body
        ``torque`` (..., 3) when given."""
        omega = np.asarray(omega, dtype=float)
        gyro = np.cross(omega @ self.inertia, omega)  # (I Omega) x Omega, I symmetric
        if torque is not None:
            gyro = gyro + torque
        Ia = self.inertia_inv @ self.axis
        return -(gyro @ Ia) / (self.axis @ Ia)

    def omega_dot(self, omega, torque=None):
        """``dOmega/dt`` of the continuous equations: (..., 3) -> (..., 3), with an applied
        body ``torque`` (..., 3) when given."""
        omega = np.asarray(omega, dtype=float)
        gyro = np.cross(omega @ self.inertia, omega)
        if torque is not None:
            gyro = gyro + torque
        force = gyro + self.multiplier(omega, torque)[..., None] * self.axis
        return force @ self.inertia_inv  # I^-1 symmetric

    def energy(self, omega):
        """Kinetic energy ``1/2 Omega . I Omega``: (..., 3) -> (...)."""
        omega = np.asarray(omega, dtype=float)
        return 0.5 * np.einsum("...i,ij,...j->...", omega, self.inertia, omega)

    def constraint_residual(self, omega):
        """``|a . Omega|`` with ``a`` the unit axis: (..., 3) -> (...)."""
        return np.abs(np.asarray(omega, dtype=float) @ self.axis)

    # -- initial conditions -----------------------------------------------------------------
    def initial_omega(self, omega0=None, momentum0=None):
        """The initial body angular velocity from exactly one of ``omega0``, ``momentum0``.

        ``omega0`` must satisfy the constraint (to 1e-12 relative). From ``momentum0`` the
        velocity is the constrained one with the same momentum on the constraint space:
        ``Omega0 = B (B^T I B)^-1 B^T momentum0``; the component of ``momentum0`` along the
        constraint-force direction carries no information (it is set by the multiplier).
        """
        if (omega0 is None) == (momentum0 is None):
            raise ValueError("Expected exactly one of `omega0` and `momentum0`.")
        if momentum0 is not None:
            pi = as_vector3(momentum0, "momentum0")
            B = self.basis
            return B @ np.linalg.solve(B.T @ self.inertia @ B, B.T @ pi)
        omega = as_vector3(omega0, "omega0")
        violation = abs(omega @ self.axis)
        if violation > 1e-12 * max(1.0, np.linalg.norm(omega)):
            raise ValueError(
                f"Expected `omega0` to satisfy the constraint axis . omega0 = 0, "
                f"got axis . omega0 = {omega @ self.axis:.3g}."
            )
        return omega - (omega @ self.axis) * self.axis

    def observables(self, saved):
        """Trajectory fields from the saved states.

        Parameters
        ----------
        saved : dict
            ``"R"`` (n, 3, 3) orientations and ``"omega"`` (n, 3) body angular velocities.

        Returns
        -------
        dict
            ``R``, ``omega``, ``momentum`` ``I Omega`` (n, 3), ``energy`` (n,) (kinetic and
            the springs'), ``work`` (n,) (of the other force elements) and
            ``constraint_residual`` ``|a . Omega|`` (n,).
        """
        R, omega = saved["R"], saved["omega"]
        work = saved.get("work")
        return {
            "R": R,
            "omega": omega,
            "momentum": omega @ self.inertia,
            "energy": self.energy(omega) + self.potential_energy(R),
            "work": np.zeros(len(omega)) if work is None else np.asarray(work, dtype=float),
            "constraint_residual": self.constraint_residual(omega),
        }

    # -- the continuous flow as a first-order ODE, for `Reference` ---------------------------
    def reference_state(self, R0=None, omega0=None, momentum0=None):
        """Validated initial conditions packed as ``(R.ravel(), Omega, W)``, shape (13,)
        (``W`` the work of the force elements, 0 at the start)."""
        R0 = np.eye(3) if R0 is None else as_rotation(R0, "R0")
        omega = self.initial_omega(omega0=omega0, momentum0=momentum0)
        self._reference_forces = self.force_set("python")
        return np.concatenate([R0.ravel(), omega, [0.0]])

    def reference_rhs(self, t, state):
        """Right-hand side of the packed state: ``dR/dt = R hat(Omega)``, ``dOmega/dt`` (with
        the torque of the force elements) and ``dW/dt = (tau_a - D Omega) . Omega``."""
        R = state[:9].reshape(3, 3)
        omega = state[9:12]
        Rdot = np.cross(R, omega)  # row r of R hat(Omega) is r x Omega
        forces = getattr(self, "_reference_forces", None)
        if forces is None or forces.empty:
            return np.concatenate([Rdot.ravel(), self.omega_dot(omega), [0.0]])
        tau_0, tau_a, D = self.torques(forces, t, R, omega)
        Dw = D @ omega
        return np.concatenate([Rdot.ravel(), self.omega_dot(omega, tau_0 - Dw),
                               [(tau_a - Dw) @ omega]])

    def reference_unpack(self, states, times=None):
        """Packed states (n, 13) -> the saved states ``{"R": (n, 3, 3), "omega": (n, 3),
        "work": (n,)}``."""
        return {"R": states[:, :9].reshape(-1, 3, 3), "omega": states[:, 9:12],
                "work": states[:, 12]}


def check_fixed_point_forces(forces):
    """The validated force elements of a body about a fixed point: those that make a torque
    about it (a ``ValueError`` naming any other)."""
    from nhphys.forces import AngularDamping, Force, LinearDrag, RollingResistance, \
        UniformField, check_forces

    forces = check_forces(forces)
    for element in forces:
        if isinstance(element, Force) and element.point is None:
            raise ValueError("Force: a Suslov body turns about a fixed point, which carries a "
                             "force at it; give the force a body `point` (from the fixed point).")
        if isinstance(element, (UniformField, LinearDrag)):
            raise ValueError(f"{type(element).__name__}: a Suslov body's fixed point does not "
                             "move, so a force on it does nothing; use a Force at a body `point`"
                             " or a Torque.")
        if isinstance(element, RollingResistance) or (
                isinstance(element, AngularDamping) and element.about == "normal"):
            name = "RollingResistance" if isinstance(element, RollingResistance) \
                else "AngularDamping"
            raise ValueError(f"{name}: a Suslov body has no contact normal; use "
                             "AngularDamping(about='all').")
    return forces
