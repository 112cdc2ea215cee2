"""An artifact's content rendered by kind (issue 29, item 11): markdown rendered and
sanitised (raw HTML shown as text, unsafe links and remote images dropped, a `<script>`
never runs), JSON pretty-printed, a conversation turn by turn with its tool calls and
results, plain text as written. The renderer on its own, then the artifact page over
HTTP and in Chromium against a real `rubricflow serve` on SQLite."""

from __future__ import annotations

import re

from rubricflow.server.ui.content import looks_like_markdown, render_content

from .conftest import Dashboard, Tab, sign_in
from .test_ui_http import signed_in

MARKDOWN = (
    "# Release notes\n\n"
    "Some **bold** text and `code`.\n\n"
    '<script>alert("script")</script>\n\n'
    '<img src=x onerror=alert("img")>\n\n'
    "- [a trap](javascript:alert('link'))\n"
    "- [the docs](https://example.org/docs)\n\n"
    "![pixel](https://tracker.example/p.png)\n\n"
    "{{ 7 * 7 }}\n"
)

CONVERSATION = {
    "messages": [
        {"role": "system", "content": "You book flights."},
        {"role": "user", "content": "Book me to **Oslo** <script>alert(1)</script>"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search_flights", "arguments": '{"to": "OSL"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "SK 123 at 09:40"},
        {"role": "assistant", "content": "Booked:\n- SK 123\n- 09:40"},
    ]
}


def render(content: object) -> tuple[str, str, str]:
    text = content if isinstance(content, str) else repr(content)
    view = render_content(content, text=text, cut=False)
    return view.kind, view.label, str(view.html)


def test_markdown_is_rendered_without_raw_html_unsafe_links_or_images() -> None:
    kind, _, html = render(MARKDOWN)
    assert kind == "markdown"
    assert "<h1>Release notes</h1>" in html and "<strong>bold</strong>" in html
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html  # shown as text
    assert 'href="javascript' not in html.lower()
    assert 'href="https://example.org/docs" rel="nofollow noopener noreferrer"' in html
    assert "{{ 7 * 7 }}" in html  # content is never a template


def test_plain_text_json_and_a_cut_document() -> None:
    assert not looks_like_markdown("A plain answer - with a dash, and 3.5 stars.")
    kind, _, html = render("A plain answer.\n<b>not bold</b>")
    assert kind == "text" and "&lt;b&gt;" in html
    view = render_content({"b": [1, 2]}, text='{\n  "b": [1, 2]\n}', cut=False)
    assert view.kind == "json" and '<pre class="content"' in str(view.html)
    cut = render_content("# cut markdown", text="# cut", cut=True)
    assert cut.kind == "text"


def test_a_conversation_is_rendered_turn_by_turn_with_its_tool_calls() -> None:
    kind, label, html = render(CONVERSATION)
    assert kind == "conversation" and label == "conversation, 5 messages"
    roles = re.findall(r'<li class="turn role-(\w+)"', html)
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert "Trajectory: 1 tool call" in html
    assert "<code>search_flights</code>" in html and "&#34;to&#34;: &#34;OSL&#34;" in html
    assert "result of call call_1" in html
    assert "<strong>Oslo</strong>" in html and "<script" not in html
    assert "<li>SK 123</li>" in html


def test_the_artifact_page_renders_content_by_kind(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    markdown = dashboard.submit(MARKDOWN, actor="bob", title="Markdown")
    conversation = dashboard.submit(CONVERSATION, actor="bob", title="Conversation")
    data = dashboard.submit({"nested": {"list": [1, 2]}}, actor="bob", title="JSON")
    with signed_in(dashboard, "alice") as client:
        page = client.get(f"/ui/artifacts/{markdown}").text
        assert 'data-kind="markdown"' in page and "<h1>Release notes</h1>" in page
        assert "<script>alert" not in page and "(markdown, revision 1)" in page
        # the source stays one click away, escaped
        assert re.search(r'<pre class="source"[^>]*>[^<]*&lt;script&gt;', page)
        page = client.get(f"/ui/artifacts/{conversation}").text
        assert 'data-kind="conversation"' in page and "search_flights" in page
        page = client.get(f"/ui/artifacts/{data}").text
        assert 'data-kind="json"' in page and '"nested": {\n    "list": [' in page.replace(
            "&#34;", '"'
        )


def test_a_script_in_content_does_not_run_in_the_browser(
    sqlite_dashboard: Dashboard, tab: Tab
) -> None:
    dashboard = sqlite_dashboard
    markdown = dashboard.submit(MARKDOWN, actor="bob", title="Markdown in a browser")
    conversation = dashboard.submit(CONVERSATION, actor="bob", title="A booking")
    sign_in(tab, dashboard, "alice")
    page = tab.page
    page.goto(f"{dashboard.url}/ui/artifacts/{markdown}")
    region = page.get_by_role("region", name="Content of revision 1")
    assert region.get_by_role("heading", name="Release notes").is_visible()
    assert region.locator("strong").inner_text() == "bold"
    assert 'alert("script")' in region.inner_text()  # shown as text, not run
    assert page.locator("main script").count() == 0
    assert page.locator("main img").count() == 0
    assert page.locator('a[href^="javascript"]').count() == 0
    assert region.get_by_role("link", name="the docs").get_attribute("rel") == (
        "nofollow noopener noreferrer"
    )
    region.hover()
    page.keyboard.press("Tab")
    page.goto(f"{dashboard.url}/ui/artifacts/{conversation}")
    turns = page.locator("ol.conversation > li")
    assert turns.evaluate_all("els => els.map(e => e.dataset.role)") == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert "search_flights" in page.locator("details.trajectory").inner_text()
    assert '"to": "OSL"' in turns.nth(2).locator("pre.json").inner_text()
    tab.clean()  # no dialog opened: nothing in the content ran
