"""Bad input never yields a traceback: every malformed file is reported with its name,
the field path and a message that says what is wrong, and `validate` exits 1.

The corpus lives in tests/fixtures/bad/; EXPECTED.yaml there pairs each file with the
field path and message fragment `rubricflow validate` must report. Files that only make
sense on a real filesystem (directories, sockets, symlinks, unreadable files) are made in
a temporary folder here.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.errors import RubricLoadError
from rubricflow.formats import document
from rubricflow.formats.document import parse_text, read_document
from rubricflow.validation import validate_file

BAD = Path(__file__).parent / "fixtures" / "bad"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((BAD / "EXPECTED.yaml").read_text("utf-8"))
ALL_FORMATS = {"native", "openrubricrl", "agentv", "rubric-pkg", "dataknobs", "rubricjudgespec"}


def _cases() -> list[Any]:
    cases = []
    for name in sorted(EXPECTED):
        reason = EXPECTED[name].get("xfail")
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        cases.append(pytest.param(name, id=name, marks=marks))
    return cases


def invoke(cli: CliRunner, *args: str) -> Result:
    """Run the app in-process; an exception escaping it is a bug, not an exit code."""
    result = cli.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"rubricflow raised {result.exception!r}") from result.exception
    assert "Traceback" not in result.stdout
    assert "Traceback" not in result.stderr
    return result


def problem_line(path: str | Path, field: str, message: str) -> str:
    """The human output line for one problem: `file: field.path: message`."""
    return f"{path}: {field}: {message}" if field else f"{path}: {message}"


# --- the corpus ----------------------------------------------------------------------


def test_corpus_and_expectations_match() -> None:
    files = {p.name for p in BAD.iterdir() if p.name != "EXPECTED.yaml"}
    assert files == set(EXPECTED), "every bad file needs an EXPECTED.yaml entry and vice versa"
    assert len(files) >= 30


def test_corpus_covers_every_format() -> None:
    formats = {entry["format"] for entry in EXPECTED.values()}
    assert ALL_FORMATS | {None} <= formats
    native_json = [
        n for n, e in EXPECTED.items() if e["format"] == "native" and n.endswith(".json")
    ]
    native_yaml = [
        n for n, e in EXPECTED.items() if e["format"] == "native" and n.endswith(".yaml")
    ]
    assert native_json and native_yaml
    assert any(name.startswith("agentv_v2") for name in EXPECTED)
    assert any(name.startswith("agentv_v4") for name in EXPECTED)


@pytest.mark.parametrize("name", _cases())
def test_bad_file_is_reported_with_path_and_fix(cli: CliRunner, name: str) -> None:
    entry = EXPECTED[name]
    path = BAD / name
    result = invoke(cli, "validate", *entry.get("args", []), str(path))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert f"invalid {path}" in lines
    prefix = problem_line(path, entry["path"], "")
    matching = [line for line in lines if line.startswith(prefix)]
    assert matching, f"no problem reported at {entry['path']!r}:\n{result.stdout}"
    assert any(entry["contains"] in line for line in matching), result.stdout


@pytest.mark.parametrize("name", _cases())
def test_bad_file_json_report(cli: CliRunner, name: str) -> None:
    entry = EXPECTED[name]
    path = BAD / name
    result = invoke(cli, "validate", "--json", *entry.get("args", []), str(path))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    (file,) = report["files"]
    assert file["path"] == str(path)
    assert file["valid"] is False
    assert file["format"] == entry["format"]
    assert file["meta_rubric"] is None
    assert any(
        error["path"] == entry["path"] and entry["contains"] in error["message"]
        for error in file["errors"]
    ), file["errors"]


def test_whole_corpus_in_one_run(cli: CliRunner) -> None:
    paths = [str(BAD / name) for name in sorted(EXPECTED) if not EXPECTED[name].get("args")]
    result = invoke(cli, "validate", *paths)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == f"0 valid, {len(paths)} invalid"
    for path in paths:
        assert f"invalid {path}" in result.stdout


def test_human_output_format_literally(cli: CliRunner) -> None:
    path = BAD / "native_duplicate_level_ids.yaml"
    result = invoke(cli, "validate", str(path))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"invalid {path}",
        f"{path}: criteria[0].levels[1].id: duplicate level id 'low' (also levels[0]); "
        "give every level of a criterion its own id",
    ]


def test_file_level_problem_has_no_field_path(cli: CliRunner) -> None:
    path = BAD / "native_malformed.json"
    result = invoke(cli, "validate", str(path))
    assert result.stdout.splitlines()[1] == (
        f"{path}: malformed JSON at line 4, column 16: "
        "Expecting property name enclosed in double quotes"
    )


def test_format_override_applies_that_formats_rules(cli: CliRunner) -> None:
    path = BAD / "native_unknown_field.yaml"
    result = invoke(cli, "validate", "--json", "--format", "rubricjudgespec", str(path))
    assert result.exit_code == 1
    (file,) = json.loads(result.stdout)["files"]
    assert file["format"] == "rubricjudgespec"
    assert {"path": "rubric", "message": "required field is missing; add it"} in file["errors"]


# --- the real entry point ------------------------------------------------------------


def _entry_point() -> list[str]:
    """The installed console script of this interpreter's environment, else `main()`."""
    script = shutil.which("rubricflow", path=str(Path(sys.executable).parent)) or shutil.which(
        "rubricflow"
    )
    if script:
        return [script]
    return [sys.executable, "-c", "from rubricflow.cli import main; main()"]


SUBPROCESS_SAMPLE = [
    "native_malformed.yaml",
    "non_utf8.yaml",
    "deeply_nested.json",
    "alias_bomb.yaml",
    "huge_integer.yaml",
    "openrubricrl_weight_above_one.json",
    "agentv_v4_duplicate_item_ids.yaml",
    "judgespec_max_not_above_min.json",
]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("RUBRICFLOW_DEBUG", None)
    return subprocess.run(
        [*_entry_point(), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
        check=False,
    )


def test_real_entry_point_reports_bad_files_without_traceback() -> None:
    paths = [str(BAD / name) for name in SUBPROCESS_SAMPLE]
    proc = _run("validate", *paths)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr == ""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for name, path in zip(SUBPROCESS_SAMPLE, paths, strict=True):
        entry = EXPECTED[name]
        line = problem_line(path, entry["path"], "")
        assert any(
            row.startswith(line) and entry["contains"] in row for row in proc.stdout.splitlines()
        ), (name, proc.stdout)
    assert proc.stdout.splitlines()[-1] == f"0 valid, {len(paths)} invalid"


def test_real_entry_point_usage_errors_exit_2(tmp_path: Path) -> None:
    no_path = _run("validate")
    assert no_path.returncode == 2
    assert "Missing argument" in no_path.stderr
    unknown_format = _run("validate", "--format", "xml", str(BAD / "empty.yaml"))
    assert unknown_format.returncode == 2
    assert "unknown format 'xml'" in unknown_format.stderr
    for proc in (no_path, unknown_format):
        assert "Traceback" not in proc.stdout + proc.stderr


def test_real_entry_point_unreadable_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # relative names keep the socket path short
    Path("folder.yaml").mkdir()
    Path("link.yaml").symlink_to("gone.yaml")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock.yaml")
        proc = _run("validate", "folder.yaml", "missing.yaml", "link.yaml", "sock.yaml")
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert "folder.yaml: is a directory; name a rubric file (.yaml, .yml or .json)" in lines
    assert "missing.yaml: no such file; check the path" in lines
    assert any(line.startswith("link.yaml: is a symbolic link to 'gone.yaml'") for line in lines)
    assert any(line.startswith("sock.yaml: is a socket, not a file") for line in lines)
    assert lines[-1] == "0 valid, 4 invalid"


# --- filesystem cases -----------------------------------------------------------------


def _problem(path: Path) -> str:
    report = validate_file(path)
    assert not report.valid
    (problem,) = report.errors
    assert problem.path == ""
    return problem.message


def test_missing_file(tmp_path: Path) -> None:
    assert _problem(tmp_path / "nope.yaml") == "no such file; check the path"


def test_missing_folder_in_path(tmp_path: Path) -> None:
    assert _problem(tmp_path / "no-folder" / "r.yaml") == "no such file; check the path"


def test_directory(tmp_path: Path) -> None:
    folder = tmp_path / "rubric.yaml"
    folder.mkdir()
    assert "is a directory" in _problem(folder)


def test_broken_symlink_names_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.yaml"
    link.symlink_to("gone.yaml")
    message = _problem(link)
    assert "symbolic link to 'gone.yaml', which does not exist" in message


def test_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").symlink_to("b.yaml")
    (tmp_path / "b.yaml").symlink_to("a.yaml")
    assert "loops back on itself" in _problem(tmp_path / "a.yaml")


def test_socket_is_unreadable_even_for_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # opening a Unix socket as a file fails for every user, root included
    monkeypatch.chdir(tmp_path)  # a relative name keeps the socket path short
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("rubric.yaml")
        assert "is a socket, not a file" in _problem(Path("rubric.yaml"))


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_read_error_even_for_root(tmp_path: Path) -> None:
    # reading /proc/self/mem at offset 0 fails with EIO for every user, root included
    link = tmp_path / "rubric.yaml"
    link.symlink_to("/proc/self/mem")
    assert _problem(link) == "cannot read file: Input/output error"


def test_permission_denied_says_check_permissions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # chmod 000 does not stop root, so make the open itself fail as it does for other users
    path = tmp_path / "locked.yaml"
    path.write_text("id: r\ncriteria: [{id: c}]\n")
    real_open = Path.open

    def locked_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == path:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", locked_open)
    message = _problem(path)
    assert message == "cannot read file: Permission denied; check the file's permissions"


def test_chmod_000(tmp_path: Path) -> None:
    # root (CAP_DAC_OVERRIDE) reads a chmod 000 file anyway; anyone else gets the message.
    # The socket and /proc/self/mem tests above cover files nobody can read.
    path = tmp_path / "locked.yaml"
    path.write_text("id: r\ncriteria: [{id: c}]\n")
    path.chmod(0)
    try:
        report = validate_file(path)
        if os.access(path, os.R_OK):
            assert report.valid
        else:
            assert [p.message for p in report.errors] == [
                "cannot read file: Permission denied; check the file's permissions"
            ]
    finally:
        path.chmod(0o644)


def test_huge_weights_are_no_internal_error(cli: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("id: r\ncriteria:\n  - {id: a, weight: 1e308}\n  - {id: b, weight: 1e308}\n")
    result = invoke(cli, "validate", str(path))
    assert result.exit_code in (0, 1)
    assert str(path) in result.stdout


def test_device_is_refused() -> None:
    assert "is a device, not a file" in _problem(Path(os.devnull))


def test_file_too_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document, "MAX_BYTES", 64)
    path = tmp_path / "big.yaml"
    path.write_text("id: r\ncriteria:\n" + "".join(f"  - id: c{i}\n" for i in range(20)))
    assert "file is larger than" in _problem(path)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfid: bom\ncriteria:\n  - id: c\n")
    assert validate_file(path).valid


def test_null_document(tmp_path: Path) -> None:
    path = tmp_path / "null.json"
    path.write_text("null\n")
    assert "holds no document" in _problem(path)


# --- the parser directly --------------------------------------------------------------


def test_nesting_at_the_limit_is_fine() -> None:
    depth = document.MAX_DEPTH
    text = "[" * depth + "]" * depth
    assert parse_text(text, "<t>") is not None
    with pytest.raises(RubricLoadError, match="more than 100 levels deep"):
        parse_text("[" + text + "]", "<t>")


def test_shared_aliases_within_the_limit_are_fine() -> None:
    text = "base: &b {a: 1, b: 2}\none: *b\ntwo: *b\n"
    assert parse_text(text, "<t>") == {
        "base": {"a": 1, "b": 2},
        "one": {"a": 1, "b": 2},
        "two": {"a": 1, "b": 2},
    }


def test_recursive_sequence_alias() -> None:
    with pytest.raises(RubricLoadError, match="contains it"):
        parse_text("a: &x [1, *x]\n", "<t>")


def test_malformed_yaml_names_where_the_construct_started() -> None:
    with pytest.raises(RubricLoadError) as caught:
        parse_text("id: r\ncriteria: [{id: a}, {id: b\n", "r.yaml")
    assert str(caught.value).startswith("r.yaml: malformed YAML at line 3")
    assert "that starts at line 2" in str(caught.value)


def test_deep_json_without_recursion_error() -> None:
    with pytest.raises(RubricLoadError, match="levels deep"):
        parse_text("[" * 100_000 + "]" * 100_000, "<t>", suffix=".json")


def test_read_document_reports_huge_json_number(tmp_path: Path) -> None:
    path = tmp_path / "n.json"
    path.write_text('{"id": "r", "criteria": [{"id": "c", "weight": ' + "9" * 5000 + "}]}")
    with pytest.raises(RubricLoadError, match="thousands of digits"):
        read_document(path)
