"""``torch.autograd.functional`` at PyTorch's path: the transforms of :mod:`gradtape.functional`
(``vjp``, ``jvp``, ``hvp``, ``vhp``, ``jacobian``, ``hessian``, PyTorch's arguments), so
``from gradtape.autograd.functional import jacobian`` is PyTorch's import renamed."""

from gradtape.functional import hessian, hvp, jacobian, jvp, vhp, vjp

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]
