"""The `tireless` command (tireless/cli/) as a subprocess: each command, bad input, the poll
commands, an operator's day, and `make run`'s demo."""
