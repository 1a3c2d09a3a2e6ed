"""realize: a loss computed by untyped code realized to Rank0 before backward."""

from typing import Any

from gradtape import Cpu, Tensor

dev = Cpu(seed=0)


def loss_fn(pred: Tensor[Any, Any]) -> Tensor[Any, Any]:
    return pred.square().mean()


x = dev.randn((4, 4)).leaky_trace()
loss = loss_fn(x).realize(tuple[()])
grads = loss.backward()
print(grads.get(x).shape)
