"""The store's rules, exercised through its SQL functions (by psql, psycopg or JobStore calls):
claim, transition, enqueue and the work rule, expiry, history, roles, budgets, the catalog, the
migrations and db/schema.sql, and the invariants under faults and the soak."""
