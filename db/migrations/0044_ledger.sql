-- The ledger (issue 48): what each attempt's agent spent on its models (requests and tokens per model, as the runner's gateway read them), the prices that make it cost, and budgets of tokens and cost per job and per day.
-- depends: 0043_lane_limits
--   TL015 malformed price: set_model_price names no model (a name or a prefix*), or a price is missing, negative or above 1000000 USD per million tokens

CREATE TABLE tireless.model_usage (
    job_id             bigint  NOT NULL,
    attempt            integer NOT NULL,
    model              text    NOT NULL,
    spend_day          date    NOT NULL,
    lane               text    NOT NULL,
    forge              text    NOT NULL,
    owner              text    NOT NULL,
    repo               text    NOT NULL,
    requests           bigint  NOT NULL DEFAULT 0,
    unread             bigint  NOT NULL DEFAULT 0,
    input_tokens       bigint  NOT NULL DEFAULT 0,
    output_tokens      bigint  NOT NULL DEFAULT 0,
    cache_read_tokens  bigint  NOT NULL DEFAULT 0,
    cache_write_tokens bigint  NOT NULL DEFAULT 0,
    CONSTRAINT model_usage_per_attempt_model_and_day PRIMARY KEY (job_id, attempt, model, spend_day),
    CONSTRAINT model_usage_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT model_usage_attempt_positive CHECK (attempt > 0),
    CONSTRAINT model_usage_model_bounded CHECK (length(model) BETWEEN 1 AND 200),
    CONSTRAINT model_usage_counts_not_negative CHECK (
        requests >= 0 AND unread >= 0 AND unread <= requests AND input_tokens >= 0 AND output_tokens >= 0
        AND cache_read_tokens >= 0 AND cache_write_tokens >= 0)
);
CREATE INDEX model_usage_by_day ON tireless.model_usage (spend_day, lane);
COMMENT ON TABLE tireless.model_usage IS
    'What each attempt''s agent asked of each model through the runner''s gateway, per UTC day (the daily budgets): '
    'requests, the answers among them whose usage could not be read (unread: their tokens are unknown, never zero), '
    'and input, output, cache-read and cache-write tokens, added up by tireless.record_usage as the attempt goes. '
    'Private: read tireless.job_model_usage, tireless.usage_by_day and tireless.agent_usage.';
COMMENT ON COLUMN tireless.model_usage.unread IS
    'Answers counted in requests whose usage the gateway could not read: their tokens are unknown.';
COMMENT ON CONSTRAINT model_usage_per_attempt_model_and_day ON tireless.model_usage IS
    'One row per attempt, model and UTC day; record_usage adds to it.';
COMMENT ON CONSTRAINT model_usage_of_a_job ON tireless.model_usage IS 'Usage belongs to a job and goes with it (prune).';
COMMENT ON CONSTRAINT model_usage_attempt_positive ON tireless.model_usage IS 'Attempts count from 1.';
COMMENT ON CONSTRAINT model_usage_model_bounded ON tireless.model_usage IS 'A model name is 1 to 200 characters.';
COMMENT ON CONSTRAINT model_usage_counts_not_negative ON tireless.model_usage IS
    'Counts are never negative, and unread answers are among the requests.';

CREATE TABLE tireless.model_price (
    model       text        NOT NULL,
    input       numeric     NOT NULL,
    output      numeric     NOT NULL,
    cache_read  numeric,
    cache_write numeric,
    set_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT one_price_per_model PRIMARY KEY (model),
    CONSTRAINT model_price_not_negative CHECK (
        input >= 0 AND output >= 0 AND coalesce(cache_read, 0) >= 0 AND coalesce(cache_write, 0) >= 0)
);
COMMENT ON TABLE tireless.model_price IS
    'USD per million tokens of a model (a name, or a prefix* that prices every model it starts): none is built in. '
    'A cache price left null is the input price. Written by tireless.set_model_price.';
COMMENT ON CONSTRAINT one_price_per_model ON tireless.model_price IS 'A model name or prefix has one price.';
COMMENT ON CONSTRAINT model_price_not_negative ON tireless.model_price IS 'A price is never negative.';

-- Budgets of tokens and cost beside those of runs and agent time. A lane with a daily one is
-- limited: claim_next counts it under its row lock (budgets.sql, claim.sql).
ALTER TABLE tireless.lane
    ADD COLUMN tokens_per_day bigint,
    ADD COLUMN cost_per_day numeric,
    ADD COLUMN tokens_per_job bigint,
    ADD COLUMN cost_per_job numeric,
    ADD COLUMN tokens_per_attempt bigint,
    ADD COLUMN cost_per_attempt numeric,
    ADD COLUMN tokens_per_issue bigint,
    ADD COLUMN cost_per_issue numeric,
    ADD CONSTRAINT lane_token_budgets_not_negative CHECK (
        tokens_per_day >= 0 AND cost_per_day >= 0 AND tokens_per_job >= 0 AND cost_per_job >= 0
        AND tokens_per_attempt >= 0 AND cost_per_attempt >= 0 AND tokens_per_issue >= 0 AND cost_per_issue >= 0);
COMMENT ON COLUMN tireless.lane.tokens_per_day IS 'No claim once the lane''s agents used this many tokens today (UTC); null: no budget.';
COMMENT ON COLUMN tireless.lane.cost_per_day IS 'No claim once the lane''s agents spent this many USD today (UTC); null: no budget.';
COMMENT ON COLUMN tireless.lane.tokens_per_job IS 'A job of the lane fails once its attempts used this many tokens; null: no budget.';
COMMENT ON COLUMN tireless.lane.cost_per_job IS 'A job of the lane fails once its attempts spent this many USD; null: no budget.';
COMMENT ON COLUMN tireless.lane.tokens_per_attempt IS 'An attempt of the lane''s jobs fails once it used this many tokens; null: no budget.';
COMMENT ON COLUMN tireless.lane.cost_per_attempt IS 'An attempt of the lane''s jobs fails once it spent this many USD; null: no budget.';
COMMENT ON COLUMN tireless.lane.tokens_per_issue IS 'A job of the lane fails once the jobs of its issue used this many tokens; null: no budget.';
COMMENT ON COLUMN tireless.lane.cost_per_issue IS 'A job of the lane fails once the jobs of its issue spent this many USD; null: no budget.';
COMMENT ON CONSTRAINT lane_token_budgets_not_negative ON tireless.lane IS 'A budget of tokens or cost is null (none) or 0 or more.';
ALTER TABLE tireless.lane DROP COLUMN limited;
ALTER TABLE tireless.lane
    ADD COLUMN limited boolean GENERATED ALWAYS AS
        (capacity IS NOT NULL OR runs_per_day IS NOT NULL OR agent_time_per_day IS NOT NULL
         OR tokens_per_day IS NOT NULL OR cost_per_day IS NOT NULL) STORED;
COMMENT ON COLUMN tireless.lane.limited IS
    'The lane has a capacity or a daily budget: claim_next counts it under the lane''s row lock.';

ALTER TABLE tireless.repo_limit
    ADD COLUMN tokens_per_day bigint,
    ADD COLUMN cost_per_day numeric,
    ADD COLUMN tokens_per_job bigint,
    ADD COLUMN cost_per_job numeric,
    ADD COLUMN tokens_per_attempt bigint,
    ADD COLUMN cost_per_attempt numeric,
    ADD COLUMN tokens_per_issue bigint,
    ADD COLUMN cost_per_issue numeric,
    ADD CONSTRAINT repo_token_budgets_not_negative CHECK (
        tokens_per_day >= 0 AND cost_per_day >= 0 AND tokens_per_job >= 0 AND cost_per_job >= 0
        AND tokens_per_attempt >= 0 AND cost_per_attempt >= 0 AND tokens_per_issue >= 0 AND cost_per_issue >= 0),
    DROP CONSTRAINT some_limit_is_set,
    ADD CONSTRAINT some_limit_is_set CHECK (
        num_nonnulls(capacity, runs_per_day, agent_time_per_day, tokens_per_day, cost_per_day, tokens_per_job,
                     cost_per_job, tokens_per_attempt, cost_per_attempt, tokens_per_issue, cost_per_issue) > 0);
COMMENT ON COLUMN tireless.repo_limit.tokens_per_day IS 'No claim once the repository''s agents used this many tokens today (UTC); null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.cost_per_day IS 'No claim once the repository''s agents spent this many USD today (UTC); null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.tokens_per_job IS 'A job of the repository fails once its attempts used this many tokens; null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.cost_per_job IS 'A job of the repository fails once its attempts spent this many USD; null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.tokens_per_attempt IS 'An attempt of the repository''s jobs fails once it used this many tokens; null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.cost_per_attempt IS 'An attempt of the repository''s jobs fails once it spent this many USD; null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.tokens_per_issue IS 'A job of the repository fails once the jobs of its issue used this many tokens; null: no budget.';
COMMENT ON COLUMN tireless.repo_limit.cost_per_issue IS 'A job of the repository fails once the jobs of its issue spent this many USD; null: no budget.';
COMMENT ON CONSTRAINT repo_token_budgets_not_negative ON tireless.repo_limit IS 'A budget of tokens or cost is null (none) or 0 or more.';
COMMENT ON CONSTRAINT some_limit_is_set ON tireless.repo_limit IS
    'A repository without any limit has no row (claim_next treats it as any other).';

-- The setters take the budgets of tokens and cost (db/budgets.sql defines the new signatures).
DROP FUNCTION tireless.set_lane_budget(text, integer, interval);
DROP FUNCTION tireless.set_repo_budget(text, text, text, integer, interval);
DROP FUNCTION tireless.set_repo_limit(text, text, text, integer, integer, interval);

-- The transcript: each exchange of an attempt with its model, as the gateway passed it (masked;
-- the request recorded before the gateway added the key), compressed, at most 20 MiB an attempt.
CREATE TABLE tireless.model_exchange (
    job_id        bigint      NOT NULL,
    attempt       integer     NOT NULL,
    seq           integer     NOT NULL,
    at            timestamptz NOT NULL DEFAULT now(),
    api           text        NOT NULL,
    model         text        NOT NULL,
    status        integer     NOT NULL,
    request       bytea,
    answer        bytea,
    request_bytes bigint      NOT NULL,
    answer_bytes  bigint      NOT NULL,
    CONSTRAINT model_exchange_per_attempt PRIMARY KEY (job_id, attempt, seq),
    CONSTRAINT model_exchange_of_a_job FOREIGN KEY (job_id) REFERENCES tireless.job (id) ON DELETE CASCADE,
    CONSTRAINT model_exchange_api_known CHECK (api IN ('anthropic', 'chat', 'responses')),
    CONSTRAINT model_exchange_model_bounded CHECK (length(model) BETWEEN 1 AND 200),
    CONSTRAINT model_exchange_sizes_not_negative CHECK (request_bytes >= 0 AND answer_bytes >= 0),
    CONSTRAINT model_exchange_kept_whole_or_cut CHECK ((request IS NULL) = (answer IS NULL))
);
COMMENT ON TABLE tireless.model_exchange IS
    'The transcript of an attempt: each model request and its answer as the runner''s gateway passed them (masked; '
    'the request as the agent sent it, before the key was added), zlib-compressed; request and answer null for an '
    'exchange past the attempt''s 20 MiB (its sizes kept: what was cut). Written by tireless.record_exchange; read '
    'by tireless.job_transcript; prune removes it with its job.';
COMMENT ON CONSTRAINT model_exchange_per_attempt ON tireless.model_exchange IS 'Exchanges of an attempt in the order they ended.';
COMMENT ON CONSTRAINT model_exchange_of_a_job ON tireless.model_exchange IS 'A transcript belongs to a job and goes with it (prune).';
COMMENT ON CONSTRAINT model_exchange_api_known ON tireless.model_exchange IS 'The APIs the gateway reads.';
COMMENT ON CONSTRAINT model_exchange_model_bounded ON tireless.model_exchange IS 'A model name is 1 to 200 characters.';
COMMENT ON CONSTRAINT model_exchange_sizes_not_negative ON tireless.model_exchange IS 'Sizes are never negative.';
COMMENT ON CONSTRAINT model_exchange_kept_whole_or_cut ON tireless.model_exchange IS
    'An exchange is kept whole (request and answer) or cut (neither, its sizes kept).';
