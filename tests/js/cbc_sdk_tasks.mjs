// The CodeBuddy JS SDK (@tencent-ai/agent-sdk, unmodified) through `cbc-on-claude.exe` over
// the real Claude Code: an SDK MCP server, its tool and mcpServerStatus(); a background shell
// and a background agent with their notifications, as a cbc client reads them. One JSON
// config on argv[2]: {cli, cwd, env, timeout}. Prints ONE JSON summary line; exit 0 all
// checks passed, 1 a check failed, 2 deadline, 3 the SDK threw.

import { createSdkMcpServer, query, tool, unstable_v2_createSession } from "@tencent-ai/agent-sdk";
import { z } from "zod";

import { cfg, check, facts, failures, finish } from "./cbc_sdk_common.mjs";

const base = {
  pathToCodebuddyCode: cfg.cli, cwd: cfg.cwd, env: { ...process.env, ...cfg.env },
  requestTimeoutMs: 30000,
  canUseTool: async (_tool, input) => ({ behavior: "allow", updatedInput: input }),
};

// a background task: its turn's result, then (stream() ends at each result, and goes on
// where it stopped) the notification and the result of the turn it starts
async function untilNotified(session) {
  const seen = [];
  const notified = () => seen.some((x) => x.type === "system" && x.subtype === "task_notification");
  for (let turn = 0; turn < 4; turn++) {
    const before = notified();
    for await (const m of session.stream()) seen.push(m);
    if (before || (notified() && seen.at(-1)?.type === "result"
                   && seen.findLastIndex((x) => x.subtype === "task_notification")
                      < seen.length - 1)) break;
  }
  return seen;
}

try {
  // 1. an SDK MCP server: the model calls its tool, mcpServerStatus() reports it
  const calls = [];
  const echo = tool("echo", "Echo the text back", { text: z.string() }, async (args) => {
    calls.push(args);
    return { content: [{ type: "text", text: `echo: ${args.text}` }] };
  });
  const probe = createSdkMcpServer({ name: "probe", tools: [echo] });
  const q = query({ prompt: "TRIGGER_MCP", options: { ...base,
    mcpServers: { probe }, allowedTools: ["mcp__probe__echo"] } });
  let toolText = "";
  let status = null;
  for await (const m of q) {
    if (m.type === "user" && Array.isArray(m.message.content)) {
      for (const b of m.message.content) {
        if (b.type === "tool_result") toolText += JSON.stringify(b.content);
      }
    }
    if (m.type === "result") {
      status = await q.mcpServerStatus();
      break;
    }
  }
  check(calls.length === 1 && calls[0].text === "hi there", `the SDK tool ran (${JSON.stringify(calls)})`);
  check(toolText.includes("echo: hi there"), `its result reached the model (${toolText})`);
  facts.mcp = status;
  check(Array.isArray(status) && status.some((s) => s.name === "probe" && s.status === "connected"),
        `mcpServerStatus() lists probe connected (${JSON.stringify(status)})`);
  // 2. a background shell, then 3. a background agent, in one session
  const session = unstable_v2_createSession({ ...base, allowedTools: ["Bash", "Agent"] });
  await session.connect();
  await session.send("please TRIGGER_BG_BASH");
  const bash = await untilNotified(session);
  const bashStarted = bash.find((m) => m.type === "system" && m.subtype === "task_started");
  const bashNote = bash.find((m) => m.type === "system" && m.subtype === "task_notification");
  check(bashStarted?.task_type === "Bash", `the shell's task_type is cbc's (${bashStarted?.task_type})`);
  check(bashNote?.status === "completed", `the shell's notification (${bashNote?.status})`);
  facts.bash_summary = bashNote?.summary;
  check(!bash.some((m) => m.type === "system" && m.subtype === "background_tasks_changed"),
        "no background_tasks_changed");
  await session.send("please TRIGGER_BG_AGENT");
  const agent = await untilNotified(session);
  const agentStarted = agent.find((m) => m.type === "system" && m.subtype === "task_started");
  const agentNote = agent.find((m) => m.type === "system" && m.subtype === "task_notification");
  check(agentStarted?.task_type === "Agent", `the agent's task_type is cbc's (${agentStarted?.task_type})`);
  check(agentNote?.summary === 'Background agent "Mock subagent" completed',
        `the agent's summary is cbc's (${agentNote?.summary})`);
  check(!agent.some((m) => m.type === "assistant" && m.parent_tool_use_id),
        "the background agent's own messages stay with the bridge");
  session.close();
  finish(failures.length ? 1 : 0);
} catch (e) {
  finish(3, { error: String(e?.stack ?? e) });
}
