"""numba kernels of the Cpu device, one module per kernel family.

Each public function here is a Python wrapper that validates shapes, dtypes and
layouts and then calls a compiled kernel; a kernel never sees input it cannot handle,
so no numba typing error reaches the user.
"""
