"""Every label the mirror writes fits each registered forge's limit on label names (issue 36):
GitHub refuses a name past 50 characters, so a label prefix that makes `<prefix>/state/cancelled`
longer is refused when it is set (and a GitHub forge is refused while the prefix is that long),
TL005 naming the label, the forge and its limit, changing nothing."""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import rows
from tireless import JobStore
from tireless.errors import InvalidArgument

LONGEST_FITTING = "p" * 34  # "<34>/state/cancelled": 50 characters


def set_prefix(db: Database, value: str) -> None:
    with db.connect() as conn:
        conn.execute("SELECT tireless.set_policy(label_prefix => %s)", (value,))


def prefix(db: Database) -> str:
    ((found,),) = rows(db, "SELECT label_prefix FROM tireless.policy")
    return str(found)


def test_a_prefix_too_long_for_a_registered_github_forge_is_refused(
    db: Database, store: JobStore
) -> None:
    store.add_forge("gh", "github", "https://api.github.invalid")
    with pytest.raises(psycopg.Error, match=r"too long for forge 'gh' \(github\)") as error:
        set_prefix(db, "p" * 35)
    assert error.value.sqlstate == InvalidArgument.sqlstate
    assert "51 characters, github takes at most 50" in str(error.value)
    assert prefix(db) == "tireless"
    set_prefix(db, LONGEST_FITTING)
    assert prefix(db) == LONGEST_FITTING
    ((longest,),) = rows(db, "SELECT tireless.longest_label(label_prefix) FROM tireless.policy")
    assert len(longest) == 50


def test_gitea_takes_the_longest_prefix_and_a_github_forge_is_refused_while_it_stands(
    db: Database, store: JobStore
) -> None:
    store.add_forge("gitea", "gitea", "https://gitea.invalid")
    set_prefix(db, "p" * 100)
    with pytest.raises(InvalidArgument, match="at most 50 characters"):
        store.add_forge("gh", "github", "https://api.github.invalid")
    assert rows(db, "SELECT name FROM tireless.forge ORDER BY name") == [("gitea",)]
