"""Nothing a peer or a capture sends reaches a terminal or a log raw (``compat.text``).

The bad input itself: a frame type and subtype full of terminal escape sequences (OSC
retitle, SGR colour), C1 CSI, DEL, bidi overrides and isolates, zero-width and line
separators, sent through a real engine (and a real ``Session``), then through every
renderer that can show it: the demo's statistics table, the ``--stats`` line, the log,
``check``, ``diff``, ``ab``, ``conformance``, ``drift``, progress lines and the HTML
report. No character of those classes may come out (a newline between lines aside).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

from analysis import ab_cmd, check_cmd, conformance, diff_cmd, drift, drift_cmd, report_html
from analysis import conformance_render as render
from analysis.contract import check, format_text
from analysis.diff import diff
from analysis.diff import format_text as diff_text
from analysis.diff import to_json as diff_json
from analysis.progress import Progress
from bridge.demo import render_rows, stats_table, summarize
from bridge.driver import Session, SessionConfig
from bridge.log import Logger
from bridge.proxy import build_engine
from compat import capture
from compat.engine import Engine

from .memory_backend import MemoryBackend

#: what a hostile backend puts in a name: OSC retitle + BEL, SGR, C1 CSI, DEL, bidi
#: override and isolate, zero-width space, line separator, BOM, Arabic letter mark, CR
EVIL = (
    "evil\x1b]0;pwned\x07\x1b[31m\x9b31m\x7f\u202e\u2066\u200b\u2028\u2029\ufeff\u061c\r"
    "\u200e\u200f\u202a\u2069\u2060\x00"
)
#: the classes that must never come out raw (a newline between lines is the output's own)
UNSAFE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]"
)


def clean(text: str) -> str:
    found = UNSAFE.findall(text)
    assert not found, f"raw {[f'U+{ord(c):04X}' for c in sorted(set(found))]}"
    return text


def evil_frames() -> list[dict[str, Any]]:
    return [
        {"type": EVIL, "session_id": "s1"},
        {"type": "system", "subtype": EVIL, "session_id": "s1", "uuid": "u"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": EVIL}]}},
    ]


def lines(frames: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(f).encode() + b"\n" for f in frames)


def fed_engine() -> Engine:
    eng = build_engine("cbc-to-claude", epoch_ms=0)
    eng.feed("backend", lines(evil_frames()), 0.0)
    eng.feed("client", lines([{"type": EVIL}]), 0.0)
    return eng


def dump(frames: list[dict[str, Any]], path: Path | None = None) -> capture.Capture:
    data = lines(frames)
    if path is not None:
        path.write_bytes(data)
    return capture.parse(data.split(b"\n"))


# -- the engine's statistics, the demo, --stats, the log -----------------------------------


def test_the_engine_counts_the_evil_names_and_the_demo_table_escapes_them() -> None:
    stats = fed_engine().statistics()
    names = set(stats["rules"]["vocabulary"]) | set(stats["rules"]["stdin-vocabulary"])
    assert f"dropped:{EVIL}"[:63] + "…" in names or f"dropped:{EVIL}" in names  # raw inside
    table = clean(stats_table(stats))
    assert "dropped:evil\\x1b]0;pwned\\x07\\x1b[31m\\x9b31m\\x7f\\u202e" in table
    assert "absorbed:evil" in table


def test_the_demo_frame_rows_escape_what_the_stream_sent() -> None:
    from bridge.demo import Row

    rows = [Row(0.0, "down", summarize(f), rules=[EVIL], by=EVIL) for f in evil_frames()]
    rows[0].got = summarize({"type": "result", "subtype": EVIL})
    rows[1].action = "dropped"
    clean(render_rows(rows, 80))
    clean(render_rows(rows, 80, colour=True).replace("\x1b[", "["))  # our colours only


def _session(
    eng: Engine,
    log: io.StringIO,
    got: list[bytes],
    backend: Any = None,
    streams: Any = (None, None),
) -> Session:
    return Session(
        SessionConfig(["x"], print_stats=True, eof_grace=5.0),
        eng,
        cast("trio.abc.ReceiveStream", streams[0]),
        cast("trio.abc.SendStream", streams[1]),
        Logger(log, "debug"),
        stderr=got.append,
        backend=backend,
    )


def test_the_stats_line_escapes_names_and_stays_json() -> None:
    got: list[bytes] = []
    _session(fed_engine(), io.StringIO(), got)._print_stats()
    [line] = got
    text = clean(line.decode())
    assert text.startswith("ccbridge stats: {")
    assert text.endswith("}\n")
    doc = json.loads(text.split(": ", 1)[1])
    assert any(EVIL[:20] in k for k in doc["rules"]["vocabulary"])  # the same JSON value


async def test_a_session_with_an_evil_backend_prints_clean_stats_and_logs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def backend(b: MemoryBackend) -> int:
        await b.write(lines(evil_frames()))
        await trio.sleep(2)  # the client's line reaches the session meanwhile
        return 0

    in_send, in_recv = trio.testing.memory_stream_one_way_pair()
    out_send, out_recv = trio.testing.memory_stream_one_way_pair()
    got: list[bytes] = []
    log = io.StringIO()
    async with trio.open_nursery() as n:
        eng = build_engine("cbc-to-claude", epoch_ms=0)
        s = _session(eng, log, got, MemoryBackend(n, backend), (in_recv, out_send))

        async def client() -> None:
            await in_send.send_all(lines([{"type": EVIL}]))
            await trio.sleep(1)
            await in_send.aclose()
            while await out_recv.receive_some(65536):
                pass

        n.start_soon(client)
        with trio.fail_after(60):
            await s.run()
        await out_send.aclose()
    stderr = b"".join(got).decode()
    assert "ccbridge stats: " in stderr
    clean(stderr)
    assert "dropped a evil\\x1b]0;pwned" in clean(log.getvalue())  # the vocabulary's debug line


def test_the_logger_escapes_message_and_rule() -> None:
    buf = io.StringIO()
    log = Logger(buf, "debug")
    log.warning(EVIL, rule=EVIL)
    log.debug(f"type {EVIL!r} and raw {EVIL}")
    text = clean(buf.getvalue())
    assert text.count("\n") == 2  # one line each
    assert "[evil\\x1b]0;pwned\\x07" in text


# -- check, diff, ab, conformance, drift, progress, HTML -----------------------------------


def test_check_text_and_json_escape_the_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = dump(evil_frames(), tmp_path / "evil.jsonl")
    assert "evil\\x1b]0;pwned" in clean(format_text(check(cap)))
    for argv in ([str(tmp_path / "evil.jsonl")], [str(tmp_path / "evil.jsonl"), "--json"]):
        assert check_cmd.main(argv) == 1
        out = capsys.readouterr()
        clean(out.out)
        clean(out.err)
    bad = tmp_path / f"{EVIL[:-1]}.jsonl"  # a capture's file name is shown escaped too (no NUL)
    bad.write_bytes(b"")
    check_cmd.main([str(bad)])
    clean(capsys.readouterr().err)


def test_diff_text_json_and_command_escape_the_streams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = dump([{"type": "assistant", "message": {"content": "ok"}, "k": "v"}], tmp_path / "a")
    b = dump([{"type": "assistant", "message": {"content": EVIL}, EVIL: EVIL}], tmp_path / "b")
    r = diff(a, b)
    assert not r.equivalent
    assert "\\x1b]0;pwned" in clean(diff_text(r, names=(EVIL, EVIL)))
    clean(diff_text(r, color=True, names=(EVIL, EVIL)).replace("\x1b[", "["))
    clean(diff_json(r, (EVIL, EVIL)))
    assert diff_cmd.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    clean(capsys.readouterr().out)
    assert diff_cmd.main([str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 1
    clean(capsys.readouterr().out)


def test_the_html_report_and_index_escape_the_streams() -> None:
    a = dump([{"type": "assistant", "message": {"content": "ok"}}])
    b = dump(evil_frames())
    page = report_html.render_report(report_html.build(a, b, (EVIL, EVIL), scenario=EVIL))
    assert "evil\\x1b]0;pwned" in clean(page)
    row = report_html.IndexRow(EVIL, EVIL, (EVIL,), None)
    clean(report_html.render_index(EVIL, EVIL, (EVIL,), [row], [EVIL]))


def _outcome(tmp_path: Path, error: str | None) -> ab_cmd.Outcome:
    side = ab_cmd.Side(EVIL, EVIL, "a")
    job = ab_cmd.Job(tmp_path / EVIL, cast(Any, None), side, tmp_path / f"{EVIL}.jsonl")
    return ab_cmd.Outcome(job, None, error)


def test_ab_report_text_and_json_escape_runs_and_streams(tmp_path: Path) -> None:
    a = dump([{"type": "assistant", "message": {"content": "ok"}}])
    b = dump(evil_frames())
    item = conformance.Item("difference", EVIL, "changed", 1, EVIL, "cbc", EVIL, EVIL)
    pair = ab_cmd.Pair(
        EVIL,
        _outcome(tmp_path, EVIL),
        _outcome(tmp_path, EVIL),
        diff(a, b),
        (check(a), check(b)),
        [item],
    )
    failed = ab_cmd.Pair(EVIL, _outcome(tmp_path, EVIL), _outcome(tmp_path, EVIL), error=EVIL)
    text = clean(ab_cmd.report_text([pair, failed]))
    assert "== evil\\x1b]0;pwned" in text
    clean(ab_cmd.report_json([pair, failed], tmp_path / EVIL))


def test_conformance_text_markdown_and_json_escape_the_streams() -> None:
    known = conformance.load_known(
        '[[difference]]\nid="t"\npaths=["**nothing"]\ncbc="c"\nevidence="e"\n', "k.toml"
    )
    meta = {"backend": "claude", "backend_version": EVIL, "created": EVIL}
    good = dump([{"type": "assistant", "message": {"content": "ok"}}])
    claude = capture.Capture(meta, good.records, "ccbridge")
    bad = capture.Capture({**meta, "backend": "cbc"}, dump(evil_frames()).records, "ccbridge")
    rows = [
        conformance.row(EVIL, {"claude": claude, "cbc-bridged": bad, "cbc-raw": bad}, known),
        conformance.row(EVIL + "2", {"claude": claude}, known),
    ]
    text = clean(render.render_text(rows, known))
    assert "evil\\x1b]0;pwned" in text
    clean(render.render_markdown(rows, known, source=EVIL, command=EVIL))
    clean(render.render_details(rows, known, source=EVIL, command=EVIL))
    clean(render.to_json(rows, known))


def test_drift_reports_escape_names_versions_and_help() -> None:
    verified = drift.vocabulary(dump([{"type": "assistant", "message": {"content": "ok"}}]))
    candidate = drift.vocabulary(dump(evil_frames()))
    helps = (drift.parse_help("  --ok  fine\n"), drift.parse_help(f"  --{EVIL}  {EVIL}\n"))
    rep = drift.report(EVIL, EVIL, EVIL, [(EVIL, verified, candidate)], help_pair=helps)
    assert rep.unknown
    text = clean(drift.format_text([rep]))
    assert "evil\\x1b]0;pwned" in text
    bridged = [drift_cmd.Bridged(EVIL, 1, [EVIL], [EVIL])]
    clean(drift_cmd.format_text([rep], bridged, [EVIL]))
    clean(drift_cmd.to_json([rep], bridged, [EVIL], Path(EVIL)))


def test_progress_lines_and_status_escape_scenario_names() -> None:
    buf = io.StringIO()
    p = Progress([(EVIL, EVIL), (EVIL, "b")], buf, live=True, clock=lambda: 0.0, width=400)
    p.started(0)
    p.line(EVIL)
    p.done(0, False)
    p.close()
    clean(buf.getvalue().replace("\r\x1b[2K", ""))  # its own line clearing only
