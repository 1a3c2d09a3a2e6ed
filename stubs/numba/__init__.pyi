# PEP 561 stub for the part of numba that gradtape uses (numba ships no type hints).
from collections.abc import Callable
from typing import Any, TypeVar, overload

_F = TypeVar("_F", bound=Callable[..., Any])

@overload
def njit(fn: _F, /) -> _F: ...
@overload
def njit(
    *,
    cache: bool = ...,
    nogil: bool = ...,
    parallel: bool = ...,
    fastmath: bool | set[str] = ...,
    error_model: str = ...,
    boundscheck: bool = ...,
    inline: str = ...,
) -> Callable[[_F], _F]: ...
def prange(start: int, stop: int | None = ..., step: int = ..., /) -> range: ...
def get_num_threads() -> int: ...
def set_num_threads(n: int, /) -> None: ...

__version__: str

config: Any  # numba.core.config (gradtape sets CUDA_LOW_OCCUPANCY_WARNINGS)
def typeof(value: Any, /) -> Any: ...
def carray(ptr: Any, shape: Any, dtype: Any = ...) -> Any: ...
