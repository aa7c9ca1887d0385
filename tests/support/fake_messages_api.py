"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages API, for tests.

It answers `POST /v1/messages` (streaming as server-sent events, or one JSON body when the
request does not ask for a stream) from a script: a list of steps, each a reply the
"model" gives or a fault the API can produce. Every request body is recorded, so a test can
assert exactly what the client sent. The real `anthropic` SDK reaches it through
`ANTHROPIC_BASE_URL`:

    script = [reply(text("Reading."), tool_use("read_file", {"path": "kernel.cpp"})),
              overloaded(),                       # HTTP 529, the SDK retries it
              reply(text("Done."))]
    with FakeMessagesAPI(script) as api:
        os.environ["ANTHROPIC_BASE_URL"] = api.url
        ...
        assert api.requests[0]["messages"][0]["role"] == "user"

A step may also be a callable `step(request_body) -> Reply | Fault`, to answer from what the
client sent (for instance to echo a file the agent read). Requests with a wrong API key or
an unknown model are answered 401 / 404 without consuming a step, as the real API does;
so is a prompt longer than `context_window` tokens (counted as `usage` counts them: four
characters a token), with the API's 400 "prompt is too long: N tokens > M maximum".
When the script runs out, the server answers HTTP 400 with `x-should-retry: false`, so an
over-long session fails loudly instead of hanging.

Other servers the agent can be pointed at (ks_tui/agent/providers.py):
- `strict=True` behaves like a Messages-API-compatible server (vLLM, Ollama, LiteLLM): HTTP 400
  for any request field outside BASIC_FIELDS, and for cache_control or thinking anywhere;
  `refuse_tools=True` answers 400 to any request with tools, as a server without tool use does.
- `GET /v1/models/{id}` answers 404 (as servers without the endpoint do) unless `model_info`
  gives the limits to state, e.g. {"max_input_tokens": 8000, "max_tokens": 2048}.
- Bedrock's paths (`/model/{id}/invoke` and `/invoke-with-response-stream`, the stream in AWS's
  binary event-stream framing) and Vertex's (`/projects/{p}/locations/{r}/publishers/anthropic/
  models/{id}:rawPredict` and `:streamRawPredict`) are served from the same script; `paths`
  records the path of every request that reached a step. `POST /token` answers an OAuth access
  token, for a Google service-account file whose token_uri points at this server.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import threading
import urllib.parse
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

# ---------------------------------------------------------------- script building blocks


@dataclass
class Block:
    """One content block of a scripted reply: text, tool_use or thinking."""

    type: str
    text: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    signature: str = ""


def text(s: str) -> Block:
    return Block("text", text=s)


def tool_use(name: str, input: dict[str, Any], id: str = "") -> Block:
    return Block("tool_use", name=name, input=input, id=id)


def thinking(s: str, signature: str = "sig-fake") -> Block:
    return Block("thinking", text=s, signature=signature)


@dataclass
class Reply:
    blocks: list[Block]
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=dict)  # overrides the computed usage
    # Fault injection inside an otherwise normal stream: after this many blocks, send
    # `event: error` (error_type) or drop the connection, instead of finishing.
    error_after_blocks: int | None = None
    error_type: str = "overloaded_error"
    drop_after_blocks: int | None = None
    slow_s: float = 0.0  # pause before each block, to stream slowly (for stop/pause tests)


def reply(*blocks: Block, stop_reason: str | None = None, **kw) -> Reply:
    if stop_reason is None:
        stop_reason = "tool_use" if any(b.type == "tool_use" for b in blocks) else "end_turn"
    return Reply(list(blocks), stop_reason=stop_reason, **kw)


@dataclass
class Fault:
    """An HTTP error answer (before any stream starts), or a request held open."""

    status: int = 500
    error_type: str = "api_error"
    message: str = "Internal server error"
    retry_after_ms: int | None = 1  # the real API sends retry-after; keep test backoff short
    hang: bool = False  # hold the request until the server closes (for kill tests)


def overloaded() -> Fault:
    return Fault(529, "overloaded_error", "Overloaded")


def rate_limited() -> Fault:
    return Fault(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")


def server_error() -> Fault:
    return Fault(500, "api_error", "Internal server error")


def stream_error(*blocks: Block, after: int | None = None, error_type: str = "overloaded_error") -> Reply:
    """A stream that starts, sends `blocks`, then fails with `event: error`."""
    return Reply(list(blocks), stop_reason="end_turn",
                 error_after_blocks=len(blocks) if after is None else after, error_type=error_type)


def hang() -> Fault:
    return Fault(hang=True)


Step = Union[Reply, Fault, Callable[[dict], Union[Reply, Fault]]]

# ---------------------------------------------------------------- the server


class FakeMessagesAPI:
    """Scripted Messages API on 127.0.0.1:<free port>. Use as a context manager."""

    def __init__(self, script: list[Step] | None = None, *, api_key: str | None = None,
                 models: set[str] | None = None, model_echo: str | None = None,
                 context_window: int | None = None, strict: bool = False, refuse_tools: bool = False,
                 model_info: dict[str, int] | None = None):
        self.script: list[Step] = list(script or [])
        self.strict = strict
        self.refuse_tools = refuse_tools
        self.model_info = model_info
        self.paths: list[str] = []  # the path of every request that reached a step
        self.model_lookups: list[str] = []  # the models asked for at GET /v1/models/{id}
        self.token_requests: list[str] = []  # bodies POSTed to /token
        self.api_key = api_key  # None: accept any key
        self.models = models  # None: accept any model
        self.model_echo = model_echo
        self.context_window = context_window  # None: any prompt fits
        self.requests: list[dict] = []  # every POST body that reached a step, in order
        self.rejected: list[dict] = []  # bodies answered 401/404/400 without a step
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._next = 0
        self._served = 0
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def __enter__(self) -> "FakeMessagesAPI":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        api = self

        class Handler(_Handler):
            owner = api

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll: shutdown() waits up to one poll interval (0.5 s by default), at every test's teardown.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-messages-api", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- test helpers
    def add(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self.script) - self._next

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> bool:
        """Block until at least n requests reached a step."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= n, timeout)

    # -- used by the handler
    def _take_step(self, body: dict, headers: dict[str, str], path: str = "/v1/messages") -> Step | None:
        with self._arrived:
            self.paths.append(path)
            self.requests.append(body)
            self.headers.append(headers)
            self._arrived.notify_all()
            if self._next >= len(self.script):
                return None
            step = self.script[self._next]
            self._next += 1
        return step(body) if callable(step) else step

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_fake{next(self._ids):04d}"


class _Handler(BaseHTTPRequestHandler):
    owner: FakeMessagesAPI
    # HTTP/1.0: one response per connection, so a stream ends when the socket closes.
    protocol_version = "HTTP/1.0"

    def log_message(self, format, *args):  # keep test output quiet
        pass

    # -- plumbing
    def _json(self, status: int, payload: dict, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", self.owner._new_id("req"))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, error_type: str, message: str, extra: dict[str, str] | None = None) -> None:
        self._json(status, {"type": "error", "error": {"type": error_type, "message": message},
                            "request_id": self.owner._new_id("req")}, extra)

    def _sse(self, event: str, data: dict) -> None:
        if getattr(self, "_bedrock", False):
            self.wfile.write(_eventstream_chunk(data))
        else:
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    # -- the endpoint
    def do_GET(self):  # noqa: N802 (http.server naming)
        path = self.path.split("?")[0]
        if not path.startswith("/v1/models/"):
            return self._error(404, "not_found_error", f"Not found: {self.path}")
        model = urllib.parse.unquote(path.removeprefix("/v1/models/"))
        self.owner.model_lookups.append(model)
        if self.owner.model_info is None:
            return self._error(404, "not_found_error", f"Not found: {self.path}")
        self._json(200, {"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z",
                         "lifecycle": "active", **self.owner.model_info})

    def do_POST(self):  # noqa: N802 (http.server naming)
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?")[0]
        self._bedrock = False
        if path == "/token":  # an OAuth token endpoint, for Google credentials whose token_uri points here
            self.owner.token_requests.append(raw.decode(errors="replace"))
            return self._json(200, {"access_token": "ya29.fake-token", "expires_in": 3600, "token_type": "Bearer"})
        cloud = _cloud_route(path)
        if cloud is None and path != "/v1/messages":
            return self._error(404, "not_found_error", f"Not found: {self.path}")
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as e:
            return self._error(400, "invalid_request_error", f"body is not JSON: {e}")
        headers = {k.lower(): v for k, v in self.headers.items()}
        api = self.owner
        if cloud is not None:
            # The clouds name the model in the path and the API version in the body.
            cloud_name, model_in_path, streaming = cloud
            if "model" in body or not body.get("anthropic_version"):
                return self._error(400, "invalid_request_error",
                                   f"{cloud_name}: the model goes in the path and anthropic_version in the body")
            body = {**body, "model": model_in_path, **({"stream": True} if streaming else {})}
            self._bedrock = cloud_name == "bedrock"
        if api.strict:
            problem = strict_problem(body)
            if problem:
                api.rejected.append(body)
                return self._error(400, "invalid_request_error", problem, {"x-should-retry": "false"})
        if api.refuse_tools and body.get("tools"):
            api.rejected.append(body)
            return self._error(400, "invalid_request_error", "tools: this model does not support tool use",
                               {"x-should-retry": "false"})
        # SDKs send the key as x-api-key or (newer ones) as a bearer token.
        bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if api.api_key is not None and api.api_key not in (headers.get("x-api-key"), bearer):
            api.rejected.append(body)
            return self._error(401, "authentication_error", "invalid x-api-key")
        model = body.get("model")
        if api.models is not None and model not in api.models:
            api.rejected.append(body)
            return self._error(404, "not_found_error", f"model: {model}")
        problem = validate_request(body)
        if problem:
            api.rejected.append(body)
            return self._error(400, "invalid_request_error", problem, {"x-should-retry": "false"})
        prompt = prompt_tokens(body)
        if api.context_window is not None and prompt > api.context_window:
            api.rejected.append(body)
            return self._error(400, "invalid_request_error",
                               f"prompt is too long: {prompt} tokens > {api.context_window} maximum",
                               {"x-should-retry": "false"})

        step = api._take_step(body, headers, path)
        if step is None:
            return self._error(400, "invalid_request_error", "fake API: script exhausted",
                               {"x-should-retry": "false"})
        if isinstance(step, Fault):
            if step.hang:
                api._closing.wait()
                return
            extra = {} if step.retry_after_ms is None else {"retry-after-ms": str(step.retry_after_ms)}
            return self._error(step.status, step.error_type, step.message, extra)
        if body.get("stream"):
            self._stream(step, body)
        else:
            self._json(200, _message_json(api, step, body, with_content=True))

    def _stream(self, r: Reply, body: dict) -> None:
        api = self.owner
        self.send_response(200)
        self.send_header("content-type", "application/vnd.amazon.eventstream" if self._bedrock else "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", api._new_id("req"))
        self.end_headers()
        msg = _message_json(api, r, body, with_content=False)
        usage = msg.pop("_final_usage")
        start_usage = dict(msg["usage"], output_tokens=1)
        self._sse("message_start", {"type": "message_start", "message": {**msg, "usage": start_usage}})
        self._sse("ping", {"type": "ping"})
        for i, b in enumerate(r.blocks):
            if r.error_after_blocks is not None and i >= r.error_after_blocks:
                break
            if r.drop_after_blocks is not None and i >= r.drop_after_blocks:
                self.wfile.flush()
                self.connection.shutdown(2)  # a dropped connection mid-stream
                return
            if r.slow_s and self.owner._closing.wait(r.slow_s):
                return
            try:
                self._block(i, b)
            except (BrokenPipeError, ConnectionResetError):  # the client hung up (a stop)
                return
        if r.drop_after_blocks is not None and r.drop_after_blocks >= len(r.blocks):
            self.connection.shutdown(2)
            return
        if r.error_after_blocks is not None:
            message = _ERROR_TEXT.get(r.error_type, r.error_type)
            self._sse("error", {"type": "error", "error": {"type": r.error_type, "message": message}})
            return
        self._sse("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": r.stop_reason, "stop_sequence": _stop_seq(r, body)},
                                    "usage": usage})
        self._sse("message_stop", {"type": "message_stop"})

    def _block(self, i: int, b: Block) -> None:
        if b.type == "text":
            self._sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
            for piece in _chunks(b.text, 12):
                self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                  "delta": {"type": "text_delta", "text": piece}})
        elif b.type == "thinking":
            self._sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            for piece in _chunks(b.text, 20):
                self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                  "delta": {"type": "thinking_delta", "thinking": piece}})
            self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "signature_delta", "signature": b.signature}})
        elif b.type == "tool_use":
            self._sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "tool_use", "id": b.id, "name": b.name, "input": {}}})
            # The API streams tool input as partial JSON; split it mid-token to exercise the joiner.
            for piece in _chunks(json.dumps(b.input), 16):
                self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                  "delta": {"type": "input_json_delta", "partial_json": piece}})
        else:
            raise ValueError(f"unknown block type {b.type}")
        self._sse("content_block_stop", {"type": "content_block_stop", "index": i})


_ERROR_TEXT = {"overloaded_error": "Overloaded", "api_error": "Internal server error",
               "rate_limit_error": "Rate limited"}


def _chunks(s: str, n: int) -> list[str]:
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


def _stop_seq(r: Reply, body: dict) -> str | None:
    if r.stop_reason == "stop_sequence":
        seqs = body.get("stop_sequences") or ["<stop>"]
        return seqs[0]
    return None


def _approx_tokens(obj: Any) -> int:
    """A rough, deterministic token count (4 characters a token), enough for usage fields."""
    return max(1, len(json.dumps(obj)) // 4)


def prompt_tokens(body: dict) -> int:
    """The request's prompt in tokens, as this server counts them (system, tools, messages)."""
    return _approx_tokens([body.get("system"), body.get("tools")]) + _approx_tokens(body.get("messages"))


def _message_json(api: FakeMessagesAPI, r: Reply, body: dict, with_content: bool) -> dict:
    for b in r.blocks:
        if b.type == "tool_use" and not b.id:
            b.id = api._new_id("toolu")
    # Usage as the real API reports it: with caching, the cached prefix is read (or written)
    # instead of counted as input; here the whole system+tools prefix counts as cacheable.
    prefix = _approx_tokens([body.get("system"), body.get("tools")])
    rest = _approx_tokens(body.get("messages"))
    api._served += 1
    seen_before = api._served > 1  # the first reply writes the cache, later ones read it
    usage = {"input_tokens": rest, "output_tokens": sum(_approx_tokens(b.text or b.input) for b in r.blocks),
             "cache_creation_input_tokens": 0 if seen_before else prefix,
             "cache_read_input_tokens": prefix if seen_before else 0}
    usage.update(r.usage)
    content = [_block_json(b) for b in r.blocks]
    msg = {"id": api._new_id("msg"), "type": "message", "role": "assistant",
           "model": api.model_echo or body.get("model", "claude-fake"),
           "content": content if with_content else [],
           "stop_reason": r.stop_reason if with_content else None,
           "stop_sequence": _stop_seq(r, body) if with_content else None,
           "usage": usage}
    if not with_content:
        msg["_final_usage"] = usage
    return msg


def _block_json(b: Block) -> dict:
    if b.type == "text":
        return {"type": "text", "text": b.text}
    if b.type == "thinking":
        return {"type": "thinking", "thinking": b.text, "signature": b.signature}
    return {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}


def validate_request(body: dict) -> str | None:
    """The checks the real API makes that a client bug would trip; 400 with the reason."""
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    msgs = body["messages"]
    if not msgs or msgs[0].get("role") != "user":
        return "messages: first message must use the user role"
    for a, b in zip(msgs, msgs[1:]):
        if a.get("role") == b.get("role"):
            return "messages: roles must alternate between user and assistant"
    for i, m in enumerate(msgs[:-1]):
        if not m.get("content"):
            return f"messages.{i}: all messages must have non-empty content except for the optional final assistant message"
    for i, m in enumerate(msgs):
        for j, c in enumerate([] if isinstance(m.get("content"), str) else m.get("content") or []):
            if c.get("type") == "text" and not c.get("text"):
                return f"messages.{i}.content.{j}: text content blocks must be non-empty"
            if c.get("type") == "text" and not c["text"].strip():
                return f"messages.{i}.content.{j}: text content blocks must contain non-whitespace text"
    # Every tool_use must be answered by a tool_result in the next user message.
    for i, m in enumerate(msgs):
        if m.get("role") != "assistant" or isinstance(m.get("content"), str):
            continue
        ids = [c["id"] for c in m["content"] if c.get("type") == "tool_use"]
        if not ids:
            continue
        if i + 1 >= len(msgs):
            return "messages: tool_use ids were found without tool_result blocks immediately after"
        nxt = msgs[i + 1]["content"]
        got = [] if isinstance(nxt, str) else [c.get("tool_use_id") for c in nxt if c.get("type") == "tool_result"]
        if sorted(got) != sorted(ids):
            return f"messages.{i + 1}: tool_result blocks do not match tool_use ids {ids}"
    breakpoints = _count_cache_control([body.get("tools"), body.get("system"), msgs])
    if body.get("cache_control"):
        breakpoints += 1
    if breakpoints > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
    return None


def _count_cache_control(obj: Any) -> int:
    if isinstance(obj, dict):
        return int("cache_control" in obj) + sum(_count_cache_control(v) for k, v in obj.items() if k != "cache_control")
    if isinstance(obj, list):
        return sum(_count_cache_control(v) for v in obj)
    return 0


# ---------------------------------------------------------------- other servers' shapes

# The fields a Messages-API-compatible server takes (as ks_tui/agent/providers.py sends them).
BASIC_FIELDS = frozenset({"model", "messages", "max_tokens", "system", "tools", "tool_choice", "stream",
                          "temperature", "top_p", "top_k", "stop_sequences", "metadata"})


def strict_problem(body: dict) -> str | None:
    """What a strict compatible server refuses: unknown fields, cache_control, thinking."""
    extra = sorted(set(body) - BASIC_FIELDS)
    if extra:
        return f"{extra[0]}: Extra inputs are not permitted"
    for where, key in _keys_anywhere(body):
        if key in ("cache_control", "thinking"):
            return f"{where}.{key}: Extra inputs are not permitted"
    for where, block_type in _block_types(body.get("messages")):
        if block_type in ("thinking", "redacted_thinking"):
            return f"{where}.type: {block_type!r} blocks are not supported"
    return None


def _keys_anywhere(obj, where: str = "body"):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield where, k
            yield from _keys_anywhere(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _keys_anywhere(v, f"{where}.{i}")


def _block_types(messages):
    for i, m in enumerate(messages or []):
        content = m.get("content") if isinstance(m, dict) else None
        for j, b in enumerate(content if isinstance(content, list) else []):
            if isinstance(b, dict):
                yield f"messages.{i}.content.{j}", b.get("type")


_BEDROCK = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>invoke|invoke-with-response-stream)$")
_VERTEX = re.compile(r"^/(?:v1/)?projects/[^/]+/locations/[^/]+/publishers/anthropic/models/"
                     r"(?P<model>[^/:]+):(?P<op>rawPredict|streamRawPredict)$")


def _cloud_route(path: str) -> tuple[str, str, bool] | None:
    """(cloud, model, streaming) for a Bedrock or Vertex path, else None."""
    m = _BEDROCK.match(path)
    if m:
        return "bedrock", urllib.parse.unquote(m["model"]), m["op"] == "invoke-with-response-stream"
    m = _VERTEX.match(path)
    if m:
        return "vertex", urllib.parse.unquote(m["model"]), m["op"] == "streamRawPredict"
    return None


def _eventstream_chunk(event: dict) -> bytes:
    """One Bedrock stream event: an AWS event-stream message whose payload carries the Messages
    event as base64 `bytes` (prelude and message CRC32s as botocore checks them)."""
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    head = b"".join(bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v)) + v.encode()
                    for k, v in headers.items())
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode()}).encode()
    prelude = struct.pack(">II", 12 + len(head) + len(payload) + 4, len(head))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + payload
    return message + struct.pack(">I", zlib.crc32(message))
