"""The Textual screen of `ks`: a view over the engine's events (ks_tui/events.py).

Nothing here decides anything about kernels, attempts or questions; widgets render plain
data (events, Attempt.to_dict(), harness result JSON) and hand key presses back to the
engine through `backend.Backend`.
"""
