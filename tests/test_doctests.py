"""The examples in docstrings run and stay true."""

import doctest

import pytest

from memstore import io, normalize, reference
from memstore.cli import render


@pytest.mark.parametrize("module", [normalize, reference, io, render], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    failed, attempted = doctest.testmod(module)
    assert failed == 0
    assert attempted > 0
