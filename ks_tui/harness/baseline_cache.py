"""Baseline timings remembered across runs, keyed by everything that could change them.

Key: device name, library versions, thread count, baseline name and scenario parameters.
Every GPU bench writes its fresh baseline timings here; `--cached-baselines` reads them back
so a quick inner loop need not re-time five libraries. Not the default: the GPU's clock
moves with its load, so a cached time was taken at another clock than the kernel's.
Standard library only; one JSON file, replaced atomically (a lost update only costs a
re-measurement).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path


class BaselineCache:
    def __init__(self, root: Path, environment: dict):
        self.path = Path(root) / "baselines.json"
        self.env = environment
        try:
            self.entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.entries = {}
        self.dirty = False

    def _key(self, name: str, params: dict) -> str:
        return json.dumps([self.env, name, params], sort_keys=True, default=str)

    def get(self, name: str, params: dict) -> dict | None:
        return self.entries.get(self._key(name, params))

    def put(self, name: str, params: dict, timing: dict) -> None:
        self.entries[self._key(name, params)] = {**timing, "measured_at": time.time()}
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".baselines-")
        with os.fdopen(fd, "w") as f:
            json.dump(self.entries, f)
        os.replace(tmp, self.path)
        self.dirty = False
