"""Every Python block of the user guide (docs/guide/src/*.md) runs, in order per page, in a
copy of the guide's example data: the guide's examples cannot rot."""

import os
import re
import shutil

import pytest

GUIDE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "guide")


def _pages_with_python():
    src = os.path.join(GUIDE, "src")
    if not os.path.isdir(src):
        return []
    pages = []
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), encoding="utf-8") as f:
            blocks = re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)
        if blocks:
            pages.append((name, blocks))
    return pages


PAGES = _pages_with_python()


def test_the_guide_has_python_blocks():
    assert PAGES, f"no Python block found under {GUIDE}"


@pytest.mark.parametrize("name,blocks", PAGES, ids=[p[0] for p in PAGES])
def test_every_python_block_runs(name, blocks, tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    for entry in os.listdir(os.path.join(GUIDE, "data")):
        shutil.copy(os.path.join(GUIDE, "data", entry), tmp_path / entry)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__guide__"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{name} block {i + 1}", "exec"), namespace)
        except Exception as e:  # noqa: BLE001 (the page and block say where)
            raise AssertionError(f"{name}, Python block {i + 1} failed: {e!r}\n{block}") from e
