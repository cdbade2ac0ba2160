// Copyright 2026 The Confab authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// What the client suites share: a private D-Bus session bus, a confabd
// --dev on it (throw-away state directory, ephemeral port), the
// org.confab.Confab1.Admin calls they provision with (gdbus), and
// tests/fake-upstream in a process of its own.
//
// CONFABD is the confabd binary; CONFABD_WRAPPER (from `meson test --setup
// valgrind`) is put in front of it. `harness` holds what the suites read:
// the daemon's log, the state directory, the bus's environment.

import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CONFABD = process.env.CONFABD;
// CONFABD_WRAPPER: e.g. valgrind, from `meson test --setup valgrind`
export const WRAPPER = (process.env.CONFABD_WRAPPER ?? '').split(/\s+/).filter(Boolean);
export const SLOW = WRAPPER.length ? 20 : 1;
export const STARTUP_TIMEOUT_MS = 15000 * SLOW;
export const WATCHDOG_MS = 90000 * SLOW; // meson's own timeout is 300 s; we take ~2 s
export const REQUEST_TIMEOUT_MS = 10000 * SLOW;
export const BUS_NAME = 'org.confab.Confab1';
export const OBJECT_PATH = '/org/confab/Confab1';

if (!CONFABD) {
  console.error('set CONFABD to the confabd binary');
  process.exit(2);
}

/* ------------------------------------------------------------------ */
/* processes                                                            */

const children = [];
export const harness = { daemonLog: '', stateDir: null, busEnv: null, otherDirs: [] };

export function cleanup() {
  for (const child of children.reverse()) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGTERM');
      } catch {
        /* already gone */
      }
    }
  }
  children.length = 0;
  if (harness.stateDir) {
    rmSync(harness.stateDir, { recursive: true, force: true });
    harness.stateDir = null;
  }
  for (const dir of harness.otherDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    cleanup();
    process.exit(1);
  });
}

// Wait until `child`'s stdout has printed a line matching `done` (returns
// the output so far); fails on exit or timeout.
export function waitForOutput(child, what, done, onData) {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      reject(new Error(`${what}: nothing after ${STARTUP_TIMEOUT_MS} ms; output so far:\n${out}`));
    }, STARTUP_TIMEOUT_MS);
    const onExit = (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? signal}) before it was ready; output:\n${out}`));
    };
    child.once('exit', onExit);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (onData) onData(chunk);
      if (done.test(out)) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve(out);
      }
    });
  });
}

export async function startBus() {
  const bus = spawn('dbus-daemon', ['--session', '--print-address=1', '--nofork', '--nopidfile'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(bus);
  // its stderr (e.g. "Failed to set fd limit") goes with the daemon's log
  bus.stderr.setEncoding('utf8');
  bus.stderr.on('data', (chunk) => {
    harness.daemonLog += `dbus-daemon: ${chunk}`;
  });
  bus.on('error', () => {}); // ENOENT is reported by waitForOutput's exit
  const out = await waitForOutput(bus, 'dbus-daemon', /\n/);
  return out.split('\n')[0].trim();
}

// The suite's daemon; `config`, for another one (on a bus of its own): the
// text of its config file.
export async function startDaemon(busAddress, { config = null } = {}) {
  const stateDir = mkdtempSync(join(tmpdir(), 'confab-client-'));
  if (harness.stateDir === null) harness.stateDir = stateDir;
  else harness.otherDirs.push(stateDir);
  const env = { ...process.env };
  // the echo provider, whatever the caller's environment says
  delete env.CONFAB_OPENAI_BASE_URL;
  env.DBUS_SESSION_BUS_ADDRESS = busAddress;
  env.XDG_DATA_HOME = join(stateDir, 'data');
  env.XDG_CONFIG_HOME = join(stateDir, 'config');
  // G_DEBUG=fatal-warnings comes from meson's test environment: keep it,
  // a warning from the daemon is a bug.
  const argv = [
    ...WRAPPER,
    CONFABD,
    '--dev',
    '--listen',
    '127.0.0.1:0',
    '--state-dir',
    join(stateDir, 'state'),
  ];
  if (config !== null) {
    writeFileSync(join(stateDir, 'confab.conf'), config);
    argv.push('--config', join(stateDir, 'confab.conf'));
  }
  const daemon = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(daemon);
  daemon.on('error', (e) => {
    harness.daemonLog += `spawn error: ${e.message}\n`;
  });
  daemon.stderr.setEncoding('utf8');
  daemon.stderr.on('data', (chunk) => {
    harness.daemonLog += chunk;
  });
  daemon.on('exit', (code, signal) => {
    harness.daemonLog += `[confabd exited: ${code ?? signal}]\n`;
  });
  const out = await waitForOutput(
    daemon,
    'confabd',
    /confabd: listening on http:\/\/\S+\n/,
    (chunk) => {
      harness.daemonLog += chunk;
    },
  );
  const url = out.match(/confabd: listening on (http:\/\/\S+)\n/)[1];
  const agent = out.match(/agent: (agt_\w+)/)?.[1];
  const token = out.match(/token: (nca_\w+)/)?.[1];
  assert.ok(agent, `no "agent: agt_…" in the banner:\n${out}`);
  assert.ok(token, `no "token: nca_…" in the banner:\n${out}`);
  return { daemon, url, agent, token };
}

/* ------------------------------------------------------------------ */
/* D-Bus admin through gdbus                                            */


export function gdbus(method, ...args) {
  return new Promise((resolve, reject) => {
    execFile(
      'gdbus',
      [
        'call', '--session', '--dest', BUS_NAME, '--object-path', OBJECT_PATH,
        '--timeout', '10', '--method', method, ...args,
      ],
      { env: harness.busEnv, timeout: 15000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`gdbus ${method} ${args.join(' ')}: ${stderr || err.message}`));
        else resolve(stdout.trim());
      },
    );
  });
}

// A GVariant text literal for a JS string.
export const gstr = (s) => `'${String(s).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export async function waitForBusName() {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      return await gdbus('org.freedesktop.DBus.Properties.Get', `${BUS_NAME}.Admin`, 'Version');
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

export async function createToken({ owner, scopes = ['chat.completions'], agentId = null, name = null }) {
  const props = [`'owner': <${gstr(owner)}>`, `'scopes': <@as [${scopes.map(gstr).join(', ')}]>`];
  if (agentId) props.push(`'agent_id': <${gstr(agentId)}>`);
  if (name) props.push(`'name': <${gstr(name)}>`);
  const out = await gdbus(`${BUS_NAME}.Admin.CreateToken`, `{${props.join(', ')}}`);
  const m = out.match(/\('(tok_\w+)', '(nca_\w+)'\)/);
  assert.ok(m, `CreateToken answered ${out}`);
  return m[2];
}

export async function createAgent(name) {
  const out = await gdbus(
    `${BUS_NAME}.Admin.CreateAgent`,
    `{'name': <${gstr(name)}>, 'provider': <'echo'>}`,
  );
  const m = out.match(/\('(agt_\w+)',\)/);
  assert.ok(m, `CreateAgent answered ${out}`);
  return m[1];
}

export async function setQuota(owner, n) {
  await gdbus(`${BUS_NAME}.Admin.SetQuota`, gstr(owner), `uint64 ${n}`);
}

export async function getUsage(owner) {
  const out = await gdbus(`${BUS_NAME}.Admin.GetUsage`, gstr(owner));
  const m = out.match(/'requests': <(?:uint64 )?(\d+)>/);
  assert.ok(m, `GetUsage answered ${out}`);
  return Number(m[1]);
}

export async function channelSend(agentId, text) {
  const out = await gdbus(`${BUS_NAME}.Chat.Send`, gstr(agentId), "''", gstr(text));
  const m = out.match(/\('(cts_\w+)', /);
  assert.ok(m, `Chat.Send answered ${out}`);
  return m[1];
}


// tests/fake-upstream ($CONFAB_FAKE_UPSTREAM) in a process of its own,
// which exits with us (--stdin-watch). Returns { url, baseUrl, requests() }:
// requests() lists the chat completion requests it was sent.
export async function startFakeUpstream() {
  const path = process.env.CONFAB_FAKE_UPSTREAM;
  assert.ok(path, 'CONFAB_FAKE_UPSTREAM is not set (run through meson test)');
  const fake = spawn(path, ['--stdin-watch'], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(fake);
  const out = await waitForOutput(fake, 'fake-upstream', /listening on http:\/\/\S+\n/);
  const url = out.match(/listening on (http:\/\/\S+)\n/)[1];
  return {
    url,
    baseUrl: `${url}/v1`,
    requests: async () => (await fetch(`${url}/_requests`)).json(),
  };
}

// An agent on an OpenAI-compatible upstream (the fake's script is the
// upstream model); returns its id.
export async function createUpstreamAgent(name, baseUrl, upstreamModel) {
  const out = await gdbus(
    `${BUS_NAME}.Admin.CreateAgent`,
    `{'name': <${gstr(name)}>, 'provider': <'openai'>, 'base_url': <${gstr(baseUrl)}>, ` +
      `'upstream_model': <${gstr(upstreamModel)}>, 'api_key': <'sk-fake-client'>}`,
  );
  const m = out.match(/\('(agt_\w+)',\)/);
  assert.ok(m, `CreateAgent answered ${out}`);
  return m[1];
}
