// The command lines the TypeScript SDK builds, for tests/compat/test_argv.py (rule argv).
//
//   node tests/js/ts_sdk_argv.mjs [path/to/sdk.mjs] > tests/compat/data/ts_sdk_argv_<ver>.json
//
// Each option set below goes through the SDK's own query() with a spawnClaudeCodeProcess
// hook that records {args, env keys} instead of starting anything, so the argv is exactly
// what the SDK would give `claude` (and `claude-on-cbc`). Default module: the version
// pinned in tests/js/package.json (0.3.220, the twin of Claude Code 2.1.220).
import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

const modPath = process.argv[2] || "@anthropic-ai/claude-agent-sdk";
const sdk = await import(modPath);

function sdkVersion() {
  try {
    const p = modPath.startsWith("/") ? join(dirname(modPath), "package.json")
      : new URL("./node_modules/@anthropic-ai/claude-agent-sdk/package.json", import.meta.url);
    return JSON.parse(readFileSync(p, "utf8")).version;
  } catch {
    return "unknown";
  }
}

const mcp = { echo: { type: "stdio", command: "echo", args: ["x"] } };
const schema = { type: "object", properties: { a: { type: "string" } } };
const allow = async () => ({ behavior: "allow", updatedInput: {} });

// Every option that becomes a flag, spread over sets that may not be combined.
const SETS = {
  everything: {
    model: "default-model", fallbackModel: "fast-model", effort: "high", maxTurns: 3,
    maxBudgetUsd: 1.5, taskBudget: { total: 1000 }, agent: "general-purpose",
    betas: ["context-1m-2025-08-07", "other-beta"],
    outputFormat: { type: "json_schema", schema },
    debugFile: "/tmp/ccbridge-debug.log",
    canUseTool: allow,
    continue: true, resume: "11111111-1111-4111-8111-111111111111",
    allowedTools: ["Bash(git log:*)", "Read"], disallowedTools: ["Write", "Edit"],
    tools: ["Bash", "Read"], mcpServers: mcp, settingSources: ["user", "project"],
    strictMcpConfig: true, permissionMode: "acceptEdits",
    allowDangerouslySkipPermissions: true, includeHookEvents: true,
    includePartialMessages: true, additionalDirectories: ["/tmp/a", "/tmp/b"],
    plugins: [{ type: "local", path: "/tmp/p" }, { type: "local", path: "/tmp/q", skipMcpDiscovery: true }],
    forkSession: true, resumeSessionAt: "msg-1", sessionId: "22222222-2222-4222-8222-222222222222",
    persistSession: false, managedSettings: { env: { A: "1" } }, settings: { model: "x" },
    thinking: { type: "enabled", budgetTokens: 2048, display: "summarized" },
    skills: ["pdf"],
    extraArgs: { "replay-user-messages": null, "some-new-flag": "value", negative: "-5" },
  },
  minimal: {},
  adaptive: { thinking: { type: "adaptive", display: "omitted" }, tools: [], settingSources: [] },
  disabled: { thinking: { type: "disabled" }, tools: { type: "preset", preset: "claude_code" },
              permissionPromptToolName: "mcp__perm__ask", debug: true },
  legacyThinking: { maxThinkingTokens: 0, sandbox: { enabled: true } },
  // options of SDKs newer than 0.3.220 (ignored by older ones)
  newer: {
    permissionPrompts: "host", projectConfigRoot: "/tmp/proj", resumeDropsTurn: "turn-1",
    workload: "batch", settings: { model: "x" }, settingsDelivery: "initialize",
    managedSettings: { env: { A: "1" } }, managedSettingsDelivery: "initialize",
    disallowedTools: ["Write"], disallowedToolsDelivery: "initialize",
    mcpServers: mcp, mcpServersDelivery: "initialize", maxThinkingTokens: 4096,
  },
};

function fakeProcess(record) {
  return (spawn) => {
    record.args = spawn.args;
    record.env = Object.keys(spawn.env).filter((k) => k.startsWith("CLAUDE")).sort();
    const proc = new EventEmitter();
    proc.stdin = new PassThrough();
    proc.stdout = new PassThrough();
    proc.stderr = new PassThrough();
    proc.killed = false;
    proc.exitCode = null;
    proc.signalCode = null;
    proc.kill = () => { proc.killed = true; return true; };
    setTimeout(() => {
      proc.stdout.end();
      proc.exitCode = 0;
      proc.emit("exit", 0, null);
      proc.emit("close", 0, null);
    }, 10);
    return proc;
  };
}

const out = { sdk: "@anthropic-ai/claude-agent-sdk", version: sdkVersion(), sets: {} };
for (const [name, opts] of Object.entries(SETS)) {
  const record = {};
  try {
    const q = sdk.query({
      prompt: "hi",
      options: { ...opts, pathToClaudeCodeExecutable: "/nonexistent/claude",
                 spawnClaudeCodeProcess: fakeProcess(record) },
    });
    const timer = setTimeout(() => q.close?.(), 2000);
    try { for await (const _ of q) { /* nothing comes */ } } catch { /* no CLI: expected */ }
    clearTimeout(timer);
  } catch (e) {
    record.error = String(e?.message || e);
  }
  out.sets[name] = record;
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
process.exit(0);
