"""Valid programs with the elementwise activation ops: shape and tape kind pass through."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, OwnedTape, Rank0, Rank1, Rank2, Tensor
from gradtape.ops import unary

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
v: Tensor[Rank1[L[5]], NoneTape] = dev.zeros((5,))

reveal_type(a.abs())  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(abs(a))  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(a**2)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(unary.pow(v, 0.5))  # R: Tensor[tuple[Literal[5]], gradtape.tape.NoneTape]
reveal_type(2.0**a)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(a**a)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.NoneTape]
reveal_type(2 ** v.leaky_trace())  # R: Tensor[tuple[Literal[5]], gradtape.tape.GradientTape]
gt = a.leaky_trace().gelu(approximate="tanh")
reveal_type(gt)  # R: Tensor[tuple[Literal[3], Literal[4]], gradtape.tape.GradientTape]
reveal_type(unary.clamp(v, min=0.0))  # R: Tensor[tuple[Literal[5]], gradtape.tape.NoneTape]

b: Tensor[Rank2[L[3], L[4]], NoneTape] = a.sqrt().square().cos().tanh().sigmoid().silu().recip()
c: Tensor[Rank2[L[3], L[4]], NoneTape] = a.leaky_relu().leaky_relu(0.2).leaky_relu(negative_slope=1)
d: Tensor[Rank2[L[3], L[4]], NoneTape] = a.softplus().softplus(2.0, 10).softplus(beta=0.5, threshold=5.0)
e: Tensor[Rank2[L[3], L[4]], NoneTape] = a.clamp(-1.0, 1.0).clamp(min=0).clamp(max=2.5).nans_to(0.0)
f: Tensor[Rank2[L[3], L[4]], NoneTape] = a.gelu().gelu("none").pow(3).pow(-1.5)

traced = v.leaky_trace()
loss: Tensor[Rank0, OwnedTape] = (traced.abs() ** 2).softplus().clamp(0.0, 1.0).nans_to(0.0).sum()
loss.backward()
