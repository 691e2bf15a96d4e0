"""The wheel users install carries the product and its SQL, never the stand-ins: no file of dev/
(the stand-in forges and git server, the demo, the fault tools, the embedded PostgreSQL), under
its own name or another, and nothing named like one. Built here with hatchling's PEP 517 hook,
offline, as `pip wheel` builds it."""

from __future__ import annotations

import hashlib
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from hatchling.build import build_wheel

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "dev"
# Names of the stand-ins and fault tools, in a member's path (a standin/ folder, standin_forge.py).
STAND_IN_NAMES = re.compile(r"stand_?in[_/.]|chaos_forge|failover|replicas|demo[_/.]|devtools")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stand_ins(members: Mapping[str, bytes], dev: Mapping[str, bytes]) -> list[str]:
    """The wheel's members (path to bytes) that are a stand-in: under dev/, named like one, or
    the same bytes as a file of dev/ (`dev`, path to bytes; its empty files left out)."""
    of_dev = {digest(data): path for path, data in dev.items() if data.strip()}
    found = []
    for path, data in sorted(members.items()):
        if path.startswith("dev/") or STAND_IN_NAMES.search(path):
            found.append(f"{path}: a stand-in's place or name")
        elif digest(data) in of_dev:
            found.append(f"{path}: the same bytes as dev/{of_dev[digest(data)]}")
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The wheel as `pip wheel .` builds it: each member's path and bytes."""
    out = tmp_path_factory.mktemp("wheel")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        name = build_wheel(str(out))
    with zipfile.ZipFile(out / name) as built:
        return {info.filename: built.read(info) for info in built.infolist() if not info.is_dir()}


def test_the_wheel_carries_the_product_and_its_sql(wheel: dict[str, bytes]) -> None:
    assert "tireless/__init__.py" in wheel
    assert "tireless/cli/__init__.py" in wheel
    assert "tireless/db/schema.sql" in wheel  # the SQL, through the tireless/db link


def test_the_wheel_carries_no_stand_in_demo_or_fault_tool(wheel: dict[str, bytes]) -> None:
    dev = {str(p.relative_to(DEV)): p.read_bytes() for p in DEV.rglob("*") if p.is_file()}
    assert "standin/forge.py" in dev  # the check reads dev/
    assert stand_ins(wheel, dev) == []


def test_the_check_finds_a_stand_in_by_place_name_or_bytes() -> None:
    dev = {"forge.py": b"class Forge: ...\n", "__init__.py": b""}
    members = {
        "tireless/__init__.py": b"",  # the same (empty) bytes as dev's __init__.py: not a stand-in
        "tireless/forge/poll.py": b"def poll(): ...\n",
        "dev/embedded.py": b"x = 1\n",
        "tireless/devtools/chaos_forge.py": b"y = 2\n",
        "tireless/testing/standin_git.py": b"z = 3\n",
        "tireless/testing/fake.py": b"class Forge: ...\n",
    }
    assert stand_ins(members, dev) == [
        "dev/embedded.py: a stand-in's place or name",
        "tireless/devtools/chaos_forge.py: a stand-in's place or name",
        "tireless/testing/fake.py: the same bytes as dev/forge.py",
        "tireless/testing/standin_git.py: a stand-in's place or name",
    ]
