// The Vercel AI SDK (`ai`) with the community provider `ai-sdk-provider-claude-code`
// (both pinned in package.json), the CLI named by `pathToClaudeCodeExecutable`: the real
// Claude Code, or `claude-on-cbc`. One case per run:
//
//   node ai_sdk.mjs --cli <executable> --cwd <dir> --case generate|stream|tool|error
//        [--prompt <text>] [--timeout 60]
//
//   generate  generateText() of a plain prompt
//   stream    streamText() of a plain prompt, every part of fullStream recorded
//   tool      streamText() of a prompt the stand-in model answers with a Bash call
//             (allowedTools: ["Bash"]): the CLI runs it, the stream shows the call and its
//             result, then the model's answer
//   error     generateText() of a prompt the stand-in model answers with an HTTP error:
//             generateText must reject
//
// The provider hands the CLI only an allowlist of the environment (HOME, PATH, TMPDIR,
// LANG, USER, ANTHROPIC_*, CLAUDE_*, ...): through the bridge, the backend and its
// endpoint come from the config file under HOME (~/.config/ccbridge/ccbridge.toml).
//
// Prints ONE JSON summary line on stdout and exits 0 (the case ran to its end: its
// outcome is in the summary, the caller asserts on it), 2 (the script's own deadline
// fired: `timed_out`) or 3 (the script itself broke: `error`).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { generateText, streamText } from "ai";
import { claudeCode } from "ai-sdk-provider-claude-code";
import { parseArgs } from "./ts_sdk_common.mjs";

function version(pkg) {
  const require = createRequire(import.meta.url);
  let dir = dirname(require.resolve(pkg));
  for (let i = 0; i < 4; i++, dir = dirname(dir)) {
    try {
      const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (meta.name === pkg) return meta.version;
    } catch {
      // not there: one level up
    }
  }
  return null;
}

const args = parseArgs();
const summary = {
  script: "ai_sdk",
  case: args.case,
  node: process.version,
  versions: { ai: version("ai"), provider: version("ai-sdk-provider-claude-code") },
  timed_out: false,
  error: null, // the script broke (not: the call failed, that is `thrown`)
  text: null,
  finish_reason: null,
  raw_finish_reason: null,
  content: [], // generateText: the result's content parts, compact
  parts: [], // streamText: every part of fullStream, compact
  thrown: null, // the call rejected: the error, compact
  session_id: null,
  stderr: "",
};

let printed = false;
function finish(code) {
  if (printed) return;
  printed = true;
  summary.exit_code = code;
  process.stdout.write(JSON.stringify(summary) + "\n", () => process.exit(code));
}

const deadline = setTimeout(() => {
  summary.timed_out = true;
  finish(2);
}, args.timeout * 1000);

function compactError(e) {
  if (!e || typeof e !== "object") return { message: String(e) };
  return {
    name: e.name ?? null,
    message: typeof e.message === "string" ? e.message.slice(0, 2000) : null,
    is_retryable: e.isRetryable ?? null,
    status_code: e.statusCode ?? null,
    data: e.data ? JSON.parse(JSON.stringify(e.data, (k, v) => (k === "stderr" ? undefined : v))) : null,
    cause: e.cause ? compactError(e.cause) : null,
  };
}

function compactPart(p) {
  const out = { type: p.type };
  for (const k of ["id", "toolCallId", "toolName", "providerExecuted", "dynamic", "isError"]) {
    if (p[k] !== undefined) out[k] = p[k];
  }
  if (p.type === "text-delta" || p.type === "text" || p.type === "reasoning-delta") out.text = p.text;
  if (p.input !== undefined) out.input = p.input;
  if (p.output !== undefined) out.output = p.output;
  if (p.error !== undefined) out.error = compactError(p.error);
  if (p.finishReason !== undefined) out.finishReason = p.finishReason;
  if (p.rawFinishReason !== undefined) out.rawFinishReason = p.rawFinishReason;
  return out;
}

function sessionOf(providerMetadata) {
  return providerMetadata?.["claude-code"]?.sessionId ?? null;
}

const model = claudeCode("sonnet", {
  pathToClaudeCodeExecutable: args.cli,
  cwd: args.cwd,
  allowedTools: args.case === "tool" ? ["Bash"] : [],
  logger: false,
  stderr: (data) => {
    summary.stderr = (summary.stderr + data).slice(-8000);
  },
});

const prompt =
  args.prompt ??
  { generate: "hello", stream: "hello", tool: "TRIGGER_BASH please", error: "TRIGGER_BROKEN hello" }[
    args.case
  ];

async function runGenerate() {
  try {
    const r = await generateText({ model, prompt });
    summary.text = r.text;
    summary.finish_reason = r.finishReason;
    summary.raw_finish_reason = r.rawFinishReason ?? null;
    summary.content = r.content.map(compactPart);
    summary.session_id = sessionOf(r.providerMetadata);
  } catch (e) {
    summary.thrown = compactError(e);
  }
}

async function runStream() {
  const r = streamText({
    model,
    prompt,
    onError: () => {}, // recorded from fullStream; no console noise
  });
  try {
    for await (const p of r.fullStream) summary.parts.push(compactPart(p));
    summary.text = await r.text;
    summary.finish_reason = await r.finishReason;
    summary.raw_finish_reason = (await r.rawFinishReason) ?? null;
    summary.session_id = sessionOf(await r.providerMetadata);
  } catch (e) {
    summary.thrown = compactError(e);
  }
}

try {
  if (args.case === "generate" || args.case === "error") await runGenerate();
  else if (args.case === "stream" || args.case === "tool") await runStream();
  else throw new Error(`unknown --case ${args.case}`);
  clearTimeout(deadline);
  finish(0);
} catch (e) {
  summary.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
  clearTimeout(deadline);
  finish(3);
}
