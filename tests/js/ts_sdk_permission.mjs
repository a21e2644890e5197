// A `canUseTool` permission callback of the official TypeScript SDK, with `claude-on-cbc`
// as the Claude Code executable (the SDK then passes `--permission-prompt-tool stdio` and
// answers the CLI's `can_use_tool` control requests with the callback's result).
//
//   node ts_sdk_permission.mjs --cli <claude-on-cbc> --cwd <dir> --prompt <text>
//        --decision allow|deny [--updated-command <cmd>] [--message <text>]
//        [--system-prompt ...] [--allowed-tools ...] [--timeout 60]   (see sdkOptions)
//
// allow: `{behavior: "allow", updatedInput: {...input, command: <updated-command>}}`;
// deny:  `{behavior: "deny", message: <message>}`.
// The summary lists every callback call (tool, input, toolUseID) and the tool results the
// SDK yielded, so the caller can check that the result reflects the decision (the updated
// command ran / the tool did not run and the result carries the message). Checks made
// here: the callback was called at least once, a `result` arrived, the iterator ended.
import {
  query,
  armDeadline, check, finish, makeSummary, parseArgs, record, sdkOptions, sdkThrew,
} from "./ts_sdk_common.mjs";

const args = parseArgs();
const summary = makeSummary("ts_sdk_permission");
const disarm = armDeadline(summary, args.timeout);
const decision = args.decision ?? "allow";
summary.decision = decision;
summary.permission_requests = [];
summary.tool_results = [];

async function canUseTool(toolName, input, opts) {
  const req = { tool_name: toolName, input, tool_use_id: opts?.toolUseID ?? null,
    request_id: opts?.requestId ?? null };
  summary.permission_requests.push(req);
  if (decision === "deny") {
    return { behavior: "deny", message: args.message ?? "denied by the ts-sdk probe" };
  }
  const updatedInput = { ...input };
  if (typeof args["updated-command"] === "string") updatedInput.command = args["updated-command"];
  req.answered_input = updatedInput;
  return { behavior: "allow", updatedInput };
}

try {
  const q = query({
    prompt: args.prompt ?? "TRIGGER_PERM_BASH",
    options: sdkOptions(args, summary, { canUseTool }),
  });
  for await (const m of q) {
    record(summary, m);
    if (m.type === "user") {
      for (const b of summary.messages.at(-1).blocks ?? []) {
        if (b.type === "tool_result") summary.tool_results.push(b);
      }
    }
  }
  summary.ended = true;
} catch (e) {
  sdkThrew(summary, e);
}
disarm();

check(summary, summary.permission_requests.length >= 1, "canUseTool was never called");
check(summary, summary.results.length >= 1, "no result message");
check(summary, summary.ended, "the SDK iterator did not end normally");
finish(summary);
