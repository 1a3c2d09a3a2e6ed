"""``torch.utils`` at PyTorch's paths, as a PyTorch program uses them after renaming ``torch`` to
``gradtape``: ``gradtape.utils.data`` (DataLoader with PyTorch's arguments, batch samplers,
worker threads, iterable and concatenated data sets) and ``gradtape.utils.checkpoint``
(``checkpoint`` with ``use_reentrant``, ``checkpoint_sequential``), each compared with PyTorch:
the batches, and the gradients in float64 from identical weights."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import nn
from gradtape.utils.checkpoint import checkpoint, checkpoint_sequential
from gradtape.utils.data import ConcatDataset, DataLoader, Dataset, IterableDataset, TensorDataset

torch = pytest.importorskip("torch")
tud = pytest.importorskip("torch.utils.data")
TorchDataset: Any = tud.Dataset
TorchIterableDataset: Any = tud.IterableDataset


# ----- the paths -----------------------------------------------------------------------------


def test_paths_hold_the_same_objects_as_gradtape_data_and_checkpointing() -> None:
    import gradtape.utils.data as gud

    assert gradtape.utils.data.DataLoader is gradtape.data.DataLoader
    assert gud.TensorDataset is gradtape.data.TensorDataset
    assert gradtape.utils.checkpoint.checkpoint is gradtape.checkpoint
    for name in tud.__all__:
        if name in ("DataLoader", "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset"):
            assert hasattr(gud, name), name


# ----- data ----------------------------------------------------------------------------------


class Squares(Dataset[tuple[float, int]]):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[float, int]:
        return float(i * i), i


class TorchSquares(TorchDataset):  # type: ignore[misc]
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[float, int]:
        return float(i * i), i


def _values(batches: list[Any]) -> list[list[list[float]]]:
    return [[np.asarray(f.numpy() if hasattr(f, "numpy") else f).tolist() for f in b] for b in batches]


def test_batch_sampler_gives_pytorchs_batches() -> None:
    sampler = [[3, 1], [0, 2, 4], [5]]
    ours = DataLoader(Squares(6), batch_sampler=sampler)
    theirs = tud.DataLoader(TorchSquares(6), batch_sampler=sampler)
    assert len(ours) == len(theirs) == 3
    assert _values(list(ours)) == _values(list(theirs))
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    fast = list(DataLoader(TensorDataset(x), batch_sampler=sampler))  # the one-index path
    slow = list(tud.DataLoader(tud.TensorDataset(torch.from_numpy(x)), batch_sampler=sampler))
    assert _values(fast) == _values(slow)


@pytest.mark.parametrize("num_workers", [1, 3])
@pytest.mark.parametrize("persistent", [False, True])
def test_workers_give_the_batches_in_order_and_call_worker_init_fn(num_workers: int, persistent: bool) -> None:
    seen: list[int] = []
    names: set[str] = set()
    lock = threading.Lock()

    class Slow(Squares):
        def __getitem__(self, i: int) -> tuple[float, int]:
            with lock:
                names.add(threading.current_thread().name)
            return super().__getitem__(i)

    def init(worker_id: int) -> None:
        with lock:
            seen.append(worker_id)

    ours = DataLoader(
        Slow(23), batch_size=4, num_workers=num_workers, worker_init_fn=init, persistent_workers=persistent
    )
    theirs = tud.DataLoader(TorchSquares(23), batch_size=4)
    for _ in range(2):  # two epochs
        assert _values(list(ours)) == _values(list(theirs))
    assert set(seen) <= set(range(num_workers)) and seen
    assert all(n.startswith("gradtape-loader") for n in names)
    unbatched = DataLoader(Squares(5), batch_size=None, num_workers=2)
    assert list(unbatched) == [Squares(5)[i] for i in range(5)]


def test_worker_timeout_raises() -> None:
    gate = threading.Event()

    class Stuck(Squares):
        def __getitem__(self, i: int) -> tuple[float, int]:
            gate.wait(5)
            return super().__getitem__(i)

    with pytest.raises(TimeoutError, match="timed out"):
        list(DataLoader(Stuck(4), batch_size=2, num_workers=1, timeout=0.05))
    gate.set()


class Stream(IterableDataset[tuple[float, int]]):
    def __iter__(self) -> Iterator[tuple[float, int]]:
        return ((float(i) / 2, i) for i in range(11))


class TorchStream(TorchIterableDataset):  # type: ignore[misc]
    def __iter__(self) -> Iterator[tuple[float, int]]:
        return ((float(i) / 2, i) for i in range(11))


@pytest.mark.parametrize(("batch_size", "drop_last"), [(4, False), (4, True), (None, False), (11, False)])
def test_iterable_dataset_batches_equal_pytorchs(batch_size: int | None, drop_last: bool) -> None:
    ours = list(DataLoader(Stream(), batch_size=batch_size, drop_last=drop_last))
    theirs = list(tud.DataLoader(TorchStream(), batch_size=batch_size, drop_last=drop_last))
    if batch_size is None:
        assert ours == [tuple(t) for t in theirs]
    else:
        assert _values(ours) == _values(theirs)
    with pytest.raises(TypeError):
        len(DataLoader(Stream(), batch_size=2))


def test_concat_dataset_indexes_as_pytorchs() -> None:
    ours = ConcatDataset([Squares(3), Squares(0), Squares(4)])
    theirs = tud.ConcatDataset([TorchSquares(3), TorchSquares(0), TorchSquares(4)])
    assert len(ours) == len(theirs) == 7
    assert ours.cumulative_sizes == theirs.cumulative_sizes
    for i in range(-7, 7):
        assert ours[i] == theirs[i]
    for bad, err in ((7, IndexError), (-8, ValueError)):
        with pytest.raises(err):
            theirs[bad]
        with pytest.raises(err):
            ours[bad]
    assert _values(list(DataLoader(ours, batch_size=3))) == _values(list(tud.DataLoader(theirs, batch_size=3)))
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Stream()])


BAD_LOADERS: list[tuple[str, dict[str, Any]]] = [
    ("batch_sampler with batch_size", {"batch_sampler": [[0]], "batch_size": 2}),
    ("batch_sampler with shuffle", {"batch_sampler": [[0]], "shuffle": True}),
    ("batch_sampler with sampler", {"batch_sampler": [[0]], "sampler": [0]}),
    ("batch_sampler with drop_last", {"batch_sampler": [[0]], "drop_last": True}),
    ("sampler with shuffle", {"sampler": [0], "shuffle": True}),
    ("negative workers", {"num_workers": -1}),
    ("negative timeout", {"timeout": -1.0}),
    ("prefetch without workers", {"prefetch_factor": 2}),
    ("persistent without workers", {"persistent_workers": True}),
    ("drop_last without batches", {"batch_size": None, "drop_last": True}),
    ("zero batch size", {"batch_size": 0}),
]


@pytest.mark.parametrize(("what", "kw"), BAD_LOADERS, ids=[w for w, _ in BAD_LOADERS])
def test_bad_loader_arguments_refused_like_pytorch(what: str, kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        tud.DataLoader(TorchSquares(4), **kw)
    with pytest.raises(ValueError, match="DataLoader"):
        DataLoader(Squares(4), **kw)


@pytest.mark.parametrize("kw", [{"shuffle": True}, {"sampler": [0, 1]}, {"batch_sampler": [[0]]}])
def test_iterable_dataset_refuses_orderings_like_pytorch(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        tud.DataLoader(TorchStream(), **kw)
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(), **kw)


def test_pytorchs_positional_order() -> None:
    """PyTorch's fifth positional argument is batch_sampler, its seventh collate_fn."""
    collate = lambda items: [i for _, i in items]  # noqa: E731
    ours = list(DataLoader(Squares(5), 1, False, None, [[4, 0], [2]], 0, collate))
    theirs = list(tud.DataLoader(TorchSquares(5), 1, False, None, [[4, 0], [2]], 0, collate))
    assert ours == theirs == [[4, 0], [2]]


# ----- checkpoint ----------------------------------------------------------------------------


def _pair(n_layers: int = 5) -> tuple[nn.Sequential, Any]:
    gradtape.manual_seed(7)
    layers: list[nn.Module] = []
    tlayers: list[Any] = []
    for i in range(n_layers):
        layers += [nn.Linear(6, 6, dtype=np.float64), nn.Tanh()] if i % 2 == 0 else [nn.GELU()]
        tlayers += [torch.nn.Linear(6, 6, dtype=torch.float64), torch.nn.Tanh()] if i % 2 == 0 else [torch.nn.GELU()]
    model, tmodel = nn.Sequential(*layers), torch.nn.Sequential(*tlayers)
    tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    return model, tmodel


def _grads(model: Any) -> list[Any]:
    return [p.grad.numpy() for p in model.parameters()]


def _grad(x: gradtape.Tensor[Any, Any]) -> Any:
    assert x.grad is not None, "no gradient reached the input"
    return x.grad.numpy()


@pytest.mark.parametrize("use_reentrant", [False, True, None])
def test_checkpoint_with_use_reentrant_gives_pytorchs_gradients(use_reentrant: bool | None) -> None:
    model, tmodel = _pair(3)
    xv = np.random.default_rng(0).standard_normal((4, 6))
    x = gradtape.tensor(xv, requires_grad=True)
    tx = torch.tensor(xv, requires_grad=True)
    loss = checkpoint(model, x, use_reentrant=use_reentrant).square().sum()
    loss.backward()
    if use_reentrant is None:
        with pytest.warns(UserWarning, match="use_reentrant"):  # PyTorch asks for it; gradtape does not
            tout = torch.utils.checkpoint.checkpoint(tmodel, tx)
    else:
        tout = torch.utils.checkpoint.checkpoint(tmodel, tx, use_reentrant=use_reentrant)
    (tout**2).sum().backward()
    np.testing.assert_allclose(loss.item(), float((tout.detach() ** 2).sum()), rtol=1e-12)
    np.testing.assert_allclose(_grad(x), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(_grads(model), _grads(tmodel), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("segments", [1, 2, 3, 5])
def test_checkpoint_sequential_gives_pytorchs_gradients(segments: int) -> None:
    model, tmodel = _pair(5)
    xv = np.random.default_rng(1).standard_normal((3, 6))
    x = gradtape.tensor(xv, requires_grad=True)
    tx = torch.tensor(xv, requires_grad=True)
    out = checkpoint_sequential(model, segments, x, use_reentrant=False)
    tout = torch.utils.checkpoint.checkpoint_sequential(tmodel, segments, tx, use_reentrant=False)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(_grad(x), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for a, b in zip(_grads(model), _grads(tmodel), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    as_list = checkpoint_sequential(list(model.children()), segments, x.detach(), use_reentrant=False)
    np.testing.assert_array_equal(as_list.numpy(), out.numpy())


def test_checkpoint_refusals_follow_pytorch() -> None:
    model, tmodel = _pair(1)
    x = gradtape.tensor(np.ones((2, 6)), requires_grad=True)
    tx = torch.ones((2, 6), dtype=torch.float64, requires_grad=True)

    def f(a: Any, scale: float = 1.0) -> Any:
        return a * scale

    with pytest.raises(ValueError, match="Unexpected keyword"):
        torch.utils.checkpoint.checkpoint(f, tx, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint(f, x, use_reentrant=True, scale=2.0)
    np.testing.assert_array_equal(checkpoint(f, x, use_reentrant=False, scale=2.0).numpy(), 2 * np.ones((2, 6)))
    with pytest.raises(ValueError, match="debug"):
        torch.utils.checkpoint.checkpoint(f, tx, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="debug"):
        checkpoint(f, x, use_reentrant=True, debug=True)
    with pytest.raises(NotImplementedError, match="context_fn"):
        checkpoint(model, x, use_reentrant=False, context_fn=lambda: (None, None))
    with pytest.raises(ValueError, match="Unexpected keyword"):
        torch.utils.checkpoint.checkpoint_sequential(tmodel, 1, tx, use_reentrant=False, foo=1)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint_sequential(model, 1, x, use_reentrant=False, foo=1)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(model, 9, x, use_reentrant=False)
