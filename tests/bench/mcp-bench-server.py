#!/usr/bin/env python3
"""A trivial MCP server over stdio for the benchmark (standard library only).

Tools: echo {text} answers at once; hold {} answers once the file named by
$MCP_BENCH_RELEASE exists (every call waits in its own thread), so that many
calls can be kept in flight. Run directly with --direct N to time N echo
calls from a client in this process: prints p50 and p99 in ms.
"""

import json
import os
import sys
import threading
import time

TOOLS = [
    {"name": "echo", "description": "Says the text back",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "hold", "description": "Answers once released",
     "inputSchema": {"type": "object"}},
]
lock = threading.Lock()


def send(msg):
    line = json.dumps(msg, separators=(",", ":")) + "\n"
    with lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def hold(rid):
    path = os.environ.get("MCP_BENCH_RELEASE", "")
    while path and not os.path.exists(path):
        time.sleep(0.05)
    send({"jsonrpc": "2.0", "id": rid,
          "result": {"content": [{"type": "text", "text": "released"}]}})


def handle(msg):
    rid = msg.get("id")
    method = msg.get("method")
    if rid is None:
        return
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        params = msg.get("params", {})
        if params.get("name") == "hold":
            threading.Thread(target=hold, args=(rid,), daemon=True).start()
            return
        text = params.get("arguments", {}).get("text", "")
        send({"jsonrpc": "2.0", "id": rid,
              "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})


def serve():
    for line in sys.stdin:
        line = line.strip()
        if line:
            handle(json.loads(line))


def direct(n):
    import subprocess
    p = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)

    def call(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        return p.stdout.readline()
    call(0, "initialize", {"protocolVersion": "2025-06-18"})
    samples = []
    for i in range(1, n + 1):
        t = time.perf_counter()
        call(i, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        samples.append((time.perf_counter() - t) * 1000)
    p.stdin.close()
    p.wait()
    samples.sort()
    print(f"{samples[len(samples) // 2]:.3f} {samples[int(len(samples) * 0.99) - 1]:.3f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--direct":
        direct(int(sys.argv[2]))
    else:
        serve()
