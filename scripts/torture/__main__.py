"""`python -m scripts.torture [--quick] [--only NAME ...]`: the suite (suite.py); `python -m
scripts.torture _job|_writer|_jobloop ...`: one of its child processes (children.py)."""

import sys

if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
    from .children import CHILDREN

    sys.exit(CHILDREN[sys.argv[1]](sys.argv[2:]))
else:
    from .suite import main

    sys.exit(main())
