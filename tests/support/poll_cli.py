"""The token and labels of the CLI poller's tests, shared with the operator's."""

from __future__ import annotations

TOKEN = "tok-cli-93be0f51d2"


TOKEN_ENV = {"TIRELESS_TOKEN_GITEA": TOKEN}


PLAN = ["tireless", "tireless/plan"]
