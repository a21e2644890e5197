""" "Did you mean": commander's ``suggestSimilar`` (the words Claude Code prints under an
unknown option), for the drop-ins, and for ``ccbridge``'s own commands, rule ids and
options.

commander (``lib/suggestSimilar.js``): the candidates at the smallest Damerau-Levenshtein
distance (optimal string alignment; at most 2, as ``maxDistance`` is 3 and only a smaller
one is taken) whose similarity ``(length - distance) / length`` is above 0.4, sorted; for an
option (``--word``) the distance is of the words without their dashes.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_DISTANCE = 3
MIN_SIMILARITY = 0.4


def distance(a: str, b: str) -> int:
    """The optimal-string-alignment distance (edits and adjacent transpositions)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[len(b)]


def similar(word: str, candidates: Iterable[str]) -> list[str]:
    """The candidates commander would suggest for ``word`` (sorted; none: ``[]``)."""
    option = word.startswith("--")
    bare = word[2:] if option else word
    best, found = MAX_DISTANCE, []
    for candidate in dict.fromkeys(candidates):
        name = candidate[2:] if option else candidate
        if len(name) <= 1:
            continue
        d = distance(bare, name)
        length = max(len(bare), len(name))
        if (length - d) / length <= MIN_SIMILARITY:
            continue
        if d < best:
            best, found = d, [candidate]
        elif d == best:
            found.append(candidate)
    return sorted(found)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """commander's suggestion line (with its leading newline), or ``""``."""
    found = similar(word, candidates)
    if len(found) > 1:
        return f"\n(Did you mean one of {', '.join(found)}?)"
    return f"\n(Did you mean {found[0]}?)" if found else ""
