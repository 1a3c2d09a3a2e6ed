"""argparse value types shared by the example programs."""

from __future__ import annotations

import argparse
import math

__all__ = ["nonnegative_float", "nonnegative_int", "positive_int"]


def positive_int(text: str) -> int:
    """``text`` as an int >= 1.

    Raises:
        argparse.ArgumentTypeError: not >= 1 (argparse names the flag in its message).
        ValueError: not an integer.
    """
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """``text`` as an int >= 0 (seeds: numpy's generators take no negative seeds; counts).

    Raises:
        argparse.ArgumentTypeError: negative (argparse names the flag in its message).
        ValueError: not an integer.
    """
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def nonnegative_float(text: str) -> float:
    """``text`` as a finite float >= 0.

    Raises:
        argparse.ArgumentTypeError: negative, infinite or NaN.
        ValueError: not a number.
    """
    value = float(text)
    if not value >= 0.0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value
