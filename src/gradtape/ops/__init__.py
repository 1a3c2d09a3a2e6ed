"""Tensor ops, one module per family; each keeps its typed signature, forward and backward
closure together. Every op here is also a :class:`~gradtape.tensor.Tensor` method."""

from gradtape.ops.binary import add, div, mul, sub
from gradtape.ops.linalg import matmul
from gradtape.ops.reduce import mean, sum
from gradtape.ops.softmax import log_softmax
from gradtape.ops.unary import exp, log, neg, relu, sin

__all__ = ["add", "div", "exp", "log", "log_softmax", "matmul", "mean", "mul", "neg", "relu", "sin", "sub", "sum"]
