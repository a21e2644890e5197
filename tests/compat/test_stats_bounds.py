"""Statistics keyed by what a peer sends stay bounded (``compat.stats``).

A backend that invents a frame type per line (the ``vocabulary`` rule drops each one and
counts it as ``dropped:<type>``), or a client that does (``stdin-vocabulary``'s
``absorbed:<type>``), makes at most ``MAX_NAMES`` names per counter, then one ``other``;
a name is at most ``MAX_NAME`` characters; the names the flow balance is made of always
count by name. Fed through a real engine, with the inputs themselves.
"""

from __future__ import annotations

import json
from collections import Counter

from compat.stats import KEPT, MAX_NAME, MAX_NAMES, OTHER, Stats, bounded_name

from .helpers import engine_for

INVENTED = 100_000


def _feed(eng: object, side: str, lines: list[bytes], chunk: int = 2000) -> None:
    feed = eng.feed  # type: ignore[attr-defined]
    for i in range(0, len(lines), chunk):
        feed(side, b"".join(lines[i : i + chunk]), 0.0)


def test_a_counter_keeps_at_most_max_names_then_counts_other() -> None:
    s = Stats()
    for i in range(1000):
        s.count("r", f"name-{i}")
    c = s.rules["r"]
    assert len(c) == MAX_NAMES + 1
    assert c[OTHER] == 1000 - MAX_NAMES
    s.count("r", "name-0", 5)  # a name already there keeps counting
    assert c["name-0"] == 6
    for kept in sorted(KEPT):  # the balance's names always count by name
        s.count("r", kept)
        assert c[kept] == 1
    s.count("r", "name-999")
    assert c[OTHER] == 1000 - MAX_NAMES + 1


def test_a_long_name_is_cut() -> None:
    s = Stats()
    s.count("r", "t" * 1_000_000)
    s.count("r", "t" * 2_000_000)  # the same name once cut: one key
    [(key, n)] = s.rules["r"].items()
    assert len(key) == MAX_NAME
    assert key.endswith("…")
    assert n == 2
    assert bounded_name(Counter(), "dropped") == "dropped"


def test_invented_backend_frame_types_leave_the_statistics_small() -> None:
    eng = engine_for("cbc-to-claude")
    lines = [b'{"type":"invented-%d"}\n' % i for i in range(INVENTED)]
    lines += [b'{"type":"system","subtype":"sub-%d"}\n' % i for i in range(1000)]
    lines.append(b'{"type":"' + b"L" * 1_000_000 + b'"}\n')
    _feed(eng, "backend", lines)
    stats = eng.statistics()
    vocab = stats["rules"]["vocabulary"]
    assert vocab["dropped"] == INVENTED + 1000 + 1  # every frame dropped, and counted
    names = [k for k in vocab if k not in KEPT]
    assert len(names) <= MAX_NAMES + 1
    assert vocab[OTHER] == INVENTED + 1000 + 1 - (len(names) - 1)
    assert max(len(k) for k in vocab) <= MAX_NAME
    assert all(len(c) <= MAX_NAMES + 1 + len(KEPT) for c in stats["rules"].values())
    assert len(json.dumps(stats)) < 16 * 1024


def test_invented_client_frame_types_leave_the_statistics_small() -> None:
    eng = engine_for("cbc-to-claude")
    lines = [b'{"type":"made-up-%d"}\n' % i for i in range(INVENTED // 10)]
    _feed(eng, "client", lines)
    stats = eng.statistics()
    absorbed = stats["rules"]["stdin-vocabulary"]
    assert sum(n for k, n in absorbed.items() if k not in KEPT) == INVENTED // 10
    assert len([k for k in absorbed if k not in KEPT]) <= MAX_NAMES + 1
    assert len(json.dumps(stats)) < 16 * 1024
