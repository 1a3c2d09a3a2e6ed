"""Layer bugs mypy must reject (issue 14): channels, widths, embedding and attention sizes that
do not fit the typed layers, and results used as the wrong shape or tape kind."""

from typing import Literal as L
from typing import NewType, TypeVar

from gradtape import Cpu, NoneTape, OwnedTape, Rank0, Rank2, Rank3, Rank4, Tape, Tensor, nn

Batch = NewType("Batch", int)
B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
dev = Cpu()

img: Tensor[Rank4[L[8], L[3], L[32], L[32]], NoneTape] = dev.zeros((8, 3, 32, 32))
gray: Tensor[Rank4[L[8], L[1], L[32], L[32]], NoneTape] = dev.zeros((8, 1, 32, 32))
seq: Tensor[Rank3[L[4], L[2], L[50]], NoneTape] = dev.zeros((4, 2, 50))
h: Tensor[Rank3[Batch, L[10], L[64]], NoneTape] = dev.zeros((2, 10, 64)).realize(tuple[Batch, L[10], L[64]])
codes: Tensor[Rank2[Batch, L[6]], NoneTape] = dev.zeros((2, 6)).realize(tuple[Batch, L[6]])

# convolutions: the input's channel dim is the layer's C
conv: nn.Conv2d[L[3], L[16]] = nn.Conv2d(3, 16, 3, padding=1, dev=dev)
conv(gray)  # E: arg-type
conv(seq)  # E: arg-type
conv2: nn.Conv2d[L[8], L[32]] = nn.Conv2d(8, 32, 3, dev=dev)
conv2(conv(img))  # E: arg-type
conv1: nn.Conv1d[L[3], L[8]] = nn.Conv1d(3, 8, 5, dev=dev)
conv1(seq)  # E: arg-type
up: nn.ConvTranspose2d[L[16], L[3]] = nn.ConvTranspose2d(16, 3, 2, stride=2, dev=dev)
up(img)  # E: arg-type
grouped: nn.Conv2d[L[4], L[8]] = nn.Conv2d(4, 8, 3, groups=2, dev=dev)
grouped(img)  # E: arg-type
wrong_out: Tensor[Rank4[L[8], L[8], int, int], NoneTape] = conv(img)  # E: assignment
bad_ctor: nn.Conv2d[L[3], L[16]] = nn.Conv2d(3, 8, 3, dev=dev)  # E: arg-type

# pools keep channels; Flatten gives rank 2
pooled = nn.MaxPool2d(2)(img)
p16: Tensor[Rank4[L[8], L[16], int, int], NoneTape] = pooled  # E: assignment
nn.AvgPool2d(2)(seq)  # E: arg-type
flat: Tensor[Rank3[L[8], int, int], NoneTape] = nn.Flatten()(img)  # E: assignment

# norms: the last dim (LayerNorm, RMSNorm) or the channel dim (BatchNorm) is the width
ln: nn.LayerNorm[L[32]] = nn.LayerNorm(32)
ln(h)  # E: arg-type
rms: nn.RMSNorm[L[10]] = nn.RMSNorm(10)
rms(h)  # E: arg-type
bn1: nn.BatchNorm1d[L[64]] = nn.BatchNorm1d(64)
bn1(h)  # E: arg-type
bn2: nn.BatchNorm2d[L[3]] = nn.BatchNorm2d(3)
bn2(conv(img))  # E: arg-type
bn2(h)  # E: arg-type
bn1(img)  # E: arg-type
gn: nn.GroupNorm[L[6]] = nn.GroupNorm(3, 6)
gn(conv(img))  # E: arg-type

# embedding: the rows are D wide
emb: nn.Embedding[L[100], L[32]] = nn.Embedding(100, 32, dev=dev)
head: nn.Linear[L[64], L[100]] = nn.Linear(64, 100, dev=dev)
head(emb(codes))  # E: arg-type
rows = emb(codes)
e2: Tensor[Rank2[Batch, L[32]], NoneTape] = rows  # E: assignment
e16: nn.Embedding[L[100], L[32]] = nn.Embedding(100, 16, dev=dev)  # E: arg-type

# attention: q, k and v are E wide, and share the batch
attn: nn.MultiHeadAttention[L[32]] = nn.MultiHeadAttention(32, 4, dev=dev)
attn(h)  # E: arg-type
q = emb(codes)
attn(q, h, h)  # E: arg-type
other: Tensor[Rank3[L[5], L[9], L[32]], NoneTape] = dev.zeros((5, 9, 32))
attn(q, other, other)  # E: misc
block: nn.TransformerEncoderLayer[L[64]] = nn.TransformerEncoderLayer(64, 4, 128, dev=dev)
block(q)  # E: arg-type
block(h).backward()  # E: call-overload

# a residual block keeps its input's type
res = nn.Residual(nn.Tanh())
same = res(h)
r3: Tensor[Rank3[Batch, L[10], L[32]], NoneTape] = same  # E: assignment

# an untraced input gives a NoneTape result (it records at run time only through parameters),
# and backward without a gradient seed needs a scalar
nn.Flatten()(conv(img)).backward()  # E: call-overload
traced: Tensor[Rank0, OwnedTape] = nn.LayerNorm(64)(h).sum()  # E: assignment


# inside a model's forward
class Stem(nn.Module):
    def __init__(self) -> None:
        self.conv: nn.Conv2d[L[3], L[16]] = nn.Conv2d(3, 16, 3, dev=dev)
        self.norm: nn.BatchNorm2d[L[32]] = nn.BatchNorm2d(32)

    def forward(self, x: Tensor[Rank4[B, L[3], int, int], T]) -> Tensor[Rank4[B, L[32], int, int], T]:
        return self.norm(self.conv(x))  # E: arg-type


def encode(x: Tensor[Rank2[B, L[6]], T]) -> Tensor[Rank3[B, L[6], L[64]], T]:
    return emb(x)  # E: return-value
