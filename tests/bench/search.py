#!/usr/bin/env python3
# Copyright 2026 The Confab authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The search benchmark's driver (tests/bench/search runs it on a private
session bus): a confabd with a fresh state directory, N conversations made
through the v1 API, then the latency of GNOME Shell's calls for a search."""

import argparse
import glob
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gdbus(method, *args):
    out = subprocess.run(["gdbus", "call", "--session", "--dest", "org.confab.Confab1",
                          "--object-path", "/org/confab/Confab1", "--method",
                          "org.confab.Confab1.Admin." + method, *args],
                         check=True, capture_output=True, text=True).stdout
    return re.findall(r"'([^']*)'", out)


def corpus(root):
    words = []
    for path in sorted(glob.glob(os.path.join(root, "docs", "*.md")) +
                       [os.path.join(root, "README.md")]):
        words += re.findall(r"[A-Za-z][A-Za-z'-]+", open(path, encoding="utf-8").read())
    return words


def sentence(words, rng, n):
    start = rng.randrange(0, len(words) - n)
    return " ".join(words[start:start + n])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--confabd", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--conversations", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()

    state = tempfile.mkdtemp(prefix="confab-search-bench-")
    port = free_port()
    daemon = subprocess.Popen([args.confabd, "--bus", "session", "--state-dir", state,
                               "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                gdbus("ListAgents")
                break
            except subprocess.CalledProcessError:
                if time.time() > deadline:
                    sys.exit("confabd did not start")
                time.sleep(0.1)
        agent = gdbus("CreateAgent", "{'name': <'helper'>, 'provider': <'echo'>}")[0]
        user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True,
                                                          text=True).stdout.strip()
        token = gdbus("CreateToken",
                      f"{{'owner': <'{user}'>, 'scopes': <['chat.completions']>}}")[1]

        words = corpus(args.root)
        rng = random.Random(16)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        t0 = time.time()
        for i in range(args.conversations):
            text = sentence(words, rng, rng.randint(8, 60))
            body = json.dumps({"model": agent, "messages": [{"role": "user", "content": text}]})
            conn.request("POST", "/api/v1/chat/completions", body, headers)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                sys.exit(f"turn {i}: HTTP {r.status}")
        seeded = time.time() - t0
        print(f"search: {args.conversations} conversations ({2 * args.conversations} messages, "
              f"{len(words)} words of docs/ as text) made in {seeded:.1f} s")
        queries = ["the", "session", "upstream token", "quota admitted request",
                   "t", "se", "stream*", "zzzzzz", "conversation agent tool server"]
        subprocess.run([args.client, str(args.repeat)] + queries, check=True)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    main()
