"""Parsing user expressions into smooth sympy expressions (sympy is imported lazily)."""

from __future__ import annotations

# Functions whose graphs have kinks or jumps: a surface built from them has no Weingarten map
# where they switch, so they are refused outright.
NON_SMOOTH = (
    "Abs", "sign", "Heaviside", "floor", "ceiling", "frac", "Piecewise", "Min", "Max",
    "DiracDelta", "Mod", "re", "im", "arg", "conjugate",
)


def parse_expression(text, name: str, variables: tuple):
    """A sympy expression in ``variables`` from a string, a number or a sympy expression.

    Raises
    ------
    ValueError
        Naming ``name`` when the text does not parse, uses other symbols, or uses a function
        that is not smooth (``abs``, ``sign``, ``floor``, ``Piecewise``, ``min``/``max``, ...).
    """
    import sympy
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )

    symbols = {v: sympy.Symbol(v, real=True) for v in variables}
    if isinstance(text, sympy.Basic):
        expr = text.subs({sympy.Symbol(v): symbols[v] for v in variables})
    elif isinstance(text, (int, float)) and not isinstance(text, bool):
        expr = sympy.Float(text) if isinstance(text, float) else sympy.Integer(text)
    elif isinstance(text, str):
        transformations = standard_transformations + (
            convert_xor,
            implicit_multiplication_application,
        )
        local = dict(symbols)
        local.update({"abs": sympy.Abs, "min": sympy.Min, "max": sympy.Max, "pi": sympy.pi,
                      "e": sympy.E})
        try:
            expr = parse_expr(text, local_dict=local, transformations=transformations)
        except Exception as exc:  # sympy raises SyntaxError, TokenError, TypeError, ...
            raise ValueError(
                f"Expected `{name}` to be an expression in {', '.join(variables)}, got {text!r} "
                f"which does not parse ({type(exc).__name__}: {exc})."
            ) from None
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
