"""A small MLP typed end to end with gradtape.nn: mypy computes the exact shape of its output.

The layers' dims are ``Literal`` types (``nn.Linear[L[784], L[128]]``); ``forward`` is generic
in the batch dim ``B`` and the tape kind ``T``, so the same model maps an untraced
``(32, 784)`` batch to an untraced ``(32, 10)`` one and a traced batch to a traced output.
"""

from typing import Generic, NewType, TypeVar, reveal_type
from typing import Literal as L

from gradtape import Cpu, Gradients, NoneTape, OwnedTape, Rank0, Rank2, Tape, Tensor, nn
from gradtape.losses import cross_entropy, mse_loss

B = TypeVar("B")
T = TypeVar("T", bound=Tape)
I = TypeVar("I")
H = TypeVar("H")
O = TypeVar("O")
Batch = NewType("Batch", int)


class MLP(nn.Module):
    """784 -> 128 -> 64 -> 10, ReLU and Tanh between the layers."""

    def __init__(self, dev: Cpu) -> None:
        self.fc1: nn.Linear[L[784], L[128]] = nn.Linear(784, 128, dev=dev)
        self.fc2: nn.Linear[L[128], L[64]] = nn.Linear(128, 64, dev=dev)
        self.fc3: nn.Linear[L[64], L[10]] = nn.Linear(64, 10, dev=dev)
        self.act = nn.ReLU()

    def forward(self, x: Tensor[Rank2[B, L[784]], T]) -> Tensor[Rank2[B, L[10]], T]:
        h = self.act(self.fc1(x))
        return self.fc3(self.fc2(h).tanh())

    __call__ = forward  # model(x) keeps forward's precise type


class GenericMLP(nn.Module, Generic[I, H, O]):
    """A two-layer MLP whose widths are type parameters: ``GenericMLP[L[4], L[16], L[3]]``."""

    def __init__(self, i: I, h: H, o: O, *, dev: Cpu) -> None:
        self.fc1: nn.Linear[I, H] = nn.Linear(i, h, dev=dev)
        self.fc2: nn.Linear[H, O] = nn.Linear(h, o, dev=dev)

    def forward(self, x: Tensor[Rank2[B, I], T]) -> Tensor[Rank2[B, O], T]:
        return self.fc2(self.fc1(x).relu())

    __call__ = forward


dev = Cpu(seed=0)
model = MLP(dev)
x: Tensor[Rank2[L[32], L[784]], NoneTape] = dev.randn((32, 784))

reveal_type(model(x))  # R: Tensor[tuple[Literal[32], Literal[10]], gradtape.tape.NoneTape]
reveal_type(model.forward(x))  # R: Tensor[tuple[Literal[32], Literal[10]], gradtape.tape.NoneTape]
reveal_type(model.fc2.weight)  # R: Tensor[tuple[Literal[64], Literal[128]], gradtape.tape.NoneTape]

# training: trace the input into the model's gradient store; the output owns the tape
grads: Gradients = model.alloc_grads()
logits = model(x.trace(grads))
reveal_type(logits)  # R: Tensor[tuple[Literal[32], Literal[10]], gradtape.tape.GradientTape]
loss = cross_entropy(logits, [0] * 32)
reveal_type(loss)  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
grads = loss.backward()
reveal_type(grads.get(model.fc1.weight))  # R: Tensor[tuple[Literal[128], Literal[784]], gradtape.tape.NoneTape]
model.zero_grads(grads)

# a named batch axis, from a run-time sized batch via realize()
xb = dev.randn((16, 784)).realize(tuple[Batch, L[784]])
reveal_type(model(xb))  # R: Tensor[tuple[ok_mlp.Batch, Literal[10]], gradtape.tape.NoneTape]
reg: Tensor[Rank0, OwnedTape] = mse_loss(model(xb.leaky_trace()), dev.zeros((16, 10)).realize(tuple[Batch, L[10]]))

# widths as type parameters, fixed by the annotation
small: GenericMLP[L[4], L[16], L[3]] = GenericMLP(4, 16, 3, dev=dev)
v: Tensor[Rank2[int, L[4]], NoneTape] = dev.zeros((5, 4))
reveal_type(small(v))  # R: Tensor[tuple[int, Literal[3]], gradtape.tape.NoneTape]
reveal_type(small.fc1)  # R: Linear[Literal[4], Literal[16]]

# an unannotated layer has run-time (int) dims and takes an input of any in-feature dim type
lin = nn.Linear(784, 10, dev=dev)
reveal_type(lin)  # R: Linear[int, int]
reveal_type(lin(x))  # R: Tensor[tuple[Literal[32], int], gradtape.tape.NoneTape]
seq: Tensor[tuple[L[4], L[32], L[784]], NoneTape] = dev.zeros((4, 32, 784))
reveal_type(lin(seq))  # R: Tensor[tuple[Literal[4], Literal[32], int], gradtape.tape.NoneTape]
reveal_type(lin(dev.zeros((784,))))  # R: Tensor[tuple[int], gradtape.tape.NoneTape]
