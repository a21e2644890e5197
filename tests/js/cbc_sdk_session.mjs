// The CodeBuddy JS SDK (@tencent-ai/agent-sdk, unmodified) drives `cbc-on-claude.exe`
// (the `.exe` name: the SDK executes it directly; any other path it runs under node) over
// the real Claude Code. One JSON config on argv[2]: {cli, cwd, env, timeout}.
// Prints ONE JSON summary line; exit 0 all checks passed, 1 a check failed, 2 deadline,
// 3 the SDK threw. tests/bridge/test_cbc_sdk_real.py asserts on the summary too.

import { query, unstable_v2_createSession, unstable_v2_resumeSession } from "@tencent-ai/agent-sdk";

import { cfg, check, facts, failures, finish } from "./cbc_sdk_common.mjs";

const asked = [];
const base = {
  pathToCodebuddyCode: cfg.cli, cwd: cfg.cwd, env: { ...process.env, ...cfg.env },
  requestTimeoutMs: 30000,
  canUseTool: async (tool, input) => { asked.push(tool); return { behavior: "allow", updatedInput: input }; },
};

async function untilResult(session, onMessage = async () => {}) {
  const seen = [];
  for await (const m of session.stream()) {
    seen.push(m);
    await onMessage(m);
    if (m.type === "result") break;
  }
  return seen;
}

try {
  const session = unstable_v2_createSession({ ...base, sessionId: "js-bot:1" });
  await session.connect();
  // 1. a tool call the permission callback allows
  await session.send("TRIGGER_PERM_BASH");
  const first = await untilResult(session);
  const result = first.at(-1);
  check(result?.type === "result" && !result.is_error, "first turn ends in a success");
  check(result?.session_id === "js-bot:1", `session id is the client's (${result?.session_id})`);
  check(asked.includes("Bash"), "canUseTool was asked about Bash");
  facts.model = session.getModel();
  check(!!facts.model, "getModel() is set from currentModelId");
  // 2. the controls Claude lacks, answered by the bridge
  const modes = await session.getAvailableModes();
  check(modes.some((m) => m.id === "plan"), "getAvailableModes lists plan");
  const models = await session.getAvailableModels();
  check(models.length > 0 && !!models[0].modelId, "getAvailableModels has model ids");
  const commands = await session.getAvailableCommands();
  facts.commands = commands.length;
  check(Array.isArray(commands), "getAvailableCommands resolves");
  await session.setModel("sonnet");
  await session.setConfig({ model: "sonnet" });
  await session.setPermissionMode("default");
  // 3. interrupt a slow tool, then a next turn
  asked.length = 0;
  await session.send("please TRIGGER_SLOW_BASH");
  let interrupted = false;
  const slow = await untilResult(session, async (m) => {
    if (!interrupted && m.type === "assistant"
        && m.message.content.some((b) => b.type === "tool_use")) {
      interrupted = true;
      await new Promise((r) => setTimeout(r, 1000));
      await session.interrupt();
    }
  });
  const ended = slow.at(-1);
  check(interrupted, "the slow tool call was seen");
  check(ended?.type === "result" && ended.subtype === "success" && !ended.is_error,
        `the interrupted turn ends as cbc's success (${ended?.subtype})`);
  await session.send("hello again");
  const next = (await untilResult(session)).at(-1);
  check(next?.type === "result" && !next.is_error, "the turn after the interrupt succeeds");
  session.close();
  // 4. resumeSession (the SDK passes --session-id X --resume X)
  const resumed = unstable_v2_resumeSession("js-bot:1", base);
  await resumed.connect();
  await resumed.send("and once more");
  const again = (await untilResult(resumed)).at(-1);
  check(again?.type === "result" && !again.is_error, "the resumed session answers");
  check(again?.session_id === "js-bot:1", `resumed session id (${again?.session_id})`);
  resumed.close();
  // 5. query() with a denying callback: the reason reaches the model's tool result
  const q = query({ prompt: "TRIGGER_PERM_BASH", options: { ...base,
    canUseTool: async () => ({ behavior: "deny", message: "not in this repo" }) } });
  let denied = "";
  for await (const m of q) {
    if (m.type === "user" && Array.isArray(m.message.content)) {
      for (const b of m.message.content) {
        if (b.type === "tool_result") denied += JSON.stringify(b.content);
      }
    }
    if (m.type === "result") break;
  }
  check(denied.includes("not in this repo"), `the deny reason reaches the tool result (${denied})`);
  finish(failures.length ? 1 : 0);
} catch (e) {
  finish(3, { error: String(e?.stack ?? e) });
}
