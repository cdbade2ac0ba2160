#!/usr/bin/env python3
# Copyright 2026 The Confab authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the HTTP/1.1 framing corpus: one <status>-<name>.http per case,
the bytes exactly as tests/test-http-framing.c sends them.

Run it from anywhere: python3 tests/integration/http-corpus/make-corpus.py
It rewrites every .http file it knows and removes none; the files are
committed, so a change here shows up as a change of bytes in git.

@TOKEN@ stands for a 47-byte API secret and @AGENT@ for a 30-byte agent id;
every Content-Length and chunk size below counts the substituted bytes.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

TOKEN_LEN = 47  # "nca_" and 43 base62 characters
AGENT_LEN = 30  # "agt_" and 26 Crockford base32 characters


def wire_len(data: bytes) -> int:
    return len(data.replace(b"@TOKEN@", b"x" * TOKEN_LEN).replace(b"@AGENT@", b"x" * AGENT_LEN))


CRLF = b"\r\n"
HOST = b"Host: localhost\r\n"
AUTH = b"Authorization: Bearer @TOKEN@\r\n"
JSON = b"Content-Type: application/json\r\n"
CLOSE = b"Connection: close\r\n"
CHAT = b"/api/v1/chat/completions"
LIST = b"/api/v1/conversations"


def chat_body(content: bytes = b"hi") -> bytes:
    return b'{"model":"@AGENT@","messages":[{"role":"user","content":"' + content + b'"}]}'


BODY = chat_body()
N = wire_len(BODY)

# What a case hides behind a request that must be refused: served, it would
# answer 200. The test proves it never is.
SMUGGLED = b"GET /api/v1/conversations HTTP/1.1\r\n" + HOST + AUTH + CLOSE + CRLF

# Hidden inside the body of a valid request: served, it would answer 404.
IN_BODY = b"GET /api/v1/not-a-route HTTP/1.1\r\n" + HOST + AUTH + CRLF

# A plain request that ends a valid pipelined case and closes the connection.
LAST_GET = b"GET /api/v1/conversations HTTP/1.1\r\n" + HOST + AUTH + CLOSE + CRLF


def cl(n) -> bytes:
    return b"Content-Length: " + str(n).encode() + CRLF


def te(value: bytes = b"chunked") -> bytes:
    return b"Transfer-Encoding: " + value + CRLF


def chunk(data: bytes, ext: bytes = b"", size: bytes = None) -> bytes:
    if size is None:
        size = b"%x" % wire_len(data)
    return size + ext + CRLF + data + CRLF


LAST_CHUNK = b"0\r\n\r\n"


def chunked(body: bytes = BODY, ext: bytes = b"") -> bytes:
    return chunk(body, ext) + LAST_CHUNK


def post(headers: bytes, body: bytes, version: bytes = b"HTTP/1.1", target: bytes = CHAT) -> bytes:
    return b"POST " + target + b" " + version + CRLF + HOST + AUTH + JSON + headers + CRLF + body


def get(headers: bytes = b"", line: bytes = b"GET /api/v1/conversations HTTP/1.1") -> bytes:
    return line + CRLF + headers + CRLF


def get_auth(headers: bytes = b"", line: bytes = b"GET /api/v1/conversations HTTP/1.1") -> bytes:
    return get(HOST + AUTH + headers, line)


cases = {}


def case(name: str, data: bytes):
    assert name not in cases, name
    cases[name] = data


# ---- controls: well-formed requests are served ----
case("200-plain-get", get_auth(CLOSE))
case("200-post-content-length", post(cl(N) + CLOSE, BODY))
case("200-pipelined-gets", get_auth() + LAST_GET)
case("200-post-content-length-then-get", post(cl(N), BODY) + LAST_GET)
# a GET may carry a body: it is framed by its Content-Length, never served
case("200-get-with-content-length-body", get_auth(cl(wire_len(IN_BODY))) + IN_BODY + LAST_GET)

# ---- Content-Length (RFC 9112 6.3, RFC 9110 8.6) ----
case("400-cl-duplicate-different", post(cl(N) + cl(N + 1), BODY + b"\n") + SMUGGLED)
case("400-cl-duplicate-same", post(cl(N) + cl(N), BODY) + SMUGGLED)
case("400-cl-comma-list-different", post(b"Content-Length: %d, %d\r\n" % (N, N + 1), BODY + b"\n") + SMUGGLED)
case("400-cl-comma-list-same", post(b"Content-Length: %d, %d\r\n" % (N, N), BODY) + SMUGGLED)
case("400-cl-plus-sign", post(b"Content-Length: +%d\r\n" % N, BODY) + SMUGGLED)
case("400-cl-negative", post(b"Content-Length: -1\r\n", BODY) + SMUGGLED)
case("400-cl-two-numbers", post(b"Content-Length: %d %d\r\n" % (N, N), BODY) + SMUGGLED)
case("400-cl-hex-prefix", post(b"Content-Length: 0x%x\r\n" % N, BODY) + SMUGGLED)
case("400-cl-trailing-letter", post(b"Content-Length: %da\r\n" % N, BODY) + SMUGGLED)
case("400-cl-decimal-point", post(b"Content-Length: %d.0\r\n" % N, BODY) + SMUGGLED)
case("400-cl-empty-value", post(b"Content-Length: \r\n", BODY) + SMUGGLED)
case("400-cl-leading-zero", post(b"Content-Length: 0%d\r\n" % N, BODY) + SMUGGLED)
case("400-cl-2-to-the-63", post(b"Content-Length: 9223372036854775808\r\n", BODY) + SMUGGLED)
# 2^64 + N: a parser that wraps around reads N
case("400-cl-wraps-to-body-length", post(b"Content-Length: %d\r\n" % (2**64 + N), BODY) + SMUGGLED)
case("400-cl-space-before-colon", post(b"Content-Length : %d\r\n" % N, BODY) + SMUGGLED)
case("400-cl-obs-fold", post(b"Content-Length:\r\n %d\r\n" % N, BODY) + SMUGGLED)
# a well-formed length over max_body_bytes (32 MiB): refused from the head
case("413-cl-over-max-body", post(cl(32 * 1024 * 1024 + 1), BODY) + SMUGGLED)
case("200-cl-tab-ows", post(b"Content-Length:\t%d\t\r\n" % N + CLOSE, BODY))

# ---- Content-Length with Transfer-Encoding (RFC 9112 6.1, 6.3; CL.TE, TE.CL) ----
# CL.TE: the length covers the chunked body and the request after it
body = chunked() + SMUGGLED
case("400-cl-te-smuggled-after-last-chunk", post(cl(wire_len(body)) + te(), body))
# TE.CL: the length covers the first chunk-size line only; the chunk is a request
size_line = b"%x\r\n" % wire_len(SMUGGLED)
case("400-te-cl-smuggled-in-chunk", post(cl(len(size_line)) + te(), chunk(SMUGGLED) + LAST_CHUNK))
case("400-te-cl-te-header-first", post(te() + cl(len(size_line)), chunk(SMUGGLED) + LAST_CHUNK))
case("400-cl-zero-te-chunked", post(cl(0) + te(), chunked() + SMUGGLED))
case("400-cl-te-http10", post(cl(wire_len(chunked())) + te(), chunked(), b"HTTP/1.0") + SMUGGLED)
case("400-cl-te-xchunked", post(cl(N) + te(b"xchunked"), BODY) + SMUGGLED)
case("400-cl-te-identity", post(cl(N) + te(b"identity"), BODY) + SMUGGLED)
case("400-cl-te-space-before-colon", post(cl(N) + b"Transfer-Encoding : chunked\r\n", BODY) + SMUGGLED)
case("400-cl-te-tab-ows", post(cl(N) + b"Transfer-Encoding:\tchunked\r\n", chunked()) + SMUGGLED)
case("400-cl-te-lowercase-name", post(cl(N) + b"transfer-encoding: chunked\r\n", chunked()) + SMUGGLED)
case("400-cl-te-two-te-headers", post(cl(N) + te() + te(b"x"), chunked()) + SMUGGLED)
case("400-cl-te-obs-fold", post(cl(N) + b"Transfer-Encoding:\r\n chunked\r\n", chunked()) + SMUGGLED)

# ---- Transfer-Encoding alone (RFC 9112 6.1, 6.3, 7) ----
case("200-te-chunked", post(te() + CLOSE, chunked()))
case("200-te-tab-ows", post(b"Transfer-Encoding:\tchunked\r\n" + CLOSE, chunked()))
case("200-te-trailing-ows", post(b"Transfer-Encoding: chunked \t\r\n" + CLOSE, chunked()))
case("200-te-name-lowercase", post(b"transfer-encoding: chunked\r\n" + CLOSE, chunked()))
case("200-te-name-mixed-case", post(b"TrAnSfEr-EnCoDiNg: chunked\r\n" + CLOSE, chunked()))
case("200-te-value-uppercase", post(te(b"CHUNKED") + CLOSE, chunked()))
case("400-te-space-before-colon", post(b"Transfer-Encoding : chunked\r\n", chunked()) + SMUGGLED)
case("400-te-tab-before-colon", post(b"Transfer-Encoding\t: chunked\r\n", chunked()) + SMUGGLED)
# chunked not the final coding: 400, not 501 (RFC 9112 6.3 item 4 is a MUST)
case("400-te-xchunked", post(te(b"xchunked"), chunked()) + SMUGGLED)
case("400-te-identity", post(te(b"identity"), chunked()) + SMUGGLED)
case("400-te-chunked-identity", post(te(b"chunked, identity"), chunked()) + SMUGGLED)
case("400-te-quoted-chunked", post(te(b'"chunked"'), chunked()) + SMUGGLED)
case("400-te-vertical-tab", post(b"Transfer-Encoding:\x0bchunked\r\n", chunked()) + SMUGGLED)
# chunked final, a coding before it that Confab does not decode: 501 (RFC 9112 6.1)
case("501-te-gzip-chunked", post(te(b"gzip, chunked"), chunked()) + SMUGGLED)
case("501-te-unknown-coding-then-chunked", post(te(b"foo, chunked"), chunked()) + SMUGGLED)
case("400-te-chunked-twice", post(te() + te(), chunked()) + SMUGGLED)
case("400-te-chunked-chunked-list", post(te(b"chunked, chunked"), chunked()) + SMUGGLED)
case("400-te-obs-fold", post(b"Transfer-Encoding:\r\n chunked\r\n", chunked()) + SMUGGLED)
case("400-te-http10", post(te(), chunked(), b"HTTP/1.0") + SMUGGLED)

# ---- chunked framing (RFC 9112 7.1) ----
case("200-chunk-ext-short", post(te() + CLOSE, chunked(ext=b";a=b")))
case("200-chunk-ext-quoted", post(te() + CLOSE, chunked(ext=b';a="b c"')))
case("200-chunk-ext-name-only", post(te() + CLOSE, chunked(ext=b";a")))
upper = chat_body(b"uppercase")  # 93 bytes: 5D
case("200-chunk-size-uppercase-hex", post(te() + CLOSE, chunk(upper, size=b"%X" % wire_len(upper)) + LAST_CHUNK))
case("200-chunked-three-chunks", post(te() + CLOSE, chunk(BODY[:10]) + chunk(BODY[10:20]) + chunk(BODY[20:]) + LAST_CHUNK))
case("200-chunked-with-trailer", post(te() + CLOSE, chunk(BODY) + b"0\r\nX-Trailer: a\r\n\r\n"))
case("200-chunked-then-pipelined-get", post(te(), chunked()) + LAST_GET)
case("400-chunk-size-0x-prefix", post(te(), chunk(BODY, size=b"0x%x" % N) + LAST_CHUNK) + SMUGGLED)
case("400-chunk-size-trailing-junk", post(te(), chunk(BODY, size=b"%x junk" % N) + LAST_CHUNK) + SMUGGLED)
case("400-chunk-size-leading-space", post(te(), chunk(BODY, size=b" %x" % N) + LAST_CHUNK) + SMUGGLED)
case("400-chunk-size-negative", post(te(), chunk(BODY, size=b"-%x" % N) + LAST_CHUNK) + SMUGGLED)
case("400-chunk-size-empty", post(te(), chunk(BODY, size=b"") + LAST_CHUNK) + SMUGGLED)
case("400-chunk-size-17-hex-digits", post(te(), chunk(BODY, size=b"%017x" % N) + LAST_CHUNK) + SMUGGLED)
case("400-chunk-size-2-to-the-63", post(te(), chunk(BODY, size=b"8000000000000000") + LAST_CHUNK) + SMUGGLED)
# 2^64 + N: a parser that shifts without checking reads N
case("400-chunk-size-wraps-to-body-length", post(te(), chunk(BODY, size=b"%x" % (2**64 + N)) + LAST_CHUNK) + SMUGGLED)
case("400-chunk-ext-over-4k", post(te(), chunked(ext=b";a=" + b"x" * 5000)) + SMUGGLED)
case("400-chunk-ext-100k", post(te(), chunked(ext=b";a=" + b"x" * 100 * 1024)) + SMUGGLED)
case("400-chunk-missing-crlf-after-data", post(te(), b"%x\r\n" % N + BODY + LAST_CHUNK) + SMUGGLED)
case("400-chunk-data-longer-than-size", post(te(), b"%x\r\n" % (N - 1) + BODY + CRLF + LAST_CHUNK) + SMUGGLED)
case("400-chunk-size-line-bare-lf", post(te(), b"%x\n" % N + BODY + CRLF + LAST_CHUNK) + SMUGGLED)
case("400-chunk-data-bare-lf", post(te(), b"%x\r\n" % N + BODY + b"\n" + LAST_CHUNK) + SMUGGLED)
case("400-chunk-last-bare-lf", post(te(), chunk(BODY) + b"0\n\n") + SMUGGLED)

# ---- header fields (RFC 9112 5, 5.1, 5.2; RFC 9110 5.5) ----
case("200-header-value-obs-text", get_auth(b"X-Foo: caf\xe9\r\n" + CLOSE))
case("200-header-value-ows", get_auth(b"X-Foo: \t bar \t\r\n" + CLOSE))
case("200-header-value-empty", get_auth(b"X-Foo:\r\n" + CLOSE))
case("400-header-space-before-colon", get_auth(b"X-Foo : bar\r\n") + SMUGGLED)
case("400-header-tab-before-colon", get_auth(b"X-Foo\t: bar\r\n") + SMUGGLED)
case("400-header-name-with-space", get_auth(b"Foo Bar: baz\r\n") + SMUGGLED)
case("400-header-name-control-byte", get_auth(b"Foo\x01: baz\r\n") + SMUGGLED)
case("400-header-name-non-ascii", get_auth(b"F\xf6o: baz\r\n") + SMUGGLED)
case("400-header-name-empty", get_auth(b": baz\r\n") + SMUGGLED)
case("400-header-value-nul", get_auth(b"X-Foo: a\x00b\r\n") + SMUGGLED)
case("400-header-value-bare-cr", get_auth(b"X-Foo: a\rb\r\n") + SMUGGLED)
case("400-header-line-without-colon", get_auth(b"X-Foo bar\r\n") + SMUGGLED)
case("400-header-obs-fold-space", get_auth(b"X-Foo: a\r\n b\r\n") + SMUGGLED)
case("400-header-obs-fold-tab", get_auth(b"X-Foo: a\r\n\tb\r\n") + SMUGGLED)
case("400-whitespace-line-after-request-line", get(b" X-Foo: bar\r\n" + HOST + AUTH) + SMUGGLED)
case("400-head-bare-lf", get_auth().replace(CRLF, b"\n") + SMUGGLED)
case("400-head-one-bare-lf", get(HOST + b"X-Foo: bar\n" + AUTH) + SMUGGLED)

# ---- request line (RFC 9112 2.2, 2.3, 3, 3.2) ----
case("200-leading-crlf", CRLF + get_auth(CLOSE))
case("200-two-leading-crlf", CRLF + CRLF + get_auth(CLOSE))
case("200-version-1.2", get_auth(CLOSE, b"GET /api/v1/conversations HTTP/1.2"))
case("200-absolute-form", get_auth(CLOSE, b"GET http://localhost/api/v1/conversations HTTP/1.1"))
case("200-absolute-form-host-differs", get(b"Host: other.invalid\r\n" + AUTH + CLOSE, b"GET http://localhost/api/v1/conversations HTTP/1.1"))
case("400-request-line-missing-version", get_auth(b"", b"GET /api/v1/conversations") + SMUGGLED)
case("400-request-line-trailing-space", get_auth(b"", b"GET /api/v1/conversations HTTP/1.1 ") + SMUGGLED)
case("400-request-line-leading-space", get_auth(b"", b" GET /api/v1/conversations HTTP/1.1") + SMUGGLED)
case("400-request-line-double-space", get_auth(b"", b"GET  /api/v1/conversations HTTP/1.1") + SMUGGLED)
case("400-request-line-tabs", get_auth(b"", b"GET\t/api/v1/conversations\tHTTP/1.1") + SMUGGLED)
case("400-version-lowercase", get_auth(b"", b"GET /api/v1/conversations http/1.1") + SMUGGLED)
case("400-version-no-minor", get_auth(b"", b"GET /api/v1/conversations HTTP/1") + SMUGGLED)
case("400-version-two-digit-minor", get_auth(b"", b"GET /api/v1/conversations HTTP/1.10") + SMUGGLED)
case("505-version-2.0", get_auth(b"", b"GET /api/v1/conversations HTTP/2.0") + SMUGGLED)
case("505-version-3.0", get_auth(b"", b"GET /api/v1/conversations HTTP/3.0") + SMUGGLED)
case("505-version-9.9", get_auth(b"", b"GET /api/v1/conversations HTTP/9.9") + SMUGGLED)
case("400-asterisk-form-get", get_auth(b"", b"GET * HTTP/1.1") + SMUGGLED)
case("400-authority-form-get", get_auth(b"", b"GET localhost:80 HTTP/1.1") + SMUGGLED)
case("400-target-control-byte", get_auth(b"", b"GET /api/v1/conver\x01sations HTTP/1.1") + SMUGGLED)
case("400-target-raw-ff", get_auth(b"", b"GET /api/v1/\xff HTTP/1.1") + SMUGGLED)
case("400-target-fragment", get_auth(b"", b"GET /api/v1/conversations#x HTTP/1.1") + SMUGGLED)
# percent-encoded bytes that are not UTF-8: well-formed HTTP, no such route;
# the answer must not echo them raw
case("404-path-pct-overlong-utf8", get_auth(b"", b"GET /api/v1/%C0%AE HTTP/1.1") + SMUGGLED)
case("404-path-pct-surrogate", get_auth(b"", b"GET /api/v1/%ED%A0%80 HTTP/1.1") + SMUGGLED)
case("404-messages-pct-ff-conversation", get_auth(b"", b"GET /api/v1/conversations/%ff/messages HTTP/1.1") + SMUGGLED)

# ---- Host (RFC 9112 3.2) ----
case("200-host-missing-http10", get(AUTH, b"GET /api/v1/conversations HTTP/1.0"))
case("400-host-missing", get(AUTH) + SMUGGLED)
case("400-host-duplicate-different", get(HOST + b"Host: other.invalid\r\n" + AUTH) + SMUGGLED)
case("400-host-duplicate-same", get(HOST + HOST + AUTH) + SMUGGLED)
case("400-host-invalid-value", get(b"Host: local host\r\n" + AUTH) + SMUGGLED)

# ---- Authorization (RFC 9110 11.6.2): one field, never two ----
# whichever one a proxy checked, the server must not authenticate the other
case("400-authorization-duplicate-same", get(HOST + AUTH + AUTH) + SMUGGLED)
case("400-authorization-duplicate-invalid-first", get(HOST + b"Authorization: Bearer nca_invalid\r\n" + AUTH) + SMUGGLED)
case("400-authorization-duplicate-invalid-last", get(HOST + AUTH + b"authorization: Bearer nca_invalid\r\n") + SMUGGLED)

# ---- Expect (RFC 9110 10.1.1) ----
# the test sends the head, waits for the 100 and only then the body
case("200-expect-100-continue", post(cl(N) + b"Expect: 100-continue\r\n" + CLOSE, BODY))
case("200-expect-100-continue-mixed-case", post(cl(N) + b"Expect: 100-Continue\r\n" + CLOSE, BODY))
case("417-expect-unknown", post(cl(N) + b"Expect: something-else\r\n", BODY) + SMUGGLED)

# ---- sizes: max_header_bytes=65536 counts the head only ----
filler = b"".join(b"X-Filler-%03d: %s\r\n" % (i, b"x" * 1000) for i in range(70))
case("431-head-over-64k-many-fields", get_auth(filler) + SMUGGLED)
case("431-head-over-64k-one-field", get_auth(b"X-Big: " + b"x" * 70 * 1024 + CRLF) + SMUGGLED)
case("200-head-60k", get_auth(b"".join(b"X-Filler-%03d: %s\r\n" % (i, b"x" * 1000) for i in range(59)) + CLOSE))
# the body comes in the same write as a 1 KiB head: it is not part of the head
pad = b"X-Pad: " + b"p" * 800 + CRLF
for kib in (60, 100):
    big = chat_body(b"a" * kib * 1024)
    case("200-head-1k-body-%dk-one-write" % kib, post(pad + cl(wire_len(big)) + CLOSE, big))


def main():
    for name, data in cases.items():
        with open(os.path.join(HERE, name + ".http"), "wb") as f:
            f.write(data)
    print("wrote %d cases" % len(cases), file=sys.stderr)


if __name__ == "__main__":
    main()
