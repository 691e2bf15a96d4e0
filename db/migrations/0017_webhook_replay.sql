-- Webhook replays: the digest of each signed delivery the dashboard acted on is kept for seven days, and the same body again within them does nothing, whatever delivery id comes with it.
-- depends: 0016_operator

-- A forge signs the body, not the delivery id header, so the body is what identifies a delivery:
-- anyone who saw one signed delivery could otherwise send it again under a new id.
CREATE TABLE tireless.webhook_delivery (
    forge text NOT NULL,
    digest bytea NOT NULL CONSTRAINT digest_is_sha256 CHECK (octet_length(digest) = 32),
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (forge, digest)
);
COMMENT ON TABLE tireless.webhook_delivery IS
    'The SHA-256 of each signed webhook body acted on, per forge, for seven days (tireless.poll_soon_once).';
COMMENT ON CONSTRAINT digest_is_sha256 ON tireless.webhook_delivery IS 'A digest is the 32 bytes of a SHA-256.';
CREATE INDEX webhook_delivery_by_age ON tireless.webhook_delivery (received_at);
COMMENT ON INDEX tireless.webhook_delivery_by_age IS 'The bodies past the seven days, found to be forgotten.';

CREATE FUNCTION tireless.poll_soon_once(forge text, owner text, repo text, digest bytea) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM tireless.check_tracked(poll_soon_once.forge, poll_soon_once.owner, poll_soon_once.repo);
    IF octet_length(poll_soon_once.digest) IS DISTINCT FROM 32 THEN
        RAISE EXCEPTION 'digest must be the 32 bytes of a SHA-256, got %',
            coalesce(octet_length(poll_soon_once.digest)::text || ' bytes', 'null')
            USING ERRCODE = 'TL005';
    END IF;
    -- The window: a body older than seven days is forgotten, so the table holds a week of deliveries.
    DELETE FROM tireless.webhook_delivery d WHERE d.received_at < now() - interval '7 days';
    -- Two copies at once: the second waits for the first's row and then finds it (or, if the
    -- first rolled back, inserts its own).
    INSERT INTO tireless.webhook_delivery AS d (forge, digest)
    VALUES (poll_soon_once.forge, poll_soon_once.digest)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN tireless.poll_soon(poll_soon_once.forge, poll_soon_once.owner, poll_soon_once.repo);
END;
$$;
COMMENT ON FUNCTION tireless.poll_soon_once(text, text, text, bytea) IS
    'tireless.poll_soon for a webhook delivery whose body has SHA-256 digest: null, and nothing done, when the same '
    'body reached this forge in the last seven days (a replay); TL008 for a repository that is not tracked, '
    'TL005 for a digest that is not 32 bytes.';

REVOKE ALL ON FUNCTION tireless.poll_soon_once(text, text, text, bytea) FROM PUBLIC;
REVOKE ALL ON tireless.webhook_delivery FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tireless.poll_soon_once(text, text, text, bytea) TO tireless_poller;
