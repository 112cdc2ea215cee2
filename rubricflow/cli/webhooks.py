"""`rubricflow webhooks ...`: subscribe URLs to artifact events, read the delivery log,
replay a delivery, and run the delivery worker."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rubricflow.cli.shared import (
    ActorOption,
    DbOption,
    JsonOption,
    actor_default,
    err,
    fail,
    out,
    print_json,
    run_with_app,
    table,
)

if TYPE_CHECKING:
    from rubricflow.application import (
        Application,
        DeliveryAttempt,
        WebhookDelivery,
        WebhookSubscription,
    )
    from rubricflow.webhooks import DeliveryStats

__all__ = ["webhooks_app"]

webhooks_app = typer.Typer(
    help="Send artifact events to URLs (signed, retried, logged): subscribe, read the "
    "delivery log, replay, deliver.",
    no_args_is_help=True,
)


def _events_text(subscription: WebhookSubscription) -> str:
    return ", ".join(subscription.events)


@webhooks_app.command("add")
def webhooks_add(
    url: Annotated[str, typer.Argument(metavar="URL", help="Where to POST (http or https).")],
    events: Annotated[
        list[str],
        typer.Option(
            "--event",
            "-e",
            help="An event to send: submitted, approved, needs_revision, rejected, overridden, "
            "review_incomplete, or all (repeat, or separate with commas).",
        ),
    ],
    type_name: Annotated[
        str | None,
        typer.Option("--type", "-t", help="Only artifacts of this type (default: every type)."),
    ] = None,
    allow_private: Annotated[
        bool,
        typer.Option(
            "--allow-private",
            help="Allow a loopback, link-local or private address (an admin's decision; "
            "refused otherwise, to stop SSRF).",
        ),
    ] = False,
    actor: ActorOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Subscribe a URL to artifact events; prints the signing secret, once."""
    created = run_with_app(
        db,
        lambda app: app.webhooks.add(
            url,
            events,
            artifact_type=type_name,
            allow_private=allow_private,
            actor=actor or actor_default(),
        ),
    )
    if as_json:
        print_json(created.to_dict())
        return
    subscription = created.subscription
    scope = (
        f"artifacts of type {subscription.artifact_type}"
        if subscription.artifact_type
        else ("artifacts of every type")
    )
    out.print(
        f"webhook {escape(subscription.id)}: POST {escape(subscription.url)} on "
        f"{_events_text(subscription)} of {escape(scope)}"
        + (" (private addresses allowed)" if subscription.allow_private else "")
    )
    out.print(f"signing secret: {created.secret}")
    err.print(
        "keep the secret: it is shown this once; the receiver verifies each delivery with it "
        "(docs/webhooks.md)"
    )


@webhooks_app.command("list")
def webhooks_list(
    include_removed: Annotated[
        bool, typer.Option("--all", help="Include removed subscriptions.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the webhook subscriptions (never their secrets)."""
    subscriptions = run_with_app(db, lambda app: app.webhooks.list(include_removed=include_removed))
    if as_json:
        print_json([s.to_dict() for s in subscriptions])
        return
    if not subscriptions:
        out.print("no webhooks; add one with `rubricflow webhooks add URL --event approved`")
        return
    shown = table("id", "url", "events", "type", "private", "active", "created")
    for s in subscriptions:
        shown.add_row(
            s.id,
            s.url,
            _events_text(s),
            s.artifact_type or "(all)",
            "yes" if s.allow_private else "no",
            "yes" if s.active else "removed",
            f"{s.created_at:%Y-%m-%d %H:%M} by {s.created_by}",
        )
    out.print(shown)


@webhooks_app.command("remove")
def webhooks_remove(
    subscription_id: Annotated[str, typer.Argument(metavar="ID", help="The subscription's id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop sending to a subscription; its pending deliveries are given up, its log kept."""
    removed = run_with_app(db, lambda app: app.webhooks.remove(subscription_id))
    if as_json:
        print_json(removed.to_dict())
        return
    out.print(
        f"webhook {escape(removed.subscription.id)} removed"
        + (
            f"; {removed.given_up} pending deliver{'ies' if removed.given_up != 1 else 'y'} "
            "given up"
            if removed.given_up
            else ""
        )
    )


def _delivery_row(d: WebhookDelivery) -> list[str]:
    outcome = d.status
    if d.last_status_code is not None:
        outcome += f" ({d.last_status_code})"
    return [
        str(d.id),
        d.event_type.removeprefix("artifact."),
        d.artifact_id,
        outcome,
        str(d.attempts),
        (d.last_error or "")[:120],
    ]


def _print_attempts(delivery: WebhookDelivery, attempts: list[DeliveryAttempt]) -> None:
    out.print(
        f"delivery {delivery.id}: {delivery.event_type} of artifact {escape(delivery.artifact_id)} "
        f"to {escape(delivery.subscription_id)}, message {delivery.message_id}: "
        f"[bold]{delivery.status}[/bold] after {delivery.attempts} attempt"
        f"{'s' * (delivery.attempts != 1)}"
        + (f" (a replay of {delivery.replay_of})" if delivery.replay_of else "")
    )
    if not attempts:
        out.print("  no attempt yet")
    for attempt in attempts:
        answer = f"HTTP {attempt.status_code}" if attempt.status_code is not None else "no answer"
        out.print(
            f"  #{attempt.attempt} {attempt.attempted_at:%Y-%m-%d %H:%M:%S} {answer} "
            f"in {attempt.latency_ms:.0f} ms by {escape(attempt.worker)}"
            + (f": {escape(attempt.error)}" if attempt.error else "")
        )


@webhooks_app.command("log")
def webhooks_log(
    delivery_id: Annotated[
        int | None,
        typer.Argument(metavar="[DELIVERY_ID]", help="Show one delivery with every attempt."),
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status", "-s", help="Only deliveries in this state: pending, delivered, failed."
        ),
    ] = None,
    subscription_id: Annotated[
        str | None, typer.Option("--webhook", help="Only this subscription's deliveries.")
    ] = None,
    artifact_id: Annotated[
        str | None, typer.Option("--artifact", help="Only this artifact's deliveries.")
    ] = None,
    event: Annotated[str | None, typer.Option("--event", "-e", help="Only this event.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most N.")] = 50,
    before: Annotated[
        int | None, typer.Option("--before", help="Only deliveries older than this id (paging).")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Read the delivery log, newest first; with DELIVERY_ID, one delivery's attempts."""
    if delivery_id is not None:

        async def one(app: Application) -> tuple[WebhookDelivery, list[DeliveryAttempt]]:
            return await app.webhooks.delivery(delivery_id), await app.webhooks.attempts(
                delivery_id
            )

        delivery, attempts = run_with_app(db, one)
        if as_json:
            print_json({**delivery.to_dict(), "attempt_log": [a.to_dict() for a in attempts]})
        else:
            _print_attempts(delivery, attempts)
        return
    deliveries = run_with_app(
        db,
        lambda app: app.webhooks.deliveries(
            subscription_id,
            status,
            artifact_id=artifact_id,
            event=event,
            limit=limit,
            before=before,
        ),
    )
    if as_json:
        print_json([d.to_dict() for d in deliveries])
        return
    if not deliveries:
        out.print("no deliveries")
        return
    shown = table("id", "event", "artifact", "status", "tries", "last error")
    for d in deliveries:
        shown.add_row(*_delivery_row(d))
    out.print(shown)


@webhooks_app.command("replay")
def webhooks_replay(
    delivery_id: Annotated[int, typer.Argument(metavar="DELIVERY_ID", help="The delivery.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Send a delivered or failed delivery again, with the same webhook-id."""
    replayed = run_with_app(db, lambda app: app.webhooks.replay(delivery_id))
    if as_json:
        print_json(replayed.to_dict())
        return
    out.print(
        f"delivery {delivery_id} queued again as delivery {replayed.id} (message "
        f"{replayed.message_id}); `rubricflow webhooks deliver` sends it"
    )


@webhooks_app.command("deliver")
def webhooks_deliver(
    once: Annotated[
        bool,
        typer.Option("--once", help="Send what is due now (quick retries included), then exit."),
    ] = False,
    poll: Annotated[
        float,
        typer.Option(
            "--poll", min=0.01, help="Longest wait in seconds between looks at the outbox."
        ),
    ] = 0.5,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Attempts before a delivery fails.")
    ] = 15,
    retry_delay: Annotated[
        float,
        typer.Option(
            "--retry-delay", min=0.001, help="Seconds before the first retry (doubling each time)."
        ),
    ] = 5.0,
    max_retry_delay: Annotated[
        float, typer.Option("--max-retry-delay", min=0.001, help="Longest wait between retries.")
    ] = 3600.0,
    max_age: Annotated[
        float,
        typer.Option("--max-age", min=0.001, help="Seconds after which a delivery fails."),
    ] = 86400.0,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.01, help="Seconds a send may take in all.")
    ] = 10.0,
    lease: Annotated[
        float,
        typer.Option(
            "--lease",
            min=0.02,
            help="Seconds a claimed delivery stays this worker's (longer than --timeout).",
        ),
    ] = 60.0,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            min=0.0,
            help="Seconds the sends in flight may finish after SIGTERM; the rest are handed back.",
        ),
    ] = 5.0,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Send the webhook deliveries due, retrying with back-off, until SIGTERM or SIGINT
    (or, with --once, until nothing is due)."""
    from rubricflow.errors import ConfigurationError
    from rubricflow.webhooks import DeliveryPolicy

    try:
        policy = DeliveryPolicy(
            max_attempts=max_attempts,
            max_age_seconds=max_age,
            retry_delay_seconds=retry_delay,
            max_retry_delay_seconds=max_retry_delay,
            timeout_seconds=timeout,
            lease_seconds=lease,
            poll_seconds=poll,
            grace_seconds=grace,
        )
    except ConfigurationError as error:
        fail(str(error))

    async def work(app: Application) -> DeliveryStats:
        if once:
            return await app.webhooks.deliver_due(policy=policy)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        return await app.webhooks.run_delivery_worker(stop, policy=policy)

    stats = run_with_app(db, work)
    if as_json:
        print_json(stats.to_dict())
        return
    out.print(
        f"{stats.attempts} attempt{'s' * (stats.attempts != 1)}: {stats.delivered} delivered, "
        f"{stats.retried} to retry, {stats.failed} failed"
        + (f"; {stats.handed_back} handed back unsent" if stats.handed_back else "")
    )
