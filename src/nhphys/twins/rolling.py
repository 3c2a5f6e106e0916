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

Applied forces
--------------
Forces other than gravity (:mod:`nhphys.forces`, evaluated by a
:class:`nhphys.twins.forces.ForceSet`) enter as the symmetric discrete Lagrange-d'Alembert pair
of :mod:`nhphys.twins.forces`: each half kick takes the wrench at its own end of the step, a
force ``f`` (space, at the centre of mass) and a torque ``tau`` (body frame):

1'. ``Pi_half = Pi + h/2 (s_k x A_k^T F + tau_k)``, ``p_half = p + h/2 (F - m g k + f_k)``,
    with the wrench at the start (``t_k``, the pose and velocities of the start: known), except
    for rolling resistance, whose torque ``-mu (n_k . F) P_t Omega_k`` takes the normal force
    from the step's unknown ``F``. That is linear in ``F``: the kick's rows become
    ``h/2 (hat(s_k) A_k^T + r_k n_k^T)`` with ``r_k = -mu P_t Omega_k``, and the Newton
    Jacobian keeps its form (``-kick_row`` in the momentum rows; ``a_{k+1}`` and the no-slip
    rows see ``f_k`` only as a constant);
4'. ``Pi_{k+1} = Pi^+ + h/2 (s_{k+1} x u + tau_c - D Omega_{k+1})``,
    ``p_{k+1} = p_half + h/2 (A u - m g k + f_c - c v_{k+1})``, with the wrench at the end:
    ``f_c, tau_c`` the parts that depend on time and pose (springs, fields, forces, torques,
    motors), ``c`` the drag coefficient and ``D`` (body frame) the damping matrix (angular
    damping, spin friction about ``n_b = A^T n_{k+1}``, a motor's speed-control gain, and
    rolling resistance ``mu N' P_t``, whose normal force ``N'``
    is taken from this kick's own contact force, ``n_{k+1} . A u``, as the first kick's is
    from its own ``F``: each kick's wrench is then the one at its own end of the step, and the
    pair is symmetric (taking ``n_{k+1} . F`` at both kicks instead makes the step first order:
    ``F - A u = O(h)``). Velocity-dependent terms are taken at the end, so the kick is
    implicit; for a given ``D`` it is linear: with ``alpha = 1 / (1 + h c / (2 m))``, ``B = I + h/2 D I^-1`` and
    ``G = I^-1 B^-1``, ``p_{k+1} = alpha (p_half + h/2 (A u - m g k + f_c))`` and
    ``Omega_{k+1} = G (Pi^+ + h/2 (s x u + tau_c))``, and the no-slip condition at the end,
    ``A^T p_{k+1} / m + Omega_{k+1} x s = 0``, is the 3 x 3 linear system
    ``h/2 (alpha/m I - hat(s) G hat(s)) u = -(alpha/m A^T (p_half + h/2 (f_c - m g k))
    - hat(s) G (Pi^+ + h/2 tau_c))``, which is the system of step 4 when there is no force
    (``alpha = 1``, ``G = I^-1``). With rolling resistance ``D`` depends on ``u`` through
    ``N' = n_{k+1} . A u``: the system is solved for ``N'`` fixed, ``N'`` updated from its
    ``u``, and so on from ``N' = n_{k+1} . F`` until ``N'`` is settled to round-off: its change
    below ``NORMAL_TOL`` of the force scale, or no longer shrinking while below
    ``NORMAL_STALL`` (the round-off of the 3 x 3 solve, larger for a thin disk). The map is a
    contraction of ratio about ``h mu |Omega| / 2`` (``N'`` enters only through the damping),
    so a few sweeps do.

The work of the non-potential elements is accumulated by the trapezoidal rule,
``W_{k+1} = W_k + h/2 (P_k + P_{k+1})``, with ``P = (f_app - c v) . v + (tau_app - D Omega) .
Omega`` the power of the very wrenches the two kicks applied (at the start, rolling resistance
at ``n_k . F``); potentials (springs, fields) are part of the energy instead. A Python
callable force is evaluated at each kick's time and pose, with the velocities of the start of
the step (it cannot see the end's, which the kick solves for): exact for forces of time and
pose, first order for a callable that depends on the velocities.

Moving grounds
--------------
A ground carried by a rigid motion ``x_space = Q(t) x + d(t)`` (:class:`GroundMotion`) moves
its material point at ``x`` with ``V(x) = w x (x - d) + v``. Rolling without slipping then
means that the body's material contact point moves with the ground's:
``v + A (Omega x s) = V(x)``, and the gap is measured to the ground where it is at that time.
The step changes in three places, all symmetric in time:

* every contact solve poses the body in the ground's frame at the solve's time
  (``Q^T A``, ``Q^T (a - d)``; :func:`contact_at`): the end pose at ``t + h``, the midpoint
  pose at ``t + h/2``;
* the discrete no-slip condition of step 3 becomes
  ``(a_{k+1} - a_k) + A_mid (phi x s_mid) - h V_mid(x_mid) = 0`` (tangential part), the
  midpoint rule on the relative velocity. The Newton Jacobian leaves out the derivative of
  ``h V_mid(x_mid)`` with respect to the unknowns (``h w x dx_mid``): the iteration stays
  convergent (its contraction is of order ``h |w|``) and ends on the same residual test, so the
  solution is unchanged; only an iteration may be added;
* the second kick's no-slip condition is ``A^T p_{k+1} / m + Omega_{k+1} x s = A^T V(x_{k+1})``:
  ``A^T V`` joins the right-hand side of its linear system.

The ground's work is the trapezoidal rule on the power of the contact force on the ground's
material point, ``F . V(x_k)`` at the start (the first kick's force) and ``(A u) . V(x_{k+1})``
at the end: ``energy - work`` is conserved to the method's order.

Newton on step 3 has the analytic Jacobian (``delta_1 = J_r(xi) dxi``,
``delta_mid = J_mid dxi`` with ``J_mid = J_r^exp(phi/2) (dphi/dxi) / 2``,
``da_{k+1} = h^2/(2m) dF``):

* momentum rows: ``[dPi^-/dxi, -h/2 hat(s_k) A_k^T]``;
* gap row: ``[(s_1 x A_1^T n_1)^T J_r(xi), h^2/(2m) n_1^T]``;
* no-slip rows: ``T^T [A_mid(-hat(phi x s_mid) J_mid - hat(s_mid) dphi/dxi
  + hat(phi) ds_mid/ddelta J_mid), h^2/(2m) I + h^2/(4m) A_mid hat(phi) ds_mid/da]`` with ``T`` an
  orthonormal tangent basis at the mid contact (its own variation multiplies the residual,
  which vanishes at the root, so it is left out).

The Newton solves
-----------------
Both go through the shared solver (:mod:`nhphys.twins.newton`), with their own rules:

* **contact** (unknowns ``z``, 2): ``x_floor = (1, 1)`` and ``NewtonRule(tol, 0, max_iter)``
  with ``tol`` the integrator's ``newton_tol``: converged when ``|dz_i| <= tol (|z_i| + 1)``,
  the componentwise form of the rule ``|dz| <= tol (1 + |z|)`` it had before (chart
  coordinates are of order one, or angles). No residual test (``F_scale``, the size
  ``|J_H|^T (|P| + |x|)`` of the terms of ``R``, is returned but not used): the correction test
  costs nothing extra here, since every iteration needs the Jacobian's determinant anyway to
  report an irregular contact. The residual re-charts ``z`` first (the solver's iterate may have
  left the chart's preferred domain), and a solved ``z`` is re-charted once more. A non-finite
  ground evaluation is ``CONTACT_FAILED`` (the body left the ground's chart or data), a
  singular ``dR/dz`` ``SINGULAR_CONTACT``. (In the kernel, a Python ground whose callback
  raised stops the solve with ``CALLBACK_RAISED``, and the run re-raises the exception; in
  the twin it simply propagates.)
* **step** (unknowns ``(xi, F)``, 6): ``NewtonRule(newton_tol, ROUNDOFF, max_newton)`` with
  ``ROUNDOFF = 8 eps``. Residual scales: the momentum rows ``|Pi^-|_max + |Pi|_max +
  |kick|_max``, the gap row ``|x_1|_max + |s_1|_max``, the no-slip rows ``|a_k|_max +
  |s_mid|_max`` (the sizes of the terms each equation subtracts): once every equation holds to
  its own rounding the solve ends without one more Jacobian, as before. Floors: ``|xi_0| +
  1e-15 |h| / newton_tol`` for ``xi`` (``xi_0`` the warm start: the turn of this step; a turn
  of ``1e-15 |h|`` rad counts as converged, as before) and ``|F_0| + m g`` for ``F`` (the warm
  start's force and the weight: the force's size), so the correction test is the componentwise
  form of the former ``|dxi| <= tol |xi| + 1e-15 |h|``, ``|dF| <= tol (|F| + m g)``, never
  stricter on a typical step.

Finding the step
----------------
The step is the solution of the equations above; how Newton is started and globalised changes
which iterates lead there, not the solution (the rule and its floors, taken from the warm start,
are the same for every attempt, so the accepted ``(xi, F)`` satisfies the same test).
``rolling_run``'s ``options`` choose it (``Retraction(extrapolate=..., globalize=...)``):

* ``EXTRAPOLATE``: the first attempt starts from the polynomial through the last ``HISTORY``
  solutions of the same sub-step, ``3 x_1 - 3 x_2 + x_3`` (``2 x_1 - x_2`` with two), kept in
  ``history``. Its error is ``O(h^3)`` in ``F`` against ``O(h)`` for the last solution, so on a
  smooth run the solve usually ends after one correction (two residuals, one Jacobian, instead
  of three and two), and every contact solve inside starts closer too. If that attempt fails
  (at a large step the extrapolation may overshoot) the step is solved again from the warm
  start. When the solve ends on the residual test (no correction after the last residual), the
  end contact of that residual is the step's, instead of a fifth contact solve at the
  re-orthonormalised pose, from which it differs by round-off;
* ``GLOBALIZE``: if the solve from the warm start fails, it is solved once more from there by
  :func:`nhphys.twins.newton.newton_solve_damped` (step halving on the scaled residual).

A failure reports the status of the plain solve from the warm start. With ``options = 0`` the
iteration is the former one, bit for bit. Where no attempt converges the discrete equations
usually have no solution near the start at all: continuing the rattleback's failing steps in
``h`` from ``h = 0`` reaches a fold (the smallest singular value of the Newton matrix going to
zero) at about 0.94 of the step, beyond which the branch of the step's solution does not extend
(BENCHMARKS.md, "Large steps").

Fourth order: the step is symmetric, so the triple jump ``Phi_{g1 h} Phi_{g0 h} Phi_{g1 h}``
with ``g1 = 1/(2 - 2^(1/3))``, ``g0 = 1 - 2 g1`` is symmetric and of order four
(``substeps``); orders six and eight compose it by the symmetric sets of
:mod:`nhphys.integrators.coefficients`. Every sub-step keeps the constraints, so the
compositions do too.
:func:`rolling_run` commits a step only when all its sub-steps succeeded.

Replacing ``h`` by ``-h`` maps the end state back to the start (steps 1-4 read backwards), so
the scheme is symmetric and of even order. The contact and no-slip conditions hold at every
step to the Newton tolerance; ``A`` is kept on SO(3) as in :mod:`nhphys.twins.suslov`.

Saved frame layout (``FRAME_SIZE`` numbers): ``A`` (9, row-major), ``a`` (3), ``Pi`` (3),
``p`` (3), ``s`` (3), ``x`` (3), ``n`` (3, ground normal at ``x``), ``n_M`` (3, the body's
into-body normal at ``s`` evaluated from its own chart), ``gap`` (1), the normal contact
force ``n . (F + F')/2`` of the step that ended there (1; 0 in the initial frame), the
work ``W`` of the applied forces and of a moving ground so far (1), and the time (1). A negative
normal force means the ground pulls the body: a real body would lift off there, while this
model keeps the contact.
"""

import math

import numpy as np

from nhphys.twins import dop853, so3
from nhphys.twins.forces import tangent_projector
from nhphys.twins.newton import (  # the shared status table (statuses of shapes and contacts)
    CONTACT_FAILED,
    FAR_BRANCH,
    FLAT,
    INFO_COMMITTED,
    INFO_SIZE,
    INNER_CONTACT,
    NOT_CONVERGED,
    NOT_FINITE,
    OK,
    RIM_TO_SIDE,
    SINGULAR_CONTACT,
    SINGULAR_JACOBIAN,
    SUPPORT_FAILED,
    NewtonRule,
    newton_solve,
    newton_solve_damped,
)
from nhphys.twins.rhs import energy_correction
from nhphys.twins.suslov import (
    EXP,
    cross,
    momentum_minus_jacobian,
    momentum_pair,
    reorthonormalize,
)

FRAME_SIZE = 34
# the saved frame (FRAME_SIZE numbers) as named arrays: name, first column, shape of one frame
FRAME_FIELDS = (("A", 0, (3, 3)), ("a", 9, (3,)), ("Pi", 12, (3,)), ("p", 15, (3,)),
                ("s", 18, (3,)), ("x", 21, (3,)), ("n", 24, (3,)), ("n_M", 27, (3,)),
                ("gap", 30, ()), ("normal_force", 31, ()), ("work", 32, ()), ("t", 33, ()))
ROUNDOFF = 8 * np.finfo(float).eps  # residuals this small (relative) are converged
# the bits of rolling_run's ``options`` ("Finding the step" in the module docstring)
EXTRAPOLATE = 1  # start each step's Newton solve from the extrapolated past solutions
GLOBALIZE = 2  # if the plain solves fail, solve again with step halving
HISTORY = 3  # past solutions kept per sub-step for the extrapolation
OPENMP = False  # the twin steps the runs of rolling_ensemble one after another


def unpack_frames(frames):
    """Saved frames (n, FRAME_SIZE) -> the saved state arrays, ``{name: (n, *shape)}``."""
    out = {}
    for name, first, shape in FRAME_FIELDS:
        size = int(np.prod(shape))
        out[name] = frames[:, first:first + size].reshape((-1,) + shape)
    return out


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
    t1 = cross(n, e)
    t1 /= np.linalg.norm(t1)
    return np.column_stack([t1, cross(n, t1)])


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
        normal = cross(J[:, 0], J[:, 1])
        n_chart = normal / np.linalg.norm(normal)
        n_M = n_chart if n_chart @ n_in > 0 else -n_chart
        return OK, r - self.com, Sp, n_M


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
    normal = cross(J[:, 0], J[:, 1])
    n = ground.normal_sign(chart) * normal / np.linalg.norm(normal)
    g = J.T @ J
    II = np.einsum("i,iab->ab", n, H)
    return x, J, H, n, np.linalg.solve(g, II)


class Contact:
    """The contact pair of one pose, with its sensitivities (see the module docstring)."""

    __slots__ = ("chart", "z", "s", "Sp", "n_M", "x", "n", "gap", "ds_ddelta", "ds_da")


def contact_jacobian(A, Sp, J, H, W, Px):
    """``dR/dz`` (2, 2) of the contact residual ``R = J_H^T (P - x)`` (module docstring)."""
    return np.einsum("iab,i->ab", H, Px) + J.T @ (A @ Sp @ A.T @ J @ W - J)


def contact(shape, ground, A, a, chart, z, tol, max_iter):
    """Solve for the contact pair of pose ``(A, a)`` from ground chart guess ``(chart, z)``.

    Parameters
    ----------
    shape : ChartShape, Disk, Cylinder or Wheel
    ground : twin surface object
    A : ndarray, shape (3, 3)
    a : ndarray, shape (3,)
    chart : int
    z : array_like, shape (2,)
        The first guess (not changed).
    tol : float
        The Newton rule's ``correction_tol`` (module docstring: "The Newton solves").
    max_iter : int

    Returns
    -------
    status : int
        ``OK``, ``CONTACT_FAILED``, ``SINGULAR_CONTACT``, or the support map's status
        (``SUPPORT_FAILED`` or a contact event).
    contact : Contact
        The contact pair with its sensitivities (filled only for ``OK``).
    """
    z = np.array(z, dtype=float)
    at = {"chart": int(chart)}  # the chart of the iterate, and what the Jacobian needs

    def residual(z):
        _, at["chart"], z[0], z[1] = ground.rechart_point(at["chart"], z[0], z[1])
        x, J, H, n, W = ground_geometry(ground, at["chart"], z)
        status, s, Sp, n_M = shape.support(-A.T @ n)
        if status != OK:
            return status, None, None
        Px = a + A @ s - x
        R = J.T @ Px
        if not np.all(np.isfinite(R)):  # the ground is not defined there
            return CONTACT_FAILED, None, None
        at.update(J=J, H=H, W=W, Sp=Sp, Px=Px)
        return OK, R, np.abs(J).T @ (np.abs(a + A @ s) + np.abs(x))

    def jacobian(z):
        dRdz = contact_jacobian(A, at["Sp"], at["J"], at["H"], at["W"], at["Px"])
        det = dRdz[0, 0] * dRdz[1, 1] - dRdz[0, 1] * dRdz[1, 0]
        if not np.isfinite(det):
            return CONTACT_FAILED, None
        if abs(det) <= 1e-14 * np.abs(dRdz).max() ** 2:
            return SINGULAR_CONTACT, None
        return OK, dRdz

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # NaN is a status
        status = newton_solve(residual, jacobian, z, (1.0, 1.0), NewtonRule(tol, 0.0, max_iter))
    if status in (NOT_CONVERGED, NOT_FINITE):
        return CONTACT_FAILED, Contact()
    if status == SINGULAR_JACOBIAN:
        return SINGULAR_CONTACT, Contact()
    if status != OK:
        return status, Contact()
    _, chart, z[0], z[1] = ground.rechart_point(at["chart"], z[0], z[1])
    return contact_final(shape, ground, A, a, chart, z)


def contact_final(shape, ground, A, a, chart, z):
    """The contact pair at solved ground coordinates ``(chart, z)``, with the sensitivities of
    the module docstring: ``(status, Contact)``."""
    c = Contact()
    x, J, H, n, W = ground_geometry(ground, chart, z)
    status, s, Sp, n_M = shape.support(-A.T @ n)
    if status != OK:
        return status, c
    P = a + A @ s
    dRdz = contact_jacobian(A, Sp, J, H, W, P - x)
    An = A.T @ n
    Q = -hat(s) - Sp @ hat(An)
    dz_ddelta = -np.linalg.solve(dRdz, J.T @ A @ Q)
    dz_da = -np.linalg.solve(dRdz, J.T)
    c.chart, c.z, c.s, c.Sp, c.n_M, c.x, c.n = chart, z.copy(), s, Sp, n_M, x, n
    c.gap = n @ (P - x)
    c.ds_ddelta = Sp @ (-hat(An) + A.T @ J @ W @ dz_ddelta)
    c.ds_da = Sp @ (A.T @ J @ W @ dz_da)
    return OK, c


class GroundMotion:
    """A rigid motion of the ground: ``x_space = Q(t) x_ground + d(t)`` (base: at rest).

    :meth:`at` gives ``(Q (3, 3), d (3,), w (3,), v (3,))`` at time ``t``: ``w`` the ground's
    angular velocity and ``v = dd/dt`` (space), so the ground's material point at ``x`` moves at
    ``V(x) = w x (x - d) + v``. A ground at rest has ``moving = False`` and the step skips
    everything below.
    """

    moving = False

    def at(self, t):
        return np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3)


class SteadyRotation(GroundMotion):
    """Rotation at ``rate`` (rad/s) about the unit ``axis`` through ``center``: a turntable.

    ``Q = exp(t rate hat(axis))``, ``d = center - Q center`` (the centre stays put), ``w = rate
    axis``, ``v = -w x (Q center)``.
    """

    moving = True

    def __init__(self, rate, axis, center):
        self.rate = float(rate)
        self.axis = np.asarray(axis, dtype=float)
        self.center = np.asarray(center, dtype=float)

    def at(self, t):
        w = self.rate * self.axis
        Q = so3.exp((t * w)[None])[0]
        Qc = Q @ self.center
        return Q, self.center - Qc, w, -cross(w, Qc)


class UniformTranslation(GroundMotion):
    """Translation at constant ``velocity`` (3,): ``Q = I``, ``d = t velocity``."""

    moving = True

    def __init__(self, velocity):
        self.velocity = np.asarray(velocity, dtype=float)

    def at(self, t):
        return np.eye(3), t * self.velocity, np.zeros(3), self.velocity.copy()


class PrescribedMotion(GroundMotion):
    """A motion given by a Python callable ``motion(t) -> (Q, d, w, v)`` (checked at each call:
    ``Q`` a rotation, everything finite)."""

    moving = True

    def __init__(self, motion):
        self.motion = motion

    def at(self, t):
        out = self.motion(t)
        try:
            Q, d, w, v = (np.asarray(x, dtype=float) for x in out)
        except (TypeError, ValueError):
            raise ValueError(f"PrescribedMotion: expected the callable {self.motion!r} to return "
                             f"(Q, d, w, v), got {out!r} at t = {t:.6g}.") from None
        shapes_ok = Q.shape == (3, 3) and d.shape == w.shape == v.shape == (3,)
        if not shapes_ok or not all(np.all(np.isfinite(x)) for x in (Q, d, w, v)):
            raise ValueError(f"PrescribedMotion: expected (Q (3, 3), d (3,), w (3,), v (3,)), "
                             f"finite, got {out!r} at t = {t:.6g}.")
        if np.abs(Q.T @ Q - np.eye(3)).max() > 1e-9 or np.linalg.det(Q) <= 0:
            raise ValueError(f"PrescribedMotion: expected Q to be a rotation at t = {t:.6g}, got "
                             f"|Q^T Q - I| = {np.abs(Q.T @ Q - np.eye(3)).max():.3g}.")
        return Q, d, w, v


def tilt_onto(u, n):
    """The smallest rotation (3, 3) taking the unit vector ``u`` to the unit vector ``n``
    (Rodrigues: ``I + [v]x + [v]x^2 / (1 + c)``, ``v = u x n``, ``c = u . n``; well
    conditioned for ``c`` near 1, the only use here: ``u`` is ``n`` tilted by a solver's
    error)."""
    v = np.cross(u, n)
    V = hat(v)
    return np.eye(3) + V + V @ V / (1.0 + float(u @ n))


def ground_velocity(motion_state, x):
    """``V(x) = w x (x - d) + v`` (3,) of the ground's material point at ``x`` (space)."""
    Q, d, w, v = motion_state
    return cross(w, x - d) + v


def contact_at(shape, ground, motion_state, A, a, chart, z, tol, max_iter):
    """:func:`contact` on a moving ground placed by ``motion_state = (Q, d, w, v)`` (``None``: at
    rest): the pose is taken into the ground's frame (``Q^T A``, ``Q^T (a - d)``), the contact
    solved there, and ``x``, ``n`` and ``ds/da`` taken back to space (``s``, ``n_M``, ``S'`` and
    ``ds/ddelta`` are body-frame quantities, the same in both)."""
    if motion_state is None:
        return contact(shape, ground, A, a, chart, z, tol, max_iter)
    Q, d = motion_state[0], motion_state[1]
    st, c = contact(shape, ground, Q.T @ A, Q.T @ (a - d), chart, z, tol, max_iter)
    if st == OK:
        c.x = Q @ c.x + d
        c.n = Q @ c.n
        c.ds_da = c.ds_da @ Q.T
    return st, c


def start_wrench(forces, h, mass, inertia_inv, state):
    """What the first half kick adds for the applied forces: ``(p_start, kick_const,
    rolling_row, power)`` (module docstring, "Applied forces").

    ``p_start = p + h/2 f_k`` (3,), ``kick_const = h/2 tau_k`` (3,), ``rolling_row`` (3,) the
    rolling-resistance torque per newton of ``n_k . F`` (the normal part of the step's contact
    force, so ``h/2 rolling_row n_k^T`` joins the kick's rows), and ``power (fixed, per_N)``:
    the power ``fixed + per_N (n_k . F)`` of the non-potential elements at the start.
    """
    A, a, Pi, p, n = state["A"], state["a"], state["Pi"], state["p"], state["n"]
    v, omega = p / mass, inertia_inv @ Pi
    f, tau, rolling_row, power = total_wrench(forces, state["t"], A, a, n, v, omega)
    p_start = p + 0.5 * h * f
    kick_const = 0.5 * h * tau
    return p_start, kick_const, rolling_row, (power, rolling_row @ omega)


def total_wrench(forces, t, A, a, n, v, omega):
    """``(f (3,), tau (3,), rolling_row (3,), power)``: the force elements' force (space, at the
    centre of mass) and torque (body) at time ``t``, pose ``(A, a)``, velocities ``v`` (space)
    and ``omega`` (body) and contact normal ``n`` (zero without a contact: no spin friction),
    rolling resistance's torque per newton of normal force (``-mu P_t omega``), and the power
    of the non-potential part, ``f_np . v + tau_np . omega`` (to which rolling resistance adds
    ``N rolling_row . omega``)."""
    f_pot, tau_pot, f_app, tau_app, D, drag = forces.wrench(t, A, a, n, v, omega)
    f_np = f_app - drag * v
    tau_np = tau_app - D @ omega
    rolling_row = -forces.rolling * (tangent_projector(A, n) @ omega)
    return f_pot + f_np, tau_pot + tau_np, rolling_row, f_np @ v + tau_np @ omega


ROLLING_SWEEPS = 50  # at most, for the end kick's rolling-resistance normal force
NORMAL_TOL = 1e-14  # ... settled: relative to the larger of it and the weight
NORMAL_STALL = 1e-8  # ... settled at the round-off of an ill-conditioned solve (a thin disk)
SETTLED, AGAIN, DIVERGED = 0, 1, -1  # the verdicts of normal_sweep


def damped_kick(h, D, inertia_inv):
    """``(B, G)`` (3, 3) of a kick implicit in the angular damping ``D`` (body): ``B = I + h/2
    D I^-1`` and ``G = I^-1 B^-1``, so that ``Pi_1 = Pi + h/2 (tau - D I^-1 Pi_1)`` is
    ``Pi_1 = B^-1 (Pi + h/2 tau)``, ``Omega_1 = G (Pi + h/2 tau)`` (module docstring,
    "Applied forces")."""
    B = np.eye(3) + 0.5 * h * D @ inertia_inv
    return B, inertia_inv @ np.linalg.inv(B)


def normal_sweep(new, normal, last_change, weight_scale):
    """``(verdict, change)`` of one sweep settling a kick's own normal force (rolling
    resistance's; module docstring, "Applied forces"): ``new`` from the sweep that took
    ``normal``. ``SETTLED`` when the change is below ``NORMAL_TOL`` of the force scale (the
    larger of ``|new|`` and ``weight_scale``), or no longer shrinking while below
    ``NORMAL_STALL`` of it; ``DIVERGED`` when it no longer shrinks above that; else ``AGAIN``."""
    change, scale = abs(new - normal), max(abs(new), weight_scale)
    if change <= NORMAL_TOL * scale:
        return SETTLED, change
    if change >= last_change:  # no longer contracting: round-off of the solve, or not a
        return (SETTLED if change <= NORMAL_STALL * scale else DIVERGED), change  # contraction
    return AGAIN, change


def dot3(x, y):
    """``x . y`` of 3-vectors, summed as the kernel sums it."""
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2]


def end_kick(forces, h, mass, inertia, inertia_inv, weight, t1, A1, a1, c1, F, p_half, pi_end,
             v_start, omega_start, target):
    """The second half kick with applied forces (module docstring, "Applied forces"):
    ``(status, Pi_1, p_1, u, power_1)``; ``target`` (3,) is the body-frame velocity the contact
    point must end with (``A^T V`` of a moving ground, else 0)."""
    f_pot, tau_pot, f_app, tau_app, D_rest, drag = forces.wrench(t1, A1, a1, c1.n, v_start,
                                                                 omega_start)
    f_c, tau_c = f_pot + f_app, tau_pot + tau_app
    alpha = 1.0 / (1.0 + 0.5 * h * drag / mass)
    S = hat(c1.s)
    Pt = tangent_projector(A1, c1.n)
    normal = c1.n @ F  # rolling resistance's normal force: first guess, the first kick's
    last_change = np.inf
    for sweep in range(ROLLING_SWEEPS):
        D = D_rest + (forces.rolling * normal) * Pt
        B, G = damped_kick(h, D, inertia_inv)
        K = 0.5 * h * ((alpha / mass) * np.eye(3) - S @ G @ S)
        rhs = -((alpha / mass) * (A1.T @ (p_half + 0.5 * h * (f_c - weight)))
                - S @ (G @ (pi_end + 0.5 * h * tau_c))) + target
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            try:
                u = np.linalg.solve(K, rhs)
            except np.linalg.LinAlgError:
                return SINGULAR_JACOBIAN, None, None, None, None
        if forces.rolling == 0.0:
            break
        # the kick's own normal force n . A u, to round-off (a contraction of ratio about
        # h mu |Omega| / 2: a few sweeps)
        new = dot3(c1.n, A1 @ u)
        if not np.isfinite(new):
            return NOT_FINITE, None, None, None, None
        verdict, last_change = normal_sweep(new, normal, last_change, np.linalg.norm(weight))
        if verdict == SETTLED:
            break
        if verdict == DIVERGED:
            return NOT_CONVERGED, None, None, None, None
        normal = new
    else:
        return NOT_CONVERGED, None, None, None, None
    Pi1 = np.linalg.solve(B, pi_end + 0.5 * h * (cross(c1.s, u) + tau_c))
    p1 = alpha * (p_half + 0.5 * h * (A1 @ u - weight + f_c))
    v1, omega1 = p1 / mass, inertia_inv @ Pi1
    power = (f_app - drag * v1) @ v1 + (tau_app - D @ omega1) @ omega1
    return OK, Pi1, p1, u, power


def rolling_step(shape, ground, motion, forces, mass, inertia, inertia_inv, gravity, up, h,
                 map_code, newton_tol, max_newton, state, options=0):
    """One step from ``state``, a dict with ``A, a, Pi, p, s, n, F, xi, chart, z, t, work``
    (see :func:`rolling_run`; ``F`` and ``xi`` are the warm starts, ``chart, z`` the
    contact's, ``n`` its ground normal, ``t`` the time and ``work`` the work done so far; an
    optional ``guess`` (6,), the extrapolated start of "Finding the step"),
    under the applied forces of ``forces`` (a :class:`nhphys.twins.forces.ForceSet`), on a
    ground moving by ``motion`` (a :class:`GroundMotion`). ``options``: the bits
    ``EXTRAPOLATE | GLOBALIZE`` ("Finding the step").

    Returns
    -------
    status : int
        ``OK``, a status of either Newton solve, ``FAR_BRANCH``, or one of the contact's.
    new_state : dict or None
        The state at the end of the step (with its ``normal_force``), for ``OK``.
    contact : Contact or None
        The contact at the end of the step.
    """
    A, a, Pi, p, s_k = state["A"], state["a"], state["Pi"], state["p"], state["s"]
    x = np.concatenate([state["xi"], state["F"]])  # the unknowns (xi, F), from the warm start
    warm = {"chart": state["chart"], "z": state["z"].copy(),  # the contacts' last solutions
            "chart_mid": state["chart"], "z_mid": state["z"].copy()}
    weight = mass * gravity * up
    c2 = h * h / (2 * mass)
    kick_row = 0.5 * h * hat(s_k) @ A.T  # Pi_half = Pi + kick_row @ F (+ kick_const)
    p_start, kick_const = p, np.zeros(3)
    if not forces.empty:
        p_start, kick_const, rolling_row, power_start = start_wrench(forces, h, mass,
                                                                     inertia_inv, state)
        kick_row = kick_row + np.outer(0.5 * h * rolling_row, state["n"])
    # the ground's placement at the start, the middle and the end of the step (None: at rest)
    t = state["t"]
    M0, Mm, M1 = ((motion.at(t), motion.at(t + 0.5 * h), motion.at(t + h)) if motion.moving
                  else (None, None, None))
    at = {}  # what the residual leaves for the Jacobian

    def residual(x):
        xi, F = x[:3], x[3:]
        A1 = A @ retract(xi, map_code)
        a1 = a + (h / mass) * (p_start + 0.5 * h * (F - weight))
        st, c1 = contact_at(shape, ground, M1, A1, a1, warm["chart"], warm["z"], newton_tol,
                            max_newton)
        if st:
            return st, None, None
        phi, dphi = rotation_vector(xi, map_code)
        Am = A @ so3.exp(0.5 * phi[None])[0]  # the geodesic midpoint of A_k and A_{k+1}
        am = 0.5 * (a + a1)
        st, cm = contact_at(shape, ground, Mm, Am, am, warm["chart_mid"], warm["z_mid"],
                            newton_tol, max_newton)
        if st:
            return st, None, None
        warm.update(chart=c1.chart, z=c1.z, chart_mid=cm.chart, z_mid=cm.z)
        pi_minus, _ = momentum_pair(xi, inertia, h, map_code)
        T = tangent_basis(cm.n)
        kick = kick_row @ F + kick_const
        N = (a1 - a) + Am @ cross(phi, cm.s)
        if Mm is not None:  # the ground's material point moves: the body's must move with it
            N = N - h * ground_velocity(Mm, cm.x)
        E = np.concatenate([pi_minus - Pi - kick, [c1.gap], T.T @ N])
        momentum = np.abs(pi_minus).max() + np.abs(Pi).max() + np.abs(kick).max()
        gap = np.abs(c1.x).max() + np.abs(c1.s).max()
        slip = np.abs(a).max() + np.abs(cm.s).max()
        at.update(A1=A1, c1=c1, cm=cm, phi=phi, dphi=dphi, Am=Am, T=T, x=x.copy())
        return OK, E, np.array([momentum] * 3 + [gap] + [slip] * 2)

    def jacobian(x):
        xi = x[:3]
        A1, c1, cm, phi, dphi, Am, T = (at[k] for k in ("A1", "c1", "cm", "phi", "dphi", "Am",
                                                          "T"))
        Jm = 0.5 * jac_right(0.5 * phi, EXP) @ dphi
        jac = np.zeros((6, 6))
        jac[:3, :3] = momentum_minus_jacobian(xi, inertia, h, map_code)
        jac[:3, 3:] = -kick_row
        jac[3, :3] = cross(c1.s, A1.T @ c1.n) @ jac_right(xi, map_code)
        jac[3, 3:] = c2 * c1.n
        dN_dxi = Am @ (-hat(cross(phi, cm.s)) @ Jm - hat(cm.s) @ dphi
                       + hat(phi) @ cm.ds_ddelta @ Jm)
        dN_dF = c2 * np.eye(3) + 0.5 * c2 * Am @ hat(phi) @ cm.ds_da
        jac[4:, :3] = T.T @ dN_dxi
        jac[4:, 3:] = T.T @ dN_dF
        return OK, jac

    floor = np.concatenate([
        np.full(3, np.linalg.norm(state["xi"]) + 1e-15 * abs(h) / newton_tol),
        np.full(3, np.linalg.norm(state["F"]) + mass * gravity),
    ])
    rule = NewtonRule(newton_tol, ROUNDOFF, max_newton)
    # the attempts ("Finding the step"): the extrapolated start, the warm start, and the warm
    # start under the globalised rule; each from the same contact warm starts
    attempts = []
    if state.get("guess") is not None:
        attempts.append((state["guess"], newton_solve))
    attempts.append((x, newton_solve))
    if options & GLOBALIZE:
        attempts.append((x, newton_solve_damped))
    status = OK
    for start, solve in attempts:
        y = np.array(start, dtype=float)
        warm.update(chart=state["chart"], z=state["z"].copy(), chart_mid=state["chart"],
                    z_mid=state["z"].copy())
        with np.errstate(invalid="ignore", over="ignore"):  # a non-finite iterate is a status
            st = solve(residual, jacobian, y, floor, rule)
        if st == OK and map_code == EXP and np.linalg.norm(y[:3]) >= np.pi:
            st = FAR_BRANCH
        if st == OK:
            break
        if start is x and solve is newton_solve:  # a failure reports the plain solve's
            status = st
    else:
        return status, None, None
    xi, F = y[:3], y[3:]

    # the converged pose and its contact: with EXTRAPOLATE, the end contact of the last
    # residual when the solve ended on it (the residual test: no correction since), which
    # differs from the re-orthonormalised pose's by round-off only
    A1 = reorthonormalize(A @ retract(xi, map_code))
    p_half = p_start + 0.5 * h * (F - weight)
    a1 = a + (h / mass) * p_half
    if options & EXTRAPOLATE and np.array_equal(y, at["x"]):
        c1 = at["c1"]
    else:
        st, c1 = contact_at(shape, ground, M1, A1, a1, warm["chart"], warm["z"], newton_tol,
                            max_newton)
        if st:
            return st, None, None
    _, pi_end = momentum_pair(xi, inertia, h, map_code)
    s1 = c1.s
    work = state["work"]
    target = np.zeros(3) if M1 is None else A1.T @ ground_velocity(M1, c1.x)
    if forces.empty:
        S = hat(s1)
        K = 0.5 * h * (np.eye(3) / mass - S @ inertia_inv @ S)
        rhs = -(A1.T @ p_half / mass - 0.5 * h * gravity * (A1.T @ up)
                + cross(inertia_inv @ pi_end, s1)) + target
        u = np.linalg.solve(K, rhs)
        Pi1 = pi_end + 0.5 * h * cross(s1, u)
        p1 = p_half + 0.5 * h * (A1 @ u - weight)
    else:
        st, Pi1, p1, u, power_end = end_kick(
            forces, h, mass, inertia, inertia_inv, weight, state["t"] + h, A1, a1, c1, F,
            p_half, pi_end, p / mass, inertia_inv @ Pi, target)
        if st:
            return st, None, None
        power = power_start[0] + power_start[1] * (state["n"] @ F)
        work = work + 0.5 * h * (power + power_end)
    if M0 is not None:  # the ground's work: the contact force's power on its material point
        V0 = ground_velocity(M0, a + A @ s_k)
        work = work + 0.5 * h * (F @ V0 + (A1 @ u) @ ground_velocity(M1, c1.x))
    new = {
        "A": A1, "a": a1, "Pi": Pi1, "p": p1,
        "s": s1, "n": c1.n.copy(), "F": F.copy(), "xi": xi.copy(), "chart": c1.chart,
        "z": c1.z, "t": state["t"] + h, "work": work,
        "normal_force": 0.5 * (c1.n @ F + c1.n @ (A1 @ u)),
    }
    return OK, new, c1


def extrapolated_start(past, filled):
    """The start of a step's Newton solve extrapolated from the same sub-step's solutions of
    the last steps, ``past`` (6 HISTORY,) newest first (``filled`` >= 2 of them): the
    polynomial through them evaluated one step on, ``3 x_1 - 3 x_2 + x_3`` (quadratic) or
    ``2 x_1 - x_2`` (linear, with two)."""
    x1, x2, x3 = past[:6], past[6:12], past[12:18]
    if filled >= 3:
        return 3.0 * x1 - 3.0 * x2 + x3
    return 2.0 * x1 - x2


def frame(state, c):
    """One saved frame (FRAME_SIZE,) of a state and its contact."""
    return np.concatenate([
        state["A"].ravel(), state["a"], state["Pi"], state["p"], c.s, c.x, c.n, c.n_M, [c.gap],
        [state.get("normal_force", 0.0)], [state.get("work", 0.0)], [state.get("t", 0.0)],
    ])


def rolling_run(shape, ground, motion, forces, mass, inertia, inertia_inv, gravity, up, h,
                substeps, n_steps, save_every, map_code, newton_tol, max_newton, A, a, Pi, p, s,
                n, F, xi, chart, z, clock, out, info, options=0, history=None, filled=None):
    """Advance ``n_steps`` steps, saving every ``save_every``-th frame into ``out``.

    Parameters
    ----------
    shape : ChartShape, Disk, Cylinder or Wheel   # IN, the body's convex shape
    ground : twin surface object             # IN, the ground (normal toward the body)
    motion : GroundMotion                    # IN, the ground's rigid motion (may be at rest)
    forces : nhphys.twins.forces.ForceSet    # IN, the applied forces (may be empty)
    mass, gravity : float
    inertia, inertia_inv : ndarray (3, 3)    # about the centre of mass, body axes
    up : ndarray (3,)                        # unit vector opposite to gravity
    h : float                                # step (negative runs backwards)
    substeps : ndarray (k,)                  # a step is k sub-steps of h * substeps[j]:
                                             # [1.0], or a symmetric composition
    n_steps, save_every, map_code, max_newton : int
    newton_tol : float
    A (3, 3), a (3,), Pi (3,), p (3,), s (3,) : ndarray    # IN/OUT state
    n (3,) : ndarray                         # IN/OUT ground normal at the contact
    F (3,), xi (3,) : ndarray                # IN/OUT warm starts of the step's Newton solve
    chart (1,) intp, z (2,) : ndarray        # IN/OUT ground chart of the contact
    clock (2,) : ndarray                     # IN/OUT the time and the work of the forces
    out : ndarray (n_steps // save_every, FRAME_SIZE)      # OUT
    info : ndarray (3,) intp                 # OUT [status of a failure (0 on success), -,
                                             #      steps committed] (INFO_* of newton)
    options : int                            # IN, bits EXTRAPOLATE | GLOBALIZE ("Finding
                                             # the step"); 0 is the plain Newton solve
    history : ndarray (k, 6 HISTORY)         # IN/OUT, per sub-step the last HISTORY
                                             # solutions (xi, F), newest first (EXTRAPOLATE)
    filled : ndarray (1,) intp               # IN/OUT, how many of them are there

    Returns
    -------
    int
        0 on success, ``k + 1`` if step ``k`` failed, ``info[0]`` telling why (a status of
        :mod:`nhphys.twins.newton`: a Newton failure, ``FAR_BRANCH``, ``CONTACT_FAILED``,
        ``SINGULAR_CONTACT``, ``SUPPORT_FAILED``, or one of the contact events ``FLAT``,
        ``RIM_TO_SIDE``, ``INNER_CONTACT``). A step is committed to the IN/OUT arrays only when
        all its sub-steps succeeded: after a failure they hold the state at its start.
    """
    committed = {"A": A.copy(), "a": a.copy(), "Pi": Pi.copy(), "p": p.copy(), "s": s.copy(),
                 "n": n.copy(), "F": F.copy(), "xi": xi.copy(), "chart": int(chart[0]),
                 "z": z.copy(), "t": float(clock[0]), "work": float(clock[1])}
    info[0] = OK
    info[INFO_COMMITTED] = 0
    h_last = h * substeps[-1]  # the warm start xi belongs to the last sub-step taken
    extrapolate = bool(options & EXTRAPOLATE)
    solved = np.empty((len(substeps), 6))
    for k in range(n_steps):
        state = committed
        for j, frac in enumerate(substeps):
            state = dict(state, xi=state["xi"] * (h * frac / h_last), guess=None)
            h_last = h * frac
            if extrapolate and filled[0] >= 2:
                state["guess"] = extrapolated_start(history[j], filled[0])
            status, state, c = rolling_step(shape, ground, motion, forces, mass, inertia,
                                            inertia_inv, gravity, up, h * frac, map_code,
                                            newton_tol, max_newton, state, options=options)
            if status:
                info[0] = status
                return k + 1
            solved[j, :3], solved[j, 3:] = state["xi"], state["F"]
        committed = state
        if extrapolate:  # the step's solutions join the history, the oldest leave it
            history[:, 6:] = history[:, :-6].copy()
            history[:, :6] = solved
            filled[0] = min(filled[0] + 1, HISTORY)
        A[:], a[:], Pi[:], p[:], s[:] = state["A"], state["a"], state["Pi"], state["p"], state["s"]
        n[:], F[:], xi[:], z[:] = state["n"], state["F"], state["xi"], state["z"]
        clock[0], clock[1] = state["t"], state["work"]
        chart[0] = state["chart"]
        if (k + 1) % save_every == 0:
            out[(k + 1) // save_every - 1] = frame(state, c)
        info[INFO_COMMITTED] = k + 1  # last: the step and its frame are complete
    return 0


def rolling_ensemble(shape, ground, motion, forces, mass, inertia, inertia_inv, gravity, up, h,
                     substeps, n_steps, save_every, map_code, newton_tol, max_newton, A, a, Pi, p,
                     s, n, F, xi, chart, z, clock, out, info, options=0, history=None,
                     filled=None, threads=1, active=None):
    """Advance N independent runs ``n_steps`` steps each: :func:`rolling_run` on each run's rows.

    Parameters
    ----------
    shape, ground, motion, forces, gravity, up, h, substeps, n_steps, save_every, map_code,
    newton_tol, max_newton, options
        As :func:`rolling_run`, shared by every run.
    mass : ndarray (N,)
    inertia, inertia_inv : ndarray (N, 3, 3)
    A (N, 3, 3), a, Pi, p, s, n, F, xi (N, 3), chart (N,) intp, z (N, 2), clock (N, 2)
        IN/OUT, each run's state (its rows).
    out : ndarray (N, n_steps // save_every, FRAME_SIZE)      # OUT
    info : ndarray (N, INFO_SIZE) intp                         # OUT, each run's info
    history : ndarray (N, k, 6 HISTORY), filled : ndarray (N,) intp   # IN/OUT (EXTRAPOLATE)
    threads : int
        Accepted and ignored (the kernel spreads the runs over this many threads, and for that
        refuses a ground or body surface that calls back into Python; this loop takes any).
    active : ndarray (N,) uint8, optional
        Only the runs with a nonzero entry are stepped (the others keep their state, and their
        ``info`` row is zero).

    Returns
    -------
    int
        The number of runs that failed in this call (a run's failure is its own: ``info[i, 0]``
        its status, ``info[i, INFO_COMMITTED]`` the steps it committed, its state that at the
        start of the failing step; the other runs go on).
    """
    N = len(mass)
    if threads < 1:
        raise ValueError(f"Expected `threads` >= 1, got {threads}.")
    if save_every < 1 or n_steps < 0:
        raise ValueError(f"Expected `n_steps` >= 0 and `save_every` >= 1, got {n_steps} and "
                         f"{save_every}.")
    n_saved = n_steps // save_every
    for name, array, tail in (
            ("inertia", inertia, (3, 3)), ("inertia_inv", inertia_inv, (3, 3)),
            ("A", A, (3, 3)), ("a", a, (3,)), ("Pi", Pi, (3,)), ("p", p, (3,)), ("s", s, (3,)),
            ("n", n, (3,)), ("F", F, (3,)), ("xi", xi, (3,)), ("chart", chart, ()),
            ("z", z, (2,)), ("clock", clock, (2,)), ("out", out, (n_saved, FRAME_SIZE)),
            ("info", info, (INFO_SIZE,))):
        if np.shape(array) != (N,) + tail:
            raise ValueError(f"Expected `{name}` of shape {(N,) + tail} (N = len(mass) runs), "
                             f"got {np.shape(array)}.")
    extrapolate = bool(options & EXTRAPOLATE)
    if extrapolate and (history is None or filled is None
                        or np.shape(history) != (N, len(substeps), 6 * HISTORY)
                        or np.shape(filled) != (N,)):
        raise ValueError(f"Expected `history` of shape ({N}, {len(substeps)}, {6 * HISTORY}) "
                         f"and `filled` of shape ({N},) with EXTRAPOLATE.")
    if active is not None and np.shape(active) != (N,):
        raise ValueError(f"Expected `active` of shape ({N},), got {np.shape(active)}.")
    info[...] = 0
    failed = 0
    for i in range(N):
        if active is not None and not active[i]:
            continue
        code = rolling_run(
            shape, ground, motion, forces, float(mass[i]), inertia[i], inertia_inv[i], gravity,
            up, h, substeps, n_steps, save_every, map_code, newton_tol, max_newton, A[i], a[i],
            Pi[i], p[i], s[i], n[i], F[i], xi[i], chart[i:i + 1], z[i], clock[i], out[i],
            info[i], options, history[i] if extrapolate else None,
            filled[i:i + 1] if extrapolate else None)
        failed += code != 0
    return failed


def support_map(shape, d):
    """``(status, s (3,), S' (3, 3), n_M (3,))`` of ``shape`` in direction ``d`` (3,): the
    support map of any shape class, callable from Python (the kernel's shapes expose it only
    through this function)."""
    return shape.support(np.asarray(d, dtype=float))


def solve_arctan(x0, damped, max_iter):
    """Solve ``(atan(x0 - 1) + x1 / 10, atan(x1 + 2)) = 0`` (root ``(1 + tan(1/5), -2)``)
    from ``x0`` by :func:`nhphys.twins.newton.newton_solve` (``damped`` false) or
    :func:`nhphys.twins.newton.newton_solve_damped`, recording every residual evaluation: the
    problem on which the kernel's globalised solver is checked against this one (plain Newton
    on ``atan`` overshoots and diverges from ``|x - root| > 1.39``).

    Returns ``(status, x (2,), points (k, 2))``: the points at which the residual was
    evaluated, in order.
    """
    points = []

    def residual(x):
        points.append(np.array(x, dtype=float))
        F = np.array([math.atan(x[0] - 1.0) + 0.1 * x[1], math.atan(x[1] + 2.0)])
        return OK, F, np.array([0.5 * math.pi + 0.1 * abs(x[1]), 0.5 * math.pi])

    def jacobian(x):
        e0, e1 = x[0] - 1.0, x[1] + 2.0
        return OK, np.array([[1.0 / (1.0 + e0 * e0), 0.1], [0.0, 1.0 / (1.0 + e1 * e1)]])

    x = np.array(x0, dtype=float)
    solve = newton_solve_damped if damped else newton_solve
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is a NOT_FINITE status
        status = solve(residual, jacobian, x, (1.0, 1.0), NewtonRule(1e-13, ROUNDOFF, max_iter))
    return status, list(x), np.array(points).reshape(-1, 2)


# -- the continuous vector field (eq. 29) for an adaptive solver ----------------------------------

FIELD_STATE = 15  # A (9, row-major), z (2), Omega (3), W (1): RollingBody.reference_state


class RollingField:
    r"""Eq. (29) of a convex body rolling under gravity on a ground at rest or under a built-in
    motion, as a callable
    ``field(t, y) -> dy/dt`` for an adaptive Runge-Kutta solver, with its projection
    (:class:`nhphys.integrators.Adaptive`).

    The state is that of :meth:`nhphys.systems.RollingBody.reference_state`, ``y`` (15,):
    ``A.ravel()`` (body to space, row-major), ``z`` (2,) the contact's coordinates on the
    ground's chart ``chart`` (kept for the whole run, as in ``Reference``), ``Omega`` (3,) the
    body angular velocity and ``W`` the work of the non-potential force elements and of a moving
    ground. The rates
    are those of :meth:`nhphys.systems.RollingBody.reference_rhs` (its specification) for a
    ground at rest; without force elements they are, with ``x, J, n, W_H`` the ground's point,
    chart Jacobian (3, 2), normal and Weingarten matrix ``g^-1 II`` (2, 2) at ``z``, ``s, S', n_M``
    the body's support point in the direction ``-A^T n``, its derivative and normal,
    ``L_H = J W_H g^-1 J^T`` (3, 3, ``-dn = L_H dx``) and ``K = A^T L_H A``::

        ds/dt:  (I - S' K) ds/dt = S' (Omega x A^T n)            (support_form: disks, ...)
                Lambda E^T ds/dt = E^T (Omega x A^T n),
                Lambda = (E^T S' E)^-1 - E^T K E                  (chart shapes; E (3, 2) an
                                                                   orthonormal basis of the
                                                                   tangent plane)
        dz/dt = g^-1 J^T A ds/dt,      dA/dt = A hat(Omega),     dW/dt = 0,
        I~ dOmega/dt = (I~ Omega) x Omega + m s x (ds/dt x Omega + g A^T k),
        I~ = I - m hat(s)^2,

    and with force elements the terms of :meth:`_forced`.

    **Moving ground** (``motion``: a :class:`SteadyRotation` or a :class:`UniformTranslation`).
    The equations are those of ``RollingBody._rates`` ("Moving ground", its specification):
    with the ground's placement ``(Q, d, w, v)`` at ``t`` (:meth:`GroundMotion.at`), the
    contact is solved in the ground's frame with ``B = Q^T A`` for ``A`` and
    ``Omega_r = Omega - A^T w`` for ``Omega`` (``dz/dt = g^-1 J^T B ds/dt``), then put in space
    (``x <- Q x + d``, ``n <- Q n``). Euler's equation gains ``m s x A^T a_V`` and the centre's
    acceleration ``a_V``, the acceleration of the ground's material point under the contact plus
    the Coriolis-like term of the contact moving over it, ``a_V = dw/dt x r + w x (w x r) +
    dv/dt + w x (A ds/dt)``, ``r = x - d``; and ``dW/dt`` gains the ground's power
    ``F . V(x)``, ``V(x) = w x r + v``, ``F`` the contact force. Both built-in motions have a
    constant ``w`` and ``dv/dt = w x v`` (a turntable: ``v = -w x (Q c)`` turns with it; a
    translation: ``w = 0``), so ``a_V = w x (w x r + v + A ds/dt)``. A motion given by a
    callable (``PrescribedMotion``) has no field: ``Reference`` integrates it.

    The two contact equations are the same where ``S'`` is invertible on the tangent plane
    (``L_M = (E^T S' E)^-1``); the first also holds for a disk, whose ``S'`` has rank one
    (:mod:`nhphys.systems.rolling`).

    The projection (:meth:`project`). The state has one redundancy: the nine entries of ``A`` for a
    point of SO(3) (six conditions ``A^T A = I``). Everything else is a coordinate: ``z`` and ``A``
    fix the pose, since the contact point on the body is slaved to them, ``s = S(-A^T n(z))``, and
    the centre of mass is ``a = x(z) - A s``, so the contact conditions ``A n_M(s) = n(z)`` and
    ``gap = 0`` hold by construction for any rotation ``A``; the no-slip condition holds by
    construction too, since the centre's velocity is ``-A (Omega x s)`` (``Omega`` is free: 3
    velocities for the 3 degrees of freedom of rolling on a surface). So only ``A`` is projected,
    and ``z``, ``Omega`` and ``W`` are left alone. Which rotation: the body's contact point
    ``s = S(-A^T n)`` depends on ``A`` only through the body's normal direction
    ``b = A^T n / |A^T n|``, which the field used at the accepted state. The projection keeps
    it, so that ``s`` stays where the step put it: ``A`` goes to its orthogonal polar factor
    ``U`` (the closest rotation in the Frobenius norm, :func:`nhphys.twins.so3.polar_factor`),
    then to ``T U`` with ``T`` the smallest rotation taking ``U b`` back to ``n``
    (:func:`tilt_onto`), so that
    ``(T U)^T n = b``. ``T`` turns by the angle between ``U b`` and ``n``, of the size of ``A``'s
    distance from SO(3), so a state off SO(3) by ``e`` moves by ``O(e)``; ``e`` is of the size of
    the solver's global error (the exact flow keeps SO(3)), so the order is kept (Hairer, Lubich
    & Wanner, Geometric Numerical Integration, 2nd ed., IV.4). The polar factor alone tilts the
    body's normal by ``O(e)`` too, and so moves the contact point on the body while ``z``
    stays: on the wobbling disk of ``benchmarks/bench_disk.py`` that made the 10-s error 10-60
    times the unprojected solver's (3.3e-2 against 6.5e-4 at rtol 1e-5, 1.7e-4 against 2.8e-6
    at 1e-7, 8.3e-7 against 8.6e-8 at 1e-9), where keeping ``b`` gives 9.5e-4, 1.6e-6 and
    8.9e-8 with the same steps. After the projection the contact's residual
    ``|A n_M - n|`` and the slip are at round-off.


    Parameters
    ----------
    shape : ChartShape, Disk, Cylinder or Wheel
        The body's contact shape (twin), seen from the centre of mass.
    ground : twin surface object
        The ground, in its own frame.
    chart : int
        The ground chart of ``z``.
    mass : float
    inertia : array_like, shape (3, 3)
        About the centre of mass, body axes.
    gravity : float
    up : array_like, shape (3,)
        Unit vector opposite to gravity.
    support_form : bool
        Solve the contact equation in the support-map form (a support-function shape: disk,
        wheel, cylinder), else in ``Lambda``'s (a chart shape), as ``RollingBody._rates`` does.
    forces : ForceSet, optional
        Built-in force elements (:class:`nhphys.twins.forces.ForceSet`, the kernel's
        ``nhphys_ext.forces.ForceSet``; no Python callables): their wrench joins Euler's
        equation, rolling resistance its left side, and their power ``dW/dt`` (:meth:`_forced`).
        The field then depends on ``t`` (scheduled forces).
    motion : SteadyRotation or UniformTranslation, optional
        The ground's motion (``None`` or a :class:`GroundMotion` at rest: the ground is at
        rest); the field then depends on ``t``.

    Attributes
    ----------
    evaluations : int
        Calls of the field so far.
    status : int
        0, or the first contact status (:mod:`nhphys.twins.newton`: a contact event, a singular
        contact) met by a call, whose rates are then NaN.
    energy_level : float
        The level of ``E - W`` (:meth:`energy`) that :meth:`project` holds, or NaN (the
        default): only ``A`` is projected.
    energy_misses : int
        Projections whose velocities could not reach the level (:mod:`nhphys.twins.rhs`,
        "Holding the energy").
    """

    def __init__(self, shape, ground, chart, mass, inertia, gravity, up, support_form,
                 forces=None, motion=None):
        self.shape = shape
        self.ground = ground
        self.forces = None if forces is None or forces.empty else forces
        self.motion = motion if motion is not None and motion.moving else None
        self.chart = int(chart)
        self.mass = float(mass)
        self.inertia = np.array(inertia, dtype=float).reshape(3, 3)
        self.gravity = float(gravity)
        self.up = np.array(up, dtype=float).reshape(3)
        self.support_form = bool(support_form)
        self.evaluations = 0
        self.status = OK
        self.energy_level = float("nan")
        self.energy_misses = 0

    def __call__(self, t, y):
        """``dy/dt`` (15,) at the state ``y`` (15,) and time ``t`` (scheduled forces, a moving
        ground; else unused)."""
        y = np.asarray(y, dtype=float)
        if y.shape != (FIELD_STATE,):
            raise ValueError(f"Expected a state of shape ({FIELD_STATE},), got {y.shape}.")
        self.evaluations += 1
        status, out = self._rates(t, y)
        if status != OK:
            self.status = self.status or status
            return np.full(FIELD_STATE, np.nan)
        return out

    def _rates(self, t, y, extras=False):
        """``(status, dy/dt (15,))`` at time ``t``, and with ``extras`` also
        ``(s, x, n, n_M, ds/dt, N, F)`` (``N`` the normal force, ``F`` the contact force
        (space))."""
        A, z, omega = y[:9].reshape(3, 3), y[9:11], y[11:14]
        x, J, H, n, W = ground_geometry(self.ground, self.chart, z)
        B, omega_r = A, omega  # the attitude and spin relative to the ground
        if self.motion is not None:
            Q, d, w_g, v_g = self.motion.at(t)
            B, omega_r = Q.T @ A, omega - A.T @ w_g
        An = B.T @ n
        status, s, Sp, n_M = self.shape.support(-An)
        if status != OK:
            return status, None
        g = J.T @ J
        K = B.T @ (J @ W @ np.linalg.solve(g, J.T)) @ B
        wn = cross(omega_r, An)
        try:
            if self.support_form:
                s_dot = np.linalg.solve(np.eye(3) - Sp @ K, Sp @ wn)
            else:
                E = tangent_basis(An)
                lam = np.linalg.inv(E.T @ Sp @ E) - E.T @ K @ E
                s_dot = E @ np.linalg.solve(lam, E.T @ wn)
        except np.linalg.LinAlgError:
            return SINGULAR_CONTACT, None
        z_dot = np.linalg.solve(g, J.T @ (B @ s_dot))
        V = a_V = np.zeros(3)
        if self.motion is not None:  # the contact in space; the ground point's motion there
            x, n = Q @ x + d, Q @ n
            V = cross(w_g, x - d) + v_g
            a_V = cross(w_g, V + A @ s_dot)  # dw/dt = 0, dv/dt = w x v (class docstring)
        m = self.mass
        S = hat(s)
        I_tilde = self.inertia - m * S @ S
        rhs = cross(I_tilde @ omega, omega) + m * cross(
            s, cross(s_dot, omega) + self.gravity * (A.T @ self.up) + A.T @ a_V)
        # d2a/dt2 = acc0 - A (dOmega/dt x s)
        acc0 = a_V - A @ (cross(omega, cross(omega, s)) + cross(omega, s_dot))
        if self.forces is None:
            omega_dot = np.linalg.solve(I_tilde, rhs)
            F = m * (acc0 - A @ cross(omega_dot, s) + self.gravity * self.up)
            N = n @ F
            power = F @ V
        else:
            try:
                omega_dot, N, F, power = self._forced(t, A, x, n, An, s, omega, acc0, I_tilde,
                                                      rhs, V)
            except np.linalg.LinAlgError:
                return SINGULAR_CONTACT, None
        out = np.concatenate([np.cross(A, omega).ravel(), z_dot, omega_dot, [power]])
        if extras:
            return OK, out, (s, x, n, n_M, s_dot, N, F)
        return OK, out

    def _forced(self, t, A, x, n, nb, s, omega, acc0, I_tilde, rhs, V):
        r"""``(dOmega/dt, N, F, power)`` with the force elements (``RollingBody._rates``, Notes):
        with the potential and applied wrenches ``f_pot, tau_pot, f_app, tau_app`` (force in
        space at the centre, torque in the body), the damping ``D``, ``drag`` and the
        non-potential part ``f_np = f_app - drag v``, ``tau_np = tau_app - D Omega``, the
        contact force is ``A^T F = m A^T d2a/dt2 + m g A^T k - A^T f`` and Euler's equation
        gains ``tau - s x A^T f``; rolling resistance ``-mu N P_t Omega`` with
        ``N = N_0 - m (s x n_b) . dOmega/dt`` keeps it linear:
        ``(I~ - mu m w (s x n_b)^T) dOmega/dt = rhs + tau - s x A^T f - N_0 w``,
        ``w = P_t Omega``; the power is ``f_np . v + (tau_np - N w) . Omega``, plus on a
        moving ground the ground's, ``(m d2a/dt2 + m g k - f) . V``, with ``V`` (3,) its
        material point's velocity at the contact (zero at rest), which joins ``v``."""
        m, g = self.mass, self.gravity
        v = V - A @ cross(omega, s)
        a = x - A @ s
        f_pot, tau_pot, f_app, tau_app, D, drag = self.forces.wrench(t, A, a, n, v, omega)
        f_np, tau_np = f_app - drag * v, tau_app - D @ omega
        f, tau = f_pot + f_np, tau_pot + tau_np
        w_roll = self.forces.rolling * (omega - nb * (nb @ omega))
        N_0 = n @ (m * acc0 + m * g * self.up - f)
        s_nb = cross(s, nb)
        lhs = I_tilde - m * np.outer(w_roll, s_nb)
        omega_dot = np.linalg.solve(lhs, rhs + tau - cross(s, A.T @ f) - N_0 * w_roll)
        N = N_0 - m * s_nb @ omega_dot
        power = f_np @ v + (tau_np - N * w_roll) @ omega
        F = m * (acc0 - A @ cross(omega_dot, s) + g * self.up) - f  # the contact force
        power += F @ V
        return omega_dot, N, F, power

    def frame(self, y, t):
        """The saved frame (FRAME_SIZE,) of the state ``y`` (15,) at time ``t``: the layout of
        :data:`FRAME_FIELDS`, as ``RollingBody.reference_unpack`` makes it (the centre
        ``a = x - A s``, ``Pi = I Omega``, ``p = m (V(x) - A (Omega x s))`` (``V = 0`` on a
        ground at rest), ``gap = 0``, the normal force ``n . F`` with ``F = m (d2a/dt2 + g k)``
        (less the applied force), ``d2a/dt2 = a_V - A (Omega x (Omega x s) + Omega x ds/dt +
        dOmega/dt x s)`` (``a_V`` the moving ground's term, class docstring), the work ``y[14]``
        and ``t``).

        Raises
        ------
        ValueError
            The contact of ``y`` fails (a contact event, a singular contact).
        """
        y = np.asarray(y, dtype=float)
        result = self._rates(t, y, extras=True)
        if result[0] != OK:
            raise ValueError(f"Expected a state with a regular contact (status {result[0]}).")
        _, _, (s, x, n, n_M, _, N, _) = result
        A, omega = y[:9].reshape(3, 3), y[11:14]
        V = np.zeros(3)
        if self.motion is not None:
            V = ground_velocity(self.motion.at(t), x)
        return np.concatenate([A.ravel(), x - A @ s, self.inertia @ omega,
                               self.mass * (V - A @ cross(omega, s)), s, x, n, n_M,
                               [0.0, N, y[14], t]])

    def energy(self, y, t):
        """``E - W`` at the state ``y`` (15,) and time ``t``: the kinetic energy
        ``Omega . I Omega / 2 + m |v|^2 / 2`` (``v = V(x) - A (Omega x s)``, ``V`` a moving
        ground's velocity at the contact), gravity's ``m g up . a`` and the force elements'
        potentials at the centre ``a = x - A s``, less the work ``y[14]``: the first integral
        of the field (a moving ground's power and the non-potential elements' are in ``W``).

        Raises
        ------
        ValueError
            The contact of ``y`` fails (a contact event, a singular contact).
        """
        y = np.asarray(y, dtype=float)
        status, energy, _ = self._energy(y, t, *self._ground_point(y, t))
        if status != OK:
            raise ValueError(f"Expected a state with a regular contact (status {status}).")
        return energy

    def _energy(self, y, t, x, n):
        """``(status, E - W, (g, d, a))`` at ``y``, with the ground's point ``x`` and normal ``n``
        (space) under its contact (:meth:`_ground_point`): the first integral (:meth:`energy`)
        and its gradient in ``Omega``, Euclidean ``g`` and in the kinetic metric
        ``d = I~^-1 g``, and ``a = g . d`` (:meth:`project`). The body's contact point is its
        support point in the direction ``-A^T n``, as :meth:`_rates` finds it."""
        A, omega = y[:9].reshape(3, 3), y[11:14]
        status, s, _, _ = self.shape.support(-(A.T @ n))
        if status != OK:
            return status, None, None
        m = self.mass
        V = np.zeros(3)
        if self.motion is not None:
            V = ground_velocity(self.motion.at(t), x)
        v = V - A @ cross(omega, s)
        a = x - A @ s
        energy = (0.5 * omega @ self.inertia @ omega + 0.5 * m * v @ v
                  + m * self.gravity * self.up @ a - y[14])
        if self.forces is not None:
            energy += self.forces.potential(A, a)
        S = hat(s)
        grad = self.inertia @ omega - m * cross(s, A.T @ v)  # dv/dOmega = A hat(s)
        d = np.linalg.solve(self.inertia - m * S @ S, grad)
        return OK, float(energy), (grad, d, float(grad @ d))

    def _ground_point(self, y, t):
        """``(x, n)``: the ground's point and normal (space) at the state's ``z`` and time
        ``t``."""
        x, _, _, n, _ = ground_geometry(self.ground, self.chart, y[9:11])
        if self.motion is not None:  # the ground's point and normal in space
            Q, d, _, _ = self.motion.at(t)
            x, n = Q @ x + d, Q @ n
        return x, n

    def project(self, y, t=0.0):
        """Put the state ``y`` (15,) at time ``t`` back on the manifold, in place: ``A`` to the
        rotation that keeps the body's normal direction (class docstring), the rest unchanged;
        with a finite
        :attr:`energy_level`, then ``Omega`` along the metric gradient of ``E - W`` onto that
        level (:mod:`nhphys.twins.rhs`, "Holding the energy"; ``t`` places a moving ground).
        ``y`` must be a writable C-contiguous float64 array of shape (15,) (a ``ValueError``
        otherwise), as for the kernel. Returns 0, or the status of a failed contact (the
        energy is then not projected)."""
        dop853.check_state(y, FIELD_STATE)
        A = y[:9].reshape(3, 3)
        x, n = self._ground_point(y, t)  # (z and t only: the same after A's projection)
        b = A.T @ n
        b /= np.linalg.norm(b)  # the body's normal direction the contact was found with
        U = so3.polar_factor(A)
        y[:9] = (tilt_onto(U @ b, n) @ U).ravel()
        if self.energy_level != self.energy_level:  # NaN: the energy is not held
            return OK
        status, energy, gradient = self._energy(y, t, x, n)
        if status != OK:
            return status
        _, d, metric_square = gradient
        mu = energy_correction(energy - self.energy_level, metric_square)
        if mu == 0.0 and energy != self.energy_level:
            self.energy_misses += 1  # the velocities cannot reach the level here
        y[11:14] += mu * d
        return OK

    def integrate(self, y, t0, t1, rtol, atol, h_abs, max_steps, project=True):
        """Advance ``y`` (15,) in place from ``t0`` to ``t1`` by DOP853 with the field evaluated
        in place (no Python call per stage in the kernel), projecting every accepted step
        (:meth:`project`) unless ``project`` is False; see :func:`nhphys.twins.dop853.integrate`
        for the algorithm, the arguments and the returned ``(status, solver_code, h_next,
        steps)``. A failed field call (a contact event) returns its status."""
        dop853.check_state(y, FIELD_STATE)

        def rates(t, state):  # (status, rates), NaN rates for a failed contact, as __call__
            self.evaluations += 1
            status, out = self._rates(t, state)
            if status != OK:
                self.status = self.status or status
                return status, np.full(FIELD_STATE, np.nan)
            return status, out

        def projected(t, state):
            status = self.project(state, t)
            if status != OK:
                self.status = self.status or status
            return status

        return dop853.integrate(rates, y, t0, t1, rtol, atol, h_abs, max_steps,
                                projected if project else None)
