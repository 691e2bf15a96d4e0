-- The store's policy: the label prefix, backoff, attempts per kind, and the lanes that exist.
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

CREATE OR REPLACE FUNCTION tireless.retry_delay(attempts integer) RETURNS interval
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
REVOKE ALL ON FUNCTION tireless.retry_delay(integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The labels the mirror creates must fit each forge's limit on label names (issue 36): GitHub
-- refuses a name past 50 characters (422); Gitea and Forgejo keep 255 (models/issues/label.go,
-- Label.Name: a varchar(255) column).
CREATE OR REPLACE FUNCTION tireless.label_name_limit(kind tireless.forge_kind) RETURNS integer
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE label_name_limit.kind WHEN 'github' THEN 50 ELSE 255 END;
$$;
COMMENT ON FUNCTION tireless.label_name_limit(tireless.forge_kind) IS
    'The longest label name a forge of that kind takes: 50 characters on GitHub, 255 on Gitea and Forgejo.';
REVOKE ALL ON FUNCTION tireless.label_name_limit(tireless.forge_kind) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.longest_label(prefix text) RETURNS text
    LANGUAGE sql STABLE
AS $$
    SELECT l
      FROM unnest(ARRAY(SELECT longest_label.prefix || '/state/' || s
                          FROM unnest(enum_range(NULL::tireless.job_state)::text[] || 'waiting'::text) AS s)
                  || ARRAY(SELECT longest_label.prefix || '/' || k
                             FROM unnest(enum_range(NULL::tireless.job_kind)::text[]) AS k)) AS l
     ORDER BY length(l) DESC, l
     LIMIT 1;
$$;
COMMENT ON FUNCTION tireless.longest_label(text) IS
    'The longest of the state and mode labels the mirror writes with that label prefix (<prefix>/state/cancelled).';
REVOKE ALL ON FUNCTION tireless.longest_label(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.check_label_prefix(prefix text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    refused record;
BEGIN
    SELECT f.name, f.kind, tireless.label_name_limit(f.kind) AS limit_, tireless.longest_label(check_label_prefix.prefix) AS label
      INTO refused
      FROM tireless.forge f
     WHERE length(tireless.longest_label(check_label_prefix.prefix)) > tireless.label_name_limit(f.kind)
     ORDER BY f.name
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'label_prefix % is too long for forge % (%): its label % has % characters, % takes at most %',
            quote_literal(check_label_prefix.prefix), quote_literal(refused.name), refused.kind, quote_literal(refused.label),
            length(refused.label), refused.kind, refused.limit_
            USING ERRCODE = 'TL005',
                  HINT = format('Use a label_prefix of at most %s characters.', refused.limit_ - length(refused.label) + length(check_label_prefix.prefix));
    END IF;
END;
$$;
COMMENT ON FUNCTION tireless.check_label_prefix(text) IS
    'Raises TL005 unless every label the mirror writes with that prefix fits the label-name limit of each '
    'registered forge: set_policy checks before it changes anything.';
REVOKE ALL ON FUNCTION tireless.check_label_prefix(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- Operator settings. Each returns the row as it is after the change.
CREATE OR REPLACE FUNCTION tireless.set_policy(
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
    IF set_policy.label_prefix IS NOT NULL THEN
        PERFORM tireless.check_label_prefix(set_policy.label_prefix);
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
    'Changes the store-wide settings named (a null argument leaves its setting as it is) and returns them. TL005 '
    'for a bad value, and for a label_prefix that makes a label longer than a registered forge takes '
    '(tireless.check_label_prefix: 50 characters on GitHub).';
REVOKE ALL ON FUNCTION tireless.set_policy(text, interval, interval, integer, interval) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_policy(text, interval, interval, integer, interval) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_kind_policy(kind text, default_lane text DEFAULT NULL, max_attempts integer DEFAULT NULL)
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
REVOKE ALL ON FUNCTION tireless.set_kind_policy(text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_kind_policy(text, text, integer) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.ensure_lane(lane text) RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM tireless.check_lane(ensure_lane.lane);
    INSERT INTO tireless.lane (name) VALUES (ensure_lane.lane) ON CONFLICT (name) DO NOTHING;
END;
$$;
COMMENT ON FUNCTION tireless.ensure_lane(text) IS 'Gives a lane its settings row (open, unlimited) if it has none; TL005 for a bad name.';
REVOKE ALL ON FUNCTION tireless.ensure_lane(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.attempts_spent(job tireless.job) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN job.attempts - job.given_back;
COMMENT ON FUNCTION tireless.attempts_spent(tireless.job) IS
    'The attempts a job has used of its budget: its claims, less those given back by a stopping runner.';
REVOKE ALL ON FUNCTION tireless.attempts_spent(tireless.job) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
