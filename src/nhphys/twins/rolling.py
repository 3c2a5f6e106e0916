r"""Python twin of ``nhphys_ext.rolling``: a convex rigid body rolling without slipping on a
surface, integrated by a constraint-adapted, symmetric, second-order Lie-group scheme.

Notation and conventions
------------------------
``A`` body to space, ``a`` centre of mass (space), ``Pi = I Omega`` body angular momentum about
the centre of mass (body frame), ``p = m da/dt`` linear momentum (space), ``k`` the unit vector
opposite to gravity. ``s`` is the contact point on the body measured from the centre of mass
(body frame), ``x`` the contact point on the ground, ``n`` the ground normal at ``x`` (toward
the body). The body's normal points into the body, so contact means ``A n_M(s) = n``: ``s`` is
the point of the body whose *outward* normal is ``-A^T n``, the body's support point in that
direction.

Contact geometry
----------------
For a body pose ``(A, a)`` the contact pair is found on the ground chart: unknown ``z`` (ground
chart coordinates), ``n = n(z)``, ``s = S(-A^T n)``, ``P = a + A s`` the body's lowest point
along ``n``, and the two conditions ``R(z) = J_H(z)^T (P - x(z)) = 0`` (``P - x`` along the
normal). Then ``gap = n . (P - x)`` is the signed distance of body and ground. Newton on ``z``
uses, with ``dn = -J_H W_H dz`` (Weingarten) and the support map's derivative ``S'``,

    dR/dz = (H_H . (P - x)) + J_H^T (A S' A^T J_H W_H - J_H).

The support map's derivative: with into-body normal ``n_M = -d/|d|`` at ``s = S(d)``,
``L_M ds = -dn_M = dd`` on the tangent plane, so in the body chart (``ds = J_M dy``)
``II_M dy = J_M^T dd`` and ``S'(d) = J_M II_M^-1 J_M^T / |d|`` (3 x 3, rank 2). A singular
``dR/dz`` is the irregular contact of the rolling equations (``Lambda`` singular).

Shapes that are not strictly convex (:class:`Disk`, :class:`Cylinder`, :class:`Wheel`) give
their support map directly, with no chart: a thin disk of radius ``rho`` round the body z axis
has ``s = rho w - com`` with ``w`` the unit projection of ``d`` on its plane and
``S' = rho / |d_perp| t t^T`` (``t = e_z x w`` the rim tangent): rank one, since the contact
can only move along the rim. Nothing above needs ``S'`` to be invertible (only ``dR/dz`` must
be), so the same contact solve and the same step serve; ``n_M`` is then the normal of the
supporting plane, ``-d/|d|``. Where a support map stops describing a single contact point
(``d`` along a disk's axis: the disk lies flat; ``d`` in a cylinder's mid plane: it lies on its
side; a wheel lying flat) it returns a contact event status (``FLAT``, ``RIM_TO_SIDE``,
``INNER_CONTACT``) instead of a point, which the contact solve and the step pass up unchanged.

Sensitivities of the contact to the pose, needed by the step's Newton Jacobian (``A -> A
exp(hat(delta))``, ``a -> a + da``), follow by implicit differentiation of ``R = 0``:

    dP = A Q delta + da,  Q = -hat(s) - S' hat(A^T n),
    dz = -(dR/dz)^-1 J_H^T (A Q delta + da),
    ds = S' (-hat(A^T n) delta + A^T J_H W_H dz),

and, because the pair is a closest approach, ``dgap = (s x A^T n) . delta + n . da``.

The step
--------
The body is a free rigid body on SO(3) x R^3 with a contact force ``F`` applied at the contact
point; the gap is a holonomic constraint and the velocity of the material contact point a
nonholonomic one. One step of size ``h`` (RATTLE-type, symmetric):

1. half kick at the old contact point: ``Pi_half = Pi + h/2 s_k x (A_k^T F)``,
   ``p_half = p + h/2 (F - m g k)``;
2. drift: ``A_{k+1} = A_k tau(xi)`` with ``Pi_half = J_l(xi)^-T I xi / h`` (the discrete
   Legendre transform of the free body, :mod:`nhphys.twins.suslov`), ``a_{k+1} = a_k + h
   p_half / m``;
3. ``(xi, F)`` (6 unknowns) solve the momentum relation (3), ``gap(A_{k+1}, a_{k+1}) = 0`` (1)
   and the tangential part of the symmetric discrete no-slip condition (2)
   ``(a_{k+1} - a_k) + A_mid (phi x s_mid) = 0``, where ``phi = log(tau(xi))`` is the rotation
   vector of the step, ``A_mid = A_k exp(phi/2)`` the geodesic midpoint of ``A_k`` and
   ``A_{k+1}`` (for Cayley, ``A_k cay(xi/2)`` would not be: ``cay(xi) cay(-xi/2) != cay(xi/2)``,
   and the step would lose its symmetry), and ``s_mid`` the contact point of the pose
   ``(A_mid, (a_k + a_{k+1})/2)``, tangential to its ground normal;
4. ``Pi <- J_r(xi)^-T I xi / h = tau(xi)^T Pi_half``, then a second half kick with a force
   ``F'`` at the new contact point ``s_{k+1}``: ``Pi += h/2 s x u``, ``p += h/2 (A u - m g k)``,
   ``u = A^T F'`` chosen so the contact point is at rest, ``p/m + A (Omega x s) = 0``. With
   ``Omega = I^-1 Pi`` this is linear:
   ``h/2 (I_3/m - hat(s) I^-1 hat(s)) u = -(A^T p_half/m - h/2 g A^T k + (I^-1 Pi) x s)``.

Newton on step 3 has the analytic Jacobian (``delta_1 = J_r(xi) dxi``,
``delta_mid = J_mid dxi`` with ``J_mid = J_r^exp(phi/2) (dphi/dxi) / 2``,
``da_{k+1} = h^2/(2m) dF``):

* momentum rows: ``[dPi^-/dxi, -h/2 hat(s_k) A_k^T]``;
* gap row: ``[(s_1 x A_1^T n_1)^T J_r(xi), h^2/(2m) n_1^T]``;
* no-slip rows: ``T^T [A_mid(-hat(phi x s_mid) J_mid - hat(s_mid) dphi/dxi
  + hat(phi) ds_mid/ddelta J_mid), h^2/(2m) I + h^2/(4m) A_mid hat(phi) ds_mid/da]`` with ``T`` an
  orthonormal tangent basis at the mid contact (its own variation multiplies the residual,
  which vanishes at the root, so it is left out).

Fourth order: the step is symmetric, so the triple jump ``Phi_{g1 h} Phi_{g0 h} Phi_{g1 h}``
with ``g1 = 1/(2 - 2^(1/3))``, ``g0 = 1 - 2 g1`` is symmetric and of order four
(``substeps``); every sub-step keeps the constraints, so the composition does too.

Replacing ``h`` by ``-h`` maps the end state back to the start (steps 1-4 read backwards), so
the scheme is symmetric and of even order. The contact and no-slip conditions hold at every
step to the Newton tolerance; ``A`` is kept on SO(3) as in :mod:`nhphys.twins.suslov`.

Saved frame layout (``FRAME_SIZE`` numbers): ``A`` (9, row-major), ``a`` (3), ``Pi`` (3),
``p`` (3), ``s`` (3), ``x`` (3), ``n`` (3, ground normal at ``x``), ``n_M`` (3, the body's
into-body normal at ``s`` evaluated from its own chart), ``gap`` (1), and the normal contact
force ``n . (F + F')/2`` of the step that ended there (1; 0 in the initial frame). A negative
normal force means the ground pulls the body: a real body would lift off there, while this
model keeps the contact.
"""

import numpy as np

from nhphys.twins import so3
from nhphys.twins.suslov import (
    EXP,
    momentum_minus_jacobian,
    momentum_pair,
    reorthonormalize,
)

FRAME_SIZE = 32
ROUNDOFF = 8 * np.finfo(float).eps  # residuals this small (relative) are converged
CONTACT_FAILED, STEP_FAILED, SINGULAR_CONTACT, SUPPORT_FAILED = 1, 2, 3, 4
# contact events: the shape's description of the contact as one point breaks down
FLAT, RIM_TO_SIDE, INNER_CONTACT = 5, 6, 7
EVENTS = (FLAT, RIM_TO_SIDE, INNER_CONTACT)


def hat(v):
    return so3.hat(np.asarray(v, dtype=float)[None])[0]


def jac_right(xi, map_code):
    """Right Jacobian of ``tau`` at ``xi``: (3,) -> (3, 3)."""
    f = so3.exp_jac_right if map_code == EXP else so3.cay_jac_right
    return f(xi[None])[0]


def retract(xi, map_code):
    return (so3.exp if map_code == EXP else so3.cay)(xi[None])[0]


CAYLEY_SERIES_SWITCH = 0.1
_G = (1.0, -1 / 12, 1 / 80, -1 / 448, 1 / 2304, -1 / 11264, 1 / 53248, -1 / 245760)
_DG = (-1 / 6, 1 / 20, -3 / 224, 1 / 288, -5 / 5632, 3 / 13312, -7 / 122880, 1 / 69632)


def _horner(coeffs, t2):
    out = 0.0
    for c in reversed(coeffs):
        out = out * t2 + c
    return out


def rotation_vector(xi, map_code):
    """``phi = log(tau(xi))`` and ``dphi/dxi`` (3,), (3, 3).

    For exp, ``phi = xi``. For Cayley, ``cay(xi)`` turns by ``2 arctan(t/2)``, ``t = |xi|``, so
    ``phi = g(t) xi`` with ``g = 2 arctan(t/2)/t`` and ``dphi = g I + (g'(t)/t) xi xi^T``
    (Taylor series below ``CAYLEY_SERIES_SWITCH``, where the closed form of ``g'/t`` cancels).
    """
    if map_code == EXP:
        return xi.copy(), np.eye(3)
    t = float(np.linalg.norm(xi))
    if t < CAYLEY_SERIES_SWITCH:
        g, dg = _horner(_G, t * t), _horner(_DG, t * t)
    else:
        g = 2.0 * np.arctan(0.5 * t) / t
        dg = (t / (1.0 + 0.25 * t * t) - 2.0 * np.arctan(0.5 * t)) / t**3
    return g * xi, g * np.eye(3) + dg * np.outer(xi, xi)


def tangent_basis(n):
    """Orthonormal (3, 2) basis of the plane perpendicular to the unit vector ``n``."""
    e = np.zeros(3)
    e[int(np.argmin(np.abs(n)))] = 1.0
    t1 = np.cross(n, e)
    t1 /= np.linalg.norm(t1)
    return np.column_stack([t1, np.cross(n, t1)])


class ChartShape:
    """A strictly convex closed chart surface as a body shape, seen from the centre of mass.

    Parameters
    ----------
    surface : twin surface object
        Per-point surface implementation (``nhphys.twins.surfaces``) in the shape's frame.
    com : ndarray, shape (3,)
        Centre of mass in the shape's frame.
    """

    def __init__(self, surface, com):
        self.surface = surface
        self.com = np.asarray(com, dtype=float)

    def support(self, d):
        """Support point in direction ``d`` (3,) (body frame, any length).

        Returns ``(status, s (3,), S' (3, 3), n_M (3,))``: status 0 on success, ``s`` from the
        centre of mass, ``S' = ds/dd``, ``n_M`` the into-body normal from the chart.
        """
        norm = np.linalg.norm(d)
        unit = d / norm
        status, chart, u, v = self.surface.support(unit)
        if status != 0:
            return SUPPORT_FAILED, np.zeros(3), np.zeros((3, 3)), np.zeros(3)
        r, J, H = self.surface.evaluate(chart, u, v)
        n_in = -unit
        II = np.einsum("i,iab->ab", n_in, H)
        Sp = J @ np.linalg.solve(II, J.T) / norm
        cross = np.cross(J[:, 0], J[:, 1])
        n_chart = cross / np.linalg.norm(cross)
        n_M = n_chart if n_chart @ n_in > 0 else -n_chart
        return 0, r - self.com, Sp, n_M


def _rim(d, sin_flat):
    """The rim direction of a support point of a circle round the body z axis.

    ``d`` (3,) a direction; returns ``(status, w, t, |d_perp|, |d|)`` with ``d_perp`` the
    projection of ``d`` on the circle's plane, ``w = d_perp / |d_perp|`` (the rim direction)
    and ``t = e_z x w`` (the rim tangent). Status ``FLAT`` when ``d`` is within the angle
    ``asin(sin_flat)`` of the axis: the circle lies flat in the supporting plane and the contact
    is no longer one point.
    """
    norm = float(np.linalg.norm(d))
    perp = float(np.hypot(d[0], d[1]))
    if not perp > sin_flat * norm:
        return FLAT, None, None, perp, norm
    w = np.array([d[0] / perp, d[1] / perp, 0.0])
    t = np.array([-w[1], w[0], 0.0])
    return 0, w, t, perp, norm


class Disk:
    """A thin disk of radius ``radius`` in the body's xy plane, centred at the shape origin.

    The support point in direction ``d`` is on the rim, ``s = rho w - com`` with ``w`` the unit
    projection of ``d`` on the disk plane; ``S' = ds/dd = rho / |d_perp| t t^T`` (rank one: the
    contact moves only along the rim tangent ``t``). The disk has no normal of its own on the
    rim: ``n_M = -d/|d|``, the normal of the supporting plane, so ``A n_M = n`` by construction.

    Parameters
    ----------
    radius : float
    com : ndarray, shape (3,)
        Centre of mass in the shape's frame.
    flat_angle : float
        The ``FLAT`` event: ``d`` within this angle (rad) of the disk's axis.
    """

    def __init__(self, radius, com, flat_angle):
        self.radius = float(radius)
        self.com = np.asarray(com, dtype=float)
        self.sin_flat = float(np.sin(flat_angle))

    def support(self, d):
        st, w, t, perp, norm = _rim(d, self.sin_flat)
        if st:
            return st, np.zeros(3), np.zeros((3, 3)), np.zeros(3)
        s = self.radius * w - self.com
        return 0, s, (self.radius / perp) * np.outer(t, t), -np.asarray(d, float) / norm


class Cylinder:
    """A solid circular cylinder round the body z axis, ``|z| <= half_length``.

    Support point: the rim point of the end face on the side of ``d``,
    ``s = rho w + L sign(d_z) e_z - com``, ``S' = rho / |d_perp| t t^T``, ``n_M = -d/|d|``.
    Events: ``FLAT`` (``d`` within ``flat_angle`` of the axis: standing on an end face) and
    ``RIM_TO_SIDE`` (``d`` within ``side_angle`` of the mid plane: the contact leaves the rim
    for a line on the side).
    """

    def __init__(self, radius, half_length, com, flat_angle, side_angle):
        self.radius = float(radius)
        self.half_length = float(half_length)
        self.com = np.asarray(com, dtype=float)
        self.sin_flat = float(np.sin(flat_angle))
        self.sin_side = float(np.sin(side_angle))

    def support(self, d):
        st, w, t, perp, norm = _rim(d, self.sin_flat)
        if st:
            return st, np.zeros(3), np.zeros((3, 3)), np.zeros(3)
        if not abs(d[2]) > self.sin_side * norm:
            return RIM_TO_SIDE, np.zeros(3), np.zeros((3, 3)), np.zeros(3)
        s = self.radius * w - self.com
        s[2] += self.half_length if d[2] > 0 else -self.half_length
        return 0, s, (self.radius / perp) * np.outer(t, t), -np.asarray(d, float) / norm


class Wheel:
    """A torus: a tube of radius ``tube_radius`` round the circle of radius ``radius`` in the
    body's xy plane (a tyre).

    Only the tube's outer half can be a support point: ``s = R w + r u - com`` with ``u =
    d/|d|``, ``S' = R / |d_perp| t t^T + r / |d| (I - u u^T)`` (positive definite on the tangent
    plane), ``n_M = -u``. ``INNER_CONTACT``: ``d`` within ``flat_angle`` of the axis, where the
    contact reaches the top of the tube; past it the ground would touch the inner part of the
    tube (or the whole top circle at once), which no single support point describes.
    """

    def __init__(self, radius, tube_radius, com, flat_angle):
        self.radius = float(radius)
        self.tube_radius = float(tube_radius)
        self.com = np.asarray(com, dtype=float)
        self.sin_flat = float(np.sin(flat_angle))

    def support(self, d):
        st, w, t, perp, norm = _rim(d, self.sin_flat)
        if st:
            return INNER_CONTACT, np.zeros(3), np.zeros((3, 3)), np.zeros(3)
        u = np.asarray(d, float) / norm
        s = self.radius * w + self.tube_radius * u - self.com
        Sp = (self.radius / perp) * np.outer(t, t) + (self.tube_radius / norm) * (
            np.eye(3) - np.outer(u, u))
        return 0, s, Sp, -u


def ground_geometry(ground, chart, z):
    """``(x, J, H, n, W)`` of the ground at chart coordinates ``z`` (2,)."""
    x, J, H = ground.evaluate(chart, z[0], z[1])
    cross = np.cross(J[:, 0], J[:, 1])
    n = ground.normal_sign(chart) * cross / np.linalg.norm(cross)
    g = J.T @ J
    II = np.einsum("i,iab->ab", n, H)
    return x, J, H, n, np.linalg.solve(g, II)


class Contact:
    """The contact pair of one pose, with its sensitivities (see the module docstring)."""

    __slots__ = ("chart", "z", "s", "Sp", "n_M", "x", "n", "gap", "ds_ddelta", "ds_da")


def contact(shape, ground, A, a, chart, z, tol, max_iter):
    """Solve for the contact pair of pose ``(A, a)`` from ground chart guess ``(chart, z)``.

    Returns ``(status, Contact)``; status 0 on success, else ``CONTACT_FAILED``,
    ``SINGULAR_CONTACT``, or the support map's status (``SUPPORT_FAILED`` or an event).
    """
    z = np.array(z, dtype=float)
    c = Contact()
    for _ in range(max_iter):
        x, J, H, n, W = ground_geometry(ground, chart, z)
        status, s, Sp, n_M = shape.support(-A.T @ n)
        if status != 0:
            return status, c
        P = a + A @ s
        R = J.T @ (P - x)
        dRdz = np.einsum("iab,i->ab", H, P - x) + J.T @ (A @ Sp @ A.T @ J @ W - J)
        det = np.linalg.det(dRdz)
        if not np.isfinite(det) or abs(det) <= 1e-14 * np.abs(dRdz).max() ** 2:
            return SINGULAR_CONTACT, c
        dz = np.linalg.solve(dRdz, R)
        z = z - dz
        _, chart, z[0], z[1] = ground.rechart_point(chart, z[0], z[1])
        if not np.all(np.isfinite(z)):
            return CONTACT_FAILED, c
        if np.linalg.norm(dz) <= tol * (1.0 + np.linalg.norm(z)):
            break
    else:
        return CONTACT_FAILED, c
    # final evaluation at the converged coordinates, with the sensitivities
    x, J, H, n, W = ground_geometry(ground, chart, z)
    status, s, Sp, n_M = shape.support(-A.T @ n)
    if status != 0:
        return status, c
    P = a + A @ s
    dRdz = np.einsum("iab,i->ab", H, P - x) + J.T @ (A @ Sp @ A.T @ J @ W - J)
    An = A.T @ n
    Q = -hat(s) - Sp @ hat(An)
    dz_ddelta = -np.linalg.solve(dRdz, J.T @ A @ Q)
    dz_da = -np.linalg.solve(dRdz, J.T)
    c.chart, c.z, c.s, c.Sp, c.n_M, c.x, c.n = chart, z, s, Sp, n_M, x, n
    c.gap = n @ (P - x)
    c.ds_ddelta = Sp @ (-hat(An) + A.T @ J @ W @ dz_ddelta)
    c.ds_da = Sp @ (A.T @ J @ W @ dz_da)
    return 0, c


def rolling_step(shape, ground, mass, inertia, inertia_inv, gravity, up, h, map_code,
                 newton_tol, max_newton, state):
    """One step. ``state`` is a dict with ``A, a, Pi, p, s, F, xi, chart, z`` (see
    :func:`rolling_run`); returns ``(status, new_state, contact_at_end)``."""
    A, a, Pi, p, s_k = state["A"], state["a"], state["Pi"], state["p"], state["s"]
    xi, F = state["xi"].copy(), state["F"].copy()
    chart, z = state["chart"], state["z"].copy()
    chart_mid, z_mid = chart, z.copy()
    weight = mass * gravity * up
    c2 = h * h / (2 * mass)
    kick_row = 0.5 * h * hat(s_k) @ A.T  # Pi_half = Pi + kick_row @ F
    converged = False
    for _ in range(max_newton):
        A1 = A @ retract(xi, map_code)
        a1 = a + (h / mass) * (p + 0.5 * h * (F - weight))
        st, c1 = contact(shape, ground, A1, a1, chart, z, newton_tol, max_newton)
        if st:
            return st, None, None
        phi, dphi = rotation_vector(xi, map_code)
        Am = A @ so3.exp(0.5 * phi[None])[0]  # the geodesic midpoint of A_k and A_{k+1}
        am = 0.5 * (a + a1)
        st, cm = contact(shape, ground, Am, am, chart_mid, z_mid, newton_tol, max_newton)
        if st:
            return st, None, None
        chart, z, chart_mid, z_mid = c1.chart, c1.z, cm.chart, cm.z
        pi_minus, _ = momentum_pair(xi, inertia, h, map_code)
        T = tangent_basis(cm.n)
        kick = kick_row @ F
        N = (a1 - a) + Am @ np.cross(phi, cm.s)
        E = np.concatenate([pi_minus - Pi - kick, [c1.gap], T.T @ N])
        # residuals at the level of rounding in their own terms: nothing left to gain
        if (np.abs(E[:3]).max() <= ROUNDOFF * (np.abs(pi_minus).max() + np.abs(Pi).max()
                                               + np.abs(kick).max())
                and abs(E[3]) <= ROUNDOFF * (np.abs(c1.x).max() + np.abs(c1.s).max())
                and np.abs(E[4:]).max() <= ROUNDOFF * (np.abs(a).max() + np.abs(cm.s).max())):
            converged = True
            break

        Jm = 0.5 * jac_right(0.5 * phi, EXP) @ dphi
        jac = np.zeros((6, 6))
        jac[:3, :3] = momentum_minus_jacobian(xi, inertia, h, map_code)
        jac[:3, 3:] = -kick_row
        jac[3, :3] = np.cross(c1.s, A1.T @ c1.n) @ jac_right(xi, map_code)
        jac[3, 3:] = c2 * c1.n
        dN_dxi = Am @ (-hat(np.cross(phi, cm.s)) @ Jm - hat(cm.s) @ dphi
                       + hat(phi) @ cm.ds_ddelta @ Jm)
        dN_dF = c2 * np.eye(3) + 0.5 * c2 * Am @ hat(phi) @ cm.ds_da
        jac[4:, :3] = T.T @ dN_dxi
        jac[4:, 3:] = T.T @ dN_dF
        delta = np.linalg.solve(jac, E)
        xi -= delta[:3]
        F -= delta[3:]
        if not (np.all(np.isfinite(xi)) and np.all(np.isfinite(F))):
            return STEP_FAILED, None, None
        # the floors: a turn of 1e-15 |h| rad per step, a force of newton_tol m g
        if (np.linalg.norm(delta[:3]) <= newton_tol * np.linalg.norm(xi) + 1e-15 * abs(h)
                and np.linalg.norm(delta[3:]) <= newton_tol * (np.linalg.norm(F) + mass * gravity)):
            converged = True
            break
    if not converged or (map_code == EXP and np.linalg.norm(xi) >= np.pi):
        return STEP_FAILED, None, None

    # the converged pose and its contact
    A1 = reorthonormalize(A @ retract(xi, map_code))
    p_half = p + 0.5 * h * (F - weight)
    a1 = a + (h / mass) * p_half
    st, c1 = contact(shape, ground, A1, a1, chart, z, newton_tol, max_newton)
    if st:
        return st, None, None
    _, pi_end = momentum_pair(xi, inertia, h, map_code)
    s1 = c1.s
    S = hat(s1)
    K = 0.5 * h * (np.eye(3) / mass - S @ inertia_inv @ S)
    rhs = -(A1.T @ p_half / mass - 0.5 * h * gravity * (A1.T @ up)
            + np.cross(inertia_inv @ pi_end, s1))
    u = np.linalg.solve(K, rhs)
    new = {
        "A": A1, "a": a1,
        "Pi": pi_end + 0.5 * h * np.cross(s1, u),
        "p": p_half + 0.5 * h * (A1 @ u - weight),
        "s": s1, "F": F, "xi": xi, "chart": c1.chart, "z": c1.z,
        "normal_force": 0.5 * (c1.n @ F + c1.n @ (A1 @ u)),
    }
    return 0, new, c1


def frame(state, c):
    """One saved frame (FRAME_SIZE,) of a state and its contact."""
    return np.concatenate([
        state["A"].ravel(), state["a"], state["Pi"], state["p"], c.s, c.x, c.n, c.n_M, [c.gap],
        [state.get("normal_force", 0.0)],
    ])


def rolling_run(shape, ground, mass, inertia, inertia_inv, gravity, up, h, substeps, n_steps,
                save_every, map_code, newton_tol, max_newton, A, a, Pi, p, s, F, xi, chart, z,
                out, info):
    """Advance ``n_steps`` steps, saving every ``save_every``-th frame into ``out``.

    Parameters
    ----------
    shape : ChartShape, Disk, Cylinder or Wheel   # IN, the body's convex shape
    ground : twin surface object             # IN, the ground (normal toward the body)
    mass, gravity : float
    inertia, inertia_inv : ndarray (3, 3)    # about the centre of mass, body axes
    up : ndarray (3,)                        # unit vector opposite to gravity
    h : float                                # step (negative runs backwards)
    substeps : ndarray (k,)                  # a step is k sub-steps of h * substeps[j]:
                                             # [1.0], or the fourth-order triple jump
    n_steps, save_every, map_code, max_newton : int
    newton_tol : float
    A (3, 3), a (3,), Pi (3,), p (3,), s (3,) : ndarray    # IN/OUT state
    F (3,), xi (3,) : ndarray                # IN/OUT warm starts of the step's Newton solve
    chart (1,) intp, z (2,) : ndarray        # IN/OUT ground chart of the contact
    out : ndarray (n_steps // save_every, FRAME_SIZE)      # OUT
    info : ndarray (1,) intp                 # OUT failure kind (0 on success)

    Returns
    -------
    int
        0 on success, ``k + 1`` if step ``k`` failed (state left at its start; ``info[0]``
        tells why: CONTACT_FAILED, STEP_FAILED, SINGULAR_CONTACT, SUPPORT_FAILED, or one of
        the contact EVENTS FLAT, RIM_TO_SIDE, INNER_CONTACT).
    """
    state = {"A": A.copy(), "a": a.copy(), "Pi": Pi.copy(), "p": p.copy(), "s": s.copy(),
             "F": F.copy(), "xi": xi.copy(), "chart": int(chart[0]), "z": z.copy()}
    info[0] = 0
    h_last = h * substeps[-1]  # the warm start xi belongs to the last sub-step taken
    for k in range(n_steps):
        for frac in substeps:
            state["xi"] = state["xi"] * (h * frac / h_last)
            h_last = h * frac
            status, new, c = rolling_step(shape, ground, mass, inertia, inertia_inv, gravity,
                                          up, h * frac, map_code, newton_tol, max_newton, state)
            if status:
                info[0] = status
                return k + 1
            state = new
        A[:], a[:], Pi[:], p[:], s[:] = new["A"], new["a"], new["Pi"], new["p"], new["s"]
        F[:], xi[:], z[:] = new["F"], new["xi"], new["z"]
        chart[0] = new["chart"]
        if (k + 1) % save_every == 0:
            out[(k + 1) // save_every - 1] = frame(new, c)
    return 0


def support_map(shape, d):
    """``(status, s (3,), S' (3, 3), n_M (3,))`` of ``shape`` in direction ``d`` (3,): the
    support map of any shape class, callable from Python (the kernel's shapes expose it only
    through this function)."""
    return shape.support(np.asarray(d, dtype=float))
