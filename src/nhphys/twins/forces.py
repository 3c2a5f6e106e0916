r"""Python twin of ``nhphys_ext.forces``: the applied forces of a rigid body, as data.

A :class:`ForceSet` holds every force element attached to one body (built from the public
elements of :mod:`nhphys.forces`) as plain arrays, and evaluates what a step needs:

* :meth:`ForceSet.potential_wrench`: the force (space, at the centre of mass) and torque (body
  frame, about the centre of mass) of the *potential* elements (springs, uniform fields) at a
  pose ``(A, a)``, and :meth:`ForceSet.potential` their energy ``V(A, a)``;
* :meth:`ForceSet.applied_wrench`: the same for the *applied* elements that depend on time and
  pose only (forces at body points, torques, motor torques and the constant part of a motor's
  speed control), at ``(t, A, a)``;
* :meth:`ForceSet.damping`: the elements linear in the velocities: a viscous drag ``c`` on the
  centre of mass (force ``-c v``) and a body-frame angular damping matrix ``D`` (torque
  ``-D Omega``) made of damping about all axes, about the contact normal (spin friction) and
  a motor's speed-control gain; and ``rolling`` (``mu``), the coefficient of rolling
  resistance, whose torque ``-mu N P_t Omega`` (``N`` the normal contact force,
  ``P_t = I - n_b n_b^T`` the projection off the body-frame contact normal ``n_b``) is linear in
  ``N`` and in ``Omega`` separately: the integrators treat it themselves (see
  :mod:`nhphys.twins.rolling`).

A force ``f`` at body point ``r`` (body frame, from the centre of mass) acts on the centre of
mass as ``f`` and as the body torque ``r x A^T f``; the body's velocity and angular velocity are
``v = p / m`` and ``Omega = I^-1 Pi``. The power of an element is ``f . v + tau . Omega``.

Discretisation (the discrete Lagrange-d'Alembert principle)
-----------------------------------------------------------
With forces, the discrete Lagrange-d'Alembert principle of a step ``(q_k, q_{k+1})`` adds to the
variation of the discrete action the discrete forces ``f^-_k . dq_k + f^+_k . dq_{k+1}``. The
symmetric midpoint pair used here is ``f^- = h/2 f(t_k, q_k, v_k)`` and ``f^+ = h/2
f(t_{k+1}, q_{k+1}, v_{k+1})``: each half kick of a RATTLE-type step takes the force at its own
end of the step. For a potential element (``f = -dV/dq``) this is the trapezoidal quadrature
``h/2 (V(q_k) + V(q_{k+1}))`` of the potential inside the discrete Lagrangian, so the scheme
stays variational, symmetric and second order, and ``E + V`` is conserved with bounded error.
For an element linear in the velocities the second half kick is implicit but linear; it is
solved exactly (see :mod:`nhphys.twins.rolling`). Swapping the ends and ``h -> -h`` maps the
pair to itself, so the step stays symmetric whenever the element is (conservative or
time-reversible); with dissipation the energy balance

    E_{k+1} + V_{k+1} - E_k - V_k = W_{k+1} - W_k + O(h^3),
    W_{k+1} - W_k = h/2 (P_k + P_{k+1})

holds, with ``P`` the power of the applied and dissipative elements at the two ends (the same
forces the kicks used): the trapezoidal rule on the work, of the method's order two, so the
conserved quantity ``E + V - W`` drifts by ``O(h^2)`` over a fixed time.

Schedules
---------
A time schedule of ``d`` components is a table of ``m`` breakpoints ``b`` (strictly increasing)
and, on each of the ``max(m - 1, 1)`` intervals ``i``, a cubic ``c0 + c1 s + c2 s^2 + c3 s^3``
of ``s = t - b_i`` per component (a piecewise linear schedule has ``c2 = c3 = 0``; a constant
one has ``m = 1`` and only ``c0``). Before ``b_0`` the schedule holds its first value and after
``b_{m-1}`` its last. All schedules of a set are concatenated into flat arrays:
``sched[j] = (break offset, break count, coefficient offset, dimension)``, the coefficients of
interval ``i``, component ``c`` at ``coef[offset + 4 (i d + c) + 0..3]``.
"""

import numpy as np

# the rows of ``ForceSet.points``: point (3), flags
FRAME_SPACE, FRAME_BODY = 0, 1


def evaluate_schedule(breaks, coef, sched, j, t, out):
    """The value of schedule ``j`` at time ``t`` into ``out`` (its first ``d`` entries).

    Parameters
    ----------
    breaks : ndarray (total breaks,)
    coef : ndarray (total coefficients,)
    sched : ndarray (n_schedules, 4) intp
        Per schedule: break offset, break count, coefficient offset, dimension.
    j : int
    t : float
    out : ndarray (>= d,)
    """
    b0, m, c0, d = sched[j]
    if m == 1:  # a constant (Schedule.coefficients: its other coefficients are zeros)
        for c in range(d):
            out[c] = coef[c0 + 4 * c]
        return
    i = 0
    tt = t
    if m > 1:
        if tt <= breaks[b0]:
            tt = breaks[b0]
        elif tt >= breaks[b0 + m - 1]:
            tt = breaks[b0 + m - 1]
            i = m - 2
        else:
            # the last break <= t (binary search over the strictly increasing breaks)
            lo, hi = 0, m - 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if breaks[b0 + mid] <= tt:
                    lo = mid
                else:
                    hi = mid
            i = lo
    s = tt - breaks[b0 + i]
    for c in range(d):
        k = c0 + 4 * (i * d + c)
        out[c] = coef[k] + s * (coef[k + 1] + s * (coef[k + 2] + s * coef[k + 3]))


class ForceSet:
    """Every force element of one body, as arrays (see the module docstring).

    Parameters
    ----------
    breaks : ndarray (nb,)
    coef : ndarray (nc,)
    sched : ndarray (ns, 4) intp
        The schedule table (module docstring).
    forces : ndarray (nf, 4) intp and ndarray (nf, 3)
        ``force_rows[i] = (schedule, frame, at_point, 0)`` and ``force_points[i]`` the body point
        (body frame, from the centre of mass; unused when ``at_point`` is 0): a force of value
        ``schedule(t)`` in the space (``FRAME_SPACE``) or body frame.
    torque_rows : ndarray (nt, 2) intp
        ``(schedule, frame)``: a torque about the centre of mass.
    springs : ndarray (ns, 8)
        ``(r (3) body point, anchor (3) space, stiffness, rest length)``.
    field : ndarray (3,)
        The total uniform force field on the centre of mass (space).
    motors : ndarray (nm, 5) and ndarray (nm, 3) intp
        ``motor_values[i] = (axis (3) body frame unit, gain, 0)`` and
        ``motor_rows[i] = (torque schedule or -1, target-speed schedule or -1, 0)``: a torque
        ``T(t) e + gain (w(t) - e . Omega) e``.
    drag, spin_all, spin_normal, rolling : float
        Viscous drag on the centre of mass, angular damping about all axes and about the contact
        normal, rolling-resistance coefficient.
    """

    def __init__(self, breaks, coef, sched, force_rows, force_points, torque_rows, springs,
                 field, motor_values, motor_rows, drag, spin_all, spin_normal, rolling):
        self.breaks = np.ascontiguousarray(breaks, dtype=float)
        self.coef = np.ascontiguousarray(coef, dtype=float)
        self.sched = np.ascontiguousarray(sched, dtype=np.intp).reshape(-1, 4)
        self.force_rows = np.ascontiguousarray(force_rows, dtype=np.intp).reshape(-1, 4)
        self.force_points = np.ascontiguousarray(force_points, dtype=float).reshape(-1, 3)
        self.torque_rows = np.ascontiguousarray(torque_rows, dtype=np.intp).reshape(-1, 2)
        self.springs = np.ascontiguousarray(springs, dtype=float).reshape(-1, 8)
        self.field = np.ascontiguousarray(field, dtype=float)
        self.motor_values = np.ascontiguousarray(motor_values, dtype=float).reshape(-1, 5)
        self.motor_rows = np.ascontiguousarray(motor_rows, dtype=np.intp).reshape(-1, 3)
        self.drag = float(drag)
        self.spin_all = float(spin_all)
        self.spin_normal = float(spin_normal)
        self.rolling = float(rolling)
        self.callables = ()  # Python-callable Force/Torque elements (twin only; see below)
        # a force's or torque's schedule has 3 components, a motor's 1 (the kernel reads that
        # many)
        dims = self.sched[:, 3]
        for rows, dim in ((self.force_rows[:, :1], 3), (self.torque_rows[:, :1], 3),
                          (self.motor_rows[:, :2], 1)):
            used = rows[rows >= 0]
            if np.any(dims[used] != dim):
                raise ValueError(f"Expected schedules of {dim} component(s) for these "
                                 f"elements, got {sorted(set(dims[used].tolist()))}.")

    @property
    def empty(self):
        """True when the set applies nothing (the step then skips it)."""
        return not (len(self.callables) or len(self.force_rows) or len(self.torque_rows)
                    or len(self.springs)
                    or np.any(self.field) or len(self.motor_rows) or self.drag
                    or self.spin_all or self.spin_normal or self.rolling)

    def potential(self, A, a):
        """``V(A, a)`` of the springs and the uniform field (float)."""
        V = -float(self.field @ a)
        for row in self.springs:
            d = a + A @ row[:3] - row[3:6]
            stretch = np.linalg.norm(d) - row[7]
            V += 0.5 * row[6] * stretch * stretch
        return V

    def potential_wrench(self, A, a, f, tau):
        """Add ``-dV`` of the springs and the field at ``(A, a)`` to ``f`` (space force at the
        centre of mass, (3,)) and ``tau`` (body torque, (3,))."""
        f += self.field
        for row in self.springs:
            r = row[:3]
            d = a + A @ r - row[3:6]
            length = np.linalg.norm(d)
            if length == 0.0:  # the force of a spring is continuous there only if rest length 0
                continue
            force = -row[6] * (length - row[7]) / length * d
            f += force
            tau += np.cross(r, A.T @ force)

    def applied_wrench(self, t, A, a, f, tau):
        """Add the forces, torques and motors' time-dependent torques at ``(t, A, a)``."""
        value = np.zeros(3)
        for row, r in zip(self.force_rows, self.force_points):
            evaluate_schedule(self.breaks, self.coef, self.sched, row[0], t, value)
            force = A @ value if row[1] == FRAME_BODY else value.copy()
            f += force
            if row[2]:
                tau += np.cross(r, A.T @ force)
        for row in self.torque_rows:
            evaluate_schedule(self.breaks, self.coef, self.sched, row[0], t, value)
            tau += A.T @ value if row[1] == FRAME_SPACE else value
        for values, row in zip(self.motor_values, self.motor_rows):
            e = values[:3]
            amount = 0.0
            if row[0] >= 0:
                evaluate_schedule(self.breaks, self.coef, self.sched, row[0], t, value)
                amount += value[0]
            if row[1] >= 0:
                evaluate_schedule(self.breaks, self.coef, self.sched, row[1], t, value)
                amount += values[3] * value[0]
            tau += amount * e

    def callable_wrench(self, t, A, a, v, omega, f, tau):
        """Add the Python-callable forces and torques at ``t``, pose ``(A, a)`` and the
        velocities ``v`` (space) and ``omega`` (body) of the start of the step.

        Raises
        ------
        ValueError
            A callable returned something other than 3 finite numbers (naming the element).
        """
        state = {"R": A.copy(), "position": a.copy(), "velocity": v.copy(),
                 "omega": omega.copy()}
        for element in self.callables:
            value = np.asarray(element.value(t, state), dtype=float)
            if value.shape != (3,) or not np.all(np.isfinite(value)):
                raise ValueError(
                    f"{type(element).__name__}: expected the callable {element.value!r} to "
                    f"return 3 finite numbers, got {value!r} at t = {t:.6g}."
                )
            if type(element).__name__ == "Force":
                force = A @ value if element.frame == "body" else value
                f += force
                if element.point is not None:
                    tau += np.cross(element.point, A.T @ force)
            else:
                tau += A.T @ value if element.frame == "space" else value

    def damping(self, A, n, D):
        """Add the angular damping matrix (body frame) at orientation ``A`` and contact normal
        ``n`` (space) to ``D`` (3, 3); return the drag coefficient ``c`` (force ``-c v``)."""
        nb = A.T @ n
        D += self.spin_all * np.eye(3) + np.outer(self.spin_normal * nb, nb)
        for values in self.motor_values:
            D += np.outer(values[3] * values[:3], values[:3])
        return self.drag

    def wrench(self, t, A, a, n, v, omega):
        """Everything a kick needs at one time, ``(f_pot, tau_pot, f_app, tau_app, D, drag)``:
        the potential and the applied wrenches (:meth:`potential_wrench`,
        :meth:`applied_wrench`, and the callables', which see the velocities ``v`` (space) and
        ``omega`` (body)), and the damping (:meth:`damping`, at the contact normal ``n``)."""
        f_pot, tau_pot, f_app, tau_app = np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)
        self.potential_wrench(A, a, f_pot, tau_pot)
        self.applied_wrench(t, A, a, f_app, tau_app)
        if self.callables:
            self.callable_wrench(t, A, a, v, omega, f_app, tau_app)
        D = np.zeros((3, 3))
        drag = self.damping(A, n, D)
        return f_pot, tau_pot, f_app, tau_app, D, drag

    # -- the kernel's Python entry points (for the parity tests) --------------------------
    def py_potential(self, A, a):
        return self.potential(np.asarray(A, dtype=float), np.asarray(a, dtype=float))

    def py_wrenches(self, t, A, a, n):
        """``(f_potential, tau_potential, f_applied, tau_applied, D, drag)`` at ``(t, A, a)``
        with contact normal ``n``."""
        A, a, n = (np.asarray(x, dtype=float) for x in (A, a, n))
        return self.wrench(t, A, a, n, np.zeros(3), np.zeros(3))


def tangent_projector(A, n):
    """``P_t = I - n_b n_b^T`` (3, 3) with ``n_b = A^T n``: rolling resistance acts on it."""
    nb = A.T @ n
    return np.eye(3) - np.outer(nb, nb)


def empty_set():
    """A :class:`ForceSet` with no element."""
    return ForceSet(np.zeros(0), np.zeros(0), np.zeros((0, 4)), np.zeros((0, 4)),
                    np.zeros((0, 3)), np.zeros((0, 2)), np.zeros((0, 8)), np.zeros(3),
                    np.zeros((0, 5)), np.zeros((0, 3)), 0.0, 0.0, 0.0, 0.0)
