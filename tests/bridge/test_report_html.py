"""The HTML A/B report (analysis.report_html, analysis.report): built on the twin captures, every
difference placed on the frames the diff compared, hostile backend strings inert, and the
page checked in a real headless Chromium (Debian's package; skipped, with the reason,
where it is not installed)."""

from __future__ import annotations

import base64
import html.parser
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from analysis import ab_cmd, conformance_cmd, diff_cmd, report_html
from analysis.diff import diff
from compat import capture
from compat.capture import Capture

from ..conftest import CAPTURES, REPO

TWINS = CAPTURES / "twins"
KNOWN = ab_cmd.load_known_default()
EVIL = (
    '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    '<b id="evil">bold</b>\u202e&amp;'
)


def twin(name: str, role: str) -> Capture:
    return ab_cmd.read(TWINS / f"{name}.{role}.jsonl")


def scenarios() -> list[str]:
    return sorted(conformance_cmd.twin_files(TWINS))


class Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def parsed(page: str) -> Tags:
    t = Tags()
    t.feed(page)
    t.close()
    return t


def report(
    name: str = "workflow-inline", a: Capture | None = None, b: Capture | None = None
) -> report_html.Report:
    return report_html.build(
        a or twin(name, "claude"),
        b or twin(name, "cbc-bridged"),
        ("claude", "cbc-bridged"),
        known=KNOWN,
    )


# -- the alignment the page reuses ------------------------------------------------------


@pytest.mark.parametrize("name", scenarios())
def test_every_difference_sits_on_exactly_one_compared_thing(name: str) -> None:
    for role in ("cbc-bridged", "cbc-raw"):
        r = diff(twin(name, "claude"), twin(name, role))
        assert r.alignment is not None
        placed = [i for u in r.alignment.units for i in u.diffs]
        assert sorted(placed) == list(range(len(r.differences)))
        for u in r.alignment.units:
            for i in u.diffs:  # its path names the unit (after the turn label)
                assert r.differences[i].path.split(" / ", 1)[1].startswith(u.base)


@pytest.mark.parametrize("name", scenarios())
def test_every_field_difference_is_highlighted_where_it_is(name: str) -> None:
    """A difference inside a frame pair resolves to a location in the frame(s) that have
    it: both for 'changed', A's for 'only-a', B's for 'only-b'."""
    for role in ("cbc-bridged", "cbc-raw"):
        rep = report(name, b=twin(name, role))
        assert rep.result.alignment is not None
        for u in rep.result.alignment.units:
            if u.a is None or u.b is None:
                continue
            ma, mb = report_html._marks(rep, u)
            for i in u.diffs:
                d = rep.result.differences[i]
                rel = d.path.split(" / ", 1)[1][len(u.base) :]
                if rel.startswith(" (turn)") or not rel:
                    continue  # the turn a task frame arrived in: not a field
                where = [ma] if d.kind == "only-a" else [mb] if d.kind == "only-b" else [ma, mb]
                for marks, f in zip(where, [u.a if d.kind != "only-b" else u.b, u.b], strict=False):
                    at = report_html._resolve(f.obj, rel)
                    assert at is not None, (d.path, rel)
                    assert at in marks


def test_resolve_handles_dotted_keys_indices_and_workflow_entries() -> None:
    obj = {
        "a.b": {"c": [1, {"d": 2}]},
        "a": {"b": 3},
        "workflow_progress": [
            {"type": "workflow_phase", "index": 1},
            {"type": "workflow_agent", "label": "x.y", "phaseIndex": 1, "state": "done"},
        ],
    }
    assert report_html._resolve(obj, "a.b.c[1].d") == ("a.b", "c", 1, "d")
    assert report_html._resolve(obj, "a.b.c[5]") is None
    assert report_html._resolve(obj, ' / workflow_progress agent "x.y" (phase 1).state') == (
        "workflow_progress",
        1,
        "state",
    )
    assert report_html._resolve(obj, "zzz") is None


# -- the page ------------------------------------------------------------------------------


def test_the_report_shows_both_sides_every_difference_and_its_reason() -> None:
    rep = report("bg-agent")
    page = report_html.render_report(rep)
    t = parsed(page)
    n = len(rep.result.differences)
    assert n > 0
    rows = [a for tag, a in t.tags if tag == "tr" and (a.get("class") or "").startswith("d ")]
    # each difference once (tasks sit after the turn they started in: not the diff's order)
    assert sorted(int(str(r["id"])[2:]) for r in rows) == list(range(n))
    text = "".join(t.text)
    for d, item in zip(rep.result.differences, rep.reasons, strict=True):
        assert d.path in text
        assert item is not None
        assert item.reason in text
    # every frame of both client views is on the page (turn frames and task frames)
    al = rep.result.alignment
    assert al is not None
    frames = sum(1 for tag, a in t.tags if tag == "details" and a.get("class") == "frame")
    assert frames == rep.result.summary["frames"][0] + rep.result.summary["frames"][1]
    # the summary: scenario, versions, violations per side, reasons
    assert "bg-agent" in text
    assert "2.1.220" in text
    assert "2.163.0" in text
    assert "Differences by reason" in text
    assert "contract violations" in text
    hl = [a for tag, a in t.tags if tag == "span" and "hl" in (a.get("class") or "").split()]
    assert len(hl) >= n // 2
    # masked values are marked as such, and no unmasked id leaks through
    assert "&lt;session#1&gt;" in page
    assert 'class="mask"' in page


def hostile(c: Capture) -> Capture:
    """``c`` with markup and script planted in every workflow_name, label, description and
    tool output, and in the scenario's name."""

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            out = {k: walk(x, k) for k, x in v.items()}
            if v.get("type") == "tool_result" and isinstance(v.get("content"), str):
                out["content"] = EVIL + v["content"]
            return out
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        if isinstance(v, str) and key in ("workflow_name", "label", "description"):
            return EVIL + v
        return v

    lines = [capture.encode_header({**c.header, "scenario": EVIL})]
    for r in c.records:
        data = r.data
        if r.kind in ("stdout", "client_out"):
            try:
                data = json.dumps(walk(json.loads(data))).encode()
            except ValueError:
                pass
        lines.append(capture.encode_record(r.t, r.kind, data))
    return capture.parse(b"".join(lines).split(b"\n"))


ALLOWED = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "h1",
    "h2",
    "div",
    "main",
    "span",
    "b",
    "p",
    "table",
    "tr",
    "th",
    "td",
    "a",
    "section",
    "details",
    "summary",
    "pre",
    "label",
    "input",
    "button",
    "script",
}


def test_hostile_backend_strings_neither_render_nor_execute() -> None:
    a, b = (
        hostile(twin("workflow-inline", "claude")),
        hostile(twin("workflow-inline", "cbc-bridged")),
    )
    page = report_html.render_report(report_html.build(a, b, (EVIL, "b"), known=KNOWN))
    t = parsed(page)
    assert {tag for tag, _ in t.tags} <= ALLOWED
    assert t.scripts == [report_html._SCRIPT]  # no </script> break-out, no planted script
    assert not [tag for tag, _ in t.tags if tag in ("img", "b") and _.get("id") == "evil"]
    assert not any(k.startswith("on") for _, attrs in t.tags for k in attrs)
    text = "".join(t.text)
    assert "window.__pwned=1" in text
    assert 'onerror="window.__pwned=2"' in text
    assert "\u202e" not in page
    assert "\\u202e" in text
    assert "&amp;amp;" in page  # escaped once more, never decoded
    csp = next(
        a["content"] or ""
        for tag, a in t.tags
        if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert "default-src 'none'" in csp
    assert "script-src 'sha256-" in csp


def test_the_index_escapes_and_links(tmp_path: Path) -> None:
    from analysis import report as bridge_report

    made: list[str | None] = []

    def make(back: str | None) -> report_html.Report:
        made.append(back)
        return report("simple-success")

    out = tmp_path / "all.html"
    written = bridge_report.write_index(
        out,
        EVIL,
        EVIL,
        ["x"],
        [
            bridge_report.Entry("a/../b c", (EVIL,), True, make),
            bridge_report.Entry("a/../b c", ("again",), False, make),
            bridge_report.Entry("missing", ("no capture",), None, None),
        ],
    )
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "all.html",
        "all/a_.._b_c.html",
        "all/a_.._b_c-2.html",
    ]
    assert made == ["../all.html", "../all.html"]
    t = parsed(out.read_text())
    hrefs = [a["href"] for tag, a in t.tags if tag == "a"]
    assert hrefs == ["all/a_.._b_c.html", "all/a_.._b_c-2.html"]
    assert t.scripts == []
    assert not [tag for tag, a in t.tags if a.get("id") == "evil"]


# -- the commands --------------------------------------------------------------------------


def test_diff_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    rc = diff_cmd.main(
        [
            str(TWINS / "bg-bash.claude.jsonl"),
            str(TWINS / "bg-bash.cbc-bridged.jsonl"),
            "--html",
            str(out),
        ]
    )
    assert rc == 1  # the exit status is the diff's, as without --html
    page = out.read_text()
    assert "bg-bash" in page
    assert "cbc-bridged" in page
    assert f"wrote {out}" in capsys.readouterr().err
    assert (
        diff_cmd.main(
            [
                str(TWINS / "bg-bash.claude.jsonl"),
                str(TWINS / "bg-bash.cbc-bridged.jsonl"),
                "--html",
                str(tmp_path / "r.html" / "x"),
            ]
        )
        == 2
    )


def test_conformance_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "conf.html"
    assert conformance_cmd.main(["--html", str(out)]) == 0
    capsys.readouterr()
    t = parsed(out.read_text())
    hrefs = [a["href"] for tag, a in t.tags if tag == "a"]
    assert hrefs == [f"conf/{n}.html" for n in scenarios()]
    for h in hrefs:
        sub = parsed((tmp_path / str(h)).read_text())
        assert any(a.get("href") == "../conf.html" for tag, a in sub.tags if tag == "a")


def test_ab_html_and_the_per_scenario_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    r = shlex.join(
        [
            sys.executable,
            "-m",
            "bridge",
            "replay",
            "--materialize",
            str(CAPTURES / "cbc-workflow-inline.jsonl"),
        ]
    )
    out = tmp_path / "ab.html"
    rc = ab_cmd.main(
        [
            str(REPO / "scenarios" / "workflow-inline.toml"),
            "--a",
            r,
            "--b",
            r,
            "--via-b",
            "cbc-to-claude",
            "--out",
            str(tmp_path),
            "--html",
            str(out),
            "--time-limit",
            "30",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1
    assert "\x1b" not in err  # not a tty: no status line
    [line] = [ln for ln in err.splitlines() if ln.startswith("workflow-inline: ")]
    assert "difference" in line
    assert "contract A" in line
    page = out.read_text()
    assert "workflow-inline" in page
    assert "via cbc-to-claude" in page
    assert (
        ab_cmd.main(
            [
                str(REPO / "scenarios" / "workflow-inline.toml"),
                "--a",
                r,
                "--b",
                r,
                "--out",
                str(tmp_path / "q"),
                "--quiet",
                "--time-limit",
                "30",
            ]
        )
        == 0
    )
    assert capsys.readouterr().err == ""


# -- in a real browser --------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


#: exec argv[3:] with fd argv[1] as 3 and argv[2] as 4, whatever numbers they had (a dup may
#: land on 3 or 4 itself, where dup2 changes nothing: hence set_inheritable)
_ON_FDS_3_4 = (
    "import os, sys; a, b = os.dup(int(sys.argv[1])), os.dup(int(sys.argv[2])); "
    "os.dup2(a, 3); os.dup2(b, 4); os.set_inheritable(3, True); "
    "os.set_inheritable(4, True); os.execv(sys.argv[3], sys.argv[3:])"
)


class Browser:
    """Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
    NUL-separated JSON on fds 3 and 4), stdlib only."""

    def __init__(self, exe: str, profile: Path) -> None:
        self.cmd_r, self.cmd_w = os.pipe()
        self.ev_r, self.ev_w = os.pipe()
        args = [*FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ON_FDS_3_4, str(self.cmd_r), str(self.ev_w), exe, *args],
            pass_fds=(self.cmd_r, self.ev_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(self.cmd_r)
        os.close(self.ev_w)
        self.buf = b""
        self.n = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def call(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        self.n += 1
        msg: dict[str, Any] = {"id": self.n, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._next(timeout)
            if m.get("id") == self.n:
                assert "error" not in m, m
                return dict(m.get("result", {}))
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 30) -> None:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._next(timeout))
        self.events = [e for e in self.events if e.get("method") != method]

    def _next(self, timeout: float) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.ev_r], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.ev_r, 1 << 20)
            if not chunk:
                raise EOFError("chromium went away")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return dict(json.loads(msg))

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Page.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=1400,
            height=1000,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.navigate(url)

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def js(self, expr: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (OSError, TimeoutError, EOFError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.cmd_w)
        os.close(self.ev_r)


VISIBLE = "[...document.querySelectorAll('.row')].filter(r => r.offsetParent !== null)"


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)",
)
def test_the_report_in_headless_chromium(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    a, b = hostile(twin("bg-agent", "claude")), hostile(twin("bg-agent", "cbc-bridged"))
    rep = report_html.build(a, b, ("claude " + EVIL, "cbc-bridged"), known=KNOWN)
    page = report_html.render_report(rep)
    out = tmp_path / "report.html"
    out.write_text(page)
    rows = page.count('<div class="row ')
    diff_rows = page.count('<div class="row has-diff"')
    assert 0 < diff_rows < rows
    browser = Browser(CHROMIUM, tmp_path / "profile")
    try:
        browser.open(out.as_uri())
        assert browser.js("document.querySelectorAll('.row').length") == rows
        assert browser.js(f"{VISIBLE}.length") == rows
        assert browser.js("document.querySelectorAll('tr.d').length") == len(rep.result.differences)
        # highlighted fields: inside the frames, on the side(s) that have them
        assert browser.js("document.querySelectorAll('.cell.a .hl.changed').length") > 0
        assert browser.js("document.querySelectorAll('.cell.b .hl.changed').length") > 0
        assert browser.js(
            "getComputedStyle(document.querySelector('.hl.changed')).backgroundColor"
        ) not in ("", "rgba(0, 0, 0, 0)")
        # nothing planted ran or rendered; the script of the page did run
        assert browser.js("typeof window.__pwned") == "undefined"
        assert browser.js("document.querySelectorAll('#evil, img').length") == 0
        assert browser.js("document.scripts.length") == 1
        assert "window.__pwned=1" in browser.js("document.body.textContent")
        assert browser.js("document.title").startswith("A/B: </script>")
        browser.screenshot(tmp_path / "report.png")
        # the filter: only the rows with a difference stay
        browser.js("document.getElementById('only-diffs').click()")
        assert browser.js("document.body.classList.contains('only-diffs')") is True
        assert browser.js(f"{VISIBLE}.length") == diff_rows
        assert browser.js(f"{VISIBLE}.every(r => r.classList.contains('has-diff'))") is True
        browser.screenshot(tmp_path / "report-only-differences.png")
        browser.js("document.getElementById('only-diffs').click()")
        assert browser.js(f"{VISIBLE}.length") == rows
        # collapse all / expand all
        browser.js("document.querySelector('button[data-open=\"0\"]').click()")
        assert browser.js("document.querySelectorAll('details.frame[open]').length") == 0
        browser.js("document.querySelector('button[data-open=\"1\"]').click()")
        assert browser.js("document.querySelectorAll('details.frame:not([open])').length") == 0
        # a link to the filtered view (from another page: a hash change alone does not load)
        browser.navigate("about:blank")
        browser.navigate(out.as_uri() + "#only-differences")
        assert browser.js(f"{VISIBLE}.length") == diff_rows
    finally:
        browser.close()
    print(f"screenshots: {tmp_path / 'report.png'} {tmp_path / 'report-only-differences.png'}")
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
