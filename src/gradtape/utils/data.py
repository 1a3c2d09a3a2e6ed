"""``torch.utils.data`` at PyTorch's path: the objects of :mod:`gradtape.data` (see there), so
``from gradtape.utils.data import DataLoader, TensorDataset`` is PyTorch's import renamed."""

from gradtape.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

__all__ = [
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "Subset",
    "TensorDataset",
    "default_collate",
    "random_split",
]
