"""Which server the agent talks to (`--provider`, KS_PROVIDER, the config's `provider`), and what
its requests may carry.

- anthropic: Anthropic's API (ANTHROPIC_BASE_URL may point at a proxy of it), every feature:
  prompt caching, thinking.
- anthropic-compatible: any server speaking the Messages API at ANTHROPIC_BASE_URL (vLLM, Ollama,
  a LiteLLM proxy, llama.cpp). Such servers refuse fields they do not know, so a request carries
  only BASIC_FIELDS, without cache_control or thinking anywhere. The context window and prices
  come from the config.
- bedrock / vertex: the SDK's AnthropicBedrock / AnthropicVertex clients, with the clouds' usual
  credentials (AWS: the boto3 chain or AWS_BEARER_TOKEN_BEDROCK; Google: application default
  credentials). Their extras (boto3, google-auth) are optional in the SDK: a missing one is named.

The key (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN) is only ever checked for presence here.
"""

from __future__ import annotations

import copy
import importlib.util
import os
from typing import Any

from ks_tui.errors import KsError

PROVIDERS = ("anthropic", "anthropic-compatible", "bedrock", "vertex")
COMPATIBLE = "anthropic-compatible"
KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")

# The Messages API fields every compatible server takes.
BASIC_FIELDS = frozenset({"model", "messages", "max_tokens", "system", "tools", "tool_choice", "stream",
                          "temperature", "top_p", "top_k", "stop_sequences", "metadata"})
_THINKING_BLOCKS = ("thinking", "redacted_thinking")

# Where each provider's client reads its endpoint, for `ks doctor` and the messages below.
BASE_URL_VARS = {"anthropic": "ANTHROPIC_BASE_URL", COMPATIBLE: "ANTHROPIC_BASE_URL",
                 "bedrock": "ANTHROPIC_BEDROCK_BASE_URL", "vertex": "ANTHROPIC_VERTEX_BASE_URL"}


def has_key(env=None) -> bool:
    env = os.environ if env is None else env
    return any(env.get(v) for v in KEY_VARS)


def base_url(provider: str, env=None) -> str:
    """The endpoint the provider's client will use (its default when no variable sets it)."""
    env = os.environ if env is None else env
    url = env.get(BASE_URL_VARS[provider])
    if url:
        return url
    if provider == "bedrock":
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "<region>"
        return f"https://bedrock-runtime.{region}.amazonaws.com"
    if provider == "vertex":
        region = env.get("CLOUD_ML_REGION") or "<region>"
        return "https://aiplatform.googleapis.com/v1" if region == "global" else \
            f"https://{region}-aiplatform.googleapis.com/v1"
    if provider == COMPATIBLE:
        return "(none: set ANTHROPIC_BASE_URL)"
    return "https://api.anthropic.com"


def has_credentials(provider: str, env=None) -> bool:
    """Cheap: whether the agent can be tried at all (the screen starts in human mode otherwise).
    The clouds' credential chains are only walked when the client is made (`check`)."""
    return has_key(env) if provider in ("anthropic", COMPATIBLE) else True


def _missing_extra(package: str, extra: str, provider: str) -> KsError:
    return KsError(f"the {provider} provider needs the Python package {package}: "
                   f"python3 -m pip install 'anthropic[{extra}]'")


def check(provider: str, env=None) -> None:
    """What the provider needs before a session starts: a key, an endpoint, the SDK's extra, a
    region, the cloud's credentials. KsError (exit 2) naming what to set or install. Only the
    clouds' credential chains may go to the network: to the instance's metadata service, as boto3
    and google-auth do on a cloud machine without other credentials."""
    env = os.environ if env is None else env
    if provider in ("anthropic", COMPATIBLE):
        if provider == COMPATIBLE and not env.get("ANTHROPIC_BASE_URL"):
            raise KsError("the anthropic-compatible provider needs ANTHROPIC_BASE_URL (the server's address)",
                          hint="export ANTHROPIC_BASE_URL=http://localhost:8000  (vLLM, Ollama, LiteLLM, llama.cpp)")
        if not has_key(env):
            raise missing_key_error(provider)
        return
    if provider == "bedrock":
        for module, package in (("boto3", "boto3"), ("botocore", "botocore")):
            if importlib.util.find_spec(module) is None:
                raise _missing_extra(package, "bedrock", provider)
        import boto3
        import botocore.exceptions

        try:
            aws = boto3.Session(profile_name=env.get("AWS_PROFILE") or None)
        except botocore.exceptions.BotoCoreError as e:  # e.g. a profile that is not configured
            raise KsError(f"AWS: {e}") from None
        if not (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or aws.region_name):
            raise KsError("the bedrock provider needs an AWS region", hint="export AWS_REGION=us-east-1")
        if not env.get("AWS_BEARER_TOKEN_BEDROCK"):
            try:
                found = aws.get_credentials()
            except botocore.exceptions.BotoCoreError as e:
                raise KsError(f"AWS credentials: {e}") from None
            if found is None:
                raise KsError("no AWS credentials for the bedrock provider",
                              hint="aws configure (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
                                   "or AWS_BEARER_TOKEN_BEDROCK)")
        return
    if provider == "vertex":
        try:
            found = importlib.util.find_spec("google.auth") is not None
        except ModuleNotFoundError:  # no `google` namespace at all
            found = False
        if not found:
            raise _missing_extra("google-auth", "vertex", provider)
        if not env.get("CLOUD_ML_REGION"):
            raise KsError("the vertex provider needs a region", hint="export CLOUD_ML_REGION=us-east5 (or global)")
        vertex_project(env)
        return
    raise KsError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")


def vertex_project(env=None) -> str:
    """The Google Cloud project: ANTHROPIC_VERTEX_PROJECT_ID, else the one the application default
    credentials name (the SDK needs it before its first request). KsError without credentials."""
    import google.auth
    import google.auth.exceptions

    env = os.environ if env is None else env
    try:  # finds the credentials only; the token is fetched with the first request
        _, project = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except google.auth.exceptions.GoogleAuthError as e:
        raise KsError(f"no Google credentials for the vertex provider: {str(e).splitlines()[0]}",
                      hint="gcloud auth application-default login (or GOOGLE_APPLICATION_CREDENTIALS=FILE)") from None
    project = env.get("ANTHROPIC_VERTEX_PROJECT_ID") or project
    if not project:
        raise KsError("the vertex provider needs a Google Cloud project", hint="export ANTHROPIC_VERTEX_PROJECT_ID=my-project")
    return project


def missing_key_error(provider: str = "anthropic") -> KsError:
    if provider == COMPATIBLE:
        return KsError("no API key: set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN for the anthropic-compatible "
                       "server (any value if it takes none)", hint="export ANTHROPIC_AUTH_TOKEN=local")
    return KsError("no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to run the agent",
                   hint="export ANTHROPIC_API_KEY=sk-ant-...  (`ks tui` works without one, in human mode)")


def make_client(provider: str, max_retries: int, timeout: float):
    """The SDK client of this provider; KsError when what it needs is missing."""
    import anthropic

    check(provider)
    try:
        if provider == "bedrock":
            return anthropic.AnthropicBedrock(max_retries=max_retries, timeout=timeout)
        if provider == "vertex":
            return anthropic.AnthropicVertex(project_id=vertex_project(), max_retries=max_retries, timeout=timeout)
        return anthropic.Anthropic(max_retries=max_retries, timeout=timeout)
    except ValueError as e:  # e.g. no region after all: the SDK's own sentence
        raise KsError(f"{provider}: {e}") from None


def shape_request(provider: str, params: dict[str, Any]) -> dict[str, Any]:
    """The request as this provider takes it (a new dict; `params` is left as it is)."""
    if provider == COMPATIBLE:
        return basic_request(params)
    if provider in ("bedrock", "vertex") and "cache_control" in params:
        # The top-level (automatic) breakpoint is Anthropic's API's; the clouds take block
        # breakpoints, so the conversation's prefix is cached from its last block instead.
        params = dict(params)
        marker = params.pop("cache_control")
        messages = copy.deepcopy(params.get("messages") or [])
        last = messages[-1]["content"] if messages else None
        if isinstance(last, list) and last and isinstance(last[-1], dict) \
                and last[-1].get("type") not in _THINKING_BLOCKS:
            last[-1]["cache_control"] = marker
        params["messages"] = messages
    return params


def basic_request(params: dict[str, Any]) -> dict[str, Any]:
    """Only BASIC_FIELDS, with every cache_control and every thinking block removed."""
    return {k: _plain(v) for k, v in params.items() if k in BASIC_FIELDS}


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_plain(v) for v in obj if not (isinstance(v, dict) and v.get("type") in _THINKING_BLOCKS)]
    return obj


def model_limits(client, provider: str, model: str) -> tuple[int | None, int | None]:
    """(context window, output limit) as the server's models endpoint states them, where it has
    one (Anthropic's API; a compatible server may): (None, None) when it does not say."""
    if provider not in ("anthropic", COMPATIBLE):
        return None, None  # the clouds' clients have no models endpoint
    try:
        info = client.with_options(max_retries=0, timeout=10.0).models.retrieve(model)
    except Exception:  # 404 on servers without the endpoint, a refused key, an odd body: the config decides
        return None, None
    window, out = getattr(info, "max_input_tokens", None), getattr(info, "max_tokens", None)
    ok = lambda v: v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None  # noqa: E731
    return ok(window), ok(out)


def explain_refusal(provider: str, message: str) -> str:
    """A refusal from an anthropic-compatible server, with what the agent needs from it."""
    if provider != COMPATIBLE:
        return message
    where = os.environ.get("ANTHROPIC_BASE_URL", "")
    text = f"the server at {where}: {message}"
    if "tool" in message.lower():
        text += " (the agent works through tools: serve a model with tool use / function calling enabled)"
    return text
