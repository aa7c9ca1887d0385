"""Device and analysis scripts of the flash_attn_fwd notebook; run them from the repository root as
`python3 -m lab.flash_attn_fwd.scripts.NAME ...`."""
