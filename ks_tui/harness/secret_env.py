"""What a kernel or an agent's shell command may see of the user's environment, and keeping secrets out of records.

The harness child (which loads the kernel) and the bash tool's commands get an allow-listed environment: what
compilers, CUDA, torch and Python need, never a credential. Secret-looking variables are dropped even where
their prefix is allowed (KS_..._TOKEN). What still reaches a record -- a tool result, a trace line, a git note,
an export -- has the values of the parent's secret-looking variables replaced by a placeholder. Standard library
only (the harness imports it).
"""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

# Kept as they are: the shell, locale, temporary files, compilers, Python.
ALLOWED_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "PKG_CONFIG_PATH",
    "CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "VIRTUAL_ENV", "NO_COLOR", "COLUMNS", "LINES",
    "EDITOR", "VISUAL", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
})
# Whole families: locale, CUDA and the NVIDIA driver, the compilers' and libraries' settings, ks's own.
ALLOWED_PREFIXES = ("LC_", "CUDA", "NVIDIA_", "NVCC_", "CUDNN_", "NCCL_", "TORCH", "PYTORCH_", "TRITON_", "OMP_",
                    "MKL_", "OPENBLAS_", "GOMP_", "KMP_", "XDG_", "CONDA_", "PYTHON", "PIP_", "KS_")
# Never passed, whatever the lists above say: credentials by name, and whole credential families.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH(?!OR)|COOKIE|PRIVATE", re.IGNORECASE)
DENIED_PREFIXES = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "AWS_", "GOOGLE_", "GCLOUD", "GCP_", "AZURE_", "HF_",
                   "HUGGING", "GITHUB_", "GH_", "GITLAB_", "SSH_", "GPG_", "DOCKER_", "KUBE", "VAULT_", "NPM_",
                   "PYPI_", "TWINE_")
MIN_SECRET_CHARS = 8  # shorter values ("1", "true") are not worth hiding and would mangle text


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name)) or name.upper().startswith(DENIED_PREFIXES)


def child_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of ENVIRON (os.environ by default) for an untrusted child."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items()
            if (k in ALLOWED_NAMES or k.startswith(ALLOWED_PREFIXES)) and not is_secret_name(k)}


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """{value: name} of the variables whose names look like credentials (ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY,
    ..._TOKEN): the strings no record may hold."""
    environ = os.environ if environ is None else environ
    return {v: k for k, v in environ.items()
            if SECRET_NAME.search(k) and len(v.strip()) >= MIN_SECRET_CHARS}


def redact_text(text: str, secrets: Mapping[str, str] | None = None) -> str:
    secrets = secret_values() if secrets is None else secrets
    for value in sorted(secrets, key=len, reverse=True):  # a longer secret holding a shorter one goes first
        if value in text:
            text = text.replace(value, f"[redacted {secrets[value]}]")
    return text


def redact(obj: Any, secrets: Mapping[str, str] | None = None) -> Any:
    """OBJ with every secret value in its strings (keys too) replaced; lists and dicts are copied, not changed."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return obj
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    if isinstance(obj, dict):
        return {redact(k, secrets): redact(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v, secrets) for v in obj)
    return obj


def redact_bytes(data: bytes, secrets: Mapping[str, str] | None = None) -> bytes:
    """DATA (a trace, a JSON member) with each secret value replaced, as UTF-8 and as it would appear in JSON."""
    secrets = secret_values() if secrets is None else secrets
    for value in sorted(secrets, key=len, reverse=True):
        for form in {value.encode(), value.encode("unicode_escape")}:
            if form and form in data:
                data = data.replace(form, f"[redacted {secrets[value]}]".encode())
    return data
