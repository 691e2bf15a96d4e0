"""`tireless web` (tireless/web/): the dashboard's pages and actions, its guard, /metrics, the
webhooks, and the real server under a browser and raw sockets."""
