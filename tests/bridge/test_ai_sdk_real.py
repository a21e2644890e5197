"""The Vercel AI SDK (``ai``) with the community provider ``ai-sdk-provider-claude-code``
(both pinned in ``tests/js/package.json``; the script is ``tests/js/ai_sdk.mjs``), its
``pathToClaudeCodeExecutable`` naming the real Claude Code 2.1.220 or ``claude-on-cbc`` on
the real cbc 2.163.0, with the same expectations (what Claude does, 2026-12-05).

The provider hands the CLI only an allowlist of its environment (HOME, PATH, TMPDIR,
LANG, USER, ANTHROPIC_*, CLAUDE_*...): the drop-in's settings (the backend, where to record
and log, and in ``[env]`` cbc's endpoint and key) come from
``$HOME/.config/ccbridge/ccbridge.toml`` in the case's fresh HOME, and the node process is
given none of them. Claude gets its endpoint from ``ANTHROPIC_BASE_URL`` and one retry
(``CLAUDE_CODE_MAX_RETRIES=1``).

Cases: ``generateText`` and ``streamText`` of a plain prompt (``ok``); a Bash call the CLI
runs (``allowedTools: ["Bash"]``, a ``touch`` that would otherwise need permission),
visible in the stream as a provider-executed tool call and its result, then the model's
``done.``; and, separately, the tool result as Claude gives it (the bare stdout); the model
answering 500 on every try: ``generateText`` rejects with an ``AI_APICallError`` whose
message is the API error. Each case proves from the model's requests which CLI answered
(``client_support.assert_cli_answered``). Marked ``real_backend``; skipped with a reason
without node, the packages, or the CLI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from harness import runner
from harness.model import ModelScript, ModelServer, Rule

from .client_support import (
    JS,
    KINDS,
    Cli,
    Kind,
    assert_cli_answered,
    cbc_config,
    cleanup,
    cli_or_skip,
    keep_dir,
    model_messages,
    new_root,
    node_or_skip,
    open_log,
    package_or_skip,
    read_text,
    recorder_shim,
)

pytestmark = [pytest.mark.real_backend, pytest.mark.client]

SCRIPT = JS / "ai_sdk.mjs"
PACKAGES = {"ai": "7.0.185", "ai-sdk-provider-claude-code": "4.1.0"}
BASH = {"command": "touch ai-bash-ran && echo ai-42", "description": "Mark and say 42"}
RULES = (
    Rule(when="TRIGGER_BASH", tool="Bash", input=BASH, times=1),
    Rule(when="TRIGGER_BROKEN", agent="any", status=500, message="mock internal error"),
)
#: the script's own deadline; the process gets a little more
DEADLINE = 60


@pytest.fixture(params=KINDS)
def cli(request: pytest.FixtureRequest) -> Cli:
    node_or_skip()
    for package, version in PACKAGES.items():
        assert package_or_skip(package) == version
    return cli_or_skip(request.param)


@attrs.frozen
class Run:
    cli: Cli
    summary: dict[str, Any]
    returncode: int
    stderr: str
    model_log: list[dict[str, Any]]
    #: files the case's cwd held at its end
    files: list[str]

    def __getitem__(self, key: str) -> Any:
        return self.summary[key]

    def parts(self, kind: str) -> list[dict[str, Any]]:
        return [p for p in self.summary["parts"] if p["type"] == kind]

    def describe(self) -> str:
        model = [
            {k: e.get(k) for k in ("n", "agent", "latest", "decision")}
            for e in self.model_log
            if e.get("dialect")
        ]
        return (
            f"CLI: {self.cli.kind}, exit {self.returncode}\n"
            f"summary: {json.dumps(self.summary, indent=1)[-6000:]}\n"
            f"model requests: {json.dumps(model)[-3000:]}\nstderr: {self.stderr[-3000:]}"
        )


_RUNS: dict[tuple[Kind, str], Run] = {}


async def run_case(cli: Cli, case: str) -> Run:
    """``ai_sdk.mjs --case CASE`` against the stand-in model, once per CLI and case."""
    if (cli.kind, case) not in _RUNS:
        _RUNS[cli.kind, case] = await _run(cli, case)
    return _RUNS[cli.kind, case]


def node_env(cli: Cli, url: str, dirs: dict[str, str], mark: str) -> tuple[dict[str, str], str]:
    """The node process's environment (nothing of ours: no CCBRIDGE_*, no CODEBUDDY_*) and
    the executable the provider is told to run."""
    env = runner.backend_env("other", url, dirs, mark)
    env = {k: v for k, v in env.items() if not k.startswith("CODEBUDDY_")}
    root = Path(dirs["ROOT"])
    if cli.kind == "claude":
        env["CLAUDE_CODE_MAX_RETRIES"] = "1"
        executable = cli.executable
        if keep_dir() is not None:
            executable = str(recorder_shim(executable, root))
        return env, executable
    for k in [k for k in env if k.startswith("ANTHROPIC_")]:
        del env[k]  # the bundled Claude of a misdirected provider would find no model
    config = Path(dirs["HOME"], ".config", "ccbridge")
    config.mkdir(parents=True)
    (config / "ccbridge.toml").write_text(cbc_config(url, cli, root, mark))
    return env, cli.executable


async def _run(cli: Cli, case: str) -> Run:
    node = node_or_skip()
    dirs, mark = new_root()
    server = ModelServer(ModelScript(rules=RULES), keep_bodies=True)
    pgid: int | None = None
    summary: dict[str, Any] = {}
    try:
        async with trio.open_nursery() as nursery:
            url: str = await nursery.start(server.serve)
            env, executable = node_env(cli, url, dirs, mark)
            argv = [node, str(SCRIPT), "--cli", executable, "--cwd", dirs["CWD"]]
            argv += ["--case", case, "--timeout", str(DEADLINE)]
            out_path = Path(dirs["ROOT"], "node.out")
            err_path = Path(dirs["ROOT"], "node.err")
            with open_log(out_path) as out, open_log(err_path) as err:
                proc = await trio.lowlevel.open_process(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=env,
                    cwd=dirs["CWD"],
                    start_new_session=True,
                )
                pgid = proc.pid
                with trio.move_on_after(DEADLINE + 20):
                    await proc.wait()
            nursery.cancel_scope.cancel()
        if proc.returncode is None:
            pytest.fail(f"ai_sdk.mjs --case {case} hung past its own deadline ({DEADLINE}s)")
        stdout = read_text(out_path)
        stderr = read_text(err_path)
        try:
            summary = json.loads(stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            pytest.fail(f"ai_sdk.mjs printed no summary (exit {proc.returncode}): {stderr}")
        files = sorted(p.name for p in await trio.Path(dirs["CWD"]).iterdir())
        run = Run(cli, summary, proc.returncode, stderr, list(server.log), files)
        assert_cli_answered(cli, server, Path(dirs["ROOT"], "record"))
        return run
    finally:
        cleanup(
            dirs,
            mark,
            pgid=pgid,
            keep=(
                f"ai-sdk-{case}-{cli.kind}",
                server.url,
                cli,
                {
                    "summary": summary,
                    "model": server.log,
                    "model-messages": model_messages(server),
                },
            ),
        )


def assert_versions(run: Run) -> None:
    """The pinned packages ran."""
    versions = {"ai": PACKAGES["ai"], "provider": PACKAGES["ai-sdk-provider-claude-code"]}
    assert run["versions"] == versions, run.describe()


def assert_completed(run: Run) -> None:
    """The script ran to its end, the call did not throw."""
    assert run.returncode == 0, run.describe()
    assert not run["timed_out"], run.describe()
    assert run["error"] is None, run.describe()
    assert_versions(run)
    assert run["thrown"] is None, run.describe()


async def test_generate_text(cli: Cli) -> None:
    run = await run_case(cli, "generate")
    assert_completed(run)
    assert run["text"] == "ok", run.describe()
    assert run["content"] == [{"type": "text", "text": "ok"}], run.describe()
    assert (run["finish_reason"], run["raw_finish_reason"]) == ("stop", "end_turn")
    assert run["session_id"], run.describe()
    assert [e["decision"] for e in run.model_log if e.get("dialect")] == [["text", "ok"]]


async def test_stream_text(cli: Cli) -> None:
    run = await run_case(cli, "stream")
    assert_completed(run)
    assert [p["type"] for p in run["parts"]] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ], run.describe()
    assert [p["text"] for p in run.parts("text-delta")] == ["ok"], run.describe()
    assert run["text"] == "ok", run.describe()
    assert (run["finish_reason"], run["raw_finish_reason"]) == ("stop", "end_turn")
    assert run["session_id"], run.describe()


async def test_tool_call_in_stream(cli: Cli) -> None:
    run = await run_case(cli, "tool")
    assert_completed(run)
    [call] = run.parts("tool-call")
    [result] = run.parts("tool-result")
    assert (call["toolName"], call["input"]) == ("Bash", BASH), run.describe()
    assert call["providerExecuted"] is True, run.describe()
    assert call["dynamic"] is True, run.describe()
    assert result["toolCallId"] == call["toolCallId"], run.describe()
    assert result["toolName"] == "Bash", run.describe()
    assert result["providerExecuted"] is True, run.describe()
    assert not result.get("isError"), run.describe()
    assert "ai-42" in json.dumps(result["output"]), run.describe()
    assert "ai-bash-ran" in run.files, "the CLI did not run the command\n" + run.describe()
    types = [p["type"] for p in run["parts"]]
    assert types.index("tool-call") < types.index("tool-result") < types.index("text-delta")
    assert run["text"] == "done.", run.describe()
    assert (run["finish_reason"], run["raw_finish_reason"]) == ("stop", "end_turn")
    decisions = [e["decision"] for e in run.model_log if e.get("dialect")]
    assert decisions == [["tool_use", "Bash"], ["text", "done."]], run.describe()


async def test_tool_result_like_claude(cli: Cli) -> None:
    """The tool result as Claude gives it: Bash's stdout, ``ai-42`` (its tool_result
    content is the bare output)."""
    run = await run_case(cli, "tool")
    [result] = run.parts("tool-result")
    assert result["output"] == "ai-42", run.describe()


async def test_model_error(cli: Cli) -> None:
    """The model answers 500 on every try: generateText rejects with the provider's
    ``AI_APICallError``, its message the API error (Claude: ``API Error: 500 <message>``
    and its advice), not retryable, the CLI having exited 1."""
    run = await run_case(cli, "error")
    assert run.returncode == 0, run.describe()
    assert not run["timed_out"], run.describe()
    assert run["error"] is None, run.describe()
    assert_versions(run)
    thrown = run["thrown"]
    assert thrown is not None, "generateText did not reject\n" + run.describe()
    assert thrown["name"] == "AI_APICallError", run.describe()
    assert thrown["message"].startswith("API Error: 500 mock internal error"), run.describe()
    assert thrown["is_retryable"] is False, run.describe()
    assert (thrown["data"] or {}).get("exitCode") == 1, run.describe()
    assert run["text"] is None, run.describe()
    errors = [e for e in run.model_log if e.get("dialect")]
    assert errors, run.describe()
    assert all(e["decision"] == ["error", 500] for e in errors), run.describe()
