-- Delivery: the holder's end of a job with what it pushed (deliver, and deliver_and_claim, the
-- delivering runner's cycle in one transaction), the pushes and checkpoints it records on the way
-- (record_push, record_checkpoint), and the repository's delivery policy (set_repo_delivery, and
-- delivery_policy: the one that applies, the defaults filled in).
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- The repository's delivery policy, set by the admin (tireless.repo_delivery); the runner reads it in
-- the job's brief.
CREATE OR REPLACE FUNCTION tireless.set_repo_delivery(forge text, owner text, repo text, protected text[] DEFAULT NULL,
                                                      allowed text[] DEFAULT NULL, allow_ci boolean DEFAULT NULL,
                                                      max_files integer DEFAULT NULL, max_bytes bigint DEFAULT NULL)
    RETURNS tireless.repo_delivery
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.repo_delivery;
BEGIN
    PERFORM tireless.check_path_globs('protected', set_repo_delivery.protected);
    PERFORM tireless.check_path_globs('allowed', set_repo_delivery.allowed);
    IF set_repo_delivery.max_files < 0 THEN
        RAISE EXCEPTION 'max_files must be null (as it is), 0 (the runner''s default) or positive, got %',
            set_repo_delivery.max_files USING ERRCODE = 'TL005';
    END IF;
    IF set_repo_delivery.max_bytes < 0 THEN
        RAISE EXCEPTION 'max_bytes must be null (as it is), 0 (the runner''s default) or positive, got %',
            set_repo_delivery.max_bytes USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.check_tracked(set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo);
    IF num_nonnulls(set_repo_delivery.protected, set_repo_delivery.allowed, set_repo_delivery.allow_ci,
                    set_repo_delivery.max_files, set_repo_delivery.max_bytes) = 0 THEN
        -- Nothing to change: the policy as it is (the defaults when none was set), and no row written.
        SELECT * INTO result FROM tireless.repo_delivery d
         WHERE (d.forge, d.owner, d.repo) = (set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo);
        IF NOT FOUND THEN
            result := ROW(set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo, '{}', '{}', false, NULL, NULL);
        END IF;
        RETURN result;
    END IF;
    -- One statement under the row's lock: concurrent setters of different settings both land.
    INSERT INTO tireless.repo_delivery AS d (forge, owner, repo, protected, allowed, allow_ci, max_files, max_bytes)
    VALUES (set_repo_delivery.forge, set_repo_delivery.owner, set_repo_delivery.repo,
            coalesce(set_repo_delivery.protected, '{}'), coalesce(set_repo_delivery.allowed, '{}'),
            coalesce(set_repo_delivery.allow_ci, false),
            nullif(set_repo_delivery.max_files, 0), nullif(set_repo_delivery.max_bytes, 0))
    ON CONFLICT ON CONSTRAINT one_delivery_policy_per_repo DO UPDATE
       SET protected = coalesce(set_repo_delivery.protected, d.protected),
           allowed = coalesce(set_repo_delivery.allowed, d.allowed),
           allow_ci = coalesce(set_repo_delivery.allow_ci, d.allow_ci),
           max_files = CASE WHEN set_repo_delivery.max_files IS NULL THEN d.max_files ELSE excluded.max_files END,
           max_bytes = CASE WHEN set_repo_delivery.max_bytes IS NULL THEN d.max_bytes ELSE excluded.max_bytes END
    RETURNING d.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_repo_delivery(text, text, text, text[], text[], boolean, integer, bigint) IS
    '(admin) The tracked repository''s delivery policy, which the runner checks an agent''s change against '
    '(job_brief): the globs of paths it may not touch (protected), those it may touch all the same (allowed), '
    'whether it may change the forge''s CI definitions (allow_ci), at most max_files files and max_bytes bytes '
    '(0: the runner''s default). A null argument leaves its setting as it is; a list replaces the list. '
    'Returns the policy. TL005 for a bad glob or limit, TL008 when the repository is not tracked.';
REVOKE ALL ON FUNCTION tireless.set_repo_delivery(text, text, text, text[], text[], boolean, integer, bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_repo_delivery(text, text, text, text[], text[], boolean, integer, bigint) TO tireless_admin;

-- The policy that applies: the repository's settings, and where it sets no limit the runner's default.
-- The defaults live here, so that psql shows what a change is checked against, and the runner reads
-- them in the job's brief (job_brief's applied_max_files and applied_max_bytes).
CREATE OR REPLACE FUNCTION tireless.delivery_policy(forge text, owner text, repo text) RETURNS tireless.repo_delivery
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT delivery_policy.forge, delivery_policy.owner, delivery_policy.repo,
           coalesce(d.protected, '{}'), coalesce(d.allowed, '{}'), coalesce(d.allow_ci, false),
           coalesce(d.max_files, 1000), coalesce(d.max_bytes, 50 * 1024 * 1024::bigint)
      FROM (VALUES (true)) AS always
      LEFT JOIN tireless.repo_delivery d
        ON (d.forge, d.owner, d.repo) = (delivery_policy.forge, delivery_policy.owner, delivery_policy.repo);
$$;
COMMENT ON FUNCTION tireless.delivery_policy(text, text, text) IS
    'The delivery policy that applies to the repository''s changes, the defaults filled in: its protected and allowed '
    'globs (none by default), allow_ci (false), max_files (1000 files changed) and max_bytes (52428800, 50 MiB, '
    'added or modified) where set_repo_delivery set none. The runner checks a change against exactly this '
    '(job_brief). A repository with no policy set, tracked or not, gets the defaults.';
REVOKE ALL ON FUNCTION tireless.delivery_policy(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.delivery_policy(text, text, text) TO tireless_runner, tireless_admin;

-- A checkpoint is the holder's own push of the workspace's commits so far, to a ref that is never the
-- pull request's branch; a later attempt of the job starts from the last one (job_brief).
CREATE OR REPLACE FUNCTION tireless.record_checkpoint(job_id bigint, worker text, ref text, commit text, token uuid DEFAULT NULL)
    RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    branch text;
    result timestamptz;
BEGIN
    PERFORM tireless.check_ref_name('ref', record_checkpoint.ref);
    PERFORM tireless.check_commit_id('commit', record_checkpoint.commit);
    job := tireless.held_job(record_checkpoint.job_id, record_checkpoint.worker, record_checkpoint.token);
    SELECT p.branch INTO branch FROM tireless.issue_push(job.forge, job.owner, job.repo, job.number) p;
    IF record_checkpoint.ref IN (branch, 'refs/heads/' || branch) THEN
        RAISE EXCEPTION 'ref % is the pull request''s branch; a checkpoint goes to a ref of its own',
            quote_literal(record_checkpoint.ref)
            USING ERRCODE = 'TL009', HINT = 'Push checkpoints to a ref such as refs/tireless/checkpoints/<job id>-<attempt id>.';
    END IF;
    INSERT INTO tireless.checkpoint AS c (job_id, attempt, ref, commit)
    VALUES (job.id, job.attempts, record_checkpoint.ref, record_checkpoint.commit)
    ON CONFLICT ON CONSTRAINT checkpoint_pkey DO UPDATE
       SET attempt = excluded.attempt, ref = excluded.ref, commit = excluded.commit, recorded_at = now()
    RETURNING c.recorded_at INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.record_checkpoint(bigint, text, text, text, uuid) IS
    'The holder pushed its workspace''s commits so far to ref (a ref of tireless''s own, never the pull request''s '
    'branch) at commit: kept as the job''s last checkpoint, with the attempt, replacing the one before; job_brief '
    'hands it to the job''s later attempts. Returns the time recorded. TL009 for a malformed ref or commit, or the '
    'pull request''s branch; TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';
REVOKE ALL ON FUNCTION tireless.record_checkpoint(bigint, text, text, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_checkpoint(bigint, text, text, text, uuid) TO tireless_runner;

-- Recorded before the push, not after: a runner that dies after its push and before tireless.deliver
-- leaves a head on the branch that no delivery names; the next attempt may push over it as its own.
CREATE OR REPLACE FUNCTION tireless.record_push(job_id bigint, worker text, branch text, head text, token uuid DEFAULT NULL)
    RETURNS text[]
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    heads text[];
BEGIN
    PERFORM tireless.check_ref_name('branch', record_push.branch);
    PERFORM tireless.check_commit_id('head', record_push.head);
    job := tireless.held_job(record_push.job_id, record_push.worker, record_push.token);
    INSERT INTO tireless.push (job_id, branch, head) VALUES (job.id, record_push.branch, record_push.head)
    ON CONFLICT ON CONSTRAINT one_record_per_pushed_head DO NOTHING;
    SELECT array_agg(o.head ORDER BY o.at DESC) INTO heads
      FROM (SELECT p.head, max(p.recorded_at) AS at
              FROM tireless.push p JOIN tireless.job j ON j.id = p.job_id
             WHERE (j.forge, j.owner, j.repo, j.number) = (job.forge, job.owner, job.repo, job.number)
               AND p.branch = record_push.branch
             GROUP BY p.head
             UNION ALL
            SELECT d.head, d.delivered_at
              FROM tireless.delivery d
             WHERE (d.forge, d.owner, d.repo, d.number) = (job.forge, job.owner, job.repo, job.number)
               AND d.branch = record_push.branch) o;
    RETURN heads;
END;
$$;
COMMENT ON FUNCTION tireless.record_push(bigint, text, text, text, uuid) IS
    'The holder is about to push head to its issue''s branch: recorded first, so that a runner dying after the push '
    'leaves a commit the next attempt knows as tireless''s own. Returns every head tireless pushed or delivered on '
    'that branch for the issue, newest first: the commits a push may go over. TL009 for a malformed branch or head; '
    'TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';
REVOKE ALL ON FUNCTION tireless.record_push(bigint, text, text, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_push(bigint, text, text, text, uuid) TO tireless_runner;

-- A delivery belongs to its job: a delivered job (which never changes again) of the same issue. Kept by
-- a trigger, not a foreign key to (id, state): that would need a unique index on tireless.job, paid
-- at every claim and every finish.
CREATE OR REPLACE FUNCTION tireless.delivery_of_a_delivered_job() RETURNS trigger
    LANGUAGE plpgsql
AS $$
DECLARE
    job record;
    broken text;
BEGIN
    SELECT j.state, j.forge, j.owner, j.repo, j.number INTO job FROM tireless.job j WHERE j.id = NEW.job_id;
    broken := CASE
        WHEN job.state IS DISTINCT FROM 'delivered' THEN 'delivery_of_a_delivered_job'
        WHEN (job.forge, job.owner, job.repo, job.number) IS DISTINCT FROM (NEW.forge, NEW.owner, NEW.repo, NEW.number)
            THEN 'delivery_names_its_job_s_issue'
    END;
    IF broken IS NULL THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'new row for relation "delivery" violates check constraint "%"', broken
        USING ERRCODE = 'check_violation', CONSTRAINT = broken, SCHEMA = 'tireless', TABLE = 'delivery',
              DETAIL = format('Job %s is %s, of %s/%s/%s#%s.', NEW.job_id, coalesce(job.state::text, 'not a job'),
                              job.forge, job.owner, job.repo, job.number);
END;
$$;
COMMENT ON FUNCTION tireless.delivery_of_a_delivered_job() IS
    'Trigger of tireless.delivery: a delivery belongs to a delivered job (delivery_of_a_delivered_job) and names '
    'that job''s issue (delivery_names_its_job_s_issue); else check_violation (23514) naming the rule. A delivered '
    'job never changes again, so the rule holds for good once the row is in.';
REVOKE ALL ON FUNCTION tireless.delivery_of_a_delivered_job() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE TRIGGER delivery_of_a_delivered_job
    BEFORE INSERT OR UPDATE OF job_id, forge, owner, repo, number ON tireless.delivery
    FOR EACH ROW EXECUTE FUNCTION tireless.delivery_of_a_delivered_job();
COMMENT ON TRIGGER delivery_of_a_delivered_job ON tireless.delivery IS
    'A delivery belongs to a delivered job and names its issue (tireless.delivery_of_a_delivered_job).';

-- The holder's delivery: transition's own refusals (it is called as is), then what was pushed, and
-- the pull request queued for the mirror, all in the transaction that delivers.
CREATE OR REPLACE FUNCTION tireless.deliver(
    job_id bigint, worker text, branch text DEFAULT NULL, head text DEFAULT NULL, base_branch text DEFAULT NULL,
    base text DEFAULT NULL, token uuid DEFAULT NULL, note text DEFAULT NULL, draft boolean DEFAULT false
) RETURNS tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    changed CONSTANT boolean := num_nonnulls(deliver.branch, deliver.head, deliver.base_branch, deliver.base) > 0;
    result tireless.job;
BEGIN
    -- Malformed values first: refused before any lock, naming the value.
    IF changed THEN
        PERFORM tireless.check_ref_name('branch', deliver.branch);
        PERFORM tireless.check_commit_id('head', deliver.head);
        PERFORM tireless.check_ref_name('base_branch', deliver.base_branch);
        PERFORM tireless.check_commit_id('base', deliver.base);
        IF deliver.branch = deliver.base_branch THEN
            RAISE EXCEPTION 'branch % is the base branch; a pull request goes from its branch to another',
                quote_literal(deliver.branch) USING ERRCODE = 'TL009';
        END IF;
        IF deliver.head = deliver.base THEN
            RAISE EXCEPTION 'head % is the base commit: nothing was committed', deliver.head
                USING ERRCODE = 'TL009', HINT = 'Deliver with no change: no branch, head, base_branch or base.';
        END IF;
    END IF;
    -- Sent again because its answer was lost: the first one committed, its delivery is recorded.
    IF deliver.token IS NOT NULL THEN
        SELECT * INTO result FROM tireless.job j WHERE j.id = deliver.job_id AND j.ended_claim_token = deliver.token;
        IF FOUND THEN
            RETURN result;
        END IF;
    END IF;
    result := tireless.transition(deliver.job_id, 'delivered', deliver.worker,
                                  CASE WHEN changed THEN deliver.note ELSE coalesce(deliver.note, 'no change') END,
                                  deliver.token);
    INSERT INTO tireless.delivery (job_id, forge, owner, repo, number, branch, head, base_branch, base, draft)
    VALUES (result.id, result.forge, result.owner, result.repo, result.number, deliver.branch, deliver.head,
            deliver.base_branch, deliver.base, changed AND coalesce(deliver.draft, false));
    IF changed THEN
        -- The mirror opens or updates the pull request; an untracked repository is not mirrored.
        INSERT INTO tireless.forge_write (kind, forge, owner, repo, number, job_id)
        SELECT 'pull', t.forge, t.owner, t.repo, result.number, result.id FROM tireless.tracked_repo t
         WHERE (t.forge, t.owner, t.repo) = (result.forge, result.owner, result.repo);
        IF FOUND THEN
            -- The pull request follows the push at once: the repository is due now and the pollers
            -- are woken at commit (poll_soon: NOTIFY tireless_poll), as a webhook does; a backoff
            -- holds. Never a wait: while a poller's transaction holds the repository's row (its
            -- round is under way), the delivery wakes nothing, and that round or the next writes it.
            PERFORM FROM tireless.repo_poll rp
             WHERE (rp.forge, rp.owner, rp.repo) = (result.forge, result.owner, result.repo)
               FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                PERFORM tireless.poll_soon(result.forge, result.owner, result.repo);
            END IF;
        END IF;
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.deliver(bigint, text, text, text, text, text, uuid, text, boolean) IS
    'The holder delivers the job with what it pushed, in one transaction: exactly transition(job_id, ''delivered'', '
    'worker, note, token) (its refusals: TL004 unless worker, token and login hold the claim, TL003 for a finished '
    'job, TL001, TL005), then the delivery recorded (branch, head, base_branch, base, draft) and, for a tracked '
    'repository, the pull request queued for the mirror (a write of the outbox, tireless.forge_write) and the '
    'repository made due now, the pollers woken (poll_soon), so the pull request follows the push at once (never '
    'waiting for a poller that holds the repository: then its round writes it). Without branch, head, base_branch and '
    'base: delivered with no change (note ''no change'' unless given), no pull request. TL009 for a malformed '
    'branch or commit, a branch that is its own base, or a head that is its base; nothing changes.'
    ' Sent again with the token of a claim its holder already ended (the answer was lost: a failover, a cut connection): answered with the job as it is now, nothing changes.';
REVOKE ALL ON FUNCTION tireless.deliver(bigint, text, text, text, text, text, uuid, text, boolean) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.deliver(bigint, text, text, text, text, text, uuid, text, boolean) TO tireless_runner;

-- The delivering runner's cycle in one transaction, as finish_and_claim is the others': deliver's
-- call as it is (every refusal its own, and nothing claimed when one is raised), then claim_next's.
CREATE OR REPLACE FUNCTION tireless.deliver_and_claim(
    job_id bigint, worker text, lanes text[], lease interval DEFAULT '10 minutes', branch text DEFAULT NULL,
    head text DEFAULT NULL, base_branch text DEFAULT NULL, base text DEFAULT NULL, token uuid DEFAULT NULL,
    note text DEFAULT NULL, draft boolean DEFAULT false
) RETURNS SETOF tireless.job
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ended tireless.job;
BEGIN
    -- Sent again because its answer was lost (a failover, a cut connection): the first one committed.
    SELECT * INTO ended FROM tireless.job j
     WHERE deliver_and_claim.token IS NOT NULL
       AND j.id = deliver_and_claim.job_id AND j.ended_claim_token = deliver_and_claim.token;
    -- deliver's refusals either way (a malformed branch or commit first); sent again, it changes nothing.
    PERFORM tireless.deliver(job_id => deliver_and_claim.job_id, worker => deliver_and_claim.worker,
                             branch => deliver_and_claim.branch, head => deliver_and_claim.head,
                             base_branch => deliver_and_claim.base_branch, base => deliver_and_claim.base,
                             token => deliver_and_claim.token, note => deliver_and_claim.note,
                             draft => deliver_and_claim.draft);
    IF ended.id IS NOT NULL THEN
        -- Its answer was the job it claimed for this worker in the same transaction (the same now()),
        -- if that claim stands (finish_and_claim's rule).
        RETURN QUERY SELECT * FROM tireless.job j
                      WHERE j.state = 'claimed' AND j.claimed_by = deliver_and_claim.worker
                        AND j.updated_at = ended.updated_at AND j.id <> ended.id
                        AND tireless.acts_for_login(j.claimed_login);
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM tireless.claim_next(worker => deliver_and_claim.worker, lanes => deliver_and_claim.lanes,
                                                   lease => deliver_and_claim.lease);
END;
$$;
COMMENT ON FUNCTION tireless.deliver_and_claim(bigint, text, text[], interval, text, text, text, text, uuid, text, boolean) IS
    'The delivering runner''s cycle in one transaction: delivers job_id with what was pushed exactly as '
    'tireless.deliver(job_id, worker, branch, head, base_branch, base, token, note, draft) would (its refusals, with '
    'their SQLSTATEs: nothing is claimed when the delivery is refused), then claims the next job in lanes for worker '
    'exactly as tireless.claim_next would, and returns it (no row when nothing is claimable). Sent again with the '
    'token of a claim its holder already ended (the answer was lost): the job that delivery claimed for worker, if it '
    'still holds it, and nothing else changes.';
REVOKE ALL ON FUNCTION tireless.deliver_and_claim(bigint, text, text[], interval, text, text, text, text, uuid, text, boolean) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.deliver_and_claim(bigint, text, text[], interval, text, text, text, text, uuid, text, boolean) TO tireless_runner;
