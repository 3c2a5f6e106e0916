"""Backends for the whole suite.

Every behavioural test of a system takes the ``backend`` fixture and runs twice: on the Python
twins and on the compiled kernels. A test skips one of them only with a stated reason:

* ``cython`` is skipped when any kernel module of ``nhphys._backend.KERNELS`` is missing, unless
  ``NHPHYS_STRICT_BUILD=1``, which makes a missing kernel an error before any test is collected;
* ``@pytest.mark.kernels_only(reason)`` skips ``python`` for runs too long for the twins (more
  than about 20 s there; the reason gives the figure); the twins are still checked against the
  kernels step for step, over 10^4 steps, by the ``@pytest.mark.parity`` tests;
* ``@pytest.mark.parity`` marks a test that compares the two backends itself (it needs both
  and takes no ``backend``): skipped, with the reason, when the kernels are not built.
"""

import os

import numpy as np
import pytest

from nhphys import _backend

BACKENDS = ("python", "cython")
STRICT = os.environ.get("NHPHYS_STRICT_BUILD", "") == "1"
MISSING = _backend.missing_kernels()  # the one list of kernel modules, _backend.KERNELS
KERNELS_BUILT = not MISSING
NOT_BUILT = (f"the nhphys_ext kernels are not built (missing: {', '.join(MISSING)}); "
             "NHPHYS_STRICT_BUILD=1 makes this an error")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "kernels_only(reason): run on the compiled kernels only; the reason says why "
        "the Python twins cannot (e.g. the run's length)")
    config.addinivalue_line(
        "markers", "parity: compares the compiled kernels with their Python twins")
    if STRICT and MISSING:
        raise pytest.UsageError(
            "NHPHYS_STRICT_BUILD=1 but these nhphys_ext kernels cannot be imported: "
            f"{', '.join(MISSING)}. Rebuild with `NHPHYS_STRICT_BUILD=1 pip install -e .` (its "
            "output says why a module failed to compile), or unset NHPHYS_STRICT_BUILD to run "
            "the twins only."
        )


def pytest_collection_modifyitems(config, items):
    for item in items:
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        if backend == "cython" and not KERNELS_BUILT:
            item.add_marker(pytest.mark.skip(reason=NOT_BUILT))
        marker = item.get_closest_marker("kernels_only")
        if backend == "python" and marker is not None:
            if not marker.args:
                raise pytest.UsageError(f"{item.nodeid}: kernels_only needs a reason")
            item.add_marker(pytest.mark.skip(reason=f"twins: {marker.args[0]}"))
        if item.get_closest_marker("parity") is not None and not KERNELS_BUILT:
            item.add_marker(pytest.mark.skip(reason=f"compares kernels with twins, but {NOT_BUILT}"))


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request):
    """``"python"`` (the twins) and ``"cython"`` (the kernels), each test run on both."""
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


@pytest.fixture
def doc_example(capsys):
    """``run(heading)``: runs the first python block after ``heading`` in
    docs/contact-modes.md and returns ``(lines it printed, lines the docs say it prints)``."""
    import re
    from pathlib import Path

    def run(heading):
        doc = (Path(__file__).parents[1] / "docs" / "contact-modes.md").read_text()
        part = doc[doc.index(heading):]
        code = re.search(r"```python\n(.*?)```", part, re.S).group(1)
        printed = re.search(r"prints\n\n```\n(.*?)```", part, re.S).group(1)
        exec(compile(code, "contact-modes.md", "exec"), {})
        return capsys.readouterr().out.splitlines(), printed.splitlines()
    return run


def pytest_report_header(config):
    return (f"nhphys kernels built: {KERNELS_BUILT}"
            + (f" (missing: {', '.join(MISSING)})" if MISSING else "")
            + f" (NHPHYS_STRICT_BUILD={int(STRICT)})")
