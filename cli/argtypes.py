"""argparse types of the sub-commands' numeric options, with one form of message."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_at_least(low: int, why: str) -> Callable[[str], int]:
    """An argparse ``type``: an integer (``0x``, ``0o`` and ``0b`` prefixes too) of at least
    ``low``; a smaller one is refused with ``why`` and the value."""

    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{why}, not {value}")
        return value

    return parse


seed_type = int_at_least(0, "a seed is a non-negative integer")
"""The ``--seed`` options' type."""
