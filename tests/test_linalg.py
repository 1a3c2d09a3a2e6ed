"""gradtape.linalg against PyTorch's torch.linalg, written as a PyTorch user's program: the same
calls (``torch`` renamed), float64 inputs (well-conditioned random matrices, symmetric
positive-definite ones for cholesky and eigh), values equal to 1e-10, gradients of
``sum(out * w)`` equal, batches ``(2, 3, n, n)``, second derivatives against
``torch.func.hessian``, ``gradtape.testing.gradcheck``, and PyTorch's errors (a singular or
non-positive-definite matrix, non-square or too few dims, integer tensors).

Singular and eigen vectors are defined up to sign (and numpy's LAPACK is OpenBLAS, PyTorch's
wheels use MKL's, whose signs can differ), so they are compared through sign-free quantities
(``U diag(c) U^T``), as a loss must use them."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import gradtape
import gradtape.linalg as LA
from gradtape import Cpu, DTypeError, GradtapeError, ShapeError, TapeError, Tensor
from gradtape.autograd import grad
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
Fn = Callable[..., Any]
dev = Cpu(seed=0)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(*shape: int, seed: int = 0) -> Array:
    return _rng(seed).standard_normal(shape)


def well(*shape: int, seed: int = 0) -> Array:
    """Random square matrices with a strengthened diagonal: well conditioned, not symmetric."""
    n = shape[-1]
    return randn(*shape, seed=seed) + 0.5 * n * np.eye(n)


def spd(*shape: int, seed: int = 0) -> Array:
    """Random symmetric positive-definite matrices (distinct eigenvalues)."""
    a = randn(*shape, seed=seed)
    n = shape[-1]
    return np.asarray(a @ np.swapaxes(a, -1, -2) + n * np.eye(n))


def _numpy(t: Any) -> Array:
    return t.detach().numpy() if hasattr(t, "detach") else t.numpy()  # type: ignore[no-any-return]


def compare(
    ours: Fn,
    theirs: Fn,
    arrays: Sequence[Array],
    *,
    outputs: Sequence[int] | None = None,
    values: bool = True,
    rtol: float = 1e-10,
    atol: float = 1e-10,
) -> None:
    """``ours(*tensors)`` against ``theirs(*torch tensors)``, both with ``requires_grad``: the
    values of every output (or of ``outputs``) and the gradient of every input for
    ``sum(out * w)`` summed over those outputs, ``w`` random."""
    xs = [gradtape.tensor(a, requires_grad=True) for a in arrays]
    txs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = ours(*xs), theirs(*txs)
    outs = list(out) if isinstance(out, tuple) else [out]
    touts = list(tout) if isinstance(tout, tuple) else [tout]
    assert len(outs) == len(touts)
    keep = range(len(outs)) if outputs is None else outputs
    loss: Any = None
    tloss: Any = None
    for k in keep:
        o, t = outs[k], touts[k]
        assert o.shape == tuple(t.shape), (k, o.shape, tuple(t.shape))
        assert o.dtype == np.float64
        if values:
            np.testing.assert_allclose(o.numpy(), _numpy(t), rtol=rtol, atol=atol, err_msg=f"output {k}")
        w = randn(*o.shape, seed=100 + k)
        term, tterm = (o * gradtape.tensor(w)).sum(), (t * torch.tensor(w)).sum()
        loss = term if loss is None else loss + term
        tloss = tterm if tloss is None else tloss + tterm
    loss.backward()
    tloss.backward()
    for k, (x, tx) in enumerate(zip(xs, txs, strict=True)):
        want = np.zeros(x.shape) if tx.grad is None else tx.grad.numpy()
        assert x.grad is not None, f"input {k} got no gradient"
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=rtol, atol=atol, err_msg=f"gradient of input {k}")


def _is_ours(x: Any) -> bool:
    return isinstance(x, Tensor)


def _const(like: Any, a: Array) -> Any:
    return gradtape.tensor(a) if _is_ours(like) else torch.tensor(a)


def _mT(x: Any) -> Any:
    return x.transpose(-1, -2)


def _gram(u: Any, c: Array) -> Any:
    """``U diag(c) U^T``: free of the columns' signs."""
    return (u * _const(u, c)) @ _mT(u)


# ----- values and gradients against PyTorch -----------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 4, 4), (1, 1)])
def test_inv_det_slogdet_match_torch(shape: tuple[int, ...]) -> None:
    a = well(*shape)
    compare(LA.inv, torch.linalg.inv, [a])
    compare(LA.det, torch.linalg.det, [a])
    compare(LA.slogdet, torch.linalg.slogdet, [a])
    compare(gradtape.linalg.inverse, torch.inverse, [a])


def test_slogdet_is_a_named_tuple_with_pytorchs_fields() -> None:
    a = well(2, 3, 3) * np.array([1.0, -1.0])[:, None, None]
    res = LA.slogdet(gradtape.tensor(a))
    sign, logabsdet = res
    assert isinstance(res, tuple) and res._fields == ("sign", "logabsdet")
    assert res.sign is sign and res.logabsdet is logabsdet
    tres = torch.linalg.slogdet(torch.tensor(a))
    np.testing.assert_array_equal(sign.numpy(), tres.sign.numpy())
    np.testing.assert_allclose(logabsdet.numpy(), tres.logabsdet.numpy(), rtol=1e-12)


def test_logdet_is_nan_for_a_negative_determinant_as_torch() -> None:
    a = np.stack([spd(3, 3), -spd(3, 3, seed=1)])  # det > 0, det < 0
    compare(LA.logdet, torch.logdet, [a], values=False)
    np.testing.assert_allclose(LA.logdet(gradtape.tensor(a)).numpy(), torch.logdet(torch.tensor(a)).numpy())
    assert math.isnan(float(LA.logdet(gradtape.tensor(a)).numpy()[1]))


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "left"),
    [
        ((4, 4), (4, 3), True),
        ((2, 3, 4, 4), (2, 3, 4, 2), True),
        ((2, 3, 4, 4), (4,), True),  # a vector broadcast over the batch
        ((2, 3, 4, 4), (2, 3, 4), True),  # a batch of vectors: B.shape == A.shape[:-1]
        ((3, 4, 4), (2, 1, 4, 5), True),  # batch dims broadcast
        ((4, 4), (2, 3, 4, 1), True),
        ((2, 3, 4, 4), (2, 3, 5, 4), False),
        ((4, 4), (3, 2, 4), False),
    ],
)
def test_solve_matches_torch(a_shape: tuple[int, ...], b_shape: tuple[int, ...], left: bool) -> None:
    compare(
        lambda a, b: LA.solve(a, b, left=left),
        lambda a, b: torch.linalg.solve(a, b, left=left),
        [well(*a_shape), randn(*b_shape, seed=1)],
    )


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_solve_triangular_matches_torch(upper: bool, left: bool, unitriangular: bool) -> None:
    b_shape = (2, 3, 4, 2) if left else (2, 3, 2, 4)
    compare(
        lambda a, b: LA.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular),
        lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular),
        [well(2, 3, 4, 4), randn(*b_shape, seed=1)],
    )


def test_solve_triangular_with_a_zero_pivot_gives_infinities_as_torch() -> None:
    a = np.triu(well(3, 3))
    a[1, 1] = 0.0
    b = randn(3, 2, seed=1)
    ours = LA.solve_triangular(gradtape.tensor(a), gradtape.tensor(b), upper=True).numpy()
    theirs = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=True).numpy()
    np.testing.assert_array_equal(np.isfinite(ours), np.isfinite(theirs))
    np.testing.assert_allclose(ours[2], theirs[2])


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 4, 4)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_torch(shape: tuple[int, ...], upper: bool) -> None:
    compare(lambda a: LA.cholesky(a, upper=upper), lambda a: torch.linalg.cholesky(a, upper=upper), [spd(*shape)])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle_and_its_gradient_is_torchs(upper: bool) -> None:
    """Only the lower (upper) triangle is read; the gradient is PyTorch's symmetric one."""
    a = spd(2, 4, 4) + (np.triu if not upper else np.tril)(randn(4, 4, seed=3), 1 if not upper else -1)
    compare(lambda x: LA.cholesky(x, upper=upper), lambda x: torch.linalg.cholesky(x, upper=upper), [a])
    np.testing.assert_allclose(
        LA.legacy_cholesky(gradtape.tensor(a), upper).numpy(),
        torch.linalg.cholesky(torch.tensor(a), upper=upper).numpy(),
        rtol=1e-12,
    )


def _eigh_loss_terms(res: Any, c: Array) -> tuple[Any, Any]:
    lam, vec = res
    return lam, _gram(vec, c)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch(uplo: str) -> None:
    a = spd(2, 3, 4, 4) + (np.triu if uplo == "L" else np.tril)(randn(4, 4, seed=4), 1 if uplo == "L" else -1)
    c = np.array([0.5, -1.0, 2.0, 0.25])
    compare(
        lambda x: _eigh_loss_terms(LA.eigh(x, UPLO=uplo), c),
        lambda x: _eigh_loss_terms(torch.linalg.eigh(x, UPLO=uplo), c),
        [a],
    )
    res = LA.eigh(gradtape.tensor(a), uplo)
    assert res._fields == ("eigenvalues", "eigenvectors")
    tres = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
    np.testing.assert_allclose(res.eigenvalues.numpy(), tres.eigenvalues.numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.abs(res.eigenvectors.numpy()), np.abs(tres.eigenvectors.numpy()), atol=1e-10)
    compare(lambda x: LA.eigvalsh(x, uplo), lambda x: torch.linalg.eigvalsh(x, UPLO=uplo), [a])
    np.testing.assert_allclose(LA.eigvalsh(gradtape.tensor(a), uplo).numpy(), tres.eigenvalues.numpy(), rtol=1e-10)


def _svd_terms(res: Any, cu: Array, cv: Array) -> tuple[Any, Any, Any]:
    u, s, vh = res
    k = s.shape[-1]
    return _gram(u[..., :k], cu), s, _gram(_mT(vh[..., :k, :]), cv)


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (2, 4, 5), (3, 4, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_torch(shape: tuple[int, ...], full_matrices: bool) -> None:
    a = randn(*shape, seed=5)
    k = min(shape[-2:])
    cu, cv = randn(k, seed=6), randn(k, seed=7)
    compare(
        lambda x: _svd_terms(LA.svd(x, full_matrices), cu, cv),
        lambda x: _svd_terms(torch.linalg.svd(x, full_matrices=full_matrices), cu, cv),
        [a],
    )
    res, tres = (
        LA.svd(gradtape.tensor(a), full_matrices=full_matrices),
        torch.linalg.svd(torch.tensor(a), full_matrices),
    )
    assert res._fields == ("U", "S", "Vh")
    for o, t in zip(res, tres, strict=True):
        assert o.shape == tuple(t.shape)
    u, s, vh = (r.numpy() for r in res)
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-12)
    compare(LA.svdvals, torch.linalg.svdvals, [a])


def _qr_terms(res: Any, cq: Array) -> tuple[Any, Any]:
    q, r = res
    k = min(q.shape[-1], r.shape[-2])
    return _gram(q[..., :k], cq), _mT(r[..., :k, :]) @ r[..., :k, :]


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (2, 4, 5), (4, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_matches_torch(shape: tuple[int, ...], mode: str) -> None:
    a = randn(*shape, seed=8)
    m, n = shape[-2:]
    res, tres = LA.qr(gradtape.tensor(a), mode), torch.linalg.qr(torch.tensor(a), mode=mode)
    assert res._fields == ("Q", "R")
    q, r = res.Q.numpy(), res.R.numpy()
    assert q.shape == tuple(tres.Q.shape) and r.shape == tuple(tres.R.shape)
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_array_equal(np.triu(r), r)
    # Householder QR is unique up to the signs of R's diagonal
    k = min(m, n)
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    td = np.sign(np.diagonal(tres.R.numpy(), axis1=-2, axis2=-1))
    np.testing.assert_allclose(q[..., :k] * d[..., None, :], tres.Q.numpy()[..., :k] * td[..., None, :], atol=1e-10)
    np.testing.assert_allclose(
        r[..., :k, :] * d[..., :, None], tres.R.numpy()[..., :k, :] * td[..., :, None], atol=1e-10
    )
    if mode == "complete" and m > n:
        return  # not differentiable (PyTorch's rule, checked below)
    cq = randn(k, seed=9)
    compare(lambda x: _qr_terms(LA.qr(x, mode), cq), lambda x: _qr_terms(torch.linalg.qr(x, mode=mode), cq), [a])


def test_qr_mode_r_returns_r_only_and_refuses_a_gradient_as_torch() -> None:
    a = randn(2, 5, 3, seed=10)
    q, r = LA.qr(gradtape.tensor(a), mode="r")
    tq, tr = torch.linalg.qr(torch.tensor(a), mode="r")
    assert q.shape == tuple(tq.shape) == (0,)
    np.testing.assert_allclose(np.abs(r.numpy()), np.abs(tr.numpy()), atol=1e-12)
    x = gradtape.tensor(a, requires_grad=True)
    with pytest.raises(TapeError, match=r"linalg\.qr: the derivative of linalg\.qr depends on Q.*mode='r'"):
        LA.qr(x, mode="r").R.sum().backward()
    x = gradtape.tensor(a, requires_grad=True)
    with pytest.raises(TapeError, match=r"not differentiable when mode='complete' and nrows > ncols"):
        LA.qr(x, mode="complete").Q.sum().backward()


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (2, 4, 5), (4, 4)])
def test_pinv_matches_torch(shape: tuple[int, ...]) -> None:
    compare(LA.pinv, torch.linalg.pinv, [randn(*shape, seed=11)])


def test_pinv_tolerances_and_hermitian_match_torch() -> None:
    a = randn(2, 4, 3, seed=12) @ np.diag([1.0, 0.5, 1e-3]) @ randn(3, 3, seed=13)
    tolerances: list[dict[str, Any]] = [{"atol": 0.01}, {"rtol": 0.01}, {"atol": 0.5, "rtol": 1e-3}]
    for kw in tolerances:
        np.testing.assert_allclose(
            LA.pinv(gradtape.tensor(a), **kw).numpy(), torch.linalg.pinv(torch.tensor(a), **kw).numpy(), atol=1e-10
        )
    rt = np.array([0.01, 1e-6])
    np.testing.assert_allclose(
        LA.pinv(gradtape.tensor(a), rtol=gradtape.tensor(rt)).numpy(),
        torch.linalg.pinv(torch.tensor(a), rtol=torch.tensor(rt)).numpy(),
        atol=1e-10,
    )
    s = spd(2, 4, 4, seed=14) - 3.0 * np.eye(4)  # symmetric, indefinite
    compare(lambda x: LA.pinv(x, hermitian=True), lambda x: torch.linalg.pinv(x, hermitian=True), [s])
    assert LA.matrix_rank(gradtape.tensor(a), rtol=0.01).numpy().tolist() == [2, 2]
    np.testing.assert_array_equal(
        LA.matrix_rank(gradtape.tensor(a)).numpy(), torch.linalg.matrix_rank(torch.tensor(a)).numpy()
    )
    np.testing.assert_array_equal(
        LA.matrix_rank(gradtape.tensor(s), hermitian=True).numpy(),
        torch.linalg.matrix_rank(torch.tensor(s), hermitian=True).numpy(),
    )


# ----- norms --------------------------------------------------------------------------------------


@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5, -1, math.inf, -math.inf])
@pytest.mark.parametrize(("dim", "keepdim"), [(None, False), (1, False), ((0, 2), True), ((), False), ([-1], True)])
def test_vector_norm_matches_torch(ord: float, dim: Any, keepdim: bool) -> None:
    compare(
        lambda x: LA.vector_norm(x, ord, dim, keepdim),
        lambda x: torch.linalg.vector_norm(x, ord, dim, keepdim),
        [randn(2, 3, 4, seed=15)],
    )


def test_vector_norm_gradient_at_zero_and_dtype_as_torch() -> None:
    compare(LA.vector_norm, torch.linalg.vector_norm, [np.zeros((2, 3))])
    x32 = randn(3, 4, seed=16).astype(np.float32)
    y = LA.vector_norm(gradtape.tensor(x32), dtype=gradtape.float64)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y.numpy(), torch.linalg.vector_norm(torch.tensor(x32), dtype=torch.float64).numpy())
    assert LA.vector_norm(gradtape.tensor(x32)).dtype == np.float32
    with pytest.raises(DTypeError, match=r"linalg\.vector_norm: .*without narrowing"):
        LA.vector_norm(gradtape.tensor(randn(3)), dtype=gradtape.float32)
    with pytest.raises(TypeError, match=r"linalg\.vector_norm: argument 'ord' must be a number"):
        LA.vector_norm(gradtape.tensor(randn(3)), "fro")  # type: ignore[arg-type]


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
@pytest.mark.parametrize(("dim", "keepdim"), [((-2, -1), False), ((2, 0), True), ((0, 1), False)])
def test_matrix_norm_matches_torch(ord: Any, dim: tuple[int, int], keepdim: bool) -> None:
    compare(
        lambda x: LA.matrix_norm(x, ord, dim, keepdim),
        lambda x: torch.linalg.matrix_norm(x, ord, dim, keepdim),
        [randn(2, 3, 4, seed=17)],
    )


@pytest.mark.parametrize(
    ("shape", "args", "kwargs"),
    [
        ((2, 3, 4), (), {}),  # the flattened 2-norm
        ((3, 4), (2,), {}),  # a 2-D input with ord: the matrix 2-norm
        ((3, 4), ("nuc",), {}),
        ((4,), (3,), {}),  # a 1-D input: a vector norm
        ((2, 3, 4), (), {"dim": 1}),
        ((2, 3, 4), (3,), {"dim": (1,), "keepdim": True}),
        ((2, 3, 4), (-1,), {"dim": (2, 1)}),  # two dims: a matrix norm
        ((2, 3, 4), (None,), {"dim": (0, 2)}),  # ord=None over two dims: the Frobenius norm
        ((2, 3, 4), ("fro",), {"dim": (1, 2), "keepdim": True}),
    ],
)
def test_norm_dispatches_as_torch(shape: tuple[int, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    compare(lambda x: LA.norm(x, *args, **kwargs), lambda x: torch.linalg.norm(x, *args, **kwargs), [randn(*shape)])


def test_cond_matches_torch() -> None:
    a = well(2, 4, 4, seed=18)
    compare(LA.cond, torch.linalg.cond, [a])
    compare(lambda x: LA.cond(x, -2), lambda x: torch.linalg.cond(x, -2), [a])
    compare(LA.cond, torch.linalg.cond, [randn(2, 5, 3, seed=19)])
    for p in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        np.testing.assert_allclose(
            LA.cond(gradtape.tensor(a), p).numpy(), torch.linalg.cond(torch.tensor(a), p).numpy(), rtol=1e-10
        )


# ----- compositions -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 6, -1, -3])
def test_matrix_power_matches_torch(n: int) -> None:
    compare(lambda a: LA.matrix_power(a, n), lambda a: torch.linalg.matrix_power(a, n), [well(2, 3, 3)], rtol=1e-9)


@pytest.mark.parametrize(
    "shapes",
    [
        [(3, 4), (4, 5)],
        [(4,), (4, 5)],
        [(3,), (3, 5), (5, 2), (2,)],
        [(4, 3), (3, 5), (5, 2)],
        [(2, 30), (30, 3), (3, 20)],
        [(4, 3), (3, 5), (5, 2), (2, 6), (6, 1)],
    ],
)
def test_multi_dot_matches_torch(shapes: list[tuple[int, ...]]) -> None:
    arrays = [randn(*s, seed=20 + i) for i, s in enumerate(shapes)]
    compare(lambda *xs: LA.multi_dot(xs), lambda *xs: torch.linalg.multi_dot(xs), arrays)


def test_cross_vecdot_matmul_match_torch() -> None:
    compare(LA.cross, torch.linalg.cross, [randn(4, 3), randn(1, 3, seed=1)])
    compare(
        lambda a, b: LA.cross(a, b, dim=0), lambda a, b: torch.linalg.cross(a, b, dim=0), [randn(3, 4), randn(3, 4)]
    )
    compare(LA.vecdot, torch.linalg.vecdot, [randn(2, 4, 3), randn(4, 3, seed=1)])
    compare(
        lambda a, b: LA.vecdot(a, b, dim=0), lambda a, b: torch.linalg.vecdot(a, b, dim=0), [randn(3, 4), randn(3, 4)]
    )
    compare(LA.matmul, torch.linalg.matmul, [randn(2, 3, 4), randn(4, 5, seed=1)])


# ----- singular matrices --------------------------------------------------------------------------


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix() -> None:
    """The derivative of det is the cofactor matrix, also where det = 0: PyTorch's
    create_graph result (its plain backward returns zeros there, see linalg.det's docstring)."""
    a = np.stack([np.array([[1.0, 2.0], [2.0, 4.0]]), well(2, 2)])
    x = gradtape.tensor(a, requires_grad=True)
    LA.det(x).sum().backward()
    ta = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.linalg.det(ta).sum(), ta, create_graph=True)
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tg.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy()[0], [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


def test_slogdet_of_a_singular_matrix_and_a_gradient_through_sign_only() -> None:
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    x = gradtape.tensor(a, requires_grad=True)
    sign, logabsdet = LA.slogdet(x)
    assert sign.item() == 0.0 and logabsdet.item() == -math.inf
    logabsdet.backward()
    assert x.grad is not None and np.isinf(x.grad.numpy()).all()  # PyTorch's is infinite too
    x = gradtape.tensor(well(3, 3), requires_grad=True)
    LA.slogdet(x).sign.sum().backward()  # the sign is piecewise constant: a zero gradient
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 3)))


def _torch_message(fn: Fn, *args: Any) -> str:
    with pytest.raises(RuntimeError) as info:
        fn(*args)
    return str(info.value)


def _batch_element(message: str) -> str | None:
    found = re.search(r"\(Batch element (\d+)\)", message)
    return found.group(1) if found else None


@pytest.mark.parametrize("batched", [False, True])
def test_singular_inv_and_solve_raise_pytorchs_linalg_error(batched: bool) -> None:
    a = well(2, 3, 3, 3) if batched else well(3, 3)
    if batched:
        a[1, 2, 1] = 0.0  # batch element 5, row 1 zero
    else:
        a[1] = 0.0
    b = randn(3, seed=1)
    for ours, theirs, what in (
        (lambda: LA.inv(gradtape.tensor(a)), lambda: torch.linalg.inv(torch.tensor(a)), "inversion could not"),
        (
            lambda: LA.solve(gradtape.tensor(a), gradtape.tensor(b)),
            lambda: torch.linalg.solve(torch.tensor(a), torch.tensor(b)),
            "solver failed",
        ),
    ):
        with pytest.raises(LA.LinAlgError) as info:
            ours()
        err = info.value
        assert isinstance(err, RuntimeError) and isinstance(err, np.linalg.LinAlgError)
        assert isinstance(err, GradtapeError)
        msg = str(err)
        assert msg.startswith("linalg.") and what in msg and str(a.shape) in msg
        tmsg = _torch_message(theirs)
        assert isinstance(torch.linalg.LinAlgError, type) and issubclass(torch.linalg.LinAlgError, RuntimeError)
        assert _batch_element(msg) == _batch_element(tmsg), (msg, tmsg)
    tmsg = _torch_message(lambda: torch.linalg.inv(torch.tensor(a)))
    with pytest.raises(LA.LinAlgError) as info:
        LA.inv(gradtape.tensor(a))
    pivot = re.compile(r"The diagonal element (\d+) is zero")
    found, tfound = pivot.search(str(info.value)), pivot.search(tmsg)
    assert found is not None and tfound is not None and found.group(1) == tfound.group(1)
    assert str(info.value).startswith("linalg.inv: (Batch element 5): " if batched else "linalg.inv: The diagonal")


def test_solve_names_the_batch_element_of_the_broadcast_batch() -> None:
    a = well(3, 3, 3)
    a[2] = 0.0
    b = randn(2, 1, 3, 2, seed=1)
    tmsg = _torch_message(lambda: torch.linalg.solve(torch.tensor(a), torch.tensor(b)))
    with pytest.raises(LA.LinAlgError) as info:
        LA.solve(gradtape.tensor(a), gradtape.tensor(b))
    assert _batch_element(str(info.value)) == _batch_element(tmsg) == "2"


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_of_a_matrix_that_is_not_positive_definite(upper: bool) -> None:
    a = spd(2, 3, 4, 4)
    a[1, 0] = np.diag([1.0, 2.0, -1.0, 3.0])  # batch element 3, leading minor of order 3
    with pytest.raises(LA.LinAlgError) as info:
        LA.cholesky(gradtape.tensor(a), upper=upper)
    msg = str(info.value)
    tmsg = _torch_message(lambda: torch.linalg.cholesky(torch.tensor(a), upper=upper))
    assert _batch_element(msg) == _batch_element(tmsg) == "3"
    order = re.search(r"leading minor of order (\d+)", msg)
    torder = re.search(r"leading minor of order (\d+)", tmsg)
    assert order is not None and torder is not None and order.group(1) == torder.group(1) == "3"
    assert msg.startswith("linalg.cholesky: ") and "(2, 3, 4, 4)" in msg
    with pytest.raises(LA.LinAlgError, match=r"linalg\.cholesky: The factorization .*order 1 is not"):
        LA.cholesky(gradtape.tensor(-np.eye(3)))


# ----- bad input ----------------------------------------------------------------------------------

SQUARE_OPS: list[tuple[str, Fn]] = [
    ("linalg.inv", LA.inv),
    ("linalg.det", LA.det),
    ("linalg.slogdet", LA.slogdet),
    ("linalg.cholesky", LA.cholesky),
    ("linalg.eigh", LA.eigh),
    ("linalg.eigvalsh", LA.eigvalsh),
    ("linalg.matrix_power", lambda a: LA.matrix_power(a, 2)),
]
MATRIX_OPS: list[tuple[str, Fn]] = [
    *SQUARE_OPS,
    ("linalg.svd", LA.svd),
    ("linalg.svdvals", LA.svdvals),
    ("linalg.qr", LA.qr),
    ("linalg.pinv", LA.pinv),
    ("linalg.matrix_norm", LA.matrix_norm),
    ("linalg.solve", lambda a: LA.solve(a, a)),
]


@pytest.mark.parametrize(("name", "fn"), SQUARE_OPS, ids=[n for n, _ in SQUARE_OPS])
def test_non_square_matrices_are_refused(name: str, fn: Fn) -> None:
    with pytest.raises(
        ShapeError, match=rf"{re.escape(name)}: A must be batches of square matrices.*3 by 4.*\(2, 3, 4\)"
    ):
        fn(gradtape.tensor(randn(2, 3, 4)))


@pytest.mark.parametrize(("name", "fn"), MATRIX_OPS, ids=[n for n, _ in MATRIX_OPS])
def test_too_few_dims_and_integer_tensors_are_refused(name: str, fn: Fn) -> None:
    with pytest.raises(ShapeError, match=rf"{re.escape(name)}: .*at least 2 dimensions.*\(3,\)"):
        fn(gradtape.tensor(randn(3)))
    with pytest.raises(DTypeError, match=rf"{re.escape(name)}: .*int64.*float32 or float64"):
        fn(gradtape.tensor(np.eye(3, dtype=np.int64)))
    with pytest.raises(DTypeError, match=rf"{re.escape(name)}: .*bool"):
        fn(gradtape.tensor(np.eye(3, dtype=bool)))
    with pytest.raises(TypeError, match=rf"{re.escape(name)}: A must be a Tensor, got ndarray"):
        fn(np.eye(3))


def test_bad_arguments_raise_naming_the_function() -> None:
    a, x = gradtape.tensor(well(3, 3)), gradtape.tensor(randn(2, 3, 4))
    cases: list[tuple[Fn, type[Exception], str]] = [
        (lambda: LA.solve(a, gradtape.tensor(randn(4))), ShapeError, r"linalg\.solve: incompatible shapes .*AX = B"),
        (lambda: LA.solve(a, gradtape.tensor(randn(3)), left=False), ShapeError, r"XA = B"),
        (lambda: LA.solve(a, gradtape.tensor(randn(3, 2).astype(np.float32))), DTypeError, r"linalg\.solve: dtypes"),
        (lambda: LA.solve(gradtape.tensor(well(2, 3, 3)), gradtape.tensor(randn(3, 3, 1))), ShapeError, "broadcast"),
        (lambda: LA.solve_triangular(a, gradtape.tensor(randn(3)), upper=True), ShapeError, "at least 2 dimensions"),
        (lambda: LA.eigh(a, UPLO="X"), ValueError, r"linalg\.eigh: expected UPLO argument to be 'L' or 'U'"),
        (lambda: LA.qr(a, mode="x"), ValueError, r"linalg\.qr: received unrecognized mode 'x'"),
        (lambda: LA.matrix_norm(x, 3), ValueError, r"linalg\.matrix_norm: Order 3 not supported"),
        (lambda: LA.matrix_norm(x, "abc"), ValueError, r"Order abc not supported"),
        (lambda: LA.matrix_norm(x, dim=(1, 1)), ShapeError, r"linalg\.matrix_norm: dims must be different"),
        (lambda: LA.matrix_norm(x, dim=(1, 3)), ShapeError, r"dim 3 is out of range"),
        (lambda: LA.matrix_norm(gradtape.tensor(randn(3))), ShapeError, r"at least 2 dimensions"),
        (lambda: LA.norm(x, 2), ShapeError, r"linalg\.norm: if dim is not specified but ord is.*3-D"),
        (lambda: LA.norm(x, "fro"), ShapeError, r"linalg\.norm: if dim is not specified"),
        (lambda: LA.norm(x, dim=(0, 1, 2)), ShapeError, r"linalg\.norm: if dim is specified, it must be of length 1"),
        (lambda: LA.vector_norm(x, 2, dim=3), ShapeError, r"linalg\.vector_norm: axis 3 is out of range"),
        (lambda: LA.matrix_power(a, 2.0), TypeError, r"linalg\.matrix_power: argument 'n' must be int"),  # type: ignore[arg-type]
        (lambda: LA.multi_dot([a]), ValueError, r"linalg\.multi_dot: expected at least 2 tensors"),
        (lambda: LA.multi_dot([x, a]), ShapeError, r"the first tensor must be 1-D or 2-D"),
        (
            lambda: LA.multi_dot([a, gradtape.tensor(randn(4, 4))]),
            ShapeError,
            r"tensors 0 and 1 .*cannot be multiplied",
        ),
        (
            lambda: LA.cross(gradtape.tensor(randn(3, 4)), gradtape.tensor(randn(3, 4))),
            ShapeError,
            r"must have length 3",
        ),
        (lambda: LA.cross(gradtape.tensor(randn(3)), gradtape.tensor(randn(2, 3))), ShapeError, r"same number of dim"),
        (lambda: LA.pinv(a, atol="x"), TypeError, r"linalg\.pinv: atol must be a number or a tensor"),  # type: ignore[arg-type]
        (lambda: LA.cond(a, 3), ValueError, r"linalg\.cond: Order 3 not supported"),
        (lambda: LA.cond(x, 1), ShapeError, r"linalg\.cond: A must be batches of square matrices"),
    ]
    for fn, kind, pattern in cases:
        with pytest.raises(kind, match=pattern):
            fn()


# ----- second derivatives against torch.func.hessian --------------------------------------------


def _hessian(f: Fn, x0: Array) -> Array:
    """Rows of the Hessian of ``f`` at ``x0``: ``d/dx (df/dx . e_i)`` with the first gradient
    recorded (``create_graph``); also checks that the second rules' first gradient equals the
    first rules' one."""
    n = x0.size
    rows = []
    for i in range(n):
        x = dev.tensor(x0)
        (gx,) = grad(f(x.leaky_trace()), x, create_graph=True)
        assert gx is not None
        if i == 0:
            (g1,) = grad(f(x.leaky_trace()), x)
            assert g1 is not None
            np.testing.assert_allclose(gx.numpy(), g1.numpy(), rtol=1e-10, atol=1e-12)
        e = np.zeros(x0.shape)
        e.flat[i] = 1.0
        (row,) = grad((gx * dev.tensor(e)).sum(), x, allow_unused=True)
        rows.append(np.zeros(n) if row is None else row.numpy().ravel())
    return np.stack(rows)


A0 = well(3, 3, seed=30)
B0 = randn(3, 2, seed=31)
W0 = randn(3, 3, seed=32)
R0 = randn(4, 3, seed=33)


def _w(x: Any, a: Array = W0) -> Any:
    return _const(x, a)


def _lin(x: Any) -> Any:
    """``A`` of a factorization from the variables (an SPD matrix for cholesky / eigh)."""
    return x @ _mT(x) + _w(x, 3.0 * np.eye(3))


def _eigh_fn(x: Any) -> Any:
    lam, vec = (LA.eigh if _is_ours(x) else torch.linalg.eigh)(_lin(x))
    return (_gram(vec, np.array([1.0, -0.5, 2.0])) * _w(x)).sum() + (lam * lam).sum()


def _qr_fn(x: Any) -> Any:
    q, r = (LA.qr if _is_ours(x) else torch.linalg.qr)(x)
    return (_gram(q, np.array([1.0, -0.5, 2.0])) * _w(x, R0 @ R0.T)).sum() + (r**3).sum()


HESSIANS: dict[str, tuple[Fn, Fn, Array]] = {
    "inv": (lambda x: (LA.inv(x) * _w(x)).sum(), lambda x: (torch.linalg.inv(x) * _w(x)).sum(), A0),
    "inv_batched": (
        lambda x: (LA.inv(x.reshape((2, 2, 2))) ** 2).sum(),
        lambda x: (torch.linalg.inv(x.reshape(2, 2, 2)) ** 2).sum(),
        well(2, 2, 2, seed=34).ravel(),
    ),
    "det": (lambda x: LA.det(x) ** 2, lambda x: torch.linalg.det(x) ** 2, A0),
    "det_batched": (
        lambda x: (LA.det(x.reshape((3, 2, 2))) ** 3).sum(),
        lambda x: (torch.linalg.det(x.reshape(3, 2, 2)) ** 3).sum(),
        randn(12, seed=35),
    ),
    "slogdet": (lambda x: LA.slogdet(x).logabsdet ** 2, lambda x: torch.linalg.slogdet(x).logabsdet ** 2, A0),
    "solve_A": (
        lambda x: (LA.solve(x, _w(x, B0)) ** 2).sum(),
        lambda x: (torch.linalg.solve(x, _w(x, B0)) ** 2).sum(),
        A0,
    ),
    "solve_B": (
        lambda x: (LA.solve(_w(x, A0), x) ** 3).sum(),
        lambda x: (torch.linalg.solve(_w(x, A0), x) ** 3).sum(),
        B0,
    ),
    "solve_right": (
        lambda x: (LA.solve(x, _w(x, B0.T), left=False) ** 2).sum(),
        lambda x: (torch.linalg.solve(x, _w(x, B0.T), left=False) ** 2).sum(),
        A0,
    ),
    "solve_triangular": (
        lambda x: (LA.solve_triangular(x, _w(x, B0), upper=False) ** 2).sum(),
        lambda x: (torch.linalg.solve_triangular(x, _w(x, B0), upper=False) ** 2).sum(),
        A0,
    ),
    "cholesky": (
        lambda x: (LA.cholesky(_lin(x)) * _w(x)).sum() ** 2,
        lambda x: (torch.linalg.cholesky(_lin(x)) * _w(x)).sum() ** 2,
        A0,
    ),
    "cholesky_upper": (
        lambda x: (LA.cholesky(_lin(x), upper=True) ** 3).sum(),
        lambda x: (torch.linalg.cholesky(_lin(x), upper=True) ** 3).sum(),
        A0,
    ),
    "vector_norm": (
        lambda x: LA.vector_norm(x, dim=1).sum() ** 2 + LA.vector_norm(x, 3) * LA.vector_norm(x, 1.5),
        lambda x: (
            torch.linalg.vector_norm(x, dim=1).sum() ** 2
            + torch.linalg.vector_norm(x, 3) * torch.linalg.vector_norm(x, 1.5)
        ),
        A0,
    ),
    "eigh": (_eigh_fn, _eigh_fn, A0),
    "svdvals_nuc": (
        lambda x: LA.matrix_norm(x, "nuc") ** 2 + (LA.svdvals(x) ** 3).sum(),
        lambda x: torch.linalg.matrix_norm(x, "nuc") ** 2 + (torch.linalg.svdvals(x) ** 3).sum(),
        R0,
    ),
    "qr": (_qr_fn, _qr_fn, R0),
    "pinv": (lambda x: (LA.pinv(x) ** 3).sum(), lambda x: (torch.linalg.pinv(x) ** 3).sum(), R0),
    "pinv_wide": (lambda x: (LA.pinv(x) ** 3).sum(), lambda x: (torch.linalg.pinv(x) ** 3).sum(), R0.T.copy()),
}


@pytest.mark.parametrize("name", list(HESSIANS))
def test_hessian_matches_torch(name: str) -> None:
    ours, theirs, x0 = HESSIANS[name]
    want = torch.func.hessian(theirs)(torch.tensor(x0)).numpy().reshape(x0.size, x0.size)
    np.testing.assert_allclose(_hessian(ours, x0), want, rtol=1e-9, atol=1e-10)


def test_svd_hessian_matches_torch() -> None:
    def f(x: Any) -> Any:
        u, s, vh = (LA.svd if _is_ours(x) else torch.linalg.svd)(x, full_matrices=False)
        c = np.array([1.0, -0.5, 2.0])
        return (_gram(u, c) * _w(x, R0 @ R0.T)).sum() + (s**3).sum() + (_gram(_mT(vh), c) * _w(x)).sum()

    want = torch.func.hessian(f)(torch.tensor(R0)).numpy().reshape(R0.size, R0.size)
    np.testing.assert_allclose(_hessian(f, R0), want, rtol=1e-9, atol=1e-10)


def test_third_derivative_of_det_matches_torch() -> None:
    """d^3/dt^3 det(A + t E) through three nested gradients (the second rule's own ops)."""
    e = W0

    def f(lib: Any, t: Any) -> Any:
        return lib.det(lib.inv(_const(t, A0) + t * _const(t, e)))

    t = dev.tensor(np.array(0.3))
    (d1,) = grad(f(LA, t.leaky_trace()), t, create_graph=True)
    assert d1 is not None
    (d2,) = grad(d1, t, create_graph=True)
    assert d2 is not None
    (d3,) = grad(d2, t)
    assert d3 is not None
    tt = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    (t1,) = torch.autograd.grad(f(torch.linalg, tt), tt, create_graph=True)
    (t2,) = torch.autograd.grad(t1, tt, create_graph=True)
    (t3,) = torch.autograd.grad(t2, tt)
    np.testing.assert_allclose([d1.item(), d2.item(), d3.item()], [t1.item(), t2.item(), t3.item()], rtol=1e-9)


# ----- gradcheck, float32, the recording model ------------------------------------------------------

GRADCHECKS: dict[str, tuple[Fn, list[Array]]] = {
    "inv": (LA.inv, [well(2, 3, 3)]),
    "inv_non_contiguous": (LA.inv, [well(3, 3).T]),
    "det": (LA.det, [well(2, 3, 3)]),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, [well(2, 3, 3)]),
    "solve": (LA.solve, [well(2, 3, 3), randn(3, 2, seed=1)]),
    "solve_vector": (LA.solve, [well(2, 3, 3), randn(3, seed=1)]),
    "solve_triangular": (lambda a, b: LA.solve_triangular(a, b, upper=True, left=False), [well(3, 3), randn(2, 3)]),
    "cholesky": (lambda a: LA.cholesky(a @ _mT(a) + gradtape.tensor(3.0 * np.eye(3))), [well(2, 3, 3)]),
    "eigh": (lambda a: _gram(LA.eigh(a + _mT(a)).eigenvectors, np.array([1.0, 2.0, -1.0])), [randn(3, 3)]),
    "svd": (lambda a: _svd_terms(LA.svd(a), np.array([1.0, 2.0, -1.0]), np.array([0.5, 1.0, 2.0]))[0], [randn(4, 3)]),
    "svdvals": (LA.svdvals, [randn(2, 3, 4)]),
    "qr": (lambda a: LA.qr(a).R, [randn(4, 3)]),
    "pinv": (LA.pinv, [randn(3, 4)]),
    "matrix_norm_nuc": (lambda a: LA.matrix_norm(a, "nuc"), [randn(2, 3, 4)]),
    "vector_norm": (lambda a: LA.vector_norm(a, 3, dim=-1), [randn(2, 3, 4)]),
}


@pytest.mark.parametrize("name", list(GRADCHECKS))
def test_gradcheck(name: str) -> None:
    fn, inputs = GRADCHECKS[name]
    assert gradcheck(fn, [dev.tensor(a) for a in inputs], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize(
    ("name", "fn", "make"),
    [
        ("inv", LA.inv, well),
        ("det", LA.det, well),
        ("cholesky", LA.cholesky, spd),
        ("eigvalsh", LA.eigvalsh, spd),
        ("svdvals", LA.svdvals, well),
        ("pinv", LA.pinv, well),
        ("solve", lambda a: LA.solve(a, a[..., 0]), well),
    ],
)
def test_float32_stays_float32(name: str, fn: Fn, make: Callable[..., Array]) -> None:
    a = make(2, 3, 3)
    x = gradtape.tensor(a.astype(np.float32), requires_grad=True)
    y = fn(x)
    assert y.dtype == np.float32, name
    np.testing.assert_allclose(y.numpy(), fn(gradtape.tensor(a)).numpy(), rtol=1e-4, atol=1e-5)
    y.sum().backward()
    assert x.grad is not None and x.grad.dtype == np.float32


def test_recording_follows_the_one_rule() -> None:
    """Nothing is recorded under no_grad or for constants; a context tape's watched input and
    dfdx's traced input get the same gradient as PyTorch's ``.grad``."""
    a = well(3, 3)
    x = gradtape.tensor(a, requires_grad=True)
    with gradtape.no_grad():
        y = LA.inv(x)
    assert not y.requires_grad
    assert not LA.det(gradtape.tensor(a)).requires_grad
    ex = gradtape.tensor(a, requires_grad=True)
    LA.det(LA.inv(ex)).backward()
    with gradtape.GradientTape() as tape:
        w = gradtape.tensor(a)
        tape.watch(w)
        z = LA.det(LA.inv(w))
    (gw,) = tape.gradient(z, [w])
    t = dev.tensor(a)
    gd = LA.det(LA.inv(t.leaky_trace())).backward()  # dfdx's spelling
    assert ex.grad is not None
    np.testing.assert_allclose(gw.numpy(), ex.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gd.get(t).numpy(), ex.grad.numpy(), rtol=1e-12)
    ta = torch.tensor(a, requires_grad=True)
    torch.linalg.det(torch.linalg.inv(ta)).backward()
    np.testing.assert_allclose(ex.grad.numpy(), ta.grad.numpy(), rtol=1e-10)


CAPTURED: dict[str, Fn] = {
    "inv": lambda a: LA.inv(a).sum(),
    "det": lambda a: (LA.det(a) ** 2).sum() * 1e-3,
    "slogdet": lambda a: LA.slogdet(a).logabsdet.sum(),
    "solve": lambda a: LA.solve(a, a[..., 0]).sum(),
    "cholesky": lambda a: LA.cholesky(a @ _mT(a)).sum(),
    "eigh": lambda a: LA.eigh(a + _mT(a)).eigenvalues.sum(),
    "svd": lambda a: LA.svd(a).S.sum(),
    "qr": lambda a: (LA.qr(a).R ** 2).sum(),
    "pinv": lambda a: LA.pinv(a).sum(),
    "solve_triangular": lambda a: LA.solve_triangular(a, a, upper=True).sum(),
    "matrix_norm_nuc": lambda a: LA.matrix_norm(a, "nuc").sum(),
    "matrix_power": lambda a: LA.matrix_power(a, -3).sum(),
}


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name", list(CAPTURED))
def test_capture_replays_inference_and_training_steps(name: str) -> None:
    """``gradtape.capture`` replays the ops (no eager fallback, whose warning is an error
    here): the same values bit for bit, and a training step moves the weights as eager ones."""
    fn = CAPTURED[name]
    rng = _rng(40)
    predict = gradtape.capture(fn)
    for _ in range(3):
        a = rng.standard_normal((2, 3, 3)) + 3.0 * np.eye(3)
        np.testing.assert_array_equal(predict(gradtape.tensor(a)).numpy(), fn(gradtape.tensor(a)).numpy())
    start = rng.standard_normal((2, 3, 3)) + 3.0 * np.eye(3)
    w, w_eager = gradtape.tensor(start, requires_grad=True), gradtape.tensor(start.copy(), requires_grad=True)
    opt, opt_eager = gradtape.optim.SGD([w], lr=0.01), gradtape.optim.SGD([w_eager], lr=0.01)

    def step(x: Tensor[Any, Any]) -> Any:
        opt.zero_grad()
        loss = fn(w * x)
        loss.backward()
        opt.step()
        return loss

    train = gradtape.capture(step)
    for _ in range(3):
        x = 1.0 + 0.1 * rng.standard_normal((2, 3, 3))
        train(gradtape.tensor(x))
        opt_eager.zero_grad()
        fn(w_eager * gradtape.tensor(x)).backward()
        opt_eager.step()
    np.testing.assert_array_equal(w.numpy(), w_eager.numpy())


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0)])
def test_empty_batches_and_matrices_as_torch(shape: tuple[int, ...]) -> None:
    for ours, theirs in (
        (LA.inv, torch.linalg.inv),
        (LA.det, torch.linalg.det),
        (LA.cholesky, torch.linalg.cholesky),
        (LA.pinv, torch.linalg.pinv),
        (LA.svdvals, torch.linalg.svdvals),
    ):
        x = gradtape.tensor(np.zeros(shape), requires_grad=True)
        y = ours(x)
        assert y.shape == tuple(theirs(torch.zeros(shape, dtype=torch.float64)).shape)
        y.sum().backward()
        assert x.grad is not None and x.grad.shape == shape


def test_pytorchs_top_level_spellings() -> None:
    a = randn(2, 4, 3, seed=41)
    np.testing.assert_allclose(
        LA.pinverse(gradtape.tensor(a), 0.1).numpy(), torch.pinverse(torch.tensor(a), 0.1).numpy(), atol=1e-12
    )
    s = spd(3, 3)
    np.testing.assert_allclose(
        LA.legacy_cholesky(gradtape.tensor(s), True).numpy(), torch.linalg.cholesky(torch.tensor(s), upper=True).numpy()
    )
    compare(LA.inverse, torch.inverse, [well(3, 3)])
