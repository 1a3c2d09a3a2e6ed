"""keepdims reduction: log-probabilities as x - logsumexp(x, keepdims=True), annotated function."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, NoneTape, Rank2, Tape, Tensor

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


def log_probs(logits: Tensor[Rank2[B, L[6]], T]) -> Tensor[Rank2[B, L[6]], T]:
    return logits - logits.logsumexp(axis=-1, keepdims=True)


dev = Cpu(seed=0)
logits: Tensor[Rank2[L[3], L[6]], NoneTape] = dev.randn((3, 6))
lp = log_probs(logits)
print(lp.exp().sum(axis=1).numpy())
