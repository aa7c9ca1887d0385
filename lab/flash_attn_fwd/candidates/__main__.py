import sys

from lab.flash_attn_fwd.candidates import names, write

if len(sys.argv) < 2:
    sys.exit(__import__("lab.flash_attn_fwd.candidates", fromlist=["x"]).__doc__)
for name in sys.argv[2:] or names():
    print(write(name, sys.argv[1]))
