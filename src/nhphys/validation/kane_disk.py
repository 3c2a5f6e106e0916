r"""A thin uniform disk rolling without slipping on a horizontal plane, by Kane's method.

An independent derivation of the rolling disk with ``sympy.physics.mechanics`` (no part of
nhphys's rolling construction enters it), used as the reference for nhphys's support-function
disk: :func:`equations` builds them, :func:`reference` integrates them with SciPy's DOP853,
and :func:`to_nhphys` / :func:`from_nhphys` translate states.

Coordinates and speeds
----------------------
``N`` is the ground frame (z up). The disk's orientation is three successive turns: heading
``q1`` about ``N.z`` (frame ``Y``), lean ``q2`` about ``Y.x`` (frame ``L``; ``q2 = 0`` is
upright), spin ``q3`` about ``L.y``, the disk's axis (frame ``D``). ``L.x`` is the rolling
direction and ``L.z`` points from the contact point to the centre, which is ``C + r L.z`` for
the contact point ``C = (x, y, 0)``. The generalised speeds are the components of the disk's
angular velocity in ``L``: ``omega = u1 L.x + u2 L.y + u3 L.z``. No slip makes the material
contact point's velocity zero, so the centre moves with ``omega x (r L.z)`` and the speeds are
independent (three degrees of freedom); gravity ``-m g N.z`` at the centre, and the contact force
does no work. The contact point on the ground moves with ``(omega - omega_L) x (r L.z)``
(``omega_L`` the angular velocity of ``L``), which gives ``dx/dt, dy/dt``.

State vector ``(q1, q2, q3, u1, u2, u3, x, y)``.

nhphys's ``Disk`` has its axis along body z; the body frame of the same disk is
``(D.z, D.x, D.y)`` (right-handed), so ``A = [D.z | D.x | D.y]`` in ground coordinates.
"""

import functools

import numpy as np


@functools.cache
def equations():
    """Kane's equations of the rolling disk.

    Returns
    -------
    dict
        ``q`` (q1, q2, q3), ``u`` (u1, u2, u3), ``params`` (m, g, r) as sympy symbols,
        ``mass_matrix_full`` and ``forcing_full`` (6 x 6, 6 x 1) for ``(q, u)``,
        ``contact_rate`` (2 x 1: dx/dt, dy/dt in terms of ``q, u``), ``kane`` (the
        ``KanesMethod`` object), ``bodies`` and ``loads``.
    """
    import sympy as sm
    import sympy.physics.mechanics as me

    q1, q2, q3 = me.dynamicsymbols("q1 q2 q3")
    u1, u2, u3 = me.dynamicsymbols("u1 u2 u3")
    m, g, r = sm.symbols("m g r", positive=True)

    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    D = L.orientnew("D", "Axis", [q3, L.y])
    omega = u1 * L.x + u2 * L.y + u3 * L.z
    D.set_ang_vel(N, omega)

    # kinematics: D's angular velocity from the coordinate rates equals omega
    rates = (q1.diff() * N.z + q2.diff() * Y.x + q3.diff() * L.y)
    kd = [sm.expand((rates - omega) & L.x), sm.expand((rates - omega) & L.y),
          sm.expand((rates - omega) & L.z)]

    O = me.Point("O")
    O.set_vel(N, 0)
    C = O.locatenew("C", 0)  # the contact point (its position is not needed for the dynamics)
    centre = C.locatenew("G", r * L.z)
    centre.set_vel(N, omega.cross(r * L.z))  # no slip: the material contact point is at rest

    inertia = me.inertia(L, m * r**2 / 4, m * r**2 / 2, m * r**2 / 4)
    disk = me.RigidBody("disk", centre, D, m, (inertia, centre))
    loads = [(centre, -m * g * N.z)]
    kane = me.KanesMethod(N, q_ind=[q1, q2, q3], u_ind=[u1, u2, u3], kd_eqs=kd)
    kane.kanes_equations([disk], loads)

    # the contact point on the ground: (omega - omega_L) x r L.z, with omega_L from the rates
    kdd = kane.kindiffdict()
    omega_L = (q1.diff() * N.z + q2.diff() * Y.x).subs(kdd)
    v_contact = (omega - omega_L).cross(r * L.z)
    contact_rate = sm.Matrix([sm.simplify(v_contact.dot(N.x).subs(kdd)),
                              sm.simplify(v_contact.dot(N.y).subs(kdd))])
    return {
        "q": (q1, q2, q3), "u": (u1, u2, u3), "params": (m, g, r),
        "mass_matrix_full": kane.mass_matrix_full, "forcing_full": kane.forcing_full,
        "contact_rate": contact_rate, "kane": kane, "bodies": [disk], "loads": loads,
    }


@functools.cache
def _numeric():
    import sympy as sm

    eq = equations()
    args = (*eq["q"], *eq["u"], *eq["params"])
    return (sm.lambdify(args, eq["mass_matrix_full"], "numpy"),
            sm.lambdify(args, eq["forcing_full"], "numpy"),
            sm.lambdify(args, eq["contact_rate"], "numpy"))


def rhs(mass, gravity, radius):
    """``f(t, y)`` of the state ``(q1, q2, q3, u1, u2, u3, x, y)`` (8,) for ``solve_ivp``."""
    M, F, V = _numeric()

    def f(t, y):
        args = (*y[:6], mass, gravity, radius)
        qu_dot = np.linalg.solve(np.asarray(M(*args), float), np.asarray(F(*args), float).ravel())
        return np.concatenate([qu_dot, np.asarray(V(*args), float).ravel()])

    return f


def reference(y0, t_eval, mass, gravity, radius, rtol=1e-11, atol=1e-13):
    """Integrate from ``y0`` (8,) with DOP853 and return the states at ``t_eval`` (n, 8)."""
    from scipy.integrate import solve_ivp

    sol = solve_ivp(rhs(mass, gravity, radius), (t_eval[0], t_eval[-1]), np.asarray(y0, float),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"DOP853 failed: {sol.message}")
    return sol.y.T


def _frames(q1, q2, q3):
    """Unit vectors ``L.x, L.y, L.z, D.x, D.z`` (each (..., 3)) in ground coordinates."""
    c1, s1, c2, s2 = np.cos(q1), np.sin(q1), np.cos(q2), np.sin(q2)
    Lx = np.stack([c1, s1, np.zeros_like(c1)], -1)
    Ly = np.stack([-c2 * s1, c2 * c1, s2], -1)
    Lz = np.stack([s2 * s1, -s2 * c1, c2], -1)
    c3, s3 = np.cos(q3)[..., None], np.sin(q3)[..., None]
    Dx = c3 * Lx - s3 * Lz
    Dz = s3 * Lx + c3 * Lz
    return Lx, Ly, Lz, Dx, Dz


def to_nhphys(y):
    """Kane state (8,) -> ``dict(R0, omega0, ground_point)`` for ``nhphys.simulate``."""
    q1, q2, q3, u1, u2, u3, x, yy = y
    Lx, Ly, Lz, Dx, Dz = _frames(np.float64(q1), np.float64(q2), np.float64(q3))
    A = np.column_stack([Dz, Dx, Ly])
    w = u1 * Lx + u2 * Ly + u3 * Lz
    return {"R0": A, "omega0": A.T @ w, "ground_point": np.array([x, yy, 0.0])}


def from_nhphys(R, omega, contact_point):
    """nhphys frames (``R`` (n, 3, 3), body ``omega`` (n, 3), ``contact_point`` (n, 3)) ->
    Kane states (n, 8); the heading ``q1`` is unwrapped along the run."""
    axis = R[:, :, 2]
    q1 = np.unwrap(np.arctan2(-axis[:, 0], axis[:, 1]))
    q2 = np.arctan2(axis[:, 2], np.hypot(axis[:, 0], axis[:, 1]))
    Lx, Ly, Lz, _, _ = _frames(q1, q2, np.zeros_like(q1))
    Dx = R[:, :, 1]
    q3 = np.unwrap(np.arctan2(-np.einsum("ni,ni->n", Dx, Lz), np.einsum("ni,ni->n", Dx, Lx)))
    w = np.einsum("nij,nj->ni", R, omega)
    u = np.stack([np.einsum("ni,ni->n", w, e) for e in (Lx, Ly, Lz)], -1)
    return np.column_stack([q1, q2, q3, u, contact_point[:, :2]])


def steady_spin(lean, heading_rate, mass, gravity, radius):
    """The ``u2`` of the steady circular motion with lean ``q2 = lean`` and heading rate
    ``dq1/dt = heading_rate`` (``u1 = 0``, ``u3 = heading_rate cos(lean)``).

    Kane's equations with ``du/dt = 0`` and ``u1 = 0`` leave one condition, linear in ``u2``;
    it is solved here in closed form (sympy), then evaluated.
    """
    eq = _steady_condition()
    q2, w, m, g, r, _ = eq["symbols"]
    value = eq["u2"].subs({q2: lean, w: heading_rate, m: mass, g: gravity, r: radius})
    return float(value)


@functools.cache
def _steady_condition():
    import sympy as sm

    eq = equations()
    q2 = eq["q"][1]
    u1, u2, u3 = eq["u"]
    m, g, r = eq["params"]
    lean, w, spin = sm.symbols("lean w u2_s", real=True)
    F = eq["forcing_full"][3:, :]
    # at rest in the rates: u1 = 0, u3 = w cos(lean), du/dt = 0, i.e. F = 0
    subs = {q2: lean, u1: 0, u3: w * sm.cos(lean), u2: spin}
    conds = [sm.simplify(f.subs(subs)) for f in F]
    conds = [c for c in conds if c != 0]
    sol = sm.solve(conds[0], spin)
    if len(sol) != 1:
        raise RuntimeError(f"Expected one steady spin, got {sol}.")
    return {"symbols": (lean, w, m, g, r, spin), "u2": sol[0], "conditions": conds}
