// Shared by the ts_sdk_*.mjs scripts: argument parsing, the per-script deadline, and a
// compact record of the SDKMessage stream the official TypeScript SDK
// (@anthropic-ai/claude-agent-sdk) yields when it drives `claude-on-cbc`.
//
// Every script prints ONE JSON summary line on stdout (the last line) and exits
//   0  every check passed
//   1  a check failed (the summary's `failures` says which)
//   2  the script's own deadline fired (the summary has `timed_out: true`)
//   3  the SDK threw (the summary has `error`)
// The pytest side (tests/bridge/test_ts_sdk.py) asserts on the summary as well.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** `--name value` pairs; `--flag` alone is true. */
export function parseArgs(argv = process.argv.slice(2)) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith("--")) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2);
    if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) out[key] = argv[++i];
    else out[key] = true;
  }
  if (!out.cli) throw new Error("--cli <the CLI: claude-on-cbc or claude> is required");
  out.cwd ??= process.cwd();
  out.timeout = Number(out.timeout ?? 60);
  return out;
}

/** The SDK the scripts drive: the pinned one, or the package CCBRIDGE_TS_SDK names (an
 * alias of another version in package.json, e.g. claude-agent-sdk-next). */
export const SDK_PACKAGE = process.env.CCBRIDGE_TS_SDK || "@anthropic-ai/claude-agent-sdk";
export const { query } = await import(SDK_PACKAGE);

export function sdkVersion() {
  // the package's exports map hides package.json: find it next to the entry point
  const entry = createRequire(import.meta.url).resolve(SDK_PACKAGE);
  return JSON.parse(readFileSync(join(dirname(entry), "package.json"), "utf8")).version;
}

/** The summary every script prints; `check(cond, what)` records a failure. */
export function makeSummary(script) {
  const summary = {
    script,
    sdk_version: null,
    node: process.version,
    ended: false, // the SDK's async iterator finished (for await ... of returned)
    // the SDK ended the iterator by throwing "Claude Code returned an error result: ..."
    // because the CLI exited 1 after an error result, as Claude Code 2.1.220 does when the
    // session's last result is an error: that message, else null
    ended_by_error_result: null,
    timed_out: false,
    error: null,
    failures: [],
    messages: [], // compact: one entry per SDKMessage
    tasks: {}, // task_id -> lifecycle
    results: [],
  };
  try {
    summary.sdk_version = sdkVersion();
  } catch (e) {
    summary.sdk_version = `unknown (${e.message})`;
  }
  return summary;
}

export function check(summary, cond, what) {
  if (!cond) summary.failures.push(what);
  return !!cond;
}

let printed = false;
export function finish(summary, code) {
  if (printed) return;
  printed = true;
  if (code === undefined) code = summary.error ? 3 : summary.failures.length ? 1 : 0;
  summary.exit_code = code;
  process.stdout.write(JSON.stringify(summary) + "\n", () => process.exit(code));
}

/** Record what the SDK threw. The one exception that is a normal end: the CLI exited 1
 *  after an error `result` that was the last message (Claude Code exits 1 when the last
 *  result was an error, and the SDK then throws with that result's errors). */
export function sdkThrew(summary, e) {
  const message = String(e?.message ?? e);
  const last = summary.messages.at(-1);
  if (message.startsWith("Claude Code returned an error result") &&
      last?.type === "result" && last.is_error) {
    summary.ended = true;
    summary.ended_by_error_result = message;
    return;
  }
  summary.error = String(e?.stack ?? e);
}

/** The script's own deadline: print what was seen so far, exit 2. */
export function armDeadline(summary, seconds) {
  const t = setTimeout(() => {
    summary.timed_out = true;
    summary.failures.push(`deadline of ${seconds}s reached (hang?)`);
    finish(summary, 2);
  }, seconds * 1000);
  return () => clearTimeout(t);
}

function blockSummary(b) {
  if (b.type === "text") return { type: "text", text: String(b.text).slice(0, 200) };
  if (b.type === "tool_use") return { type: "tool_use", id: b.id, name: b.name, input: b.input };
  if (b.type === "tool_result") {
    const c = b.content;
    const text = typeof c === "string" ? c
      : Array.isArray(c) ? c.map((x) => (x && x.type === "text" ? x.text : "")).join("") : "";
    return { type: "tool_result", tool_use_id: b.tool_use_id, is_error: !!b.is_error,
      text: text.slice(0, 500) };
  }
  return { type: b.type };
}

/** Record one SDKMessage; keeps per-task lifecycles (what the tests assert on). */
export function record(summary, m) {
  const e = { type: m.type };
  if (m.subtype) e.subtype = m.subtype;
  if (m.type === "system") {
    for (const k of ["task_id", "task_type", "workflow_name", "status", "tool_use_id"]) {
      if (m[k] !== undefined) e[k] = m[k];
    }
    if (m.patch?.status) e.patch_status = m.patch.status;
    if (m.subtype === "init") {
      e.claude_code_version = m.claude_code_version;
      e.session_id = m.session_id;
    }
  } else if (m.type === "assistant" || m.type === "user") {
    const content = m.message?.content;
    e.blocks = Array.isArray(content) ? content.map(blockSummary)
      : typeof content === "string" ? [{ type: "text", text: content.slice(0, 200) }] : [];
  } else if (m.type === "result") {
    e.is_error = m.is_error;
    e.result = typeof m.result === "string" ? m.result.slice(0, 200) : m.result;
    e.terminal_reason = m.terminal_reason;
    e.errors = m.errors;
    e.permission_denials = m.permission_denials;
    summary.results.push(e);
  }
  summary.messages.push(e);

  if (m.type !== "system" || typeof m.task_id !== "string") return;
  const tasks = summary.tasks;
  const t = tasks[m.task_id];
  if (m.subtype === "task_started") {
    if (t) {
      summary.failures.push(`task_started twice for ${m.task_id}`);
      return;
    }
    tasks[m.task_id] = {
      task_type: m.task_type ?? null,
      workflow_name: m.workflow_name ?? null,
      description: m.description ?? null,
      tool_use_id: m.tool_use_id ?? null,
      has_prompt: typeof m.prompt === "string" && m.prompt.length > 0,
      progress: 0,
      last_agents: null,
      updates: [],
      notifications: [],
      progress_after_notification: 0,
    };
    return;
  }
  if (!t) {
    summary.failures.push(`${m.subtype} for ${m.task_id} before its task_started`);
    return;
  }
  if (m.subtype === "task_progress") {
    if (t.notifications.length) t.progress_after_notification++;
    t.progress++;
    if (Array.isArray(m.workflow_progress)) {
      t.last_agents = m.workflow_progress
        .filter((x) => x && x.type === "workflow_agent")
        .map((x) => ({ label: x.label, state: x.state }));
    }
  } else if (m.subtype === "task_updated") {
    t.updates.push(m.patch?.status ?? null);
  } else if (m.subtype === "task_notification") {
    t.notifications.push({ status: m.status, has_output_file: typeof m.output_file === "string",
      has_summary: typeof m.summary === "string" });
  }
}

/** The lifecycle checks every workflow script makes. */
export function checkLifecycles(summary) {
  for (const [id, t] of Object.entries(summary.tasks)) {
    check(summary, t.notifications.length === 1,
      `${id}: ${t.notifications.length} task_notification(s), expected exactly one`);
    check(summary, t.progress_after_notification === 0,
      `${id}: ${t.progress_after_notification} task_progress after its task_notification`);
  }
}

/** An async-iterable prompt that stays open (stdin to the CLI stays open) until close(). */
export function openPrompt() {
  const queue = [];
  let wake = null;
  let closed = false;
  const push = (text) => {
    queue.push({ type: "user", session_id: "", parent_tool_use_id: null,
      message: { role: "user", content: [{ type: "text", text }] } });
    wake?.();
  };
  const close = () => {
    closed = true;
    wake?.();
  };
  async function* gen() {
    while (true) {
      while (queue.length) yield queue.shift();
      if (closed) return;
      await new Promise((r) => (wake = r));
      wake = null;
    }
  }
  return { push, close, iterable: gen() };
}

/** Workflow script's meta.name, read the dumb way (tests only; the bridge uses a parser). */
export function metaName(source) {
  const m = /export\s+const\s+meta\s*=\s*\{[\s\S]*?\bname\s*:\s*["'`]([^"'`]+)["'`]/.exec(source);
  return m ? m[1] : null;
}

/**
 * The query() options every script passes: the drop-in as the executable, the cwd, the
 * environment (CCBRIDGE_BACKEND etc.), the CLI's stderr relayed to ours, plus
 *   --system-prompt sdk-default (default: the option unset, so the SDK sends
 *                   `systemPrompt: [""]` in its initialize request, as every plain query()
 *                   does) | preset (`{type: "preset", preset: "claude_code"}`: the SDK sends
 *                   no systemPrompt) | any other text (sent as a one-element array)
 *   --allowed-tools Bash,Agent,...  (the SDK joins them with commas on its command line)
 */
export function sdkOptions(args, summary, extra = {}) {
  const sp = args["system-prompt"];
  summary.system_prompt = typeof sp === "string" ? sp : "sdk-default";
  const options = {
    pathToClaudeCodeExecutable: args.cli,
    cwd: args.cwd,
    env: { ...process.env },
    stderr: (s) => process.stderr.write(s),
    ...extra,
  };
  if (sp === "preset") options.systemPrompt = { type: "preset", preset: "claude_code" };
  else if (typeof sp === "string" && sp !== "sdk-default") options.systemPrompt = sp;
  if (typeof args["allowed-tools"] === "string") {
    options.allowedTools = args["allowed-tools"].split(",").filter(Boolean);
  }
  return options;
}
