from typing import Any, Literal, overload

import numpy as np

@overload
def load_digits(
    *, n_class: int = ..., return_X_y: Literal[True], as_frame: bool = ...
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]: ...
@overload
def load_digits(*, n_class: int = ..., return_X_y: Literal[False] = ..., as_frame: bool = ...) -> Any: ...
