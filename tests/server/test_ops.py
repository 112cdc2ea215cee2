"""Operations through real servers: Prometheus metrics (who may scrape, what they count,
every process of `--workers N` in one scrape), the JSON access log (one line per request,
never a token or key), request ids, and stopping: SIGTERM finishes the reviews that end
within the grace period and hands back the rest; a server killed with SIGKILL mid-review
loses its lease and another worker finishes the review."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from review.checks_plugin import ReviewChecks
from review.conftest import check, define, make_rubric, run_blocking, triggers

from rubricflow.plugins import create_plugin_manager
from rubricflow.review import ArtifactRegistry
from rubricflow.review.worker import Worker
from rubricflow.store import Store

from .conftest import RunningServer, issue_token, wait_until

PROBLEM = "application/problem+json"
OPS_SERVE = (str(Path(__file__).with_name("ops_serve.py")),)


# ------------------------------------------------------------------------- helpers


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus exposition: (name, labels) -> value."""
    found: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0 when none)."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples(text).items() if n == name and wanted <= set(have))


async def _queue(url: str, items: list[tuple[str, str]], **rubrics: Any) -> list[str]:
    """Define a type per rubric (type name = rubric id) and submit `items` (type, content)
    deferred, for a server's embedded worker; their ids."""
    async with await Store.open(url) as store:
        registry = ArtifactRegistry(
            store, plugins=create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        )
        for name, criteria in rubrics.items():
            await define(registry, name, make_rubric(name, *criteria))
        ids = []
        for type_name, content in items:
            artifact = await registry.create(type_name, content, actor="bot")
            await registry.submit_for_review(artifact.id, actor="bot", defer=True)
            ids.append(artifact.id)
        return ids


def queue(url: str, items: list[tuple[str, str]], **rubrics: Any) -> list[str]:
    return list(run_blocking(_queue(url, items, **rubrics)))


def statuses(url: str, ids: list[str]) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with await Store.open(url) as store:
            registry = ArtifactRegistry(store)
            return {a: await registry.get(a) for a in ids}

    return dict(run_blocking(read()))


def access_lines(server: RunningServer) -> list[dict[str, Any]]:
    lines = []
    for line in server.output().splitlines():
        if line.startswith("{") and '"request_id"' in line:
            lines.append(json.loads(line))
    return lines


# ------------------------------------------------------------------------- metrics


def test_metrics_need_an_admin_and_count_requests_and_the_queue(
    start_server: Callable[..., RunningServer], server_db: str
) -> None:
    admin = issue_token(server_db, "admin", name="ops")
    reviewer = issue_token(server_db, "reviewer", name="rev")
    waiting = queue(server_db, [("filled", f"reply {n}") for n in range(3)], filled=[])
    server = start_server(server_db, "--review-workers", "0")
    with server.client(admin) as ops, server.client(reviewer) as rev, server.client() as anon:
        for _ in range(5):
            assert rev.get("/v1/me").status_code == 200
        denied = anon.get("/metrics")
        assert denied.status_code == 401 and denied.headers["content-type"] == PROBLEM
        forbidden = rev.get("/metrics")
        assert forbidden.status_code == 403 and "admin role" in forbidden.json()["detail"]
        scraped = ops.get("/metrics")
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain")
        text = scraped.text
    me = {"route": "/v1/me", "method": "GET"}
    assert value(text, "rubricflow_http_requests_total", status="200", **me) == 5
    assert value(text, "rubricflow_http_requests_total", route="/metrics", status="401") == 1
    assert value(text, "rubricflow_http_requests_total", route="/metrics", status="403") == 1
    assert value(text, "rubricflow_http_request_duration_seconds_count", **me) == 5
    # read from the store when scraped: the three deferred submissions wait (no worker)
    assert value(text, "rubricflow_review_queue_depth") == len(waiting)
    assert value(text, "rubricflow_reviews_in_progress") == 0
    assert value(text, "rubricflow_webhook_backlog") == 0
    # an unknown path is counted under one label, not one per path
    with server.client(admin) as ops:
        assert ops.get("/no/such/thing/123").status_code == 404
        text = ops.get("/metrics").text
    assert value(text, "rubricflow_http_requests_total", route="unmatched", status="404") == 1
    assert not any("/no/such" in str(labels) for _, labels in samples(text))


def test_every_process_of_workers_n_is_in_one_scrape_with_reviews_by_outcome(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> None:
    admin = issue_token(sqlite_db, "admin", name="ops")
    items = [("filled", f"reply {n}") for n in range(6)] + [("filled", "   ")]
    ids = queue(sqlite_db, items, filled=[])
    server = start_server(sqlite_db, "--workers", "2", "--public-metrics")

    def decided() -> bool:
        found = statuses(sqlite_db, ids)
        return all(a.status in {"approved", "needs_revision"} for a in found.values())

    assert wait_until(decided, 60), statuses(sqlite_db, ids)
    requests = 20
    for _ in range(requests):  # a new connection each: the processes share them out
        with server.client(admin) as client:
            assert client.get("/v1/me").status_code == 200
    scrapes = []
    for _ in range(6):
        with server.client() as client:  # --public-metrics: no token needed
            scrapes.append(client.get("/metrics").text)
    for text in scrapes:  # whichever process answered, it counts every process's requests
        assert value(text, "rubricflow_http_requests_total", route="/v1/me") == requests
        assert value(text, "rubricflow_reviews_total", outcome="approved") == 6
        assert value(text, "rubricflow_reviews_total", outcome="needs_revision") == 1
        assert value(text, "rubricflow_transitions_total", trigger="start_review") == 7
        assert value(text, "rubricflow_evaluations_stored_total") == 7
        assert value(text, "rubricflow_review_queue_depth") == 0


# ------------------------------------------------------------- logs and request ids


def test_the_access_log_has_one_json_line_per_request_and_no_secret(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> None:
    secret = issue_token(sqlite_db, "reviewer", name="log-bot")
    server = start_server(sqlite_db, "--review-workers", "0")
    with server.client(secret) as client:
        mine = client.get("/v1/me", headers={"X-Request-Id": "trace-42.a"})
        assert mine.headers["x-request-id"] == "trace-42.a"
        # credentials in a query string are masked; the token is in the header anyway
        client.get("/v1/me", params={"key": "sk-live-123456", "token": secret, "page": "2"})
        generated = client.get("/v1/tokens")  # a reviewer: 403, with a request id
        forged = client.get("/v1/me", headers={"X-Request-Id": 'x" {"status": 200}'})
    with server.client() as anon:
        unauthorized = anon.get("/v1/me", headers={"Authorization": f"Bearer {secret}x"})
    assert generated.status_code == 403
    request_id = generated.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    assert generated.json()["request_id"] == request_id  # the problem names it too
    assert unauthorized.json()["request_id"] == unauthorized.headers["x-request-id"]
    # a client's id that could forge a log line is replaced, not logged
    assert re.fullmatch(r"[0-9a-f]{32}", forged.headers["x-request-id"])

    server.stop()  # the log is complete
    output = server.output()
    assert secret not in output and "sk-live-123456" not in output
    lines = {line["request_id"]: line for line in access_lines(server)}
    line = lines["trace-42.a"]
    assert line["method"] == "GET" and line["route"] == "/v1/me" and line["status"] == 200
    assert line["principal"] == "log-bot" and line["duration_ms"] >= 0
    assert {"time", "path"} <= set(line)
    masked = [entry for entry in lines.values() if "query" in entry]
    assert [entry["query"] for entry in masked] == ["key=***&token=***&page=2"]
    assert lines[request_id]["status"] == 403
    assert lines[unauthorized.headers["x-request-id"]]["principal"] is None
    # one line per request: the five above (health checks of the start come first)
    assert sum(entry["route"] != "/healthz" for entry in lines.values()) == 5


def test_a_body_over_the_limit_is_a_problem_with_the_request_id(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> None:
    admin = issue_token(sqlite_db, "admin")
    server = start_server(sqlite_db, "--review-workers", "0", "--max-body-bytes", "2048")
    with server.client(admin) as client:
        refused = client.post(
            "/v1/tokens",
            json={"name": "x" * 4096, "role": "submitter"},
            headers={"X-Request-Id": "big-1"},
        )
    assert refused.status_code == 413 and refused.headers["content-type"] == PROBLEM
    assert refused.json()["request_id"] == "big-1" == refused.headers["x-request-id"]


# ------------------------------------------------------------------------- stopping


def test_sigterm_finishes_what_ends_in_the_grace_period_and_hands_back_the_rest(
    start_server: Callable[..., RunningServer], server_db: str, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    short, long = queue(
        server_db,
        [("brief", "a short essay"), ("tome", "a very long essay")],
        brief=[check("s", "slow_non_empty", seconds=1.0)],
        tome=[check("s", "slow_non_empty", seconds=60)],
    )
    server = start_server(
        server_db,
        *("--review-workers", "2", "--grace", "3"),
        env={"RUBRICFLOW_TEST_MARKER": str(markers)},
        launcher=OPS_SERVE,
    )
    assert wait_until(
        lambda: all((markers / f"{a}.started").exists() for a in (short, long)), 60
    ), "both reviews in flight"
    signalled = time.monotonic()
    assert server.stop(signal.SIGTERM) in (0, -signal.SIGTERM)  # uvicorn re-raises it
    assert "Application shutdown complete" in server.output()
    assert time.monotonic() - signalled < 3 + 5  # the grace period, then the hand-back
    found = statuses(server_db, [short, long])
    assert found[short].status == "approved"  # it ended within the grace period
    back = found[long]
    assert (back.status, back.lease_owner, back.failures) == ("pending_review", None, 0)
    assert "abort_review" in output_triggers(server_db, long)

    # another worker takes the handed-back review at once and finishes it
    async def rescue() -> int:
        async with await Store.open(server_db) as store:
            plugins = create_plugin_manager(
                plugins=[ReviewChecks(slow_factor=0.0)], load_entry_points=False
            )
            worker = Worker(ArtifactRegistry(store, plugins=plugins), poll_interval=0.05)
            return (await worker.run(once=True)).reviewed

    assert run_blocking(rescue()) == 1
    assert statuses(server_db, [long])[long].status == "approved"


def test_a_server_killed_mid_review_is_taken_over_after_its_lease(
    start_server: Callable[..., RunningServer], server_db: str, tmp_path: Path
) -> None:
    """The worker SIGKILL scenario (tests/review/test_workers.py) with `rubricflow serve`'s
    embedded worker as the worker that dies."""
    lease = 3.0
    markers = tmp_path / "markers"
    markers.mkdir()
    (artifact,) = queue(
        server_db, [("tome", "a long essay")], tome=[check("s", "slow_non_empty", seconds=60)]
    )
    server = start_server(
        server_db,
        *("--lease", str(lease)),
        env={"RUBRICFLOW_TEST_MARKER": str(markers)},
        launcher=OPS_SERVE,
    )
    assert wait_until(lambda: (markers / f"{artifact}.started").exists(), 60)
    server.stop(signal.SIGKILL)
    assert server.process.returncode == -signal.SIGKILL
    stranded = statuses(server_db, [artifact])[artifact]
    assert stranded.status == "in_review" and stranded.lease_owner
    assert stranded.lease_expires_at is not None

    async def rescue() -> tuple[int, int]:
        async with await Store.open(server_db) as store:
            plugins = create_plugin_manager(
                plugins=[ReviewChecks(slow_factor=0.0)], load_entry_points=False
            )
            registry = ArtifactRegistry(store, plugins=plugins, lease_seconds=lease)
            early = await Worker(registry, name="rescuer", poll_interval=0.05).run(once=True)
            if early.reviewed == 0:  # the lease still held: wait for it to expire
                left = stranded.lease_expires_at.timestamp() - time.time()  # type: ignore[union-attr]
                await asyncio.sleep(max(left, 0) + 0.2)
            late = await Worker(registry, name="rescuer", poll_interval=0.05).run(once=True)
            return early.reviewed, late.reviewed

    early, late = run_blocking(rescue())
    assert early + late == 1
    done = statuses(server_db, [artifact])[artifact]
    assert done.status == "approved" and done.lease_owner is None
    history = output_triggers(server_db, artifact)
    assert history[-4:] == ["start_review", "abort_review", "start_review", "approve"]


def output_triggers(url: str, artifact_id: str) -> list[str]:
    async def read() -> list[str]:
        async with await Store.open(url) as store:
            return triggers(await ArtifactRegistry(store).history(artifact_id))

    return list(run_blocking(read()))
