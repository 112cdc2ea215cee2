"""How sure a verdict is, stored on both backends (issue 28, item 3): a criterion's
confidence and its source, an evaluation's margin, and each call's panel judge and answer
are in the document and in their columns (migration 0011), and read back equal."""

from __future__ import annotations

import pytest

from rubricflow.store import Store

from .conftest import fetch, make_evaluation


async def test_confidence_margin_and_panel_calls_are_stored(store: Store) -> None:
    base = make_evaluation("e1", calls=2, score=0.75)
    first = base.criteria[0]
    calls = tuple(
        call.model_copy(update={"judge": f"openai:j{n}@http://127.0.0.1:1/v1", "verdict": "MET"})
        for n, call in enumerate(first.llm_calls)
    )
    judged = first.model_copy(
        update={"confidence": 2 / 3, "confidence_source": "panel", "llm_calls": calls}
    )
    evaluation = base.model_copy(
        update={"criteria": (judged, *base.criteria[1:]), "margin": 0.75 - 0.7}
    )
    await store.evaluations.save(evaluation)
    assert await store.evaluations.get("e1") == evaluation
    (row,) = await fetch(store, "SELECT margin FROM evaluations WHERE id = 'e1'")
    assert row.margin == pytest.approx(0.05)
    rows = await fetch(
        store,
        "SELECT criterion_id, confidence, confidence_source FROM criterion_results "
        "WHERE evaluation_id = 'e1' ORDER BY position",
    )
    assert [(r.criterion_id, r.confidence_source) for r in rows] == [
        ("c0", "panel"),
        ("c1", None),
        ("c2", None),
    ]
    assert rows[0].confidence == pytest.approx(2 / 3) and rows[1].confidence is None
    ledger = await fetch(store, "SELECT judge, verdict FROM llm_calls ORDER BY judge")
    assert [(r.judge, r.verdict) for r in ledger] == [
        ("openai:j0@http://127.0.0.1:1/v1", "MET"),
        ("openai:j1@http://127.0.0.1:1/v1", "MET"),
    ]
