"""Batch generation for a dataset: one rubric per row (as RaR does), resumable.

Rows are JSONL objects with a `prompt` (or `task`/`question`), optionally a `reference`
(or `reference_answer`/`answer`) and `examples` (a list of outputs), and an optional
`id`. Each result is appended to the output JSONL as soon as it is ready, so an
interrupted run keeps what it did; a run over the same output skips rows that already
have a rubric and retries the ones that failed. The judge's answer cache makes a re-run
of a finished row cost no call. At the end the output is rewritten in row order, one
line per row.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubricflow.errors import RubricflowError
from rubricflow.generation.generate import GenerationError, generate_rubric
from rubricflow.generation.session import JudgeOption, judge_scope

__all__ = ["BatchSummary", "generate_batch", "read_rows"]

_PROMPT_KEYS = ("prompt", "task", "question")
_REFERENCE_KEYS = ("reference", "reference_answer", "answer")


@dataclass
class BatchSummary:
    rows: int
    generated: int
    skipped: int
    failed: int
    llm_calls: int
    cache_hits: int


def _text(row: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, list):  # chat messages: the last user turn
            users = [m.get("content") for m in value if isinstance(m, dict)]
            value = users[-1] if users else None
        if isinstance(value, str) and value.strip():
            return value
    return None


def _examples(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in value]
    return [str(value)]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL dataset; a bad line is an error naming it."""
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise RubricflowError(f"{path}:{number}: not a JSON line ({error})") from None
            if not isinstance(row, dict):
                raise RubricflowError(f"{path}:{number}: each line must be a JSON object")
            if _text(row, _PROMPT_KEYS) is None and _text(row, _REFERENCE_KEYS) is None:
                raise RubricflowError(
                    f"{path}:{number}: the row has no prompt, task, question or reference"
                )
            rows.append(row)
    return rows


def _done(output: Path) -> dict[int, dict[str, Any]]:
    """The latest result per row already in `output` (a torn last line is ignored)."""
    results: dict[int, dict[str, Any]] = {}
    if not output.exists():
        return results
    for line in output.read_text(encoding="utf-8").splitlines():
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if isinstance(result, dict) and isinstance(result.get("row"), int):
            results[result["row"]] = result
    return results


async def generate_batch(
    dataset: Path,
    output: Path,
    *,
    judge: JudgeOption = None,
    concurrency: int = 4,
    revise: bool = True,
    criteria: tuple[int, int] = (7, 20),
    id_prefix: str = "row",
    cache: Any = "default",
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> BatchSummary:
    """Generate one rubric per row of `dataset` into `output` (JSONL), resuming."""
    rows = read_rows(dataset)
    previous = _done(output)
    todo = [n for n in range(len(rows)) if "rubric" not in previous.get(n, {})]
    results = dict(previous)
    counts = {"generated": 0, "failed": 0, "llm_calls": 0, "cache_hits": 0}
    gate = asyncio.Semaphore(concurrency)
    output.parent.mkdir(parents=True, exist_ok=True)
    async with judge_scope(judge, cache) as session:
        session.provider_now()  # fail once, before any row, when no judge can be made
        with output.open("a", encoding="utf-8") as sink:

            async def one(number: int) -> None:
                row = rows[number]
                row_id = row.get("id")
                rubric_id = f"{id_prefix}_{row_id if row_id is not None else number}"
                result: dict[str, Any] = {"row": number, "id": row_id}
                async with gate:
                    try:
                        draft = await generate_rubric(
                            task=_text(row, _PROMPT_KEYS),
                            reference=_text(row, _REFERENCE_KEYS),
                            examples=_examples(row.get("examples")),
                            judge=session,
                            rubric_id=rubric_id,
                            revise=revise,
                            criteria=criteria,
                        )
                    except GenerationError as error:
                        result["error"] = str(error)
                        counts["failed"] += 1
                    else:
                        summary = draft.to_dict()
                        result.update(summary)
                        counts["generated"] += 1
                        counts["llm_calls"] += summary["usage"]["llm_calls"]
                        counts["cache_hits"] += summary["usage"]["cache_hits"]
                results[number] = result
                sink.write(json.dumps(result, ensure_ascii=False) + "\n")
                sink.flush()
                if progress is not None:
                    progress(result)

            await asyncio.gather(*(one(n) for n in todo))
    ordered = [results[n] for n in sorted(results) if n < len(rows)]
    temporary = output.with_name(output.name + ".tmp")
    temporary.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ordered), encoding="utf-8"
    )
    os.replace(temporary, output)
    return BatchSummary(
        rows=len(rows),
        generated=counts["generated"],
        skipped=len(rows) - len(todo),
        failed=counts["failed"],
        llm_calls=counts["llm_calls"],
        cache_hits=counts["cache_hits"],
    )
