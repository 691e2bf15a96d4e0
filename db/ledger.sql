-- The ledger: what each attempt's agent spent on its models, as the runner's gateway read it
-- (record_usage), the prices that make it cost (set_model_price), and the budgets of tokens and cost
-- a job and a day may spend (the allowance the gateway asks before it forwards a request).
--
-- The current definition of each function, view and trigger here, with its comment and grants.
-- tireless.migrate applies the files of db/ in a fixed order after the migrations (db/README.md).

-- A model name or a prefix*: what set_model_price takes, and what a gateway may record.
CREATE OR REPLACE FUNCTION tireless.is_model_name(name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN name ~ '^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,198}\*?$';
COMMENT ON FUNCTION tireless.is_model_name(text) IS
    'True for a model name a price may name: 1 to 200 letters, digits and . _ : / @ + -, starting with a letter or '
    'digit, with one * at its end for a prefix.';
REVOKE ALL ON FUNCTION tireless.is_model_name(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The price that applies to a model: its own, else the longest prefix* that starts it.
CREATE OR REPLACE FUNCTION tireless.price_of(model text) RETURNS tireless.model_price
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT p.* FROM tireless.model_price p
     WHERE p.model = price_of.model
        OR (right(p.model, 1) = '*' AND starts_with(price_of.model, left(p.model, -1)))
     ORDER BY p.model = price_of.model DESC, length(p.model) DESC
     LIMIT 1;
END;
COMMENT ON FUNCTION tireless.price_of(text) IS
    'The price of a model: its own row of tireless.model_price, else the longest prefix* that starts its name; a row '
    'of nulls when it has none (unpriced).';
REVOKE ALL ON FUNCTION tireless.price_of(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.usage_cost(model text, input bigint, output bigint, cache_read bigint,
                                               cache_write bigint) RETURNS numeric
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT (usage_cost.input * p.input + usage_cost.output * p.output
            + usage_cost.cache_read * coalesce(p.cache_read, p.input)
            + usage_cost.cache_write * coalesce(p.cache_write, p.input)) / 1000000
      FROM tireless.price_of(usage_cost.model) p;
END;
COMMENT ON FUNCTION tireless.usage_cost(text, bigint, bigint, bigint, bigint) IS
    'What tokens of a model cost in USD at its price (tireless.price_of; a cache price left null is the input '
    'price); null when the model is unpriced.';
REVOKE ALL ON FUNCTION tireless.usage_cost(text, bigint, bigint, bigint, bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.set_model_price(model text, input numeric, output numeric,
                                                    cache_read numeric DEFAULT NULL, cache_write numeric DEFAULT NULL)
    RETURNS tireless.model_price
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result tireless.model_price;
    what text;
    price numeric;
BEGIN
    IF NOT coalesce(tireless.is_model_name(set_model_price.model), false) THEN
        RAISE EXCEPTION 'model must be a model name or a prefix*, got %',
            coalesce(quote_literal(left(set_model_price.model, 220)), 'null')
            USING ERRCODE = 'TL015',
                  HINT = '1 to 200 letters, digits and . _ : / @ + -, with one * at the end for every model it starts.';
    END IF;
    FOR what, price IN VALUES ('input', set_model_price.input), ('output', set_model_price.output),
                              ('cache_read', set_model_price.cache_read), ('cache_write', set_model_price.cache_write) LOOP
        IF (price IS NULL AND what IN ('input', 'output')) OR price < 0 OR price > 1000000 THEN
            RAISE EXCEPTION 'the % price of % must be USD per million tokens from 0 to 1000000, got %',
                what, set_model_price.model, coalesce(price::text, 'null')
                USING ERRCODE = 'TL015';
        END IF;
    END LOOP;
    INSERT INTO tireless.model_price AS p (model, input, output, cache_read, cache_write)
    VALUES (set_model_price.model, set_model_price.input, set_model_price.output, set_model_price.cache_read,
            set_model_price.cache_write)
    ON CONFLICT ON CONSTRAINT one_price_per_model DO UPDATE
       SET input = excluded.input, output = excluded.output, cache_read = excluded.cache_read,
           cache_write = excluded.cache_write, set_at = now()
    RETURNING p.* INTO result;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION tireless.set_model_price(text, numeric, numeric, numeric, numeric) IS
    '(admin) The price of a model in USD per million tokens of input, output, cache read and cache write (a cache '
    'price left null is the input price); model is a name or a prefix* that prices every model it starts (a name''s '
    'own price wins, then the longest prefix). Costs are computed from it whenever they are read. Returns the price. '
    'TL015 naming a bad model or price.';
REVOKE ALL ON FUNCTION tireless.set_model_price(text, numeric, numeric, numeric, numeric) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.set_model_price(text, numeric, numeric, numeric, numeric) TO tireless_admin;

CREATE OR REPLACE FUNCTION tireless.model_prices()
    RETURNS SETOF tireless.model_price
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT p.* FROM tireless.model_price p ORDER BY p.model;
END;
COMMENT ON FUNCTION tireless.model_prices() IS 'Every price set (tireless.set_model_price), by model.';
REVOKE ALL ON FUNCTION tireless.model_prices() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.model_prices() TO tireless_runner, tireless_poller, tireless_admin;

-- The budgets of tokens and cost a setter writes: checked here, stored by set_lane_budget and
-- set_repo_budget (budgets.sql).
CREATE OR REPLACE FUNCTION tireless.check_spend_budget(tokens_per_day bigint, cost_per_day numeric,
                                                       tokens_per_job bigint, cost_per_job numeric,
                                                       tokens_per_attempt bigint, cost_per_attempt numeric,
                                                       tokens_per_issue bigint, cost_per_issue numeric) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    what text;
    amount numeric;
BEGIN
    FOR what, amount IN VALUES ('tokens_per_day', check_spend_budget.tokens_per_day::numeric),
                               ('cost_per_day', check_spend_budget.cost_per_day),
                               ('tokens_per_job', check_spend_budget.tokens_per_job::numeric),
                               ('cost_per_job', check_spend_budget.cost_per_job),
                               ('tokens_per_attempt', check_spend_budget.tokens_per_attempt::numeric),
                               ('cost_per_attempt', check_spend_budget.cost_per_attempt),
                               ('tokens_per_issue', check_spend_budget.tokens_per_issue::numeric),
                               ('cost_per_issue', check_spend_budget.cost_per_issue) LOOP
        IF amount < 0 OR amount > 1e15 THEN
            RAISE EXCEPTION '% must be null (no budget) or from 0 to 1e15, got %', what, amount USING ERRCODE = 'TL005';
        END IF;
    END LOOP;
END;
$$;
COMMENT ON FUNCTION tireless.check_spend_budget(bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) IS
    'Raises TL005 (naming the setting) unless each budget of tokens or cost (USD), per day, job, attempt and issue, '
    'is null or from 0 to 1e15.';
REVOKE ALL ON FUNCTION tireless.check_spend_budget(bigint, numeric, bigint, numeric, bigint, numeric, bigint, numeric) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.tokens_text(tokens numeric) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_char(tokens, 'FM999,999,999,999,999,990');
COMMENT ON FUNCTION tireless.tokens_text(numeric) IS 'A count with thousands separated: 3,612.';
REVOKE ALL ON FUNCTION tireless.tokens_text(numeric) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.usd_text(usd numeric) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '$' || to_char(round(usd, 2), 'FM999,999,999,999,990.00');
COMMENT ON FUNCTION tireless.usd_text(numeric) IS 'An amount of USD to the cent: $1,204.31.';
REVOKE ALL ON FUNCTION tireless.usd_text(numeric) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- What a set of usage rows spent: tokens (every kind) and cost (its priced models only).
CREATE OR REPLACE FUNCTION tireless.spend_of(job_id bigint, lane text, forge text, owner text, repo text,
                                             OUT tokens bigint, OUT cost numeric)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens), 0)::bigint,
           coalesce(sum(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                                            u.cache_write_tokens)), 0)
      FROM tireless.model_usage u
     WHERE CASE WHEN spend_of.job_id IS NOT NULL THEN u.job_id = spend_of.job_id
                WHEN spend_of.lane IS NOT NULL THEN u.spend_day = tireless.spend_day() AND u.lane = spend_of.lane
                ELSE u.spend_day = tireless.spend_day()
                     AND (u.forge, u.owner, u.repo) = (spend_of.forge, spend_of.owner, spend_of.repo) END;
END;
COMMENT ON FUNCTION tireless.spend_of(bigint, text, text, text, text) IS
    'Tokens (every kind) and USD (priced models only) spent by a job''s attempts (job_id), else by a lane today '
    '(lane), else by a repository today (UTC).';
REVOKE ALL ON FUNCTION tireless.spend_of(bigint, text, text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- What an attempt of a job spent, and what all the jobs of an issue spent.
CREATE OR REPLACE FUNCTION tireless.attempt_spend(job_id bigint, attempt integer, OUT tokens bigint, OUT cost numeric)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens), 0)::bigint,
           coalesce(sum(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                                            u.cache_write_tokens)), 0)
      FROM tireless.model_usage u
     WHERE u.job_id = attempt_spend.job_id AND u.attempt = attempt_spend.attempt;
END;
COMMENT ON FUNCTION tireless.attempt_spend(bigint, integer) IS
    'Tokens (every kind) and USD (priced models only) spent by one attempt of a job.';
REVOKE ALL ON FUNCTION tireless.attempt_spend(bigint, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.issue_spend(forge text, owner text, repo text, number integer,
                                                OUT tokens bigint, OUT cost numeric)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens), 0)::bigint,
           coalesce(sum(tireless.usage_cost(u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                                            u.cache_write_tokens)), 0)
      FROM tireless.job j
      JOIN tireless.model_usage u ON u.job_id = j.id
     WHERE (j.forge, j.owner, j.repo, j.number) = (issue_spend.forge, issue_spend.owner, issue_spend.repo, issue_spend.number);
END;
COMMENT ON FUNCTION tireless.issue_spend(text, text, text, integer) IS
    'Tokens (every kind) and USD (priced models only) spent by every job of an issue the store keeps (retries, '
    'revisions, fixes of failed checks).';
REVOKE ALL ON FUNCTION tireless.issue_spend(text, text, text, integer) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The first budget of tokens or cost that is spent, as the note the attempt ends with; null when none.
CREATE OR REPLACE FUNCTION tireless.spent_budget(tokens bigint, cost numeric, tokens_budget bigint,
                                                 cost_budget numeric, whose text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN spent_budget.tokens >= spent_budget.tokens_budget
                THEN format('token budget spent: %s of %s tokens %s', tireless.tokens_text(spent_budget.tokens),
                            tireless.tokens_text(spent_budget.tokens_budget), spent_budget.whose)
                WHEN spent_budget.cost >= spent_budget.cost_budget
                THEN format('cost budget spent: %s of %s %s', tireless.usd_text(spent_budget.cost),
                            tireless.usd_text(spent_budget.cost_budget), spent_budget.whose) END;
COMMENT ON FUNCTION tireless.spent_budget(bigint, numeric, bigint, numeric, text) IS
    'The note of a spent budget (token budget spent: 3,612 of 3,000 tokens for the job (lane cc)), or null when '
    'neither the budget of tokens nor that of cost is reached (a null budget is never spent).';
REVOKE ALL ON FUNCTION tireless.spent_budget(bigint, numeric, bigint, numeric, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.lane_usage_spent(lane text) RETURNS text
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT tireless.spent_budget(s.tokens, s.cost, l.tokens_per_day, l.cost_per_day,
                                 format('today (lane %s)', l.name))
      FROM tireless.lane l, tireless.spend_of(NULL, l.name, NULL, NULL, NULL) s
     WHERE l.name = lane_usage_spent.lane AND num_nonnulls(l.tokens_per_day, l.cost_per_day) > 0;
END;
COMMENT ON FUNCTION tireless.lane_usage_spent(text) IS
    'The note of the lane''s daily budget of tokens or cost when today''s usage (UTC) reached it; null otherwise.';
REVOKE ALL ON FUNCTION tireless.lane_usage_spent(text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.repo_usage_spent(forge text, owner text, repo text) RETURNS text
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT tireless.spent_budget(s.tokens, s.cost, l.tokens_per_day, l.cost_per_day,
                                 format('today (repository %s/%s/%s)', l.forge, l.owner, l.repo))
      FROM tireless.repo_limit l, tireless.spend_of(NULL, NULL, l.forge, l.owner, l.repo) s
     WHERE (l.forge, l.owner, l.repo) = (repo_usage_spent.forge, repo_usage_spent.owner, repo_usage_spent.repo)
       AND num_nonnulls(l.tokens_per_day, l.cost_per_day) > 0;
END;
COMMENT ON FUNCTION tireless.repo_usage_spent(text, text, text) IS
    'The note of the repository''s daily budget of tokens or cost when today''s usage (UTC, all lanes) reached it; '
    'null otherwise.';
REVOKE ALL ON FUNCTION tireless.repo_usage_spent(text, text, text) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- The note of the lane's budget, else the repository's, of a scope (the issue, the job, the
-- attempt) that its spend reached; null when neither is reached.
CREATE OR REPLACE FUNCTION tireless.scope_spent(tokens bigint, cost numeric, lane_tokens bigint, lane_cost numeric,
                                                repo_tokens bigint, repo_cost numeric, scope text, job tireless.job)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(
        tireless.spent_budget(scope_spent.tokens, scope_spent.cost, scope_spent.lane_tokens, scope_spent.lane_cost,
                              format('for the %s (lane %s)', scope_spent.scope, (scope_spent.job).lane)),
        tireless.spent_budget(scope_spent.tokens, scope_spent.cost, scope_spent.repo_tokens, scope_spent.repo_cost,
                              format('for the %s (repository %s/%s/%s)', scope_spent.scope, (scope_spent.job).forge,
                                     (scope_spent.job).owner, (scope_spent.job).repo)));
COMMENT ON FUNCTION tireless.scope_spent(bigint, numeric, bigint, numeric, bigint, numeric, text, tireless.job) IS
    'The note of the job''s lane''s budget of a scope (issue, job, attempt) that its spend reached, else its '
    'repository''s (token budget spent: 3,612 of 3,000 tokens for the job (lane cc)); null when neither is reached.';
REVOKE ALL ON FUNCTION tireless.scope_spent(bigint, numeric, bigint, numeric, bigint, numeric, text, tireless.job) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

-- What the gateway may do next for a held job: {"budgeted": whether any budget of tokens or cost
-- applies, "spent": null, or "issue", "job", "attempt" or "day", "note": the spent budget's note}.
CREATE OR REPLACE FUNCTION tireless.allowance_of(job tireless.job) RETURNS jsonb
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    lane_row tireless.lane;
    repo_row tireless.repo_limit;
    spent record;
    note text;
BEGIN
    SELECT * INTO lane_row FROM tireless.lane l WHERE l.name = job.lane;
    SELECT * INTO repo_row FROM tireless.repo_limit l WHERE (l.forge, l.owner, l.repo) = (job.forge, job.owner, job.repo);
    IF num_nonnulls(lane_row.tokens_per_issue, lane_row.cost_per_issue, repo_row.tokens_per_issue, repo_row.cost_per_issue) > 0 THEN
        spent := tireless.issue_spend(job.forge, job.owner, job.repo, job.number);
        note := tireless.scope_spent(spent.tokens, spent.cost, lane_row.tokens_per_issue, lane_row.cost_per_issue,
                                     repo_row.tokens_per_issue, repo_row.cost_per_issue, 'issue', job);
        IF note IS NOT NULL THEN
            RETURN jsonb_build_object('budgeted', true, 'spent', 'issue', 'note', note);
        END IF;
    END IF;
    IF num_nonnulls(lane_row.tokens_per_job, lane_row.cost_per_job, repo_row.tokens_per_job, repo_row.cost_per_job) > 0 THEN
        spent := tireless.spend_of(job.id, NULL, NULL, NULL, NULL);
        note := tireless.scope_spent(spent.tokens, spent.cost, lane_row.tokens_per_job, lane_row.cost_per_job,
                                     repo_row.tokens_per_job, repo_row.cost_per_job, 'job', job);
        IF note IS NOT NULL THEN
            RETURN jsonb_build_object('budgeted', true, 'spent', 'job', 'note', note);
        END IF;
    END IF;
    IF num_nonnulls(lane_row.tokens_per_attempt, lane_row.cost_per_attempt, repo_row.tokens_per_attempt,
                    repo_row.cost_per_attempt) > 0 THEN
        spent := tireless.attempt_spend(job.id, job.attempts);
        note := tireless.scope_spent(spent.tokens, spent.cost, lane_row.tokens_per_attempt, lane_row.cost_per_attempt,
                                     repo_row.tokens_per_attempt, repo_row.cost_per_attempt, 'attempt', job);
        IF note IS NOT NULL THEN
            RETURN jsonb_build_object('budgeted', true, 'spent', 'attempt', 'note', note);
        END IF;
    END IF;
    note := coalesce(tireless.lane_usage_spent(job.lane), tireless.repo_usage_spent(job.forge, job.owner, job.repo));
    IF note IS NOT NULL THEN
        RETURN jsonb_build_object('budgeted', true, 'spent', 'day', 'note', note);
    END IF;
    RETURN jsonb_build_object(
        'budgeted', num_nonnulls(lane_row.tokens_per_job, lane_row.cost_per_job, lane_row.tokens_per_day,
                                 lane_row.cost_per_day, lane_row.tokens_per_attempt, lane_row.cost_per_attempt,
                                 lane_row.tokens_per_issue, lane_row.cost_per_issue, repo_row.tokens_per_job,
                                 repo_row.cost_per_job, repo_row.tokens_per_day, repo_row.cost_per_day,
                                 repo_row.tokens_per_attempt, repo_row.cost_per_attempt, repo_row.tokens_per_issue,
                                 repo_row.cost_per_issue) > 0,
        'spent', NULL, 'note', NULL);
END;
$$;
COMMENT ON FUNCTION tireless.allowance_of(tireless.job) IS
    'Whether the job may spend more: {budgeted (a budget of tokens or cost applies to it), spent (null; issue, job or '
    'attempt: its lane''s or repository''s budget per issue, per job or per attempt is reached, the widest first; '
    'day: a daily one is), note (the spent budget''s)}.';
REVOKE ALL ON FUNCTION tireless.allowance_of(tireless.job) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.usage_allowance(job_id bigint, worker text, token uuid) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
BEGIN
    SELECT * INTO job FROM tireless.job j WHERE j.id = usage_allowance.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no job with id %', coalesce(usage_allowance.job_id::text, 'null') USING ERRCODE = 'TL001';
    END IF;
    PERFORM tireless.check_holder(job, usage_allowance.worker, usage_allowance.token);
    RETURN tireless.allowance_of(job);
END;
$$;
COMMENT ON FUNCTION tireless.usage_allowance(bigint, text, uuid) IS
    'What the holder''s gateway asks before it forwards a model request: {budgeted, spent (null, job or day), note} '
    '(tireless.allowance_of). TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';
REVOKE ALL ON FUNCTION tireless.usage_allowance(bigint, text, uuid) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.usage_allowance(bigint, text, uuid) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.record_usage(job_id bigint, worker text, token uuid, usage jsonb)
    RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    item jsonb;
    ordinal bigint;
    counts CONSTANT text[] := ARRAY['requests', 'unread', 'input', 'output', 'cache_read', 'cache_write'];
BEGIN
    IF jsonb_typeof(record_usage.usage) IS DISTINCT FROM 'array' OR jsonb_array_length(record_usage.usage) > 1000 THEN
        RAISE EXCEPTION 'usage must be a JSON array of at most 1000 rows, got %',
            coalesce(left(record_usage.usage::text, 200), 'null') USING ERRCODE = 'TL005';
    END IF;
    FOR item, ordinal IN SELECT e, o FROM jsonb_array_elements(record_usage.usage) WITH ORDINALITY AS x(e, o) LOOP
        IF NOT coalesce(jsonb_typeof(item) = 'object'
                AND jsonb_typeof(item -> 'model') = 'string' AND length(item ->> 'model') BETWEEN 1 AND 200
                AND (SELECT bool_and((item ->> c) ~ '^[0-9]{1,15}$') FROM unnest(counts) AS c)
                AND (item ->> 'unread')::bigint <= (item ->> 'requests')::bigint, false) THEN
            RAISE EXCEPTION 'usage[%] is not {model, requests, unread, input, output, cache_read, cache_write}: %',
                ordinal - 1, left(item::text, 300)
                USING ERRCODE = 'TL005',
                      HINT = 'model a name of 1 to 200 characters; counts whole numbers, not negative; unread at most requests.';
        END IF;
    END LOOP;
    job := tireless.held_job(record_usage.job_id, record_usage.worker, record_usage.token);
    INSERT INTO tireless.model_usage AS u (job_id, attempt, model, spend_day, lane, forge, owner, repo, requests,
                                           unread, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
    SELECT job.id, job.attempts, r.model, tireless.spend_day(), job.lane, job.forge, job.owner, job.repo,
           sum(r.requests), sum(r.unread), sum(r.input), sum(r.output), sum(r.cache_read), sum(r.cache_write)
      FROM jsonb_to_recordset(record_usage.usage)
           AS r(model text, requests bigint, unread bigint, input bigint, output bigint, cache_read bigint,
                cache_write bigint)
     GROUP BY r.model
    ON CONFLICT ON CONSTRAINT model_usage_per_attempt_model_and_day DO UPDATE
       SET requests = u.requests + excluded.requests, unread = u.unread + excluded.unread,
           input_tokens = u.input_tokens + excluded.input_tokens,
           output_tokens = u.output_tokens + excluded.output_tokens,
           cache_read_tokens = u.cache_read_tokens + excluded.cache_read_tokens,
           cache_write_tokens = u.cache_write_tokens + excluded.cache_write_tokens;
    RETURN tireless.allowance_of(job);
END;
$$;
COMMENT ON FUNCTION tireless.record_usage(bigint, text, uuid, jsonb) IS
    'The holder''s gateway adds what its attempt''s agent used since its last record: a JSON array of {model, '
    'requests, unread (answers whose usage it could not read), input, output, cache_read, cache_write} (tokens), '
    'added to the attempt''s row of each model for today (UTC). Returns the allowance (tireless.allowance_of). TL005 '
    'naming a malformed row; TL001 for an unknown job, TL004 when worker (or token, or the login) does not hold it.';
REVOKE ALL ON FUNCTION tireless.record_usage(bigint, text, uuid, jsonb) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_usage(bigint, text, uuid, jsonb) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.job_model_usage(job_id bigint)
    RETURNS TABLE (attempt integer, model text, requests bigint, unread bigint, input_tokens bigint,
                   output_tokens bigint, cache_read_tokens bigint, cache_write_tokens bigint, cost numeric)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT u.attempt, u.model, sum(u.requests)::bigint, sum(u.unread)::bigint, sum(u.input_tokens)::bigint,
           sum(u.output_tokens)::bigint, sum(u.cache_read_tokens)::bigint, sum(u.cache_write_tokens)::bigint,
           tireless.usage_cost(u.model, sum(u.input_tokens)::bigint, sum(u.output_tokens)::bigint,
                               sum(u.cache_read_tokens)::bigint, sum(u.cache_write_tokens)::bigint)
      FROM tireless.model_usage u
     WHERE u.job_id = job_model_usage.job_id
     GROUP BY u.attempt, u.model
     ORDER BY u.attempt, u.model;
END;
COMMENT ON FUNCTION tireless.job_model_usage(bigint) IS
    'What each attempt of the job asked of each model: requests, the unread ones (tokens unknown), tokens of each '
    'kind, and the cost in USD at today''s prices (null: unpriced). What `tireless show`, `jobs` and the job page show.';
REVOKE ALL ON FUNCTION tireless.job_model_usage(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_model_usage(bigint) TO tireless_runner, tireless_poller, tireless_admin;

-- /metrics reads this at each scrape: one pass over model_usage, which prune keeps as short as the jobs.
CREATE OR REPLACE VIEW tireless.agent_usage AS
SELECT t.*,
       t.input_tokens * t.input_price / 1000000 AS input_cost,
       t.output_tokens * t.output_price / 1000000 AS output_cost,
       t.cache_read_tokens * coalesce(t.cache_read_price, t.input_price) / 1000000 AS cache_read_cost,
       t.cache_write_tokens * coalesce(t.cache_write_price, t.input_price) / 1000000 AS cache_write_cost,
       (t.input_tokens * t.input_price + t.output_tokens * t.output_price
        + t.cache_read_tokens * coalesce(t.cache_read_price, t.input_price)
        + t.cache_write_tokens * coalesce(t.cache_write_price, t.input_price)) / 1000000 AS cost
  FROM (SELECT u.lane, u.forge, u.owner, u.repo, u.model,
               sum(u.requests)::bigint AS requests, sum(u.unread)::bigint AS unread,
               sum(u.input_tokens)::bigint AS input_tokens, sum(u.output_tokens)::bigint AS output_tokens,
               sum(u.cache_read_tokens)::bigint AS cache_read_tokens,
               sum(u.cache_write_tokens)::bigint AS cache_write_tokens,
               p.input AS input_price, p.output AS output_price, p.cache_read AS cache_read_price,
               p.cache_write AS cache_write_price
          FROM tireless.model_usage u
          LEFT JOIN LATERAL (SELECT q.* FROM tireless.model_price q
                              WHERE q.model = u.model
                                 OR (right(q.model, 1) = '*' AND starts_with(u.model, left(q.model, -1)))
                              ORDER BY q.model = u.model DESC, length(q.model) DESC LIMIT 1) p ON true
         GROUP BY u.lane, u.forge, u.owner, u.repo, u.model, p.input, p.output, p.cache_read, p.cache_write) t;
COMMENT ON VIEW tireless.agent_usage IS
    'Per lane, repository and model, over the jobs the store keeps: model requests, the unread ones, tokens of each '
    'kind, the prices that apply and the cost in USD of each kind and in all (null: unpriced). /metrics exports '
    'them as counters.';
REVOKE ALL ON tireless.agent_usage FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.agent_usage TO tireless_runner, tireless_poller, tireless_admin;

-- The one line that says what a job's agent spent, wherever a job is shown: `tireless show`, the job
-- page, the outcome comment and the pull request's body.
CREATE OR REPLACE FUNCTION tireless.spend_text(job_id bigint) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT format('%s model request%s, %s tokens, %s%s',
                  tireless.tokens_text(sum(u.requests)), CASE WHEN sum(u.requests) = 1 THEN '' ELSE 's' END,
                  tireless.tokens_text(sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens)),
                  CASE WHEN bool_and(u.cost IS NULL) THEN 'unpriced'
                       ELSE tireless.usd_text(sum(u.cost)) || CASE WHEN bool_or(u.cost IS NULL) THEN ' + unpriced' ELSE '' END END,
                  CASE WHEN sum(u.unread) > 0 THEN format(' (%s with tokens unknown)', tireless.tokens_text(sum(u.unread))) ELSE '' END)
      FROM tireless.job_model_usage(spend_text.job_id) u
    HAVING count(*) > 0;
END;
COMMENT ON FUNCTION tireless.spend_text(bigint) IS
    'What the job''s agent spent, in one line: 12 model requests, 84,210 tokens, $0.41 (unpriced, or + unpriced, for '
    'models without a price; the answers whose tokens are unknown said); null when it made no model request '
    'through a gateway.';
REVOKE ALL ON FUNCTION tireless.spend_text(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.spend_text(bigint) TO tireless_runner, tireless_poller, tireless_admin;

-- The overview reads this: what was spent each UTC day by lane and repository (today's rows first
-- in its queries), over the jobs the store keeps.
CREATE OR REPLACE VIEW tireless.usage_by_day AS
SELECT u.spend_day, u.lane, u.forge, u.owner, u.repo,
       sum(u.requests)::bigint AS requests, sum(u.unread)::bigint AS unread,
       sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens)::bigint AS tokens,
       sum((u.input_tokens * p.input + u.output_tokens * p.output
            + u.cache_read_tokens * coalesce(p.cache_read, p.input)
            + u.cache_write_tokens * coalesce(p.cache_write, p.input)) / 1000000) AS cost,
       bool_or(p.input IS NULL) AS unpriced
  FROM tireless.model_usage u
  LEFT JOIN LATERAL (SELECT q.* FROM tireless.model_price q
                      WHERE q.model = u.model OR (right(q.model, 1) = '*' AND starts_with(u.model, left(q.model, -1)))
                      ORDER BY q.model = u.model DESC, length(q.model) DESC LIMIT 1) p ON true
 GROUP BY u.spend_day, u.lane, u.forge, u.owner, u.repo;
COMMENT ON VIEW tireless.usage_by_day IS
    'Per UTC day, lane and repository, over the jobs the store keeps: model requests (unread: tokens unknown), '
    'tokens of every kind, the cost in USD of its priced models, and whether some model was unpriced. The '
    'overview''s spend today and its chart over the last days.';
REVOKE ALL ON tireless.usage_by_day FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT SELECT ON tireless.usage_by_day TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.transcript_limit() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 20 * 1024 * 1024;
COMMENT ON FUNCTION tireless.transcript_limit() IS
    'The bytes of exchanges (requests and answers, before compression) an attempt''s transcript keeps: 20 MiB.';
REVOKE ALL ON FUNCTION tireless.transcript_limit() FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.transcript_limit() TO tireless_runner, tireless_poller, tireless_admin;

CREATE OR REPLACE FUNCTION tireless.record_exchange(job_id bigint, worker text, token uuid, api text, model text,
                                                    status integer, request bytea, answer bytea,
                                                    request_bytes bigint, answer_bytes bigint)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    job tireless.job;
    kept bigint;
    whole boolean;
BEGIN
    IF record_exchange.api IS NULL OR record_exchange.api NOT IN ('anthropic', 'chat', 'responses')
       OR record_exchange.model IS NULL OR length(record_exchange.model) NOT BETWEEN 1 AND 200
       OR record_exchange.status IS NULL OR record_exchange.status NOT BETWEEN 100 AND 999
       OR record_exchange.request_bytes IS NULL OR record_exchange.request_bytes < 0
       OR record_exchange.answer_bytes IS NULL OR record_exchange.answer_bytes < 0
       OR (record_exchange.request IS NULL) <> (record_exchange.answer IS NULL) THEN
        RAISE EXCEPTION 'an exchange is {api (anthropic, chat or responses), model, status, request and answer (both or '
                        'neither), their sizes}, got api %, model %, status %, sizes % and %',
            coalesce(quote_literal(left(record_exchange.api, 50)), 'null'),
            coalesce(quote_literal(left(record_exchange.model, 220)), 'null'),
            coalesce(record_exchange.status::text, 'null'), coalesce(record_exchange.request_bytes::text, 'null'),
            coalesce(record_exchange.answer_bytes::text, 'null')
            USING ERRCODE = 'TL005';
    END IF;
    job := tireless.held_job(record_exchange.job_id, record_exchange.worker, record_exchange.token);
    SELECT coalesce(sum(e.request_bytes + e.answer_bytes) FILTER (WHERE e.request IS NOT NULL), 0) INTO kept
      FROM tireless.model_exchange e WHERE e.job_id = job.id AND e.attempt = job.attempts;
    whole := record_exchange.request IS NOT NULL
             AND kept + record_exchange.request_bytes + record_exchange.answer_bytes <= tireless.transcript_limit();
    INSERT INTO tireless.model_exchange (job_id, attempt, seq, api, model, status, request, answer, request_bytes,
                                         answer_bytes)
    SELECT job.id, job.attempts,
           coalesce((SELECT max(e.seq) FROM tireless.model_exchange e WHERE e.job_id = job.id AND e.attempt = job.attempts), 0) + 1,
           record_exchange.api, record_exchange.model, record_exchange.status,
           CASE WHEN whole THEN record_exchange.request END, CASE WHEN whole THEN record_exchange.answer END,
           record_exchange.request_bytes, record_exchange.answer_bytes;
    RETURN whole;
END;
$$;
COMMENT ON FUNCTION tireless.record_exchange(bigint, text, uuid, text, text, integer, bytea, bytea, bigint, bigint) IS
    'The holder''s gateway adds an exchange to its attempt''s transcript: the API, the model, the answer''s status, '
    'the request and the answer (masked, compressed; null for one the gateway did not keep) and their sizes before '
    'compression. Kept whole while the attempt''s kept exchanges stay within tireless.transcript_limit(), else its '
    'sizes only (cut). Returns whether it was kept whole. TL005 for a malformed exchange; TL001 for an unknown job, '
    'TL004 when worker (or token, or the login) does not hold it.';
REVOKE ALL ON FUNCTION tireless.record_exchange(bigint, text, uuid, text, text, integer, bytea, bytea, bigint, bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.record_exchange(bigint, text, uuid, text, text, integer, bytea, bytea, bigint, bigint) TO tireless_runner;

CREATE OR REPLACE FUNCTION tireless.job_transcript(job_id bigint)
    RETURNS TABLE (attempt integer, seq integer, at timestamptz, api text, model text, status integer, request bytea,
                   answer bytea, request_bytes bigint, answer_bytes bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT e.attempt, e.seq, e.at, e.api, e.model, e.status, e.request, e.answer, e.request_bytes, e.answer_bytes
      FROM tireless.model_exchange e
     WHERE e.job_id = job_transcript.job_id
     ORDER BY e.attempt, e.seq;
END;
COMMENT ON FUNCTION tireless.job_transcript(bigint) IS
    'The transcript of each attempt of the job, exchange by exchange (request and answer zlib-compressed, null when '
    'cut): what `tireless show JOB --transcript` and the job page render as a session.';
REVOKE ALL ON FUNCTION tireless.job_transcript(bigint) FROM PUBLIC, tireless_runner, tireless_poller, tireless_admin;
GRANT EXECUTE ON FUNCTION tireless.job_transcript(bigint) TO tireless_admin;
