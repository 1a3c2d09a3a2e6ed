"""Misuses of the elementwise activation ops mypy must reject."""

from typing import Literal as L

from gradtape import Cpu, NoneTape, Rank1, Rank2, Tensor
from gradtape.ops import unary

dev = Cpu()
a: Tensor[Rank2[L[3], L[4]], NoneTape] = dev.zeros((3, 4))
wrong: Tensor[Rank2[L[4], L[3]], NoneTape] = a.tanh()  # E: assignment
row: Tensor[Rank1[L[4]], NoneTape] = a.sigmoid()  # E: assignment
a.gelu(approximate="erf")  # E: arg-type
a.gelu(approximate=True)  # E: arg-type
a.clamp(min="0")  # E: arg-type
a.leaky_relu(negative_slope=None)  # E: arg-type
a.softplus(beta="2")  # E: arg-type
a.nans_to(None)  # E: arg-type
a.nans_to()  # E: call-arg
unary.pow(a, "2")  # E: arg-type
unary.pow(a, a)  # E: arg-type
a ** "2"  # E: operator
"2" ** a  # E: arg-type
a.silu(1.0)  # E: call-arg
a.sqrt().backward()  # E: call-overload
a.leaky_trace().relu().recip().backward()  # E: call-overload
