"""Tiny backends as Python one-liners, for process-lifecycle tests that need no rules."""

from __future__ import annotations

import sys

PY = sys.executable

ECHO = r"""
import json, sys
for line in sys.stdin:
    obj = json.loads(line)
    sys.stdout.write(json.dumps({"type": "assistant", "echo": obj}) + "\n")
    sys.stdout.flush()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""

FLOOD = r"""
import sys, os
n = int(sys.argv[1]); progress = sys.argv[2]
line = b'{"type":"stream_event","event":{"pad":"' + b"x" * 1000 + b'"}}\n'
out = sys.stdout.buffer
for i in range(n):
    out.write(line)
    if i % 100 == 0:
        out.flush()
        with open(progress, "w") as f: f.write(str(i))
out.flush()
with open(progress, "w") as f: f.write("done")
"""

CRASH = r"""
import sys
sys.stdout.write('{"type":"assistant"}\n{"type":"resu')
sys.stdout.flush()
sys.stderr.write("boom\n")
sys.exit(2)
"""

HANG = r"""
import signal, sys, time
if len(sys.argv) > 1 and sys.argv[1] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write('{"type":"system","subtype":"init"}\n'); sys.stdout.flush()
sys.stdin.read()
while True:
    time.sleep(1)
"""


def argv(script: str, *args: str) -> list[str]:
    return [PY, "-c", script, *args]
