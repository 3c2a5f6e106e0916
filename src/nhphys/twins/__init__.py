"""Python twins of the Cython kernels in ``nhphys_ext``.

Each module here has the same function names, arguments and results as the kernel module of the
same name. The twins are written for clarity and are the specification; the kernels are the fast
copies, and the test-suite requires the two to agree.
"""
