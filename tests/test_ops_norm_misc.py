"""Issue 27's normalisations, distances and small elementwise ops, written as the PyTorch
user's program and compared with PyTorch in float64 (values, gradients, second rules against
``torch.func.hessian``), plus gradcheck and the bad-input errors.

Step 1: ``group_norm``, ``instance_norm`` and the layers ``nn.GroupNorm``,
``nn.InstanceNorm1d``/``nn.InstanceNorm2d`` (fused kernels of ``devices/kernels/norm.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, DTypeError, ShapeError, Tensor, nn, ops
from gradtape.devices.kernels import norm as _norm
from gradtape.testing import gradcheck

torch = pytest.importorskip("torch")
F = torch.nn.functional

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)
F64 = np.float64


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _grads_match(
    ours: Callable[..., Any], theirs: Callable[..., Any], arrays: list[Array], rtol: float = 1e-12
) -> None:
    """Values and every input's gradient of ``sum(f(*inputs) * w)`` equal PyTorch's in float64."""
    xs = [DEV.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = ours(*xs), theirs(*ts)
    w = _rng(99).standard_normal(yt.shape)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=rtol, atol=1e-13)
    (y * DEV.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts, strict=True):
        assert x.grad is not None and t.grad is not None
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=1e-12)


def _double_backward_match(ours: Callable[..., Any], theirs: Callable[..., Any], arrays: list[Array]) -> None:
    """Second derivatives as a Hessian-vector product (double backward), where PyTorch's
    ``torch.func.hessian`` cannot run (``cdist`` has no forward-mode derivative)."""
    r = _rng(13)
    w = r.standard_normal(theirs(*[torch.tensor(a) for a in arrays]).shape)
    vs = [r.standard_normal(a.shape) for a in arrays]
    xs = [DEV.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    gs = gradtape.autograd.grad((ours(*xs) * DEV.tensor(w)).sum(), xs, create_graph=True)
    gts = torch.autograd.grad((theirs(*ts) * torch.tensor(w)).sum(), ts, create_graph=True)
    total: Any = 0.0
    for g, v in zip(gs, vs, strict=True):
        assert g is not None
        total = total + (g * DEV.tensor(v)).sum()
    hv = gradtape.autograd.grad(total, xs)
    hvt = torch.autograd.grad(sum((g * torch.tensor(v)).sum() for g, v in zip(gts, vs, strict=True)), ts)
    for a, b in zip(hv, hvt, strict=True):
        assert a is not None
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-10)


def _hessians_match(ours: Callable[..., Any], theirs: Callable[..., Any], arrays: list[Array]) -> None:
    """Every Hessian block of ``sum(f(*inputs) * w)`` (second rules) equals ``torch.func.hessian``'s."""
    n = len(arrays)
    w = _rng(7).standard_normal(theirs(*[torch.tensor(a) for a in arrays]).shape)
    wt = DEV.tensor(w)
    h = gradtape.functional.hessian(lambda *xs: (ours(*xs) * wt).sum(), tuple(DEV.tensor(a) for a in arrays))
    ht = torch.func.hessian(lambda *xs: (theirs(*xs) * torch.tensor(w)).sum(), argnums=tuple(range(n)))(
        *[torch.tensor(a) for a in arrays]
    )
    for i in range(n):
        for j in range(n):
            np.testing.assert_allclose(h[i][j].numpy(), ht[i][j].numpy(), rtol=1e-9, atol=1e-10)


# ----- group_norm / instance_norm ----------------------------------------------------------


@pytest.mark.parametrize(("shape", "groups"), [((3, 6, 4, 5), 3), ((2, 4, 7), 1), ((2, 4), 4), ((2, 6, 2, 3, 2), 6)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_values_and_gradients_equal_torch(shape: tuple[int, ...], groups: int, affine: bool) -> None:
    r = _rng(len(shape) + groups)
    c = shape[1]
    x = r.standard_normal(shape) * 3.0 + 1.5
    if affine:
        w, b = r.standard_normal(c), r.standard_normal(c)
        _grads_match(
            lambda x, w, b: ops.group_norm(x, groups, w, b, eps=1e-3),
            lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-3),
            [x, w, b],
        )
    else:
        _grads_match(lambda x: ops.group_norm(x, groups), lambda x: F.group_norm(x, groups), [x])


def test_group_norm_gradcheck_and_hessian() -> None:
    r = _rng(3)
    x, w, b = r.standard_normal((2, 4, 3)), r.standard_normal(4), r.standard_normal(4)
    assert gradcheck(lambda x, w, b: ops.group_norm(x, 2, w, b), [x, w, b])
    _hessians_match(
        lambda x, w, b: ops.group_norm(x, 2, w, b), lambda x, w, b: F.group_norm(x, 2, w, b), [x[:, :, :2], w, b]
    )


def test_group_norm_only_weight_wanted_and_float32() -> None:
    """A frozen input (only the parameters' gradients) and float32 against float64."""
    r = _rng(4)
    x, w, b = r.standard_normal((4, 6, 5)), r.standard_normal(6), r.standard_normal(6)
    wt, bt = DEV.tensor(w, requires_grad=True), DEV.tensor(b, requires_grad=True)
    ops.group_norm(DEV.tensor(x), 3, wt, bt).sum().backward()
    xt, wtt, btt = torch.tensor(x), torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    F.group_norm(xt, 3, wtt, btt).sum().backward()
    assert wt.grad is not None and bt.grad is not None
    np.testing.assert_allclose(wt.grad.numpy(), wtt.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(bt.grad.numpy(), btt.grad.numpy(), rtol=1e-12, atol=1e-12)
    y32 = ops.group_norm(DEV.tensor(x.astype(np.float32)), 3, DEV.tensor(w.astype(np.float32)))
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32.numpy(), F.group_norm(xt, 3, torch.tensor(w)).numpy(), rtol=1e-4, atol=1e-5)


def test_channel_sums_kernels_agree_bitwise() -> None:
    """The serial and ``prange`` kernels of the per-channel sums give the same bits."""
    r = _rng(5)
    x, g = r.standard_normal((5, 8, 33)).astype(np.float32), r.standard_normal((5, 8, 33)).astype(np.float32)
    mean, rstd = r.standard_normal((5, 4)).astype(np.float32), r.random((5, 4)).astype(np.float32)
    out = []
    for kernel in (_norm._channel_sums_serial, _norm._channel_sums_parallel):
        dw, db = np.empty(8, np.float32), np.empty(8, np.float32)
        kernel(dw, db, x, g, mean, rstd)
        out.append((dw, db))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    xh = (x.reshape(5, 4, 2, 33) - mean[:, :, None, None]) * rstd[:, :, None, None]
    np.testing.assert_allclose(out[0][0], (g * xh.reshape(5, 8, 33)).sum(axis=(0, 2)), rtol=1e-4, atol=1e-4)


def test_instance_norm_values_gradients_and_running_stats_equal_torch() -> None:
    r = _rng(6)
    x, w, b = r.standard_normal((3, 4, 5)) * 2 + 1, r.standard_normal(4), r.standard_normal(4)
    _grads_match(
        lambda x, w, b: ops.instance_norm(x, weight=w, bias=b),
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
        [x, w, b],
    )
    _grads_match(lambda x: ops.instance_norm(x, eps=0.1), lambda x: F.instance_norm(x, eps=0.1), [x])
    rm, rv = DEV.tensor(np.zeros(4)), DEV.tensor(np.ones(4))
    rmt, rvt = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    for _ in range(2):
        ops.instance_norm(DEV.tensor(x), rm, rv, momentum=0.3)
        F.instance_norm(torch.tensor(x), rmt, rvt, momentum=0.3)
    np.testing.assert_allclose(rm.numpy(), rmt.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), rvt.numpy(), rtol=1e-12)
    rmt, rvt = torch.tensor(rm.numpy()), torch.tensor(rv.numpy())
    _grads_match(
        lambda x, w: ops.instance_norm(x, rm, rv, w, use_input_stats=False),
        lambda x, w: F.instance_norm(x, rmt, rvt, w, use_input_stats=False),
        [x, w],
    )


def test_instance_norm_gradcheck_and_hessian() -> None:
    r = _rng(8)
    x, w = r.standard_normal((2, 3, 4)), r.standard_normal(3)
    assert gradcheck(lambda x, w: ops.instance_norm(x, weight=w), [x, w])
    # torch.func.hessian of F.instance_norm is wrong in torch 2.13 (its (w, x) block differs
    # from the (x, w) block's transpose and from double backward); F.group_norm with one
    # channel per group is the same function, and its Hessian agrees with double backward
    _hessians_match(lambda x, w: ops.instance_norm(x, weight=w), lambda x, w: F.group_norm(x, 3, weight=w), [x, w])
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    gx = torch.autograd.grad((F.instance_norm(xt, weight=wt) ** 2).sum(), xt, create_graph=True)[0]
    want = torch.autograd.grad((gx**2).sum(), (xt, wt))
    xs, ws = DEV.tensor(x, requires_grad=True), DEV.tensor(w, requires_grad=True)
    got = gradtape.autograd.grad((ops.instance_norm(xs, weight=ws) ** 2).sum(), xs, create_graph=True)[0]
    assert got is not None
    got2 = gradtape.autograd.grad((got**2).sum(), (xs, ws))
    for a, b in zip(got2, want, strict=True):
        assert a is not None
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_group_and_instance_norm_refuse_bad_input_naming_the_op() -> None:
    x = DEV.tensor(np.ones((2, 6, 3)))
    with pytest.raises(ValueError, match=r"group_norm: .*\(2, 6, 3\).*num_groups=4"):
        ops.group_norm(x, 4)
    with pytest.raises(TypeError, match="group_norm: num_groups"):
        ops.group_norm(x, 2.0)  # type: ignore[call-overload]
    with pytest.raises(ShapeError, match=r"group_norm: weight of shape \(3,\) does not fit input \(2, 6, 3\)"):
        ops.group_norm(x, 2, DEV.tensor(np.ones(3)))
    with pytest.raises(DTypeError, match="group_norm"):
        ops.group_norm(x, 2, DEV.tensor(np.ones(6, np.float32)))
    with pytest.raises(ShapeError, match=r"group_norm: .*\(6,\)"):
        ops.group_norm(DEV.tensor(np.ones(6)), 1)
    with pytest.raises(ValueError, match=r"instance_norm: expected more than 1 spatial element.*\(2, 6\)"):
        ops.instance_norm(DEV.tensor(np.ones((2, 6))))
    with pytest.raises(ValueError, match="instance_norm: use_input_stats=False needs running_mean"):
        ops.instance_norm(x, use_input_stats=False)
    with pytest.raises(ShapeError, match=r"instance_norm: running_var of shape \(2,\)"):
        ops.instance_norm(x, DEV.tensor(np.zeros(6)), DEV.tensor(np.ones(2)))


# ----- the layers --------------------------------------------------------------------------


def _copy_params(ours: nn.Module, ref: Any) -> None:
    for name, p in ref.named_parameters():
        getattr(ours, name).data[...] = np.random.default_rng(len(name)).standard_normal(p.shape)
        with torch.no_grad():
            p.copy_(torch.tensor(getattr(ours, name).numpy()))


def test_group_norm_layer_equals_torch_with_its_state_dict_keys() -> None:
    ours, ref = nn.GroupNorm(2, 6, dev=DEV, dtype=F64), torch.nn.GroupNorm(2, 6).double()
    assert list(nn.state_dict(ours)) == list(ref.state_dict()) == ["weight", "bias"]
    _copy_params(ours, ref)
    x = _rng(10).standard_normal((2, 6, 3, 3))
    np.testing.assert_allclose(ours(DEV.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    assert nn.GroupNorm(3, 6, affine=False).weight is None
    with pytest.raises(ValueError, match="GroupNorm: num_channels=6 must be divisible by num_groups=4"):
        nn.GroupNorm(4, 6)
    with pytest.raises(ShapeError, match=r"GroupNorm: .*\(2, 5, 3\)"):
        ours(DEV.tensor(np.ones((2, 5, 3))))


@pytest.mark.parametrize("cls", ["InstanceNorm1d", "InstanceNorm2d"])
def test_instance_norm_layers_equal_torch_in_training_eval_and_unbatched(cls: str) -> None:
    shape = (3, 4, 5) if cls == "InstanceNorm1d" else (3, 4, 3, 2)
    ours = getattr(nn, cls)(4, affine=True, track_running_stats=True, dev=DEV, dtype=F64)
    ref = getattr(torch.nn, cls)(4, affine=True, track_running_stats=True).double()
    assert list(nn.state_dict(ours)) == list(ref.state_dict())
    _copy_params(ours, ref)
    r = _rng(11)
    for _ in range(2):  # training: batch statistics, running statistics moved alike
        x = r.standard_normal(shape)
        np.testing.assert_allclose(ours(DEV.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    for name, buf in ref.named_buffers():
        np.testing.assert_allclose(getattr(ours, name).numpy(), buf.numpy(), rtol=1e-12, err_msg=name)
    ours.eval()
    ref.eval()
    x = r.standard_normal(shape)
    np.testing.assert_allclose(ours(DEV.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    plain, plain_ref = getattr(nn, cls)(4, dev=DEV, dtype=F64), getattr(torch.nn, cls)(4)
    assert list(nn.state_dict(plain)) == list(plain_ref.state_dict()) == []
    np.testing.assert_allclose(plain(DEV.tensor(x[0])).numpy(), plain_ref(torch.tensor(x[0])).numpy(), rtol=1e-12)
    with pytest.raises(ShapeError, match=cls):
        ours(DEV.tensor(np.ones((2, 3, *shape[2:]))))


def test_group_norm_layer_trains_its_parameters_like_torch() -> None:
    """Only the input given (the documented usage): the parameters' gradients equal torch's."""
    ours, ref = nn.GroupNorm(2, 4, dev=DEV, dtype=F64), torch.nn.GroupNorm(2, 4).double()
    _copy_params(ours, ref)
    x = _rng(12).standard_normal((2, 4, 5))
    (ours(DEV.tensor(x)) ** 2).sum().backward()
    (ref(torch.tensor(x)) ** 2).sum().backward()
    for name, p in ref.named_parameters():
        g = getattr(ours, name).grad
        assert g is not None and p.grad is not None
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_tensor_type_is_kept() -> None:
    y: Tensor[Any, Any] = ops.group_norm(DEV.tensor(np.ones((2, 4, 3))), 2)
    assert y.shape == (2, 4, 3)


# ----- norm / normalize / cosine_similarity / cdist ----------------------------------------


def _with_zeros_and_ties(shape: tuple[int, ...], seed: int) -> Array:
    """A sample with an all-zero row (norm 0: gradient 0, PyTorch's) and a tie for the max."""
    x = _rng(seed).standard_normal(shape)
    x[0, 0] = 0.0
    x[1, 1, 0] = x[1, 1, 2] = 4.0
    return x


@pytest.mark.parametrize("p", ["fro", 2.0, 1, 3, 0.5, float("inf"), float("-inf")])
def test_norm_values_and_gradients_equal_torch_with_zeros_and_ties(p: Any) -> None:
    x = _with_zeros_and_ties((3, 4, 5), 20)
    if p == 0.5:
        x[0, 0] = 1.0  # |x|^(p-1) of a zero is inf for p < 1 (NaN in both); compared elsewhere
    for dim, keepdim in [(None, False), (1, False), ((0, 2), True), (-1, True)]:
        _grads_match(
            lambda x, d=dim, k=keepdim: x.norm(p, dim=d, keepdim=k),
            lambda x, d=dim, k=keepdim: x.norm(p, dim=d, keepdim=k),
            [x],
        )


def test_norm_spellings_gradcheck_hessian_and_errors() -> None:
    x = _rng(21).standard_normal((3, 4))
    t = DEV.tensor(x)
    np.testing.assert_array_equal(ops.norm(t, 2, axis=1, keepdims=True).numpy(), t.norm(dim=1, keepdim=True).numpy())
    assert ops.norm(t).shape == () and t.norm(p=1, dim=0).shape == (4,)
    z = DEV.tensor(x, requires_grad=True)
    z.norm(0).backward()  # the count of non-zeros: no gradient (PyTorch has none), zeros here
    assert z.grad is not None and not z.grad.numpy().any()
    for p in (2.0, 3.0, float("inf")):
        assert gradcheck(lambda a, p=p: ops.norm(a, p, 1), [x])
    _hessians_match(lambda a: a.norm(dim=1), lambda a: a.norm(dim=1), [x])
    _hessians_match(lambda a: a.norm(3, dim=0), lambda a: a.norm(3, dim=0), [x])
    with pytest.raises(ValueError, match="norm: p must be 'fro' or a real number"):
        t.norm("nuc")
    with pytest.raises(ShapeError, match="norm: axis 2 is out of range"):
        t.norm(dim=2)
    with pytest.raises(TypeError, match="norm: got dim=0 and axis=1"):
        ops.norm(t, dim=0, axis=1)


def test_normalize_equals_torch_with_a_zero_row() -> None:
    x = _with_zeros_and_ties((3, 4, 3), 22)
    _grads_match(lambda x: ops.normalize(x), lambda x: F.normalize(x), [x])
    _grads_match(lambda x: ops.normalize(x, p=1.0, dim=-1, eps=0.5), lambda x: F.normalize(x, 1.0, -1, 0.5), [x])
    y = _rng(23).standard_normal((2, 3))
    assert gradcheck(lambda a: ops.normalize(a, dim=0), [y])
    _hessians_match(lambda a: ops.normalize(a), lambda a: F.normalize(a), [y])
    with pytest.raises(ShapeError, match=r"normalize: dim 3 is out of range for a tensor of shape \(2, 3\)"):
        ops.normalize(DEV.tensor(y), dim=3)


def test_cosine_similarity_equals_torch_with_broadcasting_and_eps() -> None:
    r = _rng(24)
    a, b = r.standard_normal((3, 4)), r.standard_normal((4,))
    a[1] = 1e-10  # below eps: the clamped norm, the unclamped norm's gradient (PyTorch's)
    _grads_match(lambda a, b: ops.cosine_similarity(a, b, dim=-1), lambda a, b: F.cosine_similarity(a, b, -1), [a, b])
    c, d = r.standard_normal((2, 3, 1)), r.standard_normal((2, 3, 5))
    _grads_match(lambda c, d: ops.cosine_similarity(c, d), lambda c, d: F.cosine_similarity(c, d), [c, d])
    _grads_match(
        lambda c, d: ops.cosine_similarity(c, d, dim=2, eps=0.1),
        lambda c, d: F.cosine_similarity(c, d, dim=2, eps=0.1),
        [c, d],
    )
    e, f = r.standard_normal((2, 3)), r.standard_normal((2, 3))
    assert gradcheck(lambda e, f: ops.cosine_similarity(e, f), [e, f])
    _hessians_match(lambda e, f: ops.cosine_similarity(e, f), lambda e, f: F.cosine_similarity(e, f), [e, f])
    layer, ref = nn.CosineSimilarity(dim=0), torch.nn.CosineSimilarity(dim=0)
    np.testing.assert_allclose(
        layer(DEV.tensor(e), DEV.tensor(f)).numpy(), ref(torch.tensor(e), torch.tensor(f)).numpy(), rtol=1e-14
    )
    with pytest.raises(ShapeError, match=r"cosine_similarity: shapes \(2, 3\) and \(4,\) do not broadcast"):
        ops.cosine_similarity(DEV.tensor(e), DEV.tensor(np.ones(4)))


@pytest.mark.parametrize("rows", [(4, 3), (30, 5), (5, 27)], ids=["differences", "matmul", "matmul-x2"])
def test_cdist_equals_torch_with_zero_distances(rows: tuple[int, int]) -> None:
    """Small inputs go through the differences, more than 25 rows through PyTorch's matrix
    product; a zero distance has gradient 0 in both."""
    r = _rng(sum(rows))
    a, b = r.standard_normal((rows[0], 3)), r.standard_normal((rows[1], 3))
    b[1] = a[2]
    _grads_match(lambda a, b: ops.cdist(a, b), lambda a, b: torch.cdist(a, b), [a, b], rtol=1e-10)
    for p in (1.0, 3.0, float("inf")):
        _grads_match(lambda a, b, p=p: ops.cdist(a, b, p), lambda a, b, p=p: torch.cdist(a, b, p), [a, b], rtol=1e-10)
    bat_a, bat_b = r.standard_normal((2, rows[0], 3)), r.standard_normal((2, rows[1], 3))
    _grads_match(lambda a, b: ops.cdist(a, b), lambda a, b: torch.cdist(a, b), [bat_a, bat_b], rtol=1e-10)


def test_cdist_gradcheck_and_second_rules() -> None:
    """PyTorch's ``cdist`` on few rows (``_cdist_forward``) has no second derivative, and no
    forward mode for ``torch.func.hessian``: the references are its distances written out
    (``norm`` of the differences) and its matrix-product mode, double-differentiated."""
    r = _rng(25)
    a, b = r.standard_normal((3, 2)), r.standard_normal((4, 2))

    def differences(p: float) -> Callable[[Any, Any], Any]:
        return lambda a, b: (a[:, None] - b[None]).norm(p, dim=-1)

    assert gradcheck(lambda a, b: ops.cdist(a, b), [a, b])
    _hessians_match(lambda a, b: ops.cdist(a, b), differences(2.0), [a, b])
    _hessians_match(lambda a, b: ops.cdist(a, b, 3.0), differences(3.0), [a, b])
    big = r.standard_normal((26, 2))  # the matrix-product op's own second rule
    assert gradcheck(lambda a, b: ops.cdist(a, b), [big, b])
    _double_backward_match(
        lambda a, b: ops.cdist(a, b), lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), [big, b]
    )


def test_cdist_and_pairwise_distance_refuse_bad_shapes() -> None:
    x = DEV.tensor(np.ones((3, 2)))
    with pytest.raises(ShapeError, match=r"cdist: expected x1 \(P, M\) and x2 \(R, M\).*\(3, 2\) and \(3, 4\)"):
        ops.cdist(x, DEV.tensor(np.ones((3, 4))))
    with pytest.raises(ShapeError, match=r"cdist: .*\(2, 3, 2\)"):
        ops.cdist(x, DEV.tensor(np.ones((2, 3, 2))))
    with pytest.raises(ValueError, match="cdist: p must be >= 0"):
        ops.cdist(x, x, -1.0)
    with pytest.raises(DTypeError, match="cdist"):
        ops.cdist(x, DEV.tensor(np.ones((3, 2), np.float32)))
    with pytest.raises(ShapeError, match="pairwise_distance"):
        ops.pairwise_distance(x, DEV.tensor(np.ones((2, 2))))


def test_pairwise_distance_equals_torch() -> None:
    r = _rng(26)
    a, b = r.standard_normal((4, 3)), r.standard_normal((4, 3))
    _grads_match(lambda a, b: ops.pairwise_distance(a, b), lambda a, b: F.pairwise_distance(a, b), [a, b])
    layer, ref = nn.PairwiseDistance(p=1.0, keepdim=True), torch.nn.PairwiseDistance(p=1.0, keepdim=True)
    np.testing.assert_allclose(
        layer(DEV.tensor(a), DEV.tensor(b)).numpy(), ref(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-14
    )


# ----- atan2 / lerp / outer ------------------------------------------------------------------


def test_atan2_lerp_outer_equal_torch() -> None:
    r = _rng(27)
    a, b, w = r.standard_normal((3, 4)), r.standard_normal(4), r.random((3, 1))
    _grads_match(lambda a, b: a.atan2(b), lambda a, b: a.atan2(b), [a, b])
    _grads_match(lambda a, b, w: a.lerp(b, w), lambda a, b, w: a.lerp(b, w), [a, b, w], rtol=1e-10)
    _grads_match(lambda a, b: ops.lerp(a, b, 0.75), lambda a, b: torch.lerp(a, b, 0.75), [a, b], rtol=1e-10)
    _grads_match(lambda u, v: u.outer(v), lambda u, v: u.outer(v), [a[0], b[:3]])
    assert gradcheck(lambda a, b, w: ops.lerp(a, b, w), [a, b, w])
    _hessians_match(lambda a, b, w: a.lerp(b, w), lambda a, b, w: a.lerp(b, w), [a[:2, :2], b[:2], w[:2]])
    _hessians_match(lambda u, v: ops.outer(u, v), lambda u, v: torch.outer(u, v), [a[0], b[:3]])


def test_atan2_lerp_outer_refuse_bad_input() -> None:
    m, v = DEV.tensor(np.ones((2, 3))), DEV.tensor(np.ones(3))
    with pytest.raises(ShapeError, match=r"outer: expected 1-D input and vec2, got shapes \(2, 3\) and \(3,\)"):
        ops.outer(m, v)
    with pytest.raises(ShapeError, match=r"atan2: shapes \(2, 3\) and \(2,\)"):
        ops.atan2(m, DEV.tensor(np.ones(2)))
    with pytest.raises(DTypeError, match="atan2: dtypes differ"):
        ops.atan2(m, DEV.tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ShapeError, match=r"lerp: shapes \(2, 3\) and \(4,\)"):
        ops.lerp(m, v, DEV.tensor(np.ones(4)))
    with pytest.raises(TypeError, match="lerp"):
        ops.lerp(m, v, "0.5")  # type: ignore[arg-type]
