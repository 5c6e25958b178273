# SPDX-License-Identifier: Apache-2.0
"""Every Python example of docs/python.md runs (from the repository's root), as written."""
import re

import pytest

from conftest import REPO

DOC = REPO / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_doc_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index, monkeypatch, recwarn):
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("VG_BACKEND", raising=False)
    exec(compile(BLOCKS[index], f"{DOC}:block{index}", "exec"), {"__name__": "__doc_example__"})
