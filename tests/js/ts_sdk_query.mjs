// A plain `query()` of a workflow session through the official TypeScript SDK, with
// `claude-on-cbc` as the Claude Code executable.
//
//   node ts_sdk_query.mjs --cli <claude-on-cbc> --cwd <dir> --prompt <text>
//        [--probe-controls] [--system-prompt ...] [--allowed-tools ...] [--timeout 60]
//        (see sdkOptions in ts_sdk_common.mjs)
//
// The prompt is a string, so the SDK runs a single-user-turn query: it closes the CLI's
// stdin after the first `result` and the iterator ends when the CLI exits. Checks:
// a system/task_started with task_type "local_workflow" whose workflow_name is meta.name of
// the script the Workflow tool call ran (inline `script`, or the file `scriptPath` below
// cwd), exactly one task_notification per task and no progress after it, a `result`, and
// the iterator ends before the deadline. The backend comes from the environment
// (CCBRIDGE_BACKEND), which the SDK passes on to the executable.
//
// --probe-controls: once the first system/init arrives, also ask `q.mcpServerStatus()`
// (control request `mcp_status`, which cbc does not know) and record how it was answered
// (`control_probe`), and the keys of the initialize reply (`initialize_keys`). Recorded,
// not checked here: the caller decides what the bridge owes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  query,
  armDeadline, check, checkLifecycles, finish, makeSummary, metaName, parseArgs, record,
  sdkOptions, sdkThrew,
} from "./ts_sdk_common.mjs";

const args = parseArgs();
const summary = makeSummary("ts_sdk_query");
const disarm = armDeadline(summary, args.timeout);
summary.workflow_calls = [];
const probe = args["probe-controls"] === true;
if (probe) summary.control_probe = { mcp_status: null };

function expectedName(input) {
  if (typeof input?.script === "string") return metaName(input.script);
  if (typeof input?.scriptPath === "string") {
    try {
      return metaName(readFileSync(join(args.cwd, input.scriptPath), "utf8"));
    } catch (e) {
      return `unreadable: ${e.message}`;
    }
  }
  return null;
}

try {
  const q = query({
    prompt: args.prompt ?? "use a workflow please",
    options: sdkOptions(args, summary),
  });
  let probed = false;
  for await (const m of q) {
    record(summary, m);
    if (probe && !probed && m.type === "system" && m.subtype === "init") {
      probed = true;
      const t0 = Date.now();
      const st = (summary.control_probe.mcp_status = { answered: false, at_message: null });
      q.mcpServerStatus().then(
        (v) => Object.assign(st, { answered: true, ok: true, value: v ?? null,
          ms: Date.now() - t0, at_message: summary.messages.length }),
        (e) => Object.assign(st, { answered: true, ok: false, error: String(e?.message ?? e),
          ms: Date.now() - t0, at_message: summary.messages.length }),
      );
      q.initializationResult().then(
        (r) => (summary.initialize_keys = Object.keys(r ?? {}).sort()),
        (e) => (summary.initialize_keys = `error: ${e?.message ?? e}`),
      );
    }
    if (m.type === "assistant") {
      for (const b of m.message?.content ?? []) {
        if (b.type === "tool_use" && b.name === "Workflow") {
          summary.workflow_calls.push({ id: b.id, expected_name: expectedName(b.input) });
        }
      }
    }
  }
  summary.ended = true;
} catch (e) {
  sdkThrew(summary, e);
}
disarm();

checkLifecycles(summary);
const workflows = Object.entries(summary.tasks).filter(([, t]) => t.task_type === "local_workflow");
check(summary, workflows.length >= 1, "no task_started with task_type local_workflow");
for (const [id, t] of workflows) {
  const call = summary.workflow_calls.find((c) => c.id === t.tool_use_id)
    ?? (summary.workflow_calls.length === 1 ? summary.workflow_calls[0] : null);
  check(summary, call && call.expected_name,
    `${id}: cannot tell the script's meta.name (Workflow calls: ${JSON.stringify(summary.workflow_calls)})`);
  if (call) {
    check(summary, t.workflow_name === call.expected_name,
      `${id}: workflow_name ${JSON.stringify(t.workflow_name)} != meta.name ${JSON.stringify(call.expected_name)}`);
  }
}
check(summary, summary.results.length >= 1, "no result message");
check(summary, summary.ended, "the SDK iterator did not end normally");
finish(summary);
