"""User-defined surfaces: a chart from Python callables or from symbolic expressions.

These run on the Python path (their per-point evaluation calls Python), through the same
machinery as the twins of the compiled surfaces, so every method of :class:`Surface` works.
"""

from __future__ import annotations

import math

import numpy as np

from nhphys._validation import as_float_array
from nhphys.surfaces.base import Domain, Location, Surface
from nhphys.twins import surfaces as twin


def as_range(value, name: str, finite: bool = True) -> tuple:
    """A coordinate interval ``(lo, hi)`` with ``lo < hi``."""
    arr = as_float_array(value, name) if finite else np.asarray(value, dtype=float)
    if arr.shape != (2,):
        raise ValueError(f"Expected `{name}` to have shape (2,), got {arr.shape}.")
    if not arr[0] < arr[1]:
        raise ValueError(
            f"Expected `{name}` to be an interval (lo, hi) with lo < hi, got {value!r}."
        )
    return float(arr[0]), float(arr[1])


class CallableChart(twin.ChartSurface):
    """One chart evaluated by a Python function ``(u, v) -> (r (3,), J (3, 2), H (3, 2, 2))``.

    Periodic coordinates are wrapped into ``[lo, lo + period)`` by :meth:`rechart_point`.
    """

    def __init__(self, evaluate, domain: Domain, orientation):
        self._evaluate = evaluate
        self.domain = domain
        super().__init__(orientation, np.zeros(3), np.eye(3))

    def chart_local(self, chart, u, v):
        return self._evaluate(u, v)

    def rechart_point(self, chart, u, v):
        changed = 0
        out = [u, v]
        for i, (lo, hi) in enumerate((self.domain.u, self.domain.v)):
            if self.domain.periodic[i] and not lo <= out[i] < hi:
                period = hi - lo
                out[i] = out[i] - period * math.floor((out[i] - lo) / period)
                changed = 1
        return changed, chart, out[0], out[1]


def _probe_points(domain: Domain, n: int = 5):
    """A deterministic grid of interior points of a chart's coordinate box."""
    (u0, u1), (v0, v1) = domain.u, domain.v
    frac = (np.arange(n) + 0.37) / n
    return [(u0 + a * (u1 - u0), v0 + b * (v1 - v0)) for a in frac for b in frac]


def _check_denominators(exprs, syms, domain):
    """Refuse an expression whose denominator vanishes inside the chart's domain (``1/u`` on
    (-1, 1)): probing points can step over a pole, so the poles are looked for directly.

    A denominator of one variable is solved exactly on its interval (sympy's ``solveset``); one
    of both variables is sampled on a 101 x 101 grid of the closed domain, where a sign change
    or a zero is a pole.

    Raises
    ------
    ValueError
        Naming the coordinate (``x``, ``y``, ``z``), the denominator and where it vanishes.
    """
    import sympy

    ranges = dict(zip(syms, (domain.u, domain.v)))
    for name, expr in zip(("x", "y", "z"), exprs):
        _, den = sympy.fraction(sympy.together(expr))
        free = den.free_symbols & set(syms)
        if not free:
            continue
        where = None
        if len(free) == 1:
            (var,) = free
            lo, hi = ranges[var]
            roots = sympy.solveset(den, var, sympy.Interval(lo, hi))
            if roots != sympy.S.EmptySet:
                where = f"{var} in {roots}"
        else:
            grid_u = np.linspace(*domain.u, 101)
            grid_v = np.linspace(*domain.v, 101)
            f = sympy.lambdify(syms, den, modules="numpy")
            with np.errstate(all="ignore"):
                values = np.broadcast_to(f(grid_u[:, None], grid_v[None, :]), (101, 101))
            finite = values[np.isfinite(values)]
            if finite.size and (finite.min() <= 0 <= finite.max()):
                i, j = np.unravel_index(np.argmin(np.abs(np.where(np.isfinite(values), values,
                                                                   np.inf))), values.shape)
                where = f"near (u, v) = ({grid_u[i]:.6g}, {grid_v[j]:.6g})"
        if where is not None:
            raise ValueError(
                f"Expected `{name}` to be defined on the whole domain, but its denominator "
                f"{den} vanishes there ({where})."
            )


class ParametricSurface(Surface):
    """A surface given by one chart ``r(u, v)`` and its first and second derivatives.

    Create it from expressions (:meth:`from_expressions`, derivatives computed exactly with
    sympy) or from Python callables (derivatives supplied by the user and checked against central
    differences on creation). The chart is checked to be regular (``det g > 0``) on a grid of
    points of ``(u_range, v_range)``.

    Parameters
    ----------
    point : callable
        ``point(u, v)`` for floats ``u``, ``v``, returning 3 numbers.
    jacobian : callable
        ``jacobian(u, v)`` returning (3, 2): column ``a`` is ``dr/du_a``.
    hessian : callable
        ``hessian(u, v)`` returning (3, 2, 2): ``d^2 r_i/du_a du_b``.
    u_range, v_range : (float, float)
        The chart's domain (used for checks, meshes, projection guesses and quadrature).
    periodic : (bool, bool)
        Which coordinates are periodic with the period of their range (wrapped by
        :meth:`rechart`).
    closed : bool
        Whether the surface is closed (periodic in both coordinates, say).
    orientation : {"outward", "inward", 1, -1}
        Relative to the reference normal ``J_u x J_v``.
    check : bool
        Check the derivatives against central differences (default True).
    backend : {"auto", "cython", "python"}
        The evaluation is Python in every case. ``"auto"`` and ``"python"`` run it through the
        twin machinery (errors raised by the callables propagate); ``"cython"`` wraps it in a
        ``cdef`` ``PythonChartSurface`` that compiled kernels can hold, which calls back into
        Python with the GIL for each point (an error there turns the point's values into NaN).

    Raises
    ------
    ValueError
        If a derivative disagrees with central differences, or the chart is degenerate.
    """

    def __init__(self, point, jacobian, hessian, u_range=(-1.0, 1.0), v_range=(-1.0, 1.0), *,
                 periodic=(False, False), closed=False, orientation="outward", check=True,
                 backend="auto"):
        super().__init__(orientation, backend)
        for name, f in (("point", point), ("jacobian", jacobian), ("hessian", hessian)):
            if not callable(f):
                raise TypeError(f"Expected `{name}` to be callable, got {f!r}.")
        self._functions = (point, jacobian, hessian)
        periodic = tuple(bool(p) for p in periodic)
        if len(periodic) != 2:
            raise ValueError(f"Expected `periodic` to have two entries, got {periodic!r}.")
        self.domain = Domain(as_range(u_range, "u_range"), as_range(v_range, "v_range"), periodic)
        self.closed = bool(closed)
        self._evaluate = self._make_evaluate()
        self._check_regular(names=("point",))
        if check:
            self._check_derivatives()

    def _make_evaluate(self):
        point, jacobian, hessian = self._functions

        def evaluate(u, v):
            r = np.asarray(point(u, v), dtype=float)
            J = np.asarray(jacobian(u, v), dtype=float)
            H = np.asarray(hessian(u, v), dtype=float)
            return r.reshape(3), J.reshape(3, 2), H.reshape(3, 2, 2)

        return evaluate

    @classmethod
    def from_expressions(cls, x, y, z, *, variables=("u", "v"), u_range=(-1.0, 1.0),
                         v_range=(-1.0, 1.0), periodic=(False, False), closed=False,
                         orientation="outward", backend="auto"):
        """A surface ``r = (x, y, z)`` from three expressions in ``variables``.

        Parameters
        ----------
        x, y, z : str or sympy expression or number
            For example ``ParametricSurface.from_expressions("u", "v", "0.2*sin(u)*cos(v)")``.
            Functions with kinks or jumps (``abs``, ``sign``, ``floor``, ``min``, ``Piecewise``,
            ...) are refused.
        variables : (str, str)
            Names of the chart coordinates.

        Raises
        ------
        ValueError
            Naming ``x``, ``y`` or ``z`` when an expression does not parse, uses other symbols,
            is not smooth, or is not finite on the domain; naming ``x, y, z`` when the chart is
            degenerate.
        """
        import sympy

        from nhphys.surfaces.symbolic import parse_expression

        if len(variables) != 2 or not all(isinstance(v, str) for v in variables):
            raise ValueError(f"Expected `variables` to be two names, got {variables!r}.")
        exprs = []
        syms = None
        for name, text in (("x", x), ("y", y), ("z", z)):
            e, syms = parse_expression(text, name, tuple(variables))
            exprs.append(e)
        u, v = syms
        jac = [[sympy.diff(e, s) for s in (u, v)] for e in exprs]
        hes = [[[sympy.diff(e, s, t) for t in (u, v)] for s in (u, v)] for e in exprs]
        flat = list(exprs) + [d for row in jac for d in row] + [
            d for block in hes for row in block for d in row
        ]
        f = sympy.lambdify((u, v), flat, modules="math")

        def point(uu, vv):
            return np.array(f(uu, vv)[:3], dtype=float)

        def jacobian(uu, vv):
            return np.array(f(uu, vv)[3:9], dtype=float).reshape(3, 2)

        def hessian(uu, vv):
            return np.array(f(uu, vv)[9:], dtype=float).reshape(3, 2, 2)

        obj = cls.__new__(cls)
        Surface.__init__(obj, orientation, backend)
        periodic = tuple(bool(p) for p in periodic)
        obj._functions = (point, jacobian, hessian)
        obj.domain = Domain(as_range(u_range, "u_range"), as_range(v_range, "v_range"), periodic)
        obj.closed = bool(closed)
        obj.expressions = tuple(exprs)
        if all(isinstance(e, (str, int, float)) and not isinstance(e, bool) for e in (x, y, z)):
            obj.source = {"x": x, "y": y, "z": z, "variables": tuple(variables)}

        def evaluate(uu, vv):
            vals = f(uu, vv)
            return (
                np.array(vals[:3], dtype=float),
                np.array(vals[3:9], dtype=float).reshape(3, 2),
                np.array(vals[9:], dtype=float).reshape(3, 2, 2),
            )

        obj._evaluate = evaluate
        _check_denominators(exprs, (u, v), obj.domain)
        obj._check_regular(names=("x", "y", "z"))
        return obj

    # -- checks ---------------------------------------------------------------------------------

    def _check_regular(self, names):
        label = ", ".join(f"`{n}`" for n in names)
        for u, v in _probe_points(self.domain):
            try:
                r, J, H = self._evaluate(u, v)
            except (ValueError, ZeroDivisionError, OverflowError, TypeError) as exc:
                raise ValueError(
                    f"Expected {label} to be defined on the domain, got {type(exc).__name__} "
                    f"({exc}) at (u, v) = ({u:.6g}, {v:.6g})."
                ) from None
            if not (np.all(np.isfinite(r)) and np.all(np.isfinite(J)) and np.all(np.isfinite(H))):
                raise ValueError(
                    f"Expected {label} and their derivatives to be finite, got non-finite "
                    f"values at (u, v) = ({u:.6g}, {v:.6g})."
                )
            g = J.T @ J
            det = g[0, 0] * g[1, 1] - g[0, 1] * g[1, 0]
            if det <= 1e-12 * max(g[0, 0], g[1, 1], 1e-300) ** 2:
                raise ValueError(
                    f"Expected {label} to define a regular chart (|J^T J| > 0), got "
                    f"det(J^T J) = {det:.3g} at (u, v) = ({u:.6g}, {v:.6g})."
                )

    def _check_derivatives(self, eps: float = 1e-5, rtol: float = 1e-5):
        point, jacobian, hessian = self._evaluate_parts()
        (u0, u1), (v0, v1) = self.domain.u, self.domain.v
        hu = eps * max(1.0, abs(u0), abs(u1))
        hv = eps * max(1.0, abs(v0), abs(v1))
        for u, v in _probe_points(self.domain, 3):
            J = jacobian(u, v)
            H = hessian(u, v)
            fd_J = np.stack(
                [(point(u + hu, v) - point(u - hu, v)) / (2 * hu),
                 (point(u, v + hv) - point(u, v - hv)) / (2 * hv)], axis=-1)
            fd_H = np.stack(
                [(jacobian(u + hu, v) - jacobian(u - hu, v)) / (2 * hu),
                 (jacobian(u, v + hv) - jacobian(u, v - hv)) / (2 * hv)], axis=-1)
            for name, have, want in (("jacobian", J, fd_J), ("hessian", H, fd_H)):
                err = float(np.max(np.abs(have - want)))
                scale = max(1.0, float(np.max(np.abs(want))))
                if err > rtol * scale:
                    raise ValueError(
                        f"Expected `{name}` to be the derivative of "
                        f"`{'point' if name == 'jacobian' else 'jacobian'}`: at (u, v) = "
                        f"({u:.6g}, {v:.6g}) it differs from central differences by {err:.3g}."
                    )

    def _evaluate_parts(self):
        point, jacobian, hessian = self._functions

        def p(u, v):
            return np.asarray(point(u, v), dtype=float).reshape(3)

        def j(u, v):
            return np.asarray(jacobian(u, v), dtype=float).reshape(3, 2)

        def h(u, v):
            return np.asarray(hessian(u, v), dtype=float).reshape(3, 2, 2)

        return p, j, h

    # -- Surface hooks --------------------------------------------------------------------------

    def _build(self, module):
        chart = CallableChart(self._evaluate, self.domain, float(self._orientation))
        if self._backend == "cython" and module.__name__ == "nhphys_ext.surfaces":
            # a cdef object for compiled kernels, calling back into Python per point
            return module.PythonChartSurface(chart, float(self._orientation))
        return chart

    def chart_domain(self, chart: int = 0) -> Domain:
        self._check_chart_index(chart)
        return self.domain

    def _display_box(self):
        return [self.domain.u, self.domain.v]

    def _mesh_arrays(self, resolution):
        from nhphys.surfaces.base import grid_mesh

        (u0, u1), (v0, v1) = self.domain.u, self.domain.v
        return grid_mesh(self, u0, u1, v0, v1, resolution, resolution, self.domain.periodic)

    def quadrature(self, n: int = 64):
        """Tensor rule on the domain: trapezoid where periodic, Gauss-Legendre otherwise."""
        return box_quadrature(self, self.domain, n)

    def _describe(self):
        if hasattr(self, "expressions"):
            return ", ".join(str(e) for e in self.expressions)
        return f"u_range={self.domain.u}, v_range={self.domain.v}"


def box_quadrature(surface, domain: Domain, n: int):
    """Tensor-product rule over one chart's coordinate box, weights times the area element."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"Expected `n` to be an integer >= 2, got {n!r}.")
    nodes, weights = [], []
    for (lo, hi), per in zip((domain.u, domain.v), domain.periodic):
        if per:
            nodes.append(lo + (hi - lo) * np.arange(n) / n)
            weights.append(np.full(n, (hi - lo) / n))
        else:
            x, w = np.polynomial.legendre.leggauss(int(n))
            nodes.append(lo + 0.5 * (hi - lo) * (x + 1.0))
            weights.append(0.5 * (hi - lo) * w)
    U, V = np.meshgrid(nodes[0], nodes[1], indexing="ij")
    uv = np.ascontiguousarray(np.stack([U.ravel(), V.ravel()], -1))
    chart = np.zeros(len(uv), dtype=np.intp)
    w = np.outer(weights[0], weights[1]).ravel() * surface.kernel.area_element(chart, uv)
    return Location(chart, uv), w
