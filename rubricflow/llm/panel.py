"""A judge panel: several judges asked the same question at once, their verdicts combined
by a policy, and how much they agree (the criterion's confidence).

A panel is a judge like any other. Its spec text is
`panel:POLICY(SPEC | SPEC | ...)`, e.g. `panel:majority(openai:gpt-4o-mini |
anthropic:claude-3-5-haiku-latest | ollama:llama3.2)`, so it goes wherever a judge spec
goes (`--llm`, RUBRICFLOW_LLM, a server's judge, an artifact type's judge); in Python it
is `Panel(judges, policy)`.

Policies, over the votes of the judges that answered (`decide`):
- `majority`: the value more than half of the votes share (a tie or a scatter is a split);
- `unanimous`: the value every vote shares (any disagreement is a split);
- `any_unmet`: the vote worst for the content (UNMET, a penalty present, the lowest level
  or score): one judge seeing the problem is enough (safety gates);
- `mean`: the exact mean of the votes' scores on 0..1 (MET 1, UNMET 0, a level's score);
- `median`: the exact median of those scores (the mean of the middle two for an even count).

Abstention (the stated rule): a judge whose call failed, or whose answer was unusable, or
whose own samples split evenly, abstains. An abstention is never a vote. A panel decides
only with enough votes: `majority`, `mean` and `median` need more than half of the
panel's judges to vote; `unanimous` needs every judge; `any_unmet` decides on a problem
any voter saw (MET/UNMET criteria: UNMET, or a penalty present), and otherwise needs every
judge. A panel without enough votes, or split under `majority`/`unanimous`, gives
`unable_to_evaluate` with the reason.

Confidence (source `panel`): for `majority`, `unanimous` and `any_unmet` the share of the
panel's judges whose vote is the decided value; for `mean` and `median`, 1 minus the mean
distance of the votes from the decided score, times the share of judges that voted.
Abstaining judges count against confidence, never for or against the verdict.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, get_args

from rubricflow.errors import ConfigurationError

__all__ = [
    "PANEL_POLICIES",
    "Panel",
    "PanelDecision",
    "PanelPolicy",
    "PanelVote",
    "as_panel",
    "decide",
    "panel_spec",
    "parse_panel",
]

PanelPolicy = Literal["majority", "unanimous", "any_unmet", "mean", "median"]
PANEL_POLICIES: tuple[str, ...] = get_args(PanelPolicy)
PREFIX = "panel:"
_SPEC = re.compile(r"^panel:\s*([a-z_]+)\s*\((.*)\)\s*$", re.DOTALL)


def _policy(value: str) -> PanelPolicy:
    if value not in PANEL_POLICIES:
        raise ConfigurationError(
            f"unknown panel policy {value!r}; choose one of {', '.join(PANEL_POLICIES)}"
        )
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class Panel:
    """Several judges (spec strings, providers or async callables) and the policy that
    combines their verdicts. At least two judges."""

    judges: tuple[Any, ...]
    policy: PanelPolicy = "majority"

    def __init__(self, judges: Sequence[Any], policy: str = "majority") -> None:
        members = tuple(judges)
        if len(members) < 2:
            raise ConfigurationError(
                f"a panel needs at least two judges, got {len(members)}: give --llm once "
                "per judge (or use one judge without --panel)"
            )
        object.__setattr__(self, "judges", members)
        object.__setattr__(self, "policy", _policy(policy))

    @property
    def spec(self) -> str:
        """`panel:POLICY(A | B | ...)`: the text form (judges given as objects show their
        label)."""
        return f"{PREFIX}{self.policy}({' | '.join(_shown(j) for j in self.judges)})"

    def __str__(self) -> str:
        return self.spec


def _shown(judge: Any) -> str:
    if isinstance(judge, str):
        return judge.strip()
    label = getattr(judge, "label", None)
    return label if isinstance(label, str) else getattr(judge, "__name__", type(judge).__name__)


def parse_panel(text: str) -> Panel:
    """The panel a `panel:POLICY(A | B | ...)` spec names."""
    found = _SPEC.match(text.strip())
    if found is None:
        raise ConfigurationError(
            f"panel spec {text.strip()[:200]!r} is not panel:POLICY(SPEC | SPEC | ...), e.g. "
            "panel:majority(openai:gpt-4o-mini | ollama:llama3.2)"
        )
    members = [part.strip() for part in found.group(2).split("|")]
    if any(not member for member in members):
        raise ConfigurationError(f"panel spec {text.strip()[:200]!r} has an empty judge")
    if any(member.lower().startswith(PREFIX) for member in members):
        raise ConfigurationError("a panel's judge cannot itself be a panel")
    return Panel(members, found.group(1))


def as_panel(llm: Any) -> Panel | None:
    """`llm` as a panel when it is one (a `Panel` or a `panel:` spec), else None."""
    if isinstance(llm, Panel):
        return llm
    if isinstance(llm, str) and llm.strip().lower().startswith(PREFIX):
        return parse_panel(llm)
    return None


def panel_spec(specs: Sequence[str] | None, policy: str | None) -> str | None:
    """The one judge spec for the CLI's `--llm A --llm B --panel POLICY` (None: the
    default judge): one `--llm` as it is, several as a panel, which needs `--panel`."""
    given = [spec for spec in (specs or []) if spec and spec.strip()]
    if policy is not None:
        _policy(policy)
    if len(given) <= 1:
        if policy is not None and not (given and as_panel(given[0]) is not None):
            raise ConfigurationError(
                f"--panel {policy} needs at least two judges: give --llm once per judge"
            )
        return given[0] if given else None
    if policy is None:
        raise ConfigurationError(
            f"{len(given)} judges were given (--llm); say how their verdicts combine with "
            f"--panel {'|'.join(PANEL_POLICIES)}"
        )
    return Panel(given, policy).spec


# -- deciding -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PanelVote:
    """One judge's vote: `value` as the judge gave it (MET/UNMET, a level id, a number),
    `unit` its score on 0..1 for the criterion, and `goodness` how good that is for the
    content (the unit score, or 1 minus it for a penalty)."""

    value: Any
    unit: Fraction
    goodness: Fraction
    binary: bool = False


@dataclass(frozen=True)
class PanelDecision:
    """What the panel decided: one of the votes' values (`value`, for the categorical
    policies), or a score on 0..1 (`unit`, always set), and the confidence."""

    value: Any
    unit: Fraction
    confidence: Fraction
    agreeing: int


def _quorum(policy: PanelPolicy, votes: Sequence[PanelVote], members: int) -> str | None:
    """Why there are not enough votes to decide, or None."""
    count = len(votes)
    if count == 0:
        return f"no judge of the panel of {members} gave a usable answer"
    if policy == "unanimous" and count < members:
        return f"only {count} of the panel's {members} judges voted; unanimous needs every judge"
    if policy == "any_unmet" and count < members:
        if any(vote.binary and vote.goodness == 0 for vote in votes):
            return None  # a problem seen by one is enough, whoever abstained
        return (
            f"only {count} of the panel's {members} judges voted and none saw a problem; "
            "any_unmet clears content only when every judge voted"
        )
    if policy in ("majority", "mean", "median") and 2 * count <= members:
        return (
            f"only {count} of the panel's {members} judges voted; {policy} needs more than "
            "half of them"
        )
    return None


def _shown_value(value: Any) -> str:
    return f"{float(value):g}" if isinstance(value, Fraction | int | float) else str(value)


def _categorical(
    policy: PanelPolicy, votes: Sequence[PanelVote], members: int
) -> PanelDecision | str:
    counts = Counter(vote.value for vote in votes)
    if policy == "any_unmet":
        worst = min(votes, key=lambda vote: vote.goodness)
        chosen = worst.value
    else:
        chosen, top = counts.most_common(1)[0]
        needed = len(votes) if policy == "unanimous" else len(votes) // 2 + 1
        if top < needed:
            split = ", ".join(f"{_shown_value(v)} {n}" for v, n in counts.most_common())
            what = "no value has a majority" if policy == "majority" else "not unanimous"
            return f"the panel split ({split}): {what}"
    unit = next(vote.unit for vote in votes if vote.value == chosen)
    agreeing = counts[chosen]
    return PanelDecision(chosen, unit, Fraction(agreeing, members), agreeing)


def _middle(values: Sequence[Fraction]) -> Fraction:
    ordered = sorted(values)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[half]
    return (ordered[half - 1] + ordered[half]) / 2


def decide(policy: str, votes: Sequence[PanelVote], members: int) -> PanelDecision | str:
    """The panel's decision over `votes` (the judges that did not abstain, out of
    `members`), or the reason it cannot decide. Exact: every score is a Fraction."""
    chosen = _policy(policy)
    if members < len(votes):
        raise ValueError(f"{len(votes)} votes from a panel of {members}")
    short = _quorum(chosen, votes, members)
    if short is not None:
        return short
    if chosen in ("majority", "unanimous", "any_unmet"):
        return _categorical(chosen, votes, members)
    units = [vote.unit for vote in votes]
    unit = sum(units, Fraction(0)) / len(units) if chosen == "mean" else _middle(units)
    spread = sum((abs(u - unit) for u in units), Fraction(0)) / len(units)
    confidence = max(Fraction(0), 1 - spread) * Fraction(len(votes), members)
    values = [vote.value for vote in votes]
    if all(isinstance(v, Fraction | int) and not isinstance(v, bool) for v in values):
        # a judge's numbers map onto 0..1 affinely, so their mean/median maps onto `unit`
        numbers = [Fraction(v) for v in values]
        value: Any = sum(numbers, Fraction(0)) / len(numbers) if chosen == "mean" else None
        if value is None:
            value = _middle(numbers)
    else:
        value = next((vote.value for vote in votes if vote.unit == unit), None)
    agreeing = sum(1 for u in units if u == unit)
    return PanelDecision(value, unit, confidence, agreeing)
