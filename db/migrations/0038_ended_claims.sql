-- High availability (issue 37): a finish whose answer was lost (a failover, a cut connection) is sent again with the same claim token, and the store answers it as done instead of refusing it.
-- depends: 0037_lane_network

ALTER TABLE tireless.job ADD COLUMN ended_claim_token uuid;
COMMENT ON COLUMN tireless.job.ended_claim_token IS
    'The token of the last claim its holder ended presenting that token (a delivery, a failure, a release, a '
    'give-back, a cancel); kept when the job is claimed again, untouched by an expiry. A finish or give-back sent '
    'again with this token (its answer was lost) is answered with the job as it is now, not refused: the first '
    'one committed.';
