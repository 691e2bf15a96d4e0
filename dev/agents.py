"""The coding-agent CLIs the tests, the demo and the bench run, at the versions agents.json pins:
`python -m dev.agents install [NAME...]` installs each from its registry (npm: `npm install
--prefix .tireless/agents/NAME`; PyPI: a virtual environment of its own) unless that version is
there already, and records where each is, or why it is not (its registry refused), in
.tireless/agents/status.json; `python -m dev.agents update` pins each to its registry's newest
version (`make agents` runs both); `installed(NAME)` is what a test asks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "agents.json"
PLACE = ROOT / ".tireless" / "agents"
STATUS = PLACE / "status.json"
INSTALL_TIMEOUT = 600


def pins() -> dict[str, dict[str, str]]:
    pinned: dict[str, dict[str, str]] = json.loads(PINS.read_text())
    return pinned


def _status() -> dict[str, dict[str, str]]:
    try:
        found: dict[str, dict[str, str]] = json.loads(STATUS.read_text())
    except (OSError, ValueError):
        return {}
    return found


def _write_status(status: dict[str, dict[str, str]]) -> None:
    PLACE.mkdir(parents=True, exist_ok=True)
    STATUS.write_text(json.dumps(status, indent=2) + "\n")


def _run(argv: list[str]) -> str | None:
    """None when `argv` succeeded, else the last lines of what it said."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if done.returncode == 0:
        return None
    return (
        " ".join((done.stdout + done.stderr).strip().splitlines()[-3:]) or f"exit {done.returncode}"
    )


def _system_python() -> str:
    """A Python every user may run (the system's): the tests run the CLI as an agent user, who
    cannot enter a home directory holding the tests' own Python (pyenv's under /root)."""
    return shutil.which("python3", path=os.defpath) or sys.executable


def install_one(name: str, pin: dict[str, str]) -> dict[str, str]:
    """Install one pinned CLI (unless that version is there): {"bin", "version"} or {"skipped"}."""
    place = PLACE / name
    version = pin["version"]
    marker = place / f".installed-{version}"
    if pin["registry"] == "npm":
        binary = place / "node_modules" / ".bin" / pin["bin"]
        argv = ["npm", "install", "--prefix", str(place), "--no-audit", "--no-fund",
                "--loglevel=error", f"{pin['package']}@{version}"]  # fmt: skip
        steps = [argv]
    else:
        binary = place / "venv" / "bin" / pin["bin"]
        pip = str(place / "venv" / "bin" / "pip")
        steps = [
            [_system_python(), "-m", "venv", "--clear", str(place / "venv")],
            [pip, "install", "--quiet", f"{pin['package']}=={version}"],
        ]
    if not (marker.exists() and binary.exists()):
        place.mkdir(parents=True, exist_ok=True)
        for old in place.glob(".installed-*"):
            old.unlink()
        for step in steps:
            if (failed := _run(step)) is not None:
                return {
                    "skipped": f"{pin['registry']} refused {pin['package']}@{version}: {failed}"
                }
        marker.touch()
    # Every user may read and run it (an agent user runs it in the tests' sandbox).
    subprocess.run(["chmod", "-R", "a+rX", str(place)], check=False)
    return {"bin": str(binary), "version": version}


def install(names: list[str] | None = None) -> dict[str, dict[str, str]]:
    """Install the pinned CLIs named (all when None); each one's status, also saved."""
    status = _status()
    for name, pin in pins().items():
        if names is None or name in names:
            status[name] = install_one(name, pin)
            said = status[name].get("skipped") or f"{status[name]['bin']} ({pin['version']})"
            print(f"agents: {name}: {said}", flush=True)
    _write_status(status)
    PLACE.chmod(0o755)
    PLACE.parent.chmod(0o755)
    return status


def installed(name: str) -> tuple[str | None, str]:
    """(the CLI's path, its version) when installed at its pin, installing it if need be; else
    (None, why not): what the tests skip with."""
    pin = pins()[name]
    known = _status().get(name, {})
    if known.get("version") == pin["version"] and Path(known.get("bin", "")).exists():
        return known["bin"], pin["version"]
    found = install([name])[name]
    return (
        (found.get("bin"), found.get("version", "")) if "bin" in found else (None, found["skipped"])
    )


def newest(pin: dict[str, str]) -> str | None:
    if pin["registry"] == "npm":
        argv = ["npm", "view", pin["package"], "version"]
    else:
        argv = [sys.executable, "-m", "pip", "index", "versions", pin["package"]]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    first = done.stdout.strip().splitlines()[0]
    # pip: "aider-chat (0.86.2)"; npm: "2.1.332"
    return first.split("(")[-1].rstrip(")") if "(" in first else first


def update() -> None:
    pinned: dict[str, Any] = pins()
    for name, pin in pinned.items():
        version = newest(pin)
        if version is None:
            print(f"agents: {name}: its registry did not answer; kept {pin['version']}")
        elif version != pin["version"]:
            print(f"agents: {name}: {pin['version']} -> {version}")
            pin["version"] = version
    lines = [f'  "{n}": {json.dumps(p)}' for n, p in pinned.items()]
    PINS.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m dev.agents")
    parser.add_argument("action", choices=["install", "update"])
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    if args.action == "update":
        update()
    install(args.names or None)


if __name__ == "__main__":
    main()
