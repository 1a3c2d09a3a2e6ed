"""Probability distributions in PyTorch's spelling (``torch.distributions``): ``Categorical``,
``Bernoulli`` and ``Normal``, with ``sample``, ``log_prob``, ``entropy`` and, for ``Normal``,
the reparameterized ``rsample``.

``log_prob``, ``entropy`` and ``rsample`` are built from gradtape ops, so they are
differentiable in their parameters (and twice, for higher-order gradients): REINFORCE's
``-(dist.log_prob(action) * advantage).sum()`` and a VAE's ``Normal(mu, sigma).rsample()`` train
as in PyTorch. ``sample`` draws without gradient, from the parameters' device generator
(``Cpu(seed=...)``), so a seeded device gives reproducible draws.

Formulas (PyTorch's): Categorical normalizes its logits, ``logits - logsumexp(logits)``, and
given ``probs`` normalizes them to sum to 1 and takes ``log(clamp(probs, eps, 1 - eps))`` (``eps``
the dtype's machine epsilon) as its logits;
Bernoulli's ``log_prob(x) = x * logits + logsigmoid(-logits)`` (minus the binary cross-entropy
with logits); Normal's ``log_prob(x) = -(x - loc)**2 / (2 scale**2) - log(scale) - log(2 pi) / 2``
and ``entropy = 1/2 + log(2 pi) / 2 + log(scale)``.

``kl_divergence(p, q)`` and ``register_kl(type_p, type_q)`` are PyTorch's
(``torch.distributions.kl``): a registry of pairwise functions dispatched on the most specific
registered ``(type_p, type_q)`` (by subclass), with PyTorch's formulas for the Bernoulli,
Categorical and Normal pairs, built from ops (differentiable in both distributions' parameters);
an unregistered pair raises ``NotImplementedError``.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from gradtape import ops as _ops
from gradtape.creation import full_like as _full_like
from gradtape.devices import Device
from gradtape.devices.default import get_default_device
from gradtape.errors import DTypeError, ShapeError
from gradtape.ops.reduce import logsumexp
from gradtape.tensor import Tensor

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "kl_divergence", "register_kl"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _param(
    name: str, who: str, v: Tensor[Any, Any] | float | npt.ArrayLike, like: Tensor[Any, Any] | None
) -> Tensor[Any, Any]:
    """A distribution parameter as a float tensor (a number or array made on ``like``'s device,
    in its dtype; float32 otherwise).

    Raises:
        DTypeError: an integer or bool tensor (the message names the distribution and argument).
    """
    if isinstance(v, Tensor):
        if v.dtype.kind != "f":
            raise DTypeError(f"{who}: {name} must be a float tensor, got dtype {v.dtype} of shape {v.shape}")
        return v
    dev: Device = like.device if like is not None else get_default_device()
    dtype = like.dtype if like is not None else np.float32
    return dev.tensor(np.asarray(v, dtype=dtype))


def _sample_shape(sample_shape: Sequence[int] | int) -> tuple[int, ...]:
    return (sample_shape,) if isinstance(sample_shape, int) else tuple(int(s) for s in sample_shape)


def _rng(t: Tensor[Any, Any]) -> np.random.Generator:
    rng = getattr(t.device, "rng", None)
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng()


class Distribution:
    """The base of gradtape's distributions: ``batch_shape``, ``sample``, ``log_prob``,
    ``entropy`` (PyTorch's ``torch.distributions.Distribution``)."""

    batch_shape: tuple[int, ...] = ()

    def sample(self, sample_shape: Sequence[int] | int = ()) -> Tensor[Any, Any]:
        """A draw of shape ``sample_shape + batch_shape (+ event_shape)``, without gradient."""
        raise NotImplementedError

    def log_prob(self, value: Tensor[Any, Any] | npt.ArrayLike) -> Tensor[Any, Any]:
        """The log density or mass of ``value``, differentiable in the parameters."""
        raise NotImplementedError

    def entropy(self) -> Tensor[Any, Any]:
        """The entropy, shape ``batch_shape``, differentiable in the parameters."""
        raise NotImplementedError


class Categorical(Distribution):
    """A categorical distribution over ``K`` classes (PyTorch's ``Categorical``).

    Args:
        probs: ``(*batch, K)`` non-negative weights (normalized over the last dim), or
        logits: ``(*batch, K)`` unnormalized log-probabilities. Exactly one of the two.

    Attributes:
        logits: normalized log-probabilities ``(*batch, K)`` (a gradtape tensor, recorded;
            given ``probs``, ``log(clamp(probs, eps, 1 - eps))``).
        probs: the normalized ``probs`` given, else ``softmax(logits)``.

    Raises:
        ValueError: both or neither of ``probs`` and ``logits``; a 0-d parameter.
        DTypeError: an integer parameter.
    """

    def __init__(
        self,
        probs: Tensor[Any, Any] | npt.ArrayLike | None = None,
        logits: Tensor[Any, Any] | npt.ArrayLike | None = None,
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: either `probs` or `logits` must be specified, but not both")
        if probs is not None:
            p = _param("probs", "Categorical", probs, None)
            if p.ndim < 1:
                raise ValueError(f"Categorical: probs must have at least one dimension, got shape {p.shape}")
            p = p / p.sum(axis=-1, keepdims=True)
            eps = float(np.finfo(p.dtype).eps)
            raw = p.clamp(eps, 1.0 - eps).log()
            self.logits, self.probs = raw, p
        else:
            assert logits is not None
            raw = _param("logits", "Categorical", logits, None)
            if raw.ndim < 1:
                raise ValueError(f"Categorical: logits must have at least one dimension, got shape {raw.shape}")
            self.logits = raw - logsumexp(raw, axis=-1, keepdims=True)
            self.probs = self.logits.exp()
        self.batch_shape = tuple(raw.shape[:-1])
        self._num_events = int(raw.shape[-1])

    @property
    def param_shape(self) -> tuple[int, ...]:
        """``batch_shape + (K,)``."""
        return (*self.batch_shape, self._num_events)

    def sample(self, sample_shape: Sequence[int] | int = ()) -> Tensor[Any, Any]:
        """Class indices, int64, shape ``sample_shape + batch_shape``: inverse-CDF draws from the
        device's generator (no gradient)."""
        shape = _sample_shape(sample_shape)
        p = self.probs.numpy()
        cdf = np.cumsum(p, axis=-1)
        u = _rng(self.logits).random((*shape, *self.batch_shape))[..., None] * cdf[..., -1:]
        idx = np.minimum((u >= np.broadcast_to(cdf, (*shape, *cdf.shape))).sum(axis=-1), self._num_events - 1)
        return self.logits.device.tensor(idx.astype(np.int64))

    def log_prob(self, value: Tensor[Any, Any] | npt.ArrayLike) -> Tensor[Any, Any]:
        """``logits[..., value]``: shape ``broadcast(value.shape, batch_shape)``.

        Raises:
            DTypeError: ``value`` is not integer. ShapeError: it does not broadcast with
                ``batch_shape``. ValueError: a class outside ``[0, K)``.
        """
        v = np.asarray(value.data if isinstance(value, Tensor) else value)
        if v.dtype.kind not in "iu":
            raise DTypeError(f"Categorical.log_prob: value must be integer class indices, got dtype {v.dtype}")
        if v.size and (v.min() < 0 or v.max() >= self._num_events):
            raise ValueError(
                f"Categorical.log_prob: value must be in [0, {self._num_events}), got {v.min()}..{v.max()}"
            )
        try:
            shape = np.broadcast_shapes(v.shape, self.batch_shape)
        except ValueError:
            raise ShapeError(
                f"Categorical.log_prob: value of shape {v.shape} does not broadcast with batch_shape {self.batch_shape}"
            ) from None
        logits = self.logits
        if shape != self.batch_shape:
            logits = logits.broadcast_to((*shape, self._num_events))
        flat = logits.reshape((-1, self._num_events))
        rows = np.arange(flat.shape[0])
        return flat[rows, np.broadcast_to(v, shape).reshape(-1)].reshape(shape)

    def entropy(self) -> Tensor[Any, Any]:
        """``-sum(probs * logits)`` over the classes (a class of probability 0 adds 0)."""
        lo = float(np.finfo(self.logits.dtype).min)
        return -(self.logits.clamp(lo) * self.probs).sum(axis=-1)


class Bernoulli(Distribution):
    """A Bernoulli distribution on ``{0, 1}`` (PyTorch's ``Bernoulli``).

    Args:
        probs: the probability of 1 (a tensor, array or number in ``[0, 1]``), or
        logits: its log-odds. Exactly one of the two.

    Attributes:
        probs, logits: both, as tensors (``probs = sigmoid(logits)``; given ``probs``,
            ``logits = log(p) - log1p(-p)`` of ``p`` clamped into ``[eps, 1 - eps]``).

    Raises:
        ValueError: both or neither of ``probs`` and ``logits``. DTypeError: integer parameters.
    """

    def __init__(
        self,
        probs: Tensor[Any, Any] | npt.ArrayLike | float | None = None,
        logits: Tensor[Any, Any] | npt.ArrayLike | float | None = None,
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Bernoulli: either `probs` or `logits` must be specified, but not both")
        if probs is not None:
            self.probs = _param("probs", "Bernoulli", probs, None)
            eps = float(np.finfo(self.probs.dtype).eps)
            p = self.probs.clamp(eps, 1.0 - eps)
            self.logits = p.log() - (-p).log1p()
        else:
            assert logits is not None
            self.logits = _param("logits", "Bernoulli", logits, None)
            self.probs = self.logits.sigmoid()
        self.batch_shape = tuple(self.logits.shape)

    @property
    def mean(self) -> Tensor[Any, Any]:
        """``probs``."""
        return self.probs

    @property
    def variance(self) -> Tensor[Any, Any]:
        """``probs * (1 - probs)``."""
        return self.probs * (1.0 - self.probs)

    def sample(self, sample_shape: Sequence[int] | int = ()) -> Tensor[Any, Any]:
        """0/1 draws in the parameters' float dtype, shape ``sample_shape + batch_shape`` (no
        gradient), from the device's generator."""
        shape = (*_sample_shape(sample_shape), *self.batch_shape)
        u = _rng(self.logits).random(shape)
        return self.logits.device.tensor((u < self.probs.numpy()).astype(self.logits.dtype))

    def log_prob(self, value: Tensor[Any, Any] | npt.ArrayLike) -> Tensor[Any, Any]:
        """``value * logits + logsigmoid(-logits)`` (``-binary_cross_entropy_with_logits``),
        broadcast over ``value`` and ``batch_shape``."""
        v = value if isinstance(value, Tensor) else _param("value", "Bernoulli.log_prob", value, self.logits)
        return v * self.logits + (-self.logits).logsigmoid()

    def entropy(self) -> Tensor[Any, Any]:
        """``-(p log p + (1 - p) log(1 - p))``, as ``-(probs * logits + logsigmoid(-logits))``."""
        return -(self.probs * self.logits + (-self.logits).logsigmoid())


class Normal(Distribution):
    """A normal distribution ``N(loc, scale**2)`` (PyTorch's ``Normal``); ``loc`` and ``scale``
    broadcast together into ``batch_shape``.

    Raises:
        ValueError: a ``scale`` that is not positive (given as a number or array; a tensor is
            checked when ``validate_args``). DTypeError: integer parameters. ShapeError:
            ``loc`` and ``scale`` do not broadcast.
    """

    def __init__(
        self,
        loc: Tensor[Any, Any] | npt.ArrayLike | float,
        scale: Tensor[Any, Any] | npt.ArrayLike | float,
        validate_args: bool = True,
    ) -> None:
        like = loc if isinstance(loc, Tensor) else (scale if isinstance(scale, Tensor) else None)
        self.loc = _param("loc", "Normal", loc, like)
        self.scale = _param("scale", "Normal", scale, like)
        try:
            shape = np.broadcast_shapes(self.loc.shape, self.scale.shape)
        except ValueError:
            raise ShapeError(
                f"Normal: loc of shape {self.loc.shape} and scale of shape {self.scale.shape} do not broadcast"
            ) from None
        if validate_args and not bool(np.all(self.scale.numpy() > 0)):
            raise ValueError(f"Normal: scale must be positive, got min {self.scale.numpy().min()}")
        if self.loc.shape != shape:
            self.loc = self.loc.broadcast_to(shape)
        if self.scale.shape != shape:
            self.scale = self.scale.broadcast_to(shape)
        self.batch_shape = tuple(shape)

    @property
    def mean(self) -> Tensor[Any, Any]:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> Tensor[Any, Any]:
        """``scale``."""
        return self.scale

    @property
    def variance(self) -> Tensor[Any, Any]:
        """``scale ** 2``."""
        return self.scale * self.scale

    def sample(self, sample_shape: Sequence[int] | int = ()) -> Tensor[Any, Any]:
        """A draw of shape ``sample_shape + batch_shape``, without gradient."""
        shape = (*_sample_shape(sample_shape), *self.batch_shape)
        eps = _rng(self.loc).standard_normal(shape).astype(self.loc.dtype)
        return self.loc.device.tensor(self.loc.numpy() + self.scale.numpy() * eps)

    def rsample(self, sample_shape: Sequence[int] | int = ()) -> Tensor[Any, Any]:
        """``loc + scale * eps`` with ``eps ~ N(0, 1)``: the reparameterized draw, differentiable
        in ``loc`` and ``scale`` (Kingma and Welling 2014)."""
        shape = (*_sample_shape(sample_shape), *self.batch_shape)
        eps = self.loc.device.tensor(_rng(self.loc).standard_normal(shape).astype(self.loc.dtype))
        return self.loc + self.scale * eps

    def log_prob(self, value: Tensor[Any, Any] | npt.ArrayLike | float) -> Tensor[Any, Any]:
        """``-(value - loc)**2 / (2 scale**2) - log(scale) - log(2 pi) / 2``."""
        v = value if isinstance(value, Tensor) else _param("value", "Normal.log_prob", value, self.loc)
        z = v - self.loc
        return -(z * z) / (2.0 * self.variance) - self.scale.log() - _LOG_SQRT_2PI

    def entropy(self) -> Tensor[Any, Any]:
        """``1/2 + log(2 pi) / 2 + log(scale)``."""
        return self.scale.log() + (0.5 + _LOG_SQRT_2PI)


# ----- KL divergence (PyTorch's torch.distributions.kl) ------------------------------------

KLFn = Callable[[Any, Any], Tensor[Any, Any]]
F = TypeVar("F", bound=KLFn)

_KL_REGISTRY: dict[tuple[type[Distribution], type[Distribution]], KLFn] = {}
_KL_MEMOIZE: dict[tuple[type[Any], type[Any]], KLFn | None] = {}


def register_kl(type_p: type[Distribution], type_q: type[Distribution]) -> Callable[[F], F]:
    """Decorator registering ``fun(p, q)`` as :func:`kl_divergence` for ``p`` an instance of
    ``type_p`` and ``q`` of ``type_q`` (PyTorch's ``register_kl``)::

        @register_kl(Normal, Normal)
        def kl_normal_normal(p, q): ...

    Lookup takes the most specific registered pair by subclass; when the order by ``p``'s type
    first and by ``q``'s type first disagree, it warns (``RuntimeWarning``, "Ambiguous
    kl_divergence") and uses the former: register the more specific pair to break the tie.

    Raises:
        TypeError: ``type_p`` or ``type_q`` is not a subclass of :class:`Distribution`.
    """
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def decorator(fun: F) -> F:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # the lookup order may have changed
        return fun

    return decorator


@functools.total_ordering
class _Match:
    """A registered pair of types, ordered lexicographically by subclass (PyTorch's)."""

    __slots__ = ["types"]

    def __init__(self, *types: type[Any]) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __hash__(self) -> int:
        return hash(self.types)

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types, strict=True):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type[Any], type_q: type[Any]) -> KLFn | None:
    """The most specific registered function for ``(type_p, type_q)``, or ``None``."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return None
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    if left_fun is not _KL_REGISTRY[right_p, right_q]:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> Tensor[Any, Any]:
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, batched over the distributions' batch shapes
    (PyTorch's ``kl_divergence``), by the function :func:`register_kl` registered for the
    pair's types. Built from ops: differentiable in both distributions' parameters.

    Registered: Bernoulli-Bernoulli, Categorical-Categorical, Normal-Normal (PyTorch's
    formulas: ``inf`` where ``q`` gives probability 0 to an outcome ``p`` does not, and ``0``
    terms for the outcomes ``p`` gives probability 0, with zero gradient at those entries).

    Raises:
        NotImplementedError: no function is registered for the pair (PyTorch's message).
    """
    key = (type(p), type(q))
    try:
        fun = _KL_MEMOIZE[key]
    except KeyError:
        fun = _KL_MEMOIZE[key] = _dispatch_kl(*key)
    if fun is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type {q.__class__.__name__}"
        )
    return fun(p, q)


def _set(t: Tensor[Any, Any], mask: Tensor[Any, Any], value: float) -> Tensor[Any, Any]:
    """``t`` with ``value`` where ``mask`` (PyTorch's ``t[mask] = value``: no gradient there)."""
    out: Tensor[Any, Any] = _ops.where(mask, _full_like(t, value), t)
    return out


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor[Any, Any]:
    t1 = p.probs * (_ops.softplus(-q.logits) - _ops.softplus(-p.logits))
    t1 = _set(_set(t1, q.probs == 0, math.inf), p.probs == 0, 0.0)
    t2 = (1.0 - p.probs) * (_ops.softplus(q.logits) - _ops.softplus(p.logits))
    t2 = _set(_set(t2, q.probs == 1, math.inf), p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor[Any, Any]:
    t = p.probs * (p.logits - q.logits)
    t = _set(t, (q.probs == 0).broadcast_to(t.shape), math.inf)
    t = _set(t, (p.probs == 0).broadcast_to(t.shape), 0.0)
    return t.sum(axis=-1)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor[Any, Any]:
    ratio = p.scale / q.scale
    var_ratio = ratio * ratio
    z = (p.loc - q.loc) / q.scale
    out: Tensor[Any, Any] = 0.5 * (var_ratio + z * z - 1.0 - var_ratio.log())
    return out
