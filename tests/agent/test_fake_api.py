"""The scripted server speaks the Messages API as the real SDK expects it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.support.fake_messages_api import (FakeMessagesAPI, rate_limited, overloaded, reply, stream_error,
                                             text, thinking, tool_use)

# anthropic is imported by the tests that use it, not at collection: the SDK takes a second to import, and every
# xdist worker collects every module.
if TYPE_CHECKING:
    import anthropic

USER = [{"role": "user", "content": "hi"}]


def client(api: FakeMessagesAPI, retries: int = 0, key: str = "sk-test") -> anthropic.Anthropic:
    import anthropic

    return anthropic.Anthropic(api_key=key, base_url=api.url, max_retries=retries)


def test_stream_carries_text_thinking_and_tool_input_as_the_sdk_expects():
    script = [reply(thinking("let me look"), text("Reading the file now."),
                    tool_use("read_file", {"path": "kernel.cpp", "nested": {"a": [1, 2]}}))]
    with FakeMessagesAPI(script) as api:
        with client(api).messages.stream(model="claude-opus-4-6", max_tokens=100, messages=USER) as s:
            deltas = [e.text for e in s if e.type == "text"]
            msg = s.get_final_message()
    assert "".join(deltas) == "Reading the file now."
    assert len(deltas) > 1  # really streamed in pieces
    assert [b.type for b in msg.content] == ["thinking", "text", "tool_use"]
    assert msg.content[0].signature == "sig-fake"
    assert msg.content[2].input == {"path": "kernel.cpp", "nested": {"a": [1, 2]}}
    assert msg.stop_reason == "tool_use"
    assert msg.usage.output_tokens > 0 and msg.usage.cache_creation_input_tokens is not None
    assert api.requests[0]["stream"] is True and api.requests[0]["messages"] == USER


def test_overload_and_rate_limit_are_retried_by_the_sdk():
    with FakeMessagesAPI([overloaded(), rate_limited(), reply(text("ok"))]) as api:
        msg = client(api, retries=2).messages.create(model="m", max_tokens=10, messages=USER)
    assert msg.content[0].text == "ok"
    assert len(api.requests) == 3


def test_http_errors_carry_the_api_error_bodies():
    import anthropic

    with FakeMessagesAPI([overloaded()]) as api:
        with pytest.raises(anthropic.APIStatusError) as e:
            client(api).messages.create(model="m", max_tokens=10, messages=USER)
    assert e.value.status_code == 529
    assert e.value.body["error"]["type"] == "overloaded_error"


def test_error_event_mid_stream_is_raised_after_the_stream_started():
    import anthropic

    with FakeMessagesAPI([stream_error(text("partial answer"))]) as api:
        seen = []
        with pytest.raises(anthropic.APIStatusError) as e:
            with client(api, retries=2).messages.stream(model="m", max_tokens=10, messages=USER) as s:
                for ev in s:
                    if ev.type == "text":
                        seen.append(ev.text)
    assert "".join(seen) == "partial answer"
    assert "overloaded_error" in str(e.value)
    assert len(api.requests) == 1  # the SDK does not retry a stream that has started


def test_bad_key_and_unknown_model_are_refused_without_using_the_script():
    import anthropic

    with FakeMessagesAPI([reply(text("never sent"))], api_key="sk-right", models={"claude-opus-4-6"}) as api:
        with pytest.raises(anthropic.AuthenticationError):
            client(api, key="sk-wrong").messages.create(model="claude-opus-4-6", max_tokens=10, messages=USER)
        with pytest.raises(anthropic.NotFoundError) as e:
            client(api, key="sk-right").messages.create(model="claude-nope", max_tokens=10, messages=USER)
        assert "claude-nope" in str(e.value)
        assert api.remaining == 1 and len(api.rejected) == 2


def test_a_conversation_breaking_the_api_rules_is_a_400():
    import anthropic

    bad = [{"role": "user", "content": "a"},
           {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
           {"role": "user", "content": "no tool_result"}]
    with FakeMessagesAPI([reply(text("x"))]) as api:
        with pytest.raises(anthropic.BadRequestError) as e:
            client(api).messages.create(model="m", max_tokens=10, messages=bad)
    assert "tool_result" in str(e.value)


def test_exhausted_script_fails_loudly():
    import anthropic

    with FakeMessagesAPI([]) as api:
        with pytest.raises(anthropic.BadRequestError) as e:
            client(api, retries=2).messages.create(model="m", max_tokens=10, messages=USER)
    assert "script exhausted" in str(e.value)
