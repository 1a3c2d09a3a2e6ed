"""PyTorch's ``torch.nn.utils.parametrizations``: weight and spectral normalisation as
parametrizations (:mod:`gradtape.nn.utils.parametrize`), the API PyTorch recommends over the
hook API of :func:`gradtape.nn.utils.weight_norm` / ``spectral_norm``.

- :func:`weight_norm`: ``module.parametrizations.weight.original0`` is ``g`` and ``original1``
  is ``v``; ``module.weight`` is ``g * v / ||v||`` (Salimans & Kingma 2016).
- :func:`spectral_norm`: ``module.parametrizations.weight.original`` is ``W`` and the buffers
  ``module.parametrizations.weight[0]._u`` / ``._v`` the power iteration's vectors;
  ``module.weight`` is ``W / sigma(W)`` (Miyato et al. 2018).

Both compute on every access of ``module.weight``, with gradtape ops, so gradients reach the
originals; ``state_dict`` keys are PyTorch's. :func:`~gradtape.nn.utils.parametrize.remove_parametrizations`
leaves a plain parameter.
"""

from __future__ import annotations

from typing import Any, TypeVar

from gradtape.grad_mode import no_grad
from gradtape.nn.module import Module
from gradtape.nn.utils._norm_hooks import _as_matrix, _dim_arg, _norm_except_dim, _normalize, _spectral_dim
from gradtape.nn.utils.parametrize import register_parametrization
from gradtape.tape import NONE_TAPE
from gradtape.tensor import Tensor

__all__ = ["spectral_norm", "weight_norm"]

M = TypeVar("M", bound=Module)


class _WeightNorm(Module):
    """``forward(g, v) = g * v / ||v||`` (norm over every dim but ``dim``; all for ``-1``);
    ``right_inverse(w) = (||w||, w)``."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def forward(self, weight_g: Tensor[Any, Any], weight_v: Tensor[Any, Any]) -> Tensor[Any, Any]:  # type: ignore[override]
        out: Tensor[Any, Any] = weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))
        return out

    def right_inverse(self, weight: Tensor[Any, Any]) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
        return _norm_except_dim(weight, self.dim), weight

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Weight normalisation of ``module``'s parameter ``name`` as a parametrization (PyTorch's
    ``torch.nn.utils.parametrizations.weight_norm``; Salimans & Kingma 2016)::

        weight = g * v / ||v||,   g = module.parametrizations.weight.original0,
                                  v = module.parametrizations.weight.original1

    ``g`` has ``weight``'s shape with every dim but ``dim`` of size 1 (0-d for ``dim=None``),
    ``v`` ``weight``'s shape; at first ``g = ||weight||``, ``v = weight``.

    Returns:
        ``module``.

    Raises:
        ValueError: ``module`` has no parameter ``name``.
        TypeError, IndexError: ``dim`` is not an int or None, or out of range.
    """
    w = module.__dict__.get(name) if isinstance(module, Module) else None
    if not isinstance(w, Tensor):
        raise ValueError(f"weight_norm: {type(module).__name__} has no parameter or buffer with name {name!r}")
    d = _dim_arg("weight_norm", module, name, dim, w.ndim)
    return register_parametrization(module, name, _WeightNorm(d), unsafe=True)


class _SpectralNorm(Module):
    """``forward(W) = W / sigma`` with the power iteration's ``u``, ``v`` (buffers ``_u``,
    ``_v``, updated in training mode); a 1-d ``W`` is normalised to unit length instead."""

    _u: Tensor[Any, Any]
    _v: Tensor[Any, Any]

    def __init__(self, weight: Tensor[Any, Any], n_power_iterations: int, dim: int, eps: float) -> None:
        ndim = weight.ndim
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = _as_matrix(weight.detach(), self.dim)
                h, k = mat.shape
                u = weight.device.randn((h,), weight.dtype)
                v = weight.device.randn((k,), weight.dtype)
                u.data[...] = _normalize(u.data, eps)
                v.data[...] = _normalize(v.data, eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat.data, 15)

    def _power_method(self, m: Any, n: int) -> None:
        """``n`` steps, in place into the buffers (PyTorch's order: ``u`` first)."""
        u, v = self._u.data, self._v.data
        for _ in range(n):
            u[...] = _normalize(m @ v, self.eps)
            v[...] = _normalize(m.T @ u, self.eps)

    def forward(self, weight: Tensor[Any, Any]) -> Tensor[Any, Any]:
        if weight.ndim == 1:
            n = float(((weight.data * weight.data).sum()) ** 0.5)
            out: Tensor[Any, Any] = weight / self.eps if n < self.eps else weight / (weight * weight).sum().sqrt()
            return out
        mat = _as_matrix(weight, self.dim)
        if self.training:
            self._power_method(mat.data, self.n_power_iterations)
        uc: Tensor[Any, Any] = Tensor(self._u.data.copy(), self._u.device, NONE_TAPE)
        vc: Tensor[Any, Any] = Tensor(self._v.data.copy(), self._v.device, NONE_TAPE)
        sigma = (uc * (mat @ vc)).sum()
        out = weight / sigma
        return out

    def right_inverse(self, value: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return value


def spectral_norm(
    module: M, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> M:
    """Spectral normalisation of ``module``'s parameter ``name`` as a parametrization (PyTorch's
    ``torch.nn.utils.parametrizations.spectral_norm``; Miyato et al. 2018)::

        weight = W / sigma(W),   sigma(W) = u^T W v,   W = module.parametrizations.weight.original

    ``W`` viewed as a matrix ``(W.shape[dim], -1)``; ``u``, ``v`` are the buffers
    ``module.parametrizations.weight[0]._u`` / ``._v`` (random unit vectors refined by 15 power
    iteration steps at registration). Each access of ``module.weight`` in training mode first
    runs ``n_power_iterations`` steps (``u = normalize(W v)``, ``v = normalize(W^T u)``, in
    place, no gradient). A 1-d weight is normalised to unit length.

    Returns:
        ``module``.

    Raises:
        ValueError: ``module`` has no parameter ``name``; ``n_power_iterations`` is not positive.
        TypeError, IndexError: ``dim`` is not an int or None, or out of range.
    """
    w = module.__dict__.get(name) if isinstance(module, Module) else None
    cls = type(module).__name__
    if not isinstance(w, Tensor):
        raise ValueError(f"spectral_norm: {cls} has no parameter or buffer with name {name!r}")
    d = _spectral_dim(module, name, w, n_power_iterations, dim)
    return register_parametrization(module, name, _SpectralNorm(w, n_power_iterations, d, float(eps)))
