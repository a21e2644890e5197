"""compat.jsmeta: a workflow's ``meta`` read from the script text, never evaluated."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.jsmeta import MAX_DEPTH, MetaError, meta_summary, parse_meta

# the script of cbc-2.163.0/mockoai_workflow-inline (and its Claude twin)
INLINE = (
    "export const meta = {\n  name: 'mock-flow',\n  description: 'Mock two-phase workflow',\n"
    "  phases: [ { title: 'Scan', detail: 'one agent' }, { title: 'Sum', detail: 'one agent' } ],"
    "\n}\nphase('Scan')\nconst a = await agent('say scan-result', {label: 'scanner'})\n"
    "phase('Sum')\nconst b = await agent('say sum-result', {label: 'summer'})\n"
    "log('finished both')\nreturn {a, b}\n"
)


def test_capture_script() -> None:
    meta = parse_meta(INLINE)
    assert meta == {
        "name": "mock-flow",
        "description": "Mock two-phase workflow",
        "phases": [
            {"title": "Scan", "detail": "one agent"},
            {"title": "Sum", "detail": "one agent"},
        ],
    }
    assert meta_summary(meta) == ("mock-flow", "Mock two-phase workflow", ["Scan", "Sum"])


def test_quotes_comments_trailing_commas_and_escapes() -> None:
    src = """
    // export const meta = { name: 'in a comment' }
    const s = "export const meta = { name: 'in a string' }"
    export const meta = {
      /* block */ "name": "a\\"b\\u0021\\x41\\u{1F600}",  // trailing comment
      'description': `multi
line`,
      phases: [{title: 'P1',}, {title: "P2", n: 0x1f, f: -1.5e2, t: true, u: undefined},],
      esc: 'tab\\there\\nnew\\\\line\\'q\\' \\0',
    };
    """
    meta = parse_meta(src)
    assert meta["name"] == 'a"b!A\U0001f600'
    assert meta["description"] == "multi\nline"
    assert meta["esc"] == "tab\there\nnew\\line'q' \0"
    assert meta["phases"] == [
        {"title": "P1"},
        {"title": "P2", "n": 31, "f": -150.0, "t": True, "u": None},
    ]


def test_computed_values_are_left_out_not_evaluated() -> None:
    src = """export const meta = {
      name: `flow-${process.env.HOME}`,
      description: 'kept',
      phases: PHASES.map(p => ({ title: p, x: [1, 2] })),
      extra: require('child_process').execSync('rm -rf /'),
      ...spread,
      run() { return 1 },
      concat: 'a' + 'b',
    }"""
    meta = parse_meta(src)
    assert meta == {"description": "kept"}
    assert meta_summary(meta) == (None, "kept", None)


def test_typescript_annotation_and_let() -> None:
    assert parse_meta("export const meta: WorkflowMeta = { name: 'x' }") == {"name": "x"}
    assert parse_meta("let meta = {name: 'y'}") == {"name": "y"}


@pytest.mark.parametrize(
    "src",
    [
        "phase('x')",  # no meta at all
        "export const meta = makeMeta()",  # not a literal
        "export const meta = { name: 'x'",  # unterminated
        "export const meta = { name: 'x\n' }",  # newline in a quoted string
        "export const meta = { [k]: 1 }",  # computed key
        "export const meta = { name 'x' }",  # missing colon
        "export const meta = { a: /* never closed",
        "export const meta = " + "{a:" * (MAX_DEPTH + 2) + "1" + "}" * (MAX_DEPTH + 2),
    ],
)
def test_malformed_meta_raises(src: str) -> None:
    with pytest.raises(MetaError):
        parse_meta(src)


def test_summary_ignores_non_string_fields() -> None:
    assert meta_summary({"name": 3, "description": "", "phases": [{"title": 1}]}) == (
        None,
        None,
        None,
    )
    assert meta_summary({"phases": ["A", {"title": "B"}]}) == (None, None, ["A", "B"])


def _old_in_comment_or_string(text: str, pos: int) -> bool:
    """What parse_meta asked of every ``meta`` it found before: a scan from the start
    each time (quadratic in the number of ``meta`` a comment or string holds)."""
    from compat.jsmeta import _string_end

    i, n = 0, min(pos, len(text))
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            if j < 0 or j >= pos:
                return True
            i = j + 1
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0 or j + 2 > pos:
                return True
            i = j + 2
        elif c in "'\"`":
            j = _string_end(text, i)
            if j > pos:
                return True
            i = j
        else:
            i += 1
    return False


_JS_PIECES = st.sampled_from(
    ["//", "/*", "*/", "/", "*", "\n", "'", '"', "`", "\\", "x", " ", "{", "}", ";"]
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_JS_PIECES, max_size=24).map("".join), st.data())
def test_comments_and_strings_are_told_as_before(text: str, data: st.DataObject) -> None:
    """Asked in order (as parse_meta asks), positions are inside a comment or string
    exactly where the old scan from the start said so."""
    from compat.jsmeta import _Outside

    positions = sorted(
        data.draw(st.lists(st.integers(0, len(text)), max_size=len(text) + 1), "positions")
    )
    outside = _Outside(text)
    assert [outside.inside(p) for p in positions] == [
        _old_in_comment_or_string(text, p) for p in positions
    ]


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(
        _JS_PIECES | st.sampled_from(["const meta = {a: 1}", "export const meta = {b: 'x'}"]),
        max_size=12,
    ).map("".join)
)
def test_the_meta_found_is_the_first_outside_comments_and_strings(text: str) -> None:
    import re

    from compat.jsmeta import _META, _Parser

    def old(script: str) -> object:
        for m in _META.finditer(script):
            if _old_in_comment_or_string(script, m.start()):
                continue
            p = _Parser(script, m.end())
            if p.peek() != "{":
                raise MetaError("meta is not an object literal")
            return p.value(0)
        raise MetaError("none")

    def outcome(f: object, script: str) -> object:
        try:
            return f(script)  # type: ignore[operator]
        except MetaError as exc:
            return ("error", re.sub(r"^no `.*", "none", str(exc)))

    assert outcome(parse_meta, text) == outcome(old, text)


@pytest.mark.parametrize(
    "filler", ["// const meta = 1\n", "/* const meta = 1 */", "' const meta = 1'\n"]
)
def test_many_metas_in_comments_are_passed_at_once(filler: str) -> None:
    """Each ``meta`` a comment or string holds was checked by a scan from the script's
    start: 28 s for 16,000 commented-out lines (288 KB), growing with the square; the
    script is the model's (a Workflow call's input). This returns."""
    script = filler * 200_000 + "export const meta = {name: 'n'}\n"
    assert parse_meta(script) == {"name": "n"}
    with pytest.raises(MetaError):
        parse_meta("/* " + "const meta = 1\n" * 200_000)
