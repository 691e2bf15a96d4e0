"""Tools for the tests and `make run`, not for production: the embedded PostgreSQL, the stand-in
forge, and the demo with its example issues and agent (examples/, shipped as package data)."""
