"""`python -m scripts.bench [--quick] [--only PART] ...`: the bench (cli.py; see the package's docstring)."""

import sys

from .cli import main

sys.exit(main())
