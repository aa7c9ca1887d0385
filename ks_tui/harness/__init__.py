"""Build, correctness and timing of one kernel, run in a child process.

Parent side: `ks_tui.harness.client.run_harness`. Child side: `python -m ks_tui.harness run`.
This package imports only the standard library, torch, numpy and yaml (never textual,
anthropic or git), and torch only inside the child.
"""
