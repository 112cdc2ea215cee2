"""The dashboard shows bidi controls as visible marks, never as controls: a title such as
`\\u202egnp.exe` (shown by a browser as `exe.png`) cannot disguise itself or reorder the
page around it. Right-to-left text is shown in its own direction (`dir="auto"`)."""

from __future__ import annotations

import re

from .conftest import Dashboard
from .test_ui_http import signed_in

#: bidi embeddings, overrides and isolates
CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def test_titles_and_content_show_bidi_controls_as_marks(dashboard: Dashboard) -> None:
    artifact_id = dashboard.submit(
        {"text": "total \u2066 1 + 2 \u2069 = 3", "note": "\u05e9\u05dc\u05d5\u05dd"},
        actor="carol",
        title="\u202egnp.exe",
    )
    with signed_in(dashboard, "alice") as client:
        page = client.get(f"/ui/artifacts/{artifact_id}")
        assert page.status_code == 200, page.text
        assert not CONTROLS.search(page.text), CONTROLS.findall(page.text)
        assert '<h1 dir="auto">[U+202E]gnp.exe</h1>' in page.text
        content = re.search(r'<pre class="content" dir="auto"[^>]*>(.*?)</pre>', page.text, re.S)
        assert content is not None
        assert "[U+2066] 1 + 2 [U+2069]" in content.group(1)
        assert "\u05e9\u05dc\u05d5\u05dd" in content.group(1)  # RTL text itself is kept

        queue = client.get("/ui/queue?bucket=awaiting_approval")
        assert queue.status_code == 200
        row = re.search(rf'<tr data-artifact="{artifact_id}".*?</tr>', queue.text, re.S)
        assert row is not None
        assert 'dir="auto">[U+202E]gnp.exe</a>' in row.group(0)
        assert not CONTROLS.search(queue.text)
