"""The operator's path: the real psql client runs the protocol and sees our SQLSTATEs."""

from __future__ import annotations

import subprocess

from tests.conftest import Database

LIFECYCLE = """
SELECT tireless.add_forge(name => 'gitea', kind => 'gitea', base_url => 'https://gitea.example.com');
SELECT tireless.track_repo(forge => 'gitea', owner => 'acme', repo => 'widgets');
SELECT tireless.enqueue(issues => '[{"forge": "gitea", "owner": "acme", "repo": "widgets",
    "number": 7, "state": "open", "labels": ["tireless", "tireless/implement"]}]');
SELECT id AS job, claimed_by, attempts FROM tireless.claim_next(worker => 'ops', lanes => '{cc}') \\gset
\\echo claimed :job by :claimed_by, attempt :attempts
SELECT tireless.renew_claim(job_id => :job, worker => 'ops', lease => '30 minutes');
SELECT state, note FROM tireless.transition(job_id => :job, to_state => 'delivered', worker => 'ops',
    note => 'merged by hand');
SELECT count(*) FROM tireless.claim_next(worker => 'ops', lanes => '{cc}');
"""


def psql(db: Database, script: str) -> subprocess.CompletedProcess[str]:
    """Run a script through the psql of the server's installation (bin_dir may hold only links to
    the server binaries, as /usr/local/bin does, so look beside their target)."""
    command = [
        str((db.server.bin_dir / "pg_ctl").resolve().parent / "psql"),
        "-X",
        "-v",
        "ON_ERROR_STOP=1",
        "-At",
        "-d",
        db.conninfo,
    ]
    return subprocess.run(command, input=script, capture_output=True, text=True, timeout=60)


def test_an_operator_tracks_enqueues_claims_and_delivers_in_psql(db: Database) -> None:
    result = psql(db, LIFECYCLE)
    assert (result.returncode, result.stderr) == (0, "")
    job = db.scalar("SELECT id FROM tireless.job")
    assert result.stdout.splitlines() == [
        "t",
        "t",
        "1",
        f"claimed {job} by ops, attempt 1",
        "t",
        "delivered|merged by hand",
        "0",
    ]


def test_a_refusal_stops_the_psql_script_with_its_sqlstate(db: Database) -> None:
    script = """
\\set VERBOSITY verbose
SELECT tireless.transition(job_id => 424242, to_state => 'delivered', worker => 'ops');
SELECT 'not reached';
"""
    result = psql(db, script)
    assert result.returncode != 0
    assert "ERROR:  TL001: no job with id 424242" in result.stderr
    assert "not reached" not in result.stdout
