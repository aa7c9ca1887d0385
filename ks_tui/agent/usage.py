"""Token counts and their cost, per turn and summed over a session."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class TokenCount:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def from_sdk(cls, usage) -> "TokenCount":
        """From the SDK's Usage (the final message's usage is cumulative for the turn)."""
        return cls(usage.input_tokens or 0, usage.output_tokens or 0,
                   getattr(usage, "cache_read_input_tokens", 0) or 0,
                   getattr(usage, "cache_creation_input_tokens", 0) or 0)

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: "TokenCount") -> "TokenCount":
        return TokenCount(*(a + b for a, b in zip(asdict(self).values(), asdict(other).values())))


def cost_usd(tokens: TokenCount, price: dict[str, float] | None) -> float | None:
    """Cost of these tokens; None when the model has no price in the table."""
    if price is None:
        return None
    return (tokens.input_tokens * price["input"] + tokens.output_tokens * price["output"]
            + tokens.cache_read_tokens * price["cache_read"]
            + tokens.cache_write_tokens * price["cache_write"]) / 1e6


@dataclass
class Spend:
    """Model turns, tokens and cost summed over a stretch: a whole session, or one run of it."""

    turns: int = 0
    tokens: TokenCount = field(default_factory=TokenCount)
    cost: float = 0.0
    priced: bool = True  # False once a turn had no price: the cost is then a lower bound

    def add(self, tokens: TokenCount, cost: float | None) -> None:
        self.turns += 1
        self.tokens += tokens
        self.cost += cost or 0.0
        self.priced = self.priced and cost is not None
