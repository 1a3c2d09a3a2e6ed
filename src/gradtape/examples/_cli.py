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
    return _int_at_least(text, 1)


def nonnegative_int(text: str) -> int:
    """``text`` as an int >= 0 (seeds: numpy's generators take no negative seeds; counts).

    Raises:
        argparse.ArgumentTypeError: negative (argparse names the flag in its message).
        ValueError: not an integer.
    """
    return _int_at_least(text, 0)


def _int_at_least(text: str, low: int) -> int:
    """``int(text)``, refused with ``argparse.ArgumentTypeError`` below ``low``."""
    value = int(text)
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
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
