// Shared by the cbc_sdk_*.mjs scripts (the CodeBuddy JS SDK, @tencent-ai/agent-sdk,
// unmodified, driving `cbc-on-claude.exe` over the real Claude Code): the JSON config on
// argv[2] ({cli, cwd, env, timeout}), the checks, and the ONE JSON summary line each
// prints: exit 0 all checks passed, 1 a check failed, 2 deadline, 3 the SDK threw.

export const cfg = JSON.parse(process.argv[2]);
export const failures = [];
export const facts = {};
export const check = (ok, what) => { if (!ok) failures.push(what); };
export const finish = (code, extra = {}) => {
  console.log(JSON.stringify({ failures, facts, ...extra }));
  process.exit(code);
};
setTimeout(() => finish(2, { timed_out: true }), (cfg.timeout ?? 90) * 1000).unref();
process.on("unhandledRejection", (e) => finish(3, { error: `unhandled: ${e?.stack ?? e}` }));
