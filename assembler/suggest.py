""""Did you mean ...?" hints for unknown mnemonics, directives and labels, cheap on junk.

:func:`difflib.get_close_matches` compares a word with every candidate, some microseconds
each; a file of junk asks for a hint on every line, and a file with many labels asks it to
compare with every label. A :class:`Suggester` gives difflib's answer (cutoff 0.6) while
comparing a word only with the candidates whose length could reach the cutoff, at most
:data:`MAX_COMPARED` of them (past that, the ones nearest its length), and remembers the
answer for each distinct word (the last :data:`MAX_CACHED` of them).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable

CUTOFF = 0.6
"""difflib's default: the least similarity ratio worth suggesting."""
MAX_COMPARED = 500
"""Most candidates one word is compared with, the ones nearest its length first; the rest
are not (a hint may be missed rather than paid for). Only a file with hundreds of labels of
about one length reaches it."""
MAX_CACHED = 4096
"""Answers remembered per :class:`Suggester` (the oldest are forgotten past it), so that a
long-lived process assembling file after file of junk does not grow without end."""
MAX_WORD = 64
"""Longer words get no hint: no mnemonic or sensible label is that long, and comparing long
strings costs time that grows with the product of their lengths."""


class Suggester:
    """The candidate most like a word (difflib's ratio, at least :data:`CUTOFF`), if any."""

    def __init__(self, candidates: Iterable[str]):
        self._by_len: dict[int, list[str]] = defaultdict(list)
        for c in dict.fromkeys(candidates):
            self._by_len[len(c)].append(c)
        self._cache: dict[str, tuple[float, str] | None] = {}

    def best(self, word: str) -> tuple[float, str] | None:
        """(ratio, candidate) of the closest candidate, or None when none is close enough."""
        if word in self._cache:
            return self._cache[word]
        found = None
        n = len(word)
        if 0 < n <= MAX_WORD:
            # ratio = 2 * matches / (n + m) and matches <= min(n, m): a candidate of length m
            # reaches 0.6 only if 3n/7 <= m <= 7n/3 (one more each side against rounding)
            lengths = sorted(range(3 * n // 7 - 1, 7 * n // 3 + 2), key=lambda m: abs(m - n))
            pool: list[str] = []
            for m in lengths:
                pool += self._by_len.get(m, ())
                if len(pool) >= MAX_COMPARED:
                    break
            matcher = difflib.SequenceMatcher()
            matcher.set_seq2(word)
            for cand in pool[:MAX_COMPARED]:
                matcher.set_seq1(cand)
                if (matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF):
                    score = matcher.ratio()
                    # ties go to the greater string, as in get_close_matches
                    if score >= CUTOFF and (found is None or (score, cand) > found):
                        found = (score, cand)
        if len(self._cache) >= MAX_CACHED:
            del self._cache[next(iter(self._cache))]
        self._cache[word] = found
        return found

    def __call__(self, word: str) -> str | None:
        found = self.best(word)
        return None if found is None else found[1]


def hint(candidate: str | None) -> str:
    """The message tail for a suggestion (empty when there is none)."""
    return f" (did you mean '{candidate}'?)" if candidate else ""
