"""The docs do not rot: every test they cite as evidence exists, and every relative link in
README.md and docs/ leads to a file (and, with an #anchor, to a heading of that file)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

FENCED_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# How the docs cite evidence: a pytest node id (`tests/test_claim.py::test_x`, `tests/` optional),
# a file of tests/ (`tests/invariants.py`, `test_roles.py`), or a test's bare name.
NODE_ID = re.compile(r"(?<![\w/])(?:tests/)?((?:\w+/)*test_\w+\.py)::(test_\w+)")
TEST_FILE = re.compile(r"(?<![\w/])(?:tests/((?:\w+/)*\w+\.py)|(test_\w+\.py))")
BARE_TEST = re.compile(r"(?<![\w/.:])(test_\w+)(?!\w|\.py)")


def defined_tests() -> dict[str, set[str]]:
    """Each Python file under tests/ (its path inside tests/) and the test functions it defines."""
    defined: dict[str, set[str]] = {}
    for path in TESTS.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        defined[str(path.relative_to(TESTS))] = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")
        }
    return defined


def missing_evidence(text: str, defined: dict[str, set[str]]) -> list[str]:
    """The citations in text of a test file or test function that tests/ does not have."""
    every_test = set().union(*defined.values())
    missing = [
        f"tests/{file}::{test}"
        for file, test in NODE_ID.findall(text)
        if test not in defined.get(file, set())
    ]
    text = NODE_ID.sub(" ", text)
    missing += [
        f"tests/{file}"
        for under_tests, bare_file in TEST_FILE.findall(text)
        if (file := under_tests or bare_file) not in defined
    ]
    text = TEST_FILE.sub(" ", text)
    missing += [name for name in BARE_TEST.findall(text) if name not in every_test]
    return missing


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated heading's anchor gets -1, -2, ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCED_BLOCK.sub("", page.read_text()), re.M):
        anchor = base = slug(heading)
        repeat = 0
        while anchor in found:
            repeat += 1
            anchor = f"{base}-{repeat}"
        found.add(anchor)
    return found


def relative_links(page: Path) -> list[str]:
    prose = FENCED_BLOCK.sub("", page.read_text())
    return [
        target
        for target in LINK.findall(prose)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def doc_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_docs_are_the_readme_and_the_pages_under_docs() -> None:
    names = {doc_id(page) for page in DOCS}
    assert {"README.md", "docs/sql.md", "docs/python.md", "docs/cli.md"} <= names
    assert {"docs/operations.md", "docs/decisions.md"} <= names


@pytest.mark.parametrize("page", DOCS, ids=doc_id)
def test_every_test_the_docs_cite_exists(page: Path) -> None:
    missing = missing_evidence(page.read_text(), defined_tests())
    assert not missing, f"{doc_id(page)} cites tests that do not exist: {missing}"


def test_the_evidence_check_finds_a_missing_test_and_a_missing_file() -> None:
    defined = {"test_claim.py": {"test_two_claimers_one_job_one_winner"}, "invariants.py": set()}
    cited = (
        "`tests/test_claim.py::test_two_claimers_one_job_one_winner`, `tests/invariants.py`, "
        "test_claim.py::test_gone, tests/test_gone.py, test_also_gone and test_claim.py."
    )
    assert missing_evidence(cited, defined) == [
        "tests/test_claim.py::test_gone",
        "tests/test_gone.py",
        "test_also_gone",
    ]


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of a page that lead to no file, or to no such heading of a page."""
    broken, root = [], root.resolve()
    for link in relative_links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        name = str(target.relative_to(root)) if target.is_relative_to(root) else str(target)
        if not target.exists():
            broken.append(f"{link} (no file {name})")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link} (no heading #{anchor} in {name})")
    return broken


@pytest.mark.parametrize("page", DOCS, ids=doc_id)
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{doc_id(page)} has broken links: {broken}"


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "sql.md").write_text("# tireless in SQL\n\n## The state machine\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/sql.md#the-state-machine) [web](https://example.com) [here](#top)\n"
        "[gone](docs/gone.md) [no heading](docs/sql.md#nothing)\n"
        "```\n[in code](docs/ignored.md)\n```\n# Top\n"
    )
    assert broken_links(page, root=tmp_path) == [
        "docs/gone.md (no file docs/gone.md)",
        "docs/sql.md#nothing (no heading #nothing in docs/sql.md)",
    ]
