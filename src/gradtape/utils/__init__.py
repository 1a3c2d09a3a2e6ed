"""PyTorch's ``torch.utils`` paths, so that a program ports by renaming ``torch`` to
``gradtape``: :mod:`gradtape.utils.data` (``DataLoader``, ``TensorDataset``, ...: the objects of
:mod:`gradtape.data`) and :mod:`gradtape.utils.checkpoint` (``checkpoint``,
``checkpoint_sequential``: :mod:`gradtape.checkpointing`'s)."""

from gradtape.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
