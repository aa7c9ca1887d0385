"""The flash_attn_fwd notebook (see README.md)."""
