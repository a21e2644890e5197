"""``cbc-on-claude`` (bridge/dropin_cbc.py) with a fake Claude: the version cbc reports, the
lookup order (CCBRIDGE_BACKEND, ``claude`` on PATH, the backends cache), the launch line
Claude gets, and exit 127 with what was tried."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.dropin_cbc import find_claude

REPO = Path(__file__).resolve().parents[2]
#: a Claude that writes its argv and two env values as an init frame, then answers a
#: user line with an interrupted-looking error result and exits at EOF
FAKE = """#!{py}
import json, os, sys
print(json.dumps({{"type": "system", "subtype": "init", "session_id": "{sid}",
                   "argv": json.dumps(sys.argv[1:]), "where": "{where}",
                   "bg": os.environ.get("CLAUDE_CODE_DISABLE_BACKGROUND_TASKS")}}), flush=True)
for line in sys.stdin:
    print(json.dumps({{"type": "result", "subtype": "error_during_execution",
                       "is_error": True, "errors": ["x"], "terminal_reason": "aborted_tools",
                       "session_id": "{sid}"}}), flush=True)
"""


def fake(path: Path, where: str, sid: str = "00000000-0000-4000-8000-000000000001") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE.format(py=sys.executable, where=where, sid=sid))
    path.chmod(0o755)
    return path


def run(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    full = {
        "PATH": env.pop("PATH", ""),
        "HOME": env.pop("HOME", "/nonexistent"),
        "PYTHONPATH": str(REPO),
        **env,
    }
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from bridge.dropin_cbc import main; sys.exit(main())",
            *args,
        ],
        input=stdin,
        text=True,
        capture_output=True,
        env=full,
        timeout=60,
        check=False,
    )


def test_version_is_cbcs() -> None:
    out = run(["--version"], {})
    assert (out.returncode, out.stdout) == (0, "2.163.0\n")
    assert "claude-to-cbc" in run(["--help"], {}).stdout


def test_claude_is_found_in_claudes_order(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fake(cache / "claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "cache")
    on_path = fake(tmp_path / "bin/claude", "path")
    env = {"PATH": str(tmp_path / "bin"), "CCBRIDGE_BACKENDS_DIR": str(cache)}
    assert find_claude(env, None)[0] == [str(on_path)]
    assert find_claude(env, "/x/claude --flag")[0] == ["/x/claude", "--flag"]
    got, tried = find_claude({**env, "PATH": ""}, None)
    assert got is not None
    assert got[0].endswith("claude.exe")
    assert tried[:2] == ["CCBRIDGE_BACKEND (unset)", "claude on PATH (not found)"]
    none, tried = find_claude({"PATH": "", "CCBRIDGE_BACKENDS_DIR": str(tmp_path / "no")}, None)
    assert none is None
    assert len(tried) == 3


def test_no_claude_exits_127_and_says_what_it_tried(tmp_path: Path) -> None:
    out = run([], {"CCBRIDGE_BACKENDS_DIR": str(tmp_path)})
    assert out.returncode == 127
    assert "claude on PATH" in out.stderr
    assert "ccbridge backends install" in out.stderr


def test_a_cbc_sdk_launch_reaches_claude_translated(tmp_path: Path) -> None:
    from compat.argv_cbc import claude_session_id

    sid = claude_session_id("bot:7")
    fake(tmp_path / "bin/claude", "path", sid)
    argv = [
        "--input-format=stream-json",
        "--output-format=stream-json",
        "--verbose",
        "--setting-sources",
        "none",
        "--session-id",
        "bot:7",
    ]
    user = json.dumps(
        {"type": "user", "message": {"role": "user", "content": "hi"}, "session_id": "bot:7"}
    )
    out = run(
        argv,
        {"PATH": str(tmp_path / "bin"), "CODEBUDDY_CODE_DISABLE_BACKGROUND_TASKS": "1"},
        user + "\n",
    )
    assert out.returncode == 0, out.stderr
    init, result = (json.loads(x) for x in out.stdout.splitlines())
    assert json.loads(init["argv"]) == [
        "--input-format=stream-json",
        "--output-format=stream-json",
        "--verbose",
        "--setting-sources",
        "",
        "--session-id",
        sid,
        "--permission-prompt-tool",
        "stdio",
    ]
    assert init["session_id"] == "bot:7"
    assert init["bg"] == "1"
    assert (result["subtype"], result["is_error"], result["session_id"]) == (
        "success",
        False,
        "bot:7",
    )


#: a Claude that answers initialize and one user line
ANSWERING = """#!{py}
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    if o.get("type") == "control_request":
        print(json.dumps({{"type": "control_response", "response": {{"subtype": "success",
              "request_id": o["request_id"], "response": {{"models": [], "account": {{}}}}}}}}),
              flush=True)
    elif o.get("type") == "user":
        print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
              "result": "from fake claude", "session_id": "s"}}), flush=True)
"""


@pytest.mark.parametrize("way", ["exe", "executable", "plain"])
def test_the_js_sdk_runs_it_the_documented_ways(way: str, tmp_path: Path) -> None:
    """``plain``: the path as is, which the SDK runs under node (REVERSE.md gap 26): fails."""
    node = shutil.which("node")
    sdk = REPO / "tests/js/node_modules/@tencent-ai/agent-sdk"
    dropin = Path(sys.executable).with_name("cbc-on-claude")
    if node is None or not sdk.is_dir() or not dropin.exists():
        pytest.skip(
            "node, @tencent-ai/agent-sdk (tests/js: npm install) or cbc-on-claude "
            "(pip install -e .) missing"
        )
    claude = tmp_path / "claude"
    claude.write_text(ANSWERING.format(py=sys.executable))
    claude.chmod(0o755)
    cfg: dict[str, str] = {"backend": str(claude), "cli": str(dropin)}
    if way == "exe":
        cfg["cli"] = str(dropin.with_name("cbc-on-claude.exe"))
    elif way == "executable":
        cfg["executable"] = sys.executable
    out = subprocess.run(
        [node, "cbc_sdk_runtime.mjs", json.dumps(cfg)],
        cwd=REPO / "tests/js",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if way == "plain":
        assert out.returncode != 0
        return
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout.splitlines()[-1])["result"] == "from fake claude"


def test_help_tells_warned_options_from_those_left_out_with_nothing_lost() -> None:
    """The options the SDKs and editor adapters always pass and cbc needs not (said at
    info) are not listed among the ones dropped with a warning."""
    from bridge.dropin import help_text

    text = help_text()
    warned = text.split("dropped with one warning on stderr:")[1].split("\n\n")[0]
    quiet = text.split("left out, nothing lost")[1].split("\n\n")[0]
    assert "--allow-dangerously-skip-permissions" in quiet
    assert "--permission-prompt-tool stdio" in quiet
    assert "--allow-dangerously-skip-permissions" not in warned
    assert "--max-budget-usd" in warned
