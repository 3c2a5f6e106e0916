"""Parsing user expressions into smooth sympy expressions (sympy is imported lazily).

Safety
------
A user's expression is data, never code: it is read with Python's ``ast`` parser (which only
parses) and translated node by node into sympy, so nothing in it is evaluated as Python. Only
these are accepted, anything else is a ``ValueError`` naming the offending part:

* numbers (integers and decimals), the variables of the surface, ``pi`` and ``e``;
* ``+ - * / **`` (``^`` is read as ``**``), unary ``+ -`` and parentheses;
* calls of the functions in :data:`FUNCTIONS` with positional arguments.

Limits keep the parse and its symbolic derivatives fast: at most :data:`MAX_LENGTH` characters
and :data:`MAX_NODES` syntax nodes, and an exponent applied to a number may not make it larger
than 1e300 (``9**9**9`` is refused at once rather than computed).
"""

from __future__ import annotations

import ast
import math

# Functions whose graphs have kinks or jumps: a surface built from them has no Weingarten map
# where they switch, so they are refused outright.
NON_SMOOTH = (
    "Abs", "sign", "Heaviside", "floor", "ceiling", "frac", "Piecewise", "Min", "Max",
    "DiracDelta", "Mod", "re", "im", "arg", "conjugate",
)
# name in an expression: (sympy function name, number of arguments)
FUNCTIONS = {
    "sin": ("sin", 1), "cos": ("cos", 1), "tan": ("tan", 1),
    "asin": ("asin", 1), "acos": ("acos", 1), "atan": ("atan", 1), "atan2": ("atan2", 2),
    "arcsin": ("asin", 1), "arccos": ("acos", 1), "arctan": ("atan", 1),
    "sinh": ("sinh", 1), "cosh": ("cosh", 1), "tanh": ("tanh", 1),
    "asinh": ("asinh", 1), "acosh": ("acosh", 1), "atanh": ("atanh", 1),
    "exp": ("exp", 1), "log": ("log", 1), "sqrt": ("sqrt", 1),
    # accepted by the parser so that the smoothness check can name them
    "abs": ("Abs", 1), "sign": ("sign", 1), "floor": ("floor", 1), "ceiling": ("ceiling", 1),
    "min": ("Min", 2), "max": ("Max", 2),
}
CONSTANTS = ("pi", "e")
MAX_LENGTH = 2000
MAX_NODES = 400
MAX_MAGNITUDE_LOG10 = 300.0


def _reject(name, text, what):
    return ValueError(f"Expected `{name}` to be an expression in the allowed form, got {text!r} "
                      f"which {what} (see nhphys.surfaces.symbolic).")


def _to_sympy(text: str, name: str, symbols: dict):
    """The sympy expression of ``text``, built from its syntax tree without evaluating it."""
    import sympy

    if len(text) > MAX_LENGTH:
        raise _reject(name, text[:60] + "...", f"is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ValueError(
            f"Expected `{name}` to be an expression in {', '.join(symbols)}, got {text!r} "
            f"which does not parse (SyntaxError: {exc.msg}; write products with `*`)."
        ) from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise _reject(name, text, f"has more than {MAX_NODES} terms")
    binary = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}

    def power(base, exponent):
        if isinstance(base, sympy.Number) and isinstance(exponent, sympy.Number) \
                and base != 0:
            size = abs(float(exponent)) * abs(math.log10(abs(float(base)))) \
                if abs(float(base)) != 1 else 0.0
            if not size <= MAX_MAGNITUDE_LOG10:
                raise _reject(name, text, "raises a number to a power beyond 1e300")
        elif isinstance(exponent, sympy.Number) and abs(float(exponent)) > 1000:
            raise _reject(name, text, "has an exponent larger than 1000")
        return base ** exponent

    def build(node):
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _reject(name, text, f"contains the literal {value!r}")
            if isinstance(value, int):
                if abs(value) > 10**300:
                    raise _reject(name, text, "contains a number beyond 1e300")
                return sympy.Integer(value)
            if not math.isfinite(value):
                raise _reject(name, text, "contains a number that is not finite")
            return sympy.Float(value)
        if isinstance(node, ast.Name):
            if node.id in symbols:
                return symbols[node.id]
            if node.id == "pi":
                return sympy.pi
            if node.id == "e":
                return sympy.E
            raise ValueError(
                f"Expected `{name}` to use only the variables {', '.join(symbols)}, got {text!r} "
                f"which also uses {node.id}."
            )
        if isinstance(node, ast.BinOp):
            left, right = build(node.left), build(node.right)
            if isinstance(node.op, ast.Pow):
                return power(left, right)
            if type(node.op) in binary:
                return binary[type(node.op)](left, right)
            raise _reject(name, text, f"uses the operator {type(node.op).__name__}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            operand = build(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Call):
            func = node.func.id if isinstance(node.func, ast.Name) else None
            if func not in FUNCTIONS:
                shown = func if func is not None else ast.unparse(node.func)
                raise _reject(name, text, f"calls {shown}, which is not one of "
                                          f"{', '.join(sorted(FUNCTIONS))}")
            if node.keywords or len(node.args) != FUNCTIONS[func][1]:
                raise _reject(name, text, f"calls {func} with other than "
                                          f"{FUNCTIONS[func][1]} positional argument(s)")
            return getattr(sympy, FUNCTIONS[func][0])(*[build(a) for a in node.args])
        raise _reject(name, text, f"contains {ast.unparse(node)!r} "
                                  f"({type(node).__name__})")

    return build(tree)


def parse_expression(text, name: str, variables: tuple):
    """A sympy expression in ``variables`` from a string, a number or a sympy expression.

    Raises
    ------
    ValueError
        Naming ``name`` when the text does not parse, is not of the allowed form (see the
        module docstring), uses other symbols, or uses a function that is not smooth
        (``abs``, ``sign``, ``floor``, ``min``/``max``, ...).
    """
    import sympy

    symbols = {v: sympy.Symbol(v, real=True) for v in variables}
    if isinstance(text, sympy.Basic):
        expr = text.subs({sympy.Symbol(v): symbols[v] for v in variables})
    elif isinstance(text, (int, float)) and not isinstance(text, bool):
        expr = sympy.Float(text) if isinstance(text, float) else sympy.Integer(text)
    elif isinstance(text, str):
        expr = _to_sympy(text, name, symbols)
    else:
        raise TypeError(
            f"Expected `{name}` to be a string, a number or a sympy expression, got {text!r}."
        )
    if not isinstance(expr, sympy.Expr):
        raise ValueError(f"Expected `{name}` to be a scalar expression, got {text!r}.")
    extra = sorted(str(s) for s in expr.free_symbols if str(s) not in variables)
    if extra:
        raise ValueError(
            f"Expected `{name}` to use only the variables {', '.join(variables)}, got {text!r} "
            f"which also uses {', '.join(extra)}."
        )
    bad = sorted(
        {type(f).__name__ for f in expr.atoms(sympy.Function) if type(f).__name__ in NON_SMOOTH}
        | {type(f).__name__ for f in expr.atoms(sympy.Piecewise)}
    )
    if bad:
        raise ValueError(
            f"Expected `{name}` to be a smooth expression, got {text!r} which uses "
            f"{', '.join(bad)} (not differentiable everywhere)."
        )
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise ValueError(f"Expected `{name}` to be finite, got {text!r}.")
    return expr, [symbols[v] for v in variables]
