"""A third-party style plugin: one scorer (`shouting`) and one check function (`is_polite`)."""

from __future__ import annotations

from rubricflow import hookimpl
from rubricflow.scorers.base import CheckResult, result_from_value

POLITE_WORDS = ("please", "thank you", "thanks")


class ShoutingScorer:
    """Scores the share of letters that are lower case: all-caps text scores 0."""

    name = "shouting"
    description = "share of letters that are not upper case"

    async def score(self, criterion, target, context):
        letters = [ch for ch in target.text if ch.isalpha()]
        calm = sum(not ch.isupper() for ch in letters) / len(letters) if letters else 1.0
        return result_from_value(criterion, context, self.name, calm, what="shouting")


def is_polite(target) -> CheckResult:
    text = target.text.lower()
    found = [word for word in POLITE_WORDS if word in text]
    return CheckResult(bool(found), [f"polite words: {', '.join(found) or 'none'}"])


@hookimpl
def rubricflow_scorers():
    return [ShoutingScorer()]


@hookimpl
def rubricflow_check_functions():
    return {"is_polite": is_polite}
