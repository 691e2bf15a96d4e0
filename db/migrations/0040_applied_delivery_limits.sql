-- Delivery in one place (issue 45): job_brief answers the delivery limits that apply too (applied_max_files, applied_max_bytes: tireless.delivery_policy, the defaults filled in), a new result type, so its old signature goes; db/brief.sql defines the new one.
-- depends: 0038_ended_claims

DROP FUNCTION IF EXISTS tireless.job_brief(bigint);
