// An in-process MCP server of the official TypeScript SDK (createSdkMcpServer + tool),
// with `claude-on-cbc` as the Claude Code executable: the model (the stand-in, scripted by
// the caller) calls mcp__probe__echo, then the failing mcp__probe__boom.
//
//   node ts_sdk_mcp.mjs --cli <claude-on-cbc> --cwd <dir> [--timeout 60] [--external JSON]
//
// --external: a stdio MCP server's config ({command, args}), added as server "ext" (its
// tool mcp__ext__ping allowed): the TypeScript SDK 0.3.337 sends such servers inside
// initialize (--await-initialize), 0.3.220 on the command line (--mcp-config).
//
// A streaming prompt (one user line, held open until the result) so that
// mcpServerStatus() can be asked after the turn. The summary has what each tool handler
// got (its arguments and the request's _meta), the tool_result blocks and tool_use_result
// of the user messages, the assistant messages' tool_use_meta, the init's mcp_servers and
// MCP tools, and mcpServerStatus().
// Checks made here: both handlers ran, a result arrived, the iterator ended.
import { z } from "zod";
import {
  query,
  armDeadline, check, finish, makeSummary, parseArgs, record, sdkOptions, sdkThrew,
} from "./ts_sdk_common.mjs";

const { createSdkMcpServer, tool } = await import(
  process.env.CCBRIDGE_TS_SDK || "@anthropic-ai/claude-agent-sdk"
);

const args = parseArgs();
const summary = makeSummary("ts_sdk_mcp");
const disarm = armDeadline(summary, args.timeout);
summary.calls = [];
summary.tool_results = [];
summary.init = null;
summary.status = null;
summary.tool_use_meta = []; // Claude's labels of the MCP calls (assistant frames)

const echo = tool("echo", "Echo the text back", { text: z.string() }, async (a, extra) => {
  summary.calls.push({ tool: "echo", args: a, meta: extra?._meta ?? null });
  return { content: [{ type: "text", text: `echo: ${a.text}` }] };
});
const boom = tool(
  "boom", "Always fails", { text: z.string() },
  async (a, extra) => {
    summary.calls.push({ tool: "boom", args: a, meta: extra?._meta ?? null });
    return { content: [{ type: "text", text: "the boom failed" }], isError: true };
  },
  { annotations: { readOnlyHint: true, title: "Boom Tool" } },
);
const probe = createSdkMcpServer({ name: "probe", version: "1.0.0", tools: [echo, boom] });

let release;
const done = new Promise((r) => { release = r; });
async function* prompt() {
  yield {
    type: "user",
    message: { role: "user", content: "please TRIGGER_MCP" },
    parent_tool_use_id: null,
    session_id: "",
  };
  await done;
}

try {
  const q = query({
    prompt: prompt(),
    options: sdkOptions(args, summary, {
      mcpServers: args.external ? { probe, ext: JSON.parse(args.external) } : { probe },
      allowedTools: [
        "mcp__probe__echo", "mcp__probe__boom", ...(args.external ? ["mcp__ext__ping"] : []),
      ],
    }),
  });
  for await (const m of q) {
    record(summary, m);
    if (m.type === "system" && m.subtype === "init") {
      summary.init = {
        mcp_servers: m.mcp_servers,
        mcp_tools: (m.tools ?? []).filter((t) => t.startsWith("mcp__")),
      };
    }
    if (m.type === "assistant" && m.tool_use_meta) summary.tool_use_meta.push(...m.tool_use_meta);
    if (m.type === "user" && Array.isArray(m.message?.content)) {
      for (const b of m.message.content) {
        if (b.type === "tool_result") {
          summary.tool_results.push({ block: b, tool_use_result: m.tool_use_result ?? null });
        }
      }
    }
    if (m.type === "result") {
      summary.status = await q.mcpServerStatus();
      release();
    }
  }
  summary.ended = true;
} catch (e) {
  sdkThrew(summary, e);
}
disarm();

check(summary, summary.calls.length === 2, `both tools ran (${JSON.stringify(summary.calls)})`);
check(summary, summary.results.length >= 1, "no result message");
check(summary, summary.ended, "the SDK iterator did not end normally");
finish(summary);
