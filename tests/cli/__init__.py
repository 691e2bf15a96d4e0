"""The `tireless` command (tireless/cli/), in this process or as a process: each command, bad
input, the poll commands, an operator's day, and `make run`'s demo."""
