#!/usr/bin/env python3
"""Confab's benchmark: prints one scenario a line.

Runs nginx as a canned OpenAI-compatible upstream, confabd in front of it,
nginx as a plain reverse proxy in front of the same upstream (the anchor:
Confab's figures are printed as ratios to it), and (when installed)
@portkey-ai/gateway in front of it too, and loads them with wrk. Run it through tests/bench/run, which builds confabd
and provides a private D-Bus session bus.
"""

import argparse
import asyncio
import http.client
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PG_CLUSTER = os.path.join(HERE, "..", "pg", "pg-cluster")
CHAT_BODY = json.dumps({"model": "AGENT", "messages": [
    {"role": "user", "content": "Say hello in a short sentence."}]})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


CLK_TCK = os.sysconf("SC_CLK_TCK")


def thread_ticks(pid):
    """{thread name: utime + stime ticks} of every thread of @pid; threads of
    one name (the store's readers, wrk's) are added up"""
    ticks = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return ticks
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:
            continue
        # the name is in parentheses and may hold spaces
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
    return ticks


def children(pid):
    """the pids whose parent is @pid (nginx's workers)"""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except FileNotFoundError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry))
    return out


class CpuMeter:
    """CPU spent by processes (and each of their threads) over a window,
    from /proc/PID/task/*/stat: ticks of 1/CLK_TCK s, so a window must
    hold thousands of requests for a figure per request in microseconds"""

    def __init__(self, pids):
        self.pids = pids
        self.before = {pid: thread_ticks(pid) for pid in pids}

    def per_request(self, requests):
        """({thread: us per request}, total us per request)"""
        threads = {}
        for pid in self.pids:
            after = thread_ticks(pid)
            for name, t in after.items():
                d = t - self.before[pid].get(name, 0)
                threads[name] = threads.get(name, 0) + d
        us = 1e6 / CLK_TCK / max(requests, 1)
        per = {name: t * us for name, t in threads.items() if t > 0}
        return per, sum(per.values())


def cpu_text(per, total):
    parts = ", ".join(f"{name} {v:.1f}" for name, v in sorted(per.items(), key=lambda x: -x[1]))
    return f"{total:.1f} us CPU/request ({parts})"


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_wrk(out):
    """requests/s, p50 ms, p99 ms, non-2xx count, total requests"""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {}
    for pct, val, unit in re.findall(r"^\s+(50|99)\.000%\s+([\d.]+)(us|ms|s)\b", out, re.M):
        lat[pct] = float(val) * UNITS[unit]
    if not lat:
        for pct, val, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\b", out, re.M):
            lat[pct] = float(val) * UNITS[unit]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    failures = (int(bad.group(1)) if bad else 0) + (sum(map(int, errs.groups())) if errs else 0)
    return rps, lat.get("50", 0.0), lat.get("99", 0.0), failures, total


def wrk(url, conns, seconds, method="POST", body="", token="", headers="", threads=None,
        cpu=None):
    """wrk's figures; with @cpu (pids), the CPU those processes spent per
    request over the run appended: (..., ({thread: us}, us))"""
    env = dict(os.environ, BENCH_METHOD=method, BENCH_BODY=body, BENCH_TOKEN=token,
               BENCH_HEADERS=headers)
    threads = threads or min(conns, 2)
    cmd = ["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s", "--latency",
           "-s", os.path.join(HERE, "request.lua"), url]
    meter = CpuMeter(cpu) if cpu else None
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    r = parse_wrk(out)
    if meter:
        return r + (meter.per_request(r[4]),)
    return r


class Bench:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="confab-bench-")
        self.procs = []
        self.upstream_retries = None  # [upstream] max_retries; None: the default

    def spawn(self, cmd, **kw):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
        self.procs.append(p)
        return p

    def close(self):
        if getattr(self, "pg_dir", None):
            subprocess.run(["bash", PG_CLUSTER, "stop", self.pg_dir], capture_output=True)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---------- the pieces ----------

    def start_nginx(self):
        self.up_port = free_port()
        conf = open(os.path.join(HERE, "nginx.conf.in")).read()
        conf = conf.replace("@DIR@", self.dir).replace("@PORT@", str(self.up_port))
        path = os.path.join(self.dir, "nginx.conf")
        open(path, "w").write(conf)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.spawn([nginx, "-c", path, "-e", os.path.join(self.dir, "nginx-error.log")])
        wait_port(self.up_port)
        self.upstream = f"http://127.0.0.1:{self.up_port}"

    def start_proxy(self):
        """nginx as a kept-alive reverse proxy to the canned upstream"""
        self.proxy_port = free_port()
        conf = open(os.path.join(HERE, "nginx-proxy.conf.in")).read()
        conf = (conf.replace("@DIR@", self.dir).replace("@PORT@", str(self.proxy_port))
                .replace("@UPSTREAM_PORT@", str(self.up_port))
                .replace("@WORKERS@", str(self.threads())))
        path = os.path.join(self.dir, "nginx-proxy.conf")
        open(path, "w").write(conf)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proxy_proc = self.spawn([nginx, "-c", path, "-e",
                                      os.path.join(self.dir, "nginx-proxy-error.log")])
        wait_port(self.proxy_port)
        self.proxy = f"http://127.0.0.1:{self.proxy_port}"

    def threads(self):
        """the serving threads confabd runs with (and the proxy's workers)"""
        if self.args.threads is not None:
            return self.args.threads if self.args.threads > 0 else os.cpu_count()
        return 1

    def start_confab(self, state=None, extra=(), bus="session"):
        self.confab_port = free_port()
        state = state or os.path.join(self.dir, "state")
        conf = os.path.join(self.dir, "confab.conf")
        open(conf, "w").write(
            f"[daemon]\nshutdown_grace=5\nserving_threads={self.threads()}\n"
            f"[desktop]\nsearch_index={self.args.search_index}\n"
            "[limits]\nmax_connections=65536\nmax_inflight_turns=65536\nidle_timeout=300\n"
            "max_connections_per_peer=65536\nmax_body_bytes=67108864\n"
            "[upstream]\nmax_connections=65536\nfirst_byte_timeout=600\nidle_timeout=600\n"
            + (f"max_retries={self.upstream_retries}\n" if self.upstream_retries is not None
               else "")
            + "[responses]\nmax_background=0\n"
            # --limits: every turn under a rate, a cap on turns in flight and
            # token budgets that never refuse, to weigh what admitting them
            # (and reserving and settling each model call's tokens) costs
            + ("[quota]\ndefault_rpm=2147483647\ndefault_max_parallel=2147483647\n"
               "default_tpm=2147483647\ndefault_monthly_tokens=9223372036854775807\n"
               if self.args.limits else ""))
        self.confab = self.spawn([self.args.confabd, f"--listen=127.0.0.1:{self.confab_port}",
                                  f"--state-dir={state}", f"--bus={bus}", f"--config={conf}",
                                  *extra])
        wait_port(self.confab_port)
        self.url = f"http://127.0.0.1:{self.confab_port}"
        time.sleep(0.3)

    def stop_confab(self):
        self.confab.send_signal(signal.SIGTERM)
        self.confab.wait(30)

    def admin(self, method, *args):
        out = subprocess.run(["gdbus", "call", "--session", "--dest", "org.confab.Confab1",
                              "--object-path", "/org/confab/Confab1",
                              "--method", f"org.confab.Confab1.Admin.{method}", *args],
                             capture_output=True, text=True, check=True).stdout
        return re.findall(r"'([^']*)'", out)

    def provision(self):
        self.agent_json = self.admin("CreateAgent",
                                     "{'name': <'bench-json'>, 'provider': <'openai'>, "
                                     f"'base_url': <'{self.upstream}/json/v1'>, "
                                     "'upstream_model': <'bench'>, 'api_key': <'sk-bench'>}")[0]
        self.agent_sse = self.admin("CreateAgent",
                                    "{'name': <'bench-sse'>, 'provider': <'openai'>, "
                                    f"'base_url': <'{self.upstream}/sse/v1'>, "
                                    "'upstream_model': <'bench'>, 'api_key': <'sk-bench'>}")[0]
        self.token_id, self.token = self.admin(
            "CreateToken", "{'owner': <'bench'>, 'scopes': <['chat.completions']>}")
        if self.args.limits:
            # the token's own limits too: both of an admission's keys
            self.admin("SetLimits", "token", self.token_id,
                       "{'rpm': <uint64 2147483647>, 'tpm': <uint64 2147483647>, "
                       "'max_parallel': <uint32 2147483647>, "
                       "'monthly_tokens': <uint64 9223372036854775807>}")

    def body(self, agent, stream=False):
        b = json.loads(CHAT_BODY)
        b["model"] = agent
        if stream:
            b["stream"] = True
        return json.dumps(b)

    def start_portkey(self):
        entry = os.path.join(HERE, "node_modules", "@portkey-ai", "gateway", "build",
                             "start-server.js")
        if not os.path.exists(entry) or not shutil.which("node"):
            return None
        port = free_port()
        self.spawn(["node", entry, f"--port={port}", "--headless"],
                   env=dict(os.environ, NODE_ENV="production"))
        wait_port(port, 60)
        return f"http://127.0.0.1:{port}"

    # ---------- scenarios ----------

    def line(self, text):
        print(text, flush=True)

    def scenario_turns(self):
        d = self.args.seconds
        chat = f"{self.url}/api/v1/chat/completions"
        direct = f"{self.upstream}/json/v1/chat/completions"
        body_direct = self.body("bench")
        body = self.body(self.agent_json)
        # warm up both
        wrk(direct, 4, 1, body=body_direct)
        wrk(chat, 4, 1, body=body, token=self.token)
        proxied = f"{self.proxy}/json/v1/chat/completions"
        wrk(proxied, 4, 1, body=body_direct)
        results = {}
        for conns in (1, 64):
            up = wrk(direct, conns, d, body=body_direct)
            px = wrk(proxied, conns, d, body=body_direct, cpu=children(self.proxy_proc.pid))
            cf = wrk(chat, conns, d, body=body, token=self.token, cpu=[self.confab.pid])
            results[conns] = cf
            self.line(f"turns c={conns}: confab {cf[0]:.0f} req/s p50 {cf[1]:.3f} ms "
                      f"p99 {cf[2]:.3f} ms | upstream direct {up[0]:.0f} req/s p50 {up[1]:.3f} ms "
                      f"p99 {up[2]:.3f} ms | added p50 {cf[1] - up[1]:.3f} ms "
                      f"p99 {cf[2] - up[2]:.3f} ms | errors {cf[3]}")
            self.line(f"nginx-proxy c={conns}: {px[0]:.0f} req/s p50 {px[1]:.3f} ms "
                      f"p99 {px[2]:.3f} ms | added p50 {px[1] - up[1]:.3f} ms "
                      f"p99 {px[2] - up[2]:.3f} ms | confab/nginx-proxy: throughput "
                      f"{cf[0] / max(px[0], 1):.3f}, added p50 "
                      f"{(cf[1] - up[1]) / max(px[1] - up[1], 0.001):.1f}x | errors {px[3]}")
            self.line(f"cpu c={conns}: confabd {cpu_text(*cf[5])} | nginx-proxy workers "
                      f"{px[5][1]:.1f} us/request | confab/nginx-proxy CPU "
                      f"{cf[5][1] / max(px[5][1], 0.001):.1f}x")
        self.turns_c64 = results[64][0]
        portkey = self.start_portkey()
        if portkey:
            pk_headers = ("x-portkey-provider: openai|"
                          f"x-portkey-custom-host: {self.upstream}/json/v1|"
                          "Authorization: Bearer sk-bench")
            wrk(f"{portkey}/v1/chat/completions", 4, 2, body=body_direct, headers=pk_headers)
            pk = wrk(f"{portkey}/v1/chat/completions", 64, d, body=body_direct,
                     headers=pk_headers)
            self.line(f"portkey c=64: {pk[0]:.0f} req/s p50 {pk[1]:.3f} ms p99 {pk[2]:.3f} ms "
                      f"errors {pk[3]} | confab/portkey throughput ratio "
                      f"{results[64][0] / max(pk[0], 1):.1f}x")
        else:
            self.line("portkey: not installed (npm ci in tests/bench), skipped")

    def scenario_streams(self):
        d = self.args.seconds
        chat = f"{self.url}/api/v1/chat/completions"
        direct = f"{self.upstream}/sse/v1/chat/completions"
        body = self.body(self.agent_sse, stream=True)
        cf = wrk(chat, 64, d, body=body, token=self.token, cpu=[self.confab.pid])
        up = wrk(direct, 64, d, body=self.body("bench", stream=True))
        ttfb_cf = asyncio.run(ttfb(self.confab_port, "/api/v1/chat/completions", body,
                                   self.token, 300))
        ttfb_up = asyncio.run(ttfb(self.up_port, "/sse/v1/chat/completions",
                                   self.body("bench", stream=True), None, 300))
        px = wrk(f"{self.proxy}/sse/v1/chat/completions", 64, d,
                 body=self.body("bench", stream=True), cpu=children(self.proxy_proc.pid))
        ttfb_px = asyncio.run(ttfb(self.proxy_port, "/sse/v1/chat/completions",
                                   self.body("bench", stream=True), None, 300))
        self.line(f"streams c=64: confab {cf[0]:.0f} streams/s p50 {cf[1]:.3f} ms "
                  f"p99 {cf[2]:.3f} ms | upstream direct {up[0]:.0f} streams/s | "
                  f"TTFB c=1 p50 confab {ttfb_cf[0]:.3f} ms upstream {ttfb_up[0]:.3f} ms "
                  f"added {ttfb_cf[0] - ttfb_up[0]:.3f} ms (p99 added "
                  f"{ttfb_cf[1] - ttfb_up[1]:.3f} ms) | errors {cf[3]}")
        self.line(f"streams nginx-proxy c=64: {px[0]:.0f} streams/s | TTFB c=1 added "
                  f"{ttfb_px[0] - ttfb_up[0]:.3f} ms | confab/nginx-proxy: throughput "
                  f"{cf[0] / max(px[0], 1):.3f} | errors {px[3]}")
        self.line(f"cpu streams c=64: confabd {cpu_text(*cf[5])} | nginx-proxy workers "
                  f"{px[5][1]:.1f} us/stream")

    def scenario_writer(self):
        """the SQLite store's writer fed alone (tests/bench/store-writer):
        its ceiling in turns/s, and its CPU per turn"""
        if not self.args.store_writer or not os.path.exists(self.args.store_writer):
            self.line("writer: tests/bench/store-writer not built, skipped")
            return
        self.line(self.writer_alone()[1])

    def writer_alone(self):
        """the store writer fed alone: its thread's us of CPU per turn, and
        the line it printed"""
        out = subprocess.run([self.args.store_writer, str(self.args.seconds), "64",
                              tempfile.mkdtemp(dir=self.dir)],
                             capture_output=True, text=True, check=True).stdout
        us = float(re.search(r"writer thread ([\d.]+) us CPU/turn", out).group(1))
        return us, out.strip()

    def cpu_per_turn(self, stream):
        """confabd's CPU per turn at 64 connections, in all and per thread"""
        chat = f"{self.url}/api/v1/chat/completions"
        body = self.body(self.agent_sse if stream else self.agent_json, stream=stream)
        # warm: a fresh daemon's first seconds (its database's first
        # pages, its allocator's arenas) cost more than its steady state
        wrk(chat, 64, 2, body=body, token=self.token)
        return wrk(chat, 64, self.args.seconds, body=body, token=self.token,
                   cpu=[self.confab.pid])[5]

    def scenario_targets(self):
        """issue 24's targets, measured in one run, each the median of
        --target-runs: CPU per JSON turn (1 serving thread), the writer's
        CPU per turn at its ceiling (fed alone) and in confabd, the tax of a
        second serving thread, and a streamed turn against a JSON one"""
        runs = max(1, self.args.target_runs)
        threads = self.args.threads
        json1, json2, streams, writer_in, writer_alone = [], [], [], [], []
        for _ in range(runs):
            for n in (1, 2):
                self.stop_confab()
                self.args.threads = n
                self.start_confab(state=os.path.join(self.dir, f"targets-{n}"))
                self.provision()
                per, total = self.cpu_per_turn(False)
                (json1 if n == 1 else json2).append(total)
                if n == 1:
                    writer_in.append(per.get("confab-writer", 0.0))
                    streams.append(self.cpu_per_turn(True)[1])
            if self.args.store_writer and os.path.exists(self.args.store_writer):
                writer_alone.append(self.writer_alone()[0])
        self.args.threads = threads
        self.stop_confab()
        self.start_confab()
        self.provision()
        med = statistics.median
        j1, j2, st, wi = med(json1), med(json2), med(streams), med(writer_in)
        wa = med(writer_alone) if writer_alone else float("nan")

        def verdict(ok):
            return "met" if ok else "NOT met"

        self.line(f"targets ({runs} run{'s' if runs > 1 else ''}, medians; 64 conns):")
        self.line(f"  CPU per JSON turn, 1 serving thread: {j1:.1f} us (target <= 50: "
                  f"{verdict(j1 <= 50)})")
        self.line(f"  writer per turn at its ceiling (fed alone): {wa:.1f} us, "
                  f"{1e6 / wa:.0f} turns/s (target <= 10: {verdict(wa <= 10)}); "
                  f"in confabd at this load {wi:.1f} us")
        self.line(f"  contention tax, 2 serving threads / 1: {j2:.1f} / {j1:.1f} us = "
                  f"{j2 / j1:.2f} (target <= 1.10: {verdict(j2 / j1 <= 1.10)})")
        self.line(f"  streamed / JSON turn: {st:.1f} / {j1:.1f} us = {st / j1:.2f} "
                  f"(target <= 1.5: {verdict(st / j1 <= 1.5)})")

    def scenario_limits(self):
        """issue 30's target: a turn under limits (the owner's and the
        token's rpm, max_parallel, tpm and monthly_tokens, never reached)
        costs at most 5 % more CPU than one without. Runs alternate without
        and with limits (a loaded machine drifts less between neighbours);
        each figure is the median of --target-runs, JSON and streamed"""
        runs = max(1, self.args.target_runs)
        limits = self.args.limits
        got = {(False, False): [], (False, True): [], (True, False): [], (True, True): []}
        for i in range(runs):
            for on in (False, True):
                self.stop_confab()
                self.args.limits = on
                self.start_confab(state=os.path.join(self.dir, f"limits-{i}-{int(on)}"))
                self.provision()
                for stream in (False, True):
                    got[(on, stream)].append(self.cpu_per_turn(stream)[1])
        self.args.limits = limits
        self.stop_confab()
        self.start_confab()
        self.provision()
        med = statistics.median
        self.line(f"limits ({runs} run{'s' if runs > 1 else ''}, medians; 64 conns, "
                  f"{self.threads()} serving thread(s)):")
        for stream, what in ((False, "JSON"), (True, "streamed")):
            off, on = med(got[(False, stream)]), med(got[(True, stream)])
            self.line(f"  CPU per {what} turn: without limits {off:.1f} us, with {on:.1f} us"
                      f" = {on / off:.3f} (target <= 1.05: "
                      f"{'met' if on / off <= 1.05 else 'NOT met'})")

    def scenario_failover(self):
        """issue 29: what moving on to a healthy next target adds beyond
        the time the failed target took. Each of N agents has a first target
        that refuses connections and a healthy second one; N more have only
        the healthy one. Every agent answers one JSON turn (its first: no
        health state yet, so the dead target is tried), sequentially, over
        one kept-alive connection; [upstream] max_retries=0, so the failed
        target's time is one refused connect, measured alone beside it."""
        n = 100
        self.stop_confab()
        self.upstream_retries = 0
        self.start_confab(state=os.path.join(self.dir, "failover"))
        self.provision()
        dead = free_port()
        healthy = {"label": "up", "base_url": f"{self.upstream}/json/v1",
                   "upstream_model": "bench", "api_key": "sk-bench"}
        down = dict(healthy, label="down", base_url=f"http://127.0.0.1:{dead}/v1")

        def agent(name, targets):
            return self.admin("CreateAgent",
                              f"{{'name': <'{name}'>, 'provider': <'openai'>, "
                              f"'upstreams': <'{json.dumps(targets)}'>}}")[0]

        pairs = [(agent(f"fo-{i}", [down, healthy]), agent(f"one-{i}", [healthy]))
                 for i in range(n)]
        conn = http.client.HTTPConnection("127.0.0.1", self.confab_port)
        headers = {"Authorization": f"Bearer {self.token}",
                   "Content-Type": "application/json"}

        def turn(agent_id):
            t = time.perf_counter()
            conn.request("POST", "/api/v1/chat/completions", self.body(agent_id), headers)
            r = conn.getresponse()
            r.read()
            elapsed = (time.perf_counter() - t) * 1000
            return elapsed, r.status, r.getheader("x-confab-attempts")

        # warm: the upstream's connection, the token
        turn(self.agent_json)
        over, direct, refused, bad = [], [], [], 0
        for routed, one in pairs:
            ms, status, attempts = turn(routed)
            bad += status != 200 or attempts != "2"
            over.append(ms)
            ms, status, _ = turn(one)
            bad += status != 200
            direct.append(ms)
            t = time.perf_counter()
            try:
                socket.create_connection(("127.0.0.1", dead), timeout=1).close()
            except OSError:
                pass
            refused.append((time.perf_counter() - t) * 1000)
        conn.close()
        self.upstream_retries = None
        self.stop_confab()
        self.start_confab()
        self.provision()
        med = statistics.median
        added = med(over) - med(direct) - med(refused)
        over.sort()
        direct.sort()
        self.line(f"failover ({n} turns each, sequential): dead-then-healthy p50 "
                  f"{med(over):.3f} ms p99 {over[int(n * 0.99) - 1]:.3f} ms | healthy alone "
                  f"p50 {med(direct):.3f} ms p99 {direct[int(n * 0.99) - 1]:.3f} ms | a "
                  f"refused connect p50 {med(refused):.3f} ms | added by moving on p50 "
                  f"{added:.3f} ms (target <= 1 ms: {'met' if added <= 1 else 'NOT met'}) | "
                  f"unexpected answers {bad}")

    def scenario_responses(self):
        """a streamed Responses turn, then the same in the background (its
        events kept in the store as it runs): requests/s and confabd's CPU
        per turn (all threads, and its writer's), same daemon, same run"""
        url = f"{self.url}/api/v1/responses"
        got = {}
        for label, extra in (("foreground", {}), ("background", {"background": True})):
            body = json.dumps({"model": self.agent_sse, "input": "Hello", "stream": True,
                               **extra})
            wrk(url, 64, 2, body=body, token=self.token)
            got[label] = wrk(url, 64, self.args.seconds, body=body, token=self.token,
                             cpu=[self.confab.pid])
        fg, bg = got["foreground"], got["background"]
        self.line(f"responses streamed c=64: foreground {fg[0]:.0f}/s, CPU {fg[5][1]:.1f} us/turn "
                  f"(writer {fg[5][0].get('confab-writer', 0.0):.1f}) | background, events kept "
                  f"{bg[0]:.0f}/s, CPU {bg[5][1]:.1f} us/turn (writer "
                  f"{bg[5][0].get('confab-writer', 0.0):.1f}) = {bg[5][1] / fg[5][1]:.2f}")

    def scenario_open_streams(self):
        n = self.args.open_streams
        slow_port = free_port()
        agent = self.admin("CreateAgent",
                           "{'name': <'bench-slow'>, 'provider': <'openai'>, "
                           f"'base_url': <'http://127.0.0.1:{slow_port}/v1'>, "
                           "'upstream_model': <'slow'>, 'api_key': <'sk-bench'>}")[0]
        before = rss_kib(self.confab.pid)
        fd_before = fds(self.confab.pid)
        held = asyncio.run(hold_streams(slow_port, self.confab_port, self.body(agent, True),
                                        self.token, n, self.confab.pid))
        got, during, fd_during = held
        per = (during - before) / max(got, 1)
        self.line(f"open streams: {got}/{n} held through confab | RSS {before} KiB -> "
                  f"{during} KiB, {per:.1f} KiB per open stream | fds {fd_before} -> "
                  f"{fd_during}")

    def seed(self, conversations, per_conv):
        db = os.path.join(self.dir, "state", "confab.db")
        agent = self.agent_json
        sql = f"""
PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-262144;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < {conversations})
INSERT INTO sessions (id, owner, agent_id, source, title, created_at, updated_at)
  SELECT 'cts_' || printf('%026d', i), 'bench', '{agent}', 0,
  'seeded conversation ' || i, 1700000000 + i / 100, 1700000000 + i / 100 FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < {conversations * per_conv - 1})
INSERT INTO messages (id, session_id, role, model, content, content_blocks, status,
  finish_reason, prompt_tokens, completion_tokens, created_at) SELECT 'msg_' || printf('%026d', i),
  'cts_' || printf('%026d', i / {per_conv} + 1),
  CASE i % 2 WHEN 0 THEN 'user' ELSE 'assistant' END, '{agent}',
  '[{{"type":"text","text":"seeded message"}}]', '[{{"type":"text","text":"seeded message"}}]',
  0, NULL, NULL, NULL, 1700000000 + i / {per_conv * 100} FROM n;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
"""
        t = time.time()
        subprocess.run(["sqlite3", db], input=sql, text=True, check=True,
                       stdout=subprocess.DEVNULL)
        return time.time() - t

    def scenario_lists(self):
        conversations = self.args.conversations
        per_conv = self.args.messages_per_conversation
        self.stop_confab()
        took = self.seed(conversations, per_conv)
        # the seed leaves gigabytes of dirty pages: written back now, they
        # are not measured as the tail of the first list page
        t = time.time()
        os.sync()
        synced = time.time() - t
        self.start_confab()
        size = os.path.getsize(os.path.join(self.dir, "state", "confab.db")) >> 20
        self.line(f"seeded {conversations} conversations, {conversations * per_conv} messages "
                  f"in {took:.0f} s ({size} MiB; written back in {synced:.0f} s)")
        d = max(3, self.args.seconds // 2)
        mid = f"cts_{conversations // 2:026d}"
        deep = f"cts_{conversations // 100:026d}"
        # a message half-way through the conversation mid
        mid_msg = f"msg_{(conversations // 2 - 1) * per_conv + per_conv // 2:026d}"
        pages = [
            ("conversations first page", "/api/v1/conversations?limit=20"),
            ("conversations deep after page", f"/api/v1/conversations?limit=20&after={deep}"),
            ("conversations asc mid page", f"/api/v1/conversations?limit=20&order=asc&after={mid}"),
            ("messages of a conversation", f"/api/v1/conversations/{mid}/messages"),
            # the Conversations API's items of the same conversation
            ("items of a conversation", f"/api/v1/conversations/{mid}/items"),
            ("messages deep after page",
             f"/api/v1/conversations/{mid}/messages?limit=20&after={mid_msg}"),
            ("items deep after page",
             f"/api/v1/conversations/{mid}/items?limit=20&after={mid_msg}"),
        ]
        for name, path in pages:
            # the same page warm, as a client paging through would find it
            wrk(self.url + path, 1, 2, method="GET", token=self.token, threads=1)
            wrk(self.url + path, 8, 1, method="GET", token=self.token, threads=2)
            r = wrk(self.url + path, 1, d, method="GET", token=self.token, threads=1)
            # confabd's CPU per request: what a loaded machine (CI, other
            # jobs) changes least, where req/s swings with the load
            r8 = wrk(self.url + path, 8, d, method="GET", token=self.token, threads=2,
                     cpu=[self.confab.pid])
            self.line(f"list {name}: c=1 p50 {r[1]:.3f} ms p99 {r[2]:.3f} ms | c=8 "
                      f"{r8[0]:.0f} req/s p99 {r8[2]:.3f} ms, CPU {r8[5][1]:.1f} us/req | "
                      f"errors {r[3] + r8[3]}")

    def scenario_rss(self):
        # a fresh daemon on the same state: the figures are its own
        self.stop_confab()
        self.start_confab()
        self.line(f"idle RSS of a fresh daemon: {rss_kib(self.confab.pid) / 1024:.1f} MiB")
        target = self.args.turns
        chat = f"{self.url}/api/v1/chat/completions"
        body = self.body(self.agent_json)
        curve = [(0, rss_kib(self.confab.pid), fds(self.confab.pid))]
        done = 0
        step = max(1, self.args.rss_step)
        while done < target:
            rate = max(self.turns_c64, 500)
            seconds = max(1, int(min(target - done, step) / rate + 0.5))
            r = wrk(chat, 64, seconds, body=body, token=self.token)
            done += r[4]
            curve.append((done, rss_kib(self.confab.pid), fds(self.confab.pid)))
        self.line("RSS after turns: " + ", ".join(f"{n} turns {kib / 1024:.1f} MiB ({f} fds)"
                                                  for n, kib, f in curve))

    def hwm_kib(self):
        for line in open(f"/proc/{self.confab.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def post_big(self, body, n):
        import threading
        import urllib.request
        codes = []

        def one():
            req = urllib.request.Request(f"{self.url}/api/v1/chat/completions", data=body,
                                         headers={"Authorization": f"Bearer {self.token}",
                                                  "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=600) as r:
                    r.read()
                    codes.append(r.status)
            except urllib.error.HTTPError as e:
                codes.append(e.code)
        threads = [threading.Thread(target=one) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return codes

    def scenario_bigbody(self):
        """peak and kept RSS for 10 MiB JSON turns, each on a fresh daemon: to
        the echo agent (the answer is as large as the body) and to an upstream
        agent (a short answer)"""
        size = 10 * 1024 * 1024
        text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
        echo = self.admin("CreateAgent", "{'name': <'bench-echo'>, 'provider': <'echo'>}")[0]
        for name, agent in (("echo", echo), ("upstream", self.agent_json)):
            body = json.dumps({"model": agent,
                               "messages": [{"role": "user", "content": text}]}).encode()
            for n in (1, 4):
                self.stop_confab()
                self.start_confab()
                start = rss_kib(self.confab.pid)
                codes = self.post_big(body, n)
                time.sleep(0.5)
                peak = self.hwm_kib() - start
                after = rss_kib(self.confab.pid)
                self.line(f"10 MiB body x{n} to {name}: peak +{peak / 1024:.0f} MiB "
                          f"({peak / 1024 / 10 / n:.1f}x the body per turn), "
                          f"after {after / 1024:.0f} MiB (start {start / 1024:.0f} MiB), "
                          f"answers {sorted(codes)}")

    def active_turns(self):
        out = subprocess.run(["gdbus", "call", "--session", "--dest", "org.confab.Confab1",
                              "--object-path", "/org/confab/Confab1", "--method",
                              "org.freedesktop.DBus.Properties.Get", "org.confab.Confab1.Admin",
                              "ActiveTurns"], capture_output=True, text=True).stdout
        m = re.search(r"(\d+)>", out)
        return int(m.group(1)) if m else -1

    def scenario_tools(self):
        """an agent's own tool over stdio: the round trip a tool call adds to a
        turn, and RSS with 1,000 turns each waiting on a tool call"""
        server = os.path.join(HERE, "mcp-bench-server.py")
        release = os.path.join(self.dir, "release-tools")
        servers = json.dumps({"mcpServers": {"bench": {
            "command": sys.executable, "args": [server],
            "env": {"MCP_BENCH_RELEASE": release}}}})
        plain = self.admin("CreateAgent", "{'name': <'bench-plain'>, 'provider': <'echo'>}")[0]
        tools = self.admin("CreateAgent", "{'name': <'bench-tools'>, 'provider': <'echo'>, "
                           f"'mcp_servers': <'{servers}'>}}")[0]
        chat = f"{self.url}/api/v1/chat/completions"

        def body(agent, text):
            return json.dumps({"model": agent, "messages": [{"role": "user", "content": text}]})
        one_call = body(tools, '/tool bench__echo {"text":"hello"}')
        no_call = body(plain, "hello")
        wrk(chat, 1, 1, body=one_call, token=self.token)
        d = self.args.seconds
        without = wrk(chat, 1, d, body=no_call, token=self.token)
        with_tool = wrk(chat, 1, d, body=one_call, token=self.token)
        direct = subprocess.run([sys.executable, server, "--direct", "2000"],
                                capture_output=True, text=True).stdout.split()
        self.line(f"tool round trip, 1 connection: a turn with one tool call p50 "
                  f"{with_tool[1]:.3f} ms p99 {with_tool[2]:.3f} ms, without {without[1]:.3f} ms "
                  f"p99 {without[2]:.3f} ms: added p50 {with_tool[1] - without[1]:.3f} ms "
                  f"(the server alone: p50 {float(direct[0]):.3f} ms) | errors "
                  f"{with_tool[3] + without[3]}")
        n = self.args.tool_turns
        start = rss_kib(self.confab.pid)
        held, rss, codes = asyncio.run(hold_tool_turns(self, self.confab_port,
                                                        body(tools, "/tool bench__hold {}"),
                                                        n, release))
        self.line(f"{held} turns each waiting on a tool call: RSS {start / 1024:.1f} -> "
                  f"{rss / 1024:.1f} MiB, {(rss - start) / max(held, 1):.1f} KiB per turn; "
                  f"answers {dict(sorted(codes.items()))}")

    def scenario_soak(self):
        """mixed load for --soak-seconds: JSON turns, streams and list pages in
        rotation, RSS and open fds printed at every interval"""
        chat = f"{self.url}/api/v1/chat/completions"
        lists = f"{self.url}/api/v1/conversations?limit=20"
        loads = [
            (chat, "POST", self.body(self.agent_json)),
            (chat, "POST", self.body(self.agent_sse, stream=True)),
            (lists, "GET", ""),
        ]
        start = time.time()
        interval = self.args.soak_interval
        done = 0
        self.line(f"soak 0 s: RSS {rss_kib(self.confab.pid) / 1024:.1f} MiB, "
                  f"fds {fds(self.confab.pid)}")
        i = 0
        while time.time() - start < self.args.soak_seconds:
            url, method, body = loads[i % len(loads)]
            i += 1
            r = wrk(url, 32, interval, method=method, body=body, token=self.token)
            done += r[4]
            self.line(f"soak {time.time() - start:.0f} s: {done} requests, "
                      f"RSS {rss_kib(self.confab.pid) / 1024:.1f} MiB, "
                      f"fds {fds(self.confab.pid)}, errors {r[3]}")

    # ---------- PostgreSQL: the same scenarios, 1 and 2 instances ----------

    def start_pg(self):
        if subprocess.run(["bash", PG_CLUSTER, "check"], capture_output=True).returncode != 0:
            return None
        # beside the bench's directory, not in it: the server runs as the
        # postgres user when the bench runs as root
        self.pg_dir = tempfile.mkdtemp(prefix="confab-bench-pg-")
        out = subprocess.run(["bash", PG_CLUSTER, "start", self.pg_dir], capture_output=True,
                             text=True, check=True).stdout
        env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return env["PGSOCKET_URL"]

    def start_lb(self, ports):
        """nginx in front of confabd instances (its own process, reused ports)"""
        port = free_port()
        lbdir = os.path.join(self.dir, f"lb{port}")
        os.makedirs(lbdir)
        servers = "".join(f"\t\tserver 127.0.0.1:{p};\n" for p in ports)
        conf = (f"worker_processes 1;\ndaemon off;\npid {lbdir}/nginx.pid;\n"
                f"error_log {lbdir}/error.log warn;\nevents {{ worker_connections 8192; }}\n"
                f"http {{\n\taccess_log off;\n\tclient_body_temp_path {lbdir};\n"
                f"\tproxy_temp_path {lbdir}/proxy;\n\tkeepalive_requests 1000000;\n"
                f"\tupstream confab {{\n{servers}\t\tkeepalive 128;\n\t}}\n"
                f"\tserver {{\n\t\tlisten 127.0.0.1:{port} reuseport backlog=4096;\n"
                f"\t\tlocation / {{\n\t\t\tproxy_pass http://confab;\n"
                f"\t\t\tproxy_http_version 1.1;\n"
                f"\t\t\tproxy_set_header Connection \"\";\n\t\t}}\n\t}}\n}}\n")
        path = os.path.join(lbdir, "nginx.conf")
        open(path, "w").write(conf)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.spawn([nginx, "-c", path, "-e", os.path.join(lbdir, "error.log")])
        wait_port(port)
        return f"http://127.0.0.1:{port}"

    def seed_pg(self, url, conversations, per_conv):
        agent = self.agent_json
        sql = f"""
INSERT INTO sessions (id, owner, agent_id, source, title, created_at, updated_at)
  SELECT 'cts_' || lpad(i::text, 26, '0'), 'bench', '{agent}', 0,
  'seeded conversation ' || i, 1700000000 + i / 100, 1700000000 + i / 100
  FROM generate_series(1, {conversations}) AS i;
INSERT INTO messages (id, session_id, role, model, content, content_blocks, status,
  finish_reason, prompt_tokens, completion_tokens, created_at)
  SELECT 'msg_' || lpad(i::text, 26, '0'),
  'cts_' || lpad((i / {per_conv} + 1)::text, 26, '0'),
  CASE i % 2 WHEN 0 THEN 'user' ELSE 'assistant' END, '{agent}',
  '[{{"type":"text","text":"seeded message"}}]', '[{{"type":"text","text":"seeded message"}}]',
  0, NULL, NULL, NULL, 1700000000 + i / {per_conv * 100}
  FROM generate_series(0, {conversations * per_conv - 1}) AS i;
ANALYZE sessions;
ANALYZE messages;
"""
        t = time.time()
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url], input=sql, text=True,
                       check=True, stdout=subprocess.DEVNULL)
        return time.time() - t

    def lists_pg(self, url):
        conversations = self.args.conversations
        per_conv = self.args.messages_per_conversation
        took = self.seed_pg(url, conversations, per_conv)
        self.line(f"postgresql: seeded {conversations} conversations, "
                  f"{conversations * per_conv} messages in {took:.0f} s")
        d = max(3, self.args.seconds // 2)
        mid = f"cts_{conversations // 2:026d}"
        deep = f"cts_{conversations // 100:026d}"
        for name, path in [
                ("conversations first page", "/api/v1/conversations?limit=20"),
                ("conversations deep after page", f"/api/v1/conversations?limit=20&after={deep}"),
                ("conversations asc mid page",
                 f"/api/v1/conversations?limit=20&order=asc&after={mid}"),
                ("messages of a conversation", f"/api/v1/conversations/{mid}/messages")]:
            wrk(self.url + path, 1, 2, method="GET", token=self.token, threads=1)
            r = wrk(self.url + path, 1, d, method="GET", token=self.token, threads=1)
            r8 = wrk(self.url + path, 8, d, method="GET", token=self.token, threads=2)
            self.line(f"postgresql list {name}: c=1 p50 {r[1]:.3f} ms p99 {r[2]:.3f} ms | c=8 "
                      f"{r8[0]:.0f} req/s p99 {r8[2]:.3f} ms | errors {r[3] + r8[3]}")

    def turns_line(self, label, url, conns):
        chat = f"{url}/api/v1/chat/completions"
        r = wrk(chat, conns, self.args.seconds, body=self.body(self.agent_json),
                token=self.token)
        self.line(f"postgresql {label} turns c={conns}: {r[0]:.0f} req/s p50 {r[1]:.3f} ms "
                  f"p99 {r[2]:.3f} ms | errors {r[3]}")
        return r

    def scenario_postgres(self):
        url = self.start_pg()
        if url is None:
            self.line("postgresql: server binaries not found (apt-get install postgresql), "
                      "skipped")
            return
        # instance 1 takes the session bus from the SQLite daemon, for provisioning
        self.stop_confab()
        state1 = os.path.join(self.dir, "state-pg1")
        self.start_confab(state=state1, extra=[f"--store-url={url}"])
        first = self.confab_port
        self.provision()
        chat = f"{self.url}/api/v1/chat/completions"
        wrk(chat, 4, 1, body=self.body(self.agent_json), token=self.token)
        self.turns_line("1 instance", self.url, 1)
        r = self.turns_line("1 instance", self.url, 64)
        self.line(f"postgresql 1 instance / sqlite turns c=64: "
                  f"{r[0] / max(self.turns_c64, 1) * 100:.0f} % "
                  f"({r[0]:.0f} vs {self.turns_c64:.0f} req/s)")
        s = wrk(chat, 64, self.args.seconds, body=self.body(self.agent_sse, stream=True),
                token=self.token)
        self.line(f"postgresql 1 instance streams c=64: {s[0]:.0f} streams/s "
                  f"p50 {s[1]:.3f} ms p99 {s[2]:.3f} ms | errors {s[3]}")
        lb1 = self.start_lb([first])
        self.turns_line("nginx + 1 instance", lb1, 64)
        pg1 = self.confab
        self.start_confab(state=os.path.join(self.dir, "state-pg2"),
                          extra=[f"--store-url={url}"], bus="none")
        lb2 = self.start_lb([first, self.confab_port])
        self.turns_line("nginx + 2 instances", lb2, 64)
        self.confab = pg1
        self.url = f"http://127.0.0.1:{first}"
        self.confab_port = first
        if "lists" in self.args.only:
            self.lists_pg(url)

    def run(self):
        self.start_nginx()
        self.start_proxy()
        self.start_confab()
        self.provision()
        time.sleep(1)
        self.line(f"machine: {os.cpu_count()} cores, "
                  f"{open('/proc/meminfo').readline().split()[1]} kB RAM; "
                  f"{subprocess.run(['uname', '-sr'], capture_output=True, text=True).stdout.strip()}")
        self.line(f"confabd serving threads: {self.threads()} (nginx-proxy workers: "
                  f"{self.threads()}); search index: {self.args.search_index}")
        self.line(f"idle RSS: {rss_kib(self.confab.pid) / 1024:.1f} MiB")
        if "targets" in self.args.only:
            self.scenario_targets()
        if "limits" in self.args.only:
            self.scenario_limits()
        if "failover" in self.args.only:
            self.scenario_failover()
        if "turns" in self.args.only:
            self.scenario_turns()
        else:
            self.turns_c64 = 1000
        if "writer" in self.args.only:
            self.scenario_writer()
        if "streams" in self.args.only:
            self.scenario_streams()
        if "responses" in self.args.only:
            self.scenario_responses()
        if "rss" in self.args.only:
            self.scenario_rss()
        if "open" in self.args.only:
            self.scenario_open_streams()
        if "lists" in self.args.only:
            self.scenario_lists()
        if "soak" in self.args.only:
            self.scenario_soak()
        if "bigbody" in self.args.only:
            self.scenario_bigbody()
        if "tools" in self.args.only:
            self.scenario_tools()
        if "postgres" in self.args.only:
            self.scenario_postgres()


async def ttfb(port, path, body, token, count):
    """time to the first body byte of sequential streaming requests: p50, p99 (ms)"""
    samples = []
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n")
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    req = (head + "\r\n" + body).encode()
    for _ in range(count):
        t = time.perf_counter()
        writer.write(req)
        await writer.drain()
        headers = await reader.readuntil(b"\r\n\r\n")
        chunked = b"chunked" in headers.lower()
        first = await reader.read(1)
        samples.append((time.perf_counter() - t) * 1000)
        # read the rest of the response
        if chunked:
            rest = first
            while not rest.endswith(b"0\r\n\r\n"):
                rest += await reader.read(65536)
        else:
            m = re.search(rb"content-length:\s*(\d+)", headers.lower())
            left = int(m.group(1)) - 1
            while left > 0:
                left -= len(await reader.read(left))
    writer.close()
    samples.sort()
    return samples[len(samples) // 2], samples[int(len(samples) * 0.99) - 1]


async def hold_tool_turns(bench, port, body, n, release):
    """n JSON turns whose tool call waits for @release; returns (turns held,
    RSS KiB while held, {status: count})"""
    req = (f"POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"Authorization: Bearer {bench.token}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}").encode()
    codes = {}

    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(req)
        await writer.drain()
        data = await reader.read()
        writer.close()
        code = data.split(b" ", 2)[1].decode() if data else "none"
        codes[code] = codes.get(code, 0) + 1

    tasks = [asyncio.create_task(one()) for _ in range(n)]
    held = 0
    for _ in range(600):
        await asyncio.sleep(0.1)
        held = await asyncio.to_thread(bench.active_turns)
        if held >= n:
            break
    await asyncio.sleep(1)
    rss = rss_kib(bench.confab.pid)
    open(release, "w").close()
    await asyncio.gather(*tasks)
    os.unlink(release)
    return held, rss, codes


async def hold_streams(slow_port, confab_port, body, token, n, pid):
    """A slow upstream that holds every stream open after one chunk, and n
    clients streaming through confab. Returns (held, RSS KiB, fds)."""
    release = asyncio.Event()
    first_chunk = ('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"s",'
                   '"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},'
                   '"finish_reason":null}]}\n\n')

    async def upstream(reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            m = re.search(rb"content-length:\s*(\d+)", head.lower())
            await reader.readexactly(int(m.group(1)))
            chunk = first_chunk.encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n" +
                         b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
            await release.wait()
            done = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"s",' \
                   b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
            await writer.drain()
        except Exception:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", slow_port, backlog=4096)
    got = 0
    conns = []
    req = (f"POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
           f"Content-Type: application/json\r\nAuthorization: Bearer {token}\r\n"
           f"Content-Length: {len(body)}\r\n\r\n{body}").encode()

    async def client():
        nonlocal got
        reader, writer = await asyncio.open_connection("127.0.0.1", confab_port)
        conns.append(writer)
        writer.write(req)
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        data = b""
        while b"Hi" not in data:
            more = await reader.read(4096)
            if not more:
                return
            data += more
        got += 1
        return reader

    readers = []
    for i in range(0, n, 100):
        readers += await asyncio.wait_for(
            asyncio.gather(*[client() for _ in range(min(100, n - i))],
                           return_exceptions=True), 120)
    await asyncio.sleep(1.0)
    rss, nfds = rss_kib(pid), fds(pid)
    release.set()
    await asyncio.sleep(1.0)
    for w in conns:
        w.close()
    server.close()
    return got, rss, nfds


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--confabd", required=True)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--store-writer", default=None,
                    help="tests/bench/store-writer, for the writer scenario")
    ap.add_argument("--threads", type=int, default=None,
                    help="[daemon] serving_threads for confabd, 0 for one per CPU "
                         "(default: 1); the proxy gets as many workers")
    ap.add_argument("--open-streams", type=int, default=1000)
    ap.add_argument("--turns", type=int, default=100000)
    ap.add_argument("--rss-step", type=int, default=25000)
    ap.add_argument("--conversations", type=int, default=1000000)
    ap.add_argument("--messages-per-conversation", type=int, default=10)
    ap.add_argument("--only",
                    default="targets,turns,streams,responses,writer,open,rss,lists,postgres")
    ap.add_argument("--limits", action="store_true",
                    help="confabd with [quota] default_rpm, default_max_parallel, "
                         "default_tpm and default_monthly_tokens set, and its token's own "
                         "(never reached): the cost of admitting turns under limits; "
                         "--only limits measures with and without in one run")
    ap.add_argument("--target-runs", type=int, default=3,
                    help="runs of the targets scenario; each figure is their median")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--search-index", choices=["auto", "true", "false"], default="false",
                    help="[desktop] search_index: false, as a system service has it "
                         "(the bench runs on a session bus, where auto would keep it)")
    ap.add_argument("--soak-seconds", type=int, default=300)
    ap.add_argument("--tool-turns", type=int, default=1000)
    ap.add_argument("--soak-interval", type=int, default=10)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    b = Bench(args)
    try:
        b.run()
    finally:
        b.close()


if __name__ == "__main__":
    main()
