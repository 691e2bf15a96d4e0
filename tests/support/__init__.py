"""Helpers shared by the tests; the fixtures they share live in the conftest.py of the directory
that shares them."""
