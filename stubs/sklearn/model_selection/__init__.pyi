from typing import Any

import numpy as np

def train_test_split(
    *arrays: Any,
    test_size: float | int | None = ...,
    train_size: float | int | None = ...,
    random_state: int | None = ...,
    shuffle: bool = ...,
    stratify: Any = ...,
) -> list[np.ndarray[Any, Any]]: ...
