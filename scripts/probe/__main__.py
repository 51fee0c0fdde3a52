"""`python -m scripts.probe [--trials N] [--size N] ...`: the probe (cli.py); `python -m scripts.probe
_putter ...`: its LangGraph child process (runs.py)."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "_putter":
    from .runs import child_putter

    sys.exit(child_putter(sys.argv[2:]))
else:
    from .cli import main

    sys.exit(main())
