"""What the MCP tests share: a store with rubrics, artifact types and tokens, and the
SDK's own client against `rubricflow mcp` (stdio, a real subprocess) or `rubricflow
serve` (streamable HTTP at /mcp). The fixtures are in conftest.py.

This folder has no `__init__.py` on purpose: as a package it would be named `mcp` and
hide the SDK from every test that imports it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from review.conftest import run_blocking
from server.conftest import RunningServer

from rubricflow.application import Application
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactType, RubricBinding


def gate(version: str, threshold: float) -> dict[str, Any]:
    """A deterministic rubric: the content must not say FAIL."""
    return {
        "id": "gate",
        "name": "Gate",
        "version": version,
        "description": "Content that does not say FAIL",
        "pass_threshold": threshold,
        "criteria": [
            {
                "id": "clean",
                "name": "Clean",
                "description": "The content does not say FAIL.",
                "required": True,
                "scoring": {
                    "method": "deterministic",
                    "function": "contains_none",
                    "config": {"terms": ["FAIL"]},
                },
            }
        ],
    }


#: a rubric an LLM judges: without a judge, evaluate_text refuses it
TONE: dict[str, Any] = {
    "id": "tone",
    "name": "Tone",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "polite",
            "description": "The reply is polite.",
            "scoring": {"method": "llm_verdict"},
        }
    ],
}
PASS = "a fine note"
FAIL = "this one says FAIL"


@dataclass
class Tokens:
    """`sub` and `other`: submitters of `note`; `rev`: a reviewer; `admin`."""

    sub: str
    other: str
    rev: str
    admin: str


def prepare_store(db_url: str) -> Tokens:
    """gate 1.0.0 and 1.1.0, tone, the types `note` and `secret` (both reviewed by
    gate), and a token per principal."""

    async def work() -> Tokens:
        async with await Application.open(db_url) as app:
            for rubric in (gate("1.0.0", 0.5), gate("1.1.0", 0.75), TONE):
                await app.store.rubrics.register(parse_rubric(rubric))
            binding = (RubricBinding(rubric_id="gate"),)
            await app.artifacts.set_type(ArtifactType(name="note", rubrics=binding))
            await app.artifacts.set_type(ArtifactType(name="secret", rubrics=binding))

            async def issue(name: str, role: str, *types: str) -> str:
                made = await app.store.tokens.create(
                    name, role=role, types=types, created_by="tests"
                )
                return made.secret

            return Tokens(
                sub=await issue("sub", "submitter", "note"),
                other=await issue("other", "submitter", "note"),
                rev=await issue("rev", "reviewer"),
                admin=await issue("admin", "admin"),
            )

    tokens: Tokens = run_blocking(work())
    return tokens


def stdio_client(db_url: str, *args: str) -> Client:
    """The SDK's client over `rubricflow mcp --db DB --actor bot`, a real subprocess."""
    command = ["-m", "rubricflow", "mcp", "--db", db_url, "--actor", "bot", *args]
    return Client(StdioServerParameters(command=sys.executable, args=command), cache=None)


@dataclass
class McpServer:
    """A `rubricflow serve` process with its tokens."""

    server: RunningServer
    tokens: Tokens

    @property
    def url(self) -> str:
        return f"{self.server.url}/mcp"

    @asynccontextmanager
    async def client(self, token: str) -> AsyncIterator[Client]:
        """The SDK's client over streamable HTTP, sending `token`."""
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            from mcp.client.streamable_http import streamable_http_client

            async with Client(streamable_http_client(self.url, http_client=http), cache=None) as c:
                yield c


def structured(result: Any) -> dict[str, Any]:
    """A tool result's structured content; fails with its text when it is an error."""
    assert not result.is_error, result.content[0].text
    content: dict[str, Any] = result.structured_content
    return content


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    text: str = result.content[0].text
    return text
