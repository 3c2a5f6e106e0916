# The state arrays the compiled fields (rhs.pyx: SuslovField, CoordinateField; rolling.pyx:
# RollingField) take from Python: one check for all, as the twins check (nhphys/twins/dop853.py,
# check_state). The field is called once per solver stage, so a state that already is a
# C-contiguous float64 array of the right length is used in place, without a copy.

cimport numpy as cnp


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
