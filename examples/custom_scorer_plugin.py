"""Add a scoring method through a plugin: a `vocabulary` scorer that grades how much of a
required glossary a text uses, and explains which terms are missing.

A check function (examples/custom_check_plugin.py) answers one question about a target; a
scorer is a whole scoring method with its own configuration, which any rubric can then
name as `scoring.method`. Run from anywhere: python examples/custom_scorer_plugin.py
"""

import asyncio

from rubricflow import (
    Criterion,
    CriterionResult,
    ScoringContext,
    Target,
    create_plugin_manager,
    evaluate,
    hookimpl,
    parse_rubric,
)
from rubricflow.scorers.base import error_result, scored_result


class VocabularyScorer:
    """Scores the share of `scoring.config.terms` the text uses (0..1)."""

    name = "vocabulary"
    description = "share of a glossary's terms the text uses"

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        terms = criterion.scoring.config.get("terms")
        if not terms:
            # a misconfigured criterion is an `error` result that says how to fix it
            return error_result(criterion, self.name, "give scoring.config.terms: a list of words")
        text = target.text.lower()
        missing = [term for term in terms if term.lower() not in text]
        share = 1 - len(missing) / len(terms)
        evidence = [f"missing: {', '.join(missing)}"] if missing else ["uses every term"]
        return scored_result(criterion, context, self.name, share, evidence=evidence)


class GlossaryPlugin:
    """A plugin is any object with @hookimpl methods; packages ship them via entry points."""

    @hookimpl
    def rubricflow_scorers(self):
        return [VocabularyScorer()]


RUBRIC = parse_rubric(
    {
        "id": "release-notes",
        "version": "1.0.0",
        "pass_threshold": 0.7,
        "criteria": [
            {
                "id": "glossary",
                "description": "Uses the product's glossary",
                "scoring": {
                    "method": "vocabulary",
                    "config": {"terms": ["workspace", "pipeline", "run", "artifact"]},
                },
            },
            {
                "id": "not-empty",
                "description": "Says something",
                "scoring": {"method": "deterministic", "function": "non_empty"},
            },
        ],
    }
)

plugins = create_plugin_manager(plugins=[GlossaryPlugin()])
print("scorers:", ", ".join(sorted(plugins.scorers)))

NOTES = {
    "full": "Each workspace now keeps a pipeline history: every run lists its artifact.",
    "thin": "We fixed some bugs in the pipeline.",
}
for name, text in NOTES.items():
    evaluation = asyncio.run(evaluate(RUBRIC, {"id": name, "content": text}, plugins=plugins))
    glossary = evaluation.criterion("glossary")
    assert glossary is not None
    print(
        f"{name}: {evaluation.verdict} {evaluation.score:.3f} | glossary "
        f"{glossary.score:.2f} ({'; '.join(glossary.evidence)})"
    )
