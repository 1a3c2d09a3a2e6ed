"""Misuses of the recording front ends mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, GradientTape, NoneTape, Rank2, Tensor, no_grad, set_grad_enabled

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
GradientTape(True)  # E: arg-type
GradientTape(persistent=True).gradient(a, a, unconnected_gradients="zeros")  # E: arg-type
set_grad_enabled(1)  # E: arg-type
b: Tensor[Rank2[L[4], L[3]], NoneTape] = a.detach()  # E: assignment
no_grad(3)  # E: call-overload
w: Tensor[Rank2[L[4], L[3]], NoneTape] = dev.zeros((4, 3))
(a.leaky_trace() * 2.0).backward(w)  # E: arg-type
