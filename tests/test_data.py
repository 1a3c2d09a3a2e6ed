"""gradtape.data as a PyTorch user's data pipeline (``torch.utils.data`` renamed), compared
with torch.utils.data on what is deterministic: batch contents without shuffling, lengths,
``drop_last``, ``random_split``'s subset sizes, the collation of tuples and dicts, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Tensor, nn, optim
from gradtape.data import DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split

torch = pytest.importorskip("torch")
tud = pytest.importorskip("torch.utils.data")

DEV = Cpu(seed=0)


def _xy(n: int = 10) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) % 4
    return x, y


@pytest.mark.parametrize(
    ("batch_size", "drop_last"), [(1, False), (3, False), (3, True), (10, False), (4, True), (16, False)]
)
def test_unshuffled_batches_equal_pytorch(batch_size: int, drop_last: bool) -> None:
    x, y = _xy()
    ours = DataLoader(TensorDataset(DEV.tensor(x), DEV.tensor(y)), batch_size=batch_size, drop_last=drop_last)
    theirs = tud.DataLoader(
        tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=batch_size, drop_last=drop_last
    )
    assert len(ours) == len(theirs)
    got = list(ours)
    want = list(theirs)
    assert len(got) == len(want)
    for (xb, yb), (xt, yt) in zip(got, want, strict=True):
        assert isinstance(xb, Tensor)
        assert xb.dtype == np.float32 and yb.dtype == np.int64
        np.testing.assert_array_equal(xb.numpy(), xt.numpy())
        np.testing.assert_array_equal(yb.numpy(), yt.numpy())


def test_shuffle_is_a_new_permutation_each_epoch_and_reproducible_from_the_seed() -> None:
    x, y = _xy(50)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=np.random.default_rng(3))
    epochs = [np.concatenate([yb.numpy() for _, yb in loader]) for _ in range(2)]
    firsts = [np.concatenate([xb.numpy()[:, 0] for xb, _ in loader]) for _ in range(1)]
    for e in epochs:
        assert sorted(e.tolist()) == sorted(y.tolist())
    assert not np.array_equal(epochs[0], epochs[1])
    assert sorted((firsts[0] / 3).astype(int).tolist()) == list(range(50))  # every row once, rows kept whole
    again = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=np.random.default_rng(3))
    np.testing.assert_array_equal(np.concatenate([yb.numpy() for _, yb in again]), epochs[0])


def test_rows_stay_paired_under_shuffle() -> None:
    x, y = _xy(40)
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=7, shuffle=True, generator=1):
        np.testing.assert_array_equal((xb.numpy()[:, 0] / 3).astype(np.int64) % 4, yb.numpy())


@pytest.mark.parametrize("lengths", [[0.8, 0.2], [0.5, 0.3, 0.2], [0.34, 0.33, 0.33], [7, 3], [10, 0]])
def test_random_split_sizes_equal_pytorch(lengths: list[float]) -> None:
    x, y = _xy(10)
    ours = random_split(TensorDataset(x, y), lengths, generator=0)
    theirs = tud.random_split(tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    seen = np.concatenate([s.indices for s in ours])
    assert sorted(seen.tolist()) == list(range(10))


def test_random_split_refuses_lengths_that_do_not_add_up() -> None:
    x, y = _xy(10)
    with pytest.raises(ValueError, match="sum to 9, the dataset has 10"):
        random_split(TensorDataset(x, y), [5, 4])
    with pytest.raises(ValueError, match="fractions summing to 1"):
        random_split(TensorDataset(x, y), [0.5, 0.2])
    with pytest.raises(ValueError, match=">= 0"):
        random_split(TensorDataset(x, y), [11, -1])


def test_loader_over_a_subset_of_a_subset_gathers_the_right_rows() -> None:
    x, y = _xy(20)
    inner = Subset(TensorDataset(x, y), list(range(19, -1, -1)))  # reversed
    outer = Subset(inner, [0, 5, 2, 7])
    (xb, yb), (_, yb2) = list(DataLoader(outer, batch_size=2))
    np.testing.assert_array_equal(np.concatenate([yb.numpy(), yb2.numpy()]), y[[19, 14, 17, 12]])
    np.testing.assert_array_equal(xb.numpy(), x[[19, 14]])
    assert [int(t[1].item()) for t in (outer[i] for i in range(4))] == y[[19, 14, 17, 12]].tolist()


class Squares(Dataset[tuple[np.ndarray[Any, Any], int]]):
    """A map-style data set as a PyTorch user writes one."""

    def __len__(self) -> int:
        return 9

    def __getitem__(self, i: int) -> tuple[np.ndarray[Any, Any], int]:
        return np.full(2, i * i, dtype=np.float64), i


class TorchSquares(tud.Dataset):  # type: ignore[misc,name-defined]
    def __len__(self) -> int:
        return 9

    def __getitem__(self, i: int) -> tuple[np.ndarray[Any, Any], int]:
        return np.full(2, i * i, dtype=np.float64), i


def test_a_custom_dataset_collates_as_pytorch() -> None:
    ours = list(DataLoader(Squares(), batch_size=4))
    theirs = list(tud.DataLoader(TorchSquares(), batch_size=4))
    assert len(ours) == len(theirs) == 3
    for (a, b), (ta, tb) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a.numpy(), ta.numpy())
        np.testing.assert_array_equal(b.numpy(), tb.numpy())
        assert a.dtype == np.float64 and b.dtype == np.int64


def test_default_collate_of_dicts_and_strings() -> None:
    batch = [{"x": np.ones(2, np.float32) * i, "name": f"n{i}"} for i in range(3)]
    out = default_collate(batch)
    theirs = tud.default_collate(batch)
    np.testing.assert_array_equal(out["x"].numpy(), theirs["x"].numpy())
    assert out["name"] == theirs["name"]
    with pytest.raises(ValueError, match="different shapes"):
        default_collate([np.ones(2), np.ones(3)])


def test_batch_size_none_yields_items() -> None:
    items = list(DataLoader(Squares(), batch_size=None))
    assert len(items) == 9 and items[3][1] == 3


def test_bad_arguments_are_refused_with_pytorchs_messages() -> None:
    x, y = _xy()
    ds = TensorDataset(x, y)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, shuffle=True, sampler=[0, 1])
    with pytest.raises(ValueError, match=r"size mismatch between tensors: shapes \[\(10, 3\), \(9,\)\]"):
        TensorDataset(x, y[:9])


def test_sampler_picks_the_indices() -> None:
    x, y = _xy()
    loader = DataLoader(TensorDataset(x, y), batch_size=2, sampler=[9, 0, 4])
    assert len(loader) == 2
    assert [yb.numpy().tolist() for _, yb in loader] == [[y[9], y[0]], [y[4]]]


def test_a_training_loop_over_the_loader_learns() -> None:
    """The PyTorch loop: batches from the loader into a model, loss, backward, step."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 4)).astype(np.float32)
    w = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    y = (x @ w)[:, None].astype(np.float32)
    dev = Cpu(seed=0)
    model = nn.Linear(4, 1, dev=dev)
    opt = optim.SGD(model.parameters(), lr=0.1)
    train, _ = random_split(TensorDataset(dev.tensor(x), dev.tensor(y)), [0.75, 0.25], generator=0)
    loader = DataLoader(train, batch_size=32, shuffle=True, generator=0)
    first = last = 0.0
    for epoch in range(20):
        for xb, yb in loader:
            opt.zero_grad()
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            opt.step()
            if epoch == 0 and first == 0.0:
                first = float(loss.item())
            last = float(loss.item())
    assert last < 1e-3 * first
