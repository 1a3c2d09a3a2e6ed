"""``torch.utils.checkpoint`` at PyTorch's path: :func:`gradtape.checkpointing.checkpoint` and
:func:`gradtape.checkpointing.checkpoint_sequential` (see there), so
``from gradtape.utils.checkpoint import checkpoint`` is PyTorch's import renamed."""

from gradtape.checkpointing import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]
