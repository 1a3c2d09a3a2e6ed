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
element; see :mod:`gradtape.functional`). :func:`vmap` runs ``func`` once per batch element
and stacks the results (PyTorch's values and gradients; a loop's speed), so it composes with
the other transforms (``vmap(grad(loss), in_dims=(None, 0, 0))``, per-sample gradients).

Arguments at ``argnums`` may be tensors or (nested) tuples, lists and dicts of tensors
(PyTorch's pytrees); the gradients come back in the same structure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from gradtape import functional as _fn
from gradtape.devices.default import get_default_device
from gradtape.grad_mode import is_grad_enabled, no_grad
from gradtape.ops.shape import cat, stack
from gradtape.tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]

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


# ----- vmap ----------------------------------------------------------------------------------

_RANDOMNESS = ("error", "different", "same")


def _fname(func: Any) -> str:
    return str(getattr(func, "__name__", repr(func)))


def _is_dim(d: object) -> bool:
    return d is None or (isinstance(d, int) and not isinstance(d, bool))


def _tree_leaves(tree: Any, path: str, leaves: list[Any], paths: list[str]) -> None:
    """Every leaf of a pytree (tuples, lists and dicts are nodes; anything else, tensors or
    not, is a leaf), depth first, with its path (``args[1]['w']``)."""
    if isinstance(tree, (tuple, list)):
        for i, t in enumerate(tree):
            _tree_leaves(t, f"{path}[{i}]", leaves, paths)
    elif isinstance(tree, dict):
        for k, v in tree.items():
            _tree_leaves(v, f"{path}[{k!r}]", leaves, paths)
    else:
        leaves.append(tree)
        paths.append(path)


def _tree_rebuild(tree: Any, leaves: Iterator[Any]) -> Any:
    """``tree``'s structure with its leaves taken in order from ``leaves``."""
    if isinstance(tree, (tuple, list)):
        items = [_tree_rebuild(t, leaves) for t in tree]
        if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple
            return type(tree)(*items)
        return type(tree)(items)
    if isinstance(tree, dict):
        return {k: _tree_rebuild(v, leaves) for k, v in tree.items()}
    return next(leaves)


def _tree_count(tree: Any) -> int:
    if isinstance(tree, (tuple, list)):
        return sum(_tree_count(t) for t in tree)
    if isinstance(tree, dict):
        return sum(_tree_count(v) for v in tree.values())
    return 1


def _broadcast_dims(dims: Any, tree: Any, out: list[Any]) -> bool:
    """``dims`` matched against ``tree`` as a prefix (PyTorch's ``in_dims``/``out_dims``): a
    leaf of ``dims`` (an int or None) stands for every leaf below its place in ``tree``. Appends
    one dim per leaf of ``tree`` to ``out``; False when the structures do not match."""
    if not isinstance(dims, (tuple, list, dict)):
        out.extend([dims] * _tree_count(tree))
        return True
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) and len(dims) == len(tree):
        return all(_broadcast_dims(d, t, out) for d, t in zip(dims, tree, strict=True))
    if isinstance(dims, dict) and isinstance(tree, dict) and dims.keys() == tree.keys():
        return all(_broadcast_dims(dims[k], v, out) for k, v in tree.items())
    return False


def _generators(tensors: Sequence[Any]) -> list[np.random.Generator]:
    """The numpy generators random ops draw from: the default device's and those of the
    tensors' devices (as ``gradtape.checkpoint`` snapshots them)."""
    gens: list[np.random.Generator] = []
    devices = [get_default_device(), *(t.device for t in tensors if isinstance(t, Tensor))]
    seen: set[int] = set()
    for dev in devices:
        gen = getattr(dev, "rng", None)
        if isinstance(gen, np.random.Generator) and id(gen) not in seen:
            seen.add(id(gen))
            gens.append(gen)
    return gens


def _states(gens: list[np.random.Generator]) -> list[Any]:
    return [g.bit_generator.state for g in gens]


def _set_states(gens: list[np.random.Generator], states: list[Any]) -> None:
    for g, st in zip(gens, states, strict=True):
        g.bit_generator.state = st


def _same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return bool(
            a.shape == b.shape
            and a.dtype == b.dtype
            and np.array_equal(
                np.asarray(a.detach().cpu().numpy()), np.asarray(b.detach().cpu().numpy()), equal_nan=True
            )
        )
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return False
    try:
        return bool(a == b)
    except Exception:  # an object whose == is not a truth value
        return False


def vmap(
    func: Func,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Func:
    """``torch.func.vmap`` (``torch.vmap``, JAX's ``jax.vmap``): ``func`` mapped over a batch
    dimension of its inputs. ``vmap(f)(x)`` is ``stack([f(x[0]), f(x[1]), ...])``: ``func`` is
    written for one example and sees the inputs without their batch dim.

    gradtape evaluates ``vmap`` as that loop: it slices each batched input along its
    ``in_dim``, calls ``func`` once per batch element and stacks the results along ``out_dims``
    with recorded ops (``unbind``, ``stack``, ``cat``). The values and gradients are PyTorch's
    (its batching rules compute the same function); the speed is a loop's, not one batched
    kernel's. Gradients flow through the result to the batched (and the unbatched) inputs on the
    tape, and ``vmap`` composes with the other transforms as PyTorch's does: per-sample gradients
    ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` (with :func:`functional_call` for a
    module's parameters), batched Jacobians ``vmap(jacrev(f))(xs)``, nested maps
    ``vmap(vmap(torch.dot))(A, B)``.

    Shapes: an input of shape ``(..., B at in_dim, ...)`` reaches ``func`` as the shape
    without that dim; each output of shape ``s`` comes back as ``s`` with ``B`` inserted at its
    ``out_dim``. An output that does not depend on the batch is repeated ``B`` times (PyTorch
    expands it).

    Args:
        func: a function of tensors (or tuples, lists and dicts of tensors) returning a tensor
            or a tuple, list or dict of tensors. Keyword arguments of the mapped function are
            passed to ``func`` unbatched.
        in_dims: the batch dim of each input: an int (every input, negative counted from the
            end), or a tuple with one entry per positional argument, each an int, ``None`` (not
            batched: passed as is to every call) or, for a tuple/list/dict argument, a matching
            structure (a prefix of it: an int or ``None`` stands for everything below it).
        out_dims: where the batch dim goes in each output: an int (every output; negative ones
            count in the result, ``-1`` is last), or a tuple/list/dict matching ``func``'s
            outputs; ``None`` returns an output that does not vary along the batch unbatched
            (and lets ``func`` return a non-tensor there).
        randomness: ``"error"`` (PyTorch's default): a draw from a gradtape device's generator
            inside ``func`` (``randn``, ``rand``, dropout in training mode, ...) raises;
            ``"different"``: each batch element draws its own numbers; ``"same"``: every element
            draws the same numbers (the generators are rewound before each call and left as
            after one). Draws from other generators (a ``numpy`` generator of one's own) are
            not seen.
        chunk_size: PyTorch's memory knob: the batch is processed ``chunk_size`` elements at a
            time (stacked per chunk, then concatenated); ``None`` is one chunk. The values are
            the same.

    Returns:
        The mapped function, taking the batched arguments.

    Raises:
        RuntimeError: ``randomness`` is not one of the three (when ``vmap`` is called); with
            ``"error"``, ``func`` drew random numbers (the generators are put back first).
        ValueError: ``chunk_size`` not positive (when ``vmap`` is called); the mapped function
            called without arguments; ``in_dims`` not an int or a tuple, or not matching the
            arguments' structure; an ``in_dim`` that is not an int or None, out of range
            (``-ndim <= in_dim < ndim``), or given for a non-tensor argument; no input
            batched; batched inputs of different sizes along their ``in_dim`` (PyTorch's message
            with the sizes, then each input's path, size and dim); ``out_dims`` not an int,
            None or a structure of them, or not matching the outputs; ``func`` returning a
            non-tensor at an int ``out_dim``, outputs of different shapes for different
            elements, or an output that varies along the batch at ``out_dim=None``.
        IndexError: an ``out_dim`` outside ``-(rank + 1) <= out_dim <= rank`` of its output.
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        name = _fname(func)
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if not args:
            raise ValueError(
                f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to "
                "vmap over a function with no inputs. The latter is unsupported."
            )
        if not (isinstance(in_dims, tuple) or (isinstance(in_dims, int) and not isinstance(in_dims, bool))):
            raise ValueError(
                f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the structure of "
                f"inputs, got: {type(in_dims)}."
            )
        leaves: list[Any] = []
        paths: list[str] = []
        _tree_leaves(args, "args", leaves, paths)
        dims: list[Any] = []
        if not _broadcast_dims(in_dims, args, dims):
            raise ValueError(
                f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims is {in_dims!r} but "
                f"the inputs are {len(args)} positional arguments of types {[type(a).__name__ for a in args]}"
            )
        batched: dict[int, int] = {}  # leaf index -> normalised in_dim
        for k, (leaf, d) in enumerate(zip(leaves, dims, strict=True)):
            if not _is_dim(d):
                raise ValueError(
                    f"{where}: Got in_dim={d} for an input but in_dim must be either an integer dimension or None."
                )
            if d is None:
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(
                    f"{where}: Got in_dim={d} for an input but the input is of type {type(leaf)}. We cannot vmap "
                    "over non-Tensor arguments, please use None as the respective in_dim"
                )
            nd = leaf.ndim
            if not -nd <= d < nd:
                raise ValueError(
                    f"{where}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality {nd} so "
                    f"expected in_dim to satisfy -{nd} <= in_dim < {nd}."
                )
            batched[k] = d % nd
        if not batched:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        sizes = [int(leaves[k].shape[d]) for k, d in batched.items()]
        if len(set(sizes)) > 1:
            detail = ", ".join(
                f"{paths[k]} has size {n} at in_dim {d}" for (k, d), n in zip(batched.items(), sizes, strict=True)
            )
            raise ValueError(
                "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                f"{sizes} for the mapped dimension ({detail})"
            )
        size = sizes[0]
        kw_leaves: list[Any] = []
        _tree_leaves(kwargs, "kwargs", kw_leaves, [])
        gens = _generators([*leaves, *kw_leaves])
        start = _states(gens)

        def call(elem_leaves: list[Any]) -> Any:
            if randomness == "same":
                _set_states(gens, start)
            out = func(*_tree_rebuild(args, iter(elem_leaves)), **kwargs)
            if randomness == "error" and _states(gens) != start:
                _set_states(gens, start)
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                    "'different' randomness flags on vmap or perform the randomness operation out of vmap"
                )
            return out

        step = size if chunk_size is None else chunk_size
        chunks: list[list[Any]] = []  # per chunk, each element's output
        for c0 in range(0, size, max(step, 1)):
            n = min(step, size - c0)
            parts = {k: (leaves[k] if n == size else leaves[k].narrow(d, c0, n)).unbind(d) for k, d in batched.items()}
            outs = []
            for j in range(n):
                elem = list(leaves)
                for k, p in parts.items():
                    elem[k] = p[j]
                outs.append(call(elem))
            chunks.append(outs)
        if size == 0:
            return _empty_batch(func, name, args, leaves, batched, kwargs, out_dims, gens, start)
        return _stack_outputs(name, [o for c in chunks for o in c], [len(c) for c in chunks], out_dims)

    return wrapper


def _out_dims_of(name: str, out_dims: Any, output: Any) -> list[Any]:
    """One out_dim per leaf of ``output`` (PyTorch's prefix matching; a single output also takes
    a one-element tuple)."""

    def valid(d: Any) -> bool:
        if isinstance(d, (tuple, list)):
            return all(valid(x) for x in d)
        if isinstance(d, dict):
            return all(valid(x) for x in d.values())
        return _is_dim(d)

    if not valid(out_dims):
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python collection of ints "
            "representing where in the outputs the vmapped dimension should appear."
        )
    if not isinstance(output, (tuple, list, dict)) and isinstance(out_dims, (tuple, list)) and len(out_dims) == 1:
        out_dims = out_dims[0]
    dims: list[Any] = []
    if not _broadcast_dims(out_dims, output, dims):
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure of "
            f"`outputs`. out_dims is {out_dims!r} but the output is a {type(output).__name__}"
            + (f" of {len(output)}" if isinstance(output, (tuple, list, dict)) else "")
        )
    return dims


def _stack_outputs(name: str, outputs: list[Any], chunk_lengths: list[int], out_dims: Any) -> Any:
    """The per-element outputs of ``func`` stacked along their out_dims (per chunk, then
    concatenated), in the first output's structure."""
    first = outputs[0]
    dims = _out_dims_of(name, out_dims, first)
    per_elem: list[list[Any]] = []
    for i, out in enumerate(outputs):
        flat: list[Any] = []
        _tree_leaves(out, "", flat, [])
        if len(flat) != len(dims) or _tree_count(out) != _tree_count(first) or type(out) is not type(first):
            raise ValueError(
                f"vmap({name}, ...): `{name}` returned outputs of different structures for batch elements 0 and {i}"
            )
        per_elem.append(flat)
    results: list[Any] = []
    for k, d in enumerate(dims):
        column = [flat[k] for flat in per_elem]
        if d is None:
            if any(c is not column[0] and isinstance(c, Tensor) and c.requires_grad for c in column):
                # equal values prove nothing about a gradient: returning element 0's output
                # would send its gradient to element 0 alone (torch raises here: it is batched)
                raise ValueError(
                    f"vmap({name}, ...): `{name}` returned a new tensor that requires grad for an output whose "
                    "out_dim is None; vmap runs it once per batch element and cannot tell that it does not depend "
                    "on the batch (its gradient would reach element 0 only): give it an out_dim, or compute it "
                    "outside the vmapped function"
                )
            if not all(_same_value(column[0], c) for c in column[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            results.append(column[0])
            continue
        bad = next((c for c in column if not isinstance(c, Tensor)), None)
        if bad is not None or not column:
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(bad)}. Did you mean to set "
                "out_dims= to None for output?"
            )
        shape = column[0].shape
        for i, c in enumerate(column):
            if c.shape != shape:
                raise ValueError(
                    f"vmap({name}, ...): `{name}` returned an output of shape {tuple(shape)} for batch element 0 but "
                    f"{tuple(c.shape)} for element {i}; vmap needs the same shapes for every element"
                )
        r = len(shape)
        if not -(r + 1) <= d <= r:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-(r + 1)}, {r}], but got {d})")
        stacked: list[Tensor[Any, Any]] = []
        at = 0
        for n in chunk_lengths:
            stacked.append(stack(column[at : at + n], dim=d))
            at += n
        results.append(stacked[0] if len(stacked) == 1 else cat(stacked, dim=d))
    return _tree_rebuild(first, iter(results))


def _empty_batch(
    func: Func,
    name: str,
    args: tuple[Any, ...],
    leaves: list[Any],
    batched: dict[int, int],
    kwargs: dict[str, Any],
    out_dims: Any,
    gens: list[np.random.Generator],
    start: list[Any],
) -> Any:
    """A batch of size 0: ``func`` runs once, untraced, on zeros of an element's shapes (the
    generators put back after) to learn the outputs' shapes and dtypes; each output is an empty
    tensor with 0 at its out_dim, recorded from the batched inputs where they share its dtype, so
    their gradients are (empty) zeros, as PyTorch's."""
    elem = list(leaves)
    for k, d in batched.items():
        t = leaves[k]
        elem[k] = t.new_zeros(tuple(s for i, s in enumerate(t.shape) if i != d))
    with no_grad():
        out = func(*_tree_rebuild(args, iter(elem)), **kwargs)
    _set_states(gens, start)
    dims = _out_dims_of(name, out_dims, out)
    flat: list[Any] = []
    _tree_leaves(out, "", flat, [])
    results: list[Any] = []
    for o, d in zip(flat, dims, strict=True):
        if d is None:
            results.append(o)
            continue
        if not isinstance(o, Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. Did you mean to set "
                "out_dims= to None for output?"
            )
        r = o.ndim
        if not -(r + 1) <= d <= r:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-(r + 1)}, {r}], but got {d})")
        shape = list(o.shape)
        shape.insert(d % (r + 1), 0)
        res: Tensor[Any, Any] = o.new_zeros(tuple(shape))
        for k, bd in batched.items():
            t = leaves[k]
            if t.dtype == res.dtype and np.issubdtype(np.dtype(t.dtype), np.floating):
                res = res + t.narrow(bd, 0, 0).sum()  # an empty sum: 0, recorded from the input
        results.append(res)
    return _tree_rebuild(out, iter(results))
