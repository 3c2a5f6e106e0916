"""The :class:`Surface` base class: validated, shape-agnostic access to a surface's charts.

A surface is an atlas of charts ``u = (u, v) -> r(u)`` in R^3. A place on it is a
:class:`Location`, chart coordinates together with the chart they belong to; every evaluation
method accepts either a ``Location`` (as returned by :meth:`Surface.project` and
:meth:`Surface.support_point`) or plain coordinates ``uv`` with an optional ``chart``. All
evaluation methods accept any number of leading axes.

Conventions (see :mod:`nhphys.twins.surfaces` for the derivations):
``J = dr/du``, ``g = J^T J``, ``II_ab = n . d^2 r/du_a du_b``, ``L = g^-1 II`` with
``J L du/dt = -dn/dt``; the sign of ``n`` is the surface's role (:attr:`Surface.orientation`):
a body's surface takes the normal into the body (:meth:`Surface.as_body`), a ground the normal
toward the side the body is on (:meth:`Surface.as_ground`).
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np

from nhphys import _backend
from nhphys._validation import as_choice, as_float_array


class Location(NamedTuple):
    """Chart coordinates of points on a surface.

    Attributes
    ----------
    chart : ndarray of int, shape (...)
        Index of the chart each point's coordinates belong to.
    uv : ndarray, shape (..., 2)
        Chart coordinates.
    """

    chart: np.ndarray
    uv: np.ndarray


class Domain(NamedTuple):
    """Coordinate ranges of one chart; ``periodic[i]`` marks a periodic coordinate."""

    u: tuple
    v: tuple
    periodic: tuple


_ORIENTATIONS = {"outward": 1, "inward": -1}


def as_orientation(value) -> int:
    """``+1``/``"outward"`` (reference normal) or ``-1``/``"inward"`` (its opposite)."""
    if isinstance(value, str):
        return _ORIENTATIONS[as_choice(value, "orientation", tuple(_ORIENTATIONS))]
    if isinstance(value, (int, np.integer, float)) and not isinstance(value, bool):
        if value in (1, -1):
            return int(value)
    raise ValueError(
        f"Expected `orientation` to be 'outward', 'inward', +1 or -1, got {value!r}."
    )


def as_rotation_matrix(value, name: str = "rotation") -> np.ndarray:
    """A 3x3 rotation matrix (orthogonal to 1e-9, determinant +1); None means the identity."""
    if value is None:
        return np.eye(3)
    arr = as_float_array(value, name)
    if arr.shape != (3, 3):
        raise ValueError(f"Expected `{name}` to have shape (3, 3), got {arr.shape}.")
    err = float(np.max(np.abs(arr.T @ arr - np.eye(3))))
    det = float(np.linalg.det(arr))
    if err > 1e-9 or det <= 0:
        raise ValueError(
            f"Expected `{name}` to be a rotation matrix, got |R^T R - I| = {err:.3g} and "
            f"det = {det:.6g}."
        )
    return arr


def as_center(value, name: str = "center") -> np.ndarray:
    """A finite 3-vector; None means the origin."""
    if value is None:
        return np.zeros(3)
    arr = as_float_array(value, name)
    if arr.shape != (3,):
        raise ValueError(f"Expected `{name}` to have shape (3,), got {arr.shape}.")
    return arr


class Surface:
    """Base class of every surface: charts, derived geometry, roles, projection and meshes.

    Subclasses define ``_build(module)`` returning the per-point implementation (a ``cdef``
    object of ``nhphys_ext.surfaces`` or its twin in ``nhphys.twins.surfaces``), ``closed``,
    ``strictly_convex``, :meth:`chart_domain` and the meshing and projection hooks.

    Parameters
    ----------
    orientation : {"outward", "inward", 1, -1}
        Sign of the normal relative to the surface's reference normal (outward for a closed
        surface; documented per class for open ones).
    backend : {"auto", "cython", "python"}
        Compiled kernel or Python twin.
    """

    closed = False
    strictly_convex = False
    n_charts = 1
    # what the surface was made from where its attributes do not keep it (expression text, a
    # plane's normal before normalising): read by nhphys.scene_toml to write it as data
    source = None

    def __init__(self, orientation="outward", backend="auto"):
        self._orientation = as_orientation(orientation)
        self._backend = as_choice(backend, "backend", _backend.BACKENDS)
        self._kernel = None

    def __getstate__(self):
        # the compiled object is rebuilt on demand (and cannot be pickled itself)
        state = self.__dict__.copy()
        state["_kernel"] = None
        return state

    # -- implementation -----------------------------------------------------------------------

    def _build(self, module):
        raise NotImplementedError

    @property
    def kernel(self):
        """The per-point implementation: a ``cdef`` surface object, or its Python twin.

        Compiled kernels (the rolling integrator) take this object and call its ``nogil``
        methods; its array methods take ``chart`` (n,) intp and ``uv`` (n, 2) float64.
        """
        if self._kernel is None:
            module = _backend.implementation("surfaces", self._backend)
            self._kernel = self._build(module)
        return self._kernel

    @property
    def backend(self) -> str:
        """The backend this surface was asked to use (``"auto"``, ``"cython"``, ``"python"``)."""
        return self._backend

    @property
    def orientation(self) -> int:
        """+1 when the normal is the reference one (outward for closed surfaces), else -1."""
        return self._orientation

    def with_orientation(self, orientation) -> "Surface":
        """A copy with another orientation (``"outward"``, ``"inward"``, +1, -1)."""
        other = copy.copy(self)
        other._orientation = as_orientation(orientation)
        other._kernel = None
        return other

    def with_backend(self, backend) -> "Surface":
        """A copy evaluated through another backend."""
        other = copy.copy(self)
        other._backend = as_choice(backend, "backend", _backend.BACKENDS)
        other._kernel = None
        return other

    def as_body(self) -> "Surface":
        """This surface as the shape of a body: normal pointing into the body.

        The reference normal points away from the material (outward for a closed surface), so a
        body takes ``orientation = -1``; a convex body then has a positive-definite Weingarten map.
        """
        return self.with_orientation(-1)

    def moving(self, motion=None, *, rate=None, axis=(0.0, 0.0, 1.0), center=(0.0, 0.0, 0.0),
               velocity=None):
        """This surface as a ground under a rigid motion: a turntable (``rate`` rad/s about
        ``axis`` through ``center``), a uniform translation (``velocity``), or any
        :class:`~nhphys.surfaces.moving.GroundMotion` (a callable ``t -> (Q, d, w, v)`` too).
        See :mod:`nhphys.surfaces.moving`."""
        from nhphys.surfaces.moving import moving

        return moving(self, motion, rate=rate, axis=axis, center=center, velocity=velocity)

    def as_ground(self, side: str = "outside") -> "Surface":
        """This surface as a ground, with the normal toward the side the body is on.

        ``side="outside"`` puts the body on the reference normal's side (outside a closed surface,
        above a graph), ``"inside"`` on the other (inside a bowl or a closed surface).
        """
        side = as_choice(side, "side", ("outside", "inside"))
        return self.with_orientation(1 if side == "outside" else -1)

    # -- charts -------------------------------------------------------------------------------

    def chart_domain(self, chart: int = 0) -> Domain:
        """Coordinate ranges of ``chart`` (infinite for unbounded coordinates)."""
        self._check_chart_index(chart)
        return Domain((-np.inf, np.inf), (-np.inf, np.inf), (False, False))

    def _check_chart_index(self, chart):
        if isinstance(chart, bool) or not isinstance(chart, (int, np.integer)):
            raise TypeError(f"Expected `chart` to be an integer, got {chart!r}.")
        if not 0 <= chart < self.n_charts:
            raise ValueError(
                f"Expected `chart` to be in [0, {self.n_charts - 1}], got {chart}."
            )

    def _coords(self, uv, chart):
        """Flatten ``(uv, chart)`` or a Location to ``(lead_shape, chart (n,), uv (n, 2))``."""
        if isinstance(uv, Location):
            if chart is not None:
                raise ValueError("Expected `chart` to be None when `uv` is a Location.")
            chart, uv = uv.chart, uv.uv
        uv = as_float_array(uv, "uv", (2,))
        lead = uv.shape[:-1]
        if chart is None:
            chart = np.zeros(lead, dtype=np.intp)
        else:
            chart = np.asarray(chart)
            if chart.dtype == bool or not np.issubdtype(chart.dtype, np.integer):
                raise TypeError(f"Expected `chart` to hold integers, got dtype {chart.dtype}.")
            try:
                chart = np.broadcast_to(chart, lead)
            except ValueError as exc:
                raise ValueError(
                    f"Expected `chart` to broadcast to shape {lead}, got {chart.shape}."
                ) from exc
            if chart.size and (chart.min() < 0 or chart.max() >= self.n_charts):
                raise ValueError(
                    f"Expected `chart` entries in [0, {self.n_charts - 1}], got "
                    f"{chart.min()}..{chart.max()}."
                )
        return (
            lead,
            np.ascontiguousarray(chart.reshape(-1), dtype=np.intp),
            np.ascontiguousarray(uv.reshape(-1, 2)),
        )

    def _eval(self, name, uv, chart, tail):
        lead, c, flat = self._coords(uv, chart)
        out = getattr(self.kernel, name)(c, flat)
        return np.asarray(out).reshape(lead + tail)

    def rechart(self, uv, chart=None) -> Location:
        """The preferred coordinates of the same points, away from chart edges and singularities.

        Stereographic atlases switch to the other chart beyond ``|w| = 1.5``; periodic
        coordinates are wrapped into their fundamental interval. Points already well placed keep
        their coordinates.
        """
        lead, c, flat = self._coords(uv, chart)
        c_out, uv_out = self.kernel.rechart(c, flat)
        return Location(np.asarray(c_out).reshape(lead), np.asarray(uv_out).reshape(lead + (2,)))

    def change_chart(self, uv, target: int, chart=None) -> Location:
        """Coordinates of the same points in chart ``target``.

        Raises
        ------
        ValueError
            If some point is not covered by chart ``target``.
        """
        lead, c, flat = self._coords(uv, chart)
        target_arr = np.broadcast_to(np.asarray(target, dtype=np.intp), c.shape).copy()
        if target_arr.size and (target_arr.min() < 0 or target_arr.max() >= self.n_charts):
            raise ValueError(f"Expected `target` in [0, {self.n_charts - 1}], got {target!r}.")
        uv_out, ok = self.kernel.change_chart(c, flat, np.ascontiguousarray(target_arr))
        if not np.all(ok):
            bad = flat[~np.asarray(ok)][0]
            raise ValueError(
                f"Expected `uv` to be covered by chart {target}, got a point at {bad} that is not."
            )
        return Location(target_arr.reshape(lead), np.asarray(uv_out).reshape(lead + (2,)))

    # -- evaluation ---------------------------------------------------------------------------

    def point(self, uv, chart=None) -> np.ndarray:
        """Points ``r(u)``: ``uv`` (..., 2) or a Location -> (..., 3)."""
        return self._eval("point", uv, chart, (3,))

    def jacobian(self, uv, chart=None) -> np.ndarray:
        """``J = dr/du``: (..., 2) -> (..., 3, 2); column ``a`` is ``dr/du_a``."""
        return self._eval("jacobian", uv, chart, (3, 2))

    def hessian(self, uv, chart=None) -> np.ndarray:
        """``d^2 r/du_a du_b``: (..., 2) -> (..., 3, 2, 2)."""
        return self._eval("hessian", uv, chart, (3, 2, 2))

    def normal(self, uv, chart=None) -> np.ndarray:
        """Unit normal with the role's sign: (..., 2) -> (..., 3)."""
        return self._eval("normal", uv, chart, (3,))

    def area_element(self, uv, chart=None) -> np.ndarray:
        """``sqrt(det g) = |J_u x J_v|``: (..., 2) -> (...)."""
        return self._eval("area_element", uv, chart, ())

    def first_fundamental_form(self, uv, chart=None) -> np.ndarray:
        """``g = J^T J``: (..., 2) -> (..., 2, 2)."""
        return self._eval("first_fundamental_form", uv, chart, (2, 2))

    def second_fundamental_form(self, uv, chart=None) -> np.ndarray:
        """``II_ab = n . d^2 r/du_a du_b``, sign by orientation: (..., 2) -> (..., 2, 2)."""
        return self._eval("second_fundamental_form", uv, chart, (2, 2))

    def weingarten(self, uv, chart=None) -> np.ndarray:
        """Weingarten map ``L = g^-1 II``, ``J L du/dt = -dn/dt``: (..., 2) -> (..., 2, 2)."""
        return self._eval("weingarten", uv, chart, (2, 2))

    def gaussian_curvature(self, uv, chart=None) -> np.ndarray:
        """``K = det L`` (independent of orientation): (..., 2) -> (...)."""
        return self._eval("gaussian_curvature", uv, chart, ())

    def mean_curvature(self, uv, chart=None) -> np.ndarray:
        """``trace(L)/2`` (negative on a sphere with outward normal): (..., 2) -> (...)."""
        return self._eval("mean_curvature", uv, chart, ())

    def principal_curvatures(self, uv, chart=None):
        """Principal curvatures and directions.

        Returns
        -------
        curvatures : ndarray, shape (..., 2)
            Eigenvalues of ``L``, ``k1 >= k2``; positive on a convex body with the normal into it.
        directions : ndarray, shape (..., 2, 3)
            Unit tangent vectors in space; ``directions[..., i, :]`` goes with
            ``curvatures[..., i]``.
        """
        lead, c, flat = self._coords(uv, chart)
        k, d = self.kernel.principal_curvatures(c, flat)
        return np.asarray(k).reshape(lead + (2,)), np.asarray(d).reshape(lead + (2, 3))

    # -- inverse problems -----------------------------------------------------------------------

    def support_point(self, direction) -> Location:
        """The point whose outward normal is ``direction``: the inverse Gauss map.

        It maximises ``p . direction`` over the surface (the support point of convex geometry),
        which is the contact point of a convex body pressed along ``direction``. Defined by the
        outward (reference) normal whatever the orientation: with ``orientation = -1``,
        ``normal(support_point(d)) == -d``.

        Parameters
        ----------
        direction : array_like, shape (..., 3)
            Non-zero directions (need not be unit).

        Raises
        ------
        ValueError
            For a surface that is not closed and strictly convex, or a zero direction.
        """
        d = as_float_array(direction, "direction", (3,))
        if not self.strictly_convex:
            raise ValueError(
                f"support_point needs a strictly convex closed surface; {type(self).__name__} "
                "is not one."
            )
        lead = d.shape[:-1]
        flat = d.reshape(-1, 3)
        norms = np.linalg.norm(flat, axis=-1)
        if np.any(norms == 0):
            raise ValueError("Expected `direction` to be non-zero, got a zero vector.")
        flat = np.ascontiguousarray(flat / norms[:, None])
        c, uv = self.kernel.support_point(flat)
        return Location(np.asarray(c).reshape(lead), np.asarray(uv).reshape(lead + (2,)))

    def project(self, p, *, tol: float = 1e-13, max_iter: int = 60) -> Location:
        """Location of the point of the surface closest to each point ``p`` (..., 3).

        Built-in closed forms where they exist (plane, sphere, ellipsoid, torus); otherwise
        Newton's method on ``|r(u) - p|^2`` from a class-specific initial guess, with the exact
        Hessian ``J^T J + (r - p) . H`` (Gauss-Newton where that is not positive definite), step
        halving when the distance grows, and re-charting after each step.
        """
        p = as_float_array(p, "p", (3,))
        lead = p.shape[:-1]
        flat = np.ascontiguousarray(p.reshape(-1, 3))
        chart, uv = self._project_flat(flat, tol, max_iter)
        return Location(np.asarray(chart).reshape(lead), np.asarray(uv).reshape(lead + (2,)))

    def _initial_guess(self, p):
        """Starting chart coordinates for Newton: nearest vertex of a coarse mesh."""
        chart, uv = self._sample_locations(48)
        pts = self.kernel.point(chart, uv)
        best = np.empty(len(p), dtype=np.intp)
        for start in range(0, len(p), 1024):
            block = p[start:start + 1024]
            d2 = ((block[:, None, :] - pts[None, :, :]) ** 2).sum(-1)
            best[start:start + 1024] = np.argmin(d2, axis=1)
        return chart[best].copy(), uv[best].copy()

    def _project_flat(self, p, tol, max_iter):
        chart, uv = self._initial_guess(p)
        chart = np.ascontiguousarray(chart, dtype=np.intp)
        uv = np.ascontiguousarray(uv, dtype=float)
        k = self.kernel
        active = np.ones(len(p), dtype=bool)
        for _ in range(max_iter):
            if not active.any():
                break
            idx = np.nonzero(active)[0]
            c, w = chart[idx], uv[idx]
            e = k.point(c, w) - p[idx]
            J = k.jacobian(c, w)
            H = k.hessian(c, w)
            grad = np.einsum("nia,ni->na", J, e)
            gn = np.einsum("nia,nib->nab", J, J)
            A = gn + np.einsum("ni,niab->nab", e, H)
            det = A[:, 0, 0] * A[:, 1, 1] - A[:, 0, 1] * A[:, 1, 0]
            bad = (det <= 0) | (A[:, 0, 0] <= 0)
            A[bad] = gn[bad]
            step = -np.linalg.solve(A, grad[..., None])[..., 0]
            dist0 = (e * e).sum(-1)
            scale = np.ones(len(idx))
            for _ in range(30):
                trial = np.ascontiguousarray(w + scale[:, None] * step)
                e1 = k.point(c, trial) - p[idx]
                worse = (e1 * e1).sum(-1) > dist0 * (1 + 1e-12) + 1e-300
                if not worse.any():
                    break
                scale[worse] *= 0.5
            w = np.ascontiguousarray(w + scale[:, None] * step)
            c, w = k.rechart(np.ascontiguousarray(c), w)
            chart[idx], uv[idx] = c, w
            size = np.abs(scale[:, None] * step).max(-1)
            active[idx] = size > tol * (1.0 + np.abs(w).max(-1))
        return chart, uv

    # -- quadrature and meshes ------------------------------------------------------------------

    def quadrature(self, n: int = 64) -> tuple:
        """Nodes and weights for ``integral f dA ~ sum(weights * f(nodes))`` over the surface.

        Parameters
        ----------
        n : int
            Resolution: nodes per unit of each coordinate direction scale (spectral accuracy
            for smooth integrands on closed surfaces).

        Returns
        -------
        nodes : Location, shapes (m,) and (m, 2)
        weights : ndarray, shape (m,)
            Including the area element.
        """
        raise ValueError(
            f"quadrature needs a bounded surface; {type(self).__name__} is unbounded."
        )

    def _sample_locations(self, resolution):
        """Chart coordinates of a grid of points covering the surface (for meshes and guesses)."""
        (u0, u1), (v0, v1) = self._display_box()
        u = np.linspace(u0, u1, resolution)
        v = np.linspace(v0, v1, resolution)
        U, V = np.meshgrid(u, v, indexing="ij")
        uv = np.ascontiguousarray(np.stack([U.ravel(), V.ravel()], axis=-1))
        return np.zeros(len(uv), dtype=np.intp), uv

    def _display_box(self):
        dom = self.chart_domain(0)
        box = []
        for lo, hi in (dom.u, dom.v):
            box.append((lo if np.isfinite(lo) else -1.0, hi if np.isfinite(hi) else 1.0))
        return box

    def mesh_arrays(self, resolution: int = 64):
        """Triangle mesh as arrays: ``points`` (m, 3), ``faces`` (k, 3) int, ``normals`` (m, 3).

        Normals are the reference (outward) ones whatever the orientation, as a display wants;
        faces wind counterclockwise seen from the side the normals point to.
        """
        resolution = _as_resolution(resolution)
        return self._mesh_arrays(resolution)

    def _mesh_arrays(self, resolution):
        (u0, u1), (v0, v1) = self._display_box()
        periodic = self.chart_domain(0).periodic
        return grid_mesh(self, u0, u1, v0, v1, resolution, resolution, periodic)

    def mesh(self, resolution: int = 64):
        """A ``pyvista.PolyData`` triangle mesh with point normals (``"Normals"``).

        Closed surfaces give watertight meshes; ``resolution`` sets the number of vertices along
        the longest coordinate direction (see each class for the exact vertex count).
        """
        points, faces, normals = self.mesh_arrays(resolution)
        import pyvista  # lazily: a runtime dependency needed only to display

        cells = np.hstack([np.full((len(faces), 1), 3, dtype=np.int64), faces]).ravel()
        poly = pyvista.PolyData(points, cells)
        poly.point_data["Normals"] = normals
        poly.point_data.active_normals_name = "Normals"
        return poly

    def __repr__(self):
        return f"{type(self).__name__}({self._describe()}, orientation={self._orientation:+d})"

    def _describe(self):
        return ""


def _as_resolution(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"Expected `resolution` to be an integer, got {value!r}.")
    if value < 4:
        raise ValueError(f"Expected `resolution` to be >= 4, got {value}.")
    return int(value)


def orient_faces(points, faces, normals):
    """Flip triangles whose winding disagrees with the mean of their vertex normals."""
    a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    fn = np.cross(b - a, c - a)
    vn = normals[faces].sum(axis=1)
    flip = (fn * vn).sum(-1) < 0
    faces = faces.copy()
    faces[flip] = faces[flip][:, ::-1]
    return faces


def grid_faces(nu, nv, periodic_u, periodic_v):
    """Two triangles per cell of an ``nu x nv`` vertex grid (index ``i * nv + j``), with wrap."""
    cu = nu if periodic_u else nu - 1
    cv = nv if periodic_v else nv - 1
    i, j = np.meshgrid(np.arange(cu), np.arange(cv), indexing="ij")
    i, j = i.ravel(), j.ravel()
    i1, j1 = (i + 1) % nu, (j + 1) % nv
    a, b, c, d = i * nv + j, i1 * nv + j, i1 * nv + j1, i * nv + j1
    return np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).astype(np.int64)


def grid_mesh(surface, u0, u1, v0, v1, nu, nv, periodic=(False, False)):
    """Mesh of one chart over a coordinate box (periodic directions wrap without seams)."""
    u = np.linspace(u0, u1, nu, endpoint=not periodic[0])
    v = np.linspace(v0, v1, nv, endpoint=not periodic[1])
    U, V = np.meshgrid(u, v, indexing="ij")
    uv = np.ascontiguousarray(np.stack([U.ravel(), V.ravel()], -1))
    chart = np.zeros(len(uv), dtype=np.intp)
    k = surface.kernel
    points = np.asarray(k.point(chart, uv))
    normals = np.asarray(k.normal(chart, uv)) * surface.orientation
    faces = orient_faces(points, grid_faces(nu, nv, periodic[0], periodic[1]), normals)
    return points, faces, normals
