"""The SSRF guard: a webhook URL whose host is, or resolves to, a loopback, link-local,
private, multicast, reserved or unspecified address (IPv4 or IPv6, IPv4 inside IPv6
included) is refused with a message naming the URL and the fix, unless an admin allowed
private addresses; only http and https are accepted."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.errors import WebhookError
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store
from rubricflow.webhooks import WebhookService, address_refusal, resolve_target

INSIDE = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
]


@st.composite
def inside_ipv4(draw: st.DrawFn) -> ipaddress.IPv4Address:
    network = ipaddress.ip_network(draw(st.sampled_from(INSIDE)))
    offset = draw(st.integers(0, network.num_addresses - 1))
    return network[offset]


public_ipv4 = (
    st.integers(0, 2**32 - 1)
    .map(ipaddress.IPv4Address)
    .filter(lambda ip: ip.is_global and not ip.is_multicast)
)


@given(inside_ipv4())
@settings(max_examples=200, deadline=None)
async def test_inside_addresses_are_refused_in_every_spelling(ip: ipaddress.IPv4Address) -> None:
    mapped = ipaddress.IPv6Address(f"::ffff:{ip}")
    nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(ip))
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(ip) << 80))
    for host in (str(ip), f"[{mapped}]", f"[{nat64}]", f"[{sixtofour}]"):
        url = f"https://{host}:8443/hooks"
        with pytest.raises(WebhookError) as refused:
            await resolve_target(url, allow_private=False)
        message = str(refused.value)
        assert url in message and "--allow-private" in message, message
        # an admin may allow it for one subscription
        assert (await resolve_target(url, allow_private=True)).address is None


@given(public_ipv4)
@settings(max_examples=200, deadline=None)
async def test_public_addresses_are_accepted_and_pinned(ip: ipaddress.IPv4Address) -> None:
    target = await resolve_target(f"http://{ip}/hooks", allow_private=False)
    assert target.address == str(ip) and target.port == 80
    mapped = await resolve_target(f"https://[::ffff:{ip}]/h", allow_private=False)
    assert mapped.port == 443


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "private"),  # documentation
        ("::ffff:169.254.169.254", "link-local (inside the IPv6 address ::ffff:a9fe:a9fe)"),
    ],
)
def test_ipv6_addresses(address: str, reason: str) -> None:
    assert address_refusal(address) == reason


def test_public_ipv6_is_fine() -> None:
    assert address_refusal("2606:4700:4700::1111") is None
    assert address_refusal("8.8.8.8") is None


async def test_a_name_that_resolves_inside_is_refused() -> None:
    with pytest.raises(WebhookError, match=r"'http://localhost:8080/x' resolves to .*loopback"):
        await resolve_target("http://localhost:8080/x", allow_private=False)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("ftp://example.com/hooks", "must start with https:// or http://"),
        ("file:///etc/passwd", "must start with https:// or http://"),
        ("example.com/hooks", "(it has no scheme)"),
        ("https://", "names no host"),
        ("https://user:pw@example.com/", "carries credentials"),
        ("https://exa mple.com/", "spaces or control characters"),
        ("https://example.com:99999/", "is not a valid URL"),
        ("", "a webhook URL is required"),
        ("https://example.com/" + "a" * 2000, "at most 2000"),
    ],
)
async def test_urls_rubricflow_cannot_send_to(url: str, fragment: str) -> None:
    with pytest.raises(WebhookError) as refused:
        await resolve_target(url, allow_private=True)
    assert fragment in str(refused.value)


async def test_registration_refuses_an_inside_url_unless_allowed(
    store: Store, registry: ArtifactRegistry
) -> None:
    service = WebhookService(store)
    with pytest.raises(WebhookError) as refused:
        await service.add("http://169.254.169.254/latest/meta-data", ["approved"], actor="admin")
    assert str(refused.value) == (
        "webhook URL 'http://169.254.169.254/latest/meta-data' is a link-local address; "
        "rubricflow sends webhooks only to public addresses, so a webhook cannot reach "
        "internal services (SSRF). Use a public URL, or have an admin allow private "
        "addresses for this subscription (`rubricflow webhooks add URL --allow-private`)"
    )
    assert await service.list() == []
    created = await service.add(
        "http://127.0.0.1:8080/hooks", ["approved"], actor="admin", allow_private=True
    )
    assert created.subscription.allow_private
    assert created.secret.startswith("whsec_")
    assert [s.id for s in await service.list()] == [created.subscription.id]
    with pytest.raises(WebhookError, match="unknown webhook event 'aproved'; choose from"):
        await service.add("http://127.0.0.1/", ["aproved"], actor="a", allow_private=True)
    with pytest.raises(Exception, match="no artifact type 'nope'"):
        await service.add(
            "http://127.0.0.1/", ["approved"], actor="a", allow_private=True, artifact_type="nope"
        )
