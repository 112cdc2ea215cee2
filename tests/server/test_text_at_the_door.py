"""What the store cannot keep, or a page cannot show honestly, is refused at the door, the
same on SQLite and PostgreSQL (issue 27, findings 5 to 7):

- an id outside Latin-1 is created with a percent-encoded `Location` (it was a 500 after
  the artifact was created, and a retry then got "already exists");
- an id holding a bidi control or a zero-width character is a 422 naming it, and nothing
  is created;
- an integer past a PostgreSQL INTEGER, a NUL in a path, a query or a stored field, and a
  lone surrogate in a JSON body are 422s (PostgreSQL answered 500 to each);
- text a judge writes is stored without its NUL characters.
"""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import httpx
import pytest
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply

from .conftest import RunningServer, issue_token

RUBRIC = """\
id: {id}
criteria:
- id: text
  description: Has text
  scoring: {{method: deterministic, function: non_empty}}
"""

JUDGED = """\
id: {id}
criteria:
- id: answers
  description: The reply answers the question
  scoring: {{method: llm_verdict}}
"""


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def admin(module_server: RunningServer) -> str:
    return issue_token(module_server.db_url, "admin", name=_unique("ops"))


@pytest.fixture(scope="module")
def typed(module_server: RunningServer, admin: str) -> str:
    """An artifact type reviewed by a deterministic rubric; its name."""
    rubric_id, type_name = _unique("door"), _unique("note")
    with module_server.client(admin) as ops:
        registered = ops.post("/v1/rubrics", json={"document": RUBRIC.format(id=rubric_id)})
        assert registered.status_code == 201, registered.text
        defined = ops.put(f"/v1/types/{type_name}", json={"rubrics": [{"rubric_id": rubric_id}]})
        assert defined.status_code == 200, defined.text
    return type_name


def _raw_json(client: httpx.Client, method: str, path: str, text: str) -> httpx.Response:
    """Send `text` as the JSON body as it is (a `\\ud800` escape survives)."""
    return client.request(
        method, path, content=text.encode(), headers={"content-type": "application/json"}
    )


def _assert_refused(response: httpx.Response, *words: str) -> None:
    assert response.status_code == 422, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/problem+json")
    detail = response.json()["detail"]
    for word in words:
        assert word in detail, detail


def test_an_id_outside_latin1_is_created_and_its_location_leads_to_it(
    module_server: RunningServer, admin: str, typed: str
) -> None:
    artifact_id = f"\uff41-{uuid.uuid4().hex[:6]}-\u00e9\u6587"  # full-width a, é, 文
    with module_server.client(admin) as ops:
        created = ops.post(
            "/v1/artifacts", json={"type": typed, "content": {"text": "x"}, "id": artifact_id}
        )
        assert created.status_code == 201, created.text
        location = created.headers["location"]
        assert location == f"/v1/artifacts/{quote(artifact_id, safe='')}"
        assert location.isascii()
        shown = ops.get(location)
        assert shown.status_code == 200 and shown.json()["id"] == artifact_id

        submitted = ops.post(
            "/v1/submissions",
            json={"type": typed, "content": {"text": "x"}, "id": artifact_id + "2"},
        )
        assert submitted.status_code == 201, submitted.text
        assert ops.get(submitted.headers["location"]).json()["id"] == artifact_id + "2"


@pytest.mark.parametrize(
    ("hidden", "named"),
    [
        ("a\u200bb", "U+200B (ZERO WIDTH SPACE)"),
        ("\u202eabc", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("x\u2066y", "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
        ("\ufeffz", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
        ("w\u2060", "U+2060 (WORD JOINER)"),
    ],
)
def test_an_id_with_an_invisible_character_is_refused_and_nothing_is_created(
    module_server: RunningServer, admin: str, typed: str, hidden: str, named: str
) -> None:
    artifact_id = f"{hidden}-{uuid.uuid4().hex[:6]}"
    with module_server.client(admin) as ops:
        for path in ("/v1/artifacts", "/v1/submissions"):
            refused = ops.post(
                path, json={"type": typed, "content": {"text": "x"}, "id": artifact_id}
            )
            _assert_refused(refused, "body.id", named, "remove it")
        # a retry of the create is refused the same way, never "already exists"
        again = ops.post(
            "/v1/artifacts", json={"type": typed, "content": {"text": "x"}, "id": artifact_id}
        )
        _assert_refused(again, named)
        listed = ops.get("/v1/artifacts", params={"type": typed, "limit": 200}).json()["items"]
        assert artifact_id not in {a["id"] for a in listed}

        type_name = f"t{hidden}{uuid.uuid4().hex[:6]}"
        rubric = ops.get(f"/v1/types/{typed}").json()["rubrics"][0]["rubric_id"]
        defined = ops.put(
            f"/v1/types/{quote(type_name, safe='')}", json={"rubrics": [{"rubric_id": rubric}]}
        )
        _assert_refused(defined, "path.name", named)
        assert type_name not in {t["name"] for t in ops.get("/v1/types").json()}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/webhooks/deliveries/2147483648"),
        ("POST", "/v1/webhooks/deliveries/2147483648/replay"),
        ("GET", "/v1/webhooks/deliveries?before=2147483648"),
        ("GET", "/v1/webhooks/deliveries/99999999999999999999"),
        ("GET", "/v1/artifacts/{id}?after=2147483648&wait=0.1"),
        ("GET", "/v1/artifacts/{id}/evaluations?revision=2147483648"),
        ("GET", "/v1/artifacts/{id}/events?after=2147483648"),
        ("GET", "/v1/runs/some-run/evaluations?offset=2147483648"),
    ],
)
def test_an_integer_past_the_columns_range_is_422(
    module_server: RunningServer, admin: str, typed: str, method: str, path: str
) -> None:
    with module_server.client(admin) as ops:
        artifact = ops.post("/v1/artifacts", json={"type": typed, "content": {"text": "x"}})
        assert artifact.status_code == 201
        answer = ops.request(method, path.replace("{id}", artifact.json()["id"]))
        _assert_refused(answer, "less than or equal to 2147483647")


def test_the_largest_integer_the_column_holds_is_answered(
    module_server: RunningServer, admin: str, typed: str
) -> None:
    with module_server.client(admin) as ops:
        artifact = ops.post("/v1/artifacts", json={"type": typed, "content": {"text": "x"}})
        artifact_id = artifact.json()["id"]
        assert ops.get("/v1/webhooks/deliveries/2147483647").status_code == 404
        assert ops.post("/v1/webhooks/deliveries/2147483647/replay").status_code == 404
        assert ops.get("/v1/webhooks/deliveries?before=2147483647").status_code == 200
        held = ops.get(f"/v1/artifacts/{artifact_id}?after=2147483647&wait=0.1")
        assert held.status_code == 304
        moved = ops.get(f"/v1/artifacts/{artifact_id}", headers={"If-None-Match": '"2147483647"'})
        assert moved.status_code == 304
        too_far = ops.get(f"/v1/artifacts/{artifact_id}", headers={"If-None-Match": '"2147483648"'})
        assert too_far.status_code == 400


def test_a_nul_bound_for_the_store_is_422(
    module_server: RunningServer, admin: str, typed: str
) -> None:
    rubric = _unique("nul")
    with module_server.client(admin) as ops:
        assert ops.post("/v1/rubrics", json={"document": RUBRIC.format(id=rubric)}).is_success
        binding = ops.put(
            f"/v1/types/{_unique('t')}",
            json={"rubrics": [{"rubric_id": rubric, "version": "1\x00"}]},
        )
        _assert_refused(binding, "rubrics[0].version", "NUL")
        named = ops.post(
            "/score", json={"task_input": "q", "model_output": "a", "rubric_name": f"{rubric}\x00"}
        )
        _assert_refused(named, "rubric_name")
        evaluated = ops.post(
            "/v1/evaluate", json={"rubric": f"{rubric}\x00", "target": {"content": "x"}}
        )
        _assert_refused(evaluated, "body.rubric", "NUL")
        for path in (
            "/v1/artifacts/a%00b/events",
            "/v1/artifacts/a%00b",
            "/v1/types/a%00b",
            "/v1/webhooks/a%00b",
            "/v1/rubrics/a%00b",
            "/v1/artifacts?cursor=a%00b",
            f"/v1/artifacts?type={typed}&status=draft%00",
            "/v1/webhooks/deliveries?artifact_id=a%00b",
            "/v1/runs/a%00b",
        ):
            _assert_refused(ops.get(path), "NUL")
        _assert_refused(ops.delete("/v1/tokens/a%00b"), "NUL")
        # the content itself may hold one: it is JSON, kept as the escape \u0000
        kept = ops.post("/v1/artifacts", json={"type": typed, "content": {"text": "a\x00b"}})
        assert kept.status_code == 201, kept.text
        assert ops.get(kept.headers["location"]).json()["content"] == {"text": "a\x00b"}


def test_a_lone_surrogate_anywhere_in_a_body_is_422(
    module_server: RunningServer, admin: str, typed: str
) -> None:
    rubric = _unique("half")
    with module_server.client(admin) as ops:
        assert ops.post("/v1/rubrics", json={"document": RUBRIC.format(id=rubric)}).is_success
        bodies = [
            (
                "POST",
                "/v1/evaluate",
                f'{{"rubric": "{rubric}", "target": {{"content": "x\\ud800"}}}}',
            ),
            (
                "POST",
                "/v1/evaluate",
                f'{{"rubric": "{rubric}", "targets": [{{"content": "ok"}}, '
                '{"content": {"deep": ["\\udfff y"]}}]}',
            ),
            (
                "POST",
                "/score",
                f'{{"task_input": "q", "model_output": "x\\ud83d", "rubric_name": "{rubric}"}}',
            ),
            ("POST", f"/score/{rubric}", '{"task_input": "q\\ud800", "model_output": "x"}'),
            ("POST", f"/batch-score/{rubric}", '{"items": [{"model_output": "\\ud800"}]}'),
            ("POST", "/v1/artifacts", f'{{"type": "{typed}", "content": {{"text": "\\ud800"}}}}'),
            ("POST", "/v1/artifacts", f'{{"type": "{typed}", "content": 1, "title": "\\udc00"}}'),
        ]
        for method, path, body in bodies:
            _assert_refused(_raw_json(ops, method, path, body), "lone surrogate")
        deep = _raw_json(ops, "POST", "/v1/evaluate", bodies[1][2])
        _assert_refused(deep, "body.targets[1].content.deep[0]: holds a lone surrogate (\\udfff)")
        # a whole pair is one character, and fine
        paired = _raw_json(
            ops,
            "POST",
            "/v1/evaluate",
            f'{{"rubric": "{rubric}", "target": {{"content": "\\ud83d\\ude00"}}}}',
        )
        assert paired.status_code == 200, paired.text
        # an escaped backslash before `ud800` is text, not a surrogate
        literal = _raw_json(
            ops,
            "POST",
            "/v1/evaluate",
            f'{{"rubric": "{rubric}", "target": {{"content": "\\\\ud800"}}}}',
        )
        assert literal.status_code == 200, literal.text


def _nul_judge() -> ScriptedServer:
    """A judge whose reasoning holds NUL characters, escaped in its JSON answer."""

    def respond(request: Recorded) -> Reply:
        text = json.dumps({"reasoning": "it \x00 answers\x00", "verdict": "MET"})
        assert "\\u0000" in text
        return openai_reply(text)

    return ScriptedServer(respond)


def test_a_judges_nul_characters_are_not_stored(start_server, server_db: str) -> None:
    admin = issue_token(server_db, "admin", name="ops")
    with _nul_judge() as scripted:
        server = start_server(server_db, "--llm", f"openai:judge@{scripted.url}/v1")
        with server.client(admin) as ops:
            assert ops.post("/v1/rubrics", json={"document": JUDGED.format(id="judged")}).is_success
            assert ops.put(
                "/v1/types/reply", json={"rubrics": [{"rubric_id": "judged"}]}
            ).is_success
            outcome = ops.post("/v1/submissions", json={"type": "reply", "content": "Paris."})
            assert outcome.status_code == 201, outcome.text
            assert outcome.json()["status"] == "approved"
            (stored,) = ops.get(f"{outcome.headers['location']}/evaluations").json()
            (criterion,) = stored["criteria"]
            assert criterion["reasoning"] == "it  answers"
            assert "\x00" not in json.dumps(stored, ensure_ascii=False)
            scored = ops.post(
                "/v1/evaluate", json={"rubric": "judged", "target": {"content": "Paris."}}
            )
            assert scored.status_code == 200
            assert scored.json()["evaluations"][0]["criteria"][0]["reasoning"] == "it  answers"


def test_a_token_name_with_an_invisible_character_is_refused(
    module_server: RunningServer, admin: str
) -> None:
    name = f"alice\u202e{uuid.uuid4().hex[:6]}"
    with module_server.client(admin) as ops:
        refused = ops.post("/v1/tokens", json={"name": name, "role": "submitter"})
        _assert_refused(refused, "U+202E (RIGHT-TO-LEFT OVERRIDE)", "remove it")
        assert name not in {t["name"] for t in ops.get("/v1/tokens").json()}
