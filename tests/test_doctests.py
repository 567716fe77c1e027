"""The examples in the public functions' docstrings run and show what they print."""

from __future__ import annotations

import doctest
import importlib

import pytest

#: the modules of the functions users call: apsp, the SciPy drop-ins, mgapsp.open and
#: Result, read_graph, as_graph, the network metrics
PUBLIC = ["mgapsp.api", "mgapsp.csgraph", "mgapsp.results", "mgapsp.readers",
          "mgapsp.readers.in_memory", "mgapsp.metrics"]


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_examples(name, capsys):
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    report = capsys.readouterr().out
    assert attempted > 0, f"{name} has no examples"
    assert failed == 0, report
