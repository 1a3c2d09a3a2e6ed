"""Module containers, written the way a PyTorch user writes them: a dict (or list, or nesting
of both) of layers held as an attribute, ``nn.ModuleList`` / ``nn.ModuleDict``, the state a
container would hide (refused with ``TypeError``), and ``Module.zero_grad``.

Where numbers are involved the model is compared with the same structure built in
``torch.nn`` (``ModuleDict`` / ``ModuleList``) in float64 from identical weights: the
parameter names must be PyTorch's (``heads.cls.weight``, ``layers.0.bias``) and a few SGD
steps must leave identical weights.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Tensor, nn
from gradtape.losses import mse_loss

Array = np.ndarray[Any, Any]
F64 = np.float64


@pytest.fixture
def dev() -> Cpu:
    return Cpu(seed=0)


def _names(m: nn.Module) -> list[str]:
    return [n for n, _ in m.named_parameters()]


def _copy_into_torch(ours: nn.Module, ref: Any) -> None:
    """Give the torch module ``ref`` (float64) ``ours``' parameter values, checking the names match."""
    torch = pytest.importorskip("torch")
    assert _names(ours) == [n for n, _ in ref.named_parameters()], "gradtape and torch name the parameters alike"
    with torch.no_grad():
        for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
            assert p.shape == tuple(q.shape), name
            q.copy_(torch.from_numpy(np.array(p.data, dtype=F64)))


# ----- a model holding a dict of layers trains --------------------------------------------------


class _TwoHeads(nn.Module):
    """A trunk and two heads held in a plain ``dict`` (or an ``nn.ModuleDict``)."""

    def __init__(self, dev: Cpu, module_dict: bool) -> None:
        self.trunk = nn.Linear(4, 8, dev=dev, dtype=F64)
        heads: dict[str, nn.Module] = {
            "cls": nn.Linear(8, 3, dev=dev, dtype=F64),
            "reg": nn.Linear(8, 1, dev=dev, dtype=F64),
        }
        self.heads: dict[str, nn.Module] | nn.ModuleDict = nn.ModuleDict(heads) if module_dict else heads

    def forward(self, x: Any) -> tuple[Any, Any]:
        h = self.trunk(x).relu()
        return self.heads["cls"](h), self.heads["reg"](h)


def _torch_two_heads() -> Any:
    torch: Any = pytest.importorskip("torch")

    class TwoHeads(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.trunk = torch.nn.Linear(4, 8)
            self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(8, 3), "reg": torch.nn.Linear(8, 1)})

        def forward(self, x: Any) -> tuple[Any, Any]:
            h = self.trunk(x).relu()
            return self.heads["cls"](h), self.heads["reg"](h)

    return TwoHeads().double()


@pytest.mark.parametrize("module_dict", [False, True], ids=["dict", "ModuleDict"])
def test_dict_of_layers_trains_like_torch(dev: Cpu, module_dict: bool) -> None:
    torch = pytest.importorskip("torch")
    model = _TwoHeads(dev, module_dict)
    names = ["trunk.weight", "trunk.bias", "heads.cls.weight", "heads.cls.bias", "heads.reg.weight", "heads.reg.bias"]
    assert _names(model) == names
    params = model.parameters()
    assert [id(p) for p in params] == [id(p) for _, p in model.named_parameters()]
    for head in model.heads.values():  # every head parameter is discovered
        assert all(any(p is q for q in params) for _, p in head.named_parameters())
    ref = _torch_two_heads()
    _copy_into_torch(model, ref)
    before = {n: np.array(p.data) for n, p in model.named_parameters()}

    rng = np.random.default_rng(1)
    lr = 0.1
    opt = torch.optim.SGD(ref.parameters(), lr=lr)
    grads = model.alloc_grads()
    for _ in range(3):
        x, y_cls, y_reg = rng.standard_normal((5, 4)), rng.standard_normal((5, 3)), rng.standard_normal((5, 1))
        cls, reg = model(dev.tensor(x, F64).trace(grads))
        loss = mse_loss(cls, dev.tensor(y_cls, F64)) + mse_loss(reg, dev.tensor(y_reg, F64))
        grads = loss.backward()
        for p in model.parameters():
            p.data -= lr * grads.get(p).data
        model.zero_grads(grads)

        opt.zero_grad()
        tc, tr = ref(torch.from_numpy(x))
        tl = torch.nn.functional.mse_loss(tc, torch.from_numpy(y_cls)) + torch.nn.functional.mse_loss(
            tr, torch.from_numpy(y_reg)
        )
        tl.backward()
        opt.step()
        np.testing.assert_allclose(float(loss.data), tl.item(), rtol=1e-12)

    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
        assert not np.array_equal(p.data, before[name]), f"{name} did not train"
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


def test_state_dict_keys_are_torchs(dev: Cpu, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    model = _TwoHeads(dev, module_dict=False)
    ref = _torch_two_heads()
    assert list(nn.state_dict(model)) == list(ref.state_dict())
    nn.save(model, tmp_path / "m.safetensors")
    ref.load_state_dict(load_file(str(tmp_path / "m.safetensors")))  # strict: every key matches
    x = np.random.default_rng(2).standard_normal((3, 4))
    for ours, theirs in zip(model(dev.tensor(x, F64)), ref(torch.from_numpy(x)), strict=True):
        np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-12)


# ----- nested containers ------------------------------------------------------------------------


class _Nested(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.stages = {
            "enc": [nn.Linear(4, 4, dev=dev, dtype=F64), nn.ReLU(), nn.Linear(4, 4, dev=dev, dtype=F64)],
            "dec": (nn.Linear(4, 2, dev=dev, dtype=F64),),
        }
        self.towers: list[dict[str, nn.Module]] = [
            {"a": nn.Linear(2, 2, dev=dev, dtype=F64)},
            {"b": nn.BatchNorm1d(2, dtype=F64)},
        ]
        self.sizes = [4, 4, 2]  # plain data in a list: skipped
        self.config = {"act": "relu", 1: None}  # non-str keys without modules: fine
        self.head = nn.Linear(2, 1, dev=dev, dtype=F64)


def test_nested_containers_named_as_torch(dev: Cpu) -> None:
    torch: Any = pytest.importorskip("torch")
    tnn: Any = torch.nn
    ours = _Nested(dev)

    class Nested(tnn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.stages = tnn.ModuleDict(
                {
                    "enc": tnn.ModuleList([tnn.Linear(4, 4), tnn.ReLU(), tnn.Linear(4, 4)]),
                    "dec": tnn.ModuleList([tnn.Linear(4, 2)]),
                }
            )
            self.towers = tnn.ModuleList(
                [tnn.ModuleDict({"a": tnn.Linear(2, 2)}), tnn.ModuleDict({"b": tnn.BatchNorm1d(2)})]
            )
            self.head = tnn.Linear(2, 1)

    ref = Nested().double()
    _copy_into_torch(ours, ref)  # asserts the names are equal
    assert [n for n, _ in ours.named_buffers()] == [
        "towers.1.b.running_mean",
        "towers.1.b.running_var",
        "towers.1.b.num_batches_tracked",
    ]
    assert {n for n, _ in ours.named_buffers()} <= {n for n, _ in ref.named_buffers()}
    assert [id(p) for p in ours.parameters()] == [id(p) for _, p in ours.named_parameters()]
    assert [n for n, _ in ours.named_children()] == [
        "stages.enc.0",
        "stages.enc.1",
        "stages.enc.2",
        "stages.dec.0",
        "towers.0.a",
        "towers.1.b",
        "head",
    ]
    assert [id(m) for m in ours.children()] == [id(m) for _, m in ours.named_children()]
    assert len(list(ours.modules())) == 1 + 7
    # the torch structure has the same leaves (its containers are modules of their own)
    assert [type(m).__name__ for m in ours.modules()][1:] == [
        type(m).__name__ for m in ref.modules() if not isinstance(m, (tnn.ModuleList, tnn.ModuleDict, Nested))
    ]


def test_train_eval_and_repr_reach_modules_in_containers(dev: Cpu) -> None:
    net = _Nested(dev)
    norm = net.towers[1]["b"]
    assert norm.training
    net.eval()
    assert not norm.training and not net.stages["enc"][1].training
    net.train()
    assert norm.training
    assert "(stages.enc.0): Linear(" in repr(net) and "(towers.1.b): BatchNorm1d(" in repr(net)


def test_mixed_list_parameters_equal_named_parameters(dev: Cpu) -> None:
    """A list with modules among other values (``None``, numbers) goes through the checked path
    of ``parameters()``; both paths give the same tensors in the same order."""

    class Mixed(nn.Module):
        def __init__(self) -> None:
            self.layers = [nn.Linear(2, 2, dev=dev), None, 3, [nn.Linear(2, 2, dev=dev)], "x"]
            self.heads = {"b": nn.Linear(2, 1, dev=dev), "a": nn.Linear(2, 1, dev=dev)}  # insertion order kept

    m = Mixed()
    assert _names(m) == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.3.0.weight",
        "layers.3.0.bias",
        "heads.b.weight",
        "heads.b.bias",
        "heads.a.weight",
        "heads.a.bias",
    ]
    assert [id(p) for p in m.parameters()] == [id(p) for _, p in m.named_parameters()]

    class Flat(nn.Module):  # flat containers with plain values: the unnamed path of parameters()
        def __init__(self) -> None:
            self.layers = [nn.Linear(2, 2, dev=dev), None, 3, nn.Linear(2, 2, dev=dev)]
            self.heads = {"n": 1, "a": nn.Linear(2, 1, dev=dev), "s": "x"}
            self.kernel = (3, 3)

    f = Flat()
    assert _names(f) == [f"{a}.{w}" for a in ("layers.0", "layers.3", "heads.a") for w in ("weight", "bias")]
    assert [id(p) for p in f.parameters()] == [id(p) for _, p in f.named_parameters()]


def test_shared_layer_in_two_containers_counted_once(dev: Cpu) -> None:
    shared = nn.Linear(3, 3, dev=dev)

    class Tied(nn.Module):
        def __init__(self) -> None:
            self.a = [shared]
            self.b = {"s": shared}

    m = Tied()
    assert _names(m) == ["a.0.weight", "a.0.bias"]  # as torch: the first name wins
    assert len(m.parameters()) == 2


def test_list_appended_after_assignment_is_discovered(dev: Cpu) -> None:
    class Grow(nn.Module):
        def __init__(self) -> None:
            self.blocks: list[nn.Module] = []
            self.heads: dict[str, nn.Module] = {}

    m = Grow()
    assert m.parameters() == []
    m.blocks.append(nn.Linear(2, 2, dev=dev))
    m.heads["out"] = nn.Linear(2, 1, dev=dev)
    assert _names(m) == ["blocks.0.weight", "blocks.0.bias", "heads.out.weight", "heads.out.bias"]
    assert len(m.parameters()) == 4


# ----- ModuleList -------------------------------------------------------------------------------


def test_module_list_api(dev: Cpu) -> None:
    a, b, c, d = (nn.Linear(2, 2, dev=dev) for _ in range(4))
    ml = nn.ModuleList([a, b])
    assert len(ml) == 2 and list(ml) == [a, b]
    assert ml[0] is a and ml[-1] is b
    assert ml.append(c) is ml and ml[2] is c
    assert ml.extend([d]) is ml and len(ml) == 4
    assert _names(ml) == [f"{i}.{w}" for i in range(4) for w in ("weight", "bias")]

    part = ml[1:3]
    assert isinstance(part, nn.ModuleList) and list(part) == [b, c]
    assert part[0] is b  # the same module objects, renumbered
    assert [n for n, _ in part.named_children()] == ["0", "1"]

    relu = nn.ReLU()
    ml[1] = relu
    assert ml[1] is relu and b not in list(ml)
    del ml[1]
    assert list(ml) == [a, c, d]
    ml.insert(1, b)
    assert list(ml) == [a, b, c, d]
    ml.insert(-1, relu)  # list.insert semantics
    assert list(ml) == [a, b, c, relu, d]
    del ml[2:4]
    assert list(ml) == [a, b, d]
    assert _names(ml) == [f"{i}.{w}" for i in range(3) for w in ("weight", "bias")]  # renumbered
    assert ml.pop(1) is b and list(ml) == [a, d]
    assert ml.pop() is d and list(ml) == [a]
    ml += [b, c]
    assert list(ml) == [a, b, c]
    both = ml + nn.ModuleList([d])
    assert list(both) == [a, b, c, d] and list(ml) == [a, b, c]
    assert len(nn.ModuleList()) == 0


def test_module_list_errors(dev: Cpu) -> None:
    ml = nn.ModuleList([nn.ReLU()])
    with pytest.raises(IndexError, match="out of range"):
        ml[1]
    with pytest.raises(IndexError, match="out of range"):
        ml[-2] = nn.ReLU()
    with pytest.raises(IndexError, match="out of range"):
        del ml[3]
    with pytest.raises(TypeError, match="ModuleList: item 0 is a int, not a Module"):
        ml[0] = 3  # type: ignore[assignment]
    with pytest.raises(TypeError):
        ml[0:1] = nn.ReLU()  # type: ignore[index]  # as torch: an integer index only
    with pytest.raises(TypeError, match="Tensor, not a Module"):
        ml.append(dev.ones((2,)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 1 is a str"):
        ml.extend([nn.ReLU(), "relu"])  # type: ignore[list-item]
    assert len(ml) == 1  # nothing added by the failed extend
    with pytest.raises(TypeError, match="iterable"):
        ml.extend(nn.ReLU())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 0 is a NoneType"):
        nn.ModuleList([None])  # type: ignore[list-item]
    with pytest.raises(NotImplementedError):
        ml(dev.ones((2,)))  # no forward, as in torch


def test_module_list_matches_torch_names_after_edits(dev: Cpu) -> None:
    torch = pytest.importorskip("torch")
    ours = nn.ModuleList([nn.Linear(2, 2, dev=dev) for _ in range(3)])
    ref = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])
    for ml, mk in ((ours, lambda: nn.Linear(2, 3, dev=dev)), (ref, lambda: torch.nn.Linear(2, 3))):
        ml.insert(1, mk())
        del ml[0]
        ml.append(mk())
        ml[0] = mk()
        ml.extend([mk()])
        del ml[1:2]
    assert _names(ours) == [n for n, _ in ref.named_parameters()]
    assert [p.shape for p in ours.parameters()] == [tuple(q.shape) for q in ref.parameters()]


# ----- ModuleDict -------------------------------------------------------------------------------


def test_module_dict_api(dev: Cpu) -> None:
    a, b, c = nn.Linear(2, 2, dev=dev), nn.Linear(2, 3, dev=dev), nn.ReLU()
    md = nn.ModuleDict({"a": a, "b": b})
    assert len(md) == 2 and list(md) == ["a", "b"]
    assert md["a"] is a and "b" in md and "c" not in md and 3 not in md
    md["c"] = c
    assert list(md.keys()) == ["a", "b", "c"]
    assert list(md.values()) == [a, b, c]
    assert list(md.items()) == [("a", a), ("b", b), ("c", c)]
    assert _names(md) == ["a.weight", "a.bias", "b.weight", "b.bias"]

    a2 = nn.Linear(2, 2, dev=dev)
    md["a"] = a2  # replacing keeps the place
    assert list(md.items()) == [("a", a2), ("b", b), ("c", c)]
    del md["b"]
    assert list(md) == ["a", "c"]
    assert md.pop("c") is c and list(md) == ["a"]

    md.update({"z": b, "y": c})  # a dict: in its order
    md.update([("x", a)])  # pairs
    md.update(nn.ModuleDict({"w": a2}))  # another ModuleDict
    assert list(md) == ["a", "z", "y", "x", "w"]
    assert nn.ModuleDict([("p", a), ("q", b)]).keys() == {"p", "q"}
    md.clear()
    assert len(md) == 0 and md.parameters() == []


def test_module_dict_errors() -> None:
    md = nn.ModuleDict()
    with pytest.raises(TypeError, match="should be a string, got int"):
        md[0] = nn.ReLU()  # type: ignore[index]
    with pytest.raises(KeyError, match="contain"):
        md["a.b"] = nn.ReLU()
    with pytest.raises(KeyError, match="empty"):
        md[""] = nn.ReLU()
    with pytest.raises(TypeError, match="not a Module"):
        md["a"] = "relu"  # type: ignore[assignment]
    with pytest.raises(KeyError):
        md["missing"]
    with pytest.raises(KeyError):
        del md["missing"]
    with pytest.raises(ValueError, match="element #0 has length 3"):
        md.update([("a", nn.ReLU(), 1)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="element #0 should be Iterable"):
        md.update([3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        md.update(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a Module"):
        md.update({"ok": nn.ReLU(), "bad": 1})  # type: ignore[arg-type]
    assert len(md) == 0  # nothing stored by a failed update


def test_module_dict_and_list_in_a_model_match_torch(dev: Cpu) -> None:
    torch: Any = pytest.importorskip("torch")

    class Net(nn.Module):
        def __init__(self) -> None:
            self.layers = nn.ModuleList([nn.Linear(3, 3, dev=dev, dtype=F64) for _ in range(2)])
            self.heads = nn.ModuleDict({"cls": nn.Linear(3, 2, dev=dev, dtype=F64)})
            self.scale = dev.ones((2,), F64)

        def forward(self, x: Any) -> Any:
            for layer in self.layers:
                x = layer(x).tanh()
            return self.heads["cls"](x) * self.scale

    class TNet(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)])
            self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(3, 2)})
            self.scale = torch.nn.Parameter(torch.ones(2))

        def forward(self, x: Any) -> Any:
            for layer in self.layers:
                x = layer(x).tanh()
            return self.heads["cls"](x) * self.scale

    ours, ref = Net(), TNet().double()
    # torch lists a module's own parameters first, then its children's: same order here
    assert _names(ours) == [
        "scale",
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
        "heads.cls.weight",
        "heads.cls.bias",
    ]
    assert sorted(_names(ours)) == sorted(n for n, _ in ref.named_parameters())
    with torch.no_grad():
        for name, q in ref.named_parameters():
            q.copy_(torch.from_numpy(np.array(dict(ours.named_parameters())[name].data)))
    x = np.random.default_rng(3).standard_normal((4, 3))
    grads = ours.alloc_grads()
    out = ours(dev.tensor(x, F64).trace(grads))
    grads = out.sum().backward()
    tout = ref(torch.from_numpy(x))
    tout.sum().backward()
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12)
    for name, q in ref.named_parameters():
        p = dict(ours.named_parameters())[name]
        np.testing.assert_allclose(grads.get(p).data, q.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


# ----- refusals ---------------------------------------------------------------------------------


class _Holder(nn.Module):
    """An empty module to assign attributes on."""


def test_set_of_modules_refused_at_assignment(dev: Cpu) -> None:
    m = _Holder()
    with pytest.raises(TypeError, match=r"_Holder\.heads: heads is a set holding a Linear.*ModuleList"):
        m.heads = {nn.Linear(2, 2, dev=dev)}
    assert not hasattr(m, "heads")  # not assigned
    with pytest.raises(TypeError, match=r"_Holder\.heads: heads\['a'\] is a frozenset holding a Linear"):
        m.heads = {"a": frozenset({nn.Linear(2, 2, dev=dev)})}
    with pytest.raises(TypeError, match="set holding a Tensor"):
        m.weights = {dev.ones((2,))}
    m.tags = {"a", "b"}  # a set of plain values is fine
    m._private = {nn.Linear(2, 2, dev=dev)}  # private attributes are not looked at
    assert m.parameters() == []


def test_tensor_in_container_refused_at_assignment(dev: Cpu) -> None:
    m = _Holder()
    with pytest.raises(TypeError, match=r"_Holder\.weights: weights\[1\] is a Tensor \(shape \(2,\)\) inside a list"):
        m.weights = [nn.Linear(2, 2, dev=dev), dev.ones((2,))]
    assert not hasattr(m, "weights")
    with pytest.raises(TypeError, match=r"_Holder\.p: p\['w'\]\[0\] is a Tensor .* inside a tuple"):
        m.p = {"w": (dev.ones((3,)),)}
    with pytest.raises(TypeError, match="as its own attribute"):
        m.weights = (dev.ones((2,)),)
    m._cache = [dev.ones((2,))]  # private: fine (not state to train)
    assert m.parameters() == []


def test_module_under_non_str_or_dotted_key_refused(dev: Cpu) -> None:
    m = _Holder()
    with pytest.raises(TypeError, match=r"_Holder\.heads: heads has the key 0 \(int\) holding a Linear.*'0'"):
        m.heads = {0: nn.Linear(2, 2, dev=dev)}
    with pytest.raises(TypeError, match=r"heads has the key 1 \(int\) holding a Linear"):
        m.heads = {1: [nn.Linear(2, 2, dev=dev)]}  # a nested module counts too
    with pytest.raises(ValueError, match=r"heads has the key 'a\.b' holding a Linear"):
        m.heads = {"a.b": nn.Linear(2, 2, dev=dev)}
    with pytest.raises(ValueError, match="key ''"):
        m.heads = {"": nn.Linear(2, 2, dev=dev)}


def test_state_hidden_after_assignment_refused_at_discovery(dev: Cpu) -> None:
    """A list or set mutated after it was assigned is checked again by every discovery."""

    class Net(nn.Module):
        def __init__(self) -> None:
            self.blocks: list[Any] = [nn.Linear(2, 2, dev=dev)]
            self.extra: set[Any] = set()

    net = Net()
    assert len(net.parameters()) == 2
    net.blocks.append(dev.ones((2,)))
    for discover in (
        net.parameters,
        lambda: list(net.named_parameters()),
        lambda: list(net.named_children()),
        lambda: list(net.modules()),
        lambda: list(net.named_buffers()),
        net.alloc_grads,
    ):
        with pytest.raises(TypeError, match=r"Net\.blocks: blocks\[1\] is a Tensor"):
            discover()
    net.blocks.pop()
    net.extra.add(nn.Linear(2, 2, dev=dev))
    with pytest.raises(TypeError, match=r"Net\.extra: extra is a set holding a Linear"):
        net.parameters()
    with pytest.raises(TypeError, match=r"Net\.extra"):
        list(net.named_parameters())
    net.extra.clear()
    heads: dict[Any, Any] = {}
    net.heads = heads
    heads[3] = nn.Linear(2, 2, dev=dev)
    with pytest.raises(TypeError, match=r"Net\.heads: heads has the key 3 \(int\)"):
        net.parameters()


# ----- zero_grad --------------------------------------------------------------------------------


def _with_grads(dev: Cpu) -> tuple[_TwoHeads, list[Tensor[Any, Any]]]:
    model = _TwoHeads(dev, module_dict=False)
    params = model.parameters()
    for i, p in enumerate(params):
        if i != 1:  # trunk.bias keeps no gradient
            p.grad = np.full(p.shape, float(i + 1))
    return model, params


def test_zero_grad_sets_to_none(dev: Cpu) -> None:
    model, params = _with_grads(dev)
    assert sum(p.grad is not None for p in params) == len(params) - 1
    model.zero_grad()
    assert all(p.grad is None for p in params)  # the heads in the dict too


def test_zero_grad_in_place(dev: Cpu) -> None:
    model, params = _with_grads(dev)
    before = [p.grad for p in params]
    arrays = [g.data if g is not None else None for g in before]
    model.zero_grad(set_to_none=False)
    for p, g, a in zip(params, before, arrays, strict=True):
        if g is None:
            assert p.grad is None  # a missing gradient stays missing (torch)
        else:
            assert p.grad is g and p.grad.data is a  # the same tensor and array, zeroed in place
            np.testing.assert_array_equal(p.grad.data, 0)


def test_zero_grad_read_only_grad_refused_before_any_is_zeroed(dev: Cpu) -> None:
    model, params = _with_grads(dev)
    last = params[-1].grad
    assert last is not None
    last.data.flags.writeable = False
    with pytest.raises(ValueError, match=r"_TwoHeads\.zero_grad: the \.grad of 'heads\.reg\.bias' .* read-only"):
        model.zero_grad(set_to_none=False)
    first = params[0].grad
    assert first is not None and np.all(first.data == 1)  # nothing zeroed
    model.zero_grad()  # set_to_none works
    assert all(p.grad is None for p in params)


def test_zero_grad_matches_torch(dev: Cpu) -> None:
    torch = pytest.importorskip("torch")
    ref = _torch_two_heads()
    for p in ref.parameters():
        p.grad = torch.ones_like(p)
    ref.trunk.bias.grad = None
    ref.zero_grad(set_to_none=False)
    model, params = _with_grads(dev)
    model.zero_grad(set_to_none=False)
    assert [None if p.grad is None else np.asarray(p.grad.data).tolist() for p in params] == [
        None if q.grad is None else q.grad.numpy().tolist() for q in ref.parameters()
    ]
    ref.zero_grad()
    model.zero_grad()
    assert [p.grad for p in params] == [q.grad for q in ref.parameters()] == [None] * len(params)


def test_zero_grad_on_parameter_made_by_an_op(dev: Cpu) -> None:
    class Scaled(nn.Module):
        def __init__(self) -> None:
            self.w = dev.randn((3,), F64) * 0.5  # an untraced op's result, then a parameter

    m = Scaled()
    m.w.grad = np.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.zero_grad(set_to_none=False)
    g = m.w._grad  # the slot: reading .grad of an op's result warns
    assert g is not None
    np.testing.assert_array_equal(g.data, 0)
    m.zero_grad()
    assert m.w._grad is None


def test_zero_grads_dfdx_spelling_unchanged(dev: Cpu) -> None:
    model = _TwoHeads(dev, module_dict=True)
    grads = model.alloc_grads()
    cls, reg = model(dev.randn((2, 4), F64).trace(grads))
    grads = (cls.sum() + reg.sum()).backward()
    assert {p.id for p in model.heads["reg"].parameters()} <= set(grads.ids())
    model.zero_grads(grads)
    assert len(grads) == 0


def test_module_dict_entries_read_as_attributes_as_torchs(dev: Cpu) -> None:
    """nanoGPT's ``self.transformer.wte``: a ModuleDict's entry is an attribute too, the same
    object as ``md["wte"]`` (so assigning its weight ties it, as in PyTorch); a missing key
    raises AttributeError naming it; real attributes and methods come first."""
    torch = pytest.importorskip("torch")
    md = nn.ModuleDict({"wte": nn.Embedding(5, 3, dev=dev), "keys_": nn.ReLU()})
    ref = torch.nn.ModuleDict({"wte": torch.nn.Embedding(5, 3), "keys_": torch.nn.ReLU()})
    assert md.wte is md["wte"] and ref.wte is ref["wte"]
    head = nn.Linear(3, 5, bias=False, dev=dev)
    md.wte.weight = head.weight
    assert md["wte"].weight is head.weight
    assert list(md.keys()) == ["wte", "keys_"]  # the method, not an entry
    with pytest.raises(AttributeError, match="'ModuleDict' object has no attribute 'wpe'"):
        md.wpe  # noqa: B018
    with pytest.raises(AttributeError, match="'ModuleDict' object has no attribute 'wpe'"):
        ref.wpe  # noqa: B018
