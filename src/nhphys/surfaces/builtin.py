"""Built-in surfaces with closed-form charts: Plane, Sphere, Ellipsoid, Torus, Paraboloid.

Each evaluates through a ``cdef`` class of ``nhphys_ext.surfaces`` (or its twin in
:mod:`nhphys.twins.surfaces`), so a compiled kernel can use it without the GIL.
"""

from __future__ import annotations

import numpy as np

from nhphys._validation import as_choice, as_float_array, as_positive_scalar
from nhphys.surfaces.base import (
    Domain,
    Location,
    Surface,
    as_center,
    as_rotation_matrix,
    grid_faces,
    orient_faces,
)


def unit_sphere_locations(s):
    """Stereographic chart coordinates of unit vectors ``s`` (n, 3) -> (chart (n,), uv (n, 2)).

    The chart is the one whose hemisphere holds ``s`` (chart 0 for ``s_3 >= 0``), so
    ``|uv| <= 1`` and ``uv = (s_1, s_2)/(1 + |s_3|)`` has no cancellation.
    """
    s = np.asarray(s, dtype=float)
    south = s[:, 2] < 0
    chart = south.astype(np.intp)
    uv = s[:, :2] / (1.0 + np.abs(s[:, 2]))[:, None]
    return chart, np.ascontiguousarray(uv)


class Plane(Surface):
    """The plane through ``point`` with unit normal along ``normal``.

    Chart: ``r(u, v) = point + u e1 + v e2`` with ``(e1, e2, normal)`` a right-handed orthonormal
    frame (``e1`` is the unit vector of the coordinate axis least aligned with ``normal``,
    orthogonalised). The reference normal is ``normal`` itself, so as a ground the body should be
    on the side ``normal`` points to (``orientation="outward"``).

    Parameters
    ----------
    point : array_like, shape (3,)
    normal : array_like, shape (3,)
        Non-zero.
    orientation : {"outward", "inward", 1, -1}
    extent : float
        Half-width of the square shown by :meth:`mesh` (the plane itself is unbounded).
    backend : {"auto", "cython", "python"}
    """

    def __init__(self, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), *, orientation="outward",
                 extent=1.0, backend="auto"):
        super().__init__(orientation, backend)
        self.point0 = as_center(point, "point")
        n = as_float_array(normal, "normal", (3,))
        if n.shape != (3,):
            raise ValueError(f"Expected `normal` to have shape (3,), got {n.shape}.")
        norm = float(np.linalg.norm(n))
        if norm == 0.0:
            raise ValueError("Expected `normal` to be a non-zero vector, got (0, 0, 0).")
        self.source = {"normal": n.copy()}
        n = n / norm
        axis = np.zeros(3)
        axis[int(np.argmin(np.abs(n)))] = 1.0
        e1 = axis - (axis @ n) * n
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(n, e1)
        self.unit_normal = n
        self.rotation = np.stack([e1, e2, n], axis=1)
        self.extent = as_positive_scalar(extent, "extent")

    def _build(self, module):
        return module.Plane(float(self._orientation), self.point0, self.rotation)

    def _describe(self):
        return f"point={self.point0.tolist()}, normal={self.unit_normal.tolist()}"

    def _display_box(self):
        return [(-self.extent, self.extent), (-self.extent, self.extent)]

    def _project_flat(self, p, tol, max_iter):
        local = (p - self.point0) @ self.rotation
        return np.zeros(len(p), dtype=np.intp), np.ascontiguousarray(local[:, :2])


class Ellipsoid(Surface):
    """Ellipsoid with semi-axes ``(a, b, c)`` along the columns of ``rotation``, centre ``center``.

    Atlas: two stereographic charts of the unit sphere, scaled by the semi-axes
    (``r = center + R diag(a, b, c) sigma(w)``). Chart 0 is centred on the ``+c`` pole and chart 1
    on the ``-c`` pole; they are related by ``w' = w/|w|^2``. Every point lies at ``|w| <= 1`` of
    the chart of its hemisphere and :meth:`rechart` switches beyond ``|w| = 1.5``, so no chart is
    ever used near its one missing point: there is no singular chart at any pole. Derivation of
    the charts and of the inverse Gauss map (:meth:`support_point`,
    ``s = D d/|D d|``): see :class:`nhphys.twins.surfaces.Ellipsoid`.

    Parameters
    ----------
    semi_axes : array_like, shape (3,)
        Positive.
    center : array_like, shape (3,), optional
    rotation : array_like, shape (3, 3), optional
        Body-to-space rotation of the principal axes.
    orientation : {"outward", "inward", 1, -1}
        ``"inward"`` (or :meth:`as_body`) for the shape of a body.
    backend : {"auto", "cython", "python"}

    Examples
    --------
    >>> e = Ellipsoid([1.0, 2.0, 3.0]).as_body()
    >>> loc = e.support_point([0.0, 0.0, -1.0])   # lowest point
    >>> e.point(loc).round(12).tolist()
    [0.0, 0.0, -3.0]
    """

    closed = True
    strictly_convex = True
    n_charts = 2

    def __init__(self, semi_axes, center=None, rotation=None, *, orientation="outward",
                 backend="auto"):
        super().__init__(orientation, backend)
        axes = as_float_array(semi_axes, "semi_axes")
        if axes.shape != (3,):
            raise ValueError(f"Expected `semi_axes` to have shape (3,), got {axes.shape}.")
        if np.any(axes <= 0):
            raise ValueError(f"Expected `semi_axes` to be > 0, got {axes.tolist()}.")
        self.semi_axes = axes
        self.center = as_center(center)
        self.rotation = as_rotation_matrix(rotation)

    def _build(self, module):
        a, b, c = self.semi_axes
        return module.Ellipsoid(a, b, c, float(self._orientation), self.center, self.rotation)

    def _describe(self):
        return f"semi_axes={self.semi_axes.tolist()}, center={self.center.tolist()}"

    def chart_domain(self, chart: int = 0) -> Domain:
        """Both charts are the whole plane; each is used on ``|w| <= 1.5``."""
        self._check_chart_index(chart)
        return Domain((-np.inf, np.inf), (-np.inf, np.inf), (False, False))

    def _project_flat(self, p, tol, max_iter):
        y = (p - self.center) @ self.rotation
        x = closest_point_on_ellipsoid(self.semi_axes, y)
        s = x / self.semi_axes
        s /= np.linalg.norm(s, axis=-1, keepdims=True)
        return unit_sphere_locations(s)

    def quadrature(self, n: int = 64):
        """Gauss-Legendre in ``|w|`` and trapezoid in ``arg w`` over the two hemispheres.

        Each chart contributes its disk ``|w| <= 1`` (its closed hemisphere); the integrand is
        analytic on the disk, so the rule converges exponentially in ``n``.
        Returns ``2 n x 2 n`` nodes per chart.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
            raise ValueError(f"Expected `n` to be an integer >= 2, got {n!r}.")
        x, wx = np.polynomial.legendre.leggauss(int(n))
        rho = 0.5 * (x + 1.0)
        wrho = 0.5 * wx
        na = 2 * int(n)
        alpha = 2 * np.pi * np.arange(na) / na
        R, A = np.meshgrid(rho, alpha, indexing="ij")
        W = np.outer(wrho * rho, np.full(na, 2 * np.pi / na))
        uv = np.stack([R * np.cos(A), R * np.sin(A)], -1).reshape(-1, 2)
        uv = np.ascontiguousarray(np.concatenate([uv, uv]))
        chart = np.repeat(np.arange(2, dtype=np.intp), R.size)
        weights = np.concatenate([W.ravel(), W.ravel()]) * self.kernel.area_element(chart, uv)
        return Location(chart, uv), weights

    def _sample_locations(self, resolution):
        s, _ = _uv_sphere(max(resolution // 2, 2), resolution)
        return unit_sphere_locations(s)

    def _mesh_arrays(self, resolution):
        """UV sphere: ``2 + (resolution // 2 - 1) * resolution`` vertices, shared poles."""
        s, faces = _uv_sphere(max(resolution // 2, 2), resolution)
        chart, uv = unit_sphere_locations(s)
        k = self.kernel
        points = np.asarray(k.point(chart, uv))
        normals = np.asarray(k.normal(chart, uv)) * self._orientation
        return points, orient_faces(points, faces, normals), normals


def _uv_sphere(n_theta, n_phi):
    """Unit vectors and triangles of a latitude-longitude sphere with one vertex per pole."""
    theta = np.pi * np.arange(1, n_theta) / n_theta
    phi = 2 * np.pi * np.arange(n_phi) / n_phi
    T, P = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], -1).reshape(-1, 3)
    s = np.concatenate([[[0.0, 0.0, 1.0]], ring, [[0.0, 0.0, -1.0]]])
    north, south = 0, len(s) - 1
    faces = [grid_faces(n_theta - 1, n_phi, False, True) + 1]
    j = np.arange(n_phi)
    j1 = (j + 1) % n_phi
    faces.append(np.stack([np.full(n_phi, north), 1 + j, 1 + j1], -1))
    last = 1 + (n_theta - 2) * n_phi
    faces.append(np.stack([np.full(n_phi, south), last + j1, last + j], -1))
    return s, np.concatenate(faces).astype(np.int64)


def closest_point_on_ellipsoid(axes, y):
    """Closest points ``x`` (n, 3) of ``x . D^-2 x = 1`` to points ``y`` (n, 3), ``D = diag(axes)``.

    Stationarity of ``|x - y|^2`` on the ellipsoid gives ``x_i = a_i^2 y_i/(a_i^2 + t)`` with
    ``F(t) = sum_i (a_i y_i/(a_i^2 + t))^2 = 1``. ``F`` decreases on ``t > -a_min^2`` and
    ``F(a_max |y|) <= 1``, so the closest point's ``t`` is bracketed by
    ``(-a_min^2, max(a_max |y|, 0)]``: bisection to round-off, then two Newton polishes. When
    ``y`` has no component along the shortest axes and ``F`` stays below 1 there (points near the
    centre), the minimum is at ``t = -a_min^2``: ``x_i = a_i^2 y_i/(a_i^2 - a_min^2)`` off those
    axes and the remaining length along the first shortest axis.
    """
    a = np.asarray(axes, dtype=float)
    a2 = a * a
    y = np.asarray(y, dtype=float)
    amin2 = a2.min()
    short = a2 == amin2
    lo = np.full(len(y), -amin2)
    hi = np.maximum(a.max() * np.linalg.norm(y, axis=-1), 0.0)

    def F(t):
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = (a * y / (a2 + t[:, None])) ** 2
        terms = np.where(np.isnan(terms), 0.0, terms)
        return terms.sum(-1) - 1.0

    on_short = np.any((y != 0) & short, axis=-1)
    left_off = np.where(short, 0.0, (a * y / np.where(short, 1.0, a2 - amin2)) ** 2).sum(-1)
    degenerate = (~on_short) & (left_off <= 1.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):
            break
        pos = F(mid) > 0
        lo = np.where(pos, mid, lo)
        hi = np.where(pos, hi, mid)
    t = 0.5 * (lo + hi)
    for _ in range(2):
        denom = a2 + t[:, None]
        f = (a * y / denom) ** 2
        df = (-2.0 * f / denom).sum(-1)
        ok = (df < 0) & ~degenerate
        t_new = np.where(ok, t - (f.sum(-1) - 1.0) / np.where(ok, df, 1.0), t)
        t = np.clip(t_new, np.nextafter(-amin2, 0.0), None)
    x = a2 * y / (a2 + t[:, None])
    if np.any(degenerate):
        yd = y[degenerate]
        xd = np.where(short, 0.0, a2 * yd / np.where(short, 1.0, a2 - amin2))
        first_short = int(np.argmax(short))
        rest = 1.0 - ((xd / a) ** 2).sum(-1)
        xd[:, first_short] = a[first_short] * np.sqrt(np.maximum(rest, 0.0))
        x[degenerate] = xd
    return x


class Sphere(Ellipsoid):
    """Sphere of ``radius`` centred at ``center``: the :class:`Ellipsoid` with equal semi-axes.

    ``rotation`` turns the atlas (its two chart centres are at ``center +- radius R e_z``).
    """

    def __init__(self, radius, center=None, rotation=None, *, orientation="outward",
                 backend="auto"):
        r = as_positive_scalar(radius, "radius")
        super().__init__([r, r, r], center, rotation, orientation=orientation, backend=backend)
        self.radius = r

    def _build(self, module):
        return module.Sphere(self.radius, float(self._orientation), self.center, self.rotation)

    def _describe(self):
        return f"radius={self.radius}, center={self.center.tolist()}"

    def _project_flat(self, p, tol, max_iter):
        y = (p - self.center) @ self.rotation
        norm = np.linalg.norm(y, axis=-1, keepdims=True)
        s = np.where(norm > 0, y / np.where(norm > 0, norm, 1.0), [0.0, 0.0, 1.0])
        return unit_sphere_locations(s)


class Torus(Surface):
    """Torus of centre radius ``major_radius`` and tube radius ``minor_radius`` about ``R e_z``.

    One chart, the angles ``(phi, theta)`` (around the axis, around the tube), periodic in both
    and regular everywhere because ``minor_radius < major_radius``; :meth:`rechart` wraps them
    into ``[-pi, pi)``. Gaussian curvature ``cos(theta)/(r (R + r cos(theta)))``.

    Parameters
    ----------
    major_radius, minor_radius : float
        ``0 < minor_radius < major_radius``.
    center, rotation, orientation, backend
        As for :class:`Ellipsoid`.
    """

    closed = True

    def __init__(self, major_radius, minor_radius, center=None, rotation=None, *,
                 orientation="outward", backend="auto"):
        super().__init__(orientation, backend)
        self.major_radius = as_positive_scalar(major_radius, "major_radius")
        self.minor_radius = as_positive_scalar(minor_radius, "minor_radius")
        if self.minor_radius >= self.major_radius:
            raise ValueError(
                f"Expected `minor_radius` to be < `major_radius` ({self.major_radius}), got "
                f"{self.minor_radius}: the torus would intersect itself."
            )
        self.center = as_center(center)
        self.rotation = as_rotation_matrix(rotation)

    def _build(self, module):
        return module.Torus(self.major_radius, self.minor_radius, float(self._orientation),
                            self.center, self.rotation)

    def _describe(self):
        return f"major_radius={self.major_radius}, minor_radius={self.minor_radius}"

    def chart_domain(self, chart: int = 0) -> Domain:
        self._check_chart_index(chart)
        return Domain((-np.pi, np.pi), (-np.pi, np.pi), (True, True))

    def _project_flat(self, p, tol, max_iter):
        y = (p - self.center) @ self.rotation
        phi = np.arctan2(y[:, 1], y[:, 0])
        rho = np.hypot(y[:, 0], y[:, 1])
        theta = np.arctan2(y[:, 2], rho - self.major_radius)
        uv = np.stack([phi, theta], -1)
        return self.kernel.rechart(np.zeros(len(p), dtype=np.intp), np.ascontiguousarray(uv))

    def quadrature(self, n: int = 64):
        """Trapezoid rule on the periodic ``n x n`` angle grid (exponentially convergent)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
            raise ValueError(f"Expected `n` to be an integer >= 2, got {n!r}.")
        t = -np.pi + 2 * np.pi * np.arange(n) / n
        U, V = np.meshgrid(t, t, indexing="ij")
        uv = np.ascontiguousarray(np.stack([U.ravel(), V.ravel()], -1))
        chart = np.zeros(len(uv), dtype=np.intp)
        w = (2 * np.pi / n) ** 2 * self.kernel.area_element(chart, uv)
        return Location(chart, uv), w

    def _mesh_arrays(self, resolution):
        """Periodic grid: ``resolution * max(resolution // 2, 4)`` vertices, no seam."""
        from nhphys.surfaces.base import grid_mesh

        nv = max(resolution // 2, 4)
        return grid_mesh(self, -np.pi, np.pi, -np.pi, np.pi, resolution, nv, (True, True))


class Paraboloid(Surface):
    """``z = x^2/a^2 + y^2/b^2`` (elliptic) or ``z = x^2/a^2 - y^2/b^2`` (hyperbolic).

    Chart ``(u, v) = (x, y)`` in the paraboloid's frame (placed by ``center`` and ``rotation``);
    the reference normal points to the ``+z`` side (into the bowl of the elliptic one, so a ball
    rolling inside the bowl sees a positive-definite Weingarten map with
    ``orientation="outward"``). Curvatures at the apex are ``2/a^2`` and ``+-2/b^2``.

    Parameters
    ----------
    a, b : float
        Positive.
    kind : {"elliptic", "hyperbolic"}
    center, rotation, orientation, backend
        As for :class:`Ellipsoid`.
    extent : float
        Half-width of the square of ``(x, y)`` shown by :meth:`mesh`.
    """

    def __init__(self, a, b, kind="elliptic", center=None, rotation=None, *,
                 orientation="outward", extent=1.0, backend="auto"):
        super().__init__(orientation, backend)
        self.a = as_positive_scalar(a, "a")
        self.b = as_positive_scalar(b, "b")
        self.kind = as_choice(kind, "kind", ("elliptic", "hyperbolic"))
        self.center = as_center(center)
        self.rotation = as_rotation_matrix(rotation)
        self.extent = as_positive_scalar(extent, "extent")

    @property
    def coefficients(self):
        """``(cx, cy)`` with ``z = cx x^2 + cy y^2``."""
        sign = 1.0 if self.kind == "elliptic" else -1.0
        return 1.0 / self.a**2, sign / self.b**2

    def _build(self, module):
        cx, cy = self.coefficients
        return module.Paraboloid(cx, cy, float(self._orientation), self.center, self.rotation)

    def _describe(self):
        return f"a={self.a}, b={self.b}, kind={self.kind!r}"

    def _display_box(self):
        return [(-self.extent, self.extent), (-self.extent, self.extent)]

    def _initial_guess(self, p):
        local = (p - self.center) @ self.rotation
        return np.zeros(len(p), dtype=np.intp), np.ascontiguousarray(local[:, :2])
