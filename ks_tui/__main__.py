import sys

from ks_tui.cli import main

sys.exit(main())
