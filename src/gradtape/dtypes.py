"""PyTorch's dtype names (``torch.float32``, ``torch.long``, ``torch.bool``, ...) as numpy
dtypes, so ``dtype=torch.float64`` ports to ``dtype=gradtape.float64``.

gradtape computes in float32 and float64; bool and the integer dtypes hold masks, indices and
class targets. ``float`` is float32, ``double`` float64, ``long`` int64, ``int`` int32 and
``half``/``bfloat16`` are absent, as PyTorch's meanings (a familiar name must not change its
meaning: ``gradtape.float`` is PyTorch's ``torch.float``, not Python's float64).
"""

from __future__ import annotations

import numpy as np

__all__ = ["double", "float32", "float64", "int8", "int16", "int32", "int64", "long", "short", "uint8"]

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
double = float64
int64 = np.dtype(np.int64)
long = int64
int32 = np.dtype(np.int32)
int16 = np.dtype(np.int16)
short = int16
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
# PyTorch's names that are Python builtins: defined last, kept out of __all__ so that a star
# import does not shadow the builtins.
float = float32
int = int32
bool = np.dtype(np.bool_)
