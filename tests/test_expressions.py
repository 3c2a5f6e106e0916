"""User expressions are data: parsed against a whitelist, never evaluated as Python."""

import time

import numpy as np
import pytest

from nhphys.surfaces import HeightField, ParametricSurface, SurfaceOfRevolution
from nhphys.surfaces.symbolic import parse_expression

CONSTRUCTORS = {
    "ParametricSurface.from_expressions": lambda text: ParametricSurface.from_expressions(
        "u", "v", text.replace("VAR", "u")),
    "HeightField.from_function": lambda text: HeightField.from_function(
        text.replace("VAR", "x"), (0, 1), (0, 1), samples=9),
    "SurfaceOfRevolution": lambda text: SurfaceOfRevolution(text.replace("VAR", "t"), "t",
                                                            (0.1, 1.0)),
}


@pytest.mark.parametrize("constructor", list(CONSTRUCTORS))
@pytest.mark.parametrize("attack", [
    "__import__('os').system('touch {marker}')",
    "open('{marker}', 'w').write('x')",
    "(lambda: __import__('os').system('touch {marker}'))()",
    "[__import__('os').system('touch {marker}') for _ in (1,)][0]",
    "().__class__.__base__.__subclasses__()",
    "sin.__globals__",
    "'{marker}'",
])
def test_no_expression_runs_code(tmp_path, constructor, attack):
    marker = tmp_path / "pwned"
    with pytest.raises(ValueError, match="Expected `"):
        CONSTRUCTORS[constructor](attack.format(marker=marker))
    assert not marker.exists()


@pytest.mark.parametrize("text", ["9**9**9", "10**10**10", "((9**9)**9)**9**9", "VAR**100000"])
def test_huge_powers_are_refused_at_once(text):
    start = time.perf_counter()
    with pytest.raises(ValueError, match="power|exponent"):
        parse_expression(text.replace("VAR", "x"), "f", ("x",))
    assert time.perf_counter() - start < 1.0


def test_the_offending_part_is_named():
    with pytest.raises(ValueError, match="calls system"):
        parse_expression("system(1)", "f", ("x",))
    with pytest.raises(ValueError, match="also uses y"):
        parse_expression("x + y", "f", ("x",))
    with pytest.raises(ValueError, match="write products with `\\*`"):
        parse_expression("2x", "f", ("x",))
    with pytest.raises(ValueError, match="longer than"):
        parse_expression("x+" * 2000 + "x", "f", ("x",))
    with pytest.raises(ValueError, match="Attribute"):
        parse_expression("x.real", "f", ("x",))


def test_allowed_expressions_mean_what_they_say():
    import sympy

    x, y = sympy.symbols("x y", real=True)
    expr, _ = parse_expression("0.15*sin(1.3*x)*cos(1.1*y) + 0.04*(x^2 + y**2) - e**-x / pi",
                               "f", ("x", "y"))
    expected = (0.15 * sympy.sin(1.3 * x) * sympy.cos(1.1 * y) + 0.04 * (x**2 + y**2)
                - sympy.E**(-x) / sympy.pi)
    for point in [(0.3, -0.7), (1.2, 2.5)]:
        subs = dict(zip((x, y), point))
        assert float(expr.subs(subs)) == pytest.approx(float(expected.subs(subs)), rel=1e-14)
    height = HeightField.from_function("0.1*sin(x)*cos(y)", (-1, 1), (-1, 1), samples=33)
    np.testing.assert_allclose(height.point([0.4, 0.2])[2], 0.1 * np.sin(0.4) * np.cos(0.2),
                               atol=1e-6)


@pytest.mark.parametrize(("z", "where"), [("1/u", r"u in \{0\}"), ("1/(u - 0.3)", r"u in \{0.3"),
                                          ("1/(u*u + v*v)", r"near \(u, v\)"),
                                          ("u/(u + v)", r"near \(u, v\)")])
def test_a_pole_inside_the_domain_is_refused(z, where):
    from nhphys.surfaces import ParametricSurface

    with pytest.raises(ValueError, match=r"`z` to be defined on the whole domain.*" + where):
        ParametricSurface.from_expressions("u", "v", z, u_range=(-1, 1), v_range=(-1, 1))
    # away from the pole the same expression is a surface
    ParametricSurface.from_expressions("u", "v", z, u_range=(2, 3), v_range=(2, 3))
