"""The dashboard's files: vendored scripts match VENDORED.md, the style sheet's colour
pairs pass WCAG AA, and no template carries an inline script, style or event handler
(the CSP would block them) or marks a value safe."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import rubricflow.server.ui as ui

UI = Path(ui.__file__).parent
VENDOR = UI / "static" / "vendor"
TEMPLATES = UI / "templates"


def _vendored_rows() -> list[tuple[str, str]]:
    text = (VENDOR / "VENDORED.md").read_text()
    return re.findall(r"^\| ([\w.-]+) \| [^|]+ \| [^|]+ \| ([0-9a-f]{64}) \|$", text, re.M)


def test_vendored_files_match_their_recorded_sha256() -> None:
    rows = _vendored_rows()
    assert {name for name, _ in rows} == {
        p.name for p in VENDOR.iterdir() if p.name != "VENDORED.md"
    }, "every vendored file is recorded, and only those"
    for name, digest in rows:
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    # every script has its licence beside it
    for script in VENDOR.glob("*.min.js"):
        assert (VENDOR / script.name.replace(".min.js", ".LICENSE")).exists()


def test_the_base_template_loads_only_vendored_scripts() -> None:
    base = (TEMPLATES / "base.html").read_text()
    sources = re.findall(r'<script src="\{\{ static\(\'([^\']+)\'\) \}\}"', base)
    assert sources, "no script tags found"
    for source in sources:
        assert (UI / "static" / source).exists()
    assert '"includeIndicatorStyles": false' in base


@pytest.mark.parametrize("template", sorted(p.name for p in TEMPLATES.glob("*.html")))
def test_templates_have_no_inline_script_style_or_handlers(template: str) -> None:
    text = (TEMPLATES / template).read_text()
    assert not re.search(r"<script(?![^>]*\ssrc=)[^>]*>", text), "inline <script>"
    assert "<style" not in text
    assert not re.search(r"\sstyle=", text), "style attribute"
    assert not re.search(r"\son[a-z]+=", text), "event handler attribute"
    assert not re.search(r"hx-on|javascript:", text)
    assert "|safe" not in text and "Markup(" not in text
    assert "autoescape false" not in text


def _luminance(colour: str) -> float:
    colour = colour.lstrip("#")
    if len(colour) == 3:
        colour = "".join(c * 2 for c in colour)
    channels = [int(colour[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(foreground: str, background: str) -> float:
    high, low = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_formula() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_every_colour_pair_of_the_style_sheet_passes_wcag_aa() -> None:
    sheets = [(UI / "static" / name).read_text() for name in ("dashboard.css", "views.css")]
    css = re.sub(r"/\*.*?\*/", "", "\n".join(sheets), flags=re.S)
    pairs = 0
    for selector, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        colour = re.search(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{3,6})", body)
        background = re.search(r"background-color:\s*(#[0-9a-fA-F]{3,6})", body)
        if colour is None:
            continue
        assert background is not None, f"{selector.strip()} sets a colour without a background"
        ratio = contrast(colour.group(1), background.group(1))
        assert ratio >= 4.5, f"{selector.strip()}: {ratio:.2f}:1 is below 4.5:1"
        pairs += 1
    assert pairs >= 20
    # the focus ring stands out from white (non-text contrast, 3:1)
    focus = re.search(r"--focus:\s*(#[0-9a-fA-F]{6})", css)
    assert focus is not None and contrast(focus.group(1), "#ffffff") >= 3.0
