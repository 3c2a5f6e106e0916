# The state arrays the compiled fields (rhs.pyx: SuslovField, CoordinateField; rolling.pyx:
# RollingField) take from Python: one check for all, as the twins check (nhphys/twins/dop853.py,
# check_state). The field is called once per solver stage, so a state that already is a
# C-contiguous float64 array of the right length is used in place, without a copy. Also the
# step onto an energy level that the fields' projections share (twin: energy_correction).

cimport numpy as cnp
from libc.math cimport sqrt


cdef inline cnp.ndarray as_state(object y, Py_ssize_t n):
    """``y`` as a C-contiguous float64 array of length n (itself when it already is)."""
    cdef cnp.ndarray arr
    if (cnp.PyArray_Check(y) and cnp.PyArray_TYPE(<cnp.ndarray>y) == cnp.NPY_DOUBLE
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>y)):
        arr = <cnp.ndarray>y
    else:
        import numpy as np
        arr = np.ascontiguousarray(y, dtype=np.float64)
    if cnp.PyArray_NDIM(arr) != 1 or cnp.PyArray_DIM(arr, 0) != n:
        import numpy as np
        raise ValueError(f"Expected a state of shape ({n},), got {np.shape(y)}.")
    return arr


cdef inline double* writable_state(object y, Py_ssize_t n) except NULL:
    """The data of ``y``, which a field changes in place (projection, integration): a writable
    C-contiguous float64 array of length n, else ``ValueError``."""
    if not (cnp.PyArray_Check(y) and cnp.PyArray_TYPE(<cnp.ndarray>y) == cnp.NPY_DOUBLE
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>y)
            and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>y)
            and cnp.PyArray_NDIM(<cnp.ndarray>y) == 1
            and cnp.PyArray_DIM(<cnp.ndarray>y, 0) == n):
        raise ValueError(f"Expected a writable C-contiguous float64 state of shape ({n},).")
    return <double*>cnp.PyArray_DATA(<cnp.ndarray>y)


cdef inline double energy_correction(double excess, double metric_square) noexcept nogil:
    # the step mu along the energy's metric gradient that takes away `excess` (the energy less
    # its level): the root nearest 0 of a (mu + mu^2 / 2) = -excess, a = metric_square; 0 at
    # rest or where the velocities cannot reach the level (twin: nhphys.twins.rhs)
    cdef double disc
    if not metric_square > 0.0:
        return 0.0
    disc = 1.0 - 2.0 * excess / metric_square
    if disc < 0.0:
        return 0.0
    return -2.0 * excess / (metric_square * (1.0 + sqrt(disc)))
