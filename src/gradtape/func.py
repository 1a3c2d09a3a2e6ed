"""PyTorch's ``torch.func`` (functorch's transforms) on the one tape: :func:`grad`,
:func:`grad_and_value`, :func:`vjp`, :func:`jvp`, :func:`jacrev`, :func:`jacfwd`,
:func:`hessian` and :func:`functional_call`, with PyTorch's names, arguments and results, so
``from torch.func import grad, functional_call`` ports renamed.

Each transform returns a function, as PyTorch's (and JAX's ``jax.grad``) do; the transforms
compose (``grad(grad(f))``, ``jacrev(jacrev(f))``): an input that is already differentiated by
an outer transform (it requires grad) is differentiated with ``create_graph=True``, so the
result stays differentiable for the outer one, through the ops' second rules.

What differs from PyTorch: there is no forward-mode; :func:`jvp` and :func:`jacfwd` compute
the same values by reverse passes (the double-vjp construction and one reverse pass per output
element; see :mod:`gradtape.functional`). ``vmap`` is not provided.

Arguments at ``argnums`` may be tensors or (nested) tuples, lists and dicts of tensors
(PyTorch's pytrees); the gradients come back in the same structure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from gradtape import functional as _fn
from gradtape.grad_mode import is_grad_enabled
from gradtape.tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]

Func = Callable[..., Any]


# ----- pytrees of tensors --------------------------------------------------------------------


def _flatten(op: str, tree: Any, leaves: list[Tensor[Any, Any]]) -> Any:
    """``tree``'s structure with each tensor replaced by its index in ``leaves`` (appended)."""
    if isinstance(tree, Tensor):
        leaves.append(tree)
        return len(leaves) - 1
    if isinstance(tree, (tuple, list)):
        return type(tree)(_flatten(op, t, leaves) for t in tree)
    if isinstance(tree, dict):
        return {k: _flatten(op, v, leaves) for k, v in tree.items()}
    raise TypeError(
        f"{op}: expected a Tensor or a tuple, list or dict of Tensors to differentiate, got {type(tree).__name__}"
    )


def _unflatten(spec: Any, leaves: Sequence[Any]) -> Any:
    if isinstance(spec, int):
        return leaves[spec]
    if isinstance(spec, (tuple, list)):
        return type(spec)(_unflatten(s, leaves) for s in spec)
    return {k: _unflatten(v, leaves) for k, v in spec.items()}


def _argnums(op: str, argnums: int | tuple[int, ...], n: int) -> tuple[list[int], bool]:
    """The positions to differentiate, normalised (negative ones counted from the end), and
    whether ``argnums`` was one int (the result is then not a tuple)."""
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    given: list[object] = [argnums] if single else list(argnums) if isinstance(argnums, tuple) else []
    nums = [a for a in given if isinstance(a, int) and not isinstance(a, bool)]
    if not nums or len(nums) != len(given):
        raise RuntimeError(f"{op}: argnums must be int or Tuple[int, ...], got: {argnums!r}")
    out: list[int] = []
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"{op}: Got argnums={a}, but only {n} positional inputs")
        out.append(a % n)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}: argnums must be unique, got {argnums!r}")
    return out, single


class _Partial:
    """``func`` as a function of the leaves of the arguments at ``nums`` (the others fixed),
    keeping ``has_aux``'s auxiliary output aside."""

    def __init__(self, op: str, func: Func, args: tuple[Any, ...], kwargs: dict[str, Any], nums: list[int]) -> None:
        self.op, self.func, self.args, self.kwargs, self.nums = op, func, args, kwargs, nums
        self.leaves: list[Tensor[Any, Any]] = []
        self.specs = [_flatten(op, args[i], self.leaves) for i in nums]
        self.aux: Any = None
        self.several_outputs = False

    def call(self, has_aux: bool, *leaves: Any) -> Any:
        args = list(self.args)
        for i, spec in zip(self.nums, self.specs, strict=True):
            args[i] = _unflatten(spec, leaves)
        out = self.func(*args, **self.kwargs)
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise RuntimeError(
                    f"{self.op}(f)(*args): output of function f should be a tuple: (output, aux) if has_aux is True"
                )
            out, self.aux = out
        self.several_outputs = isinstance(out, (tuple, list))
        return out

    def regroup(self, flat: Sequence[Any], single: bool) -> Any:
        """Per-leaf results back into the arguments' structures (one per argnum, or the one)."""
        groups = [_unflatten(spec, flat) for spec in self.specs]
        return groups[0] if single else tuple(groups)

    def nested(self) -> bool:
        """Whether an outer transform differentiates these inputs (the result must then be
        recorded for it)."""
        return is_grad_enabled() and any(t.requires_grad for t in self.leaves)


# ----- grad ----------------------------------------------------------------------------------


def grad_and_value(func: Func, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Func:
    """``torch.func.grad_and_value``: a function returning ``(gradient, value)`` of the scalar
    ``func`` with respect to the arguments at ``argnums`` (with ``has_aux``: ``(gradient,
    (value, aux))``, ``func`` returning ``(value, aux)``).

    The gradient has the structure of the argument (a tensor, or its tuple/list/dict of
    tensors), or a tuple of them for a tuple ``argnums``; zeros for an input ``func`` does not
    use.

    Raises:
        RuntimeError (when called): ``func`` does not return a one-element tensor (PyTorch's
            message), ``argnums`` is not an int or a tuple of distinct ints within the
            arguments, ``has_aux`` and ``func`` does not return a pair.
        TypeError (when called): an argument at ``argnums`` holds something other than tensors.
    """

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums, single = _argnums("grad_and_value", argnums, len(args))
        part = _Partial("grad_and_value", func, args, kwargs, nums)

        def scalar(*leaves: Any) -> Any:
            out = part.call(has_aux, *leaves)
            if not isinstance(out, Tensor):
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out).__name__}"
                )
            if out.size != 1:
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            return out if out.shape == () else out.reshape(())

        value, gs = _fn.vjp(scalar, tuple(part.leaves), create_graph=part.nested())
        grads = part.regroup(list(gs), single)
        return (grads, (value, part.aux)) if has_aux else (grads, value)

    return wrapper


def grad(func: Func, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Func:
    """``torch.func.grad`` (JAX's ``jax.grad``): a function returning the gradient of the
    scalar ``func`` with respect to the arguments at ``argnums`` (with ``has_aux``:
    ``(gradient, aux)``). Compose it for higher derivatives: ``grad(grad(f))(x)`` is ``f''``.

    Returns and errors as :func:`grad_and_value`, without the value.
    """
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# ----- vjp / jvp -----------------------------------------------------------------------------


def vjp(func: Func, *primals: Any, has_aux: bool = False) -> Any:
    """``torch.func.vjp``: ``(func(*primals), vjp_fn)`` (with ``has_aux``: ``(output,
    vjp_fn, aux)``), where ``vjp_fn(cotangents)`` returns the vector-Jacobian products, a tuple
    with one entry per primal (each in its primal's structure). ``cotangents`` has the output's
    structure (a tensor, or a tuple of them). ``vjp_fn`` may be called many times; each call
    runs ``func`` again (the values are the same: the forward is a function of the primals).

    Raises:
        TypeError: a primal holds something other than tensors; ``cotangents`` does not match.
        ShapeError: a cotangent's shape is not its output's.
    """
    if not primals:
        raise RuntimeError("vjp(f, *primals): Expected at least one primal")
    nums = list(range(len(primals)))
    part = _Partial("vjp", func, primals, {}, nums)
    nested = part.nested()

    def of_leaves(*leaves: Any) -> Any:
        return part.call(has_aux, *leaves)

    output = of_leaves(*part.leaves)  # records only where an outer transform differentiates the primals
    aux = part.aux

    def vjp_fn(cotangents: Any) -> tuple[Any, ...]:
        _, gs = _fn.vjp(of_leaves, tuple(part.leaves), cotangents, create_graph=part.nested())
        return tuple(part.regroup(list(gs), False))

    out = output if nested else _detached(output)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _detached(out: Any) -> Any:
    if isinstance(out, Tensor):
        return out.detach()
    if isinstance(out, (tuple, list)):
        return type(out)(_detached(o) for o in out)
    return out


def jvp(func: Func, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> Any:
    """``torch.func.jvp``: ``(func(*primals), J @ tangents)`` (with ``has_aux``: ``(output,
    jvp_out, aux)``). ``primals`` and ``tangents`` are tuples of tensors of the same shapes.
    Computed by two reverse passes (the double-vjp construction), not forward mode: the same
    values.

    Raises:
        RuntimeError: ``primals`` or ``tangents`` is not a tuple, or their lengths differ;
            ``strict`` (as PyTorch's, a no-op there too for this check) is accepted.
        ShapeError: a tangent's shape is not its primal's.
    """
    del strict  # PyTorch's jvp accepts it and checks nothing with it
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python structure, got "
            f"{len(primals)} primals and {type(tangents).__name__} tangents"
        )
    part = _Partial("jvp", func, primals, {}, list(range(len(primals))))
    tleaves: list[Tensor[Any, Any]] = []
    for t in tangents:
        _flatten("jvp", t, tleaves)
    out, jv = _fn.jvp(
        lambda *leaves: part.call(has_aux, *leaves), tuple(part.leaves), tuple(tleaves), create_graph=part.nested()
    )
    return (out, jv, part.aux) if has_aux else (out, jv)


# ----- Jacobians -----------------------------------------------------------------------------


def _jacobian(op: str, func: Func, argnums: int | tuple[int, ...], has_aux: bool) -> Func:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums, single = _argnums(op, argnums, len(args))
        part = _Partial(op, func, args, kwargs, nums)
        one_leaf = single and isinstance(part.specs[0], int)  # one tensor: gradtape.functional's own shape
        inputs: Any = part.leaves[0] if one_leaf else tuple(part.leaves)
        jac = _fn.jacobian(lambda *leaves: part.call(has_aux, *leaves), inputs, create_graph=part.nested())
        if one_leaf:
            result: Any = jac
        elif part.several_outputs:
            result = tuple(part.regroup(list(j), single) for j in jac)
        else:
            result = part.regroup(list(jac), single)
        return (result, part.aux) if has_aux else result

    return wrapper


def jacrev(
    func: Func,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Func:
    """``torch.func.jacrev``: a function returning the Jacobian of ``func`` with respect to the
    arguments at ``argnums``, of shape ``output.shape + input.shape`` (tuples for several outputs
    or a tuple ``argnums``, PyTorch's nesting: outputs outside), by one reverse pass per output
    element. With ``has_aux``: ``(jacobian, aux)``. Compose it (``jacrev(jacrev(f))``) for
    second derivatives.

    Args:
        chunk_size, _preallocate_and_copy: PyTorch's memory knobs for its vmap; accepted
            (``chunk_size`` must be ``None`` or positive), the values are the same.

    Raises:
        ValueError: ``chunk_size`` not positive. RuntimeError, TypeError: as :func:`grad`.
    """
    if chunk_size is not None and (isinstance(chunk_size, bool) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    del _preallocate_and_copy
    return _jacobian("jacrev", func, argnums, has_aux)


def jacfwd(func: Func, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *, randomness: str = "error") -> Func:
    """``torch.func.jacfwd``: the Jacobian as :func:`jacrev` gives it (the same values and
    structure). PyTorch computes it in forward mode; gradtape has none and runs reverse passes.

    Args:
        randomness: PyTorch's vmap randomness mode, checked (``"error"``, ``"different"`` or
            ``"same"``); ``func``'s random ops draw as they would called directly.

    Raises:
        RuntimeError: an unknown ``randomness``; as :func:`grad`.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            f"jacfwd: Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}"
        )
    return _jacobian("jacfwd", func, argnums, has_aux)


def hessian(func: Func, argnums: int | tuple[int, ...] = 0) -> Func:
    """``torch.func.hessian``: ``jacfwd(jacrev(func, argnums), argnums)``, the Hessian of a
    scalar ``func``, of shape ``input.shape + input.shape`` (nested tuples for a tuple
    ``argnums``). Needs the second rules of the ops ``func`` uses (every built-in op has one).
    """
    return jacfwd(jacrev(func, argnums), argnums)


# ----- functional_call -----------------------------------------------------------------------


@contextmanager
def _swapped(module: Any, values: Mapping[str, Tensor[Any, Any]], tie_weights: bool, strict: bool) -> Iterator[None]:
    """``module``'s parameters and buffers named in ``values`` replaced by those tensors (and,
    with ``tie_weights``, every other name of the same tensor), put back on exit."""
    names: list[tuple[str, Tensor[Any, Any]]] = [
        *module.named_parameters(remove_duplicate=False),
        *module.named_buffers(remove_duplicate=False),
    ]
    known = {n for n, _ in names}
    missing = sorted(known - set(values))
    unexpected = sorted(set(values) - known)
    if strict and (missing or unexpected):
        parts = []
        if unexpected:
            parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
        if missing:
            parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
        raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(parts))
    if unexpected:
        raise RuntimeError(
            f"functional_call: {type(module).__name__} has no parameter or buffer named "
            + ", ".join(repr(k) for k in unexpected)
        )
    by_tensor = {id(t): values[n] for n, t in names if n in values}
    modules = dict(module.named_modules())
    swaps: list[tuple[Any, str, Any, Tensor[Any, Any]]] = []
    for name, t in names:
        new = values.get(name)
        if new is None and tie_weights:
            new = by_tensor.get(id(t))
        if new is None:
            continue
        if not isinstance(new, Tensor):
            raise TypeError(f"functional_call: the value for {name!r} is a {type(new).__name__}, not a Tensor")
        owner_name, _, attr = name.rpartition(".")
        owner = modules[owner_name]
        if attr not in vars(owner):
            raise NotImplementedError(
                f"functional_call: {name!r} is held in a container of {type(owner).__name__}, not as an attribute; "
                "only attribute parameters and buffers are replaced"
            )
        swaps.append((owner, attr, vars(owner)[attr], new))
    done: list[tuple[Any, str, Any, Tensor[Any, Any]]] = []
    try:
        for swap in swaps:
            owner, attr, _, new = swap
            object.__setattr__(owner, attr, new)  # as given: not made a parameter (Module.__setattr__ would)
            done.append(swap)
        yield
    finally:
        for owner, attr, old, _ in reversed(done):
            object.__setattr__(owner, attr, old)


def functional_call(
    module: Any,
    parameter_and_buffer_dicts: Mapping[str, Tensor[Any, Any]] | Sequence[Mapping[str, Tensor[Any, Any]]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``torch.func.functional_call``: call ``module`` with some of its parameters and buffers
    replaced by the given tensors (by ``named_parameters``/``named_buffers`` names), then put
    back: ``functional_call(model, {"0.weight": w}, (x,))``. Gradients flow to the tensors given
    (trace them, or let them require grad); the module's own tensors are untouched. The usual
    way to differentiate with respect to parameters held outside the module (meta-learning,
    ensembles, ``grad`` over a parameter dict).

    Args:
        module: a :class:`gradtape.nn.Module`.
        parameter_and_buffer_dicts: ``{name: tensor}``, or a sequence of such dicts (their keys
            must not repeat).
        args: one positional argument, or a tuple of them.
        kwargs: keyword arguments for ``module``.
        tie_weights: a tensor the module holds under several names (tied weights) is replaced
            under all of them when one is given.
        strict: every parameter and buffer must be given, and nothing else.

    Raises:
        RuntimeError: ``strict`` and keys missing or unexpected (PyTorch's message); a key
            that names nothing of the module; a sequence of dicts repeating a key.
        TypeError: a value is not a tensor.
        NotImplementedError: a name whose tensor sits in a container (a ``ParameterList``)
            rather than as a module attribute.
    """
    if isinstance(parameter_and_buffer_dicts, Mapping):
        values: dict[str, Tensor[Any, Any]] = dict(parameter_and_buffer_dicts)
    else:
        values = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in values:
                    raise ValueError(
                        f"functional_call: {k!r} appeared in multiple dictionaries; behavior of functional call is "
                        "ambiguous"
                    )
                values[k] = v
    call_args = args if isinstance(args, tuple) else () if args is None else (args,)
    with _swapped(module, values, tie_weights, strict):
        return module(*call_args, **(kwargs or {}))
