"""compat.jsmeta: a workflow's ``meta`` read from the script text, never evaluated."""

from __future__ import annotations

import pytest

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
