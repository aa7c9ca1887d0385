"""Task libraries: ready-made reference code for families of kernels.

A task's reference.py imports from here so that it stays a few lines. Same rules as the
harness: torch, numpy, yaml and the standard library only; imported in the harness's child
process, never by the CLI, the engine or the screen. The contract each library fulfils is
`ks_tui.harness.reference_api.TaskReference`.
"""
