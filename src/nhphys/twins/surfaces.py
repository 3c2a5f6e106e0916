"""Python twin of ``nhphys_ext.surfaces``: the specification of the surface kernels.

Same class names, constructors and methods as the kernel. Each surface class implements one
per-point function, ``chart_local(chart, u, v) -> (r, J, H)``: the chart map in the surface's own
frame with its first and second derivatives, shapes (3,), (3, 2), (3, 2, 2). The base class
:class:`ChartSurface` places that frame in space, fixes the sign of the normal, changes charts
and loops over arrays. Array methods take ``chart`` (n,) integers and ``uv`` (n, 2) floats and
return new arrays. The public, validated API is :mod:`nhphys.surfaces`; this module assumes
valid input.

Conventions (shared by every module of nhphys)
----------------------------------------------
* ``J = dr/du`` (3, 2), ``g = J^T J``, ``II_ab = n . d^2 r / du_a du_b``, Weingarten map
  ``L = g^-1 II`` acting on chart velocities, so that ``L (du/dt)`` are the chart components of
  ``-dn/dt``: differentiating ``n . J_b = 0`` along a curve gives
  ``dn/dt . J_b = -n . (dJ_b/dt) = -II_ab du^a/dt``, i.e. ``J^T (-dn/dt) = II du/dt = g L du/dt``,
  and ``-dn/dt`` is tangent (``|n| = 1``), so ``-dn/dt = J L du/dt``.
* The sign of ``n`` is the role's: ``n = orientation * chart_sign[chart] * (J_u x J_v)/|J_u x J_v|``
  where ``chart_sign`` makes ``chart_sign * J_u x J_v`` the surface's *reference* normal (outward
  for closed surfaces, documented per class for open ones) and ``orientation`` is +1 or -1. A body
  surface uses the normal into the body (``orientation = -1`` for a closed one), a ground the
  normal toward the side the body is on. Flipping the orientation flips ``n``, ``II``, ``L``, the
  principal and mean curvatures, and keeps the Gaussian curvature.
* Principal curvatures are the eigenvalues of ``L``, returned as ``k1 >= k2`` with unit principal
  directions in space. With the normal into a convex body they are positive; with the outward
  normal of a sphere of radius ``R`` both are ``-1/R``.
* Placement: ``r = center + rotation @ r_local``; ``J`` and ``H`` rotate the same way.
"""

import math

import numpy as np

# Stereographic charts switch when |w| exceeds this; the other chart then has |w'| = 1/|w| < 1/1.5.
STEREO_RECHART_RADIUS = 1.5
# Relative gap between principal curvatures below which a point counts as an umbilic.
UMBILIC_TOL = 1e-10


# ----------------------------------------------------------------------------------------------
# per-point derived quantities (same names as the inline functions of surfaces.pxd)


def normal_of(J, sign):
    """Unit normal ``sign (J_u x J_v)/|J_u x J_v|`` and the area element ``|J_u x J_v|``."""
    c = np.cross(J[:, 0], J[:, 1])
    a = math.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
    return c * (sign / a), a


def forms_of(J, H, n):
    """First and second fundamental forms ``g = J^T J``, ``II_ab = n . H[:, a, b]``."""
    g = J.T @ J
    II = np.einsum("i,iab->ab", n, H)
    return g, II


def weingarten_of(g, II):
    """The Weingarten map ``L = g^-1 II`` (2, 2)."""
    det = g[0, 0] * g[1, 1] - g[0, 1] * g[1, 0]
    ginv = np.array([[g[1, 1], -g[0, 1]], [-g[1, 0], g[0, 0]]]) / det
    return ginv @ II


def gaussian_of(g, II):
    """Gaussian curvature ``det II / det g``."""
    return (II[0, 0] * II[1, 1] - II[0, 1] * II[1, 0]) / (g[0, 0] * g[1, 1] - g[0, 1] * g[1, 0])


def mean_of(g, II):
    """Mean curvature ``trace(g^-1 II) / 2``."""
    return 0.5 * float(np.trace(weingarten_of(g, II)))


def principal_of(J, II, n):
    """Principal curvatures ``k1 >= k2`` and their unit directions (2, 3) in space.

    In the orthonormal tangent frame ``e1 = J_u/|J_u|``, ``e2 = n x e1`` the Jacobian is
    ``P = E^T J``, upper triangular; the Weingarten map there, ``P L P^-1 = P^-T II P^-1``, is
    symmetric, and one Jacobi rotation by ``theta = atan2(2 s01, s00 - s11)/2`` diagonalises it.
    At umbilics (``k1 - k2 <= UMBILIC_TOL (|k1 + k2|/2 + (k1 - k2)/2)``) the directions are
    ``e1, e2``: every direction is principal there, and the rotation angle would be noise.
    Each direction is defined up to sign; ``d1`` is chosen with its larger component in
    ``(e1, e2)`` positive, and ``d2 = n x d1``.
    """
    e1 = J[:, 0] / math.sqrt(J[:, 0] @ J[:, 0])
    e2 = np.cross(n, e1)
    P = np.array([[e1 @ J[:, 0], e1 @ J[:, 1]], [0.0, e2 @ J[:, 1]]])
    Q = np.linalg.inv(P)
    S = Q.T @ II @ Q
    m = 0.5 * (S[0, 0] + S[1, 1])
    d = math.sqrt(0.25 * (S[0, 0] - S[1, 1]) ** 2 + S[0, 1] ** 2)
    if d <= UMBILIC_TOL * (abs(m) + d):
        th = 0.0  # an umbilic: every direction is principal, take e1 and e2
    else:
        th = 0.5 * math.atan2(2.0 * S[0, 1], S[0, 0] - S[1, 1])
    c, s = math.cos(th), math.sin(th)
    if (abs(c) >= abs(s) and c < 0.0) or (abs(c) < abs(s) and s < 0.0):
        c, s = -c, -s  # sign: the larger of d1's two components in (e1, e2) is positive
    return np.array([m + d, m - d]), np.array([c * e1 + s * e2, -s * e1 + c * e2])


def stereographic(chart, u, v):
    """Unit sphere from the plane, with derivatives: ``(x (3,), Jx (3, 2), Hx (3, 2, 2))``.

    Chart 0 sends ``w = (u, v) = 0`` to the north pole and misses the south pole,
    ``sigma = (2 u q, 2 v q, 2 q - 1)`` with ``q = 1/(1 + |w|^2)``; chart 1 is its mirror image
    in the equator (third component ``1 - 2 q``). With ``q_a = -2 w_a q^2`` and
    ``q_ab = -2 delta_ab q^2 + 8 w_a w_b q^3``, ``d_a (2 w_i q) = 2 delta_ia q + 2 w_i q_a`` and
    ``d_ab (2 w_i q) = 2 delta_ia q_b + 2 delta_ib q_a + 2 w_i q_ab``. The two charts are related
    by the inversion ``w' = w/|w|^2`` (both send ``w`` and ``w'`` to the same point), and each
    covers its closed hemisphere with ``|w| <= 1``: neither has a singular point there.
    """
    q = 1.0 / (1.0 + u * u + v * v)
    w = np.array([u, v])
    qa = -2.0 * w * q * q
    qab = 8.0 * np.outer(w, w) * q**3 - 2.0 * q * q * np.eye(2)
    s3 = 1.0 if chart == 0 else -1.0
    x = np.array([2 * u * q, 2 * v * q, s3 * (2 * q - 1.0)])
    Jx = np.zeros((3, 2))
    Hx = np.zeros((3, 2, 2))
    for i in range(2):
        Jx[i] = 2.0 * w[i] * qa
        Jx[i, i] += 2.0 * q
        Hx[i] = 2.0 * w[i] * qab
        Hx[i, i, :] += 2.0 * qa
        Hx[i, :, i] += 2.0 * qa
    Jx[2] = 2.0 * s3 * qa
    Hx[2] = 2.0 * s3 * qab
    return x, Jx, Hx


def wrap_angle(x):
    """The representative of ``x`` modulo ``2 pi`` in ``[-pi, pi)``."""
    y = x - 2.0 * math.pi * math.floor((x + math.pi) / (2.0 * math.pi))
    if y < -math.pi:
        y += 2.0 * math.pi
    elif y >= math.pi:
        y -= 2.0 * math.pi
    return y


# ----------------------------------------------------------------------------------------------


class ChartSurface:
    """Placement, normal sign, chart changes and array loops shared by every surface."""

    n_charts = 1
    chart_sign = (1.0, 1.0)

    def __init__(self, orientation, center, rotation):
        self.orientation = float(orientation)
        self.ctr = np.asarray(center, dtype=float).reshape(3).copy()
        self.rot = np.asarray(rotation, dtype=float).reshape(3, 3).copy()
        self.placed = bool(np.any(self.ctr != 0.0) or np.any(self.rot != np.eye(3)))

    # -- per point --------------------------------------------------------------------------

    def chart_local(self, chart, u, v):
        """``(r (3,), J (3, 2), H (3, 2, 2))`` of chart ``chart`` at ``(u, v)``, own frame."""
        return np.zeros(3), np.zeros((3, 2)), np.zeros((3, 2, 2))

    def evaluate(self, chart, u, v):
        """``(r, J, H)`` in space: ``r = center + R r_local``, ``J = R J_local``, ``H = R H_local``.
        """
        r, J, H = self.chart_local(chart, u, v)
        if not self.placed:
            return r, J, H
        return self.ctr + self.rot @ r, self.rot @ J, np.einsum("ik,kab->iab", self.rot, H)

    def normal_sign(self, chart):
        """The factor turning ``J_u x J_v`` of chart ``chart`` into the role's normal."""
        return self.orientation * self.chart_sign[chart]

    def change_chart_point(self, chart, u, v, target):
        """``(status, u, v)``: status 0 with the coordinates in chart ``target``, or -1."""
        return (0 if target == chart else -1), u, v

    def rechart_point(self, chart, u, v):
        """``(changed, chart, u, v)``: the preferred coordinates of the same point."""
        return 0, chart, u, v

    def support_local(self, d):
        """``(status, chart, u, v)`` of the point whose outward normal is ``d`` (own frame)."""
        return -1, 0, 0.0, 0.0

    def support(self, d):
        """``(status, chart, u, v)`` of the point whose outward normal is ``d`` (space)."""
        return self.support_local(self.rot.T @ np.asarray(d, dtype=float))

    def weingarten_point(self, chart, u, v):
        """``(n (3,), L (2, 2))`` at one point."""
        _, J, H = self.evaluate(chart, u, v)
        n, _ = normal_of(J, self.normal_sign(chart))
        g, II = forms_of(J, H, n)
        return n, weingarten_of(g, II)

    # -- arrays -----------------------------------------------------------------------------

    def _loop(self, what, chart, uv):
        out = []
        for c, (u, v) in zip(np.asarray(chart), np.asarray(uv, dtype=float)):
            c = int(c)
            r, J, H = self.evaluate(c, u, v)
            if what == "point":
                out.append(r)
                continue
            if what == "jacobian":
                out.append(J)
                continue
            if what == "hessian":
                out.append(H)
                continue
            if what == "area":
                out.append(normal_of(J, 1.0)[1])
                continue
            n, _ = normal_of(J, self.normal_sign(c))
            if what == "normal":
                out.append(n)
                continue
            g, II = forms_of(J, H, n)
            if what == "first":
                out.append(g)
            elif what == "second":
                out.append(II)
            elif what == "weingarten":
                out.append(weingarten_of(g, II))
            elif what == "gaussian":
                out.append(gaussian_of(g, II))
            elif what == "mean":
                out.append(mean_of(g, II))
            else:
                k, d = principal_of(J, II, n)
                out.append(np.concatenate([k, d.ravel()]))
        return out

    @staticmethod
    def _stack(out, shape):
        return np.array(out, dtype=float).reshape((len(out),) + shape)

    def point(self, chart, uv):
        """Points r(u): (n,), (n, 2) -> (n, 3)."""
        return self._stack(self._loop("point", chart, uv), (3,))

    def jacobian(self, chart, uv):
        """Jacobians dr/du: (n,), (n, 2) -> (n, 3, 2)."""
        return self._stack(self._loop("jacobian", chart, uv), (3, 2))

    def hessian(self, chart, uv):
        """Second derivatives d^2 r/du du: (n,), (n, 2) -> (n, 3, 2, 2)."""
        return self._stack(self._loop("hessian", chart, uv), (3, 2, 2))

    def normal(self, chart, uv):
        """Unit normals with the role's sign: (n,), (n, 2) -> (n, 3)."""
        return self._stack(self._loop("normal", chart, uv), (3,))

    def area_element(self, chart, uv):
        """sqrt(det g): (n,), (n, 2) -> (n,)."""
        return self._stack(self._loop("area", chart, uv), ())

    def first_fundamental_form(self, chart, uv):
        """g = J^T J: (n,), (n, 2) -> (n, 2, 2)."""
        return self._stack(self._loop("first", chart, uv), (2, 2))

    def second_fundamental_form(self, chart, uv):
        """II_ab = n . d^2 r/du_a du_b: (n,), (n, 2) -> (n, 2, 2)."""
        return self._stack(self._loop("second", chart, uv), (2, 2))

    def weingarten(self, chart, uv):
        """L = g^-1 II on chart velocities: (n,), (n, 2) -> (n, 2, 2)."""
        return self._stack(self._loop("weingarten", chart, uv), (2, 2))

    def gaussian_curvature(self, chart, uv):
        """det L: (n,), (n, 2) -> (n,)."""
        return self._stack(self._loop("gaussian", chart, uv), ())

    def mean_curvature(self, chart, uv):
        """trace(L) / 2: (n,), (n, 2) -> (n,)."""
        return self._stack(self._loop("mean", chart, uv), ())

    def principal_curvatures(self, chart, uv):
        """Curvatures k1 >= k2 (n, 2) and unit directions (n, 2, 3)."""
        out = self._stack(self._loop("principal", chart, uv), (8,))
        return out[:, :2].copy(), out[:, 2:].reshape(-1, 2, 3)

    def rechart(self, chart, uv):
        """Preferred chart coordinates of the same points: -> chart (n,), uv (n, 2)."""
        chart_out = np.empty(len(uv), dtype=np.intp)
        uv_out = np.empty((len(uv), 2))
        for p, (c, (u, v)) in enumerate(zip(chart, uv)):
            _, chart_out[p], uv_out[p, 0], uv_out[p, 1] = self.rechart_point(int(c), u, v)
        return chart_out, uv_out

    def change_chart(self, chart, uv, target):
        """Coordinates in chart ``target`` of the same points: -> uv (n, 2), ok (n,) bool."""
        uv_out = np.empty((len(uv), 2))
        ok = np.empty(len(uv), dtype=bool)
        for p, (c, (u, v), t) in enumerate(zip(chart, uv, target)):
            status, uv_out[p, 0], uv_out[p, 1] = self.change_chart_point(int(c), u, v, int(t))
            ok[p] = status == 0
        return uv_out, ok

    def support_point(self, direction):
        """Chart coordinates of the points whose outward normals are the unit ``direction``.

        Raises ValueError when the surface has no inverse Gauss map.
        """
        direction = np.asarray(direction, dtype=float)
        chart_out = np.empty(len(direction), dtype=np.intp)
        uv_out = np.empty((len(direction), 2))
        status = self.support_local(np.array([0.0, 0.0, 1.0]))[0]
        for p, d in enumerate(direction):
            status, chart_out[p], uv_out[p, 0], uv_out[p, 1] = self.support(d)
        if status != 0:
            raise ValueError(
                f"support_point needs a strictly convex closed surface; {type(self).__name__} "
                "has no inverse Gauss map."
            )
        return chart_out, uv_out


class Plane(ChartSurface):
    """``r(u, v) = (u, v, 0)`` in the plane's frame; reference normal ``+z`` of that frame."""

    def chart_local(self, chart, u, v):
        J = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        return np.array([u, v, 0.0]), J, np.zeros((3, 2, 2))


class Ellipsoid(ChartSurface):
    """``r = diag(a, b, c) sigma(w)`` with the two stereographic charts of :func:`stereographic`.

    Atlas: chart 0 is centred on the ``+z`` pole, chart 1 on the ``-z`` pole, related by
    ``w' = w/|w|^2``. ``rechart_point`` switches when ``|w| > STEREO_RECHART_RADIUS`` (1.5), so a
    point always sits at ``|w| <= 1.5`` of its chart, well inside the region where the chart is
    regular (its only missing point is at ``|w| = infinity``): no chart is singular at a pole, and
    the switch has hysteresis (a point that just switched has ``|w'| < 2/3``).
    ``J_u x J_v`` of chart 0 points outward (``+z`` at ``w = 0``), that of chart 1 inward (the
    inversion reverses orientation), hence ``chart_sign = (+1, -1)``.

    Inverse Gauss map: the outward normal of ``x . D^-2 x = 1`` at ``x = D s`` (``|s| = 1``,
    ``D = diag(a, b, c)``) is along ``D^-2 x = D^-1 s``. Setting it along the unit ``d`` gives
    ``s = D d/|D d|``, read in the chart whose hemisphere holds ``s``:
    ``w = (s_1, s_2)/(1 + |s_3|)`` (no cancellation, since ``1 + |s_3| >= 1``).
    """

    n_charts = 2
    chart_sign = (1.0, -1.0)

    def __init__(self, a, b, c, orientation, center, rotation):
        self.ax = np.array([a, b, c], dtype=float)
        super().__init__(orientation, center, rotation)

    def chart_local(self, chart, u, v):
        x, Jx, Hx = stereographic(chart, u, v)
        return self.ax * x, self.ax[:, None] * Jx, self.ax[:, None, None] * Hx

    def change_chart_point(self, chart, u, v, target):
        if target == chart:
            return 0, u, v
        if target not in (0, 1):
            return -1, u, v
        d = u * u + v * v
        if d == 0.0:
            return -1, u, v
        return 0, u / d, v / d

    def rechart_point(self, chart, u, v):
        if u * u + v * v > STEREO_RECHART_RADIUS * STEREO_RECHART_RADIUS:
            _, u, v = self.change_chart_point(chart, u, v, 1 - chart)
            return 1, 1 - chart, u, v
        return 0, chart, u, v

    def support_local(self, d):
        s = self.ax * d
        s = s / math.sqrt(s @ s)
        if s[2] >= 0.0:
            return 0, 0, s[0] / (1.0 + s[2]), s[1] / (1.0 + s[2])
        return 0, 1, s[0] / (1.0 - s[2]), s[1] / (1.0 - s[2])


class Sphere(Ellipsoid):
    """The ellipsoid with three equal semi-axes."""

    def __init__(self, radius, orientation, center, rotation):
        super().__init__(radius, radius, radius, orientation, center, rotation)


class Torus(ChartSurface):
    """``r = ((R + r cos th) cos ph, (R + r cos th) sin ph, r sin th)``, ``(u, v) = (ph, th)``.

    One chart, periodic in both angles, regular everywhere when ``r < R``;
    ``J_ph x J_th = r (R + r cos th) (cos th cos ph, cos th sin ph, sin th)`` points outward
    (away from the tube's core circle). ``rechart_point`` wraps both angles into ``[-pi, pi)``.
    """

    def __init__(self, major, minor, orientation, center, rotation):
        self.major = float(major)
        self.minor = float(minor)
        super().__init__(orientation, center, rotation)

    def chart_local(self, chart, u, v):
        cu, su, cv, sv = math.cos(u), math.sin(u), math.cos(v), math.sin(v)
        a = self.major + self.minor * cv
        b = self.minor
        r = np.array([a * cu, a * su, b * sv])
        J = np.array([[-a * su, -b * sv * cu], [a * cu, -b * sv * su], [0.0, b * cv]])
        H = np.array(
            [
                [[-a * cu, b * sv * su], [b * sv * su, -b * cv * cu]],
                [[-a * su, -b * sv * cu], [-b * sv * cu, -b * cv * su]],
                [[0.0, 0.0], [0.0, -b * sv]],
            ]
        )
        return r, J, H

    def rechart_point(self, chart, u, v):
        if -math.pi <= u < math.pi and -math.pi <= v < math.pi:
            return 0, chart, u, v
        return 1, chart, wrap_angle(u), wrap_angle(v)


class Paraboloid(ChartSurface):
    """Graph ``z = cx x^2 + cy y^2`` over ``(u, v) = (x, y)``; reference normal on the ``+z`` side.

    ``cx, cy > 0`` is elliptic (a bowl), ``cx cy < 0`` hyperbolic (a saddle).
    """

    def __init__(self, cx, cy, orientation, center, rotation):
        self.cx = float(cx)
        self.cy = float(cy)
        super().__init__(orientation, center, rotation)

    def chart_local(self, chart, u, v):
        r = np.array([u, v, self.cx * u * u + self.cy * v * v])
        J = np.array([[1.0, 0.0], [0.0, 1.0], [2 * self.cx * u, 2 * self.cy * v]])
        H = np.zeros((3, 2, 2))
        H[2] = [[2 * self.cx, 0.0], [0.0, 2 * self.cy]]
        return r, J, H


# Quintic Hermite basis on [0, 1]: row j holds the coefficients of s^0..s^5 of the basis
# function multiplying, in order, h p0', h^2 p0'', h^2 p1'', h p1' and (p1 - p0); the value basis
# of p0 is 1 minus the last row, which is why p0 enters only through the difference. The basis
# reproduces every quintic, so a degree-5 spline is represented exactly by its values and two
# derivatives at the knots.
QUINTIC = (
    (0.0, 1.0, 0.0, -6.0, 8.0, -3.0),
    (0.0, 0.0, 0.5, -1.5, 1.5, -0.5),
    (0.0, 0.0, 0.0, 0.5, -1.0, 0.5),
    (0.0, 0.0, 0.0, -4.0, 7.0, -3.0),
    (0.0, 0.0, 0.0, 10.0, -15.0, 6.0),
)


def quintic_eval(k0, k1, h, s):
    """Value, first and second derivative at ``s`` in the cell with end data ``k0``, ``k1``.

    ``k0``, ``k1`` hold (value, first, second derivative) in the physical variable; the cell has
    width ``h``, and ``s`` is the cell-relative position (outside [0, 1] extrapolates). Writing
    the value part as ``p0 + (p1 - p0) B(s)`` keeps the round-off of the derivatives at the
    unavoidable ``eps |p| / h`` (a power-basis form would mix in cancellations of O(1) terms).
    """
    w = (h * k0[1], h * h * k0[2], h * h * k1[2], h * k1[1], k1[0] - k0[0])
    v = d1 = d2 = 0.0
    for wj, c in zip(w, QUINTIC):
        v += wj * (c[0] + s * (c[1] + s * (c[2] + s * (c[3] + s * (c[4] + s * c[5])))))
        d1 += wj * (c[1] + s * (2.0 * c[2] + s * (3.0 * c[3] + s * (4.0 * c[4] + s * 5.0 * c[5]))))
        d2 += wj * (2.0 * c[2] + s * (6.0 * c[3] + s * (12.0 * c[4] + s * 20.0 * c[5])))
    return np.array([k0[0] + v, d1 / h, d2 / (h * h)])


class SurfaceOfRevolution(ChartSurface):
    """``r(t, ph) = (rho(t) cos ph, rho(t) sin ph, z(t))``, ``(u, v) = (t, ph)``.

    The profile is a quintic Hermite interpolant on uniform knots ``t_k = t0 + k h``;
    ``knots`` (N, 6) holds ``(rho, rho', rho'', z, z', z'')`` at each knot, so ``r`` is C^2 and
    its Hessian continuous. Outside ``[t0, t0 + (N-1) h]`` the end cells extrapolate; a periodic
    profile (``knots[-1] == knots[0]``) is evaluated modulo its period.
    ``J_t x J_ph = rho (-z' cos ph, -z' sin ph, rho')``; the reference normal is its opposite,
    ``(z' cos ph, z' sin ph, -rho')/|.|``, i.e. the profile tangent ``(rho', z')`` turned
    clockwise: outward for a profile running upward (``z' > 0``) at ``rho > 0``, and outward for a
    closed profile traversed counterclockwise in the ``(rho, z)`` half-plane. Hence
    ``chart_sign = -1``. ``rechart_point`` wraps ``ph`` (and ``t`` for a periodic profile).
    """

    chart_sign = (-1.0, -1.0)

    def __init__(self, knots, t0, h, periodic, orientation, center, rotation):
        self.knots = np.array(knots, dtype=float)
        self.t0 = float(t0)
        self.h = float(h)
        self.periodic = bool(periodic)
        super().__init__(orientation, center, rotation)

    def profile(self, t):
        """``(rho, z)``, each (value, first, second derivative) at ``t``."""
        n = len(self.knots)
        if self.periodic:
            period = (n - 1) * self.h
            t = t - period * math.floor((t - self.t0) / period)
        x = (t - self.t0) / self.h
        k = min(max(math.floor(x), 0), n - 2)
        rho = quintic_eval(self.knots[k, 0:3], self.knots[k + 1, 0:3], self.h, x - k)
        z = quintic_eval(self.knots[k, 3:6], self.knots[k + 1, 3:6], self.h, x - k)
        return rho, z

    def chart_local(self, chart, u, v):
        rho, z = self.profile(u)
        c, s = math.cos(v), math.sin(v)
        r = np.array([rho[0] * c, rho[0] * s, z[0]])
        J = np.array([[rho[1] * c, -rho[0] * s], [rho[1] * s, rho[0] * c], [z[1], 0.0]])
        H = np.array(
            [
                [[rho[2] * c, -rho[1] * s], [-rho[1] * s, -rho[0] * c]],
                [[rho[2] * s, rho[1] * c], [rho[1] * c, -rho[0] * s]],
                [[z[2], 0.0], [0.0, 0.0]],
            ]
        )
        return r, J, H

    def rechart_point(self, chart, u, v):
        changed = 0
        if not (-math.pi <= v < math.pi):
            v = wrap_angle(v)
            changed = 1
        if self.periodic:
            period = (len(self.knots) - 1) * self.h
            if not (self.t0 <= u < self.t0 + period):
                u = u - period * math.floor((u - self.t0) / period)
                changed = 1
        return changed, chart, u, v


def cubic_basis(s, h):
    """Cubic Hermite basis at ``s``: ``b[corner, kind, order]``.

    ``corner`` 0/1 is the cell's left/right node, ``kind`` 0 multiplies the value and 1 the
    slope (the slope basis carries the factor ``h``), ``order`` 0..2 is the derivative with
    respect to the physical coordinate.
    """
    return np.array(
        [
            [
                [1.0 - s * s * (3.0 - 2.0 * s), (-6.0 * s + 6.0 * s * s) / h,
                 (-6.0 + 12.0 * s) / h**2],
                [h * (s - 2.0 * s * s + s**3), 1.0 - 4.0 * s + 3.0 * s * s, (-4.0 + 6.0 * s) / h],
            ],
            [
                [s * s * (3.0 - 2.0 * s), (6.0 * s - 6.0 * s * s) / h, (6.0 - 12.0 * s) / h**2],
                [h * (-s * s + s**3), -2.0 * s + 3.0 * s * s, (-2.0 + 6.0 * s) / h],
            ],
        ]
    )


class HeightField(ChartSurface):
    """Graph ``z = f(x, y)`` over ``(u, v) = (x, y)``; reference normal on the ``+z`` side.

    ``f`` is the bicubic Hermite interpolant of ``nodes`` (nx, ny, 4) = ``(f, f_x, f_y, f_xy)`` on
    the uniform grid ``x_i = x0 + i hx``, ``y_j = y0 + j hy``: C^1 in general, and C^2 (so the
    Weingarten map is continuous) when the node data come from a bicubic spline, which is how
    :class:`nhphys.surfaces.HeightField` builds them. Outside the grid the edge cells extrapolate.
    """

    def __init__(self, nodes, x0, hx, y0, hy, orientation, center, rotation):
        self.nodes = np.array(nodes, dtype=float)
        self.x0, self.hx, self.y0, self.hy = float(x0), float(hx), float(y0), float(hy)
        super().__init__(orientation, center, rotation)

    def chart_local(self, chart, u, v):
        nx, ny = self.nodes.shape[:2]
        xs = (u - self.x0) / self.hx
        ys = (v - self.y0) / self.hy
        ix = min(max(math.floor(xs), 0), nx - 2)
        iy = min(max(math.floor(ys), 0), ny - 2)
        bx = cubic_basis(xs - ix, self.hx)
        by = cubic_basis(ys - iy, self.hy)
        f = np.zeros((3, 3))  # f[p, q] = d^p/dx^p d^q/dy^q f
        for i in range(2):
            for j in range(2):
                for kx in range(2):
                    for ky in range(2):
                        d = self.nodes[ix + i, iy + j, kx + 2 * ky]
                        f += d * np.outer(bx[i, kx], by[j, ky])
        r = np.array([u, v, f[0, 0]])
        J = np.array([[1.0, 0.0], [0.0, 1.0], [f[1, 0], f[0, 1]]])
        H = np.zeros((3, 2, 2))
        H[2] = [[f[2, 0], f[1, 1]], [f[1, 1], f[0, 2]]]
        return r, J, H
