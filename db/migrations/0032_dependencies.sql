-- Dependencies between issues (issue 35, item 3): what each issue depends on, and the pending jobs that wait for it.
-- depends: 0031_conversation

CREATE TABLE tireless.issue_dependency (
    forge             text    NOT NULL,
    owner             text    NOT NULL,
    repo              text    NOT NULL,
    number            integer NOT NULL,
    depends_on_owner  text    NOT NULL,
    depends_on_repo   text    NOT NULL,
    depends_on_number integer NOT NULL,
    source            text    NOT NULL,
    CONSTRAINT one_dependency_per_source PRIMARY KEY (forge, owner, repo, number, depends_on_owner, depends_on_repo, depends_on_number, source),
    CONSTRAINT dependency_source_known CHECK (source IN ('body', 'forge')),
    CONSTRAINT dependency_numbers_positive CHECK (number > 0 AND depends_on_number > 0),
    CONSTRAINT dependency_not_on_itself CHECK ((owner, repo, number) IS DISTINCT FROM (depends_on_owner, depends_on_repo, depends_on_number))
);
CREATE INDEX dependents_by_issue ON tireless.issue_dependency (forge, depends_on_owner, depends_on_repo, depends_on_number);
COMMENT ON TABLE tireless.issue_dependency IS
    'What each issue depends on (the same forge), as its body says (`Depends on #N`, `Depends on owner/repo#N`) or '
    'as the forge''s own relations say. Private: record_poll and enqueue keep it (dependencies.sql); a pending job '
    'whose issue has an open dependency waits (job.waiting_on).';
COMMENT ON COLUMN tireless.issue_dependency.number IS 'The issue that depends (the dependent).';
COMMENT ON COLUMN tireless.issue_dependency.depends_on_owner IS 'The owner of the issue it depends on (same forge).';
COMMENT ON COLUMN tireless.issue_dependency.depends_on_repo IS 'The repository of the issue it depends on (same forge).';
COMMENT ON COLUMN tireless.issue_dependency.depends_on_number IS 'The number of the issue it depends on; open until the store has seen it closed.';
COMMENT ON COLUMN tireless.issue_dependency.source IS 'body (a `Depends on` line of the dependent''s body) or forge (the forge''s own dependency relation).';
COMMENT ON CONSTRAINT dependency_source_known ON tireless.issue_dependency IS 'A dependency is said by the body or by the forge.';
COMMENT ON CONSTRAINT dependency_numbers_positive ON tireless.issue_dependency IS 'Issue numbers are positive.';
COMMENT ON CONSTRAINT dependency_not_on_itself ON tireless.issue_dependency IS 'An issue never depends on itself (body_dependencies leaves such a line out).';
COMMENT ON INDEX tireless.dependents_by_issue IS 'The issues that depend on one issue: re-evaluated when it is recorded (closed, reopened).';

ALTER TABLE tireless.job ADD COLUMN waiting_on text[];
COMMENT ON COLUMN tireless.job.waiting_on IS
    'For a pending job: the open dependencies of its issue that it waits for (#3, owner/repo#7), not claimable '
    'until the last one closes; null when it waits for nothing. Kept by dependencies.sql.';

-- The claim's indexes leave waiting jobs out: a claim never walks past them, however many wait
-- (their own available_at, a backoff, stays as it was).
DROP INDEX tireless.pending_jobs_in_claim_order;
CREATE INDEX pending_jobs_in_claim_order ON tireless.job (lane, id) WHERE state = 'pending' AND waiting_on IS NULL;
COMMENT ON INDEX tireless.pending_jobs_in_claim_order IS 'claim_next: pending jobs of a lane that wait for no dependency, oldest first.';
DROP INDEX tireless.pending_jobs_in_repo_order;
CREATE INDEX pending_jobs_in_repo_order ON tireless.job (lane, forge, owner, repo, id) WHERE state = 'pending' AND waiting_on IS NULL;
COMMENT ON INDEX tireless.pending_jobs_in_repo_order IS
    'claim_next: a repository''s oldest pending job in a lane that waits for no dependency, one probe whatever the backlog.';

-- The mirror shows a waiting job as <prefix>/state:waiting: what the issue should show, and what the
-- forge last confirmed, beside the job's state.
ALTER TABLE tireless.mirror_issue ADD COLUMN waiting boolean NOT NULL DEFAULT false,
                                  ADD COLUMN applied_waiting boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN tireless.mirror_issue.waiting IS
    'The job is pending and waits for a dependency: the issue should show <prefix>/state:waiting, not state:pending.';
COMMENT ON COLUMN tireless.mirror_issue.applied_waiting IS 'Whether the state the forge last confirmed was waiting.';
DROP INDEX tireless.mirror_writes_due;
CREATE INDEX mirror_writes_due ON tireless.mirror_issue (forge, owner, repo, next_try_at)
    WHERE applied_job_id IS DISTINCT FROM job_id OR applied_state IS DISTINCT FROM state OR applied_waiting <> waiting;
COMMENT ON INDEX tireless.mirror_writes_due IS 'The writes still to apply, per repository, by when they are due.';

-- The bodies stored before this release, read as tireless.body_dependencies (dependencies.sql) reads
-- them, here inline (a migration runs before the files are applied), and the pending jobs whose
-- issues have an open dependency wait from now on (the next settle of their issue sorts the list and
-- adds a cycle to the note).
INSERT INTO tireless.issue_dependency (forge, owner, repo, number, depends_on_owner, depends_on_repo, depends_on_number, source)
SELECT DISTINCT s.forge, s.owner, s.repo, s.number, coalesce(ref.m[1], s.owner), coalesce(ref.m[2], s.repo), ref.m[3]::integer,
       'body'
  FROM tireless.issue s
 CROSS JOIN LATERAL regexp_matches(s.body, '^[ \t>*-]*depends[ \t]+on[ \t:]+([^\n]*)$', 'gin') AS line(m)
 CROSS JOIN LATERAL regexp_matches(line.m[1],
                       '(?:^|[^A-Za-z0-9_./#-])(?:([A-Za-z0-9_.-]{1,200})/([A-Za-z0-9_.-]{1,200}))?#([0-9]{1,9})(?![0-9])', 'g')
                    AS ref(m)
 WHERE s.body IS NOT NULL AND ref.m[3]::integer > 0
   AND (coalesce(ref.m[1], s.owner), coalesce(ref.m[2], s.repo), ref.m[3]::integer) IS DISTINCT FROM (s.owner, s.repo, s.number)
ON CONFLICT DO NOTHING;
UPDATE tireless.job j
   SET waiting_on = w.refs, note = 'waiting on ' || array_to_string(w.refs, ', '), updated_at = now()
  FROM (SELECT d.forge, d.owner, d.repo, d.number,
               array_agg(DISTINCT CASE WHEN (d.depends_on_owner, d.depends_on_repo) = (d.owner, d.repo) THEN ''
                                       ELSE d.depends_on_owner || '/' || d.depends_on_repo END
                                  || '#' || d.depends_on_number) AS refs
          FROM tireless.issue_dependency d
          LEFT JOIN tireless.issue s
                 ON (s.forge, s.owner, s.repo, s.number) = (d.forge, d.depends_on_owner, d.depends_on_repo, d.depends_on_number)
         WHERE s.state IS DISTINCT FROM 'closed'
         GROUP BY d.forge, d.owner, d.repo, d.number) AS w
 WHERE (j.forge, j.owner, j.repo, j.number) = (w.forge, w.owner, w.repo, w.number) AND j.state = 'pending';

-- claim_repos_to_poll also returns the opt-in label and the issue numbers of the repository's waiting
-- jobs (the poller reads their forge relations again on a full listing): a new result type, so the
-- old signature goes and poll.sql defines the new one.
DROP FUNCTION tireless.claim_repos_to_poll(text, interval, integer);
