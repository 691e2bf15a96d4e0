-- A stop keeps its own note: the note of whoever asked a claimed job to stop (the admin's note or "cancelled by <login>", "issue closed", "issue no longer asks for work", "issue deleted", "issue moved to ..."), which the job ends with whatever its holder says.
-- depends: 0029_recorded_pushes

ALTER TABLE tireless.job ADD COLUMN cancel_note text;
COMMENT ON COLUMN tireless.job.cancel_note IS
    'Why a claimed job was asked to stop, set with cancel_requested_at by whoever asked (request_cancel, the work '
    'rule, the poll): the note the job ends cancelled with, or that its delivery records as come too late. Null '
    'without a request.';

-- A request made before this migration: a claim clears the note, so the note of a claimed job with a
-- request is the one request_cancel or record_issue_moved wrote; the work rule and the poll wrote none.
UPDATE tireless.job j
   SET cancel_note = coalesce(j.note, 'issue withdrew its request')
 WHERE j.state = 'claimed' AND j.cancel_requested_at IS NOT NULL;
