// The JavaScript consumer example of seed 000 (cbc's "Dynamic Workflow over stream-json"
// document), unchanged except for three marked lines: the command it spawns comes from
// argv (the bridge instead of `cbc`), it records what it saw, and a driver at the bottom
// calls cancel() once a workflow is running and the turn has ended (an idle interrupt),
// then prints a JSON summary. The test asserts cancel() resolves.
import { spawn } from 'node:child_process';
const [cmd, ...cmdArgs] = process.argv.slice(2);                       // changed: command
const cbc = spawn(cmd, [...cmdArgs, '--input-format', 'stream-json','--output-format', 'stream-json','--permission-mode', 'bypassPermissions',], { stdio: ['pipe', 'pipe', 'inherit'] });
const send = obj => cbc.stdin.write(JSON.stringify(obj) + '\n');
let buf = '';
let sessionId;
const tasks = new Map(); // task_id -> { workflow_progress, status, notified }
const seen = [];                                                       // changed: record
cbc.stdout.on('data', chunk => {
buf += chunk;
const lines = buf.split('\n'); buf = lines.pop();
for (const line of lines) {
if (!line.trim()) continue;
let msg; try { msg = JSON.parse(line); } catch { continue; }
seen.push(msg);                                                        // changed: record
if (msg.type === 'system' && msg.subtype === 'init') sessionId = msg.session_id;
if (msg.type !== 'system') continue;
if (msg.subtype === 'task_started' && msg.task_type === 'local_workflow') {
tasks.set(msg.task_id, { workflow_progress: [], status: 'running', notified: false });
}
if (msg.subtype === 'task_progress' && Array.isArray(msg.workflow_progress)) {
const t = tasks.get(msg.task_id);
if (t) t.workflow_progress = msg.workflow_progress; // Authoritative snapshot
}
if (msg.subtype === 'task_updated') {
const t = tasks.get(msg.task_id);
if (t && msg.patch?.status) t.status = msg.patch.status;
}
if (msg.subtype === 'task_notification') {
const t = tasks.get(msg.task_id);
if (t) { t.status = msg.status; t.notified = true; }
}
}
});
send({ type: 'control_request', request_id: 'init',
request: { subtype: 'initialize', hooks: {}, capabilities: {}, hasPrompt: true } });
send({ type: 'user', message: { role: 'user', content: '/deep-research topic=foo' } });
async function cancel() {
if (!sessionId) return;
send({ type: 'control_request', request_id: 'stop-' + Date.now(),
request: { subtype: 'interrupt', session_id: sessionId, reason: 'user cancel' } });
await new Promise(resolve => {
const check = () => {
const stillRunning = [...tasks.values()].some(t => !t.notified);
if (!stillRunning) resolve();
else setTimeout(check, 200);
};
check();
});
}

// ---- driver (not part of the seed) ----
const sleep = ms => new Promise(r => setTimeout(r, ms));
const deadline = Date.now() + 30000;
while (!(tasks.size > 0 && seen.some(m => m.type === 'result')) && Date.now() < deadline) await sleep(50);
const t0 = Date.now();
await cancel();
const cancelMs = Date.now() - t0;
cbc.stdin.end();
const code = await new Promise(r => cbc.on('close', r));
console.log(JSON.stringify({
  cancelled: true, cancelMs, exitCode: code,
  tasks: [...tasks.entries()].map(([id, t]) => ({ id, status: t.status, notified: t.notified,
    agents: t.workflow_progress.filter(e => e.type === 'workflow_agent').map(e => e.state) })),
  notifications: seen.filter(m => m.subtype === 'task_notification').length,
}));
