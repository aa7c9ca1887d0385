"""Provider profiles (ks_tui/agent/providers.py): `ks run` against a strict Messages-API-compatible
server, Bedrock's and Vertex's request paths through the SDK's own clients, the limits a models
endpoint states, prices for every model the SDK lists, and the bad inputs, each one clear line."""

from __future__ import annotations

import json
import subprocess
import sys
import typing

import pytest

from ks_tui.agent import providers
from ks_tui.config import Config, load_config
from ks_tui.errors import KsError
from tests.support.fake_messages_api import BASIC_FIELDS, reply, strict_problem, text, tool_use

pytestmark = pytest.mark.timeout(180)

OLD = "std::vector<float> acc(d);"


def ks(ws, *args: str, timeout: float = 120, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ks_tui", "--workspace", str(ws), *args], env=env,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def last_line(out: subprocess.CompletedProcess) -> str:
    return out.stderr.strip().splitlines()[-1]


def edit_then_check() -> list:
    return [reply(text("Editing."), tool_use("edit_file", {"path": "kernel.cpp", "old_string": OLD,
                                                          "new_string": OLD + "  // one row"})),
            reply(tool_use("run_harness", {"mode": "check", "quick": True})),
            reply(text("Done."))]


@pytest.mark.slow
def test_a_headless_session_completes_against_a_strict_compatible_server(workspace, fake_api, capsys):
    api = fake_api(edit_then_check(), strict=True, model_info={"max_input_tokens": 60_000, "max_tokens": 4096})
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--max-turns", "3",
             "--provider", "anthropic-compatible", "--model", "qwen3-coder")
    assert out.returncode == 0, out.stderr
    assert not api.rejected, api.rejected  # nothing the strict server refused
    assert len(api.requests) == 3 and api.paths == ["/v1/messages"] * 3
    for body in api.requests:
        assert set(body) <= BASIC_FIELDS and strict_problem(body) is None
        assert body["model"] == "qwen3-coder" and body["tools"] and body["stream"] is True
        assert body["max_tokens"] == 4096  # the model's output limit from GET /v1/models/{id}, under the config's 16000
    assert api.model_lookups == ["qwen3-coder"]
    assert "of 60000" in out.stdout  # the window the models endpoint states, under the config's 200000
    assert "via anthropic-compatible" in out.stdout
    assert "== attempt 1 (agent): correct 4/4" in out.stdout
    assert "cost: unpriced" in out.stdout and "Traceback" not in out.stderr
    from ks_tui.cli import main

    assert main(["--workspace", str(workspace), "report"]) == 0
    assert "cost: unpriced (no price for the model in the config)" in capsys.readouterr().out


@pytest.mark.slow
def test_the_anthropic_profile_still_caches_and_thinks(workspace, fake_api):
    api = fake_api([reply(text("Hi."))])
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--max-turns", "1")
    assert out.returncode == 0, out.stderr
    [body] = api.requests
    assert body["cache_control"] == {"type": "ephemeral"} and body["thinking"] == {"type": "adaptive"}
    assert "cache_control" in body["system"][0] and "cache_control" in body["tools"][-1]
    assert strict_problem(body) is not None  # so the strict server above does refuse what it should


def test_the_compatible_shape_drops_cache_control_and_thinking_everywhere():
    params = {"model": "m", "max_tokens": 10, "cache_control": {"type": "ephemeral"}, "thinking": {"type": "adaptive"},
              "output_config": {"effort": "high"}, "system": [{"type": "text", "text": "s", "cache_control": {}}],
              "tools": [{"name": "t", "input_schema": {"type": "object"}, "cache_control": {}}],
              "messages": [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {}}]},
                           {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"},
                                                             {"type": "text", "text": "b"}]}]}
    shaped = providers.shape_request("anthropic-compatible", params)
    assert strict_problem(shaped) is None
    assert shaped["messages"][1]["content"] == [{"type": "text", "text": "b"}]
    assert "cache_control" in params["system"][0]  # the caller's request is left as it was
    # The clouds take block breakpoints only: the top-level one moves to the conversation's last block.
    cloud = providers.shape_request("bedrock", {k: v for k, v in params.items() if k != "output_config"})
    assert "cache_control" not in cloud and cloud["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in params["messages"][-1]["content"][-1]


@pytest.mark.slow
def test_a_compatible_server_without_tool_use_is_one_clear_line(workspace, fake_api):
    api = fake_api([reply(text("never"))], refuse_tools=True)
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--max-turns", "2",
             "--provider", "anthropic-compatible")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line = last_line(out)
    assert line.startswith(f"ks: error: the server at {api.url}: the API refused the request (400): tools:")
    assert "tool use" in line and len(api.rejected) == 1  # refused once, not retried
    # a start that failed before any attempt leaves no empty session behind (docs/attempts.md, `ks sessions prune`)
    assert not [p for p in (workspace / "sessions").iterdir() if p.is_dir() and p.name != "examples"]


def test_provider_bad_inputs_are_one_line_exit_2(workspace, base_env, capsys):
    from ks_tui.cli import main

    def run(*args: str) -> str:
        capsys.readouterr()
        assert main(["--workspace", str(workspace), "run", "attention_cpu", "--headless", *args]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        return err.strip()

    assert run("--provider", "openai") == (
        "ks: error: --provider: unknown provider 'openai' (known: anthropic, anthropic-compatible, bedrock, vertex)")
    base_env.setenv("KS_PROVIDER", "azure")
    assert run().startswith("ks: error: KS_PROVIDER: unknown provider 'azure'")
    base_env.delenv("KS_PROVIDER")
    (workspace / ".ks").mkdir()
    (workspace / ".ks" / "config.toml").write_text('provider = "anthropic-compatible"\n')
    assert run().splitlines()[0] == ("ks: error: the anthropic-compatible provider needs ANTHROPIC_BASE_URL "
                                     "(the server's address)")
    base_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert run().splitlines()[0].startswith("ks: error: no API key: set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN")
    base_env.setenv("ANTHROPIC_AUTH_TOKEN", "local")
    base_env.setenv("KS_MODEL", "qwen3-coder")
    err = run("--max-cost", "1")
    assert len(err.splitlines()) == 1 and err.startswith("ks: error: --max-cost cannot be kept: qwen3-coder is unpriced")
    assert not (workspace / "sessions").exists()  # nothing was started by any of them
    capsys.readouterr()
    # Bare `ks` (the screen) and `ks tui` take it too, and refuse before the screen would open.
    assert main(["--workspace", str(workspace), "--provider", "nope"]) == 2
    assert main(["--workspace", str(workspace), "tui", "--provider", "nope"]) == 2
    assert capsys.readouterr().err.count("ks: error: --provider: unknown provider 'nope'") == 2


@pytest.mark.slow
def test_bedrock_runs_a_turn_through_the_sdk_client_on_its_own_paths(workspace, fake_api, base_env):
    pytest.importorskip("botocore")
    api = fake_api([reply(text("Reading."), tool_use("read_file", {"path": "kernel.cpp"})), reply(text("Done."))])
    base_env.delenv("ANTHROPIC_API_KEY")
    base_env.setenv("ANTHROPIC_BEDROCK_BASE_URL", api.url)
    base_env.setenv("AWS_REGION", "us-east-1")
    # Static keys stop the credential chain before the metadata service: nothing leaves 127.0.0.1.
    base_env.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    base_env.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    base_env.setenv("AWS_EC2_METADATA_DISABLED", "true")
    model = "us.anthropic.claude-opus-4-6-v1"
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--max-turns", "2",
             "--provider", "bedrock", "--model", model)
    assert out.returncode == 0, out.stderr
    assert api.paths == [f"/model/{model}/invoke-with-response-stream"] * 2
    assert all(h["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") for h in api.headers)
    assert api.requests[1]["messages"][1]["content"][1]["name"] == "read_file"  # the stream was read whole
    assert api.requests[0]["thinking"] == {"type": "adaptive"} and "cache_control" in api.requests[0]["system"][0]
    assert "Done." in out.stdout and "cost: $" in out.stdout  # Bedrock's id is priced as the model it names


def test_bedrock_and_vertex_say_what_is_missing(workspace, base_env, tmp_path, monkeypatch, capsys):
    base_env.setenv("AWS_EC2_METADATA_DISABLED", "true")
    base_env.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    base_env.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                "AWS_BEARER_TOKEN_BEDROCK", "CLOUD_ML_REGION"):
        base_env.delenv(var, raising=False)
    if providers.importlib.util.find_spec("boto3") is not None:
        with pytest.raises(KsError, match="needs an AWS region"):
            providers.check("bedrock")
        base_env.setenv("AWS_REGION", "us-east-1")
        with pytest.raises(KsError, match="no AWS credentials"):
            providers.check("bedrock")
    try:
        has_google = providers.importlib.util.find_spec("google.auth") is not None
    except ModuleNotFoundError:
        has_google = False
    if has_google:
        base_env.setenv("CLOUD_ML_REGION", "us-east5")
        base_env.setenv("NO_GCE_CHECK", "True")
        base_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
        with pytest.raises(KsError, match="no Google credentials for the vertex provider"):
            providers.check("vertex")
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if the SDK's bedrock extra were not installed
    monkeypatch.setattr(providers.importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] in ("boto3", "google") else object())
    with pytest.raises(KsError) as e:
        providers.check("bedrock")
    assert str(e.value) == "the bedrock provider needs the Python package boto3: python3 -m pip install 'anthropic[bedrock]'"
    with pytest.raises(KsError, match="needs the Python package google-auth: python3 -m pip install 'anthropic"):
        providers.check("vertex")
    from ks_tui.cli import main

    capsys.readouterr()
    assert main(["--workspace", str(workspace), "run", "attention_cpu", "--headless", "--provider", "vertex"]) == 2
    assert capsys.readouterr().err == ("ks: error: the vertex provider needs the Python package google-auth: "
                                       "python3 -m pip install 'anthropic[vertex]'\n")
    assert not (workspace / "sessions").exists()


@pytest.mark.slow
def test_vertex_runs_a_turn_with_google_credentials_from_a_local_token_endpoint(workspace, fake_api, base_env,
                                                                                 tmp_path):
    """The SDK's Vertex client with real application default credentials: a service-account file
    (a key made here) whose token endpoint is the stand-in, so nothing leaves 127.0.0.1."""
    pytest.importorskip("google.auth")
    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    from cryptography.hazmat.primitives.asymmetric import rsa

    api = fake_api([reply(text("Hello from Vertex."))])
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    account = tmp_path / "account.json"
    account.write_text(json.dumps({"type": "service_account", "project_id": "proj", "private_key_id": "k1",
                                   "private_key": pem, "client_email": "ks@proj.iam.gserviceaccount.com",
                                   "client_id": "1", "token_uri": f"{api.url}/token"}))
    base_env.delenv("ANTHROPIC_API_KEY")
    base_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(account))
    base_env.setenv("NO_GCE_CHECK", "True")  # never probe a metadata server
    base_env.setenv("ANTHROPIC_VERTEX_BASE_URL", api.url)
    base_env.setenv("CLOUD_ML_REGION", "us-east5")
    out = ks(workspace, "run", "attention_cpu", "--headless", "--autonomous", "--max-turns", "1",
             "--provider", "vertex")
    assert out.returncode == 0, out.stderr
    assert api.paths == ["/projects/proj/locations/us-east5/publishers/anthropic/models/claude-opus-4-6:streamRawPredict"]
    assert api.headers[0]["authorization"] == "Bearer ya29.fake-token"
    assert "jwt-bearer" in api.token_requests[0]  # the service account's signed grant
    [body] = api.requests
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}  # a block breakpoint
    assert "Hello from Vertex." in out.stdout and "via vertex" in out.stdout


def test_every_model_the_sdk_lists_has_a_price():
    from anthropic.types.model_param import ModelParam

    names = [n for arg in typing.get_args(ModelParam) for n in typing.get_args(arg)]
    assert len(names) >= 5
    cfg = Config()
    assert [n for n in names if cfg.price_for(n) is None] == []
    # A dated id is priced as its own model, not a neighbour that shares its prefix.
    assert cfg.price_for("claude-fable-5-20260609") == cfg.prices["claude-fable-5"]
    assert cfg.price_for("claude-fable-5-2") == cfg.prices["claude-fable-5-2"]
    assert cfg.price_for("anthropic.claude-opus-4-6-v1") == cfg.prices["claude-opus-4-6"]  # Bedrock
    assert cfg.price_for("claude-opus-4-6@20260205") == cfg.prices["claude-opus-4-6"]  # Vertex
    assert cfg.price_for("qwen3-coder") is None


def test_the_provider_layers_like_every_setting(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".ks").mkdir(parents=True)
    (ws / ".ks" / "config.toml").write_text('provider = "bedrock"\n')
    assert load_config(ws, env={}).provider == "bedrock"
    assert load_config(ws, env={"KS_PROVIDER": "Vertex"}).provider == "vertex"
    assert load_config(ws, env={}).with_provider("anthropic-compatible").provider == "anthropic-compatible"
    assert load_config(None, env={}).provider == "anthropic"


def test_doctor_shows_the_provider_and_never_the_key(workspace, base_env, capsys):
    from ks_tui.cli import main

    def doctor(*args: str) -> str:
        capsys.readouterr()
        assert main(["--workspace", str(workspace), "doctor", *args]) == 0
        out = capsys.readouterr()
        assert "sk-secret" not in out.out + out.err
        return out.out

    base_env.setenv("ANTHROPIC_AUTH_TOKEN", "sk-secret-do-not-print")
    base_env.setenv("KS_PROVIDER", "anthropic-compatible")
    base_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8000")
    assert json.loads(doctor("--json"))["agent"] == {
        "provider": "anthropic-compatible", "base_url": "http://127.0.0.1:8000", "model": "claude-opus-4-6",
        "key": "ANTHROPIC_AUTH_TOKEN is set"}
    assert "provider: anthropic-compatible, base_url: http://127.0.0.1:8000, model: claude-opus-4-6" in doctor()
    base_env.delenv("ANTHROPIC_AUTH_TOKEN")
    base_env.setenv("KS_PROVIDER", "anthropic")
    base_env.delenv("ANTHROPIC_BASE_URL")
    agent = json.loads(doctor("--json"))["agent"]
    assert agent["key"] == "not set (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN)"
    assert agent["base_url"] == "https://api.anthropic.com"
