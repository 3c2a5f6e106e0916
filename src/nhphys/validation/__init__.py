"""Independent derivations used to check nhphys (tests and benchmarks); not imported by
``import nhphys``. Each module imports its heavy dependencies (sympy, PyDy) when first used."""
