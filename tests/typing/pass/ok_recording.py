"""Valid programs of the recording front ends: TensorFlow's context tape, PyTorch's grad
modes, detach; the types they keep."""

from typing import Literal as L
from typing import reveal_type

from gradtape import (
    Cpu,
    Gradients,
    GradientTape,
    NoneTape,
    Rank2,
    Tensor,
    enable_grad,
    is_grad_enabled,
    nn,
    no_grad,
    set_grad_enabled,
)

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
lin = nn.Linear(4, 2, dev=dev)

with GradientTape(persistent=True) as tape:
    reveal_type(tape)  # R: gradtape.tape.GradientTape
    tape.watch(a)
    tape.watch([a, lin.weight])
    y = (a * a).sum()
g = tape.gradient(y, a)
gs = tape.gradient(y, [a, lin.weight], output_gradients=None, unconnected_gradients="zero")
watched = tape.watched_variables()
reveal_type(watched)  # R: tuple[gradtape.tensor.Tensor[Any, Any], ...]
d = a.leaky_trace().detach()
reveal_type(d)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
flag: bool = a.requires_grad
enabled: bool = is_grad_enabled()


@no_grad()
def infer(x: Tensor[Rank2[L[3], L[4]], NoneTape]) -> Tensor[Rank2[L[3], L[4]], NoneTape]:
    return x * 2.0


@no_grad
def infer2(x: Tensor[Rank2[L[3], L[4]], NoneTape]) -> Tensor[Rank2[L[3], L[4]], NoneTape]:
    return x * 2.0


reveal_type(infer(a))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(infer2(a))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
with no_grad(), enable_grad(), set_grad_enabled(False):
    infer(a)
seeded = a.leaky_trace() * 2.0
# pyrefly 1.4 types an overloaded callee's arguments without the expected type:
# dev.zeros((3, 4)) is then tuple[int, int], not the seed's (3, 4); strict mode reports the
# ignore as unused once pyrefly stops doing so
g2 = seeded.backward(dev.zeros((3, 4)), retain_graph=True)  # pyrefly: ignore[no-matching-overload]
g3: Gradients = seeded.backward(a)

# PyTorch's autograd front end
from gradtape import autograd  # noqa: E402

x1: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
gx = autograd.grad((x1.leaky_trace() * 2.0).sum(), [x1], allow_unused=True)
reveal_type(gx)  # R: tuple[gradtape.tensor.Tensor[Any, Any] | None, ...]
handle = x1.register_hook(lambda g: g * 2.0)
handle.remove()
handle2 = lin.weight.register_post_accumulate_grad_hook(lambda t, gr: None)
handle2.remove()
with autograd.detect_anomaly():
    pass
flag2: bool = autograd.set_detect_anomaly(False)
