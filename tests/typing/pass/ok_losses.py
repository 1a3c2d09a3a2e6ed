"""Valid programs with issue 27's losses: reduction="none", class axis 1, weights, the
embedding and likelihood losses, and the nn loss layers."""

from typing import Literal as L
from typing import reveal_type

import numpy as np

from gradtape import Cpu, NoneTape, Rank1, Rank2, Rank3, Rank4, Tensor, nn
from gradtape.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    kl_div,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)

dev = Cpu()
logits: Tensor[Rank2[L[8], L[10]], NoneTape] = dev.zeros((8, 10))
x = logits.leaky_trace()
pixels: Tensor[Rank4[L[2], L[5], L[4], L[4]], NoneTape] = dev.zeros((2, 5, 4, 4))
seq: Tensor[Rank3[L[2], L[10], L[7]], NoneTape] = dev.zeros((2, 10, 7))
one: Tensor[Rank1[L[10]], NoneTape] = dev.zeros((10,))
labels = dev.tensor(np.zeros(8, np.int64))
seq_labels: Tensor[Rank2[L[2], L[7]], NoneTape] = dev.tensor(np.zeros((2, 7), np.int64))

# class indices as an int64 tensor, a list or an array; class axis 1; one sample
reveal_type(cross_entropy(x, labels))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
reveal_type(cross_entropy(x, labels, reduction="none"))  # R: Tensor[tuple[Literal[8]], gradtape.tape.GradientTape]
w = np.ones(10)
reveal_type(cross_entropy(x, [0] * 8, w, 0, label_smoothing=0.1))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
per_pixel = cross_entropy(pixels, np.zeros((2, 4, 4), np.int64), reduction="none")
reveal_type(per_pixel)  # R: Tensor[tuple[Literal[2], Literal[4], Literal[4]], gradtape.tape.NoneTape]
reveal_type(cross_entropy(seq, seq_labels))  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(cross_entropy(one, 3, reduction="none"))  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(nll_loss(x.log_softmax(1), labels, reduction="sum"))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
r1 = nll_loss(seq, seq_labels, reduction="none")
reveal_type(r1)  # R: Tensor[tuple[Literal[2], Literal[7]], gradtape.tape.NoneTape]

# elementwise losses: a scalar, or the input's shape with reduction="none"
p = x.sigmoid()
reveal_type(binary_cross_entropy(p, np.ones((8, 10))))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
r2 = binary_cross_entropy(p, logits, reduction="none")
reveal_type(r2)  # R: Tensor[tuple[Literal[8], Literal[10]], gradtape.tape.GradientTape]
r3 = binary_cross_entropy_with_logits(x, logits, np.ones(10), pos_weight=np.ones(10))
reveal_type(r3)  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
r4 = mse_loss(logits, x, reduction="none")
reveal_type(r4)  # R: Tensor[tuple[Literal[8], Literal[10]], gradtape.tape.GradientTape]
r5 = kl_div(x, logits, reduction="none")
reveal_type(r5)  # R: Tensor[tuple[Literal[8], Literal[10]], gradtape.tape.GradientTape]
reveal_type(margin_ranking_loss(one, one, one.leaky_trace(), 0.1))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
r6 = hinge_embedding_loss(x, np.ones((8, 10)), reduction="none")
reveal_type(r6)  # R: Tensor[tuple[Literal[8], Literal[10]], gradtape.tape.GradientTape]
reveal_type(gaussian_nll_loss(x, logits, 0.5, full=True))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
r7 = gaussian_nll_loss(logits, logits, dev.ones((8,)).leaky_trace())
reveal_type(r7)  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
r8 = poisson_nll_loss(x, logits, log_input=False, reduction="sum")
reveal_type(r8)  # R: Tensor[tuple[()], gradtape.tape.GradientTape]

# per-sample losses of (N, D) tensors
r9 = cosine_embedding_loss(x, logits, [1] * 8, reduction="none")
reveal_type(r9)  # R: Tensor[tuple[Literal[8]], gradtape.tape.GradientTape]
reveal_type(cosine_embedding_loss(one, one, 1))  # R: Tensor[tuple[()], gradtape.tape.NoneTape]
reveal_type(triplet_margin_loss(logits, x, logits, swap=True))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]

# the margin losses of scores: labels +-1, class indices, multi-hot targets
r10 = soft_margin_loss(x, np.ones((8, 10)), reduction="none")
reveal_type(r10)  # R: Tensor[tuple[Literal[8], Literal[10]], gradtape.tape.GradientTape]
reveal_type(multilabel_soft_margin_loss(x, logits, np.ones(10)))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]
r11 = multilabel_soft_margin_loss(logits, x, reduction="none")
reveal_type(r11)  # R: Tensor[tuple[Literal[8]], gradtape.tape.GradientTape]
r12 = multi_margin_loss(x, labels, p=2, reduction="none")
reveal_type(r12)  # R: Tensor[tuple[Literal[8]], gradtape.tape.GradientTape]
reveal_type(multi_margin_loss(x, labels, 1, 0.5, np.ones(10)))  # R: Tensor[tuple[()], gradtape.tape.GradientTape]

# the layers: the output keeps the input's tape kind
criterion = nn.CrossEntropyLoss(weight=dev.ones((10,)), label_smoothing=0.1)
reveal_type(criterion(x, labels))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(nn.BCELoss()(p, logits))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(nn.MSELoss(reduction="sum")(x, logits))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(nn.MultiMarginLoss(p=2, weight=dev.ones((10,)))(x, labels))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(nn.SoftMarginLoss()(x, logits))  # R: Tensor[Any, gradtape.tape.GradientTape]
reveal_type(nn.MultiLabelSoftMarginLoss()(x, logits))  # R: Tensor[Any, gradtape.tape.GradientTape]
loss = nn.TripletMarginLoss(margin=0.5)(x, logits, logits)
loss.backward()
