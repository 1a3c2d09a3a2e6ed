"""gradtape: typed, hand-tunable reverse-mode automatic differentiation over numpy and numba.

The design follows the Rust library dfdx: a :class:`GradientTape` of backward closures,
shape-typed :class:`Tensor` ``[S, T]`` that mypy checks, and a :class:`Cpu` device whose
fused kernels are compiled with numba.
"""

# before anything imports numpy: OpenBLAS reads its spin time when numpy loads it
from gradtape import _openblas_env  # noqa: F401, I001
from gradtape import autodiff, autograd, data, distributions, functional, losses, nn, ops, optim, testing
from gradtape import context_tape  # noqa: F401  (fills GradientTape's TensorFlow methods)
from gradtape import _einops  # noqa: F401  (einops' backend for gradtape tensors)
from gradtape.checkpointing import checkpoint
from gradtape.devices import Cpu, Device
from gradtape.devices.cpu import from_dlpack
from gradtape.errors import DTypeError, GradtapeError, NumericalInstabilityError, ShapeError, TapeError
from gradtape.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from gradtape.gradients import Gradients
from gradtape.shapes import Rank0, Rank1, Rank2, Rank3, Rank4, Rank5, Rank6
from gradtape.tape import GradientTape, NoneTape, OwnedTape, Tape
from gradtape.tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "Cpu",
    "DTypeError",
    "Device",
    "GradientTape",
    "Gradients",
    "GradtapeError",
    "NoneTape",
    "NumericalInstabilityError",
    "OwnedTape",
    "Rank0",
    "Rank1",
    "Rank2",
    "Rank3",
    "Rank4",
    "Rank5",
    "Rank6",
    "ShapeError",
    "Tape",
    "TapeError",
    "Tensor",
    "__version__",
    "autograd",
    "autodiff",
    "checkpoint",
    "data",
    "distributions",
    "enable_grad",
    "from_dlpack",
    "functional",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "losses",
    "nn",
    "no_grad",
    "ops",
    "optim",
    "set_grad_enabled",
    "testing",
]
