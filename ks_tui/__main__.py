import sys

from ks_tui.cli import main

# Guarded: Dask's worker processes start by spawn, which imports the main module again.
if __name__ == "__main__":
    sys.exit(main())
