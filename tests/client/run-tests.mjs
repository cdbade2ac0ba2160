#!/usr/bin/env node
// Copyright 2026 The Confab authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The official `openai` npm SDK (Chat Completions and Responses), the Vercel
// AI SDK and LangChain against a real confabd.
//
// Starts its own private D-Bus session bus (dbus-daemon) and a confabd
// --dev on it, with a throw-away state directory and an ephemeral port;
// provisions the extra agents, tokens and quotas it needs through the
// org.confab.Confab1.Admin interface (gdbus); then drives the three v1
// endpoints through the SDK only, the way a user's program would.
//
//   CONFABD=/path/to/confabd node run-tests.mjs [NAME-SUBSTRING...]
//
// Prints TAP and exits non-zero when a check fails; exits 77 (meson's
// "skipped") when node_modules/openai is missing: run `npm ci` here first.
// Needs dbus-daemon and gdbus. The bus is private on purpose: meson runs
// the other tests in parallel on the one bus of `dbus-run-session`, where
// another confabd may own org.confab.Confab1. CONFABD_WRAPPER (from
// `meson test --setup valgrind`) is put in front of confabd.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';

// 77 is meson's "skipped": without the SDK there is nothing to test
const SKIP = 77;
const nodeMajor = Number(process.versions.node.split('.')[0]);
if (nodeMajor < 18) {
  console.log(`1..0 # SKIP Node.js ${process.versions.node} is too old for the openai SDK (20+)`);
  process.exit(SKIP);
}
let OpenAI, CursorPage;
try {
  ({ default: OpenAI } = await import('openai'));
  ({ CursorPage } = await import('openai/pagination'));
} catch (e) {
  if (e.code !== 'ERR_MODULE_NOT_FOUND') throw e;
  console.log(`1..0 # SKIP the openai package is not installed: run \`npm ci\` in ${import.meta.dirname ?? 'tests/client'}`);
  process.exit(SKIP);
}

import {
  BUS_NAME,
  SLOW,
  WATCHDOG_MS,
  REQUEST_TIMEOUT_MS,
  harness,
  cleanup,
  startBus,
  startDaemon,
  gdbus,
  gstr,
  waitForBusName,
  createToken,
  createAgent,
  setQuota,
  getUsage,
  channelSend,
  startFakeUpstream,
  createUpstreamAgent,
} from './confabd.mjs';

/* ------------------------------------------------------------------ */
/* helpers                                                              */

let ctx = null; // { url, agent, token, ... }

// fetch that counts the HTTP requests the SDK makes (retries included)
function countingFetch() {
  const f = (input, init) => {
    f.calls += 1;
    return fetch(input, init);
  };
  f.calls = 0;
  return f;
}

function client(apiKey, extra = {}) {
  return new OpenAI({
    baseURL: `${ctx.url}/api/v1`,
    apiKey,
    timeout: REQUEST_TIMEOUT_MS,
    maxRetries: 0,
    ...extra,
  });
}

function userMsg(content) {
  return [{ role: 'user', content }];
}

// Runs `fn`, expects it to throw `Class` with `status` and error `code`;
// returns the error.
async function expectApiError(fn, Class, status, code) {
  let err = null;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${Class.name} (${status} ${code}), got success`);
  if (!(err instanceof Class)) {
    throw new assert.AssertionError({
      message: `expected ${Class.name} (${status} ${code}), got ${err.constructor.name}: ${err.message}`,
    });
  }
  assert.equal(err.status, status, `HTTP status (${err.message})`);
  assert.equal(err.code, code, `error.code (${err.message})`);
  assert.equal(typeof err.error?.message, 'string', 'error.message is a string');
  assert.ok(err.error.message.length > 0, 'error.message is not empty');
  assert.ok('type' in err.error, 'error.type is there');
  assert.ok('param' in err.error, 'error.param is there (null or the field)');
  return err;
}

const isUnixSeconds = (t) =>
  Number.isInteger(t) && t > 1_600_000_000 && t < Date.now() / 1000 + 3600;

function checkList(page, what) {
  assert.equal(page.object, 'list', `${what}: object`);
  assert.ok(Array.isArray(page.data), `${what}: data is an array`);
  assert.equal(typeof page.has_more, 'boolean', `${what}: has_more is a boolean`);
  if (page.data.length === 0) {
    assert.equal(page.first_id, null, `${what}: first_id null on an empty page`);
    assert.equal(page.last_id, null, `${what}: last_id null on an empty page`);
  } else {
    assert.equal(page.first_id, page.data[0].id, `${what}: first_id`);
    assert.equal(page.last_id, page.data[page.data.length - 1].id, `${what}: last_id`);
  }
}

const listConversations = (c, query = {}) => c.get('/conversations', { query });
const listMessages = (c, id, query = {}) =>
  c.get(`/conversations/${encodeURIComponent(id)}/messages`, { query });

// ids sort by creation time
function assertSorted(ids, order, what) {
  for (let i = 1; i < ids.length; i++) {
    if (order === 'asc') assert.ok(ids[i - 1] < ids[i], `${what}: ${ids[i - 1]} < ${ids[i]}`);
    else assert.ok(ids[i - 1] > ids[i], `${what}: ${ids[i - 1]} > ${ids[i]}`);
  }
}

function textOf(message) {
  assert.ok(Array.isArray(message.content), `message ${message.id}: content is an array`);
  return message.content
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('');
}

/* ------------------------------------------------------------------ */
/* the checks                                                           */

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

const TEXT = 'Hello,  Confab!\tünïcödé — 漢字 🚀 end ';

test('chat.completions.create: a non-streaming turn', async () => {
  const c = client(ctx.token);
  const r = await c.chat.completions.create({ model: ctx.agent, messages: userMsg(TEXT) });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.ok(isUnixSeconds(r.created), `created is Unix seconds: ${r.created}`);
  assert.equal(r.model, ctx.agent);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, TEXT, 'the echo agent replies with the exact text');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.match(r.metadata?.session_id ?? '', /^cts_/);
  assert.match(r.metadata?.assistant_message_id ?? '', /^msg_/);
  const u = r.usage;
  assert.ok(u, 'usage');
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens'])
    assert.ok(Number.isInteger(u[k]) && u[k] >= 0, `usage.${k}: ${u[k]}`);
  assert.ok(u.completion_tokens > 0, 'completion_tokens > 0');
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
});

test('withResponse(): x-session-id header; no rate-limit headers for an unlimited owner', async () => {
  const c = client(ctx.token);
  const { data, response } = await c.chat.completions
    .create({ model: ctx.agent, messages: userMsg('headers please') })
    .withResponse();
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^application\/json/);
  assert.equal(response.headers.get('x-session-id'), data.metadata.session_id);
  assert.equal(response.headers.get('x-ratelimit-limit-requests'), null);
  assert.equal(response.headers.get('x-ratelimit-remaining-requests'), null);
});

test('asResponse(): the raw body is the same completion', async () => {
  const c = client(ctx.token);
  const response = await c.chat.completions
    .create({ model: ctx.agent, messages: userMsg('raw body') })
    .asResponse();
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.choices[0].message.content, 'raw body');
  assert.equal(response.headers.get('x-session-id'), body.metadata.session_id);
});

test('streaming with stream_options.include_usage', async () => {
  const c = client(ctx.token);
  const { data: stream, response } = await c.chat.completions
    .create({
      model: ctx.agent,
      messages: userMsg(TEXT),
      stream: true,
      stream_options: { include_usage: true },
    })
    .withResponse();
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^text\/event-stream/);
  assert.equal(response.headers.get('x-accel-buffering'), 'no');
  const sessionId = response.headers.get('x-session-id');
  assert.match(sessionId ?? '', /^cts_/);

  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length >= 3, `at least role, text, usage chunks; got ${chunks.length}`);
  for (const ch of chunks) {
    assert.equal(ch.object, 'chat.completion.chunk');
    assert.match(ch.id, /^chatcmpl-/);
    assert.equal(ch.id, chunks[0].id, 'one completion id for the whole stream');
    assert.equal(ch.model, ctx.agent);
    assert.ok(isUnixSeconds(ch.created), `created: ${ch.created}`);
    assert.equal(ch.metadata?.session_id, sessionId, 'chunk metadata.session_id == x-session-id');
  }
  const last = chunks[chunks.length - 1];
  const choiceChunks = chunks.slice(0, -1);
  assert.deepEqual(last.choices, [], 'the usage chunk has choices: []');
  assert.ok(last.usage, 'the last chunk carries usage');
  assert.ok(last.usage.completion_tokens > 0);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  for (const ch of choiceChunks) {
    assert.equal(ch.choices.length, 1);
    assert.equal(ch.choices[0].index, 0);
    assert.ok(ch.usage == null, 'usage only on the last chunk');
  }
  assert.equal(choiceChunks[0].choices[0].delta.role, 'assistant', 'first delta has the role');
  const text = choiceChunks.map((ch) => ch.choices[0].delta.content ?? '').join('');
  assert.equal(text, TEXT, 'the deltas join back to the exact text');
  const finishes = choiceChunks.map((ch) => ch.choices[0].finish_reason ?? null);
  assert.equal(finishes[finishes.length - 1], 'stop', 'the last choice chunk says stop');
  assert.ok(finishes.slice(0, -1).every((f) => f === null), 'finish_reason only once, at the end');

  // the stream's session holds the turn
  const msgs = await listMessages(c, sessionId, { order: 'asc' });
  assert.deepEqual(msgs.data.map((m) => m.role), ['user', 'assistant']);
  assert.equal(textOf(msgs.data[1]), TEXT);
  assert.equal(msgs.data[1].id, last.metadata.assistant_message_id);
  assert.equal(msgs.data[1].status, 'completed');
});

test('streaming without include_usage: no usage chunk', async () => {
  const c = client(ctx.token);
  const stream = await c.chat.completions.create({
    model: ctx.agent,
    messages: userMsg('one two three'),
    stream: true,
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.every((ch) => ch.usage == null), 'no chunk has usage');
  assert.ok(chunks.every((ch) => ch.choices.length === 1), 'no choices: [] chunk');
  assert.equal(chunks.map((ch) => ch.choices[0].delta.content ?? '').join(''), 'one two three');
  assert.equal(chunks[chunks.length - 1].choices[0].finish_reason, 'stop');
});

test('chat.completions.stream() helper: content events and finalChatCompletion()', async () => {
  const c = client(ctx.token);
  const runner = c.chat.completions.stream({
    model: ctx.agent,
    messages: userMsg('helper stream'),
    stream_options: { include_usage: true },
  });
  let deltas = '';
  runner.on('content', (d) => {
    deltas += d;
  });
  const final = await runner.finalChatCompletion();
  assert.equal(deltas, 'helper stream');
  assert.equal(final.choices[0].message.content, 'helper stream');
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.model, ctx.agent);
});

test('a slow consumer of a long stream gets all of it (flow control)', async () => {
  // some 40,000 words: each its own delta, about 11 MB of events, far
  // more than max_stream_buffer (1 MiB) and the sockets hold
  const words = [];
  for (let i = 0; i < 40000; i++) words.push(`w${i}`);
  const text = words.join(' ');
  const c = client(ctx.token);
  const stream = await c.chat.completions.create({
    model: ctx.agent,
    messages: userMsg(text),
    stream: true,
  });
  let got = '';
  let n = 0;
  let sessionId = null;
  for await (const chunk of stream) {
    sessionId ??= chunk.metadata?.session_id;
    got += chunk.choices[0]?.delta?.content ?? '';
    // a consumer slower than the daemon: 20 ms every 2,000 chunks
    if (++n % 2000 === 0) await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(got.length, text.length, 'every byte of the answer arrived');
  assert.equal(got, text);
  const page = await listMessages(c, sessionId, { order: 'asc' });
  assert.equal(page.data[1].status, 'completed', 'stored as completed');
  assert.equal(textOf(page.data[1]), text);
});

test('continuation through metadata.session_id (full history and new message only)', async () => {
  const c = client(ctx.token);
  const first = await c.chat.completions.create({
    model: ctx.agent,
    messages: userMsg('turn one'),
  });
  const sid = first.metadata.session_id;

  // a client that resends the whole history
  const { data: second, response } = await c.chat.completions
    .create({
      model: ctx.agent,
      messages: [
        { role: 'user', content: 'turn one' },
        { role: 'assistant', content: 'turn one' },
        { role: 'user', content: 'turn two' },
      ],
      metadata: { session_id: sid },
    })
    .withResponse();
  assert.equal(second.metadata.session_id, sid);
  assert.equal(response.headers.get('x-session-id'), sid);
  assert.equal(second.choices[0].message.content, 'turn two');

  // a client that sends only the new message, streaming
  const stream = await c.chat.completions.create({
    model: ctx.agent,
    messages: userMsg('turn three'),
    metadata: { session_id: sid },
    stream: true,
  });
  let text = '';
  for await (const ch of stream) {
    assert.equal(ch.metadata.session_id, sid);
    text += ch.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, 'turn three');

  const msgs = await listMessages(c, sid, { order: 'asc' });
  checkList(msgs, 'messages');
  assert.deepEqual(
    msgs.data.map((m) => [m.role, textOf(m)]),
    [
      ['user', 'turn one'],
      ['assistant', 'turn one'],
      ['user', 'turn two'],
      ['assistant', 'turn two'],
      ['user', 'turn three'],
      ['assistant', 'turn three'],
    ],
    'each message stored once, in order',
  );
  assert.equal(msgs.has_more, false);
  assert.equal(msgs.data[1].id, first.metadata.assistant_message_id);
  assert.equal(msgs.data[3].id, second.metadata.assistant_message_id);

  // the conversation is listed once, titled by its first user text
  const convs = await listConversations(c, { limit: 100 });
  const mine = convs.data.filter((x) => x.id === sid);
  assert.equal(mine.length, 1);
  assert.equal(mine[0].title, 'turn one');
  assert.ok(mine[0].updated_at >= mine[0].created_at);
});

test('user content parts: text, image_url and file are stored and replayed', async () => {
  const c = client(ctx.token);
  // a 1x1 PNG
  const png =
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const r = await c.chat.completions.create({
    model: ctx.agent,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look at ' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
          { type: 'text', text: 'this' },
          {
            type: 'file',
            file: {
              filename: 'notes.txt',
              file_data: `data:text/plain;base64,${Buffer.from('some notes').toString('base64')}`,
            },
          },
        ],
      },
    ],
  });
  assert.equal(r.choices[0].finish_reason, 'stop');
  const msgs = await listMessages(c, r.metadata.session_id, { order: 'asc' });
  const user = msgs.data[0];
  assert.equal(user.role, 'user');
  const types = user.content.map((p) => p.type);
  assert.ok(types.includes('image_url'), `an image_url part is replayed: ${types}`);
  assert.ok(types.includes('file'), `a file part is replayed: ${types}`);
  const img = user.content.find((p) => p.type === 'image_url');
  assert.equal(typeof img.image_url?.url, 'string', 'image_url.url');
  assert.equal(img.image_url.url, `data:image/png;base64,${png}`, 'the image comes back unchanged');
  assert.equal(
    user.content.filter((p) => p.type === 'text').map((p) => p.text).join(''),
    'look at this',
  );
  const blockTypes = user.content_blocks.map((b) => b.type);
  assert.ok(blockTypes.includes('image_url') && blockTypes.includes('file'), `blocks: ${blockTypes}`);
});

test('continuing an unknown session is 404 conversation_not_found', async () => {
  const c = client(ctx.token);
  await expectApiError(
    () =>
      c.chat.completions.create({
        model: ctx.agent,
        messages: userMsg('x'),
        metadata: { session_id: 'cts_00000000000000000000000000' },
      }),
    OpenAI.NotFoundError,
    404,
    'conversation_not_found',
  );
});

test('GET /conversations and /messages through client.get()', async () => {
  const c = client(ctx.token);
  const r = await c.chat.completions.create({ model: ctx.agent, messages: userMsg('list me') });
  const sid = r.metadata.session_id;
  const convs = await listConversations(c);
  checkList(convs, 'conversations');
  assert.ok(convs.data.length <= 20, 'default limit 20');
  assert.equal(convs.data[0].id, sid, 'desc by default: the newest first');
  const item = convs.data[0];
  assert.equal(item.object, 'conversation');
  assert.equal(item.model, ctx.agent);
  assert.equal(item.title, 'list me');
  assert.ok(isUnixSeconds(item.created_at), `created_at ${item.created_at}`);
  assert.ok(isUnixSeconds(item.updated_at), `updated_at ${item.updated_at}`);
  assertSorted(convs.data.map((x) => x.id), 'desc', 'conversations desc');

  const filtered = await listConversations(c, { model: ctx.agent, limit: 100 });
  assert.ok(filtered.data.every((x) => x.model === ctx.agent));
  const none = await listConversations(c, { model: ctx.otherAgent });
  checkList(none, 'conversations of an agent with none');
  assert.deepEqual(none.data, []);
  assert.equal(none.has_more, false);

  const msgs = await listMessages(c, sid);
  checkList(msgs, 'messages');
  assert.deepEqual(msgs.data.map((m) => m.role), ['assistant', 'user'], 'desc by default');
  for (const m of msgs.data) {
    assert.equal(m.object, 'message');
    assert.match(m.id, /^msg_/);
    assert.ok(isUnixSeconds(m.created_at));
    assert.equal(textOf(m), 'list me');
    assert.deepEqual(m.content, [{ type: 'text', text: 'list me' }]);
    assert.ok(Array.isArray(m.content_blocks), 'content_blocks is an array');
    assert.ok(
      m.content_blocks.some((b) => b.type === 'text' && b.text === 'list me'),
      `content_blocks has the text: ${JSON.stringify(m.content_blocks)}`,
    );
    assert.equal(m.status, 'completed');
  }
  assert.equal(msgs.data[0].id, r.metadata.assistant_message_id);
  assert.equal(msgs.data[0].model, ctx.agent);
});

test('pagination: limit / after / has_more, both orders, and the SDK CursorPage', async () => {
  const c = client(ctx.pagerToken);
  const created = [];
  for (let i = 0; i < 5; i++) {
    const r = await c.chat.completions.create({ model: ctx.agent, messages: userMsg(`page ${i}`) });
    created.push(r.metadata.session_id);
  }
  assertSorted(created, 'asc', 'session ids grow');

  for (const order of ['desc', 'asc']) {
    const expected = order === 'asc' ? created : [...created].reverse();
    const seen = [];
    const hasMore = [];
    let after;
    for (let guard = 0; guard < 10; guard++) {
      const page = await listConversations(c, { limit: 2, order, ...(after ? { after } : {}) });
      checkList(page, `conversations ${order} page ${guard}`);
      seen.push(...page.data.map((x) => x.id));
      hasMore.push(page.has_more);
      if (!page.has_more) break;
      after = page.last_id;
    }
    assert.deepEqual(seen, expected, `every conversation once, ${order}`);
    assert.deepEqual(hasMore, [true, true, false], `has_more ${order}`);
  }

  // a page that ends exactly at the last item says has_more: false
  const exact = await listConversations(c, { limit: 5 });
  assert.equal(exact.data.length, 5);
  assert.equal(exact.has_more, false);
  // after the last item: an empty page
  const empty = await listConversations(c, { after: exact.last_id });
  checkList(empty, 'conversations after the last');
  assert.deepEqual(empty.data, []);
  assert.equal(empty.has_more, false);
  // first_id of a later page works as a cursor too
  const p2 = await listConversations(c, { limit: 2, after: created[4] });
  assert.deepEqual(p2.data.map((x) => x.id), [created[3], created[2]]);
  const back = await listConversations(c, { order: 'asc', after: p2.first_id });
  assert.deepEqual(back.data.map((x) => x.id), [created[4]]);

  // the SDK's own cursor pagination follows has_more and last id
  const viaSdk = [];
  for await (const conv of c.getAPIList('/conversations', CursorPage, { query: { limit: 2 } }))
    viaSdk.push(conv.id);
  assert.deepEqual(viaSdk, [...created].reverse(), 'CursorPage auto-pagination');

  // messages: a 3-turn session has 6 messages
  const sid = created[0];
  for (const t of ['page 0 b', 'page 0 c'])
    await c.chat.completions.create({
      model: ctx.agent,
      messages: userMsg(t),
      metadata: { session_id: sid },
    });
  const m1 = await listMessages(c, sid, { order: 'asc', limit: 4 });
  checkList(m1, 'messages page 1');
  assert.equal(m1.data.length, 4);
  assert.equal(m1.has_more, true);
  const m2 = await listMessages(c, sid, { order: 'asc', limit: 4, after: m1.last_id });
  checkList(m2, 'messages page 2');
  assert.equal(m2.data.length, 2);
  assert.equal(m2.has_more, false);
  const ids = [...m1.data, ...m2.data].map((m) => m.id);
  assertSorted(ids, 'asc', 'messages asc');
  assert.deepEqual(
    [...m1.data, ...m2.data].map(textOf),
    ['page 0', 'page 0', 'page 0 b', 'page 0 b', 'page 0 c', 'page 0 c'],
  );
  const desc = await listMessages(c, sid, { limit: 100 });
  assert.deepEqual(desc.data.map((m) => m.id), [...ids].reverse(), 'messages desc');
  const viaSdkMsgs = [];
  for await (const m of c.getAPIList(`/conversations/${sid}/messages`, CursorPage, {
    query: { limit: 4, order: 'asc' },
  }))
    viaSdkMsgs.push(m.id);
  assert.deepEqual(viaSdkMsgs, ids);
});

test('bad list parameters are 400 BadRequestError', async () => {
  const c = client(ctx.token);
  for (const limit of [0, 101, 'abc'])
    await expectApiError(
      () => listConversations(c, { limit }),
      OpenAI.BadRequestError,
      400,
      'invalid_limit',
    );
  await expectApiError(
    () => listConversations(c, { order: 'sideways' }),
    OpenAI.BadRequestError,
    400,
    'invalid_order',
  );
  await expectApiError(
    () => listConversations(c, { after: 'not-an-id' }),
    OpenAI.BadRequestError,
    400,
    'invalid_after',
  );
  const ok = await listConversations(c, { limit: 100 });
  checkList(ok, 'limit 100');
});

test('bad token: AuthenticationError 401 invalid_api_key on every endpoint', async () => {
  const c = client('nca_thisIsNotAValidTokenAtAllxxxxxxxxxxxxxxx');
  const e = await expectApiError(
    () => c.chat.completions.create({ model: ctx.agent, messages: userMsg('x') }),
    OpenAI.AuthenticationError,
    401,
    'invalid_api_key',
  );
  assert.equal(e.type, 'authentication_error');
  await expectApiError(() => listConversations(c), OpenAI.AuthenticationError, 401, 'invalid_api_key');
  await expectApiError(
    () => listMessages(c, 'cts_00000000000000000000000000'),
    OpenAI.AuthenticationError,
    401,
    'invalid_api_key',
  );
  await expectApiError(
    () =>
      c.chat.completions.create({ model: ctx.agent, messages: userMsg('x'), stream: true }),
    OpenAI.AuthenticationError,
    401,
    'invalid_api_key',
  );
});

test('a token without a v1 scope: PermissionDeniedError 403 insufficient_scope', async () => {
  const c = client(ctx.noScopeToken);
  await expectApiError(
    () => c.chat.completions.create({ model: ctx.agent, messages: userMsg('x') }),
    OpenAI.PermissionDeniedError,
    403,
    'insufficient_scope',
  );
  await expectApiError(() => listConversations(c), OpenAI.PermissionDeniedError, 403, 'insufficient_scope');
});

test('unknown model: NotFoundError 404 agent_not_found', async () => {
  const c = client(ctx.token);
  const e = await expectApiError(
    () =>
      c.chat.completions.create({
        model: 'agt_00000000000000000000000000',
        messages: userMsg('x'),
      }),
    OpenAI.NotFoundError,
    404,
    'agent_not_found',
  );
  assert.equal(e.type, 'not_found_error');
  await expectApiError(
    () =>
      c.chat.completions.create({
        model: 'agt_00000000000000000000000000',
        messages: userMsg('x'),
        stream: true,
      }),
    OpenAI.NotFoundError,
    404,
    'agent_not_found',
  );
});

test('invalid request: BadRequestError 400 with param', async () => {
  const c = client(ctx.token);
  const e = await expectApiError(
    () => c.chat.completions.create({ model: ctx.agent, messages: [] }),
    OpenAI.BadRequestError,
    400,
    'invalid_messages',
  );
  assert.equal(e.param, 'messages');
  assert.equal(e.type, 'invalid_request_error');
});

test("another owner's conversation is 404 (messages, continuation, listing)", async () => {
  const mine = client(ctx.token);
  const bob = client(ctx.bobToken);
  const r = await mine.chat.completions.create({ model: ctx.agent, messages: userMsg('secret') });
  const sid = r.metadata.session_id;
  await expectApiError(() => listMessages(bob, sid), OpenAI.NotFoundError, 404, 'conversation_not_found');
  await expectApiError(
    () =>
      bob.chat.completions.create({
        model: ctx.agent,
        messages: userMsg('hijack'),
        metadata: { session_id: sid },
      }),
    OpenAI.NotFoundError,
    404,
    'conversation_not_found',
  );
  const bobs = await listConversations(bob, { limit: 100 });
  assert.ok(!bobs.data.some((x) => x.id === sid), "bob does not see the dev owner's conversation");
  // and the session is untouched
  const msgs = await listMessages(mine, sid);
  assert.equal(msgs.data.length, 2);
  // an unknown id looks the same
  await expectApiError(
    () => listMessages(bob, 'cts_00000000000000000000000000'),
    OpenAI.NotFoundError,
    404,
    'conversation_not_found',
  );
});

test('a bound token: 403 permission_denied on another agent; lists limited to its agent', async () => {
  const bound = client(ctx.boundToken);
  const e = await expectApiError(
    () => bound.chat.completions.create({ model: ctx.otherAgent, messages: userMsg('x') }),
    OpenAI.PermissionDeniedError,
    403,
    'permission_denied',
  );
  assert.equal(e.type, 'permission_error');
  const ok = await bound.chat.completions.create({ model: ctx.agent, messages: userMsg('bound ok') });
  assert.equal(ok.choices[0].message.content, 'bound ok');

  // the same owner (erin) with an unbound token talks to the other agent
  const erin = client(ctx.erinToken);
  const other = await erin.chat.completions.create({
    model: ctx.otherAgent,
    messages: userMsg('other agent'),
  });
  assert.equal(other.model, ctx.otherAgent);

  const all = await listConversations(erin, { limit: 100 });
  assert.deepEqual(
    all.data.map((x) => x.id).sort(),
    [ok.metadata.session_id, other.metadata.session_id].sort(),
  );
  const limited = await listConversations(bound, { limit: 100 });
  assert.deepEqual(limited.data.map((x) => x.id), [ok.metadata.session_id]);
  const filtered = await listConversations(bound, { model: ctx.otherAgent });
  assert.deepEqual(filtered.data, [], "a model filter naming another agent yields an empty page");
  await expectApiError(
    () => listMessages(bound, other.metadata.session_id),
    OpenAI.NotFoundError,
    404,
    'conversation_not_found',
  );
  // continuing a session with a different model than its agent
  await expectApiError(
    () =>
      erin.chat.completions.create({
        model: ctx.agent,
        messages: userMsg('wrong agent'),
        metadata: { session_id: other.metadata.session_id },
      }),
    OpenAI.NotFoundError,
    404,
    'conversation_not_found',
  );
});

test('models.list() and models.retrieve(): the agents a token may use', async () => {
  const c = client(ctx.token);
  const ids = [];
  for await (const m of c.models.list()) {
    assert.equal(m.object, 'model');
    assert.equal(m.owned_by, 'confab');
    assert.ok(isUnixSeconds(m.created), `created is Unix seconds: ${m.created}`);
    assert.equal(typeof m.name, 'string');
    ids.push(m.id);
  }
  assert.ok(ids.includes(ctx.agent) && ids.includes(ctx.otherAgent), `both agents listed: ${ids}`);
  assert.deepEqual(ids, [...ids].sort(), 'by id');
  const one = await c.models.retrieve(ctx.otherAgent);
  assert.equal(one.id, ctx.otherAgent);
  // a bound token sees its agent only; the other does not exist for it
  const bound = client(ctx.boundToken);
  const page = await bound.models.list();
  assert.deepEqual(page.data.map((m) => m.id), [ctx.agent]);
  await expectApiError(
    () => bound.models.retrieve(ctx.otherAgent),
    OpenAI.NotFoundError,
    404,
    'agent_not_found',
  );
});

test('a failing upstream: 502 with x-should-retry false, and the SDK does not retry it', async () => {
  // an openai agent whose upstream refuses connections (a port nobody listens on)
  const net = await import('node:net');
  const port = await new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  const out = await gdbus(
    `${BUS_NAME}.Admin.CreateAgent`,
    `{'name': <'down'>, 'provider': <'openai'>, 'base_url': <'http://127.0.0.1:${port}/v1'>, ` +
      `'upstream_model': <'m'>}`,
  );
  const agent = out.match(/\('(agt_\w+)',\)/)[1];
  const counter = countingFetch();
  // the SDK's default retries are on: Confab's header must stop them
  const c = new OpenAI({ baseURL: `${ctx.url}/api/v1`, apiKey: ctx.token, fetch: counter,
                         timeout: REQUEST_TIMEOUT_MS });
  const e = await expectApiError(
    () => c.chat.completions.create({ model: agent, messages: userMsg('anyone there?') }),
    OpenAI.InternalServerError,
    502,
    'upstream_error',
  );
  assert.equal(e.headers.get('x-should-retry'), 'false');
  assert.equal(counter.calls, 1, 'one request reached Confab');
});

test('a stream through a failover: the first target refuses, the second answers (routing)', async (skip) => {
  const fakePath = process.env.CONFAB_FAKE_UPSTREAM;
  if (!fakePath) return skip('CONFAB_FAKE_UPSTREAM is not set');
  const net = await import('node:net');
  const port = await new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  // the scripted fake upstream: its first line names its address
  const fake = spawn(fakePath, ['--stdin-watch'], { stdio: ['pipe', 'pipe', 'ignore'] });
  try {
    const fakeUrl = await new Promise((resolve, reject) => {
      let buf = '';
      fake.stdout.on('data', (d) => {
        buf += d;
        const m = buf.match(/listening on (\S+)/);
        if (m) resolve(m[1]);
      });
      fake.on('exit', () => reject(new Error('the fake upstream exited')));
    });
    const upstreams = JSON.stringify([
      { label: 'down', base_url: `http://127.0.0.1:${port}/v1`, upstream_model: 'plain' },
      { label: 'fake', base_url: `${fakeUrl}/v1`, upstream_model: 'plain' },
    ]);
    const out = await gdbus(
      `${BUS_NAME}.Admin.CreateAgent`,
      `{'name': <'routed'>, 'provider': <'openai'>, 'upstreams': <'${upstreams}'>}`,
    );
    const agent = out.match(/\('(agt_\w+)',\)/)[1];
    const stream = await client(ctx.token).chat.completions.create({
      model: agent,
      messages: userMsg('through a failover'),
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    // one answer, from the second target only
    assert.equal(text, 'Hello, world! héllo 🌍');
    const { data, response } = await client(ctx.token)
      .chat.completions.create({ model: agent, messages: userMsg('again') })
      .withResponse();
    assert.equal(data.choices[0].message.content, 'Hello, world! héllo 🌍');
    assert.equal(response.headers.get('x-confab-upstream'), 'fake');
    assert.equal(response.headers.get('x-confab-attempts'), '2');
  } finally {
    fake.kill();
  }
});

test("a stream's head waits for the upstream: a 400 throws BadRequestError, a 429 is retried", async () => {
  // the scripted fake upstream: status:400 refuses every request;
  // 429:3 refuses the first three (Confab's own three tries), then answers
  const fake = await startFakeUpstream();
  const refusing = await createUpstreamAgent('head-400', fake.baseUrl, 'status:400');
  const limited = await createUpstreamAgent('head-429', fake.baseUrl, '429:3');
  const counter = countingFetch();
  const c = client(ctx.token, { maxRetries: 2, fetch: counter });

  // the refusal is the HTTP answer, not an event inside a 200: the SDK
  // throws when it creates the stream, and does not retry a 400
  const e = await expectApiError(
    async () => {
      const stream = await c.chat.completions.create({
        model: refusing,
        messages: userMsg('refused'),
        stream: true,
      });
      for await (const _ of stream) assert.fail('a refused stream yields no chunk');
    },
    OpenAI.BadRequestError,
    400,
    'fake_refusal',
  );
  assert.equal(e.error.type, 'fake_error');
  assert.equal(e.error.param, 'messages');
  assert.match(e.error.message, /The fake upstream was told to fail/);
  assert.equal(counter.calls, 1, 'a 400 is not retried');
  // the Responses door alike
  await expectApiError(
    async () => {
      const stream = await c.responses.create({ model: refusing, input: 'refused', stream: true });
      for await (const _ of stream) assert.fail('a refused stream yields no event');
    },
    OpenAI.BadRequestError,
    400,
    'fake_refusal',
  );

  // a 429 that outlasted Confab's own retries reaches the SDK with
  // Retry-After, and the SDK's retry gets the answer
  counter.calls = 0;
  const stream = await c.chat.completions.create({
    model: limited,
    messages: userMsg('busy?'),
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'Hello, world! héllo 🌍');
  assert.equal(counter.calls, 2, 'one 429, retried once by the SDK');
  assert.equal((await fake.requests()).filter((r) => r.body.model === '429:3').length, 4);
});

/* ---- an agent with tools of its own: tool_event chunks break no client ---- */

async function toolAgent(skip) {
  const fake = process.env.CONFAB_FAKE_MCP;
  if (!fake) skip('CONFAB_FAKE_MCP is not set (run through meson test)');
  if (!ctx.toolAgent) {
    const servers = JSON.stringify({ mcpServers: { fake: { command: fake } } });
    const out = await gdbus(
      `${BUS_NAME}.Admin.CreateAgent`,
      `{'name': <'hands'>, 'provider': <'echo'>, 'mcp_servers': <${gstr(servers)}>}`,
    );
    ctx.toolAgent = out.match(/\('(agt_\w+)',\)/)[1];
  }
  return ctx.toolAgent;
}

const TOOL_PROMPT = '/tool fake__echo {"text":"from the tool"}';

test('openai SDK: a stream with tool_event chunks, raw and through the stream() helper', async (skip) => {
  const agent = await toolAgent(skip);
  const c = client(ctx.token);
  const stream = await c.chat.completions.create({
    model: agent, messages: userMsg(TOOL_PROMPT), stream: true,
  });
  const events = [];
  let text = '';
  for await (const chunk of stream) {
    if (chunk.tool_event) {
      assert.deepEqual(chunk.choices, []);
      events.push(chunk.tool_event.type);
    }
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.deepEqual(events, ['call', 'result']);
  assert.equal(text, 'from the tool');
  // the helper assembles the answer and is not confused by choice-less chunks
  const runner = c.chat.completions.stream({ model: agent, messages: userMsg(TOOL_PROMPT) });
  let deltas = '';
  runner.on('content', (d) => { deltas += d; });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, 'from the tool');
  assert.equal(deltas, 'from the tool');
});

test('Vercel AI SDK (openai-compatible and openai.chat()): text and streams with tool_event chunks', async (skip) => {
  const agent = await toolAgent(skip);
  let ai, compat, openaiProvider;
  try {
    ai = await import('ai');
    ({ createOpenAICompatible: compat } = await import('@ai-sdk/openai-compatible'));
    ({ createOpenAI: openaiProvider } = await import('@ai-sdk/openai'));
  } catch (e) {
    if (e.code === 'ERR_MODULE_NOT_FOUND') skip('the AI SDK is not installed (npm ci)');
    throw e;
  }
  const models = [
    compat({ name: 'confab', baseURL: `${ctx.url}/api/v1`, apiKey: ctx.token })(agent),
    openaiProvider({ baseURL: `${ctx.url}/api/v1`, apiKey: ctx.token }).chat(agent),
  ];
  for (const model of models) {
    const g = await ai.generateText({ model, prompt: TOOL_PROMPT, maxRetries: 0 });
    assert.equal(g.text, 'from the tool');
    const s = ai.streamText({ model, prompt: TOOL_PROMPT, maxRetries: 0,
                              onError: ({ error }) => { throw error; } });
    let text = '';
    for await (const piece of s.textStream) text += piece;
    assert.equal(text, 'from the tool');
    assert.equal(await s.finishReason, 'stop');
  }
});

test("LangChain's ChatOpenAI: invoke and stream with tool_event chunks", async (skip) => {
  const agent = await toolAgent(skip);
  let ChatOpenAI;
  try {
    ({ ChatOpenAI } = await import('@langchain/openai'));
  } catch (e) {
    if (e.code === 'ERR_MODULE_NOT_FOUND') skip('@langchain/openai is not installed (npm ci)');
    throw e;
  }
  const llm = new ChatOpenAI({
    model: agent, apiKey: ctx.token, maxRetries: 0,
    configuration: { baseURL: `${ctx.url}/api/v1` },
  });
  const answer = await llm.invoke(TOOL_PROMPT);
  assert.equal(answer.content, 'from the tool');
  let text = '';
  for await (const chunk of await llm.stream(TOOL_PROMPT)) text += chunk.content;
  assert.equal(text, 'from the tool');
});

/* ---- the Responses API ---- */

const isResponseId = (id) => /^resp_[0-9a-z]{26}$/.test(id);

test('responses.create: string input, then previous_response_id', async () => {
  const c = client(ctx.token);
  const first = await c.responses.create({ model: ctx.agent, input: TEXT });
  assert.ok(isResponseId(first.id), `id ${first.id}`);
  assert.equal(first.object, 'response');
  assert.equal(first.status, 'completed');
  assert.equal(first.model, ctx.agent);
  assert.equal(first.output_text, TEXT);
  assert.ok(isUnixSeconds(first.created_at));
  assert.equal(first.output[0].type, 'message');
  assert.equal(first.output[0].content[0].type, 'output_text');
  assert.ok(first.usage.output_tokens > 0);
  assert.equal(first.usage.total_tokens, first.usage.input_tokens + first.usage.output_tokens);
  assert.ok(first.metadata.session_id.startsWith('cts_'));
  assert.equal(first.conversation.id, first.metadata.session_id);

  const { data: second, response } = await c.responses
    .create({ model: ctx.agent, input: 'and a second turn', previous_response_id: first.id,
              instructions: 'Be brief.' })
    .withResponse();
  assert.equal(second.output_text, 'and a second turn');
  assert.equal(second.previous_response_id, first.id);
  assert.equal(second.conversation.id, first.conversation.id);
  assert.equal(response.headers.get('x-session-id'), first.conversation.id);
  // the conversation holds both responses
  const messages = await listMessages(c, first.conversation.id, { order: 'asc' });
  assert.deepEqual(messages.data.map((m) => m.response_id),
                   [first.id, first.id, second.id, second.id]);
});

test('responses.stream: events, finalResponse() and output_text', async () => {
  const c = client(ctx.token);
  const stream = c.responses.stream({ model: ctx.agent, input: 'one two three' });
  let deltas = '';
  const types = [];
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  for await (const event of stream) types.push(event.type);
  const final = await stream.finalResponse();
  assert.equal(final.status, 'completed');
  assert.equal(final.output_text, 'one two three');
  assert.equal(deltas, 'one two three');
  assert.equal(types[0], 'response.created');
  assert.equal(types[types.length - 1], 'response.completed');
  // create({stream: true}): the raw events, numbered
  const raw = await c.responses.create({ model: ctx.agent, input: 'raw events', stream: true });
  let seq = 0;
  let text = '';
  for await (const event of raw) {
    assert.equal(event.sequence_number, seq++);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  assert.equal(text, 'raw events');
});

test('responses.retrieve, inputItems.list and delete', async () => {
  const c = client(ctx.token);
  const created = await c.responses.create({
    model: ctx.agent,
    input: [
      { role: 'developer', content: 'Answer in one word.' },
      { role: 'user', content: [{ type: 'input_text', text: 'what now?' }] },
    ],
  });
  const got = await c.responses.retrieve(created.id);
  assert.equal(got.id, created.id);
  assert.equal(got.output_text, 'what now?');
  assert.deepEqual(got.output.map((i) => i.id), created.output.map((i) => i.id));

  const items = [];
  for await (const item of c.responses.inputItems.list(created.id, { order: 'asc', limit: 1 })) {
    items.push(item);
  }
  assert.deepEqual(items.map((i) => i.role), ['developer', 'user']);
  assert.equal(items[1].content[0].type, 'input_text');
  assert.equal(items[1].content[0].text, 'what now?');

  const deleted = await c.responses.delete(created.id);
  assert.deepEqual(deleted, { id: created.id, object: 'response', deleted: true });
  await expectApiError(() => c.responses.retrieve(created.id), OpenAI.NotFoundError, 404,
                       'response_not_found');
  // another owner's response does not exist for bob
  const kept = await c.responses.create({ model: ctx.agent, input: 'mine' });
  await expectApiError(() => client(ctx.bobToken).responses.retrieve(kept.id),
                       OpenAI.NotFoundError, 404, 'response_not_found');
});

test('responses: a function tool call, answered with function_call_output', async () => {
  const c = client(ctx.token);
  const tools = [{ type: 'function', name: 'get_weather', description: 'The weather',
                   parameters: { type: 'object', properties: { city: { type: 'string' } } },
                   strict: false }];
  const first = await c.responses.create({
    model: ctx.agent, input: '/tool get_weather {"city":"Paris"}', tools,
  });
  const call = first.output.find((i) => i.type === 'function_call');
  assert.ok(call, 'a function_call item');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
  const second = await c.responses.create({
    model: ctx.agent, previous_response_id: first.id, tools,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 °C' }],
  });
  assert.equal(second.output_text, 'sunny, 21 °C');
});

test('responses: background — create, retrieve, stream again after a sequence number, cancel', async () => {
  const fake = await startFakeUpstream();
  // 20 words, one every 30 ms; and one that takes 100 s
  const agent = await createUpstreamAgent('bg', fake.baseUrl, 'slow:30:20');
  const slow = await createUpstreamAgent('bg-slow', fake.baseUrl, 'slow:1000:100');
  const c = client(ctx.token);
  const until = async (id, done) => {
    for (let i = 0; i < 600; i++) {
      const r = await c.responses.retrieve(id);
      if (done(r)) return r;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.fail(`response ${id} did not end`);
  };

  // polled to its end
  const queued = await c.responses.create({ model: agent, input: 'x', background: true });
  assert.equal(queued.status, 'queued');
  assert.equal(queued.background, true);
  const done = await until(queued.id, (r) => r.status === 'completed');
  assert.ok(done.output_text.length > 0, 'the answer is there');
  assert.equal(done.background, true);

  // a stream left after three events: it runs on, and is told again
  const s = await c.responses.create({ model: agent, input: 'y', background: true, stream: true });
  let id = null;
  let n = 0;
  for await (const ev of s) {
    if (ev.type === 'response.created') id = ev.response.id;
    if (++n === 3) break;
  }
  assert.ok(id);
  const resumed = await c.responses.retrieve(id, { stream: true, starting_after: 2 });
  const seqs = [];
  let last = null;
  for await (const ev of resumed) {
    seqs.push(ev.sequence_number);
    last = ev;
  }
  assert.equal(seqs[0], 3);
  seqs.forEach((q, i) => assert.equal(q, 3 + i));
  assert.equal(last.type, 'response.completed');
  // the SDK's own helper for it
  const final = await c.responses.stream({ response_id: id, starting_after: 5 }).finalResponse();
  assert.equal(final.status, 'completed');
  assert.equal(final.output_text, last.response.output_text ?? final.output_text);

  // cancelled while it runs; cancelling again changes nothing
  const long = await c.responses.create({ model: slow, input: 'z', background: true });
  await until(long.id, (r) => r.status === 'in_progress');
  const cancelled = await c.responses.cancel(long.id);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal((await c.responses.cancel(long.id)).status, 'cancelled');
  assert.equal((await c.responses.retrieve(long.id)).status, 'cancelled');
  // not created in the background: 400
  const plain = await c.responses.create({ model: ctx.agent, input: 'p' });
  await expectApiError(() => c.responses.cancel(plain.id), OpenAI.BadRequestError, 400, 'invalid_value');
});

test('responses: refusals in the OpenAI error shape', async () => {
  const c = client(ctx.token);
  await expectApiError(() => c.responses.create({ model: ctx.agent, input: 'x',
                                                  tools: [{ type: 'web_search' }] }),
                       OpenAI.BadRequestError, 400, 'invalid_value');
  await expectApiError(() => c.responses.create({ model: ctx.agent, input: 'x', background: true,
                                                  store: false }),
                       OpenAI.BadRequestError, 400, 'invalid_value');
  await expectApiError(() => c.responses.create({ model: 'agt_00000000000000000000000000',
                                                  input: 'x' }),
                       OpenAI.NotFoundError, 404, 'agent_not_found');
  await expectApiError(() => c.responses.create({ model: ctx.agent, input: 'x',
                                                  previous_response_id: 'resp_00000000000000000000000000' }),
                       OpenAI.NotFoundError, 404, 'response_not_found');
});

test('responses: the agent\'s own tools come back as whole mcp_call items', async (skip) => {
  const agent = await toolAgent(skip);
  const c = client(ctx.token);
  const r = await c.responses.create({ model: agent, input: TOOL_PROMPT });
  const call = r.output.find((i) => i.type === 'mcp_call');
  assert.ok(call, 'an mcp_call item');
  assert.equal(call.server_label, 'fake');
  assert.equal(call.name, 'echo');
  assert.deepEqual(JSON.parse(call.arguments), { text: 'from the tool' });
  assert.equal(call.output, 'from the tool');
  assert.equal(r.output_text, 'from the tool');
  const stream = c.responses.stream({ model: agent, input: TOOL_PROMPT });
  const types = [];
  for await (const event of stream) types.push(event.type);
  const final = await stream.finalResponse();
  assert.ok(types.includes('response.mcp_call.in_progress'));
  assert.ok(types.includes('response.mcp_call.completed'));
  assert.equal(final.output.find((i) => i.type === 'mcp_call').output, 'from the tool');
  assert.equal(final.output_text, 'from the tool');
});

test('Vercel AI SDK: the default openai(...) provider speaks Responses', async (skip) => {
  let ai, openaiProvider;
  try {
    ai = await import('ai');
    ({ createOpenAI: openaiProvider } = await import('@ai-sdk/openai'));
  } catch (e) {
    if (e.code === 'ERR_MODULE_NOT_FOUND') skip('the AI SDK is not installed (npm ci)');
    throw e;
  }
  const paths = [];
  const bodies = [];
  const watching = (input, init) => {
    paths.push(new URL(typeof input === 'string' ? input : input.url).pathname);
    bodies.push(String(init?.body ?? ''));
    return fetch(input, init);
  };
  const openai = openaiProvider({ baseURL: `${ctx.url}/api/v1`, apiKey: ctx.token, fetch: watching });
  const g = await ai.generateText({ model: openai(ctx.agent), prompt: TEXT, maxRetries: 0 });
  assert.equal(g.text, TEXT);
  const s = ai.streamText({ model: openai(ctx.agent), prompt: 'streamed words', maxRetries: 0,
                            onError: ({ error }) => { throw error; } });
  let text = '';
  for await (const piece of s.textStream) text += piece;
  assert.equal(text, 'streamed words');
  assert.equal(await s.finishReason, 'stop');
  assert.deepEqual(paths, ['/api/v1/responses', '/api/v1/responses']);

  // a client tool over two steps: the second sends the call back as an
  // item_reference (store: true), then its output
  const { z } = await import('zod');
  const calls = [];
  const steps = await ai.generateText({
    model: openai(ctx.agent),
    prompt: '/tool get_weather {"city":"Oslo"}',
    tools: {
      get_weather: ai.tool({
        description: 'The weather in a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => { calls.push(city); return `snow in ${city}`; },
      }),
    },
    stopWhen: ai.stepCountIs(3),
    maxRetries: 0,
  });
  assert.deepEqual(calls, ['Oslo']);
  assert.equal(steps.steps.length, 2);
  // the next turn with the history the SDK kept: its earlier output items
  // go back as item_reference items (store: true)
  const next = await ai.generateText({
    model: openai(ctx.agent),
    messages: [...steps.response.messages, { role: 'user', content: 'and tomorrow?' }],
    maxRetries: 0,
  });
  assert.equal(next.text, 'and tomorrow?');
  assert.ok(bodies[bodies.length - 1].includes('"item_reference"'),
            `the history went back by reference: ${bodies[bodies.length - 1]}`);
  assert.equal(steps.text, 'snow in Oslo');
});

test('OpenAI Agents SDK: run() on its Responses model, with a function tool', async (skip) => {
  let agents, zod;
  try {
    agents = await import('@openai/agents');
    zod = await import('zod');
  } catch (e) {
    if (e.code === 'ERR_MODULE_NOT_FOUND') skip('@openai/agents is not installed (npm ci)');
    throw e;
  }
  const { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } = agents;
  const paths = [];
  const watching = (input, init) => {
    paths.push(new URL(typeof input === 'string' ? input : input.url).pathname);
    return fetch(input, init);
  };
  setTracingDisabled(true);
  setDefaultOpenAIClient(client(ctx.token, { fetch: watching }));
  setOpenAIAPI('responses');
  const plain = new Agent({ name: 'Echo', model: ctx.agent, instructions: 'Repeat the user.' });
  const result = await run(plain, 'Hello from the Agents SDK');
  assert.equal(result.finalOutput, 'Hello from the Agents SDK');

  const calls = [];
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: zod.z.object({ city: zod.z.string() }),
    execute: async ({ city }) => {
      calls.push(city);
      return `sunny in ${city}`;
    },
  });
  const withTool = new Agent({ name: 'Weather', model: ctx.agent, tools: [getWeather] });
  const answered = await run(withTool, '/tool get_weather {"city":"Paris"}');
  assert.deepEqual(calls, ['Paris']);
  assert.equal(answered.finalOutput, 'sunny in Paris');
  assert.ok(paths.length >= 3 && paths.every((p) => p === '/api/v1/responses'), paths.join(' '));
});

test('openai SDK: conversations.* and conversations.items.*, and responses.create({conversation})', async () => {
  const c = client(ctx.token);
  const conv = await c.conversations.create({
    metadata: { topic: 'demo' },
    items: [{ type: 'message', role: 'user', content: 'first' }],
  });
  assert.ok(conv.id.startsWith('cts_'), conv.id);
  assert.equal(conv.object, 'conversation');
  assert.deepEqual(conv.metadata, { topic: 'demo' });
  assert.ok(isUnixSeconds(conv.created_at));
  assert.deepEqual((await c.conversations.retrieve(conv.id)).metadata, { topic: 'demo' });
  const updated = await c.conversations.update(conv.id, { metadata: { topic: 'other' } });
  assert.deepEqual(updated.metadata, { topic: 'other' });

  const added = await c.conversations.items.create(conv.id, {
    items: [
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'second' }] },
      { role: 'user', content: [{ type: 'input_text', text: 'third' }] },
    ],
  });
  assert.equal(added.data.length, 2);
  const texts = (items) => items.map((i) => i.content[0].text);
  const all = [];
  for await (const item of c.conversations.items.list(conv.id, { order: 'asc', limit: 1 }))
    all.push(item);
  assert.deepEqual(texts(all), ['first', 'second', 'third'], 'a page at a time, by the cursor');
  const newest = await c.conversations.items.list(conv.id, { limit: 2 });
  assert.deepEqual(texts(newest.data), ['third', 'second'], 'newest first by default');
  assert.equal(newest.has_more, true);

  const got = await c.conversations.items.retrieve(all[1].id, { conversation_id: conv.id });
  assert.equal(got.role, 'assistant');
  const after = await c.conversations.items.delete(all[1].id, { conversation_id: conv.id });
  assert.equal(after.id, conv.id);
  await expectApiError(() => c.conversations.items.retrieve(all[1].id, { conversation_id: conv.id }),
                       OpenAI.NotFoundError, 404, 'item_not_found');
  await expectApiError(() => c.conversations.items.create(conv.id, { items: [{ type: 'web_search_call' }] }),
                       OpenAI.BadRequestError, 400, 'invalid_value');

  // a response continues it: the items are its context, its own are listed
  const r = await c.responses.create({ model: ctx.agent, input: 'fourth', conversation: conv.id });
  assert.equal(r.output_text, 'fourth');
  assert.equal(r.conversation.id, conv.id);
  const listed = await c.conversations.items.list(conv.id, { order: 'asc' });
  assert.deepEqual(texts(listed.data), ['first', 'third', 'fourth', 'fourth']);
  assert.deepEqual(listed.data.map((i) => i.role), ['user', 'user', 'user', 'assistant']);
  await expectApiError(() => c.responses.create({ model: ctx.agent, input: 'x', conversation: conv.id,
                                                  previous_response_id: r.id }),
                       OpenAI.BadRequestError, 400, 'invalid_value');

  const deleted = await c.conversations.delete(conv.id);
  assert.deepEqual(deleted, { id: conv.id, object: 'conversation.deleted', deleted: true });
  await expectApiError(() => c.conversations.retrieve(conv.id), OpenAI.NotFoundError, 404,
                       'conversation_not_found');
});

test("OpenAI Agents SDK: OpenAIConversationsSession remembers across run(), popItem, clearSession", async (skip) => {
  let agents;
  try {
    agents = await import('@openai/agents');
  } catch (e) {
    if (e.code === 'ERR_MODULE_NOT_FOUND') skip('@openai/agents is not installed (npm ci)');
    throw e;
  }
  const { Agent, run, OpenAIConversationsSession, setTracingDisabled } = agents;
  const inputs = []; // what each response was given: the session's memory
  const watching = async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input.url);
    if (url.pathname === '/api/v1/responses' && init?.body)
      inputs.push(JSON.parse(init.body).input);
    return fetch(input, init);
  };
  setTracingDisabled(true);
  const c = client(ctx.token, { fetch: watching });
  const session = new OpenAIConversationsSession({ client: c });
  const agent = new Agent({ name: 'Echo', instructions: 'Repeat the user.',
                            model: new agents.OpenAIResponsesModel(c, ctx.agent) });
  const said = ['my name is Ada', 'I live in Lyon', 'what do you know?'];
  for (const text of said) {
    const result = await run(agent, text, { session });
    assert.equal(result.finalOutput, text);
  }
  const id = await session.getSessionId();
  assert.ok(id.startsWith('cts_'), id);
  // the third run was given the first two, question and answer
  const third = JSON.stringify(inputs[inputs.length - 1]);
  for (const text of said)
    assert.ok(third.includes(text), `the third run remembers "${text}": ${third}`);

  const stored = async () => {
    const items = [];
    for await (const item of c.conversations.items.list(id, { order: 'asc' })) items.push(item);
    return items.map((i) => `${i.role}:${i.content[0].text}`);
  };
  const expected = said.flatMap((t) => [`user:${t}`, `assistant:${t}`]);
  assert.deepEqual(await stored(), expected);
  assert.deepEqual((await session.getItems(2)).map((i) => i.role), ['user', 'assistant']);

  const popped = await session.popItem();
  assert.equal(popped.role, 'assistant');
  assert.deepEqual(await stored(), expected.slice(0, -1));

  await session.clearSession();
  await expectApiError(() => c.conversations.retrieve(id), OpenAI.NotFoundError, 404,
                       'conversation_not_found');
});

test('responses: a real MCP server (server-everything): mcp_call items come back whole', async (skip) => {
  const script = join(import.meta.dirname, '..', 'mcp', 'node_modules', '@modelcontextprotocol',
                      'server-everything', 'dist', 'index.js');
  if (!existsSync(script)) skip('the MCP reference servers are not installed (cd tests/mcp && npm ci)');
  const servers = JSON.stringify({ mcpServers: { everything: { command: 'node', args: [script, 'stdio'] } } });
  const out = await gdbus(
    `${BUS_NAME}.Admin.CreateAgent`,
    `{'name': <'everything'>, 'provider': <'echo'>, 'mcp_servers': <${gstr(servers)}>}`,
  );
  const agent = out.match(/\('(agt_\w+)',\)/)[1];
  const c = client(ctx.token);
  const prompt = '/tool everything__echo {"message":"hi"}\n/tool everything__get-sum {"a":2,"b":40}';
  const r = await c.responses.create({ model: agent, input: prompt });
  const calls = r.output.filter((i) => i.type === 'mcp_call');
  assert.equal(calls.length, 2);
  assert.deepEqual(calls.map((i) => [i.server_label, i.name]),
                   [['everything', 'echo'], ['everything', 'get-sum']]);
  assert.deepEqual(JSON.parse(calls[0].arguments), { message: 'hi' });
  assert.equal(calls[0].output, 'Echo: hi');
  assert.ok(calls[1].output.includes('42'), calls[1].output);
  assert.ok(calls.every((i) => i.error === null && i.status === 'completed'));
  // streamed, the same items, whole in finalResponse()
  const stream = c.responses.stream({ model: agent, input: prompt });
  const final = await stream.finalResponse();
  assert.deepEqual(final.output.filter((i) => i.type === 'mcp_call').map((i) => i.output),
                   calls.map((i) => i.output));
  // and stored so
  const got = await c.responses.retrieve(r.id);
  assert.deepEqual(got.output.filter((i) => i.type === 'mcp_call'), calls);
});

/* ---- approvals: the turn waits, the SDK reads on, a decision by POST ---- */

async function approvalAgent(skip) {
  const fake = process.env.CONFAB_FAKE_MCP;
  if (!fake) skip('CONFAB_FAKE_MCP is not set (run through meson test)');
  if (!ctx.approvalAgent) {
    const servers = JSON.stringify({
      mcpServers: { fake: { command: fake, require_approval: 'always' } },
    });
    const out = await gdbus(
      `${BUS_NAME}.Admin.CreateAgent`,
      `{'name': <'careful'>, 'provider': <'echo'>, 'mcp_servers': <${gstr(servers)}>}`,
    );
    ctx.approvalAgent = out.match(/\('(agt_\w+)',\)/)[1];
  }
  return ctx.approvalAgent;
}

test('openai SDK: a stream that waits for an approval, decided with client.post()', async (skip) => {
  const agent = await approvalAgent(skip);
  const c = client(ctx.token);
  for (const approve of [false, true]) {
    const stream = await c.chat.completions.create({
      model: agent, messages: userMsg(TOOL_PROMPT), stream: true,
    });
    const events = [];
    let text = '';
    for await (const chunk of stream) {
      const ev = chunk.tool_event;
      if (ev) {
        assert.deepEqual(chunk.choices, []);
        events.push(ev.type);
        if (ev.type === 'approval_request') {
          assert.match(ev.id, /^mcpr_[0-9a-z]{26}$/);
          assert.equal(ev.server, 'fake');
          assert.equal(ev.name, 'fake__echo');
          const decided = await c.post(`/approvals/${ev.id}`, {
            body: approve ? { approve } : { approve, reason: 'not now' },
          });
          assert.equal(decided.state, approve ? 'approved' : 'denied');
        }
      }
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.deepEqual(events, ['call', 'approval_request', 'approval', 'result']);
    if (approve) assert.equal(text, 'from the tool');
    else assert.match(text, /declined.*not now/);
  }
  // an unknown approval: NotFoundError 404 approval_not_found
  await expectApiError(
    () => c.post('/approvals/mcpr_00000000000000000000000000', { body: { approve: true } }),
    OpenAI.NotFoundError,
    404,
    'approval_not_found',
  );
});

/* ---- approvals asked by a response: its continuation answers them ---- */

const FILESYSTEM_SERVER = join(import.meta.dirname, '..', 'mcp', 'node_modules',
                               '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

// An agent with the real filesystem server rooted at a fresh directory;
// write_file needs an approval, reading does not.
async function filesAgent(skip) {
  if (!existsSync(FILESYSTEM_SERVER))
    skip('the MCP reference servers are not installed (cd tests/mcp && npm ci)');
  if (!ctx.filesAgent) {
    // the server resolves its root: give it (and the paths we ask for) the real one
    const root = realpathSync(mkdtempSync(join(harness.stateDir, 'files-')));
    const servers = JSON.stringify({
      mcpServers: {
        files: {
          command: 'node',
          args: [FILESYSTEM_SERVER, root],
          require_approval: { always: { tool_names: ['write_file'] } },
        },
      },
    });
    const out = await gdbus(
      `${BUS_NAME}.Admin.CreateAgent`,
      `{'name': <'filer'>, 'provider': <'echo'>, 'mcp_servers': <${gstr(servers)}>}`,
    );
    ctx.filesAgent = { agent: out.match(/\('(agt_\w+)',\)/)[1], root };
  }
  return ctx.filesAgent;
}

// the echo model takes this as a call of the server's write_file
const writePrompt = (path, content) =>
  `/tool files__write_file ${JSON.stringify({ path, content })}`;

const itemsOf = (response, type) => response.output.filter((i) => i.type === type);

// The response that asks: one mcp_approval_request for the write, nothing run.
function checkAsked(response, path, content) {
  assert.equal(response.status, 'completed');
  const requests = itemsOf(response, 'mcp_approval_request');
  assert.equal(requests.length, 1, `one mcp_approval_request: ${JSON.stringify(response.output)}`);
  const [request] = requests;
  assert.match(request.id, /^mcpr_[0-9a-z]{26}$/);
  assert.equal(request.server_label, 'files');
  assert.equal(request.name, 'write_file');
  assert.deepEqual(JSON.parse(request.arguments), { path, content });
  assert.deepEqual(itemsOf(response, 'mcp_call'), []);
  assert.ok(!existsSync(path), `${path} is not written before the approval`);
  return request;
}

const approvalAnswer = (request, approve, reason) => ({
  type: 'mcp_approval_response',
  approval_request_id: request.id,
  approve,
  ...(reason === undefined ? {} : { reason }),
});

test("openai SDK: responses.create continues an approval chain (approved; answered twice is 409)", async (skip) => {
  const { agent, root } = await filesAgent(skip);
  const c = client(ctx.token);
  const file = join(root, 'approved.txt');
  const first = await c.responses.create({ model: agent, input: writePrompt(file, 'approved') });
  const request = checkAsked(first, file, 'approved');

  // an answer to a request nobody asked is refused, and runs nothing
  await expectApiError(
    () => c.responses.create({
      model: agent, previous_response_id: first.id,
      input: [approvalAnswer({ id: 'mcpr_00000000000000000000000000' }, true)],
    }),
    OpenAI.BadRequestError, 400, 'invalid_value',
  );
  assert.ok(!existsSync(file));

  const answer = { model: agent, previous_response_id: first.id,
                   input: [approvalAnswer(request, true)] };
  const second = await c.responses.create(answer);
  assert.equal(second.status, 'completed');
  assert.equal(second.previous_response_id, first.id);
  assert.equal(second.conversation.id, first.conversation.id);
  const calls = itemsOf(second, 'mcp_call');
  assert.equal(calls.length, 1, `one mcp_call: ${JSON.stringify(second.output)}`);
  const [call] = calls;
  assert.equal(call.server_label, 'files');
  assert.equal(call.name, 'write_file');
  assert.deepEqual(JSON.parse(call.arguments), { path: file, content: 'approved' });
  assert.equal(call.error, null);
  assert.equal(typeof call.output, 'string');
  assert.ok(call.output.length > 0, 'the call has an output');
  // the call, then the model's answer
  const kinds = second.output.map((i) => i.type);
  assert.ok(kinds.lastIndexOf('message') > kinds.indexOf('mcp_call'), kinds.join(' '));
  assert.ok(second.output_text.length > 0, 'output_text');
  assert.equal(readFileSync(file, 'utf8'), 'approved');

  // stored as served
  assert.deepEqual((await c.responses.retrieve(first.id)).output, first.output,
                   'the asking response, retrieved, has the items it was served with');
  const got = await c.responses.retrieve(second.id);
  assert.deepEqual(got.output, second.output);
  assert.equal(got.output_text, second.output_text);

  // answered: the same answer again is refused, and nothing runs again
  rmSync(file);
  await expectApiError(() => c.responses.create(answer), OpenAI.ConflictError, 409,
                       'approval_already_decided');
  assert.ok(!existsSync(file), 'the second answer ran nothing');
});

test('openai SDK: responses.stream continues an approval chain (declined with a reason)', async (skip) => {
  const { agent, root } = await filesAgent(skip);
  const c = client(ctx.token);
  const file = join(root, 'declined.txt');
  const asking = c.responses.stream({ model: agent, input: writePrompt(file, 'never') });
  const done = [];
  const types = [];
  asking.on('response.output_item.done', (e) => { done.push(e.item); });
  for await (const event of asking) types.push(event.type);
  const asked = await asking.finalResponse();
  const request = checkAsked(asked, file, 'never');
  assert.ok(types.includes('response.output_item.added'), types.join(' '));
  assert.deepEqual(done.filter((i) => i.type === 'mcp_approval_request'), [request],
                   'the request is streamed whole as an output item');
  assert.ok(!types.some((t) => t.startsWith('response.mcp_call.')), types.join(' '));
  assert.equal(types[types.length - 1], 'response.completed');

  // a response's request is answered by its continuation, not by POST /approvals
  await expectApiError(() => c.post(`/approvals/${request.id}`, { body: { approve: true } }),
                       OpenAI.ConflictError, 409, 'approval_asked_by_response');
  assert.ok(!existsSync(file));

  const answering = c.responses.stream({
    model: agent, previous_response_id: asked.id,
    input: [approvalAnswer(request, false, 'not today')],
  });
  const types2 = [];
  let deltas = '';
  answering.on('response.output_text.delta', (e) => { deltas += e.delta; });
  for await (const event of answering) types2.push(event.type);
  const final = await answering.finalResponse();
  assert.equal(final.status, 'completed');
  assert.equal(final.previous_response_id, asked.id);
  assert.deepEqual(itemsOf(final, 'mcp_call'), []);
  assert.ok(!types2.some((t) => t.startsWith('response.mcp_call.')), types2.join(' '));
  // the echo model answers with what the declined call gave it
  assert.ok(final.output_text.includes('declined'), final.output_text);
  assert.ok(final.output_text.includes('not today'), final.output_text);
  assert.equal(deltas, final.output_text);
  assert.ok(!existsSync(file), 'a declined write does not happen');
  assert.equal((await c.responses.retrieve(final.id)).output_text, final.output_text);
});

test('rpm: a burst over the rate completes through the SDK\'s own retries (retry-after-ms)', async () => {
  // a daemon of its own, on a bus of its own, every owner at 60 a minute
  const bus = await startBus();
  const d = await startDaemon(bus, { config: '[quota]\ndefault_rpm=60\n' });
  try {
    // every answer the SDK got, the 429s it retried included
    const refused = [];
    let calls = 0;
    const recording = async (input, init) => {
      calls += 1;
      const r = await fetch(input, init);
      if (r.status === 429) refused.push({ headers: r.headers, body: await r.clone().json() });
      return r;
    };
    const c = new OpenAI({
      baseURL: `${d.url}/api/v1`,
      apiKey: d.token,
      timeout: REQUEST_TIMEOUT_MS,
      maxRetries: 8,
      fetch: recording,
    });
    // 63 at once: the burst is 60, then one a second; each refused
    // request is told when to come back and the SDK waits that long
    const n = 63;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        c.chat.completions.create({ model: d.agent, messages: userMsg(`burst ${i}`) }).withResponse(),
      ),
    );
    assert.equal(answers.length, n);
    for (const { data, response } of answers) {
      assert.equal(typeof data.choices[0].message.content, 'string');
      assert.equal(response.headers.get('x-ratelimit-limit-requests'), '60');
      assert.match(response.headers.get('x-ratelimit-reset-requests') ?? '', /^(\d+m)?\d+(\.\d+)?s$|^\d+ms$/);
    }
    // (under a slow wrapper the burst may spread over its own refills)
    if (SLOW === 1) assert.ok(refused.length > 0, `the SDK retried (${calls} calls for ${n})`);
    assert.equal(calls, n + refused.length);
    for (const { headers, body } of refused) {
      assert.equal(body.error.code, 'rate_limit_exceeded');
      assert.equal(body.error.type, 'rate_limit_error');
      assert.equal(headers.get('x-should-retry'), 'true');
      const ms = Number(headers.get('retry-after-ms'));
      assert.ok(ms >= 1 && ms <= 1000, `retry-after-ms within an interval: ${ms}`);
      assert.equal(Number(headers.get('retry-after')), Math.ceil(ms / 1000));
      assert.equal(headers.get('x-ratelimit-remaining-requests'), '0');
    }
  } finally {
    const exited = new Promise((resolve) => d.daemon.once('exit', (code, sig) => resolve(code ?? sig)));
    d.daemon.kill('SIGTERM');
    assert.equal(await exited, 0, 'the rate-limited daemon exits 0');
  }
});

test('quota: rate-limit headers, then RateLimitError 429 without retries', async () => {
  const owner = 'carol';
  await setQuota(owner, 2);
  const counter = countingFetch();
  const c = client(ctx.carolToken, { maxRetries: 2, fetch: counter });

  const r1 = await c.chat.completions
    .create({ model: ctx.agent, messages: userMsg('q1') })
    .withResponse();
  assert.equal(r1.response.headers.get('x-ratelimit-limit-requests'), '2');
  assert.equal(r1.response.headers.get('x-ratelimit-remaining-requests'), '1');
  assert.match(r1.response.headers.get('x-ratelimit-reset-requests') ?? '', /^\d+s$/);
  const reset = parseInt(r1.response.headers.get('x-ratelimit-reset-requests'), 10);
  assert.ok(reset > 0 && reset <= 31 * 86400, `reset within a month: ${reset}`);

  // failed requests do not count
  await expectApiError(
    () => c.chat.completions.create({ model: 'agt_00000000000000000000000000', messages: userMsg('x') }),
    OpenAI.NotFoundError,
    404,
    'agent_not_found',
  );
  assert.equal(await getUsage(owner), 1, 'a 404 does not count');

  // a stream counts too, and carries the headers
  const { data: stream, response: r2 } = await c.chat.completions
    .create({ model: ctx.agent, messages: userMsg('q2'), stream: true })
    .withResponse();
  assert.equal(r2.headers.get('x-ratelimit-remaining-requests'), '0');
  for await (const _ of stream) {
    /* drain */
  }
  assert.equal(await getUsage(owner), 2);

  const before = counter.calls;
  const t0 = Date.now();
  const e = await expectApiError(
    () => c.chat.completions.create({ model: ctx.agent, messages: userMsg('q3') }),
    OpenAI.RateLimitError,
    429,
    'insufficient_quota',
  );
  const elapsed = Date.now() - t0;
  assert.equal(counter.calls - before, 1, 'the SDK did not retry the 429');
  if (SLOW === 1) assert.ok(elapsed < 2000, `no retry back-off (${elapsed} ms)`);
  assert.equal(e.type, 'insufficient_quota');
  assert.equal(e.headers.get('x-should-retry'), 'false');
  assert.equal(await getUsage(owner), 2, 'the refused request does not count');

  // streaming over quota: the same 429, before any event
  const before2 = counter.calls;
  await expectApiError(
    () => c.chat.completions.create({ model: ctx.agent, messages: userMsg('q4'), stream: true }),
    OpenAI.RateLimitError,
    429,
    'insufficient_quota',
  );
  assert.equal(counter.calls - before2, 1, 'the SDK did not retry the streaming 429');

  // the list endpoints are not counted and still answer over quota
  const convs = await listConversations(c);
  assert.equal(convs.data.length, 2);
  await listMessages(c, convs.data[0].id);
  assert.equal(await getUsage(owner), 2, 'lists do not count');

  // concurrent requests never get past the quota
  await setQuota('gina', 3);
  const g = client(ctx.ginaToken, { maxRetries: 2 });
  const results = await Promise.allSettled(
    Array.from({ length: 12 }, (_, i) =>
      g.chat.completions.create({ model: ctx.agent, messages: userMsg(`burst ${i}`) }),
    ),
  );
  const admitted = results.filter((x) => x.status === 'fulfilled').length;
  const refused = results.filter(
    (x) => x.status === 'rejected' && x.reason instanceof OpenAI.RateLimitError,
  ).length;
  assert.equal(admitted, 3, `3 of 12 concurrent requests admitted (refused ${refused})`);
  assert.equal(refused, 9, 'the other 9 are 429');
  assert.equal(await getUsage('gina'), 3);

  // raising the quota lets the owner talk again
  await setQuota(owner, 3);
  const r3 = await c.chat.completions
    .create({ model: ctx.agent, messages: userMsg('q5') })
    .withResponse();
  assert.equal(r3.data.choices[0].message.content, 'q5');
  assert.equal(r3.response.headers.get('x-ratelimit-remaining-requests'), '0');
});

test('channel (D-Bus Chat) conversations are not listed nor replayed by the v1 API', async () => {
  // Chat.Send's owner is the caller's Unix user: give that user a token
  const c = client(ctx.meToken);
  const api = await c.chat.completions.create({ model: ctx.agent, messages: userMsg('via http') });
  const sid = await channelSend(ctx.agent, 'over the bus');
  assert.notEqual(sid, api.metadata.session_id);
  const convs = await listConversations(c, { limit: 100 });
  assert.deepEqual(
    convs.data.map((x) => x.id),
    [api.metadata.session_id],
    'only the API session is listed',
  );
  await expectApiError(() => listMessages(c, sid), OpenAI.NotFoundError, 404, 'conversation_not_found');
  await expectApiError(
    () =>
      c.chat.completions.create({
        model: ctx.agent,
        messages: userMsg('continue the channel'),
        metadata: { session_id: sid },
      }),
    OpenAI.NotFoundError,
    404,
    'conversation_not_found',
  );
});

/* ------------------------------------------------------------------ */
/* runner                                                               */

class Skip extends Error {}

async function main() {
  const watchdog = setTimeout(() => {
    console.log(`Bail out! the suite took longer than ${WATCHDOG_MS / 1000} s`);
    console.log(harness.daemonLog.replace(/^/gm, '# '));
    cleanup();
    process.exit(1);
  }, WATCHDOG_MS);
  watchdog.unref();

  const filters = process.argv.slice(2);
  const selected = filters.length
    ? tests.filter((t) => filters.some((f) => t.name.includes(f)))
    : tests;
  console.log('TAP version 13');
  console.log(`1..${selected.length}`);

  const t0 = Date.now();
  try {
    const busAddress = await startBus();
    harness.busEnv = { ...process.env, DBUS_SESSION_BUS_ADDRESS: busAddress };
    const d = await startDaemon(busAddress);
    ctx = { daemon: d.daemon, url: d.url, agent: d.agent, token: d.token };
    await waitForBusName();
    ctx.otherAgent = await createAgent('other');
    ctx.bobToken = await createToken({ owner: 'bob' });
    ctx.carolToken = await createToken({ owner: 'carol', scopes: ['api.full'] });
    ctx.pagerToken = await createToken({ owner: 'dave' });
    ctx.erinToken = await createToken({ owner: 'erin' });
    ctx.boundToken = await createToken({ owner: 'erin', agentId: ctx.agent, name: 'bound' });
    ctx.noScopeToken = await createToken({ owner: 'frank', scopes: ['files.read'] });
    ctx.ginaToken = await createToken({ owner: 'gina' });
    ctx.meToken = await createToken({ owner: userInfo().username });
    console.log(`# confabd at ${ctx.url}, agent ${ctx.agent}, setup ${Date.now() - t0} ms`);
  } catch (e) {
    console.log(`Bail out! setting up: ${e.message.split('\n')[0]}`);
    console.log(`${e.stack}\n${harness.daemonLog}`.replace(/^/gm, '# '));
    cleanup();
    process.exit(1);
  }

  let failed = 0;
  for (const [i, t] of selected.entries()) {
    const n = i + 1;
    const started = Date.now();
    try {
      await t.fn((why) => {
        throw new Skip(why);
      });
      console.log(`ok ${n} - ${t.name} # ${Date.now() - started} ms`);
    } catch (e) {
      if (e instanceof Skip) {
        console.log(`ok ${n} - ${t.name} # SKIP ${e.message}`);
        continue;
      }
      failed++;
      console.log(`not ok ${n} - ${t.name}`);
      console.log('  ---');
      const detail = e instanceof assert.AssertionError ? e.message : e.stack;
      console.log(String(detail).replace(/^/gm, '  # '));
      if (e instanceof assert.AssertionError && 'expected' in e && e.operator !== 'fail') {
        console.log(`  # expected: ${JSON.stringify(e.expected)}`);
        console.log(`  # actual:   ${JSON.stringify(e.actual)}`);
      }
      if (e instanceof assert.AssertionError && e.stack) {
        const where = e.stack.split('\n').find((l) => l.includes('run-tests.mjs'));
        if (where) console.log(`  # at ${where.trim().replace(/^at /, '')}`);
      }
      console.log('  ...');
    }
    if (ctx.daemon.exitCode !== null || ctx.daemon.signalCode !== null) break; // reported below
  }

  const daemon = ctx.daemon;
  const alive = daemon && daemon.exitCode === null && daemon.signalCode === null;
  if (!alive) {
    failed++;
    console.log('# confabd is gone:');
  }
  if (!alive || failed) console.log(harness.daemonLog.replace(/^/gm, '# '));

  // a clean shutdown on SIGTERM
  if (alive) {
    const exited = new Promise((resolve) => daemon.once('exit', (code, sig) => resolve(code ?? sig)));
    daemon.kill('SIGTERM');
    const how = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 10000))]);
    if (how !== 0) {
      failed++;
      console.log(`# confabd did not exit 0 on SIGTERM: ${how}`);
      console.log(harness.daemonLog.replace(/^/gm, '# '));
    }
  }
  cleanup();
  console.log(`# ${selected.length - failed} passed, ${failed} failed, ${Date.now() - t0} ms`);
  process.exit(failed ? 1 : 0);
}

main();
