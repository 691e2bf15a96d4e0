-- Policy in rows: the label protocol, routing, retry budget and backoff, lanes with capacity, pause and circuit breaker.
-- depends: 0002_roles

-- Our refusals carry SQLSTATEs of a private class, mirrored in tireless/errors.py:
--   TL001 unknown job          TL002 illegal transition     TL003 job is terminal
--   TL004 not the holder       TL005 invalid argument       TL006 malformed issue
--   TL007 history is append-only
--
-- Security: every function a tireless_* role may call is SECURITY DEFINER with search_path pinned
-- to pg_catalog, pg_temp, and names everything of ours schema-qualified. The private helpers (granted
-- to no role) run inside those functions and inherit the pinned path; a SET clause of their own
-- would cost a configuration switch on every call of the hot path.

CREATE TABLE tireless.policy (
    singleton         boolean  PRIMARY KEY DEFAULT true,
    label_prefix      text     NOT NULL DEFAULT 'tireless',
    backoff_base      interval NOT NULL DEFAULT '30 seconds',
    backoff_cap       interval NOT NULL DEFAULT '30 minutes',
    breaker_threshold integer  NOT NULL DEFAULT 5,
    breaker_cooldown  interval NOT NULL DEFAULT '15 minutes',
    CONSTRAINT policy_is_one_row CHECK (singleton),
    CONSTRAINT label_prefix_is_a_word CHECK (label_prefix ~ '^[^\s/:]{1,100}$'),
    CONSTRAINT backoff_in_order CHECK (backoff_base >= '0' AND backoff_cap >= backoff_base),
    CONSTRAINT breaker_threshold_positive CHECK (breaker_threshold > 0),
    CONSTRAINT breaker_cooldown_not_negative CHECK (breaker_cooldown >= '0')
);
INSERT INTO tireless.policy DEFAULT VALUES;
COMMENT ON TABLE tireless.policy IS
    'The one row of store-wide settings: label prefix, backoff, circuit breaker. Change it with tireless.set_policy.';
COMMENT ON CONSTRAINT policy_is_one_row ON tireless.policy IS 'There is exactly one policy row.';
COMMENT ON CONSTRAINT label_prefix_is_a_word ON tireless.policy IS 'The label prefix has no blank, slash or colon.';
COMMENT ON CONSTRAINT backoff_in_order ON tireless.policy IS 'The backoff base is not negative and the cap is not below it.';
COMMENT ON CONSTRAINT breaker_threshold_positive ON tireless.policy IS 'A breaker trips after at least one failure.';
COMMENT ON CONSTRAINT breaker_cooldown_not_negative ON tireless.policy IS 'A cool-down is not negative.';

CREATE TABLE tireless.kind_policy (
    kind         tireless.job_kind PRIMARY KEY,
    default_lane text    NOT NULL DEFAULT 'cc',
    max_attempts integer NOT NULL DEFAULT 3,
    CONSTRAINT default_lane_is_a_name CHECK (tireless.is_lane_name(default_lane)),
    CONSTRAINT max_attempts_positive CHECK (max_attempts > 0)
);
INSERT INTO tireless.kind_policy (kind) SELECT unnest(enum_range(NULL::tireless.job_kind));
COMMENT ON TABLE tireless.kind_policy IS
    'Per kind: the lane a job goes to without an agent label, and how many attempts it gets. Change it with tireless.set_kind_policy.';
COMMENT ON CONSTRAINT default_lane_is_a_name ON tireless.kind_policy IS 'The default lane is a lane name.';
COMMENT ON CONSTRAINT max_attempts_positive ON tireless.kind_policy IS 'A job gets at least one attempt.';

CREATE TABLE tireless.lane (
    name                 text    PRIMARY KEY,
    capacity             integer,
    paused               boolean NOT NULL DEFAULT false,
    consecutive_failures integer NOT NULL DEFAULT 0,
    tripped_until        timestamptz,
    CONSTRAINT lane_name_is_a_name CHECK (tireless.is_lane_name(name)),
    CONSTRAINT capacity_not_negative CHECK (capacity >= 0),
    CONSTRAINT failures_not_negative CHECK (consecutive_failures >= 0)
);
COMMENT ON TABLE tireless.lane IS
    'Lanes that have settings or breaker state. A lane with no row is open and unlimited.';
COMMENT ON COLUMN tireless.lane.capacity IS 'At most this many claimed jobs in the lane at once; null: unlimited.';
COMMENT ON COLUMN tireless.lane.tripped_until IS 'Circuit breaker: while in the future, claim_next hands out nothing from the lane.';
COMMENT ON CONSTRAINT lane_name_is_a_name ON tireless.lane IS 'A lane is a short name (see tireless.is_lane_name).';
COMMENT ON CONSTRAINT capacity_not_negative ON tireless.lane IS 'Capacity is null (unlimited) or not negative.';
COMMENT ON CONSTRAINT failures_not_negative ON tireless.lane IS 'A count of failures is not negative.';

CREATE FUNCTION tireless.lane_hands_out_work(paused boolean, tripped_until timestamptz) RETURNS boolean
    LANGUAGE sql STABLE
AS $$
    SELECT NOT paused AND (tripped_until IS NULL OR tripped_until <= now());
$$;
COMMENT ON FUNCTION tireless.lane_hands_out_work(boolean, timestamptz) IS
    'True when a lane with these settings hands out work now: not paused, and its circuit breaker not tripped.';

-- Argument checks shared by the API functions; each raises TL005 naming the bad value.
CREATE FUNCTION tireless.check_worker(worker text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF worker IS NULL OR btrim(worker) = '' OR length(worker) > 200 THEN
        RAISE EXCEPTION 'worker must be a name of 1 to 200 characters, got %', coalesce(quote_literal(left(worker, 220)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_worker(text) IS
    'Raises TL005 unless worker is a non-blank name of at most 200 characters.';

CREATE FUNCTION tireless.check_lease(lease interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF lease IS NULL OR lease <= interval '0' OR lease > interval '1 day' THEN
        RAISE EXCEPTION 'lease must be more than 0 and at most 1 day, got %', coalesce(lease::text, 'null')
            USING ERRCODE = 'TL005', HINT = 'A long run keeps its lease by renewing it.';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_lease(interval) IS 'Raises TL005 unless 0 < lease <= 1 day.';

CREATE FUNCTION tireless.check_lane(lane text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF lane IS NULL OR NOT tireless.is_lane_name(lane) THEN
        RAISE EXCEPTION 'lane must be 1 to 63 letters, digits, ".", "-" or "_", got %', coalesce(quote_literal(left(lane, 80)), 'null')
            USING ERRCODE = 'TL005';
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_lane(text) IS 'Raises TL005 unless lane is a lane name.';

CREATE FUNCTION tireless.parse_state(name text) RETURNS tireless.job_state
    LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF name IS NULL OR NOT name = ANY (enum_range(NULL::tireless.job_state)::text[]) THEN
        RAISE EXCEPTION 'unknown job state %', coalesce(quote_literal(left(name, 80)), 'null')
            USING ERRCODE = 'TL005', DETAIL = format('The states are %s.', array_to_string(enum_range(NULL::tireless.job_state), ', '));
    END IF;
    RETURN name::tireless.job_state;
END;
$$;
COMMENT ON FUNCTION tireless.parse_state(text) IS 'The job state named by a text; TL005 for an unknown name.';

CREATE FUNCTION tireless.parse_kind(name text) RETURNS tireless.job_kind
    LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF name IS NULL OR NOT name = ANY (enum_range(NULL::tireless.job_kind)::text[]) THEN
        RAISE EXCEPTION 'unknown job kind %', coalesce(quote_literal(left(name, 80)), 'null')
            USING ERRCODE = 'TL005', DETAIL = format('The kinds are %s.', array_to_string(enum_range(NULL::tireless.job_kind), ', '));
    END IF;
    RETURN name::tireless.job_kind;
END;
$$;
COMMENT ON FUNCTION tireless.parse_kind(text) IS 'The job kind named by a text; TL005 for an unknown name.';

-- Routing: the one implementation of the label protocol. enqueue and refresh_lane call it; so does Python.
CREATE FUNCTION tireless.job_kind_for(labels text[]) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
    SELECT k::text
      FROM tireless.policy p
     CROSS JOIN unnest(enum_range(NULL::tireless.job_kind)) AS kinds(k)
     WHERE p.label_prefix = ANY (coalesce(job_kind_for.labels, '{}'))
       AND p.label_prefix || '/' || k::text = ANY (job_kind_for.labels)
     -- kinds.k, the enum: a bare k would name the text output column and sort alphabetically.
     ORDER BY kinds.k
     LIMIT 1;
$$;
COMMENT ON FUNCTION tireless.job_kind_for(text[]) IS
    'The kind of work a set of issue labels asks for: the opt-in label and a mode label are both needed; '
    'discover beats plan beats implement; null when the labels ask for none. Labels match exactly.';

CREATE FUNCTION tireless.lane_for(kind text, labels text[]) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job_kind tireless.job_kind := tireless.parse_kind(lane_for.kind);
    override_prefix text;
    chosen text;
BEGIN
    SELECT p.label_prefix || '/agent:' INTO override_prefix FROM tireless.policy p;
    SELECT substr(l, length(override_prefix) + 1) INTO chosen
      FROM unnest(coalesce(lane_for.labels, '{}')) AS l
     WHERE starts_with(l, override_prefix)
       AND tireless.is_lane_name(substr(l, length(override_prefix) + 1))
     ORDER BY l COLLATE "C"
     LIMIT 1;
    IF chosen IS NULL THEN
        SELECT kp.default_lane INTO chosen FROM tireless.kind_policy kp WHERE kp.kind = job_kind;
    END IF;
    RETURN chosen;
END;
$$;
COMMENT ON FUNCTION tireless.lane_for(text, text[]) IS
    'The lane a job of this kind with these labels goes to: the agent label''s lane (several: the first in '
    'byte order; one that names no valid lane is ignored), else the kind''s default lane. TL005 for an unknown kind.';

CREATE FUNCTION tireless.retry_delay(attempts integer) RETURNS interval
    LANGUAGE sql STABLE
AS $$
    -- Compared in numeric seconds first: base * 2^n as an interval would overflow long before the cap.
    SELECT CASE WHEN extract(epoch FROM p.backoff_base) * 2::numeric ^ e.exponent >= extract(epoch FROM p.backoff_cap)
                THEN p.backoff_cap
                ELSE p.backoff_base * 2::float8 ^ e.exponent END
      FROM tireless.policy p
     CROSS JOIN LATERAL (SELECT least(greatest(retry_delay.attempts - 1, 0), 80)) AS e(exponent);
$$;
COMMENT ON FUNCTION tireless.retry_delay(integer) IS
    'Backoff before a job that has had this many attempts may be claimed again: base * 2^(attempts-1), capped.';

-- Wake-up: runners LISTEN on channel tireless_work; the payload is the lane.
CREATE FUNCTION tireless.announce_work(lane text) RETURNS void
    LANGUAGE sql VOLATILE
AS $$
    SELECT pg_notify('tireless_work', announce_work.lane);
$$;
COMMENT ON FUNCTION tireless.announce_work(text) IS
    'NOTIFY tireless_work with the lane as payload: work may be claimable there now. Sent at commit.';

-- The circuit breaker counts consecutive failed or expired attempts per lane.
CREATE FUNCTION tireless.record_lane_outcome(lane text, succeeded boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF succeeded THEN
        -- Written only when there is something to reset, so deliveries do not contend on the lane row.
        UPDATE tireless.lane l SET consecutive_failures = 0, tripped_until = NULL
         WHERE l.name = record_lane_outcome.lane
           AND (l.consecutive_failures <> 0 OR l.tripped_until IS NOT NULL);
        RETURN;
    END IF;
    INSERT INTO tireless.lane AS l (name, consecutive_failures, tripped_until)
    SELECT record_lane_outcome.lane, 1,
           CASE WHEN p.breaker_threshold <= 1 THEN now() + p.breaker_cooldown END
      FROM tireless.policy p
    ON CONFLICT (name) DO UPDATE
       SET consecutive_failures = l.consecutive_failures + 1,
           tripped_until = CASE
               WHEN l.consecutive_failures + 1 >= (SELECT p.breaker_threshold FROM tireless.policy p)
               THEN now() + (SELECT p.breaker_cooldown FROM tireless.policy p)
               ELSE l.tripped_until END;
END;
$$;
COMMENT ON FUNCTION tireless.record_lane_outcome(text, boolean) IS
    'Circuit breaker bookkeeping: a success closes the lane''s breaker; a failure counts, and the '
    'threshold-th consecutive one trips the lane for the cool-down.';

-- Operator settings. Each returns the row as it now is.
CREATE FUNCTION tireless.set_policy(
    label_prefix text DEFAULT NULL,
    backoff_base interval DEFAULT NULL,
    backoff_cap interval DEFAULT NULL,
    breaker_threshold integer DEFAULT NULL,
    breaker_cooldown interval DEFAULT NULL
) RETURNS tireless.policy
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.policy;
BEGIN
    IF set_policy.label_prefix IS NOT NULL AND set_policy.label_prefix !~ '^[^\s/:]{1,100}$' THEN
        RAISE EXCEPTION 'label_prefix must be 1 to 100 characters without blank, "/" or ":", got %', quote_literal(left(set_policy.label_prefix, 120))
            USING ERRCODE = 'TL005';
    END IF;
    IF set_policy.breaker_threshold IS NOT NULL AND set_policy.breaker_threshold <= 0 THEN
        RAISE EXCEPTION 'breaker_threshold must be positive, got %', set_policy.breaker_threshold USING ERRCODE = 'TL005';
    END IF;
    IF set_policy.breaker_cooldown < interval '0' THEN
        RAISE EXCEPTION 'breaker_cooldown must not be negative, got %', set_policy.breaker_cooldown USING ERRCODE = 'TL005';
    END IF;
    IF set_policy.backoff_base < interval '0' OR set_policy.backoff_cap < interval '0' THEN
        RAISE EXCEPTION 'backoff must not be negative, got base % and cap %', set_policy.backoff_base, set_policy.backoff_cap
            USING ERRCODE = 'TL005';
    END IF;
    IF coalesce(set_policy.backoff_cap, (SELECT p.backoff_cap FROM tireless.policy p))
       < coalesce(set_policy.backoff_base, (SELECT p.backoff_base FROM tireless.policy p)) THEN
        RAISE EXCEPTION 'backoff_cap % is below backoff_base %',
            coalesce(set_policy.backoff_cap, (SELECT p.backoff_cap FROM tireless.policy p)),
            coalesce(set_policy.backoff_base, (SELECT p.backoff_base FROM tireless.policy p))
            USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.policy p
       SET label_prefix = coalesce(set_policy.label_prefix, p.label_prefix),
           backoff_base = coalesce(set_policy.backoff_base, p.backoff_base),
           backoff_cap = coalesce(set_policy.backoff_cap, p.backoff_cap),
           breaker_threshold = coalesce(set_policy.breaker_threshold, p.breaker_threshold),
           breaker_cooldown = coalesce(set_policy.breaker_cooldown, p.breaker_cooldown)
     RETURNING p.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_policy(text, interval, interval, integer, interval) IS
    'Changes the store-wide settings named (a null argument leaves its setting as it is) and returns them.';

CREATE FUNCTION tireless.set_kind_policy(kind text, default_lane text DEFAULT NULL, max_attempts integer DEFAULT NULL)
    RETURNS tireless.kind_policy
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job_kind tireless.job_kind := tireless.parse_kind(set_kind_policy.kind);
    result tireless.kind_policy;
BEGIN
    IF set_kind_policy.default_lane IS NOT NULL THEN
        PERFORM tireless.check_lane(set_kind_policy.default_lane);
    END IF;
    IF set_kind_policy.max_attempts IS NOT NULL AND set_kind_policy.max_attempts <= 0 THEN
        RAISE EXCEPTION 'max_attempts must be positive, got %', set_kind_policy.max_attempts USING ERRCODE = 'TL005';
    END IF;
    UPDATE tireless.kind_policy kp
       SET default_lane = coalesce(set_kind_policy.default_lane, kp.default_lane),
           max_attempts = coalesce(set_kind_policy.max_attempts, kp.max_attempts)
     WHERE kp.kind = job_kind
     RETURNING kp.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_kind_policy(text, text, integer) IS
    'Sets a kind''s default lane and attempt budget (a null argument leaves it as it is); returns the row.';

CREATE FUNCTION tireless.ensure_lane(lane text) RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM tireless.check_lane(ensure_lane.lane);
    INSERT INTO tireless.lane (name) VALUES (ensure_lane.lane) ON CONFLICT (name) DO NOTHING;
END;
$$;
COMMENT ON FUNCTION tireless.ensure_lane(text) IS 'Gives a lane its settings row (open, unlimited) if it has none; TL005 for a bad name.';

CREATE FUNCTION tireless.set_lane_capacity(lane text, capacity integer) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    IF set_lane_capacity.capacity < 0 THEN
        RAISE EXCEPTION 'capacity must be null (unlimited) or at least 0, got %', set_lane_capacity.capacity
            USING ERRCODE = 'TL005';
    END IF;
    PERFORM tireless.ensure_lane(set_lane_capacity.lane);
    UPDATE tireless.lane l SET capacity = set_lane_capacity.capacity
     WHERE l.name = set_lane_capacity.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_lane_capacity(text, integer) IS
    'At most capacity claimed jobs in the lane at once (null: unlimited; 0 holds the lane''s work back). Returns the lane.';

CREATE FUNCTION tireless.pause_lane(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(pause_lane.lane);
    UPDATE tireless.lane l SET paused = true WHERE l.name = pause_lane.lane RETURNING l.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.pause_lane(text) IS
    'claim_next hands out nothing from the lane until resume_lane; claims already held run on. Returns the lane.';

CREATE FUNCTION tireless.resume_lane(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(resume_lane.lane);
    UPDATE tireless.lane l SET paused = false WHERE l.name = resume_lane.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.resume_lane(text) IS 'Undoes pause_lane and wakes the lane''s runners. Returns the lane.';

CREATE FUNCTION tireless.reset_lane_breaker(lane text) RETURNS tireless.lane
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.lane;
BEGIN
    PERFORM tireless.ensure_lane(reset_lane_breaker.lane);
    UPDATE tireless.lane l SET consecutive_failures = 0, tripped_until = NULL
     WHERE l.name = reset_lane_breaker.lane RETURNING l.* INTO result;
    PERFORM tireless.announce_work(result.name);
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.reset_lane_breaker(text) IS
    'Closes the lane''s circuit breaker and forgets its failures, then wakes its runners. Returns the lane.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tireless FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA tireless FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.job_kind_for(text[]), tireless.lane_for(text, text[])
    TO tireless_runner, tireless_poller;
GRANT EXECUTE ON FUNCTION
    tireless.set_policy(text, interval, interval, integer, interval),
    tireless.set_kind_policy(text, text, integer),
    tireless.set_lane_capacity(text, integer),
    tireless.pause_lane(text),
    tireless.resume_lane(text),
    tireless.reset_lane_breaker(text)
    TO tireless_admin;
GRANT SELECT ON ALL TABLES IN SCHEMA tireless TO tireless_admin;
