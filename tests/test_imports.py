"""Imports only go down: every module of tireless/ imports from its own room or a lower one,
never a higher one, and no modules import each other in a circle (DESIGN.md, "Layout").

The rooms, lowest first:
  0. the vocabulary: tireless/models.py, errors.py, migrate.py, connect.py, and what several rooms
     share: credentials.py (where secrets are read from), masking.py and git.py (tireless's
     hardened git, the forge's token in its own processes only), usage.py (what a model API's
     answer says it used, and the ledger's rows of usage and prices: the gateway counts it, the
     dashboard's transcript shows it), conversation.py (what the poller reads of the conversation on
     tireless's pull requests and what the store made of it), outcomes.py
     (a pull request's fate as the forge shows it, and the figures per lane the store gives);
  1. store/: the adapter;
  2. runner/ and forge/, siblings: either may import the other as long as the two rooms do not
     import each other, and forge/ never imports runner/ (a room looks down, not sideways: what
     both need is in the vocabulary; today runner/ imports nothing of forge/ either);
  3. tireless/__init__.py, the public front door: it re-exports from the rooms below it, so web/
     and cli/ may import it and the rooms below may not (they import the defining room);
  4. web/ and cli/ (with tireless/__main__.py, the command's entry), siblings as above (today
     cli/ starts web/ for `tireless web`; web/ imports nothing of cli/); web/ never imports runner/
     (cli/ starts the worker; the dashboard reads the store).
No module of tireless/ imports dev/ (the stand-ins, the demo, the fault tools), which the wheel
does not carry.

Every import counts wherever it is written: at module level, under `if TYPE_CHECKING:`, inside a
function. `from tireless.store import calls` is an import of the module tireless.store.calls; the
package's __init__.py, which Python runs first, counts only when a name is taken from it."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tireless"

VOCABULARY = {
    "tireless.models",
    "tireless.errors",
    "tireless.migrate",
    "tireless.connect",
    "tireless.credentials",
    "tireless.masking",
    "tireless.git",
    "tireless.usage",
    "tireless.outcomes",
    "tireless.conversation",
}
ROOMS = {"store", "runner", "forge", "web", "cli"}
RANK = {
    "vocabulary": 0,
    "store": 1,
    "runner": 2,
    "forge": 2,
    "front door": 3,
    "web": 4,
    "cli": 4,
}
NEVER = {("forge", "runner"), ("web", "runner")}
"""Rooms that may not import another, whatever their ranks."""
DEV = "dev"
"""The top-level package of the stand-ins, which no module of tireless/ imports."""


@dataclass(frozen=True)
class Module:
    """A module of tireless/: its dotted name, its file, the modules of tireless/ it imports, and
    the names it imports from dev/."""

    name: str
    path: str
    imported: frozenset[str]
    dev: frozenset[str] = frozenset()


def room(module: str) -> str | None:
    """The room a module of tireless/ belongs to; None for a module no room holds."""
    if module == "tireless":
        return "front door"
    if module in VOCABULARY:
        return "vocabulary"
    if module == "tireless.__main__":
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else None


def imported_names(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Every dotted name a module's imports name, at any depth: `import a.b` gives a.b,
    `from a import b` gives a.b (resolved later to the module a.b, or a when b is a name in a)."""
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from ..store import calls
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def scan(package: Path) -> dict[str, Module]:
    """The modules under package (symbolic links not followed: tireless/db is SQL), each with the
    modules of the package it imports."""
    raw: dict[str, tuple[str, set[str]]] = {}
    for folder, folders, files in os.walk(package):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for file in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder, file)
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            tree = ast.parse(path.read_text(), filename=str(path))
            shown = str(path.relative_to(package.parent))
            raw[name] = (shown, imported_names(tree, name, is_package))
    modules = {}
    for name, (shown, names) in raw.items():
        imported = {resolve(dotted, raw) for dotted in names} - {None, name}
        dev = frozenset(dotted for dotted in names if dotted.split(".")[0] == DEV)
        modules[name] = Module(name, shown, frozenset(m for m in imported if m is not None), dev)
    return modules


def resolve(dotted: str, known: Iterable[str]) -> str | None:
    """The longest prefix of a dotted name that is a known module (None: not one of ours)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return None


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One circle (its first node repeated at the end) for each group of nodes that reach each
    other (Tarjan's strongly connected components, the members of each group visited in order)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while (member := stack.pop()) != node:
                group.append(member)
            groups.append(sorted([*group, node]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(path_around(group, graph) for group in groups if len(group) > 1)


def path_around(group: list[str], graph: Mapping[str, Iterable[str]]) -> list[str]:
    """A shortest circle through the group's first node, inside the group."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, ())):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target in members and target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start}")  # a group always has one


def offences(modules: Mapping[str, Module]) -> list[str]:
    """What breaks the rule: a module in no room, an import of dev/, an import upward or into a
    room it may never import, a circle of modules, a circle of sibling rooms; each naming the
    imports that make it."""
    found: list[str] = []
    rooms: dict[str, set[str]] = {}
    why: dict[tuple[str, str], list[str]] = {}
    for module in modules.values():
        here = room(module.name)
        if here is None:
            found.append(f"{module.path} is in no room: add it to one in tests/test_imports.py")
            continue
        found += [
            f"{module.path} imports {name} (dev/ is not the product's)"
            for name in sorted(module.dev)
        ]
        for target in sorted(module.imported):
            there = room(target)
            if there is None or there == here:
                continue
            if RANK[there] > RANK[here]:
                found.append(f"{module.path} imports {target} (up)")
            elif (here, there) in NEVER:
                found.append(f"{module.path} imports {target} ({here}/ never imports {there}/)")
            else:
                rooms.setdefault(here, set()).add(there)
                why.setdefault((here, there), []).append(f"{module.path} imports {target}")
    graph = {name: module.imported for name, module in modules.items()}
    for circle in circles(graph):
        steps = [f"{modules[a].path} imports {b}" for a, b in pairwise(circle)]
        found.append("circle: " + ", ".join(steps))
    for circle in circles(rooms):
        steps = [why[a, b][0] for a, b in pairwise(circle)]
        found.append(f"rooms in a circle: {' -> '.join(circle)} ({'; '.join(steps)})")
    return found


def test_imports_only_go_down_and_never_in_a_circle() -> None:
    modules = scan(PACKAGE)
    assert {"tireless", "tireless.store.calls", "tireless.web.app"} <= set(modules)
    assert "tireless.store.calls" in modules["tireless.store.sync"].imported
    problems = offences(modules)
    assert not problems, "imports that break the rooms' order:\n" + "\n".join(problems)


def synthetic(imports: Mapping[str, Iterable[str]]) -> dict[str, Module]:
    return {
        name: Module(name, name.replace(".", "/") + ".py", frozenset(imported))
        for name, imported in imports.items()
    }


def test_the_check_finds_an_upward_import_a_sideways_one_a_circle_and_rooms_in_a_circle() -> None:
    modules = synthetic(
        {
            "tireless.store.calls": ["tireless.runner.worker", "tireless.models"],
            "tireless.runner.worker": ["tireless.store.calls", "tireless.git"],
            "tireless.runner.workspace": ["tireless.git"],
            "tireless.git": ["tireless.credentials"],
            "tireless.credentials": [],
            "tireless.forge.check": ["tireless.runner.workspace", "tireless.git"],
            "tireless.models": [],
            "tireless.cli.commands": ["tireless.web.app"],
            "tireless.cli.parse": [],
            "tireless.web.app": ["tireless.web.pages", "tireless.cli.parse"],
            "tireless.web.pages": ["tireless.web.app"],
            "tireless.web.hooks": ["tireless.runner.workspace"],
            "tireless.helpers": [],
        }
    )
    assert offences(modules) == [
        "tireless/store/calls.py imports tireless.runner.worker (up)",
        "tireless/forge/check.py imports tireless.runner.workspace (forge/ never imports runner/)",
        "tireless/web/hooks.py imports tireless.runner.workspace (web/ never imports runner/)",
        "tireless/helpers.py is in no room: add it to one in tests/test_imports.py",
        "circle: tireless/runner/worker.py imports tireless.store.calls, "
        "tireless/store/calls.py imports tireless.runner.worker",
        "circle: tireless/web/app.py imports tireless.web.pages, "
        "tireless/web/pages.py imports tireless.web.app",
        "rooms in a circle: cli -> web -> cli (tireless/cli/commands.py imports "
        "tireless.web.app; tireless/web/app.py imports tireless.cli.parse)",
    ]
    assert offences(synthetic({"tireless.store.calls": ["tireless.models"]})) == []
    from_dev = Module(
        "tireless.forge.poll", "tireless/forge/poll.py", frozenset(), frozenset({"dev.demo"})
    )
    assert offences({from_dev.name: from_dev}) == [
        "tireless/forge/poll.py imports dev.demo (dev/ is not the product's)"
    ]


def test_the_scan_reads_imports_at_every_depth(tmp_path: Path) -> None:
    package = tmp_path / "tireless"
    (package / "store").mkdir(parents=True)
    (package / "__init__.py").write_text("from tireless.store import JobStore\n")
    (package / "models.py").write_text("")
    (package / "store" / "__init__.py").write_text("from tireless.store.sync import JobStore\n")
    (package / "store" / "sync.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import calls\n"
        "if TYPE_CHECKING:\n"
        "    from tireless.models import Job\n"
        "def later():\n"
        "    import tireless.web.app\n"
        "    from tireless import JobStore\n"
    )
    (package / "store" / "calls.py").write_text("")
    (package / "web").mkdir()
    (package / "web" / "__init__.py").write_text("")
    (package / "web" / "app.py").write_text(
        "def later():\n    from dev.standin_forge import StandinForge\n"
    )
    modules = scan(package)
    assert modules["tireless.store.sync"].imported == {
        "tireless.store.calls",
        "tireless.models",
        "tireless.web.app",
        "tireless",
    }
    assert modules["tireless"].imported == {"tireless.store"}
    assert offences(modules) == [
        "tireless/store/sync.py imports tireless (up)",
        "tireless/store/sync.py imports tireless.web.app (up)",
        "tireless/web/app.py imports dev.standin_forge.StandinForge (dev/ is not the product's)",
        "circle: tireless/__init__.py imports tireless.store, "
        "tireless/store/__init__.py imports tireless.store.sync, "
        "tireless/store/sync.py imports tireless",
    ]


def imports_of_test_modules(tests: Path) -> list[str]:
    """Each import, in a file under `tests`, of a test module (`test_*.py`): `from
    tests.x.test_y import z`, `import tests.x.test_y`, `from tests.x import test_y`, relative or
    not. Shared helpers live in support modules and shared fixtures in conftest.py files instead,
    so a test module is only ever run, never imported."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                named = [base] + [f"{base}.{alias.name}".lstrip(".") for alias in node.names]
            else:
                continue
            for dotted in named:
                if dotted.rpartition(".")[2].startswith("test_"):
                    where = path.relative_to(tests.parent)
                    found.append(f"{where}:{node.lineno} imports the test module {dotted}")
                    break
    return found


def test_no_test_imports_a_test_module() -> None:
    offending = imports_of_test_modules(ROOT / "tests")
    assert offending == [], "\n".join(offending)


def test_the_check_finds_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "forge").mkdir(parents=True)
    (tests / "forge" / "test_poll.py").write_text("from tests.support.forge import Setup\n")
    (tests / "conftest.py").write_text("import pytest\nfrom tests.helpers import rows\n")
    (tests / "forge" / "test_mirror.py").write_text(
        "from tests.forge.test_poll import Setup\n"
        "import tests.forge.test_poll\n"
        "def helper() -> None:\n"
        "    from tests.forge import test_poll\n"
        "    from .test_poll import OWNER\n"
    )
    assert imports_of_test_modules(tests) == [
        "tests/forge/test_mirror.py:1 imports the test module tests.forge.test_poll",
        "tests/forge/test_mirror.py:2 imports the test module tests.forge.test_poll",
        "tests/forge/test_mirror.py:4 imports the test module tests.forge.test_poll",
        "tests/forge/test_mirror.py:5 imports the test module .test_poll",
    ]
