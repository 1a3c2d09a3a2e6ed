"""Losses: huber_loss with a tensor target and kl_div between log-probs and probs."""

from gradtape import Cpu
from gradtape.losses import huber_loss, kl_div

dev = Cpu(seed=0)
pred = dev.randn((5, 4)).leaky_trace()
target = dev.randn((5, 4))
h = huber_loss(pred, target, delta=0.5)
teacher = dev.randn((5, 4)).softmax(axis=-1)
kl = kl_div(pred.log_softmax(axis=-1), teacher, reduction="batchmean")
grads = (h + kl).backward()
print(h.item(), kl.item())
