"""Valid programs with the PyTorch port gaps of gradtape._torch_stats: quantiles, mode, the
trapezoidal rule, pdist, the multi-label margin loss and torch.compile."""

from typing import Any

import gradtape
import gradtape.nn.functional as F
from gradtape import Tensor, nn

x = gradtape.randn(4, 6, requires_grad=True)
q = gradtape.tensor([0.25, 0.5, 0.75])
med: Tensor[Any, Any] = gradtape.quantile(x, 0.5, dim=1, keepdim=True)
qs: Tensor[Any, Any] = gradtape.nanquantile(x, q, 0, interpolation="midpoint")
by_method: Tensor[Any, Any] = x.quantile(q, 1) + x.nanquantile(0.3, 1).unsqueeze(0)
values, indices = gradtape.mode(x, 1)
top = x.mode(0, True).values
area: Tensor[Any, Any] = gradtape.trapezoid(x, dx=0.1) + gradtape.trapz(x, gradtape.arange(6.0))
running: Tensor[Any, Any] = gradtape.cumulative_trapezoid(x, dim=0)
dist: Tensor[Any, Any] = F.pdist(x) + gradtape.pdist(x, 1.0)
target = gradtape.tensor([[1, 3, -1, 0, 0, 0]] * 4)
loss = F.multilabel_margin_loss(x, target) + nn.MultiLabelMarginLoss(reduction="sum")(x, target)
model = gradtape.compile(nn.Linear(6, 2), mode="reduce-overhead")
out = model(x)
(loss + out.sum() + dist.sum() + med.sum()).backward()
