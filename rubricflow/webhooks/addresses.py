"""The SSRF guard: which webhook URLs rubricflow may send to.

A webhook URL is chosen by whoever registers it, and rubricflow's process POSTs to it
from inside the network it runs in; without a guard, a webhook is a way to reach the
database's admin port, a cloud's metadata service (169.254.169.254) or any internal
service. So a URL must be http or https, carry no credentials, and every address its host
resolves to must be globally routable: loopback, link-local, private, shared (CGNAT),
multicast, reserved and unspecified addresses are refused, IPv4 and IPv6 alike, and so
are IPv6 addresses that embed a refused IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64).
The check runs at registration and again before every delivery, and a delivery connects
to the very address that was checked (so a DNS answer that changes in between cannot
redirect it). An admin may allow private addresses for one subscription
(`allow_private`), e.g. a receiver on the same host.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from rubricflow.errors import WebhookError

__all__ = [
    "MAX_URL_LENGTH",
    "ResolvedTarget",
    "Resolver",
    "address_refusal",
    "check_url",
    "resolve_target",
    "system_resolver",
]

MAX_URL_LENGTH = 2000
_SCHEMES = ("http", "https")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

#: a resolver: (host, port) -> the addresses it resolves to
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class ResolvedTarget:
    """A checked URL and the address to connect to (None: connect by name, as an
    `allow_private` subscription does)."""

    url: str
    scheme: str
    host: str
    port: int
    address: str | None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries, if any (IPv4-mapped, 6to4, Teredo, NAT64)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_refusal(address: str | IPAddress) -> str | None:
    """Why a webhook may not be sent to `address` (e.g. "loopback"), or None for a
    globally routable unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            reason = address_refusal(inner)
            return f"{reason} (inside the IPv6 address {ip})" if reason else None
    for reason, flagged in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    ):
        if flagged:
            return reason
    if not ip.is_global:  # shared (100.64/10), documentation, benchmarking ranges...
        return "non-public"
    return None


def check_url(url: str) -> tuple[str, str, int]:
    """The URL's scheme, host and port, when rubricflow may send webhooks to its form
    (http or https, a host, no credentials); else `WebhookError` naming the URL."""
    if not isinstance(url, str) or not url.strip():
        raise WebhookError("a webhook URL is required, e.g. https://example.com/hooks")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise WebhookError(
            f"webhook URL is {len(url)} characters long; at most {MAX_URL_LENGTH} are accepted"
        )
    if any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url):
        raise WebhookError(
            f"webhook URL {url!r} holds spaces or control characters; percent-encode them"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise WebhookError(f"webhook URL {url!r} is not a valid URL: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise WebhookError(
            f"webhook URL {url!r} must start with https:// or http:// "
            + (f"(not {parts.scheme}://)" if parts.scheme else "(it has no scheme)")
        )
    if parts.username is not None or parts.password is not None:
        raise WebhookError(
            f"webhook URL {url!r} carries credentials; leave them out: every delivery is "
            "signed (webhook-signature), so the receiver checks the signature instead"
        )
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise WebhookError(f"webhook URL {url!r} names no host, e.g. https://example.com/hooks")
    return scheme, host, port or (443 if scheme == "https" else 80)


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """The addresses the system resolver gives for `host` (TCP)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


async def resolve_target(
    url: str, *, allow_private: bool, resolver: Resolver | None = None
) -> ResolvedTarget:
    """Check `url` and, unless `allow_private`, resolve its host and refuse it when any
    address it resolves to is not public (`WebhookError` naming the URL, the address, why,
    and the fix). The target names the checked address to connect to."""
    scheme, host, port = check_url(url)
    url = url.strip()
    if allow_private:
        return ResolvedTarget(url, scheme, host, port, None)
    literal = _literal(host)
    if literal is not None:
        addresses: Sequence[str] = [str(literal)]
    else:
        try:
            addresses = await (resolver or system_resolver)(host, port)
        except (OSError, UnicodeError) as error:
            raise WebhookError(
                f"cannot resolve the host {host!r} of webhook URL {url!r} "
                f"({getattr(error, 'strerror', None) or error}); check the URL"
            ) from None
        if not addresses:
            raise WebhookError(f"the host {host!r} of webhook URL {url!r} has no address")
    for address in addresses:
        reason = address_refusal(address)
        if reason is not None:
            where = "is" if literal is not None else f"resolves to {address}, which is"
            raise WebhookError(
                f"webhook URL {url!r} {where} a {reason} address; rubricflow sends webhooks "
                "only to public addresses, so a webhook cannot reach internal services "
                "(SSRF). Use a public URL, or have an admin allow private addresses for "
                "this subscription (`rubricflow webhooks add URL --allow-private`)"
            )
    return ResolvedTarget(url, scheme, host, port, addresses[0])
