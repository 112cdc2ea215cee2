"""The store the artifact API tests start from: one deterministic rubric (`gate`: the content
must not contain FAIL), the types `note` (reviewed on submit) and `gated` (a passing review
waits for a human's approval), and a token per role the tests need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from review.conftest import run_blocking

from rubricflow.application import Application
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactType, RubricBinding

RUBRIC: dict[str, Any] = {
    "id": "gate",
    "name": "Gate",
    "version": "1.0.0",
    "pass_threshold": 0.5,
    "criteria": [
        {
            "id": "clean",
            "description": "The content does not say FAIL.",
            "scoring": {
                "method": "deterministic",
                "function": "contains_none",
                "config": {"terms": ["FAIL"]},
            },
        }
    ],
}
PASS = "a fine note"
FAIL = "this one says FAIL"


@dataclass
class Tokens:
    """A secret per principal: `sub` and `other` are submitters of `note` and `gated`,
    `rev` a reviewer of every type, `revx` a reviewer of the `secret` type only, `admin`."""

    sub: str
    other: str
    rev: str
    revx: str
    admin: str


def prepare(db_url: str) -> Tokens:
    async def work() -> Tokens:
        async with await Application.open(db_url) as app:
            await app.store.rubrics.register(parse_rubric(RUBRIC))
            binding = (RubricBinding(rubric_id="gate"),)
            await app.artifacts.set_type(ArtifactType(name="note", rubrics=binding))
            await app.artifacts.set_type(
                ArtifactType(name="gated", rubrics=binding, requires_approval=True)
            )
            await app.artifacts.set_type(ArtifactType(name="secret", rubrics=binding))
            tokens = app.store.tokens

            async def issue(name: str, role: str, *types: str) -> str:
                issued = await tokens.create(name, role=role, types=types, created_by="tests")
                return issued.secret

            return Tokens(
                sub=await issue("sub", "submitter", "note", "gated"),
                other=await issue("other", "submitter", "note", "gated"),
                rev=await issue("rev", "reviewer"),
                revx=await issue("revx", "reviewer", "secret"),
                admin=await issue("admin", "admin"),
            )

    result: Tokens = run_blocking(work())
    return result
