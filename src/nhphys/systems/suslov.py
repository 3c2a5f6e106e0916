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
  "omega": (n, 3)}``.
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

    def __init__(self, inertia, axis):
        self.inertia = as_inertia(inertia, "inertia")
        a = as_vector3(axis, "axis")
        norm = np.linalg.norm(a)
        if norm == 0 or norm < 1e-300:
            raise ValueError(f"Expected `axis` to be a nonzero vector, got {a}.")
        self.axis = a / norm
        self.constraint_basis = orthonormal_complement(self.axis)
        self.inertia_inv = np.linalg.inv(self.inertia)

    @property
    def basis(self):
        """The orthonormal basis (3, 2) of the allowed velocities (``constraint_basis``)."""
        return self.constraint_basis

    def __repr__(self):
        return f"Suslov(inertia={self.inertia.tolist()}, axis={self.axis.tolist()})"

    # -- continuous model -------------------------------------------------------------------
    def multiplier(self, omega):
        """Constraint multiplier ``lambda``: (..., 3) -> (...)."""
        omega = np.asarray(omega, dtype=float)
        gyro = np.cross(omega @ self.inertia, omega)  # (I Omega) x Omega, I symmetric
        Ia = self.inertia_inv @ self.axis
        return -(gyro @ Ia) / (self.axis @ Ia)

    def omega_dot(self, omega):
        """``dOmega/dt`` of the continuous equations: (..., 3) -> (..., 3)."""
        omega = np.asarray(omega, dtype=float)
        gyro = np.cross(omega @ self.inertia, omega)
        force = gyro + self.multiplier(omega)[..., None] * self.axis
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
            ``R``, ``omega``, ``momentum`` ``I Omega`` (n, 3), ``energy`` (n,) and
            ``constraint_residual`` ``|a . Omega|`` (n,).
        """
        R, omega = saved["R"], saved["omega"]
        return {
            "R": R,
            "omega": omega,
            "momentum": omega @ self.inertia,
            "energy": self.energy(omega),
            "constraint_residual": self.constraint_residual(omega),
        }

    # -- the continuous flow as a first-order ODE, for `Reference` ---------------------------
    def reference_state(self, R0=None, omega0=None, momentum0=None):
        """Validated initial conditions packed as ``(R.ravel(), Omega)``, shape (12,)."""
        R0 = np.eye(3) if R0 is None else as_rotation(R0, "R0")
        omega = self.initial_omega(omega0=omega0, momentum0=momentum0)
        return np.concatenate([R0.ravel(), omega])

    def reference_rhs(self, t, state):
        """Right-hand side of the packed state: ``dR/dt = R hat(Omega)``, ``dOmega/dt``."""
        R = state[:9].reshape(3, 3)
        omega = state[9:]
        Rdot = np.cross(R, omega)  # row r of R hat(Omega) is r x Omega
        return np.concatenate([Rdot.ravel(), self.omega_dot(omega)])

    def reference_unpack(self, states):
        """Packed states (n, 12) -> the saved states ``{"R": (n, 3, 3), "omega": (n, 3)}``."""
        return {"R": states[:, :9].reshape(-1, 3, 3), "omega": states[:, 9:]}
