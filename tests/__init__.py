"""memstore's tests. They test the memstore that is installed, not the checkout's source: importing
``scripts`` moves the checkout behind the installed packages on ``sys.path`` (see
``scripts.checkout_last``), and tests/conftest.py stops the run when memstore still comes from the
checkout (unless MEMSTORE_TEST_EDITABLE=1: the quick loop on an editable install)."""

import scripts  # noqa: F401  (before anything imports memstore)
