"""L-BFGS with PyTorch's ``torch.optim.LBFGS`` interface: ``opt.step(closure)`` re-evaluates the
model through the closure as often as the method needs and returns the first loss.

The algorithm (Nocedal 1980; Liu & Nocedal 1989, as in Schmidt's minFunc) works on the
parameters flattened into one vector ``x`` of their common dtype:

- direction: ``d = -H g``, with ``H g`` from the two-loop recursion over the last
  ``history_size`` pairs ``s = x_{k+1} - x_k``, ``y = g_{k+1} - g_k`` (a pair is kept only when
  ``y.s > 1e-10``) and initial scaling ``H_0 = (y.s) / (y.y)`` of the newest pair; the first
  iteration of a run takes ``d = -g`` and the step ``min(1, 1 / sum|g|) * lr``, later ones ``lr``;
- step: ``x += t d`` with ``t = lr`` (``line_search_fn=None``), or ``t`` from a line search
  meeting the strong Wolfe conditions (``f(x + t d) <= f + 1e-4 t g.d`` and
  ``|g(x + t d).d| <= 0.9 |g.d|``; bracketing then zooming with safeguarded cubic
  interpolation, Nocedal & Wright 2006, algorithms 3.5 and 3.6);
- stop after ``max_iter`` iterations or ``max_eval`` evaluations, or when
  ``max|g| <= tolerance_grad``, ``max|t d| <= tolerance_change``, the loss changed by less
  than ``tolerance_change`` or ``g.d > -tolerance_change``.

The state (direction, step, history, previous gradient and loss) carries over from one
``step`` call to the next, as PyTorch's does.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from gradtape.errors import DTypeError, ShapeError
from gradtape.gradients import Gradients
from gradtape.optim._checks import Check, check_line_search, check_nonneg, check_positive_int
from gradtape.optim.optimizers import Array, Optimizer, ParamsT
from gradtape.tape import note_writes

__all__ = ["LBFGS"]

Objective = Callable[[float], tuple[float, Array]]
"""``phi(t)``: the loss and the flat gradient at ``x + t d`` (the parameters restored after)."""


def _cubic_min(
    x1: float, f1: float, g1: float, x2: float, f2: float, g2: float, bounds: tuple[float, float] | None = None
) -> float:
    """The minimiser of the cubic through ``(x1, f1)`` and ``(x2, f2)`` with slopes ``g1``, ``g2``,
    clipped to ``bounds`` (default: between ``x1`` and ``x2``); the bounds' midpoint when the
    cubic has no minimum (Nocedal & Wright 2006, eq. 3.59)."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    theta = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2)
    disc = theta * theta - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    gamma = math.sqrt(disc)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + gamma - theta) / (g2 - g1 + 2.0 * gamma))
    else:
        x = x1 - (x1 - x2) * ((g1 + gamma - theta) / (g1 - g2 + 2.0 * gamma))
    return min(max(x, lo), hi)


class _Point:
    """A trial step ``t`` of the line search with its loss ``f``, flat gradient ``g`` and slope
    ``gtd = g.d``."""

    __slots__ = ("f", "g", "gtd", "t")

    def __init__(self, t: float, f: float, g: Array, gtd: float) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(
    phi: Objective,
    d: Array,
    t: float,
    f0: float,
    g0: Array,
    gtd0: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Array, float, int]:
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions, found with at most
    ``max_ls`` evaluations after the first: ``(loss, flat gradient, t, evaluations)``.

    Bracketing phase (Nocedal & Wright algorithm 3.5): from ``t``, extrapolate by cubic
    interpolation within ``[t + 0.01 (t - t_prev), 10 t]`` until the sufficient-decrease
    condition fails, the loss stops falling, the curvature condition holds (done) or the slope
    turns non-negative. Zoom phase (algorithm 3.6): shrink the bracket by cubic interpolation,
    kept at least 10% of the bracket away from its ends when progress is slow, until the
    conditions hold, the bracket is shorter than ``tolerance_change / max|d|``, or the
    evaluations run out. Returns the bracket's lower-loss end.
    """
    d_norm = float(np.abs(d).max())
    start = _Point(0.0, f0, g0, gtd0)
    f, g = phi(t)
    evals = 1
    cur = _Point(t, f, g, g.dot(d))
    prev = start
    bracket: list[_Point] | None = None
    done = False
    it = 0
    while it < max_ls:
        if cur.f > f0 + c1 * cur.t * gtd0 or (it > 1 and cur.f >= prev.f):
            bracket = [prev, cur]
            break
        if abs(cur.gtd) <= -c2 * gtd0:
            bracket = [cur]
            done = True
            break
        if cur.gtd >= 0:
            bracket = [prev, cur]
            break
        lo_step, hi_step = cur.t + 0.01 * (cur.t - prev.t), cur.t * 10
        t_next = _cubic_min(prev.t, prev.f, prev.gtd, cur.t, cur.f, cur.gtd, bounds=(lo_step, hi_step))
        prev = cur
        f, g = phi(t_next)
        evals += 1
        cur = _Point(t_next, f, g, g.dot(d))
        it += 1
    if it == max_ls:  # ran out while extrapolating: bracket the start and the last trial
        bracket = [start, cur]
    assert bracket is not None
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    stalled = False
    while not done and it < max_ls:
        a, b = bracket[0], bracket[1]
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        t_new = _cubic_min(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        margin = 0.1 * (top - bottom)
        if min(top - t_new, t_new - bottom) < margin:  # too close to an end of the bracket
            if stalled or t_new >= top or t_new <= bottom:
                t_new = top - margin if abs(t_new - top) < abs(t_new - bottom) else bottom + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f, g = phi(t_new)
        evals += 1
        it += 1
        trial = _Point(t_new, f, g, g.dot(d))
        if trial.f > f0 + c1 * trial.t * gtd0 or trial.f >= bracket[low].f:
            bracket[high] = trial
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(trial.gtd) <= -c2 * gtd0:
                done = True
            elif trial.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = trial
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    """L-BFGS (limited-memory BFGS, Liu & Nocedal 1989) with PyTorch's ``torch.optim.LBFGS``
    arguments, defaults, state and iterates; see the module docstring for the method.

    Args:
        params: the parameters (one group only, as PyTorch), all float32 or all float64.
        lr: the step (default 1).
        max_iter: iterations per :meth:`step` (default 20).
        max_eval: closure evaluations per :meth:`step` (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when ``max|g| <= tolerance_grad`` (default 1e-7).
        tolerance_change: stop when the loss or the parameters change by less (default 1e-9).
        history_size: correction pairs kept (default 100).
        line_search_fn: ``None`` (a fixed step) or ``"strong_wolfe"``.

    State (``state[0]``, PyTorch's keys): ``func_evals``, ``n_iter``, ``d``, ``t``,
    ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``, ``al``.

    Raises:
        ValueError: parameter groups; ``lr`` or a tolerance negative or not finite;
            ``max_iter``, ``max_eval`` or ``history_size`` not a positive int;
            ``line_search_fn`` other than ``None``/``"strong_wolfe"`` (each naming ``LBFGS``
            and the argument); and as :class:`~gradtape.optim.Optimizer`.
        DTypeError: the parameters mix float32 and float64.
    """

    name = "LBFGS"
    _state_keys = (
        "func_evals",
        "n_iter",
        "d",
        "t",
        "old_dirs",
        "old_stps",
        "ro",
        "H_diag",
        "prev_flat_grad",
        "prev_loss",
        "al",
    )
    _hyper: ClassVar[dict[str, Check]] = {
        "lr": check_nonneg,
        "max_iter": check_positive_int,
        "max_eval": check_positive_int,
        "tolerance_grad": check_nonneg,
        "tolerance_change": check_nonneg,
        "history_size": check_positive_int,
        "line_search_fn": check_line_search,
    }
    max_iter: int
    max_eval: int
    tolerance_grad: float
    tolerance_change: float
    history_size: int
    line_search_fn: str | None

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if max_eval is None and isinstance(max_iter, int) and not isinstance(max_iter, bool):
            max_eval = max(max_iter * 5 // 4, 1)
        super().__init__(
            params,
            {
                "lr": lr,
                "max_iter": max_iter,
                "max_eval": max_eval,
                "tolerance_grad": tolerance_grad,
                "tolerance_change": tolerance_change,
                "history_size": history_size,
                "line_search_fn": line_search_fn,
            },
        )
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups): give one group")
        dtypes = sorted({str(p.dtype) for p in self.params})
        if len(dtypes) > 1:
            raise DTypeError(f"LBFGS: the parameters mix dtypes {dtypes}; give all float32 or all float64")

    # ----- the flat vector view of the parameters -------------------------------------------

    def _flat_grad(self, store: Gradients | None) -> Array:
        """The gradients of every parameter in one flat array (zeros where there is none)."""
        parts = []
        stored = None if store is None else store._data
        for i, p in enumerate(self.params):
            if stored is not None:
                g = stored.get(p.id)
            else:
                gt = getattr(p, "_grad", None)
                g = None if gt is None else gt.data
            if g is None:
                parts.append(np.zeros(p.data.size, p.dtype))
                continue
            if g.shape != p.shape:
                raise ShapeError(f"LBFGS.step: params[{i}]'s gradient shape {g.shape} != parameter shape {p.shape}")
            if g.dtype != p.dtype:
                raise DTypeError(f"LBFGS.step: params[{i}]'s gradient dtype {g.dtype} != parameter dtype {p.dtype}")
            parts.append(g.reshape(-1))
        return np.concatenate(parts)

    def _add(self, t: Any, d: Array) -> None:
        """``x += t * d`` on the parameters in place."""
        off = 0
        for p in self.params:
            n = p.data.size
            p.data += t * d[off : off + n].reshape(p.shape)
            off += n
        note_writes(*(p.data for p in self.params))

    def _evaluate(self, closure: Callable[[], Any]) -> tuple[Any, float, Array]:
        """Call the closure: ``(what it returned as the loss, the loss as a float, flat gradient)``."""
        out = closure()
        store: Gradients | None = None
        if isinstance(out, tuple):
            if len(out) != 2 or not isinstance(out[1], Gradients):
                raise TypeError(
                    "LBFGS.step: the closure must return the loss, or (loss, the Gradients store "
                    f"backward() returned); got a tuple of {len(out)}"
                )
            out, store = out
        try:
            value = float(out)
        except (TypeError, ValueError):
            raise TypeError(
                f"LBFGS.step: the closure must return the loss (a scalar tensor or number), got {type(out).__name__}"
            ) from None
        return out, value, self._flat_grad(store)

    def _directional(self, closure: Callable[[], Any], x0: list[Array], d: Array, t: float) -> tuple[float, Array]:
        """The loss and flat gradient at ``x0 + t d``; the parameters are put back to ``x0``."""
        self._add(t, d)
        _, value, grad = self._evaluate(closure)
        for p, x in zip(self.params, x0, strict=True):
            p.data[...] = x
        note_writes(*(p.data for p in self.params))
        return value, grad

    # ----- the method -----------------------------------------------------------------------

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations: PyTorch's ``optimizer.step(closure)``.

        Args:
            closure: re-evaluates the model and returns the loss, as in PyTorch::

                def closure():
                    opt.zero_grad()
                    loss = loss_fn(model(x), y)
                    loss.backward()        # fills each parameter's .grad
                    return loss

            or, with a :class:`~gradtape.Gradients` store, returns ``(loss, grads)`` with
            ``grads`` what ``loss.backward()`` returned. A parameter with no gradient counts
            as a zero gradient.

        Returns:
            What the closure returned as the loss on its first call (before any update).

        Raises:
            TypeError: ``closure`` is not callable or returns something else.
            ShapeError, DTypeError: a gradient does not match its parameter.
        """
        if not callable(closure):
            raise TypeError(
                f"LBFGS.step: closure must be a callable that re-evaluates the model and returns the loss, "
                f"got {type(closure).__name__}"
            )
        group = self.param_groups[0]
        lr = group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history, line_search = group["history_size"], group["line_search_fn"]
        state = self.state[0]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        first_loss, loss, flat_grad = self._evaluate(closure)
        evals = 1
        state["func_evals"] += 1
        if np.abs(flat_grad).max() <= tol_grad:
            return first_loss

        d: Array | None = state.get("d")
        t: Any = state.get("t")
        old_dirs: list[Array] = state.get("old_dirs", [])
        old_stps: list[Array] = state.get("old_stps", [])
        ro: list[Any] = state.get("ro", [])
        h_diag: Any = state.get("H_diag", 1)
        prev_flat_grad: Array | None = state.get("prev_flat_grad")
        prev_loss: float | None = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                assert d is not None and prev_flat_grad is not None
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == history:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                # two-loop recursion: d = -H g
                al = state.setdefault("al", [None] * history)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = q * h_diag
                for i in range(len(old_dirs)):
                    beta = old_dirs[i].dot(d) * ro[i]
                    d += (al[i] - beta) * old_stps[i]
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss
            t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:  # not a descent direction
                break

            used = 0
            if line_search is not None:
                x0 = [p.data.copy() for p in self.params]
                phi = functools.partial(self._directional, closure, x0, d)
                loss, flat_grad, t, used = _strong_wolfe(
                    phi, d, t, loss, flat_grad, gtd, tolerance_change=tol_change, max_ls=max_eval - evals
                )
                self._add(t, d)
                converged = bool(np.abs(flat_grad).max() <= tol_grad)
            else:
                self._add(t, d)
                converged = False
                if n_iter != max_iter:  # re-evaluate, except after the last iteration
                    _, loss, flat_grad = self._evaluate(closure)
                    converged = bool(np.abs(flat_grad).max() <= tol_grad)
                    used = 1
            evals += used
            state["func_evals"] += used

            if n_iter == max_iter or evals >= max_eval or converged:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break

        state.update(
            d=d,
            t=t,
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=ro,
            H_diag=h_diag,
            prev_flat_grad=prev_flat_grad,
            prev_loss=prev_loss,
        )
        return first_loss

    # ----- checkpoints ----------------------------------------------------------------------

    def _copy_states(self) -> dict[int, dict[str, Any]]:
        return {0: copy.deepcopy(self.state[0])} if self.state[0] else {}

    def _load_states(self, saved: dict[Any, dict[str, Any]]) -> list[dict[str, Any]]:
        new: list[dict[str, Any]] = [{} for _ in self.params]
        numel = sum(p.data.size for p in self.params)
        for i, s in saved.items():
            if int(i) != 0:
                raise ValueError(f"LBFGS.load_state_dict: state for parameter {i}; LBFGS keeps its state in 0")
            unknown = sorted(set(s) - set(self._state_keys))
            if unknown:
                raise ValueError(f"LBFGS.load_state_dict: unknown state keys {unknown}")
            for key in ("d", "prev_flat_grad"):
                v = s.get(key)
                if v is not None and np.shape(v) != (numel,):
                    raise ShapeError(
                        f"LBFGS.load_state_dict: {key} has shape {np.shape(v)}, the parameters have {numel} elements"
                    )
            new[0] = copy.deepcopy(dict(s))
        return new
