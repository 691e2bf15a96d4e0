"""Secrets masked in text, as CI systems mask them in their logs: every secret value the worker
knows (the database password, forge tokens, webhook secrets) is written `***` in a job's note, in
the agent's output the worker passes on, and in every line the worker logs."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"
SHORTEST = 4
"""Values shorter than this are not masked: they would mask ordinary words (CI systems skip them too)."""


class Masker:
    """Replaces every known secret, and the forms a URL gives it (percent-encoded), by `***`."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = {
            form
            for secret in secrets
            if len(secret) >= SHORTEST
            for form in (secret, quote(secret, safe=""), quote_plus(secret))
        }
        # Longest first: a secret that contains another is masked whole.
        ordered = sorted(forms, key=len, reverse=True)
        self._text = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        encoded = [form.encode() for form in ordered]
        self._bytes = re.compile(b"|".join(map(re.escape, encoded))) if encoded else None
        self.longest = max(map(len, encoded), default=0)
        """The longest secret in bytes: how much of a stream `OutputMasker` holds back."""
        self._lines_whole = not any(b"\n" in form for form in encoded)
        """No secret spans lines: a stream's complete lines can go out at once."""

    def mask(self, text: str) -> str:
        return text if self._text is None else self._text.sub(MASK, text)

    def mask_bytes(self, data: bytes) -> bytes:
        return data if self._bytes is None else self._bytes.sub(MASK.encode(), data)

    def ready(self, data: bytes) -> tuple[bytes, bytes]:
        """`data` read so far from a stream: the masked bytes safe to pass on now, and the bytes to
        hold back (the last `longest - 1`, they may be the start of a secret, unless they are
        complete lines: an agent's line of output is passed on, and counts as progress, at once)."""
        if self._bytes is None:
            return data, b""
        cut = max(len(data) - (self.longest - 1), 0)
        if self._lines_whole:
            cut = max(cut, data.rfind(b"\n") + 1)
        for match in self._bytes.finditer(data):
            if match.start() >= cut:
                break
            cut = max(cut, match.end())  # a whole secret found across the cut goes out masked
        return self.mask_bytes(data[:cut]), data[cut:]


class OutputMasker:
    """Masks a stream read in chunks (the agent's output): a secret split between two chunks is
    masked too."""

    def __init__(self, masker: Masker) -> None:
        self._masker = masker
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        """The masked bytes that are safe to pass on now."""
        masked, self._held = self._masker.ready(self._held + chunk)
        return masked

    def end(self) -> bytes:
        """What was held back, masked: the stream has ended."""
        held, self._held = self._held, b""
        return self._masker.mask_bytes(held)


class MaskingFilter(logging.Filter):
    """A logging filter that masks each record's message (its arguments included)."""

    def __init__(self, masker: Masker) -> None:
        super().__init__()
        self._masker = masker

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._masker.mask(record.getMessage())
        record.args = None
        return True
