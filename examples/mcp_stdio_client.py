"""An MCP client of `rubricflow mcp` over stdio, with the official SDK's client: the
client starts `rubricflow mcp` as a subprocess, lists its tools, checks a draft against
an inline rubric, then submits it for review in a store of its own.

Needs the `mcp` extra (`python -m pip install -e '.[mcp]'` from the checkout). Run:
python examples/mcp_stdio_client.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from mcp import Client, StdioServerParameters

from rubricflow.application import Application
from rubricflow.core import RubricText
from rubricflow.review import ArtifactType, RubricBinding

RUBRIC = """
id: short-post
version: 1.0.0
criteria:
  - id: short
    description: At most 12 words
    scoring: {method: deterministic, function: word_count_between, config: {max: 12}}
"""


async def prepare(db: str) -> None:
    """A store with the rubric and an artifact type bound to it (what an admin sets up
    once, e.g. `rubricflow rubrics register` and `rubricflow types set`)."""
    app = await Application.open(db)
    try:
        await app.register_rubrics([RubricText(RUBRIC)])
        await app.artifacts.set_type(
            ArtifactType(name="post", rubrics=(RubricBinding(rubric_id="short-post"),))
        )
    finally:
        await app.close()


async def main(db: str) -> None:
    await prepare(db)
    server = StdioServerParameters(
        command=sys.executable,  # or "rubricflow", when it is on the client's path
        args=["-m", "rubricflow", "mcp", "--db", db, "--actor", "drafting-bot"],
    )
    async with Client(server) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        print("tools:", ", ".join(tools))
        draft = "A long post that rambles on and on about the release for far too many words."
        checked = await client.call_tool(
            "evaluate_text", {"rubric_document": RUBRIC, "content": draft}
        )
        print("draft:", checked.structured_content["verdict"])
        submitted = await client.call_tool(
            "submit_for_review", {"artifact_type": "post", "content": "Version 2.0 is out."}
        )
        print("submitted:", submitted.structured_content["status"])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(f"sqlite+aiosqlite:///{Path(folder) / 'reviews.db'}"))
