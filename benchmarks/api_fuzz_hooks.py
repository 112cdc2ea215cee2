"""schemathesis hooks for `benchmarks.api_fuzz` (named by SCHEMATHESIS_HOOKS): the fuzzer
never revokes the tokens it fuzzes with. Stateful links lead from `GET /v1/tokens` to
`DELETE /v1/tokens/{name}`, and an admin who revokes itself ends the run's coverage: every
later request is a 401. Revocation stays fuzzed, on any other name."""

from __future__ import annotations

import os
from typing import Any

import schemathesis

#: the names `api_fuzz.prepare` gives the tokens (comma-separated in the environment)
PROTECTED = frozenset(os.environ.get("RUBRICFLOW_FUZZ_TOKENS", "fuzz-admin,fuzz-sub").split(","))


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Send a revocation of one of the run's own tokens to a name nobody holds."""
    operation = case.operation
    if operation.method.upper() != "DELETE" or operation.path != "/v1/tokens/{name}":
        return
    parameters = case.path_parameters or {}
    if parameters.get("name") in PROTECTED:
        case.path_parameters = {**parameters, "name": "fuzz-nobody"}
