"""Subcommands of `ks` (placeholder: registers nothing yet)."""


def register(sub) -> None:
    pass
