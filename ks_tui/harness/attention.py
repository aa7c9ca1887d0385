"""Old import path of `ks_tui.tasklib.attention.helpers`, kept for reference.py files in
workspaces made by an earlier `ks init`. New code imports the task library."""

import sys

from ks_tui.tasklib.attention import helpers as _helpers

sys.modules[__name__] = _helpers
