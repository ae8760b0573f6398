#!/usr/bin/env python3
"""The module arrows of every crate: which top-level module's code names which, and the cycles.

A crate's top-level modules are `src/NAME.rs` and `src/NAME/`. Module A points at module B when
code of A (not a comment, not test code: a `tests.rs` file, `fixtures.rs`, or what follows
`#[cfg(test)]` in a file) names `crate::B`, directly or in a grouped `use crate::{...}`. (A file
of a module declared under `#[cfg(test)]` is test code too.) A cycle is a strongly connected group of two or more modules.

    tools/module_cycles.py            print each crate's cycles; exit 1 if any crate has one
    tools/module_cycles.py --graph    also print every arrow

Run by .ci/run: a cycle fails CI.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_FILES = {"tests.rs", "fixtures.rs", "fuzz.rs", "file_tests.rs"}


def code_lines(path: Path, test_mods: set):
    """The lines of `path` that are code: comments dropped, test code cut (an item under
    `#[cfg(test)]`, by its braces; a `mod NAME;` under it is added to `test_mods`)."""
    if path.name in TEST_FILES or path.name.startswith("test_") or path.name.endswith("_tests.rs"):
        return []
    out = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        code = lines[i].split("//", 1)[0]
        if code.strip().startswith("#[cfg(test)]"):
            # The item it applies to: up to its `;` or through its braces.
            i += 1
            depth, opened = 0, False
            while i < len(lines):
                item = lines[i].split("//", 1)[0]
                m = re.match(r"\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;", item)
                if m and not opened:
                    test_mods.add(path.parent / m.group(1))
                    break
                depth += item.count("{") - item.count("}")
                opened = opened or "{" in item
                if (opened and depth <= 0) or (not opened and item.rstrip().endswith(";")):
                    break
                i += 1
            i += 1
            continue
        if code.strip():
            out.append(code)
        i += 1
    return out


def is_test_file(f: Path, test_mods: set) -> bool:
    """Whether `f` is the file (or inside the folder) of a module declared under cfg(test)."""
    for t in test_mods:
        if f == t.with_suffix(".rs") or t in f.parents:
            return True
    return False


def named_modules(text: str, modules):
    """The top-level modules that `text` names through `crate::`."""
    found = set(re.findall(r"\bcrate::([a-z_][a-z0-9_]*)", text))
    for group in re.findall(r"\bcrate::\{([^}]*)\}", text, flags=re.S):
        for item in group.split(","):
            head = item.strip().split("::", 1)[0].strip()
            if head:
                found.add(head)
    return found & modules


def crate_graph(src: Path):
    modules = {p.stem for p in src.glob("*.rs") if p.stem not in ("lib", "main")}
    modules |= {p.name for p in src.iterdir() if p.is_dir()}
    graph = {m: set() for m in modules}
    test_mods: set = set()
    texts = {}
    for m in sorted(modules):
        files = [src / f"{m}.rs"] if (src / f"{m}.rs").exists() else []
        if (src / m).is_dir():
            files += sorted((src / m).rglob("*.rs"))
        texts[m] = [(f, code_lines(f, test_mods)) for f in files]
    for m, parts in texts.items():
        text = "\n".join(
            line for f, lines in parts if not is_test_file(f, test_mods) for line in lines
        )
        graph[m] = named_modules(text, modules) - {m}
    return graph


def cycles(graph):
    """Strongly connected components of two or more nodes (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    show = "--graph" in sys.argv[1:]
    failed = False
    for src in sorted(ROOT.glob("crates/*/src")):
        graph = crate_graph(src)
        found = cycles(graph)
        crate = src.parent.name
        if show:
            for m in sorted(graph):
                print(f"{crate}: {m} -> {', '.join(sorted(graph[m])) or '-'}")
        for group in found:
            failed = True
            arrows = [f"{a} -> {b}" for a in group for b in sorted(graph[a]) if b in group]
            print(f"{crate}: cycle among {', '.join(group)} ({'; '.join(arrows)})")
    if not failed:
        print("no module cycle in any crate")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
