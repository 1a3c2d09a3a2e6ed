"""Valid programs with the recurrent layers and nn.Transformer (issue 28): LSTM[I, H, O] (O = H,
or 2H annotated for a bidirectional layer), GRU, RNN, the cells [I, H], Transformer[E], and a
typed model calling them in its forward (and a module held as a plain ``nn.Module`` called with
keyword arguments)."""

from typing import Literal as L
from typing import TypeVar, reveal_type

from gradtape import Cpu, NoneTape, Rank2, Rank3, Tape, Tensor, nn

T = TypeVar("T", bound=Tape)
A = TypeVar("A")
B = TypeVar("B")
dev = Cpu(seed=0)
x: Tensor[Rank3[L[5], L[2], L[8]], NoneTape] = dev.zeros((5, 2, 8))

lstm: nn.LSTM[L[8], L[16], L[16]] = nn.LSTM(8, 16, dev=dev)
out, (h_n, c_n) = lstm(x)
reveal_type(out)  # R: Tensor[tuple[Literal[5], Literal[2], Literal[16]], gradtape.tape.NoneTape]
reveal_type(c_n)  # R: Tensor[tuple[int, int, Literal[16]], gradtape.tape.NoneTape]
bi: nn.LSTM[L[8], L[16], L[32]] = nn.LSTM(8, 16, num_layers=2, bidirectional=True, dev=dev)
reveal_type(bi(x)[0])  # R: Tensor[tuple[Literal[5], Literal[2], Literal[32]], gradtape.tape.NoneTape]
gru: nn.GRU[L[8], L[4], L[4]] = nn.GRU(8, 4, batch_first=True, dev=dev)
reveal_type(gru(x)[1])  # R: Tensor[tuple[int, int, Literal[4]], gradtape.tape.NoneTape]
rnn: nn.RNN[L[8], L[4], L[4]] = nn.RNN(8, 4, 1, "relu", dev=dev)
unbatched: Tensor[Rank2[int, L[8]], NoneTape] = dev.zeros((5, 8))
reveal_type(rnn(unbatched)[0])  # R: Tensor[tuple[int, Literal[4]], gradtape.tape.NoneTape]
loose = nn.LSTM(8, 16, bidirectional=True, dev=dev)  # unannotated bidirectional: any output width
head32: nn.Linear[L[32], L[4]] = nn.Linear(32, 4, dev=dev)
head32(loose(x)[0])  # the plugin knows it is 32 wide; pyright and mypy alone take any width
plain = nn.LSTM(8, 16, bidirectional=bool(0), dev=dev)  # untyped construction: any width
reveal_type(plain(x)[0])  # R: Tensor[tuple[Literal[5], Literal[2], int], gradtape.tape.NoneTape]

cell: nn.LSTMCell[L[8], L[16]] = nn.LSTMCell(8, 16, dev=dev)
step: Tensor[Rank2[L[2], L[8]], NoneTape] = dev.zeros((2, 8))
h1, c1 = cell(step)
reveal_type(h1)  # R: Tensor[tuple[Literal[2], Literal[16]], gradtape.tape.NoneTape]
gcell: nn.GRUCell[L[16], L[16]] = nn.GRUCell(16, 16, dev=dev)
reveal_type(gcell(h1, h1))  # R: Tensor[tuple[Literal[2], Literal[16]], gradtape.tape.NoneTape]
rcell = nn.RNNCell(8, 3, dev=dev)
reveal_type(rcell(step))  # R: Tensor[tuple[Literal[2], int], gradtape.tape.NoneTape]

tr: nn.Transformer[L[8]] = nn.Transformer(8, 2, 1, 1, 16, dev=dev)
tgt: Tensor[Rank3[L[3], L[2], L[8]], NoneTape] = dev.zeros((3, 2, 8))
reveal_type(tr(x, tgt))  # R: Tensor[tuple[Literal[3], Literal[2], Literal[8]], gradtape.tape.NoneTape]
ptr = nn.Transformer(8, 2, 1, 1, 16, dev=dev)  # unannotated (mypy keeps Literal[8] here)
reveal_type(ptr(x, tgt))  # R: Tensor[tuple[Literal[3], Literal[2],


class Tagger(nn.Module):
    """A bidirectional LSTM tagger with a transformer over its features."""

    def __init__(self) -> None:
        self.lstm: nn.LSTM[L[8], L[16], L[32]] = nn.LSTM(8, 16, bidirectional=True, dev=dev)
        self.mix: nn.Transformer[L[32]] = nn.Transformer(32, 4, 1, 1, 64, dev=dev)
        self.head: nn.Linear[L[32], L[5]] = nn.Linear(32, 5, dev=dev)
        self.extra: nn.Module = nn.TransformerEncoder(nn.TransformerEncoderLayer(5, 1, 8, dev=dev), 1)

    def forward(self, x: Tensor[Rank3[A, B, L[8]], T]) -> Tensor[Rank3[A, B, L[5]], T]:
        feats, _ = self.lstm(x)
        y = self.head(self.mix(feats, feats))
        self.extra(y, mask=None, src_key_padding_mask=None)  # a Module called with keywords
        return y


reveal_type(Tagger().forward(x))  # R: Tensor[tuple[Literal[5], Literal[2], Literal[5]], gradtape.tape.NoneTape]
