"""Tools for the tests and `make run`, not for production: the stand-in forge."""
