import os

import numpy as np
import pytest

from nhphys import _backend

# Both implementations of every kernel, where the compiled one exists.
BACKENDS = ["python"] + (["cython"] if _backend.extensions_built() else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


def pytest_report_header(config):
    built = _backend.extensions_built()
    strict = os.environ.get("NHPHYS_STRICT_BUILD", "") == "1"
    return f"nhphys kernels built: {built} (NHPHYS_STRICT_BUILD={int(strict)})"
