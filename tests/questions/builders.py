"""Small builders for attempt histories used by the question-bank tests."""

from ks_tui.questions import AttemptView


def ok(number, speedup, **kw):
    return AttemptView(number=number, status="correct", speedup=speedup, correct="10/10", **kw)


def fail(number, status="incorrect", **kw):
    return AttemptView(number=number, status=status, speedup=None, correct="3/10", **kw)


def run(*items):
    """A history from a compact spec: a float is a correct attempt with that speedup,
    a string is a failed attempt with that status; numbering starts at 1."""
    out = []
    for i, item in enumerate(items, 1):
        out.append(fail(i, item) if isinstance(item, str) else ok(i, item))
    return out
