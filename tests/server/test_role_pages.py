"""The dashboard under the API's role rules, on SQLite and PostgreSQL: a role x page
matrix of the dashboard beside the API's, through one real server per backend.

The roles are the API tests' (`artifact_setup.prepare`): `sub` and `other`, submitters
of `note` and `gated`; `rev`, a reviewer of every type; `revx`, a reviewer of `secret`
only; `admin`. Each party has an artifact waiting in the queue and one a person
overrode (a decision that disagrees with the judge); a run of the rubric holds two
evaluations of no artifact. For every role and page: the status, and whose titles (or
counts) the page shows; the API's answer for the same data beside it. A submitter sees
only its own artifacts and no run, pass rate or agreement (the API's /v1/runs and pass
rates are reviewer-only); a reviewer limited to a type sees only that type's rows.

And ids: a taken id is the same 409 whether its artifact is visible to the caller or
not, naming nothing of it; a hidden artifact's page is the same 404 as a missing one's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

import httpx
from review.conftest import run_blocking

from rubricflow.application import Application
from rubricflow.client import Client
from rubricflow.errors import ArtifactIdTakenError, RubricflowError
from rubricflow.runs import RunInfo
from rubricflow.store.evaluations import StoredEvaluation

from .artifact_setup import FAIL, PASS, Tokens, prepare
from .conftest import RunningServer

#: the four roles of the matrix: submitter, reviewer, reviewer of one type, admin
ROLES = ("sub", "rev", "revx", "admin")
RUN = "run-roles"
#: every party's artifacts: (actor, type); titles are "<actor>-queued" and "<actor>-decided"
PARTIES = {"sub": "note", "other": "note", "admin": "secret"}
#: whose titles each role may see (the creator for a submitter; the types for a reviewer)
SEES = {
    "sub": {"sub"},
    "rev": {"sub", "other", "admin"},
    "revx": {"admin"},
    "admin": {"sub", "other", "admin"},
}
#: criterion "clean" of gate@1.0.0, (passed, scored), as each reviewer counts it: the
#: six reviews (all FAIL), sub's passing note, and the run's two (one passes)
PASS_RATES = {"rev": (2, 9), "revx": (1, 4), "admin": (2, 9)}


@dataclass(frozen=True)
class Seeded:
    #: actor -> id of its artifact waiting in the queue (needs revision)
    queued: dict[str, str]
    #: actor -> id of its artifact a person overrode
    decided: dict[str, str]


async def _seed(db_url: str) -> Seeded:
    queued: dict[str, str] = {}
    decided: dict[str, str] = {}
    async with await Application.open(db_url) as app:
        for actor, type_name in PARTIES.items():
            waiting = await app.create_and_submit(
                type_name, FAIL, actor=actor, title=f"{actor}-queued"
            )
            queued[actor] = waiting.artifact.id
            done = await app.create_and_submit(
                type_name, FAIL, actor=actor, title=f"{actor}-decided"
            )
            decided[actor] = done.artifact.id
            await app.artifacts.override(
                done.artifact.id, actor="admin", reason=f"{actor}-reason is fine"
            )
        await app.create_and_submit("note", PASS, actor="sub", title="sub-passed")
        rubric = await app.store.rubrics.get("gate", "1.0.0")
        await app.store.runs.start(
            RunInfo(
                id=RUN,
                rubric_id="gate",
                rubric_version="1.0.0",
                started_at=datetime.now(timezone.utc).isoformat(),
            )
        )
        targets = [{"id": "t-pass", "content": PASS}, {"id": "t-fail", "content": FAIL}]
        evaluations = await app.evaluate(rubric, targets)
        await app.evaluations.save_many(StoredEvaluation(e, run_id=RUN) for e in evaluations)
        await app.store.runs.finish(RUN)
    return Seeded(queued, decided)


@contextmanager
def _signed_in(server: RunningServer, token: str) -> Iterator[httpx.Client]:
    """A dashboard session of `token`, signed in through the form."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        form = client.get("/ui/sign-in")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf, form.text
        answer = client.post(
            "/ui/sign-in", data={"csrf": csrf.group(1), "token": token, "next": "/ui/"}
        )
        assert answer.status_code == 303, answer.text
        yield client


def _titles(text: str, suffix: str) -> set[str]:
    """The parties whose `<party>-<suffix>` title is on the page."""
    return {party for party in PARTIES if f"{party}-{suffix}" in text}


class Matrix:
    """Expected against seen, collected: every wrong outcome is reported at once."""

    def __init__(self) -> None:
        self.wrong: list[str] = []

    def status(self, what: str, response: httpx.Response, expected: int) -> bool:
        if response.status_code != expected:
            self.wrong.append(f"{what}: {response.status_code}, expected {expected}")
            return False
        return True

    def equal(self, what: str, seen: object, expected: object) -> None:
        if seen != expected:
            self.wrong.append(f"{what}: {seen!r}, expected {expected!r}")


def _tokens(tokens: Tokens) -> dict[str, str]:
    return {role: getattr(tokens, role) for role in (*ROLES, "other")}


def _check_runs(matrix: Matrix, role: str, ui: httpx.Client, api: httpx.Client) -> None:
    """Runs: reviewers' (any type), refused to a submitter, in the API and the dashboard."""
    expected = 403 if role == "sub" else 200
    for path in (
        "/ui/runs",
        "/ui/runs/latest",
        f"/ui/runs/{RUN}",
        f"/ui/runs/{RUN}/live",
        f"/ui/runs/compare?a={RUN}&b={RUN}",
    ):
        page = ui.get(path)
        if matrix.status(f"{path} as {role}", page, expected) and expected == 200:
            matrix.equal(f"{path} as {role} names the run", RUN in page.text, True)
    for path in ("/v1/runs", "/v1/runs/latest", f"/v1/runs/{RUN}/evaluations"):
        matrix.status(f"{path} as {role}", api.get(path), expected)


def _check_agreement(matrix: Matrix, role: str, ui: httpx.Client) -> None:
    """Judge agreement: a reviewer's page, listing decisions on its types' artifacts."""
    for path in ("/ui/agreement", "/ui/agreement?rubric=gate"):
        page = ui.get(path)
        if role == "sub":
            matrix.status(f"{path} as sub", page, 403)
            matrix.equal(f"{path} as sub shows titles", _titles(page.text, "decided"), set())
            matrix.equal(f"{path} as sub shows reasons", "-reason is fine" in page.text, False)
            continue
        if matrix.status(f"{path} as {role}", page, 200):
            matrix.equal(f"{path} as {role}: titles", _titles(page.text, "decided"), SEES[role])
            reasons = {p for p in PARTIES if f"{p}-reason is fine" in page.text}
            matrix.equal(f"{path} as {role}: reasons", reasons, SEES[role])


def _check_pass_rates(matrix: Matrix, role: str, ui: httpx.Client, api: httpx.Client) -> None:
    """Pass rates: a reviewer's, counting its types' reviews and the run's evaluations;
    the rubric's page itself is everyone's, as GET /v1/rubrics/gate is."""
    page = ui.get("/ui/rubrics/gate?days=all")
    rates = api.get("/v1/rubrics/gate/pass-rates")
    matrix.status(f"/v1/rubrics/gate as {role}", api.get("/v1/rubrics/gate"), 200)
    if not matrix.status(f"/ui/rubrics/gate as {role}", page, 200):
        return
    counts = set(re.findall(r"(\d+) of (\d+) passed", page.text))
    if role == "sub":
        matrix.equal("/ui/rubrics/gate as sub: pass-rate counts", counts, set())
        matrix.equal("/ui/rubrics/gate as sub: chart", "criterion-pass-rates" in page.text, False)
        matrix.status("/v1/rubrics/gate/pass-rates as sub", rates, 403)
        return
    passed, scored = PASS_RATES[role]
    matrix.equal(f"/ui/rubrics/gate as {role}: counts", counts, {(str(passed), str(scored))})
    if matrix.status(f"/v1/rubrics/gate/pass-rates as {role}", rates, 200):
        seen = [(r["criterion_id"], r["passed"], r["scored"]) for r in rates.json()["rates"]]
        matrix.equal(f"/v1/rubrics/gate/pass-rates as {role}", seen, [("clean", passed, scored)])
    # a type outside the token's: nothing counted, as /v1/artifacts?type= lists nothing
    of_note = api.get("/v1/rubrics/gate/pass-rates", params={"artifact_type": "note"})
    if matrix.status(f"pass-rates of note as {role}", of_note, 200):
        matrix.equal(
            f"pass-rates of note as {role}: any counted",
            bool(of_note.json()["rates"]),
            role != "revx",
        )


def _check_artifacts(
    matrix: Matrix, role: str, seeded: Seeded, ui: httpx.Client, api: httpx.Client
) -> None:
    """The queue and the artifact pages show what GET /v1/artifacts shows."""
    queue = ui.get("/ui/queue")
    if matrix.status(f"/ui/queue as {role}", queue, 200):
        matrix.equal(f"/ui/queue as {role}: titles", _titles(queue.text, "queued"), SEES[role])
        matrix.equal(
            f"/ui/queue as {role}: run and agreement links",
            ('href="/ui/runs"' in queue.text, 'href="/ui/agreement"' in queue.text),
            (role != "sub", role != "sub"),
        )
    listed = api.get("/v1/artifacts", params={"limit": 200})
    if matrix.status(f"/v1/artifacts as {role}", listed, 200):
        titles = {a["title"] for a in listed.json()["items"]}
        matrix.equal(
            f"/v1/artifacts as {role}: titles", _titles(" ".join(titles), "queued"), SEES[role]
        )
    for party, artifact_id in seeded.queued.items():
        expected = 200 if party in SEES[role] else 404
        page = ui.get(f"/ui/artifacts/{artifact_id}")
        matrix.status(f"/ui/artifacts/<{party}'s> as {role}", page, expected)
        if expected == 404:
            shows = f"{party}-queued" in page.text
            matrix.equal(f"the 404 as {role} shows the title", shows, False)
        shown = api.get(f"/v1/artifacts/{artifact_id}")
        matrix.status(f"/v1/artifacts/<{party}'s> as {role}", shown, expected)


def _check_role(
    matrix: Matrix, role: str, seeded: Seeded, server: RunningServer, token: str
) -> None:
    with _signed_in(server, token) as ui, server.client(token) as api:
        _check_runs(matrix, role, ui, api)
        _check_agreement(matrix, role, ui)
        _check_pass_rates(matrix, role, ui, api)
        _check_artifacts(matrix, role, seeded, ui, api)


def _uniform(text: str, artifact_id: str) -> str:
    return text.replace(artifact_id, "<ID>")


def _alert(page: str) -> str:
    """The message an error page shows."""
    found = re.search(r'role="alert">(.*?)</p>', page, re.S)
    return found.group(1) if found else page


def _check_ids(matrix: Matrix, seeded: Seeded, server: RunningServer, tokens: Tokens) -> None:
    """A taken id is one answer whoever's artifact holds it; a hidden page is a missing one."""
    takers: dict[str, tuple[str, str, str]] = {
        # caller -> (type it may create, an id it can see, an id it cannot)
        "sub": ("note", seeded.queued["sub"], seeded.queued["other"]),
        "revx": ("secret", seeded.queued["admin"], seeded.queued["sub"]),
    }
    for caller, (type_name, visible, hidden) in takers.items():
        with server.client(getattr(tokens, caller)) as api:
            answers = {}
            for which, artifact_id in (("visible", visible), ("hidden", hidden)):
                for path in ("/v1/artifacts", "/v1/submissions"):
                    body = {"type": type_name, "content": PASS, "id": artifact_id}
                    taken = api.post(path, json=body)
                    what = f"{path} with a {which} taken id as {caller}"
                    if matrix.status(what, taken, 409):
                        problem = taken.json()
                        answers[(which, path)] = (
                            problem["type"],
                            _uniform(problem["detail"], artifact_id),
                        )
                        # nothing of the artifact: its title, type or creator
                        for leak in ("queued", "note", "secret", "sub", "other", "admin"):
                            found = re.search(rf"\b{leak}\b", problem["detail"])
                            if leak != type_name and found:
                                matrix.wrong.append(f"{what} names {leak!r}: {problem['detail']}")
            for path in ("/v1/artifacts", "/v1/submissions"):
                matrix.equal(
                    f"{path}: a hidden taken id answers as a visible one, as {caller}",
                    answers.get(("hidden", path)),
                    answers.get(("visible", path)),
                )
    with _signed_in(server, tokens.sub) as ui:
        hidden_page = ui.get(f"/ui/artifacts/{seeded.queued['other']}")
        missing_page = ui.get("/ui/artifacts/no-such-artifact")
        matrix.equal(
            "/ui/artifacts: a hidden artifact's page as a missing one's",
            (hidden_page.status_code, _alert(_uniform(hidden_page.text, seeded.queued["other"]))),
            (missing_page.status_code, _alert(_uniform(missing_page.text, "no-such-artifact"))),
        )
        matrix.equal(
            "/ui/artifacts: the rest of the two pages",
            hidden_page.text.count("\n"),
            missing_page.text.count("\n"),
        )


def _check_client(matrix: Matrix, seeded: Seeded, server: RunningServer, tokens: Tokens) -> None:
    """The Python client raises the class the store raises, for a hidden id as for any."""
    with Client(server.url, tokens.sub) as client:
        try:
            client.create("note", PASS, artifact_id=seeded.queued["other"])
        except ArtifactIdTakenError as error:
            matrix.equal("the client's error status", error.status, 409)
        except RubricflowError as error:
            matrix.wrong.append(f"the client raised {type(error).__name__}: {error}")
        else:
            matrix.wrong.append("the client created an artifact with a taken id")


def test_the_dashboard_follows_the_api_role_rules_on_every_page(
    start_server: Callable[..., RunningServer], server_db: str
) -> None:
    tokens = prepare(server_db)
    seeded = run_blocking(_seed(server_db))
    server = start_server(server_db, "--review-workers", "0")
    matrix = Matrix()
    secrets = _tokens(tokens)
    for role in ROLES:
        _check_role(matrix, role, seeded, server, secrets[role])
    _check_ids(matrix, seeded, server, tokens)
    _check_client(matrix, seeded, server, tokens)
    assert not matrix.wrong, f"{len(matrix.wrong)} wrong outcomes:\n" + "\n".join(matrix.wrong)
