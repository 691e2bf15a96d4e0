"""A GitHub App's installation tokens (issue 49) against the stand-in GitHub's App: how many the
product mints per hour per installation over a simulated day of polls (the clock the product and
the stand-in share moved on by each poll's interval: about one per token lifetime, not one per
request), and the wall time the first poll after a cold start spends minting (the installation's
lookup and its first token) beside the poll's whole time.

    python bench/app_tokens.py [--owners 2] [--every 60] [--hours 24]

Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import statistics
import time

from cryptography.hazmat.primitives.asymmetric import rsa

from dev.standin import StandinForge
from dev.standin.apps import StandinApp
from tireless.forge import client_for
from tireless.forge.app_auth import GitHubApp


class Clock:
    """The shared simulated clock: seconds since the epoch, moved on by the bench."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def simulated_day(owners: int, every: float, hours: float) -> dict[int, int]:
    """Mints per installation over `hours` of polls every `every` seconds (each poll lists the
    issues of every owner's repository, as a poll round does)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    clock = Clock()
    app = StandinApp(key.public_key(), clock=clock)
    with StandinForge("github", installation=True) as forge:
        forge.app = app
        names = [f"owner{n}" for n in range(owners)]
        for name in names:
            app.install(name)
            forge.create_repo(name, "widgets")
        product = GitHubApp(forge.url, app.app_id, key, key_source="bench", clock=clock)
        client = client_for("github", forge.url, None, app=product)
        end = clock.now + hours * 3600
        while clock.now < end:
            for name in names:
                client.list_issues(name, "widgets", since=None)
            clock.now += every
        client.close()
        product.close()
        assert app.refused == [], app.refused
        return dict(product.mints)


def cold_start(owners: int) -> tuple[float, float]:
    """The first poll of every owner's repository in a new process: its wall time, and the part
    spent finding installations and minting their tokens."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    app = StandinApp(key.public_key())
    with StandinForge("github", installation=True) as forge:
        forge.app = app
        names = [f"owner{n}" for n in range(owners)]
        for name in names:
            app.install(name)
            forge.create_repo(name, "widgets")
            forge.create_issue(name, "widgets", "asks", ["tireless", "tireless/plan"])
        product = GitHubApp(forge.url, app.app_id, key, key_source="bench")
        client = client_for("github", forge.url, None, app=product)
        started = time.monotonic()
        for name in names:
            client.list_issues(name, "widgets", since=None)
        total = time.monotonic() - started
        client.close()
        product.close()
        return total, product.minting_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--owners", type=int, default=2)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between polls")
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    mints = simulated_day(args.owners, args.every, args.hours)
    polls = int(args.hours * 3600 / args.every)
    colds = [cold_start(args.owners) for _ in range(args.repeats)]
    total = statistics.median(t for t, _ in colds)
    minting = statistics.median(m for _, m in colds)
    print(f"## GitHub App tokens ({args.owners} installations, a poll every {args.every:.0f} s)\n")
    print("| installation | polls | requests | tokens minted | per hour |")
    print("|---|---|---|---|---|")
    for installation, count in sorted(mints.items()):
        print(f"| {installation} | {polls} | {polls} | {count} | {count / args.hours:.2f} |")
    print(
        f"\nFirst poll after a cold start ({args.owners} repositories, median of"
        f" {args.repeats}): {total * 1000:.1f} ms, of which {minting * 1000:.1f} ms finding"
        f" the installations and minting their tokens ({args.owners * 2} requests as the App)."
    )


if __name__ == "__main__":
    main()
