"""Settings for the agent: model, token limits, thinking, prices, session limits.

Layered like other terminal agents: built-in defaults, then ~/.config/ks/config.toml
(`$XDG_CONFIG_HOME` honoured), then <workspace>/.ks/config.toml, then environment variables
(KS_MODEL, KS_MAX_TOKENS, KS_THINKING, KS_API_MAX_RETRIES, KS_API_TIMEOUT, KS_TURN_RETRIES,
KS_TURN_RETRY_DELAY, KS_QUESTION_TIMEOUT, KS_BASH_TIMEOUT, KS_CONTEXT_WINDOW, KS_COMPACT_AT, KS_PROVIDER,
KS_CLUSTER), then
command-line flags (applied by the caller).
The API key is never read from these files: the SDK takes it from ANTHROPIC_API_KEY (or the
cloud's own credentials for the bedrock and vertex providers, ks_tui/agent/providers.py).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from ks_tui.errors import InputFileError, KsError

# USD per million tokens, for every model the anthropic SDK lists (tests/agent/test_providers.py
# checks that), and the older ones still in use. Keys are model names or prefixes: the longest key
# that ends at a separator of the name wins ("claude-fable-5" prices claude-fable-5-20260609, not
# claude-fable-5-2), else the longest plain prefix (a config's "qwen3" for qwen3-coder).
# Cache writes are the 5-minute rate (1.25x input); Haiku 5.5 at its rate for prompts up to 100k tokens.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-fable-5-2": {"input": 8.0, "output": 40.0, "cache_write": 10.0, "cache_read": 0.20},
    "claude-mythos-5-2": {"input": 8.0, "output": 40.0, "cache_write": 10.0, "cache_read": 0.20},
    "claude-fable-5-1": {"input": 10.0, "output": 50.0, "cache_write": 12.5, "cache_read": 0.25},
    "claude-mythos-5-1": {"input": 10.0, "output": 50.0, "cache_write": 12.5, "cache_read": 0.25},
    "claude-fable-5": {"input": 10.0, "output": 50.0, "cache_write": 12.5, "cache_read": 1.0},
    "claude-mythos-5": {"input": 10.0, "output": 50.0, "cache_write": 12.5, "cache_read": 1.0},
    "claude-mythos-preview": {"input": 25.0, "output": 125.0, "cache_write": 31.25, "cache_read": 2.5},
    "claude-opus-5-5": {"input": 4.0, "output": 20.0, "cache_write": 5.0, "cache_read": 0.20},
    "claude-opus-5": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-opus-4-8": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-opus-4-7": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.50},
    "claude-sonnet-5-5": {"input": 2.0, "output": 10.0, "cache_write": 2.5, "cache_read": 0.10},
    "claude-sonnet-5": {"input": 2.0, "output": 10.0, "cache_write": 2.5, "cache_read": 0.20},
    "claude-sonnet-4": {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_read": 0.30},
    "claude-haiku-5-5": {"input": 0.10, "output": 0.50, "cache_write": 0.125, "cache_read": 0.01},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_write": 1.25, "cache_read": 0.10},
}
PRICE_KEYS = ("input", "output", "cache_write", "cache_read")
# A current model whose price is in DEFAULT_PRICES, so cost and --max-cost work out of the box.
DEFAULT_MODEL = "claude-opus-4-6"


@dataclass
class Config:
    provider: str = "anthropic"  # ks_tui/agent/providers.py: anthropic, anthropic-compatible, bedrock, vertex
    model: str = DEFAULT_MODEL
    max_tokens: int = 16000
    thinking: str = "adaptive"  # "adaptive", "off", or a token budget such as "8000"
    api_max_retries: int = 4  # SDK retries for 429/529/5xx/connection errors
    api_timeout_s: float = 600.0
    turn_retries: int = 3  # our retries of a turn whose stream failed mid-way
    turn_retry_delay_s: float = 2.0
    max_turns: int | None = None
    max_cost_usd: float | None = None
    question_timeout_s: float = 300.0  # a person present: the bank picks when nobody answers
    bash_timeout_s: float = 120.0
    enable_bash: bool = False
    # The model's context window, and the share of it at which older turns are compacted
    # (ks_tui/agent/context.py): a long session goes on instead of failing with "prompt is too long".
    context_window: int = 200_000
    compact_at: float = 0.8
    # A running Dask scheduler that check/bench/compare spread their runs over (docs/cluster.md); "" for none.
    cluster: str = ""
    prices: dict[str, dict[str, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    # The screen's keys moved by binding id ([keymap] run = "ctrl+r"); ids are checked by the screen's
    # keymap table (ks_tui/app/keymap.py) before it opens.
    keymap: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)  # files that were read, for `ks doctor`

    def resolved_model(self) -> str:
        return self.model or DEFAULT_MODEL

    def price_for(self, model: str) -> dict[str, float] | None:
        name = price_name(model)
        whole = [p for p in self.prices if name == p or (name.startswith(p) and name[len(p)] in _SEPARATORS)]
        best = max(whole or [p for p in self.prices if name.startswith(p)], key=len, default=None)
        return self.prices[best] if best else None

    def thinking_param(self) -> dict | None:
        t = self.thinking.strip().lower()
        if t in ("off", "none", "disabled", ""):
            return None
        if t == "adaptive":
            return {"type": "adaptive"}
        return {"type": "enabled", "budget_tokens": int(t)}

    def with_overrides(self, **kw) -> "Config":
        return replace(self, **{k: v for k, v in kw.items() if v is not None})

    def with_provider(self, value: str | None, source: str = "--provider") -> "Config":
        """The provider a command line names (None: keep the config's); KsError for an unknown one."""
        return self if value is None else replace(self, provider=_coerce(source, "provider", value))


_SEPARATORS = "-@:[."
# Bedrock names a model "anthropic.claude-..." (with a region prefix such as "us." for a
# cross-region profile); Vertex may add "@<date>". The price is the model's own.
_CLOUD_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")


def price_name(model: str) -> str:
    """The model name the price table uses: Bedrock's and Vertex's decorations removed."""
    return _CLOUD_PREFIX.sub("", model.strip())


_SCALARS = {f.name: f.type for f in fields(Config) if f.name not in ("prices", "sources", "keymap")}


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ks" / "config.toml"


def load_config(workspace: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Defaults <- user file <- workspace file <- environment. Bad files raise InputFileError."""
    env = os.environ if env is None else env
    cfg = Config()
    paths = [user_config_path(env)]
    if workspace is not None:
        paths.append(Path(workspace) / ".ks" / "config.toml")
    for path in paths:
        if path.is_file():
            cfg = _apply_file(cfg, path)
    return _apply_env(cfg, env)


def _apply_file(cfg: Config, path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        # Python 3.11's TOMLDecodeError has no lineno; its message ends "(at line N, column M)".
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        raise InputFileError(path, f"not valid TOML: {msg}", int(m.group(1)) if m else None) from None
    except OSError as e:
        raise InputFileError(path, f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise InputFileError(path, f"not UTF-8 text (byte {e.start}); TOML files are UTF-8") from None
    updates: dict[str, Any] = {}
    for key, value in data.items():
        if key == "prices":
            updates["prices"] = {**cfg.prices, **_check_prices(path, value)}
        elif key == "keymap":
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise InputFileError(path, '[keymap] must map binding ids to key names, e.g. run = "ctrl+r"')
            updates["keymap"] = {**cfg.keymap, **value}
        elif key in _SCALARS:
            updates[key] = _coerce(path, key, value)
        else:
            known = ", ".join(sorted([*_SCALARS, "prices", "keymap"]))
            raise InputFileError(path, f"unknown setting {key!r} (known: {known})")
    return replace(cfg, sources=[*cfg.sources, str(path)], **updates)


def _check_prices(path: Path, value: Any) -> dict[str, dict[str, float]]:
    if not isinstance(value, dict):
        raise InputFileError(path, "[prices] must be a table of model prefixes")
    out = {}
    for model, row in value.items():
        if not isinstance(row, dict) or set(row) != set(PRICE_KEYS):
            raise InputFileError(path, f"[prices.{model!r}] needs exactly {', '.join(PRICE_KEYS)} (USD per million tokens)")
        try:
            out[model] = {k: float(row[k]) for k in PRICE_KEYS}
        except (TypeError, ValueError):
            raise InputFileError(path, f"[prices.{model!r}] values must be numbers") from None
        if not all(math.isfinite(v) and v >= 0 for v in out[model].values()):
            raise InputFileError(path, f"[prices.{model!r}] values must be finite and not negative")
    return out


# The smallest value each number may take (retries and a delay may be 0; --max-turns and
# --max-cost are refused below these too), and the ones that must be above zero.
_AT_LEAST = {"max_tokens": 1, "max_turns": 1, "api_max_retries": 0, "turn_retries": 0, "turn_retry_delay_s": 0,
             "context_window": 1000}
_AT_MOST = {"compact_at": 1.0}
_ABOVE_ZERO = {"api_timeout_s", "max_cost_usd", "question_timeout_s", "bash_timeout_s", "compact_at"}


def _coerce(path: Path | str, key: str, value: Any) -> Any:
    v = _typed(path, key, value)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v) or v < _AT_LEAST.get(key, v) or (key in _ABOVE_ZERO and v <= 0):
            low = f"at least {_AT_LEAST[key]}" if key in _AT_LEAST else "above 0"
            _bad(path, f"{key} = {value!r} must be a finite number {low}")
        if v > _AT_MOST.get(key, v):
            _bad(path, f"{key} = {value!r} must be at most {_AT_MOST[key]}")
    return v


def _bad(path: Path | str, msg: str):
    if isinstance(path, Path):
        raise InputFileError(path, msg) from None
    raise KsError(f"{path}: {msg}") from None


def _typed(path: Path | str, key: str, value: Any) -> Any:
    kind = _SCALARS[key]
    try:
        if kind == "bool":
            if isinstance(value, str):
                if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise ValueError
                return value.lower() in ("1", "true", "yes")
            if not isinstance(value, bool):  # 5 is not a yes
                raise ValueError
            return value
        if kind.startswith("int") and (isinstance(value, bool) or (isinstance(value, float) and not value.is_integer())):
            raise ValueError  # true, or 1.5, is no count of tokens
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "int | None":
            return None if value in ("", None) else int(value)
        if kind == "float | None":
            return None if value in ("", None) else float(value)
        if key == "provider":
            from ks_tui.agent.providers import PROVIDERS

            s = str(value).strip().lower()
            if s not in PROVIDERS:
                raise ValueError
            return s
        if key == "thinking":
            s = str(value).strip().lower()
            if s not in ("adaptive", "off") and not (s.isdigit() and int(s) >= 1024):
                raise ValueError
            return s
        return str(value)
    except (TypeError, ValueError):
        msg = f"{key} = {value!r} is not a valid {kind}"
        if key == "provider":
            from ks_tui.agent.providers import PROVIDERS

            msg = f"unknown provider {value!r} (known: {', '.join(PROVIDERS)})"
        if key == "thinking":
            msg = f"thinking = {value!r}: use \"adaptive\", \"off\" or a budget of at least 1024 tokens"
        _bad(path, msg)


_ENV = {
    "KS_MODEL": "model", "KS_MAX_TOKENS": "max_tokens", "KS_THINKING": "thinking",
    "KS_API_MAX_RETRIES": "api_max_retries", "KS_API_TIMEOUT": "api_timeout_s",
    "KS_TURN_RETRIES": "turn_retries", "KS_TURN_RETRY_DELAY": "turn_retry_delay_s",
    "KS_QUESTION_TIMEOUT": "question_timeout_s", "KS_BASH_TIMEOUT": "bash_timeout_s",
    "KS_CONTEXT_WINDOW": "context_window", "KS_COMPACT_AT": "compact_at", "KS_PROVIDER": "provider",
    "KS_CLUSTER": "cluster",
}


ENV_SETTINGS = tuple(_ENV)  # the variables that override the files (`ks doctor` lists the ones set)


def _apply_env(cfg: Config, env: Mapping[str, str]) -> Config:
    updates = {key: _coerce(var, key, env[var]) for var, key in _ENV.items() if env.get(var)}
    return replace(cfg, **updates)
