"""KernelSeek: a terminal pair-programming assistant that makes an existing GPU kernel faster."""

__version__ = "0.1.0"
