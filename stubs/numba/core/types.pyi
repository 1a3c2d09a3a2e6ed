# numba's type objects that gradtape's kernels compare against (numba ships no type hints).
from typing import Any

float32: Any
float64: Any
int32: Any
int64: Any
intp: Any
voidptr: Any
