// `Query.interrupt()` of the official TypeScript SDK while a workflow runs, with
// `claude-on-cbc` as the Claude Code executable.
//
//   node ts_sdk_interrupt.mjs --cli <claude-on-cbc> --cwd <dir> --prompt <text>
//        [--midturn <second prompt>] [--interrupt-delay <s>] [--system-prompt ...]
//        [--allowed-tools ...] [--timeout 60]   (see sdkOptions in ts_sdk_common.mjs)
//
// The prompt is an async iterable that stays open (a string prompt would make the SDK close
// the CLI's stdin after the first result, and an interrupt written after that is dropped).
// Idle: once a local_workflow task has started and the turn's `result` has arrived, call
// `q.interrupt()` (after `--interrupt-delay` seconds: on a real backend, time for the
// workflow's agents to start; cbc sends no progress while idle). Mid-turn (`--midturn`): after that result, send the second prompt and
// interrupt as soon as the assistant's Bash tool call of that turn arrives. Then wait for the
// workflow's task_notification, close the input, and read to the end. Checks: interrupt()
// resolves, the workflow's single notification is `stopped`, no progress after it, the
// iterator ends (no hang) before the deadline.
import {
  query,
  armDeadline, check, checkLifecycles, finish, makeSummary, openPrompt, parseArgs, record,
  sdkOptions, sdkThrew,
} from "./ts_sdk_common.mjs";

const args = parseArgs();
const summary = makeSummary("ts_sdk_interrupt");
const disarm = armDeadline(summary, args.timeout);
const midturn = typeof args.midturn === "string" ? args.midturn : null;
summary.mode = midturn ? "midturn" : "idle";
summary.interrupt = { sent_after_message: null, resolved: false, response: null, error: null };

const input = openPrompt();
input.push(args.prompt ?? "use a workflow");

let q;
let interruptPromise = null;
const interruptDelay = Number(args["interrupt-delay"] ?? 0) * 1000;
function interrupt() {
  if (interruptPromise) return;
  if (interruptDelay > 0) {
    interruptPromise = new Promise((r) => setTimeout(r, interruptDelay)).then(sendInterrupt);
  } else {
    interruptPromise = sendInterrupt();
  }
}
function sendInterrupt() {
  summary.interrupt.sent_after_message = summary.messages.length;
  const t0 = Date.now();
  return q.interrupt().then(
    (r) => {
      summary.interrupt.resolved = true;
      // how many SDKMessages had been yielded when the receipt came (Claude 2.1.220 sends
      // the killed workflow's terminal frames before it)
      summary.interrupt.resolved_at_message = summary.messages.length;
      summary.interrupt.response = r ?? null;
      summary.interrupt.ms = Date.now() - t0;
    },
    (e) => {
      summary.interrupt.error = String(e?.message ?? e);
    },
  );
}

const workflowStarted = () =>
  Object.values(summary.tasks).some((t) => t.task_type === "local_workflow");
const workflowNotified = () =>
  Object.values(summary.tasks).some(
    (t) => t.task_type === "local_workflow" && t.notifications.length > 0);

try {
  q = query({
    prompt: input.iterable,
    options: sdkOptions(args, summary),
  });
  let phase = "first-turn";
  for await (const m of q) {
    record(summary, m);
    if (phase === "first-turn" && m.type === "result" && workflowStarted()) {
      if (midturn) {
        input.push(midturn);
        phase = "second-turn";
      } else {
        interrupt();
        phase = "interrupted";
      }
    } else if (phase === "second-turn" && m.type === "assistant" &&
               (m.message?.content ?? []).some((b) => b.type === "tool_use" && b.name === "Bash")) {
      interrupt();
      phase = "interrupted";
    } else if (phase === "interrupted" && workflowNotified()) {
      // what remains is the CLI winding down: stop writing, read to the end
      input.close();
      phase = "draining";
    }
  }
  summary.ended = true;
  if (interruptPromise) await interruptPromise;
} catch (e) {
  sdkThrew(summary, e);
}
input.close();
disarm();

checkLifecycles(summary);
const workflows = Object.entries(summary.tasks).filter(([, t]) => t.task_type === "local_workflow");
check(summary, workflows.length === 1, `${workflows.length} local_workflow task(s), expected one`);
check(summary, summary.interrupt.sent_after_message !== null, "interrupt() was never called");
check(summary, summary.interrupt.resolved,
  `interrupt() did not resolve (${summary.interrupt.error ?? "no reply"})`);
for (const [id, t] of workflows) {
  check(summary, t.notifications[0]?.status === "stopped",
    `${id}: notification status ${JSON.stringify(t.notifications[0]?.status)}, expected "stopped"`);
}
check(summary, summary.ended, "the SDK iterator did not end normally");
finish(summary);
