"""The capture format: versioned, lossless, redacted; readers for all three flavours."""

from __future__ import annotations

import base64

import orjson
import pytest

from compat import capture
from compat.redact import REDACTED, redact_line


def test_roundtrip_text_binary_partial_and_exit() -> None:
    lines = [
        capture.encode_header(capture.header("test", argv=["x"])),
        capture.encode_record(0.5, "stdin", b'{"type":"user"}'),
        capture.encode_record(0.6, "stdout", b"\xff\xfe not utf-8"),
        capture.encode_record(0.7, "client_out", b'{"type":"res', partial=True),
        capture.encode_record(0.8, "exit", b"3"),
    ]
    cap = capture.parse(lines)
    assert cap.flavor == "ccbridge"
    assert cap.header["version"] == capture.VERSION
    assert [r.data for r in cap.records[:3]] == [
        b'{"type":"user"}',
        b"\xff\xfe not utf-8",
        b'{"type":"res',
    ]
    assert cap.records[2].partial
    assert orjson.loads(lines[2])["b64"] == base64.b64encode(b"\xff\xfe not utf-8").decode()
    assert cap.exit_status == 3
    assert [r.lineno for r in cap.records] == [2, 3, 4, 5]
    assert cap.client_view() == [cap.records[2]]


def test_newer_version_is_refused_with_a_clear_error() -> None:
    head = orjson.dumps({"format": capture.FORMAT, "version": 99})
    with pytest.raises(capture.CaptureError, match="version 99"):
        capture.parse([head])


def test_reads_reference_transcripts_and_plain_dumps() -> None:
    tr = capture.parse(
        [
            b'{"t": 0.1, "kind": "meta", "text": "{\\"args\\": []}"}',
            b'{"t": 0.2, "kind": "stdout", "text": "{}"}',
            b'{"t": 0.3, "kind": "exit", "text": "killed:-9"}',
        ]
    )
    assert tr.flavor == "transcript"
    assert tr.header["meta"] == {"args": []}
    assert tr.exit_status == 137
    dump = capture.parse([b'{"type":"system"}', b"", b'{"type":"result"}'])
    assert dump.flavor == "stdout"
    assert [r.kind for r in dump.records] == ["stdout", "stdout"]


def test_broken_record_names_its_line() -> None:
    head = capture.encode_header(capture.header("t"))
    with pytest.raises(capture.CaptureError, match="line 2"):
        capture.parse([head, b"{not json\n"])
    last = capture.encode_record(0.5, "exit", b"0")
    with pytest.raises(capture.CaptureError, match="line 2"):
        capture.parse([head, b"{not json\n", last])


def test_a_cut_last_line_is_the_end_of_a_cut_recording() -> None:
    """A recording whose writer stopped (full disk, size limit) ends in part of a record,
    with no newline: what precedes it is read, and the capture says it was cut."""
    head = capture.encode_header(capture.header("t"))
    rec = capture.encode_record(0.1, "stdout", b'{"type":"system"}')
    cut = capture.parse([head, rec, capture.encode_record(0.2, "stdout", b"{}")[:9]])
    assert cut.cut
    assert [r.data for r in cut.records] == [b'{"type":"system"}']
    whole = capture.parse([head, rec])
    assert not whole.cut


def test_initialize_tokens_are_redacted_in_every_record() -> None:
    reply = orjson.dumps(
        {
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": "init",
                "response": {
                    "account": {"token": "eyJhbGciOiJSUzI1NiJ9.secret", "email": "a@b"},
                    "models": [],
                },
            },
        }
    )
    rec = orjson.loads(capture.encode_record(1.0, "stdout", reply))
    assert "eyJhbGci" not in rec["text"]
    assert orjson.loads(rec["text"])["response"]["response"]["account"]["token"] == REDACTED
    h = capture.header("t", env={"CODEBUDDY_API_KEY": "sk-live", "PATH": "/bin"})
    assert h["env"] == {"CODEBUDDY_API_KEY": REDACTED, "PATH": "/bin"}


def test_redaction_leaves_other_lines_untouched() -> None:
    line = b'{"type":"assistant","usage":{"total_tokens":3}}'
    assert redact_line(line) is line


def test_the_older_reference_transcript_shape_is_a_transcript() -> None:
    """A ``{"meta": ...}`` line, then ``{"t", "stream", "line"}`` records (16 reference
    transcripts): read as the backend's stdin/stdout, not as a dump of non-frames."""
    from compat import capture

    data = (
        b'{"meta": {"argv": ["cbc", "-p"]}}\n'
        b'{"t": 0.002, "stream": "stdin", "line": "{\\"type\\": \\"user\\"}"}\n'
        b'{"t": 1.2, "stream": "stdout", "line": "{\\"type\\":\\"result\\"}"}\n'
    )
    cap = capture.read(data)
    assert cap.flavor == "transcript"
    assert cap.header["meta"] == {"argv": ["cbc", "-p"]}
    assert [(r.t, r.kind, r.data) for r in cap.records] == [
        (0.002, "stdin", b'{"type": "user"}'),
        (1.2, "stdout", b'{"type":"result"}'),
    ]
