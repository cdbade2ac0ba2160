#!/usr/bin/env node
// Copyright 2026 The Confab authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// OpenAI's Codex CLI (npm @openai/codex) against a real confabd, with the
// recipe of docs/clients.md and nothing else: `codex exec` on the Responses
// API, through a tool loop, against an agent whose upstream is as strict as
// OpenAI's (tests/fake-upstream's "strict" script: 400 for any member Chat
// Completions does not know, such as Codex's client_metadata, and for any
// tool that is not a function tool). The upstream calls Codex's own
// exec_command tool; Codex runs it and sends its output back; the upstream
// answers with it.
//
// Prints TAP; exits 77 (meson's "skipped") when node_modules has no codex:
// run `npm ci` here first.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  SLOW,
  harness,
  cleanup,
  startBus,
  startDaemon,
  waitForBusName,
  createToken,
  startFakeUpstream,
  createUpstreamAgent,
} from './confabd.mjs';

const CODEX = join(import.meta.dirname, 'node_modules', '.bin', 'codex');
if (!existsSync(CODEX)) {
  console.log('1..0 # SKIP @openai/codex is not installed: run `npm ci` in tests/client');
  process.exit(77);
}

// Runs @argv with no stdin (codex exec reads a piped stdin as more prompt).
function run(argv, env, cwd) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGTERM'), 120000 * SLOW);
    child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr });
    });
  });
}

async function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'confab-codex-'));
  let ok = false;
  console.log('TAP version 13');
  console.log('1..1');
  try {
    const busAddress = await startBus();
    harness.busEnv = { ...process.env, DBUS_SESSION_BUS_ADDRESS: busAddress };
    const d = await startDaemon(busAddress);
    await waitForBusName();
    const fake = await startFakeUpstream();
    const agent = await createUpstreamAgent('codex', fake.baseUrl, 'strict:exec_command');
    const token = await createToken({ owner: 'coder' });

    // docs/clients.md's recipe, as a user writes it
    const home = join(scratch, 'codex-home');
    const work = join(scratch, 'work');
    mkdirSync(home);
    mkdirSync(work);
    writeFileSync(
      join(home, 'config.toml'),
      `model = "${agent}"
model_provider = "confab"
web_search = "disabled"

[model_providers.confab]
name = "Confab"
base_url = "${d.url}/api/v1"
env_key = "CONFAB_TOKEN"
wire_api = "responses"
`,
    );
    const env = { ...process.env, CODEX_HOME: home, HOME: scratch, CONFAB_TOKEN: token };
    delete env.OPENAI_API_KEY;
    const r = await run(
      [CODEX, 'exec', '--skip-git-repo-check', '--sandbox', 'danger-full-access',
        'Run `echo confab-strict-ok` and tell me what it printed.'],
      env,
      work,
    );
    const requests = await fake.requests();
    const bodies = requests.map((q) => q.body);
    assert.equal(r.code, 0, `codex exec failed (${r.code}):\n${r.stderr}\n${r.stdout}`);
    // the upstream's last answer is Codex's last message
    assert.match(r.stdout, /done: .*confab-strict-ok/s, `codex printed:\n${r.stdout}`);
    assert.ok(bodies.length >= 2, `the upstream saw ${bodies.length} calls`);
    for (const body of bodies) {
      const text = JSON.stringify(body);
      assert.ok(!('client_metadata' in body), 'client_metadata went upstream');
      assert.ok(!text.includes('x-codex-installation-id'), 'the installation id leaked');
      assert.ok(!('include' in body), 'include went upstream');
    }
    // the namespace of sub-agent tools, offered as function tools
    const names = bodies[0].tools.map((t) => t.function.name);
    assert.ok(names.includes('exec_command'), names.join(' '));
    assert.ok(
      names.some((n) => n.startsWith('multi_agent_v1__')),
      `no flattened namespace tool in ${names.join(' ')}`,
    );
    // the tool's output went back upstream
    const last = bodies[bodies.length - 1].messages;
    const tool = last.filter((m) => m.role === 'tool');
    assert.ok(tool.length >= 1 && JSON.stringify(tool).includes('confab-strict-ok'));
    console.log(`ok 1 - codex exec through a tool loop on a strict upstream # ${bodies.length} upstream calls`);
    ok = true;
  } catch (e) {
    console.log('not ok 1 - codex exec through a tool loop on a strict upstream');
    console.log(`${e.stack ?? e}`.replace(/^/gm, '  # '));
    console.log(harness.daemonLog.replace(/^/gm, '# '));
  } finally {
    cleanup();
    rmSync(scratch, { recursive: true, force: true });
  }
  process.exit(ok ? 0 : 1);
}

main();
