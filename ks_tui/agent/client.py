"""The anthropic client, built from our config, and API errors turned into one clear line."""

from __future__ import annotations

import re

from ks_tui.config import Config
from ks_tui.errors import KsError

from ks_tui.agent import providers
from ks_tui.agent.providers import KEY_VARS, missing_key_error  # noqa: F401 (re-exported)


def has_api_key(env=None) -> bool:
    return providers.has_key(env)


def make_client(cfg: Config):
    """A synchronous client of the configured provider (agent/providers.py). The SDK reads the
    key and the base URL from the environment and retries 408/409/429/5xx and connection errors
    with backoff itself."""
    return providers.make_client(cfg.provider, cfg.api_max_retries, cfg.api_timeout_s)


class FatalApiError(KsError):
    """An API answer that retrying cannot fix (bad key, unknown model, bad request)."""


def describe_api_error(err: Exception, model: str) -> tuple[str, bool]:
    """(one-line message, retryable) for an exception raised by the SDK."""
    import anthropic

    if isinstance(err, anthropic.AuthenticationError):
        return "the API key was rejected (401): check ANTHROPIC_API_KEY", False
    if isinstance(err, anthropic.PermissionDeniedError):
        return f"the API key may not use this model or feature (403): {_detail(err)}", False
    if isinstance(err, anthropic.NotFoundError):
        return f"unknown model {model!r} (404): choose another with --model or `model` in config.toml", False
    if isinstance(err, anthropic.APIStatusError):
        code = err.status_code
        if code < 400:
            # An `event: error` in the middle of a stream keeps the stream's 200 and the bare
            # class (anthropic-sdk-python#1918): only its type says whether a retry can help.
            retry = _status(err) not in REFUSED_TYPES
        else:  # after the SDK's own retries of 408/409/429/5xx
            retry = code in (408, 409, 429) or code >= 500
        if not retry:
            return f"the API refused the request ({code if code >= 400 else _status(err)}): {_detail(err)}", False
        return f"API error {_status(err)}: {_detail(err)}", True
    if isinstance(err, anthropic.APIConnectionError):
        return f"cannot reach the API: {err}", True
    return f"{type(err).__name__}: {err}", True


# Error types that a second try of the same request cannot fix.
REFUSED_TYPES = {"invalid_request_error", "authentication_error", "billing_error", "permission_error",
                 "not_found_error"}


def _status(err) -> str:
    """The error's type from its body (e.g. overloaded_error), else its HTTP status."""
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("type", str(err.status_code))
    return str(getattr(err, "status_code", "?"))


def _detail(err) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("message", "") or str(err)
    return str(getattr(err, "message", err))


_TOO_LONG = re.compile(r"prompt is too long:\s*(\d+)\s*tokens\s*>\s*(\d+)")


def prompt_too_long(err: Exception) -> tuple[int, int] | None:
    """(tokens, maximum) when the API refused the request because the prompt does not fit
    the context window (400 "prompt is too long: 203284 tokens > 200000 maximum")."""
    import anthropic

    if not isinstance(err, anthropic.APIStatusError):
        return None
    m = _TOO_LONG.search(_detail(err))
    return (int(m.group(1)), int(m.group(2))) if m else None
