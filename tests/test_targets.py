"""Reading targets: one object in a JSON/YAML file, a JSONL stream (read lazily), or stdin."""

from __future__ import annotations

import inspect
import io
import json
import sys
import tracemalloc
from itertools import islice
from pathlib import Path

import pytest

from rubricflow.targets import TargetInputError, read_targets


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def use_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))


def test_a_json_file_holds_one_target(tmp_path: Path) -> None:
    path = write(
        tmp_path / "target.json",
        json.dumps(
            {
                "id": "answer-7",
                "content": {"title": "Quiz", "questions": []},
                "query": "Make a quiz",
                "metadata": {"bot": "quizzer"},
            },
            indent=2,
        ),
    )

    targets = list(read_targets(path))

    assert len(targets) == 1
    assert targets[0].id == "answer-7"
    assert targets[0].content == {"title": "Quiz", "questions": []}
    assert targets[0].query == "Make a quiz"
    assert targets[0].metadata == {"bot": "quizzer"}


def test_a_yaml_file_holds_one_target(tmp_path: Path) -> None:
    path = write(
        tmp_path / "target.yaml",
        "id: reply-1\ncontent: |\n  Hello there,\n  thanks for writing.\nreference: Hi\n",
    )

    targets = list(read_targets(str(path)))

    assert [t.id for t in targets] == ["reply-1"]
    assert targets[0].content == "Hello there,\nthanks for writing.\n"
    assert targets[0].reference == "Hi"


def test_jsonl_ids_default_to_the_line_number_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = write(
        tmp_path / "targets.jsonl",
        '{"content": "first"}\n'
        "\n"
        '{"id": "named", "content": "second"}\n'
        "   \n"
        '{"content": {"json": true}}\n',
    )

    targets = list(read_targets(path))

    assert [t.id for t in targets] == ["line-1", "named", "line-5"]
    assert [t.content for t in targets] == ["first", "second", {"json": True}]


def test_ndjson_is_read_as_jsonl(tmp_path: Path) -> None:
    path = write(tmp_path / "targets.ndjson", '{"content": "a"}\n{"content": "b"}\n')

    assert [t.content for t in read_targets(path)] == ["a", "b"]


def test_a_malformed_jsonl_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "targets.jsonl", '{"content": "ok"}\n\n{"content": "broken"\n{"content": "x"}\n'
    )
    targets = read_targets(path)

    assert next(targets).content == "ok"
    with pytest.raises(TargetInputError) as caught:
        next(targets)

    assert str(path) in str(caught.value)
    assert "line 3" in str(caught.value)


def test_an_object_without_content_says_how_to_fix_it(tmp_path: Path) -> None:
    path = write(tmp_path / "targets.jsonl", '{"content": "ok"}\n{"text": "oops"}\n')

    with pytest.raises(TargetInputError) as caught:
        list(read_targets(path))

    message = str(caught.value)
    assert str(path) in message
    assert "line 2" in message
    assert "`content`" in message
    assert "text" in message  # the keys it did get


def test_a_json_file_without_content_says_how_to_fix_it(tmp_path: Path) -> None:
    path = write(tmp_path / "target.json", '{"answer": "42"}')

    with pytest.raises(TargetInputError) as caught:
        list(read_targets(path))

    assert str(path) in str(caught.value)
    assert "`content`" in str(caught.value)


@pytest.mark.parametrize("line", ['"just text"', "[1, 2]", "42"])
def test_a_jsonl_line_that_is_not_an_object_is_refused(tmp_path: Path, line: str) -> None:
    path = write(tmp_path / "targets.jsonl", f"{line}\n")

    with pytest.raises(TargetInputError) as caught:
        list(read_targets(path))

    assert "line 1" in str(caught.value)
    assert "content" in str(caught.value)


def test_a_malformed_json_file_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "target.json", '{"content": "unterminated}')

    with pytest.raises(TargetInputError) as caught:
        list(read_targets(path))

    assert str(path) in str(caught.value)


def test_a_missing_file_is_a_target_input_error(tmp_path: Path) -> None:
    with pytest.raises(TargetInputError) as caught:
        list(read_targets(tmp_path / "absent.jsonl"))

    assert "absent.jsonl" in str(caught.value)


def test_a_file_that_is_not_utf8_is_a_target_input_error(tmp_path: Path) -> None:
    path = tmp_path / "targets.jsonl"
    path.write_bytes(b'{"content": "caf\xe9"}\n')

    with pytest.raises(TargetInputError) as caught:
        list(read_targets(path))

    assert "UTF-8" in str(caught.value)


def test_jsonl_is_streamed_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    line = json.dumps({"content": "x" * 60}) + "\n"
    with path.open("w", encoding="utf-8") as stream:
        stream.writelines([line] * 200_000)
        stream.write("{this last line is broken\n")
    assert path.stat().st_size > 10_000_000

    tracemalloc.start()
    try:
        targets = read_targets(path)
        first_three = list(islice(targets, 3))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert [t.id for t in first_three] == ["line-1", "line-2", "line-3"]
    # the broken last line has not been reached, and the generator is paused, not done
    assert inspect.getgeneratorstate(targets) == inspect.GEN_SUSPENDED
    assert peak < 2_000_000  # far less than the 13 MB file
    targets.close()
    assert inspect.getgeneratorstate(targets) == inspect.GEN_CLOSED


# --- stdin -------------------------------------------------------------------------------


def test_stdin_jsonl(monkeypatch: pytest.MonkeyPatch) -> None:
    use_stdin(monkeypatch, '{"content": "a"}\n\n{"id": "b", "content": "b"}\n')

    targets = list(read_targets("-"))

    assert [(t.id, t.content) for t in targets] == [("line-1", "a"), ("b", "b")]


def test_stdin_one_pretty_printed_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    use_stdin(monkeypatch, json.dumps({"id": "pretty", "content": {"a": [1, 2]}}, indent=2))

    targets = list(read_targets("-"))

    assert [(t.id, t.content) for t in targets] == [("pretty", {"a": [1, 2]})]


def test_stdin_one_yaml_object(monkeypatch: pytest.MonkeyPatch) -> None:
    use_stdin(monkeypatch, "id: y\ncontent: some text\n")

    assert [(t.id, t.content) for t in read_targets("-")] == [("y", "some text")]


def test_empty_stdin_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    use_stdin(monkeypatch, "\n  \n")

    with pytest.raises(TargetInputError, match="stdin"):
        list(read_targets("-"))


def test_stdin_line_numbers_count_leading_blank_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin and a file with the same lines give the same ids and error line numbers."""
    use_stdin(monkeypatch, '\n\n{"content": "a"}\n{"content": broken}\n')
    targets = read_targets("-")

    assert next(targets).id == "line-3"
    with pytest.raises(TargetInputError, match="line 4"):
        next(targets)


def test_a_lone_surrogate_is_refused_with_its_line(tmp_path: Path) -> None:
    """A cut emoji (`\\ud800` in JSON) cannot be hashed or stored: a clear input error."""

    source = tmp_path / "cut.jsonl"
    source.write_text('{"id": "ok", "content": "fine"}\n{"id": "x", "content": "cut \\ud800"}\n')
    targets = read_targets(source)
    assert next(targets).id == "ok"
    with pytest.raises(TargetInputError, match=r"line 2: .*lone surrogate \(\\ud800\)"):
        next(targets)
