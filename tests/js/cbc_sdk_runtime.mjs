// The JS SDK's two ways of running cbc-on-claude (argv[2]: JSON {cli, executable, backend}):
// a path ending in ".exe" is executed directly; any other path runs under `executable`.
// Prints the result's text as one JSON line.
import { query } from "@tencent-ai/agent-sdk";

const cfg = JSON.parse(process.argv[2]);
const options = { pathToCodebuddyCode: cfg.cli, env: { ...process.env, CCBRIDGE_BACKEND: cfg.backend } };
if (cfg.executable) options.executable = cfg.executable;
setTimeout(() => { console.log(JSON.stringify({ timed_out: true })); process.exit(2); }, 30000).unref();
for await (const m of query({ prompt: "hi", options })) {
  if (m.type === "result") {
    console.log(JSON.stringify({ result: m.result, session_id: m.session_id }));
    process.exit(0);
  }
}
console.log(JSON.stringify({ result: null }));
process.exit(1);
