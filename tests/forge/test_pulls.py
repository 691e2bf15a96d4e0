"""Delivery's forge calls against the stand-in, both API families: the default branch, and the one
pull request from a branch, found, opened, updated. A second create from the same head, or a
create whose answer was lost, gives the pull request already there, never a second one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest

from dev.standin import StandinForge
from tireless.forge import client_for
from tireless.forge.client import ForgeClient, PullRequest, WriteRefused

TOKEN = "tok-pulls-8d1e3a"
BRANCH = "tireless/7"


@pytest.fixture(params=["gitea", "github"])
def forge(request: pytest.FixtureRequest) -> Iterator[StandinForge]:
    with StandinForge(request.param, token=TOKEN, max_page_size=2) as standin:
        standin.seed_git("acme", "widgets", {"README.md": "hello\n"})
        standin.seed_git("acme", "widgets", {"fix.txt": "fixed\n"}, branch=BRANCH)
        yield standin


def client(forge: StandinForge, timeout: float = 5.0) -> ForgeClient:
    return client_for(forge.flavour, forge.url, TOKEN, timeout=timeout)


def create(reader: ForgeClient, *, head: str = BRANCH, draft: bool = False) -> PullRequest:
    return reader.create_pull(
        "acme", "widgets", head=head, base="main", title="Add a flag", body="Closes #1", draft=draft
    )


def test_the_default_branch_is_the_repositorys(forge: StandinForge) -> None:
    with closing(client(forge)) as reader:
        assert reader.default_branch("acme", "widgets") == "main"
        forge.set_default_branch("acme", "widgets", "trunk")
        assert reader.default_branch("acme", "widgets") == "trunk"
        with pytest.raises(WriteRefused) as missing:
            reader.default_branch("acme", "nothing")
    assert missing.value.status == 404


def test_a_pull_request_is_created_found_by_its_head_and_updated(forge: StandinForge) -> None:
    forge.create_issue("acme", "widgets", "Add a flag", ["tireless"])
    with closing(client(forge)) as reader:
        assert reader.find_pull("acme", "widgets", BRANCH) is None
        created = create(reader)
        assert created.number == 2  # after issue 1: pull requests are numbered with the issues
        assert (created.head, created.base, created.state) == (BRANCH, "main", "open")
        assert (created.title, created.body, created.draft) == ("Add a flag", "Closes #1", False)
        page = "pulls" if forge.flavour == "gitea" else "pull"  # GitHub's page is /pull/N
        assert created.url == f"{forge.url}/acme/widgets/{page}/2"
        assert reader.find_pull("acme", "widgets", BRANCH) == created
        assert reader.find_pull("acme", "widgets", "main") is None
        updated = reader.update_pull("acme", "widgets", 2, title="Add a --flag", body="Closes #1!")
        assert (updated.number, updated.title, updated.body) == (2, "Add a --flag", "Closes #1!")
        assert reader.find_pull("acme", "widgets", BRANCH) == updated
        assert reader.get_issue("acme", "widgets", 2) is not None  # the issue endpoint has it too
        assert [i.number for i in reader.list_issues("acme", "widgets", since=None).issues] == [1]
    [stored] = forge.pulls_of("acme", "widgets")
    assert (stored.number, stored.head, stored.title, stored.author) == (
        2,
        BRANCH,
        "Add a --flag",
        "tireless-bot",
    )


def test_find_pull_reads_every_page_and_takes_only_its_own_head(forge: StandinForge) -> None:
    # Pages of 2 (max_page_size): the pull request from BRANCH is on the last page of three.
    forge.open_pull("acme", "widgets", BRANCH, "main", "Add a flag")
    for n in range(4):
        forge.seed_git("acme", "widgets", {f"other{n}.txt": "x\n"}, branch=f"other/{n}")
        forge.open_pull("acme", "widgets", f"other/{n}", "main", f"Other {n}")
    forge.close_pull("acme", "widgets", 3)
    with closing(client(forge)) as reader:
        found = reader.find_pull("acme", "widgets", BRANCH)
        assert found is not None
        assert (found.number, found.head) == (1, BRANCH)
        assert reader.find_pull("acme", "widgets", "other/1") is None  # closed
        other = reader.find_pull("acme", "widgets", "other/3")
        assert other is not None
        assert other.number == 5
    pages = [r for r in forge.requests if r.method == "GET" and r.path.endswith("/pulls")]
    assert len(pages) >= 3


def test_a_second_create_from_the_same_head_gives_the_existing_pull_request(
    forge: StandinForge,
) -> None:
    with closing(client(forge)) as reader:
        first = create(reader)
        second = create(reader)
    assert second == first
    assert len(forge.pulls_of("acme", "widgets")) == 1
    assert len(forge.pull_creates("acme", "widgets")) == 2  # the forge refused the second


def test_the_forges_refuse_a_duplicate_in_their_own_words(forge: StandinForge) -> None:
    # What create_pull copes with. Gitea: 409 ErrPullRequestAlreadyExists (routers/api/v1/repo/
    # pull.go CreatePullRequest); GitHub: 422 Validation Failed, code "custom".
    pulls = ("/api/v1" if forge.flavour == "gitea" else "") + "/repos/acme/widgets/pulls"
    form = {"head": BRANCH, "base": "main", "title": "Add a flag", "body": ""}
    with httpx.Client(base_url=forge.url, headers={"Authorization": f"token {TOKEN}"}) as http:
        assert http.post(pulls, json=form).status_code == 201
        again = http.post(pulls, json=form)
    if forge.flavour == "gitea":
        assert again.status_code == 409
        assert again.json()["message"].startswith("pull request already exists for these targets")
    else:
        assert again.status_code == 422
        assert again.json()["message"] == "Validation Failed"
        assert again.json()["errors"] == [
            {
                "resource": "PullRequest",
                "code": "custom",
                "message": f"A pull request already exists for acme:{BRANCH}.",
            }
        ]


@pytest.mark.parametrize("lost", ["applied-then-reset", "applied-then-slow"])
def test_a_create_whose_answer_is_lost_makes_exactly_one(forge: StandinForge, lost: str) -> None:
    # The forge stores the pull request, then the answer never comes (the connection drops, or
    # it comes after the client gave up): the client looks by head and finds it.
    forge.fault(lost, times=1, repo=("acme", "widgets"), seconds=1.0)
    with closing(client(forge, timeout=0.3)) as reader:
        created = create(reader)
        assert reader.find_pull("acme", "widgets", BRANCH) == created
    assert [p.number for p in forge.pulls_of("acme", "widgets")] == [created.number]
    assert len(forge.pull_creates("acme", "widgets")) == 1


def test_a_pull_request_from_a_branch_that_does_not_exist_is_refused(forge: StandinForge) -> None:
    with closing(client(forge)) as reader, pytest.raises(WriteRefused) as refused:
        create(reader, head="tireless/404")
    if forge.flavour == "gitea":  # parseCompareInfo: APIErrorNotFound
        assert refused.value.status == 404
        assert "The target couldn't be found." in str(refused.value)
    else:  # 422, errors [{"resource": "PullRequest", "field": "head", "code": "invalid"}]
        assert refused.value.status == 422
        assert "Validation Failed (PullRequest head invalid)" in str(refused.value)
    assert forge.pulls_of("acme", "widgets") == []


def test_github_refuses_a_pull_request_with_nothing_to_merge() -> None:
    # "No commits between main and branch" (peter-evans/create-pull-request#4088).
    with StandinForge("github", token=TOKEN) as forge, closing(client(forge)) as reader:
        forge.seed_git("acme", "widgets", {"README.md": "hello\n"})
        forge.seed_git("acme", "widgets", {"fix.txt": "fixed\n"}, branch=BRANCH)
        with pytest.raises(WriteRefused, match=f"No commits between {BRANCH} and main"):
            reader.create_pull("acme", "widgets", head="main", base=BRANCH, title="No", body="")
    assert forge.pulls_of("acme", "widgets") == []


def test_a_draft_is_giteas_title_prefix_and_githubs_flag(forge: StandinForge) -> None:
    with closing(client(forge)) as reader:
        created = create(reader, draft=True)
        assert (created.draft, created.title) == (True, "Add a flag")
        [stored] = forge.pulls_of("acme", "widgets")
        # Gitea: WORK_IN_PROGRESS_PREFIXES (modules/setting/repository.go); GitHub: `draft`.
        assert stored.title == ("WIP: Add a flag" if forge.flavour == "gitea" else "Add a flag")
        updated = reader.update_pull("acme", "widgets", created.number, title="Flag", body="")
        assert (updated.draft, updated.title) == (True, "Flag")  # an edit keeps it a draft
    assert forge.pulls_of("acme", "widgets")[0].draft


def test_a_write_refused_for_want_of_rights_is_not_a_duplicate(forge: StandinForge) -> None:
    forge.fault("403", times=1, repo=("acme", "widgets"), writes_only=True)
    with closing(client(forge)) as reader, pytest.raises(WriteRefused) as refused:
        create(reader)
    assert refused.value.status == 403
    assert forge.pulls_of("acme", "widgets") == []
