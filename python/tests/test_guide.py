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


def _api_page():
    """The Python API page: every public class and function of the package with its signature
    and docstring, as the installed package has them (``inspect``), never hand-copied."""
    import inspect

    import cardinal_pnc

    def signature(obj):
        sig = inspect.signature(obj)
        params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
        return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))

    out = [
        "# Python API",
        "",
        "Generated from the package's docstrings by `python/tests/test_guide.py`",
        "(`CARDINAL_BLESS_GUIDE=1` rewrites it; the test fails when it is out of date).",
        "",
    ]
    for name in cardinal_pnc.__all__:
        if name.startswith("_"):
            continue
        obj = getattr(cardinal_pnc, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        kind = "class" if inspect.isclass(obj) else "function"
        if hasattr(obj, "__total__"):
            # A TypedDict: its keys, not a constructor's signature (which varies by Python).
            out += [f"## `{name}` (a dict's keys)", ""]
            out += ["```text", ", ".join(obj.__annotations__), "```", ""]
            out += ["```text", inspect.getdoc(obj) or "(no documentation)", "```", ""]
            continue
        out += [f"## `{name}` ({kind})", ""]
        if not issubclass_warning(obj):
            try:
                out += ["```text", f"{name}{signature(obj)}", "```", ""]
            except (TypeError, ValueError):
                pass
        out += ["```text", inspect.getdoc(obj) or "(no documentation)", "```", ""]
        if inspect.isclass(obj) and not issubclass_warning(obj):
            for member, value in vars(obj).items():
                raw = getattr(value, "__func__", value)
                ours = inspect.isfunction(raw) and raw.__module__.startswith("cardinal_pnc")
                if member.startswith("_") or not ours:
                    # scikit-learn's generated methods (set_fit_request...) are its own.
                    continue
                func = getattr(obj, member)
                out += [f"### `{name}.{member}`", ""]
                try:
                    out += ["```text", f"{member}{signature(func)}", "```", ""]
                except (TypeError, ValueError):
                    pass
                out += ["```text", inspect.getdoc(func) or "(no documentation)", "```", ""]
    return "\n".join(out)


def issubclass_warning(obj):
    return isinstance(obj, type) and issubclass(obj, Warning)


def test_the_python_api_page_is_generated_from_the_docstrings():
    page = os.path.join(GUIDE, "src", "python-api.md")
    text = _api_page()
    if os.environ.get("CARDINAL_BLESS_GUIDE"):
        with open(page, "w", encoding="utf-8") as f:
            f.write(text)
        return
    with open(page, encoding="utf-8") as f:
        assert f.read() == text, (
            "docs/guide/src/python-api.md is out of date: CARDINAL_BLESS_GUIDE=1 pytest "
            "python/tests/test_guide.py"
        )
