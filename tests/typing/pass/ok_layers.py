"""Valid programs with gradtape's typed layers (issue 14), written the way users write them:
annotated modules (a CNN, a small transformer), PyTorch-style unannotated code, generic
batch functions, inline shapes, and models that call layers inside ``forward``."""

from typing import Any, Generic, NewType, TypeVar, reveal_type
from typing import Literal as L

import numpy as np

from gradtape import Cpu, Gradients, NoneTape, OwnedTape, Rank0, Rank2, Rank3, Rank4, Tape, Tensor, nn
from gradtape.losses import cross_entropy

Batch = NewType("Batch", int)
B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
C = TypeVar("C")
dev = Cpu(seed=0)

# ----- convolutions and pools: channels are type arguments ---------------------------------
conv: nn.Conv2d[L[3], L[16]] = nn.Conv2d(3, 16, 3, padding=1, dev=dev)
img: Tensor[Rank4[L[8], L[3], L[32], L[32]], NoneTape] = dev.zeros((8, 3, 32, 32))
reveal_type(conv(img))  # R: Tensor[tuple[Literal[8], Literal[16], int, int], gradtape.tape.NoneTape]
reveal_type(conv(img.leaky_trace()))  # R: Tensor[tuple[Literal[8], Literal[16], int, int], gradtape.tape.GradientTape]
pool = nn.MaxPool2d(2)
reveal_type(pool(conv(img)))  # R: Tensor[tuple[Literal[8], Literal[16], int, int], gradtape.tape.NoneTape]
reveal_type(nn.AvgPool2d(2, stride=1)(img))  # R: tuple[Literal[8], Literal[3], int, int], gradtape.tape.NoneTape]
reveal_type(nn.MinPool2d(3, padding=1)(img))  # R: tuple[Literal[8], Literal[3], int, int], gradtape.tape.NoneTape]
grouped: nn.Conv2d[L[3], L[6]] = nn.Conv2d(3, 6, 3, groups=3, dev=dev)  # depthwise: still C_in = 3
reveal_type(grouped(img))  # R: Tensor[tuple[Literal[8], Literal[6], int, int], gradtape.tape.NoneTape]
up: nn.ConvTranspose2d[L[16], L[3]] = nn.ConvTranspose2d(16, 3, 2, stride=2, dev=dev)
reveal_type(up(conv(img)))  # R: Tensor[tuple[Literal[8], Literal[3], int, int], gradtape.tape.NoneTape]
conv1: nn.Conv1d[L[2], L[5]] = nn.Conv1d(2, 5, 7, stride=2, dev=dev)
seq: Tensor[Rank3[Batch, L[2], L[50]], NoneTape] = dev.zeros((4, 2, 50)).realize(tuple[Batch, L[2], L[50]])
reveal_type(conv1(seq))  # R: Tensor[tuple[ok_layers.Batch, Literal[5], int], gradtape.tape.NoneTape]

# an int (dynamic) channel dim, as mypy types dev.randn((8, 3, 32, 32)), is checked at run time
dyn: Tensor[Rank4[int, int, int, int], NoneTape] = dev.randn((8, 3, 32, 32))
reveal_type(conv(dyn))  # R: Tensor[tuple[int, Literal[16], int, int], gradtape.tape.NoneTape]
# a layer built without an annotated target has int channels and takes any channel dim
plain = nn.Conv2d(3, 16, 3, dev=dev)
reveal_type(plain)  # R: Conv2d[int, int]
reveal_type(plain(img))  # R: Tensor[tuple[Literal[8], int, int, int], gradtape.tape.NoneTape]

# ----- Flatten: (N, ...) -> (N, int) ---------------------------------------------------------
flat = nn.Flatten()
reveal_type(flat(pool(conv(img))))  # R: Tensor[tuple[Literal[8], int], gradtape.tape.NoneTape]
reveal_type(flat(seq.leaky_trace()))  # R: Tensor[tuple[ok_layers.Batch, int], gradtape.tape.GradientTape]
all_dims = nn.Flatten(0)  # other dims: untyped result
out_any: Tensor[Any, NoneTape] = all_dims(img)

# ----- norms keep shape and tape kind ----------------------------------------------------------
h: Tensor[Rank3[Batch, L[10], L[64]], NoneTape] = dev.zeros((2, 10, 64)).realize(tuple[Batch, L[10], L[64]])
ln: nn.LayerNorm[L[64]] = nn.LayerNorm(64)
reveal_type(ln(h))  # R: Tensor[tuple[ok_layers.Batch, Literal[10], Literal[64]], gradtape.tape.NoneTape]
rms: nn.RMSNorm[L[64]] = nn.RMSNorm(64)
reveal_type(rms(h.leaky_trace()))  # R: tuple[ok_layers.Batch, Literal[10], Literal[64]], gradtape.tape.GradientTape]
reveal_type(nn.LayerNorm((10, 64))(h))  # R: tuple[ok_layers.Batch, Literal[10], Literal[64]], gradtape.tape.NoneTape]
bn1: nn.BatchNorm1d[L[10]] = nn.BatchNorm1d(10)
reveal_type(bn1(h))  # R: Tensor[tuple[ok_layers.Batch, Literal[10], Literal[64]], gradtape.tape.NoneTape]
bn2: nn.BatchNorm2d[L[16]] = nn.BatchNorm2d(16)
reveal_type(bn2(conv(img)))  # R: Tensor[tuple[Literal[8], Literal[16], int, int], gradtape.tape.NoneTape]
gn: nn.GroupNorm[L[16]] = nn.GroupNorm(4, 16)
reveal_type(gn(bn2(conv(img))))  # R: Tensor[tuple[Literal[8], Literal[16], int, int], gradtape.tape.NoneTape]
gn10 = nn.GroupNorm(2, 10)  # GroupNorm[int]
reveal_type(gn10(h))  # R: Tensor[tuple[ok_layers.Batch, Literal[10], Literal[64]], gradtape.tape.NoneTape]
loose = nn.LayerNorm(64)  # LayerNorm[int]: any last dim, checked at run time
reveal_type(loose(h))  # R: Tensor[tuple[ok_layers.Batch, Literal[10], Literal[64]], gradtape.tape.NoneTape]

# ----- embedding, attention, transformer block ---------------------------------------------
emb: nn.Embedding[L[100], L[32]] = nn.Embedding(100, 32, dev=dev)
codes: Tensor[Rank2[Batch, L[6]], NoneTape] = dev.zeros((2, 6)).realize(tuple[Batch, L[6]])
reveal_type(emb(codes))  # R: Tensor[tuple[ok_layers.Batch, Literal[6], Literal[32]], gradtape.tape.NoneTape]
grads: Gradients = emb.alloc_grads()
reveal_type(emb(codes.trace(grads)))  # R: tuple[ok_layers.Batch, Literal[6], Literal[32]], gradtape.tape.GradientTape]
table_loss: Tensor[Rank0, OwnedTape] = emb(codes.trace(grads)).sum()
rows: Tensor[Any, Any] = emb([1, 2, 3])  # an index list: untyped result
attn: nn.MultiHeadAttention[L[32]] = nn.MultiHeadAttention(32, 4, dev=dev)
q = emb(codes)
reveal_type(attn(q))  # R: Tensor[tuple[ok_layers.Batch, Literal[6], Literal[32]], gradtape.tape.NoneTape]
memory: Tensor[Rank3[Batch, L[9], L[32]], NoneTape] = dev.zeros((2, 9, 32)).realize(tuple[Batch, L[9], L[32]])
reveal_type(attn(q, memory, memory))  # R: tuple[ok_layers.Batch, Literal[6], Literal[32]], gradtape.tape.NoneTape]
cross_loss: Tensor[Rank0, OwnedTape] = attn(q.leaky_trace(), memory, memory).sum()  # decoder traced
mask = np.triu(np.ones((6, 6), bool), k=1)
qt = q.leaky_trace()
reveal_type(attn(qt, attn_mask=mask))  # R: tuple[ok_layers.Batch, Literal[6], Literal[32]], gradtape.tape.GradientTape]
block: nn.TransformerEncoderLayer[L[32]] = nn.TransformerEncoderLayer(32, 4, 64, dev=dev)
reveal_type(block(q, mask))  # R: Tensor[tuple[ok_layers.Batch, Literal[6], Literal[32]], gradtape.tape.NoneTape]
head: nn.Linear[L[32], L[100]] = nn.Linear(32, 100, dev=dev)
reveal_type(head(block(attn(q))))  # R: tuple[ok_layers.Batch, Literal[6], Literal[100]], gradtape.tape.NoneTape]

# ----- residual: x + f(x) keeps x's type ---------------------------------------------------
res = nn.Residual(nn.Sequential(nn.Linear(64, 64, dev=dev), nn.Tanh()))
reveal_type(res(h))  # R: Tensor[tuple[ok_layers.Batch, Literal[10], Literal[64]], gradtape.tape.NoneTape]


# ----- generic batch functions -----------------------------------------------------------------
def features(x: Tensor[Rank4[B, L[3], Any, Any], T]) -> Tensor[Rank2[B, int], T]:
    """A conv stem for any batch size and either tape kind."""
    return flat(pool(bn2(conv(x).relu())))


def encode(x: Tensor[Rank2[B, L[6]], T]) -> Tensor[Rank3[B, L[6], L[32]], T]:
    """Embedding, then pre-norm self-attention, for any batch."""
    e = emb(x)
    return block(e + attn(nn.LayerNorm(32)(e)))


reveal_type(features(img))  # R: Tensor[tuple[Literal[8], int], gradtape.tape.NoneTape]
ct = codes.leaky_trace()
reveal_type(encode(ct))  # R: tuple[ok_layers.Batch, Literal[6], Literal[32]], gradtape.tape.GradientTape]


# ----- models calling layers in forward --------------------------------------------------------
class SmallCNN(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.conv1: nn.Conv2d[L[1], L[8]] = nn.Conv2d(1, 8, 3, padding=1, dev=dev)
        self.bn1: nn.BatchNorm2d[L[8]] = nn.BatchNorm2d(8)
        self.conv2: nn.Conv2d[L[8], L[16]] = nn.Conv2d(8, 16, 3, padding=1, dev=dev)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16 * 2 * 2, 10, dev=dev)  # int in-features: takes the flattened int dim

    def forward(self, x: Tensor[Rank4[B, L[1], L[8], L[8]], T]) -> Tensor[Rank2[B, int], T]:
        h = self.pool(self.bn1(self.conv1(x)).relu())
        h2 = self.pool(self.conv2(h).relu())
        return self.fc(self.flatten(h2))


class TinyLM(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.tok: nn.Embedding[L[100], L[32]] = nn.Embedding(100, 32, dev=dev)
        self.blocks = [nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, dev=dev) for _ in range(2)]
        self.norm: nn.LayerNorm[L[32]] = nn.LayerNorm(32)
        self.head: nn.Linear[L[32], L[100]] = nn.Linear(32, 100, dev=dev)

    def forward(self, x: Tensor[Rank2[B, int], T]) -> Tensor[Rank3[B, int, L[100]], T]:
        h = self.tok(x)
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.norm(h))


class ConvBlock(nn.Module, Generic[C]):
    """A block generic over its channel count: conv and norm share the type variable."""

    def __init__(self, channels: C) -> None:
        self.conv: nn.Conv2d[C, C] = nn.Conv2d(channels, channels, 3, padding=1, dev=dev)
        self.bn: nn.BatchNorm2d[C] = nn.BatchNorm2d(channels)
        self.norm: nn.LayerNorm = nn.LayerNorm(8)  # bare annotations: dynamic widths
        self.flat: nn.Flatten = nn.Flatten()

    def forward(self, x: Tensor[Rank4[B, C, Any, Any], T]) -> Tensor[Rank4[B, C, int, int], T]:
        return self.bn(self.conv(x)).relu()


block16: ConvBlock[L[16]] = ConvBlock(16)
reveal_type(block16.forward(conv(img)))  # R: Tensor[tuple[Literal[8], Literal[16], int, int], gradtape.tape.NoneTape]
cnn = SmallCNN(dev)
digits = dev.zeros((4, 1, 8, 8)).realize(tuple[Batch, L[1], L[8], L[8]])
cnn_grads = cnn.alloc_grads()
logits = cnn.forward(digits.trace(cnn_grads))
reveal_type(logits)  # R: Tensor[tuple[ok_layers.Batch, int], gradtape.tape.GradientTape]
cnn_loss: Tensor[Rank0, OwnedTape] = cross_entropy(logits, [1, 2, 3, 4])
cnn_grads = cnn_loss.backward()
lm = TinyLM(dev)
text: Tensor[Rank2[Batch, int], NoneTape] = dev.zeros((2, 5)).realize(tuple[Batch, int])
reveal_type(lm.forward(text))  # R: Tensor[tuple[ok_layers.Batch, int, Literal[100]], gradtape.tape.NoneTape]

# ----- PyTorch-style, unannotated: no false alarm, no Unknown under pyright --------------------
conv_a = nn.Conv2d(1, 8, 3, padding=1, dev=dev)
conv_b = nn.Conv2d(8, 16, 3, padding=1, dev=dev)
fc = nn.Linear(16 * 2 * 2, 10, dev=dev)
images = dev.randn((4, 1, 8, 8))
z = pool(conv_a(images).relu())
z = pool(conv_b(z).relu())
out = fc(nn.Flatten()(z))
loss = cross_entropy(out.leaky_trace(), [1, 2, 3, 4])
data = dev.tensor(np.zeros((2, 6, 32), np.float32))  # untyped: Tensor[Any, NoneTape]
mha = nn.MultiHeadAttention(32, 4, dev=dev)
norm = nn.LayerNorm(32)
y = norm(data + mha(data))
y2 = nn.TransformerEncoderLayer(32, 4, 64, dev=dev)(y)
y3 = nn.BatchNorm1d(6)(y2)
y4 = nn.RMSNorm(32)(y3)
vocab = nn.Embedding(10, 32, dev=dev)
y5 = vocab(np.array([[1, 2], [3, 4]]))
pooled = y4.mean(axis=1)  # pyright types a reduction of an untyped tensor as Any
seq_any: Any = y4  # values typed Any: every layer call is Any, never pyright's Unknown
img_any: Any = images
h_any: Any = h
y6 = nn.Linear(32, 4, dev=dev)(pooled)
y7 = norm(pooled)
y8 = nn.BatchNorm1d(32)(pooled)
y9 = nn.Flatten()(img_any)
y10 = mha(seq_any, seq_any, seq_any)
y11 = nn.Conv1d(6, 4, 1, dev=dev)(seq_any)
y12 = pool(img_any)
y13 = res(h_any)
y14 = vocab(np.array([1, 2]))
y15 = nn.Sequential(nn.Linear(32, 4, dev=dev), nn.ReLU())(y4)
y16 = nn.TransformerEncoderLayer(32, 4, 64, dev=dev)(seq_any)
y17 = nn.ConvTranspose2d(1, 2, 2, dev=dev)(img_any)
print(loss.item(), y.shape, y5.shape, y6, y7, y8, y9, y10, y11, y12, y13, y14, y15, y16, y17)


def untyped_helper(layer: nn.Linear, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
    """A bare layer annotation means dynamic widths (nn.Linear[int, int])."""
    return layer(x)


def bare_annotations(c: nn.Conv2d, n: nn.LayerNorm, a: nn.MultiHeadAttention, f: nn.Flatten) -> None:
    """Bare layer annotations are accepted in strict mode (type parameters default to int)."""
    print(c, n, a, f)


untyped_helper(nn.Linear(32, 4, dev=dev), data)
bare_annotations(conv_a, norm, mha, nn.Flatten())
