"""Signing by the Standard Webhooks convention, with the `standardwebhooks` library.

Each subscription has a secret `whsec_<base64 of 32 random bytes>`; each attempt is sent
with `webhook-id` (the message id, the same on every retry and replay),
`webhook-timestamp` (the attempt's Unix time) and `webhook-signature`
(`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), which any Standard Webhooks
verifier checks (`standardwebhooks.Webhook(secret).verify(body, headers)`).
"""

from __future__ import annotations

import base64
import secrets
from datetime import datetime, timezone
from math import floor
from typing import TYPE_CHECKING

from rubricflow.errors import ConfigurationError

if TYPE_CHECKING:
    from standardwebhooks import Webhook

__all__ = ["SECRET_PREFIX", "new_secret", "signed_headers"]

SECRET_PREFIX = "whsec_"
INSTALL_HINT = (
    "sending webhooks needs the standardwebhooks package: pip install 'rubricflow[server]' "
    "(from a checkout: python -m pip install -e '.[server]')"
)


def new_secret() -> str:
    """A new signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def _webhook(secret: str) -> Webhook:
    try:
        from standardwebhooks import Webhook
    except ImportError:
        raise ConfigurationError(INSTALL_HINT) from None
    return Webhook(secret)


def signed_headers(secret: str, message_id: str, body: str, at: datetime) -> dict[str, str]:
    """The three Standard Webhooks headers for sending `body` as message `message_id` at
    `at`."""
    moment = at.astimezone(timezone.utc)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(floor(moment.timestamp())),
        "webhook-signature": _webhook(secret).sign(message_id, moment, body),
    }
