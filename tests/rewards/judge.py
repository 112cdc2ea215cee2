"""A scripted judge for reward tests: a criterion `Requirement: mentions X` is MET when the
content under review contains X (case-insensitive); a holistic band question is answered
with a score of 10 times the share of listed items whose keyword the content contains."""

from __future__ import annotations

import re
from typing import Any

from llm.scripted import Recorded, Reply, openai_reply, schema_of, verdict

CONTENT = re.compile(r"<content>\n(.*?)\n</content>", re.S)
REQUIREMENT = re.compile(
    r"^(?:Requirement|Fault to look for[^:]*|Description): .*?mentions (\w+)", re.I | re.M
)
ITEM = re.compile(r"^- .*?mentions (\w+)", re.I | re.M)


def content_of(request: Recorded) -> str:
    found = CONTENT.search(request.text)
    return found.group(1).lower() if found else ""


def keyword_judge(request: Recorded) -> Reply:
    text = request.text
    content = content_of(request)
    question = str(request.messages[-1].get("content", "")) if request.messages else ""
    if "score" in (schema_of(request) or {}).get("properties", {}):
        items = ITEM.findall(text) or re.findall(r"mentions (\w+)", question.split("<content>")[0])
        share = sum(1 for w in items if w.lower() in content) / max(len(items), 1)
        return openai_reply({"reasoning": "holistic", "score": round(10 * share)})
    found = REQUIREMENT.search(text)
    met = bool(found) and found.group(1).lower() in content
    return openai_reply(verdict("MET" if met else "UNMET"))


def spec(server: Any) -> str:
    return f"openai:judge@{server.url}/v1"


FAST = {
    "timeout": 2.0,
    "connect_timeout": 1.0,
    "deadline": 10.0,
    "backoff_base": 0.01,
    "backoff_max": 0.05,
    "max_attempts": 2,
    "max_concurrency": 16,
}
