"""Surfaces built from user data with compiled evaluation: SurfaceOfRevolution and HeightField.

Both turn the user's profile or terrain into spline data (quintic Hermite knots for a profile,
bicubic Hermite nodes for a terrain) that the ``cdef`` classes of ``nhphys_ext.surfaces``
evaluate without Python, so a body can roll on them at kernel speed.
"""

from __future__ import annotations

import numpy as np

from nhphys._validation import as_float_array
from nhphys.surfaces.base import Domain, Surface, as_center, as_rotation_matrix
from nhphys.surfaces.parametric import as_range, box_quadrature


def _as_count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"Expected `{name}` to be an integer, got {value!r}.")
    if value < minimum:
        raise ValueError(f"Expected `{name}` to be >= {minimum}, got {value}.")
    return int(value)


def _is_text(spec):
    """True for an expression given as text or a number (what a scene file can hold)."""
    return isinstance(spec, (str, int, float)) and not isinstance(spec, bool)


def _profile_function(spec, name, n_derivatives):
    """Values and derivatives of a 1-D function of ``t`` at an array of ``t``.

    ``spec`` is an expression in ``t`` (exact derivatives with sympy) or a callable (values
    only; the caller interpolates). Returns ``f(t) -> (len(t), n_derivatives + 1)`` or None for
    a callable.
    """
    if callable(spec):
        return None
    import sympy

    from nhphys.surfaces.symbolic import parse_expression

    expr, (t,) = parse_expression(spec, name, ("t",))
    derivs = [expr] + [sympy.diff(expr, t, k) for k in range(1, n_derivatives + 1)]
    f = sympy.lambdify(t, derivs, modules="numpy")

    def evaluate(tt):
        vals = f(tt)
        return np.stack([np.broadcast_to(np.asarray(v, dtype=float), tt.shape) for v in vals], -1)

    return evaluate


class SurfaceOfRevolution(Surface):
    """The surface swept by the profile ``(rho(t), z(t))`` turning about the ``z`` axis.

    Chart ``(t, phi) -> (rho(t) cos phi, rho(t) sin phi, z(t))``, periodic in ``phi`` (and in
    ``t`` for a closed profile, which makes a closed, torus-like surface). The profile is stored
    as quintic Hermite data (value and two derivatives) at ``knots`` uniform knots of
    ``t_range``: exact derivatives from sympy when ``radius`` and ``height`` are expressions,
    a degree-5 interpolating spline of the samples when they are callables. ``rho`` must stay
    positive: a profile that reaches the axis would put the chart's polar singularity on the
    surface.

    The reference normal is the profile tangent ``(rho', z')`` turned clockwise in the
    ``(rho, z)`` half-plane, ``(z' cos phi, z' sin phi, -rho')/|.|``: outward (away from the axis)
    for a profile running upward, outward for a closed profile traversed counterclockwise.

    Parameters
    ----------
    radius, height : str, sympy expression or callable
        ``rho(t)`` and ``z(t)``; expressions in ``t`` (e.g. ``"cosh(t)"``) or vectorised callables.
    t_range : (float, float)
    periodic : bool
        Closed profile with period ``t_range[1] - t_range[0]``.
    knots : int
        Number of profile knots (default 1025).
    center, rotation, orientation, backend
        As for :class:`Ellipsoid`.

    Raises
    ------
    ValueError
        Naming ``radius`` when ``rho <= 0`` somewhere, ``radius, height`` when the profile has zero
        speed (degenerate chart) or does not close up although ``periodic``.

    Examples
    --------
    >>> catenoid = SurfaceOfRevolution("cosh(t)", "t", (-1.0, 1.0))
    >>> float(catenoid.gaussian_curvature([0.0, 0.3]).round(9))
    -1.0
    """

    def __init__(self, radius, height, t_range, *, periodic=False, knots=1025, center=None,
                 rotation=None, orientation="outward", backend="auto"):
        super().__init__(orientation, backend)
        t0, t1 = as_range(t_range, "t_range")
        n = _as_count(knots, "knots", 8)
        self.t_range = (t0, t1)
        self.periodic = bool(periodic)
        self.closed = self.periodic
        self.center = as_center(center)
        self.rotation = as_rotation_matrix(rotation)
        t = np.linspace(t0, t1, n)
        data = []
        for name, spec in (("radius", radius), ("height", height)):
            f = _profile_function(spec, name, 2)
            if f is not None:
                vals = f(t)
            else:
                vals = _spline_samples(spec, name, t, self.periodic)
            if not np.all(np.isfinite(vals)):
                bad = t[~np.all(np.isfinite(vals), axis=-1)][0]
                raise ValueError(
                    f"Expected `{name}` to be finite on t_range, got a non-finite value at "
                    f"t={bad:.6g}."
                )
            data.append(vals)
        self._set_knots(np.concatenate(data, axis=-1), t)
        if _is_text(radius) and _is_text(height):
            self.source = {"radius": radius, "height": height}

    @classmethod
    def from_samples(cls, t, radius, height, *, periodic=False, knots=None, **kwargs):
        """A surface of revolution through sampled profile points, by quintic spline interpolation.

        Parameters
        ----------
        t, radius, height : array_like, shape (m,)
            Increasing parameter values (m >= 6) and the profile there. With ``periodic`` the
            last sample must repeat the first.
        knots : int, optional
            Uniform knots for the compiled profile (default ``max(1025, 8 m)``).
        """
        from scipy.interpolate import make_interp_spline

        t = as_float_array(t, "t")
        if t.ndim != 1 or len(t) < 6 or np.any(np.diff(t) <= 0):
            raise ValueError("Expected `t` to be an increasing 1-D array of at least 6 values.")
        curves = []
        for name, values in (("radius", radius), ("height", height)):
            arr = as_float_array(values, name)
            if arr.shape != t.shape:
                raise ValueError(f"Expected `{name}` to have shape {t.shape}, got {arr.shape}.")
            if periodic and arr[0] != arr[-1]:
                raise ValueError(
                    f"Expected `{name}` to repeat its first value at the end for a periodic "
                    f"profile, got {arr[0]} and {arr[-1]}."
                )
            curves.append(make_interp_spline(t, arr, k=5, bc_type="periodic" if periodic else None))
        rho_s, z_s = curves
        n = knots if knots is not None else max(1025, 8 * len(t))
        obj = cls._from_splines(rho_s, z_s, (float(t[0]), float(t[-1])), periodic, n, kwargs)
        obj.source = {"samples": {"t": t.copy(), "radius": np.array(radius, dtype=float),
                                  "height": np.array(height, dtype=float)}}
        return obj

    @classmethod
    def _from_splines(cls, rho_s, z_s, t_range, periodic, n, kwargs):
        obj = cls.__new__(cls)
        Surface.__init__(obj, kwargs.pop("orientation", "outward"), kwargs.pop("backend", "auto"))
        obj.t_range = t_range
        obj.periodic = bool(periodic)
        obj.closed = obj.periodic
        obj.center = as_center(kwargs.pop("center", None))
        obj.rotation = as_rotation_matrix(kwargs.pop("rotation", None))
        if kwargs:
            raise TypeError(f"Unexpected keyword arguments {sorted(kwargs)}.")
        t = np.linspace(t_range[0], t_range[1], _as_count(n, "knots", 8))
        data = np.stack([rho_s(t), rho_s(t, 1), rho_s(t, 2), z_s(t), z_s(t, 1), z_s(t, 2)], -1)
        obj._set_knots(data, t)
        return obj

    def _set_knots(self, data, t):
        rho = data[:, 0]
        if np.any(rho <= 0):
            bad = t[np.argmin(rho)]
            raise ValueError(
                f"Expected `radius` to be > 0 on t_range, got {rho.min():.6g} at t={bad:.6g} "
                "(a profile meeting the axis is not supported)."
            )
        speed2 = data[:, 1] ** 2 + data[:, 4] ** 2
        scale = max(float(np.max(np.abs(data[:, [0, 3]]))), 1e-300)
        if np.any(speed2 <= 1e-20 * scale * scale):
            bad = t[np.argmin(speed2)]
            raise ValueError(
                f"Expected the profile (`radius`, `height`) to be regular (|(rho', z')| > 0), got "
                f"a degenerate chart at t={bad:.6g}."
            )
        if self.periodic:
            gap = np.max(np.abs(data[0] - data[-1]) / np.maximum(1.0, np.abs(data[0])))
            if gap > 1e-9:
                raise ValueError(
                    "Expected `radius` and `height` to close up smoothly over t_range for a "
                    f"periodic profile, got a mismatch of {gap:.3g} between its ends."
                )
            data[-1] = data[0]
        self.knots = np.ascontiguousarray(data)

    def _build(self, module):
        t0, t1 = self.t_range
        h = (t1 - t0) / (len(self.knots) - 1)
        return module.SurfaceOfRevolution(self.knots, t0, h, self.periodic,
                                          float(self._orientation), self.center, self.rotation)

    def _describe(self):
        return f"t_range={self.t_range}, knots={len(self.knots)}"

    def chart_domain(self, chart: int = 0) -> Domain:
        self._check_chart_index(chart)
        return Domain(self.t_range, (-np.pi, np.pi), (self.periodic, True))

    def _display_box(self):
        return [self.t_range, (-np.pi, np.pi)]

    def _mesh_arrays(self, resolution):
        """``resolution x resolution`` grid, seamless in ``phi`` (and in ``t`` when periodic)."""
        from nhphys.surfaces.base import grid_mesh

        t0, t1 = self.t_range
        return grid_mesh(self, t0, t1, -np.pi, np.pi, resolution, resolution,
                         (self.periodic, True))

    def quadrature(self, n: int = 64):
        """Gauss-Legendre (or trapezoid, when periodic) in ``t`` times trapezoid in ``phi``."""
        return box_quadrature(self, self.chart_domain(0), n)

    def _initial_guess(self, p):
        y = (p - self.center) @ self.rotation
        phi = np.arctan2(y[:, 1], y[:, 0])
        rho = np.hypot(y[:, 0], y[:, 1])
        t = np.linspace(*self.t_range, 512)
        chart = np.zeros(len(t), dtype=np.intp)
        prof = self.kernel.point(chart, np.ascontiguousarray(np.stack([t, np.zeros_like(t)], -1)))
        d2 = (rho[:, None] - prof[None, :, 0]) ** 2 + (y[:, 2:3] - prof[None, :, 2]) ** 2
        uv = np.stack([t[np.argmin(d2, axis=1)], phi], -1)
        return np.zeros(len(p), dtype=np.intp), np.ascontiguousarray(uv)


def _spline_samples(f, name, t, periodic):
    """Values and two derivatives at ``t`` of the quintic spline through ``f(t)``."""
    from scipy.interpolate import make_interp_spline

    try:
        y = np.asarray(f(t), dtype=float)
    except Exception as exc:
        raise ValueError(
            f"Expected `{name}` to accept an array of t, got {type(exc).__name__}: {exc}."
        ) from None
    y = np.broadcast_to(y, t.shape).copy()
    if not np.all(np.isfinite(y)):
        raise ValueError(f"Expected `{name}` to be finite on t_range.")
    if periodic:
        y[-1] = y[0]
    s = make_interp_spline(t, y, k=5, bc_type="periodic" if periodic else None)
    return np.stack([s(t), s(t, 1), s(t, 2)], -1)


class HeightField(Surface):
    """A terrain ``z = f(x, y)`` from heights sampled on a uniform grid, smoothly interpolated.

    The heights are interpolated by a bicubic spline (C^2, so the Weingarten map is
    continuous), stored as Hermite node data ``(f, f_x, f_y, f_xy)`` that the compiled kernel
    evaluates in O(1) per point. Chart ``(u, v) = (x, y)``; the reference normal points to the
    ``+z`` side (a body resting on the terrain uses ``orientation="outward"``). Outside the grid
    the edge cells extrapolate.

    Parameters
    ----------
    heights : array_like, shape (nx, ny)
        ``heights[i, j] = f(x_i, y_j)``, ``nx, ny >= 4``.
    x_range, y_range : (float, float)
        Coordinates of the first and last grid lines.
    center, rotation, orientation, backend
        As for :class:`Ellipsoid` (placement of the terrain's frame).

    Examples
    --------
    >>> terrain = HeightField.from_function("0.1*sin(x)*cos(y)", (-3, 3), (-3, 3), samples=97)
    >>> terrain.point([0.5, 0.2]).round(4).tolist()
    [0.5, 0.2, 0.047]
    """

    def __init__(self, heights, x_range, y_range, *, center=None, rotation=None,
                 orientation="outward", backend="auto"):
        from scipy.interpolate import RectBivariateSpline

        super().__init__(orientation, backend)
        z = as_float_array(heights, "heights")
        if z.ndim != 2 or min(z.shape) < 4:
            raise ValueError(
                f"Expected `heights` to have shape (nx, ny) with nx, ny >= 4, got {z.shape}."
            )
        self.x_range = as_range(x_range, "x_range")
        self.y_range = as_range(y_range, "y_range")
        self.center = as_center(center)
        self.rotation = as_rotation_matrix(rotation)
        self.heights = z
        x = np.linspace(*self.x_range, z.shape[0])
        y = np.linspace(*self.y_range, z.shape[1])
        spline = RectBivariateSpline(x, y, z, kx=3, ky=3, s=0)
        nodes = np.stack(
            [spline(x, y), spline(x, y, dx=1), spline(x, y, dy=1), spline(x, y, dx=1, dy=1)], -1
        )
        self.nodes = np.ascontiguousarray(nodes)

    @classmethod
    def from_function(cls, f, x_range, y_range, samples=129, **kwargs):
        """Sample ``f`` on a ``samples`` grid (int or (nx, ny)) and interpolate.

        ``f`` is a vectorised callable ``f(x, y)`` or an expression in ``x`` and ``y``. For a
        terrain with exact derivatives use
        ``ParametricSurface.from_expressions("x", "y", f, variables=("x", "y"))`` instead
        (Python path).
        """
        if isinstance(samples, (int, np.integer)) and not isinstance(samples, bool):
            samples = (samples, samples)
        nx = _as_count(samples[0], "samples", 4)
        ny = _as_count(samples[1], "samples", 4)
        xr = as_range(x_range, "x_range")
        yr = as_range(y_range, "y_range")
        X, Y = np.meshgrid(np.linspace(*xr, nx), np.linspace(*yr, ny), indexing="ij")
        if callable(f):
            try:
                Z = np.broadcast_to(np.asarray(f(X, Y), dtype=float), X.shape)
            except Exception as exc:
                raise ValueError(
                    f"Expected `f` to accept arrays x, y, got {type(exc).__name__}: {exc}."
                ) from None
        else:
            import sympy

            from nhphys.surfaces.symbolic import parse_expression

            expr, syms = parse_expression(f, "f", ("x", "y"))
            g = sympy.lambdify(syms, expr, modules="numpy")
            Z = np.broadcast_to(np.asarray(g(X, Y), dtype=float), X.shape)
        if not np.all(np.isfinite(Z)):
            raise ValueError("Expected `f` to be finite on the grid.")
        obj = cls(np.array(Z), xr, yr, **kwargs)
        if _is_text(f):
            obj.source = {"function": f, "samples": (nx, ny)}
        return obj

    def _build(self, module):
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        nx, ny = self.heights.shape
        return module.HeightField(self.nodes, x0, (x1 - x0) / (nx - 1), y0, (y1 - y0) / (ny - 1),
                                  float(self._orientation), self.center, self.rotation)

    def _describe(self):
        return f"grid={self.heights.shape}, x_range={self.x_range}, y_range={self.y_range}"

    def chart_domain(self, chart: int = 0) -> Domain:
        self._check_chart_index(chart)
        return Domain(self.x_range, self.y_range, (False, False))

    def _display_box(self):
        return [self.x_range, self.y_range]

    def quadrature(self, n: int = 64):
        """Gauss-Legendre on the grid's rectangle."""
        return box_quadrature(self, self.chart_domain(0), n)

    def _initial_guess(self, p):
        local = (p - self.center) @ self.rotation
        return np.zeros(len(p), dtype=np.intp), np.ascontiguousarray(local[:, :2])
