"""Surface geometry against independent facts: closed-form curvatures, finite differences,
Gauss-Bonnet, the inverse Gauss map, long walks across chart boundaries, meshes, and the
agreement of every compiled surface with its Python twin."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nhphys.surfaces import (
    Ellipsoid,
    HeightField,
    Location,
    Paraboloid,
    ParametricSurface,
    Plane,
    Sphere,
    SurfaceOfRevolution,
    Torus,
)

FAST = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

seeds = st.integers(0, 2**32 - 1)


def random_rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q * np.linalg.det(q)


def random_locations(surface, rng, n):
    """Random chart coordinates inside the region each chart is used on."""
    if isinstance(surface, Ellipsoid):
        chart = rng.integers(0, 2, n).astype(np.intp)
        rad = 1.5 * np.sqrt(rng.uniform(0, 1, n))
        ang = rng.uniform(0, 2 * np.pi, n)
        return Location(chart, np.stack([rad * np.cos(ang), rad * np.sin(ang)], -1))
    (u0, u1), (v0, v1) = surface._display_box()
    uv = np.stack([rng.uniform(u0, u1, n), rng.uniform(v0, v1, n)], -1)
    return Location(np.zeros(n, dtype=np.intp), uv)


def cubic_terrain(x, y):
    return 0.05 * x**3 - 0.1 * x * y**2 + 0.2 * y + 0.03 * x**2 * y - 0.04 * y**3


def make_surfaces(rng, backend="auto"):
    """One of each built-in, with random placement, for identities that hold on every surface."""
    R = random_rotation(rng)
    c = rng.normal(size=3)
    return {
        "plane": Plane(c, rng.normal(size=3), backend=backend),
        "sphere": Sphere(rng.uniform(0.2, 3), c, R, backend=backend),
        "ellipsoid": Ellipsoid(rng.uniform(0.3, 3, 3), c, R, orientation="inward", backend=backend),
        "torus": Torus(2.0, rng.uniform(0.2, 1.5), c, R, backend=backend),
        "paraboloid": Paraboloid(rng.uniform(0.5, 2), rng.uniform(0.5, 2), "elliptic", c, R,
                                 backend=backend),
        "saddle": Paraboloid(1.0, 1.5, "hyperbolic", c, R, orientation=-1, backend=backend),
        "revolution": SurfaceOfRevolution("1.5 + 0.3*sin(2*t)", "t", (-2.0, 2.0), center=c,
                                          rotation=R, backend=backend),
        "heightfield": HeightField.from_function(
            lambda x, y: 0.3 * np.sin(x) * np.cos(0.7 * y), (-3, 3), (-3, 3), samples=49,
            center=c, rotation=R, backend=backend),
    }


SURFACE_NAMES = list(make_surfaces(np.random.default_rng(0)))


# ---------------------------------------------------------------------------------------------
# closed forms


@FAST
@given(seed=seeds, radius=st.floats(0.05, 20.0), body=st.booleans())
def test_sphere_curvatures_are_one_over_radius_with_orientation_sign(seed, radius, body):
    rng = np.random.default_rng(seed)
    s = Sphere(radius, rng.normal(size=3), random_rotation(rng))
    s = s.as_body() if body else s.as_ground("outside")
    loc = random_locations(s, rng, 50)
    sign = 1.0 if body else -1.0  # normal into the ball: L = I/r; outward: L = -I/r
    k, _ = s.principal_curvatures(loc)
    np.testing.assert_allclose(k, sign / radius, rtol=1e-12)
    np.testing.assert_allclose(s.weingarten(loc), np.broadcast_to(sign * np.eye(2) / radius,
                                                                  (50, 2, 2)),
                               rtol=1e-12, atol=1e-12 / radius)
    np.testing.assert_allclose(s.gaussian_curvature(loc), 1 / radius**2, rtol=1e-12)
    np.testing.assert_allclose(s.mean_curvature(loc), sign / radius, rtol=1e-12)
    p = s.point(loc)
    np.testing.assert_allclose(np.linalg.norm(p - s.center, axis=-1), radius, rtol=1e-14)
    n = s.normal(loc)
    np.testing.assert_allclose(n, -sign * (p - s.center) / radius, atol=1e-13)


@FAST
@given(seed=seeds)
def test_ellipsoid_gaussian_and_mean_curvature_match_textbook(seed):
    rng = np.random.default_rng(seed)
    axes = rng.uniform(0.2, 4.0, 3)
    c, R = rng.normal(size=3), random_rotation(rng)
    s = Ellipsoid(axes, c, R)  # outward normal
    loc = random_locations(s, rng, 60)
    x = (s.point(loc) - c) @ R
    a, b, cc = axes
    q = (x**2 / axes**4).sum(-1)
    K = 1.0 / ((a * b * cc) ** 2 * q**2)
    H = ((x**2).sum(-1) - (axes**2).sum()) / (2 * (a * b * cc) ** 2 * q**1.5)
    np.testing.assert_allclose(s.gaussian_curvature(loc), K, rtol=1e-11)
    np.testing.assert_allclose(s.mean_curvature(loc), H, rtol=1e-11)
    body = s.as_body()
    np.testing.assert_allclose(body.mean_curvature(loc), -H, rtol=1e-11)
    np.testing.assert_allclose(body.gaussian_curvature(loc), K, rtol=1e-11)
    np.testing.assert_allclose(((x / axes) ** 2).sum(-1), 1.0, rtol=1e-14)


@FAST
@given(seed=seeds, major=st.floats(0.5, 5.0), ratio=st.floats(0.05, 0.95))
def test_torus_gaussian_and_mean_curvature_match_textbook(seed, major, ratio):
    rng = np.random.default_rng(seed)
    minor = ratio * major
    s = Torus(major, minor, rng.normal(size=3), random_rotation(rng))
    theta = rng.uniform(-10, 10, 60)
    loc = np.stack([rng.uniform(-10, 10, 60), theta], -1)
    ct = np.cos(theta)
    K = ct / (minor * (major + minor * ct))
    H = -(major + 2 * minor * ct) / (2 * minor * (major + minor * ct))
    scale = 1.0 / minor**2
    np.testing.assert_allclose(s.gaussian_curvature(loc), K, rtol=1e-11, atol=1e-13 * scale)
    np.testing.assert_allclose(s.mean_curvature(loc), H, rtol=1e-11, atol=1e-13 / minor)
    k, _ = s.principal_curvatures(loc)
    np.testing.assert_allclose(np.sort(k, -1), np.sort(np.stack(
        [-np.full(60, 1 / minor), -ct / (major + minor * ct)], -1), -1), rtol=1e-11,
        atol=1e-13 / minor)


@FAST
@given(seed=seeds)
def test_plane_is_flat_and_keeps_its_normal(seed):
    rng = np.random.default_rng(seed)
    n = rng.normal(size=3)
    s = Plane(rng.normal(size=3), n)
    loc = rng.normal(size=(40, 2)) * 10
    assert np.all(s.weingarten(loc) == 0)
    assert np.all(s.gaussian_curvature(loc) == 0)
    np.testing.assert_allclose(s.normal(loc), np.broadcast_to(n / np.linalg.norm(n), (40, 3)),
                               atol=1e-15)
    np.testing.assert_allclose(s.as_body().normal(loc)[0], -n / np.linalg.norm(n), atol=1e-15)
    np.testing.assert_allclose((s.point(loc) - s.point0) @ n, 0, atol=1e-12)


def graph_curvatures(fx, fy, fxx, fxy, fyy):
    """Gaussian and mean curvature of z = f(x, y) with the upward normal."""
    w2 = 1 + fx**2 + fy**2
    K = (fxx * fyy - fxy**2) / w2**2
    H = ((1 + fy**2) * fxx - 2 * fx * fy * fxy + (1 + fx**2) * fyy) / (2 * w2**1.5)
    return K, H


@pytest.mark.parametrize("kind", ["elliptic", "hyperbolic"])
def test_paraboloid_curvature_matches_graph_formula(kind, rng):
    a, b = 0.8, 1.7
    s = Paraboloid(a, b, kind)
    xy = rng.uniform(-2, 2, (80, 2))
    sgn = 1.0 if kind == "elliptic" else -1.0
    cx, cy = 1 / a**2, sgn / b**2
    K, H = graph_curvatures(2 * cx * xy[:, 0], 2 * cy * xy[:, 1], 2 * cx, 0.0, 2 * cy)
    np.testing.assert_allclose(s.gaussian_curvature(xy), K, rtol=1e-12)
    np.testing.assert_allclose(s.mean_curvature(xy), H, rtol=1e-12, atol=1e-15)
    if kind == "elliptic":  # a bowl seen from inside: positive definite
        assert np.all(np.linalg.eigvals(s.weingarten(xy)).real > 0)


def test_surface_of_revolution_catenoid_and_sphere_zone_match_closed_forms(rng):
    cat = SurfaceOfRevolution("cosh(t)", "t", (-1.5, 1.5))
    t = rng.uniform(-1.5, 1.5, 100)
    uv = np.stack([t, rng.uniform(-4, 4, 100)], -1)
    # the profile is a quintic Hermite interpolant (exact knot derivatives, 1025 knots): its
    # curvature error is O(h^4) ~ 1e-9 here
    np.testing.assert_allclose(cat.gaussian_curvature(uv), -1 / np.cosh(t) ** 4, rtol=1e-7)
    np.testing.assert_allclose(cat.mean_curvature(uv), 0, atol=1e-7)
    # a zone of the unit sphere (rho > 0), profile from plain callables (quintic spline)
    zone = SurfaceOfRevolution(np.sin, lambda tt: -np.cos(tt), (0.3, 2.8), knots=2049)
    uv = np.stack([rng.uniform(0.3, 2.8, 100), rng.uniform(-4, 4, 100)], -1)
    # (quintic spline of samples: curvature error O(h^4), ~3e-8 at 2049 knots)
    np.testing.assert_allclose(zone.gaussian_curvature(uv), 1.0, rtol=1e-7)
    np.testing.assert_allclose(zone.mean_curvature(uv), -1.0, rtol=1e-7)  # outward normal
    np.testing.assert_allclose(np.linalg.norm(zone.point(uv), axis=-1), 1.0, rtol=1e-12)


def test_height_field_reproduces_a_cubic_terrain_exactly(rng):
    # a bicubic spline reproduces cubic polynomials, so the interpolated terrain is the terrain
    hf = HeightField.from_function(cubic_terrain, (-2, 2), (-1.5, 2.5), samples=(17, 23))
    xy = rng.uniform([-2, -1.5], [2, 2.5], (100, 2))
    x, y = xy.T
    fx = 0.15 * x**2 - 0.1 * y**2 + 0.06 * x * y
    fy = -0.2 * x * y + 0.2 + 0.03 * x**2 - 0.12 * y**2
    fxx, fxy, fyy = 0.3 * x + 0.06 * y, -0.2 * y + 0.06 * x, -0.2 * x - 0.24 * y
    K, H = graph_curvatures(fx, fy, fxx, fxy, fyy)
    np.testing.assert_allclose(hf.point(xy)[:, 2], cubic_terrain(x, y), atol=1e-12)
    np.testing.assert_allclose(hf.gaussian_curvature(xy), K, atol=1e-10)
    np.testing.assert_allclose(hf.mean_curvature(xy), H, atol=1e-10)


def test_height_field_from_samples_converges_to_a_smooth_terrain(rng):
    f = "0.2*sin(x)*cos(y)"
    xy = rng.uniform(-2.5, 2.5, (100, 2))
    x, y = xy.T
    K, _ = graph_curvatures(0.2 * np.cos(x) * np.cos(y), -0.2 * np.sin(x) * np.sin(y),
                            -0.2 * np.sin(x) * np.cos(y), -0.2 * np.cos(x) * np.sin(y),
                            -0.2 * np.sin(x) * np.cos(y))
    errors = []
    for n in (33, 65, 129):
        hf = HeightField.from_function(f, (-3, 3), (-3, 3), samples=n)
        errors.append(np.max(np.abs(hf.gaussian_curvature(xy) - K)))
    # a cubic spline's second derivatives converge like h^2 inside and more slowly near the
    # grid's edges (not-a-knot ends); the measured ratios per halving are ~2.9
    assert errors[2] < 2e-5 and errors[0] / errors[1] > 2.0 and errors[1] / errors[2] > 2.0


def test_parametric_surfaces_from_expressions_and_callables_match_closed_forms(rng):
    r = 1.7
    sph = ParametricSurface.from_expressions(
        f"{r}*sin(u)*cos(v)", f"{r}*sin(u)*sin(v)", f"{r}*cos(u)",
        u_range=(0.2, 2.9), v_range=(-np.pi, np.pi), periodic=(False, True))
    uv = np.stack([rng.uniform(0.2, 2.9, 30), rng.uniform(-3, 3, 30)], -1)
    np.testing.assert_allclose(sph.gaussian_curvature(uv), 1 / r**2, rtol=1e-12)
    # J_u x J_v points outward for (polar, azimuth): the outward sphere has L = -I/r
    np.testing.assert_allclose(sph.principal_curvatures(uv)[0], -1 / r, rtol=1e-12)

    graph = ParametricSurface.from_expressions("u", "v", "0.2*sin(u)*cos(v)")
    u, v = rng.uniform(-1, 1, (2, 30))
    K, H = graph_curvatures(0.2 * np.cos(u) * np.cos(v), -0.2 * np.sin(u) * np.sin(v),
                            -0.2 * np.sin(u) * np.cos(v), -0.2 * np.cos(u) * np.sin(v),
                            -0.2 * np.sin(u) * np.cos(v))
    np.testing.assert_allclose(graph.gaussian_curvature(np.stack([u, v], -1)), K, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(graph.mean_curvature(np.stack([u, v], -1)), H, rtol=1e-12,
                               atol=1e-15)

    cyl = ParametricSurface(
        lambda u, v: [np.cos(u), np.sin(u), v],
        lambda u, v: [[-np.sin(u), 0], [np.cos(u), 0], [0, 1]],
        lambda u, v: [[[-np.cos(u), 0], [0, 0]], [[-np.sin(u), 0], [0, 0]], [[0, 0], [0, 0]]],
        u_range=(-np.pi, np.pi), v_range=(0, 2), periodic=(True, False))
    k, _ = cyl.principal_curvatures(uv)
    # J_u x J_v = (cos u, sin u, 0) is outward, so the curved direction has L = -1
    np.testing.assert_allclose(np.sort(k, -1), np.broadcast_to([-1.0, 0.0], (30, 2)), atol=1e-14)


def test_roles_give_the_documented_signs():
    e = Ellipsoid([1.0, 2.0, 3.0])
    loc = random_locations(e, np.random.default_rng(1), 30)
    assert np.all(np.linalg.eigvals(e.as_body().weingarten(loc)).real > 0)  # convex body
    assert np.all(np.linalg.eigvals(e.as_ground("outside").weingarten(loc)).real < 0)
    assert np.all(np.linalg.eigvals(e.as_ground("inside").weingarten(loc)).real > 0)  # a bowl
    p = e.point(loc)
    n_body = e.as_body().normal(loc)
    assert np.all(np.einsum("ni,ni->n", n_body, p) < 0)  # into the body (centre at the origin)
    assert e.as_body().orientation == -1 and e.as_ground().orientation == 1


# ---------------------------------------------------------------------------------------------
# Weingarten map: eigenvalues and L(dr/dt) = -dn/dt


@settings(max_examples=8, deadline=None)
@given(seed=seeds)
def test_weingarten_eigenvalues_are_the_principal_curvatures(backend, seed):
    rng = np.random.default_rng(seed)
    for name, s in make_surfaces(rng, backend).items():
        loc = random_locations(s, rng, 20)
        L = s.weingarten(loc)
        eig = np.sort(np.linalg.eigvals(L).real, -1)[:, ::-1]
        k, d = s.principal_curvatures(loc)
        scale = 1.0 + np.abs(k).max()
        np.testing.assert_allclose(k, eig, atol=1e-10 * scale, err_msg=name)
        # directions: unit, tangent, orthogonal, and eigenvectors of the shape operator
        n = s.normal(loc)
        J = s.jacobian(loc)
        np.testing.assert_allclose(np.linalg.norm(d, axis=-1), 1.0, rtol=1e-13, err_msg=name)
        np.testing.assert_allclose(np.einsum("nki,ni->nk", d, n), 0, atol=1e-13, err_msg=name)
        np.testing.assert_allclose(np.einsum("ni,ni->n", d[:, 0], d[:, 1]), 0, atol=1e-13)
        for i in range(2):
            a = np.linalg.solve(np.einsum("nia,nib->nab", J, J),
                                np.einsum("nia,ni->na", J, d[:, i])[..., None])[..., 0]
            lhs = np.einsum("nia,nab,nb->ni", J, L, a)
            np.testing.assert_allclose(lhs, k[:, i, None] * d[:, i], atol=1e-10 * scale,
                                       err_msg=name)


@settings(max_examples=6, deadline=None)
@given(seed=seeds)
def test_weingarten_map_turns_velocity_into_minus_normal_derivative(backend, seed):
    """4th-order central differences of n along random curves, eps 1e-6, relative tol 1e-6."""
    rng = np.random.default_rng(seed)
    eps = 1e-6
    for name, s in make_surfaces(rng, backend).items():
        loc = random_locations(s, rng, 20)
        a = rng.normal(size=(20, 2))
        b = rng.normal(size=(20, 2))

        def normal_at(t, s=s, loc=loc, a=a, b=b):
            return s.normal(loc.uv + a * t + b * t * t, loc.chart)

        dn = (normal_at(-2 * eps) - 8 * normal_at(-eps) + 8 * normal_at(eps)
              - normal_at(2 * eps)) / (12 * eps)
        J = s.jacobian(loc)
        L = s.weingarten(loc)
        lhs = np.einsum("nia,nab,nb->ni", J, L, a)  # L(dr/dt) in space, dr/dt = J a
        err = np.linalg.norm(lhs + dn, axis=-1)
        # the differences' round-off floor is ~1e-16 * 18 / (12 eps) ~ 2e-10
        scale = np.maximum(np.linalg.norm(dn, axis=-1), np.linalg.norm(lhs, axis=-1))
        assert np.all(err <= 1e-6 * scale + 1e-9), (name, np.max(err / (scale + 1e-300)))


# ---------------------------------------------------------------------------------------------
# Gauss-Bonnet


def test_gauss_bonnet_over_each_closed_atlas(backend):
    # the twins evaluate ~2e4 points per example (~10 s): fewer examples there
    @settings(max_examples=6 if backend == "cython" else 2, deadline=None)
    @given(seed=seeds)
    def check(seed):
        rng = np.random.default_rng(seed)
        R, c = random_rotation(rng), rng.normal(size=3)
        radius = rng.uniform(0.1, 10)
        axes = rng.uniform(1.0, 5.0, 3)
        major = rng.uniform(0.5, 3)
        minor = major * rng.uniform(0.05, 0.9)
        cases = [
            (Sphere(radius, c, R, backend=backend), 4 * np.pi, 4 * np.pi * radius**2),
            (Ellipsoid(axes, c, R, backend=backend).as_body(), 4 * np.pi, None),
            (Torus(major, minor, c, R, backend=backend), 0.0, 4 * np.pi**2 * major * minor),
        ]
        for s, total, area in cases:
            loc, w = s.quadrature(64)  # exponential convergence: ~1e-14 here for ratios <= 5
            assert abs(np.sum(w * s.gaussian_curvature(loc)) - total) < 1e-8, s
            if area is not None:
                assert abs(w.sum() - area) < 1e-10 * area, s

    check()


# ---------------------------------------------------------------------------------------------
# inverse Gauss map


@FAST
@given(seed=seeds, ratio=st.floats(1.0, 20.0))
def test_support_point_inverts_the_gauss_map(seed, ratio):
    rng = np.random.default_rng(seed)
    axes = np.array([1.0, rng.uniform(1.0, ratio), ratio])
    rng.shuffle(axes)
    s = Ellipsoid(axes * rng.uniform(0.1, 3), rng.normal(size=3), random_rotation(rng))
    d = rng.normal(size=(200, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    loc = s.support_point(d)
    np.testing.assert_allclose(s.normal(loc), d, rtol=0, atol=1e-12)
    np.testing.assert_allclose(s.as_body().normal(loc), -d, rtol=0, atol=1e-12)
    # and it is the support point: no vertex of a fine mesh lies further along d
    pts = s.mesh_arrays(48)[0]
    best = (s.point(loc) * d).sum(-1)
    assert np.all(best[None, :] >= pts @ d.T - 1e-12 * np.abs(pts).max())


def test_support_point_refuses_non_convex_surfaces_and_zero_directions():
    with pytest.raises(ValueError, match="strictly convex"):
        Torus(2, 1).support_point([0, 0, 1])
    with pytest.raises(ValueError, match="`direction`"):
        Sphere(1).support_point([0, 0, 0])


# ---------------------------------------------------------------------------------------------
# re-charting along long walks


def walk(surface, loc, rng, steps, h):
    """Follow a geodesic-like path with a slowly turning heading, re-charting after each step.

    Returns points, normals, charts and the number of chart changes.
    """
    chart, uv = int(loc.chart), np.array(loc.uv, dtype=float)
    J = surface.jacobian(uv, chart)
    heading = J[:, 0] / np.linalg.norm(J[:, 0])
    points, normals, charts, switches = [], [], [], 0
    for _ in range(steps):
        J = surface.jacobian(uv, chart)
        n = surface.normal(uv, chart)
        heading = heading - (heading @ n) * n
        heading /= np.linalg.norm(heading)
        turn = rng.normal() * 0.05
        heading = np.cos(turn) * heading + np.sin(turn) * np.cross(n, heading)
        du = np.linalg.solve(J.T @ J, J.T @ (h * heading))
        uv = uv + du
        before = surface.point(uv, chart)
        new = surface.rechart(uv, chart)
        after = surface.point(new)
        assert np.linalg.norm(after - before) <= 1e-13 * (1 + np.linalg.norm(before))
        switches += int(new.chart) != chart
        chart, uv = int(new.chart), np.array(new.uv)
        points.append(after)
        normals.append(surface.normal(uv, chart))
        charts.append(chart)
    return np.array(points), np.array(normals), np.array(charts), switches


def test_rechart_keeps_long_walks_on_the_surface_with_continuous_normals(backend):
    rng = np.random.default_rng(7)
    R, c = random_rotation(rng), rng.normal(size=3)
    steps = 600
    # ellipsoid: start near a pole heading along a meridian so the walk crosses the poles
    e = Ellipsoid([1.0, 1.6, 2.3], c, R, backend=backend)
    pts, nrm, charts, switches = walk(e, Location(np.intp(0), np.array([0.05, 0.0])), rng,
                                      steps, 0.05)
    local = (pts - c) @ R
    assert np.max(np.abs(np.sqrt(((local / e.semi_axes) ** 2).sum(-1)) - 1)) < 1e-13
    assert switches >= 2 and set(charts) == {0, 1}
    # passed close to both poles of the c axis (within ~0.1 rad)
    assert local[:, 2].max() > 2.3 * 0.99 and local[:, 2].min() < -2.3 * 0.99
    jumps = np.linalg.norm(np.diff(nrm, axis=0), axis=-1)
    kmax = 2.3 / 1.0**2  # largest normal curvature of this ellipsoid
    assert np.all(jumps <= 1.05 * kmax * 0.05 + 1e-12)
    # torus: angles wrap many times
    t = Torus(2.0, 0.6, c, R, backend=backend)
    pts, nrm, charts, switches = walk(t, Location(np.intp(0), np.array([3.0, 3.0])), rng, steps,
                                      0.08)
    local = (pts - c) @ R
    tube = np.hypot(np.hypot(local[:, 0], local[:, 1]) - 2.0, local[:, 2])
    assert np.max(np.abs(tube - 0.6)) < 1e-13
    jumps = np.linalg.norm(np.diff(nrm, axis=0), axis=-1)
    assert np.all(jumps <= 1.05 * 0.08 / 0.6 + 1e-12)


def test_change_chart_maps_to_the_same_point_and_refuses_uncovered_points():
    e = Ellipsoid([1.0, 2.0, 3.0])
    uv = np.array([[0.3, -0.4], [1.2, 0.1]])
    other = e.change_chart(uv, 1, chart=0)
    np.testing.assert_allclose(e.point(other), e.point(uv, 0), atol=1e-14)
    with pytest.raises(ValueError, match="chart 1"):
        e.change_chart([0.0, 0.0], 1, chart=0)  # the pole that chart 1 misses


# ---------------------------------------------------------------------------------------------
# projection


@pytest.mark.parametrize("name", SURFACE_NAMES)
def test_project_finds_the_closest_point(backend, name, rng):
    s = make_surfaces(rng, backend)[name]
    loc0 = random_locations(s, rng, 40)
    p0 = s.point(loc0)
    t = rng.uniform(-0.15, 0.15, 40)
    p = p0 + t[:, None] * s.normal(loc0)
    loc = s.project(p)
    q = s.point(loc)
    dist = np.linalg.norm(p - q, axis=-1)
    # stationarity: p - q is normal to the surface
    resid = np.einsum("ni,nia->na", p - q, s.jacobian(loc))
    scale = np.linalg.norm(s.jacobian(loc), axis=1)
    assert np.max(np.abs(resid) / scale) < 1e-9, name
    # never further than the foot we started from, nor than any vertex of a fine mesh
    assert np.all(dist <= np.abs(t) + 1e-12), name
    pts = s.mesh_arrays(64)[0]
    nearest = np.min(np.linalg.norm(p[:, None, :] - pts[None, :, :], axis=-1), axis=1)
    assert np.all(dist <= nearest + 1e-12), name
    # within the focal distance the foot is the closest point
    kmax = np.abs(s.principal_curvatures(loc0)[0]).max(-1)
    inside = np.abs(t) * kmax < 0.5
    np.testing.assert_allclose(dist[inside], np.abs(t[inside]), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# twins


@pytest.mark.parity
@pytest.mark.parametrize("name", SURFACE_NAMES)
def test_every_kernel_surface_agrees_with_its_twin(name):
    rng = np.random.default_rng(hash(name) % 2**32)
    kernel = make_surfaces(np.random.default_rng(11), backend="cython")[name]
    twin = kernel.with_backend("python")
    assert type(kernel.kernel).__module__ == "nhphys_ext.surfaces"
    assert type(twin.kernel).__module__ == "nhphys.twins.surfaces"
    loc = random_locations(kernel, rng, 40)
    if name not in ("revolution", "heightfield"):  # unbounded or periodic: go far out too
        loc = Location(loc.chart, loc.uv * rng.uniform(0.5, 3.0, (40, 1)))
    for method in ("point", "jacobian", "hessian", "normal", "area_element",
                   "first_fundamental_form", "second_fundamental_form", "weingarten",
                   "gaussian_curvature", "mean_curvature"):
        a = getattr(kernel, method)(loc)
        b = getattr(twin, method)(loc)
        scale = np.max(np.abs(b)) if np.max(np.abs(b)) > 0 else 1.0
        assert np.max(np.abs(a - b)) <= 1e-12 * scale, (name, method)
    for a, b in zip(kernel.principal_curvatures(loc), twin.principal_curvatures(loc)):
        assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, np.max(np.abs(b))), name
    for a, b in zip(kernel.rechart(loc), twin.rechart(loc)):
        np.testing.assert_array_equal(a, b)
    if kernel.strictly_convex:
        d = rng.normal(size=(30, 3))
        for a, b in zip(kernel.support_point(d), twin.support_point(d)):
            assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, np.max(np.abs(b)))


# ---------------------------------------------------------------------------------------------
# meshes


def edge_counts(faces):
    e = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    return counts


@pytest.mark.parametrize("resolution", [8, 21, 64])
def test_closed_meshes_are_watertight_with_outward_normals(resolution):
    rng = np.random.default_rng(resolution)
    R, c = random_rotation(rng), rng.normal(size=3)
    cases = [
        (Ellipsoid([1, 2, 3], c, R).as_body(), 2, 2 + (resolution // 2 - 1) * resolution),
        (Sphere(1.5, c, R), 2, 2 + (resolution // 2 - 1) * resolution),
        (Torus(2, 0.5, c, R).as_body(), 0, resolution * max(resolution // 2, 4)),
        (SurfaceOfRevolution("2 + 0.5*cos(t)", "0.5*sin(t)", (0, 2 * np.pi), periodic=True),
         0, resolution * resolution),
    ]
    for s, chi, n_vertices in cases:
        pts, faces, nrm = s.mesh_arrays(resolution)
        assert len(pts) == n_vertices
        counts = edge_counts(faces)
        assert np.all(counts == 2), s  # every edge shared by exactly two triangles
        assert len(pts) - len(counts) + len(faces) == chi
        np.testing.assert_allclose(np.linalg.norm(nrm, axis=-1), 1, rtol=1e-13)
        if isinstance(s, Ellipsoid):
            outward = (pts - s.center) @ np.eye(3)
        elif isinstance(s, Torus):
            local = (pts - s.center) @ s.rotation
            core = np.stack([local[:, 0], local[:, 1], 0 * local[:, 2]], -1)
            core = 2 * core / np.linalg.norm(core, axis=-1, keepdims=True)
            outward = (local - core) @ s.rotation.T
        else:
            core = np.stack([pts[:, 0], pts[:, 1], 0 * pts[:, 2]], -1)
            outward = pts - 2 * core / np.linalg.norm(core, axis=-1, keepdims=True)
        assert np.all(np.einsum("ni,ni->n", nrm, outward) > 0), s
        a, b, cc = pts[faces[:, 0]], pts[faces[:, 1]], pts[faces[:, 2]]
        fn = np.cross(b - a, cc - a)
        assert np.all(np.einsum("ni,ni->n", fn, nrm[faces].sum(1)) > 0)  # winding agrees


def test_open_meshes_cover_their_grid_and_pyvista_gets_normals():
    s = HeightField.from_function(cubic_terrain, (-2, 2), (-2, 2), samples=9)
    pts, faces, nrm = s.mesh_arrays(10)
    assert pts.shape == (100, 3) and faces.shape == (162, 3)
    assert np.all(nrm[:, 2] > 0)
    pv = pytest.importorskip("pyvista")
    mesh = Ellipsoid([1, 2, 3]).mesh(24)
    assert isinstance(mesh, pv.PolyData)
    assert mesh.n_points == 2 + 11 * 24 and mesh.n_open_edges == 0 and mesh.is_manifold
    np.testing.assert_allclose(mesh.point_data["Normals"], Ellipsoid([1, 2, 3]).mesh_arrays(24)[2])


# ---------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: Sphere(0.0), "radius"),
        (lambda: Sphere(-1.0), "radius"),
        (lambda: Ellipsoid([1.0, 0.0, 2.0]), "semi_axes"),
        (lambda: Ellipsoid([1.0, -2.0, 2.0]), "semi_axes"),
        (lambda: Ellipsoid([1.0, 2.0]), "semi_axes"),
        (lambda: Torus(1.0, 1.0), "minor_radius"),
        (lambda: Torus(1.0, 2.0), "minor_radius"),
        (lambda: Torus(-1.0, 0.5), "major_radius"),
        (lambda: Paraboloid(1.0, 0.0), "b"),
        (lambda: Paraboloid(1.0, 1.0, "spherical"), "kind"),
        (lambda: Plane(normal=[0, 0, 0]), "normal"),
        (lambda: Sphere(1.0, rotation=np.diag([1.0, 1.0, -1.0])), "rotation"),
        (lambda: Sphere(1.0, orientation="sideways"), "orientation"),
        (lambda: ParametricSurface.from_expressions("u", "v", "abs(u)"), "z"),
        (lambda: ParametricSurface.from_expressions("u", "v", "floor(v)"), "z"),
        (lambda: ParametricSurface.from_expressions("u", "v**", "0"), "y"),
        (lambda: ParametricSurface.from_expressions("u", "v", "w*u"), "z"),
        (lambda: ParametricSurface.from_expressions("u + v", "u + v", "0"), "x"),
        (lambda: ParametricSurface.from_expressions("u", "v", "log(u - 5)"), "x"),
        (lambda: ParametricSurface(lambda u, v: [u, v, u * v],
                                   lambda u, v: [[1, 0], [0, 1], [v, 2 * u]],
                                   lambda u, v: [[[0, 0], [0, 0]], [[0, 0], [0, 0]],
                                                 [[0, 1], [1, 0]]]), "jacobian"),
        (lambda: ParametricSurface(lambda u, v: [u, v, u * v],
                                   lambda u, v: [[1, 0], [0, 1], [v, u]],
                                   lambda u, v: [[[0, 0], [0, 0]], [[0, 0], [0, 0]],
                                                 [[1, 1], [1, 0]]]), "hessian"),
        (lambda: ParametricSurface(lambda u, v: [u, u, 0],
                                   lambda u, v: [[1, 0], [1, 0], [0, 0]],
                                   lambda u, v: np.zeros((3, 2, 2))), "point"),
        (lambda: SurfaceOfRevolution("t", "t", (-1, 1)), "radius"),
        (lambda: SurfaceOfRevolution("1", "1", (-1, 1)), "radius"),
        (lambda: SurfaceOfRevolution("2 + cos(t)", "sin(t)", (0, 3), periodic=True), "radius"),
        (lambda: SurfaceOfRevolution("1 + t^2", "sign(t)", (-1, 1)), "height"),
        (lambda: HeightField(np.zeros((3, 8)), (0, 1), (0, 1)), "heights"),
        (lambda: HeightField(np.zeros((8, 8)), (1, 0), (0, 1)), "x_range"),
        (lambda: HeightField.from_function("x +* y", (0, 1), (0, 1)), "f"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(make, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        make()


def test_bad_evaluation_arguments():
    s = Ellipsoid([1, 2, 3])
    with pytest.raises(ValueError, match="`uv`"):
        s.point([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="`chart`"):
        s.point([0.1, 0.2], chart=2)
    with pytest.raises(TypeError, match="`chart`"):
        s.point([0.1, 0.2], chart=0.5)
    with pytest.raises(ValueError, match="`uv`"):
        s.point([np.nan, 0.0])
    with pytest.raises(ValueError, match="`p`"):
        s.project([1.0, 2.0])
    with pytest.raises(ValueError, match="`resolution`"):
        s.mesh_arrays(2)
    with pytest.raises(ValueError, match="unbounded"):
        Plane().quadrature()


def test_leading_axes_and_locations_round_trip(rng):
    s = Ellipsoid([1, 2, 3])
    uv = rng.normal(size=(4, 5, 2))
    chart = rng.integers(0, 2, (4, 5))
    assert s.point(uv, chart).shape == (4, 5, 3)
    assert s.weingarten(uv, chart).shape == (4, 5, 2, 2)
    assert s.principal_curvatures(uv, chart)[1].shape == (4, 5, 2, 3)
    loc = s.project(s.point(uv, chart))
    np.testing.assert_allclose(s.point(loc), s.point(uv, chart), atol=1e-13)
    assert loc.chart.shape == (4, 5)


def test_import_does_not_pull_heavy_optional_modules():
    import subprocess
    import sys

    code = ("import sys, nhphys.surfaces; "
            "print(sorted(m for m in ('sympy', 'pyvista', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "sympy" not in out.stdout and "pyvista" not in out.stdout


@pytest.mark.parity
def test_user_surfaces_reach_compiled_kernels_through_the_python_bridge(rng):
    from nhphys_ext import surfaces as ext

    py = ParametricSurface.from_expressions("u", "v", "0.2*sin(u)*cos(v)", periodic=(True, False))
    bridged = py.with_backend("cython")
    assert isinstance(bridged.kernel, ext.PythonChartSurface)
    assert isinstance(bridged.kernel, ext.ChartSurface)
    uv = rng.uniform(-3, 3, (25, 2))
    for method in ("point", "normal", "weingarten", "gaussian_curvature"):
        a, b = getattr(bridged, method)(uv), getattr(py, method)(uv)
        assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, np.max(np.abs(b))), method
    for a, b in zip(bridged.rechart(uv), py.rechart(uv)):
        np.testing.assert_array_equal(a, b)


def test_gauss_bonnet_for_a_user_defined_closed_surface():
    torus = ParametricSurface.from_expressions(
        "(2 + 0.7*cos(v))*cos(u)", "(2 + 0.7*cos(v))*sin(u)", "0.7*sin(v)",
        u_range=(0, 2 * np.pi), v_range=(0, 2 * np.pi), periodic=(True, True), closed=True)
    loc, w = torus.quadrature(48)
    assert abs(np.sum(w * torus.gaussian_curvature(loc))) < 1e-8
    assert abs(w.sum() - 4 * np.pi**2 * 2 * 0.7) < 1e-10 * w.sum()


def test_surface_of_revolution_from_samples_follows_the_sampled_profile(rng):
    t = np.linspace(-1.0, 1.0, 41)
    cat = SurfaceOfRevolution.from_samples(t, np.cosh(t), t)
    tt = rng.uniform(-0.9, 0.9, 50)
    uv = np.stack([tt, rng.uniform(-3, 3, 50)], -1)
    np.testing.assert_allclose(np.hypot(*cat.point(uv)[:, :2].T), np.cosh(tt), rtol=1e-9)
    np.testing.assert_allclose(cat.gaussian_curvature(uv), -1 / np.cosh(tt) ** 4, rtol=1e-4)


def test_surfaces_pickle_without_their_compiled_object():
    import pickle

    e = Ellipsoid([1, 2, 3], orientation="inward")
    e.point([0.1, 0.2])  # builds the kernel object
    f = pickle.loads(pickle.dumps(e))
    np.testing.assert_array_equal(f.weingarten([0.1, 0.2]), e.weingarten([0.1, 0.2]))
    assert f.orientation == -1
