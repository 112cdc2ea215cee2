"""The one rule for a listing's status and dead-letter filters (the CLI's `artifacts
list` and `GET /v1/artifacts` both apply it), with each face's spelling of its options."""

from __future__ import annotations

import pytest

from rubricflow.errors import ConfigurationError
from rubricflow.review.lifecycle import DEAD_LETTERED, STATES
from rubricflow.review.listing import listed_status


def test_dead_letter_lists_the_dead_lettered_artifacts() -> None:
    assert listed_status(None, dead_letter=True) == DEAD_LETTERED
    assert listed_status(DEAD_LETTERED, dead_letter=True) == DEAD_LETTERED
    assert listed_status(None) is None
    assert all(listed_status(state) == state for state in STATES)


def test_a_query_string_gets_the_query_strings_spelling() -> None:
    with pytest.raises(ConfigurationError) as refused:
        listed_status("approved", dead_letter=True)
    assert str(refused.value) == (
        f"dead_letter lists {DEAD_LETTERED} artifacts; drop status=approved"
    )
    with pytest.raises(ConfigurationError) as refused:
        listed_status("lost")
    assert str(refused.value) == f"status 'lost' is not a state; use one of {', '.join(STATES)}"


def test_the_command_line_gets_its_options_named() -> None:
    options = {"status_option": "--status", "dead_letter_option": "--dead-letter"}
    with pytest.raises(ConfigurationError) as refused:
        listed_status("approved", dead_letter=True, **options)
    assert str(refused.value) == (
        f"--dead-letter lists {DEAD_LETTERED} artifacts; drop --status approved"
    )
    with pytest.raises(ConfigurationError) as refused:
        listed_status("lost", **options)
    assert str(refused.value).startswith("--status 'lost' is not a state; use one of ")
