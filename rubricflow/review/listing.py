"""Which lifecycle state a listing of artifacts filters on: the one rule every face
(the CLI's `artifacts list`, `GET /v1/artifacts`) applies to its `status` and
`dead_letter` filters, with the options spelled as that face spells them."""

from __future__ import annotations

from rubricflow.errors import ConfigurationError
from rubricflow.review.lifecycle import DEAD_LETTERED, STATES

__all__ = ["listed_status"]


def listed_status(
    status: str | None,
    *,
    dead_letter: bool = False,
    status_option: str = "status",
    dead_letter_option: str = "dead_letter",
) -> str | None:
    """The state to list (None: any). `dead_letter` lists the dead-lettered artifacts
    (another `status` beside it is refused); a `status` that is not a lifecycle state is
    refused, naming the states. A refusal is a `ConfigurationError` naming the options as
    the caller spells them (`--status`, `--dead-letter` on the command line; `status=`
    and `dead_letter` in a query string)."""
    if dead_letter:
        if status not in (None, DEAD_LETTERED):
            drop = (
                f"{status_option} {status}"
                if status_option.startswith("-")
                else (f"{status_option}={status}")
            )
            raise ConfigurationError(
                f"{dead_letter_option} lists {DEAD_LETTERED} artifacts; drop {drop}"
            )
        return DEAD_LETTERED
    if status is not None and status not in STATES:
        raise ConfigurationError(
            f"{status_option} {status!r} is not a state; use one of {', '.join(STATES)}"
        )
    return status
