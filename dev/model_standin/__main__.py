"""`python -m dev.model_standin [--port N] [--script FILE]`: serve a script until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import threading
from pathlib import Path

from dev.model_standin.script import script_from_json
from dev.model_standin.server import ModelStandin


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m dev.model_standin")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path)
    args = parser.parse_args()
    script = script_from_json(json.loads(args.script.read_text())) if args.script else None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ModelStandin(script, port=args.port) as model:
        print(f"model stand-in at {model.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


if __name__ == "__main__":
    main()
