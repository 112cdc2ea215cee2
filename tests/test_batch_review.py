"""Review of batch runs: resume semantics, interruption and kills, suite edge cases, and
the messages `rubricflow eval` gives. Through the real CLI, or the real API on real
SQLite and results files."""

from __future__ import annotations

import asyncio
import json
import signal
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli.test_batch import (
    AGENTV_V2,
    JUDGE,
    JUDGED,
    RUBRIC,
    _calls,
    _cli,
    _judge_env,
    _start_eval,
    _store_run,
    _targets,
    _wait_for_lines,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow.batch import STORE_BATCH, BatchRun
from rubricflow.errors import RubricflowError
from rubricflow.model import parse_rubric
from rubricflow.results import Target
from rubricflow.runs import RunInfo, RunInputError, read_results_file
from rubricflow.store import Store
from rubricflow.suites import load_suite, read_outputs

JUDGE_ARGS = ["--allow-import", "--llm", "python:slowjudge:judge"]


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "judged.yaml").write_text(JUDGED)
    (tmp_path / "slowjudge.py").write_text(JUDGE)
    return tmp_path


def _url(db: Path) -> str:
    return f"sqlite+aiosqlite:///{db}"


# -- resume semantics --------------------------------------------------------------------


def test_a_refused_start_leaves_the_existing_run_as_it_was(work: Path) -> None:
    """`--run X` without --resume, X interrupted in the store: refused, and X stays
    `interrupted` (it was marked `finished` by the refused run's close)."""

    async def interrupted_run() -> RunInfo:
        async with await Store.open(_url(work / "runs.db")) as store:
            await store.runs.start(RunInfo(id="X", rubric_id="judged", rubric_version="1.0.0"))
            await store.runs.finish("X", "interrupted")
            info: RunInfo = await store.runs.get("X")
            return info

    before = asyncio.run(interrupted_run())
    _targets(work / "targets.jsonl", 2)
    args = ["eval", "judged.yaml", "targets.jsonl", "--db", "runs.db", "--run", "X", "-q"]
    done = _cli([*args, *JUDGE_ARGS], work, _judge_env(work))
    assert done.returncode == 2
    assert "run 'X' already exists" in done.stderr and "--resume" in done.stderr
    (work / "res.jsonl").write_text('{"run": {"id": "X"}}\n')
    again = _cli([*args, "-o", "res.jsonl", *JUDGE_ARGS], work, _judge_env(work))
    assert again.returncode == 2 and "already holds results" in again.stderr
    after = _store_run(work / "runs.db", "X").info
    assert (after.status, after.finished_at) == ("interrupted", before.finished_at)
    assert _calls(work) == []


def test_an_input_error_mid_run_records_the_run_as_interrupted(work: Path) -> None:
    (work / "targets.jsonl").write_text(
        '{"id": "a", "content": "GOOD"}\n{"id": "b", "content": "GOOD"}\n{oops\n'
    )
    args = ["eval", "judged.yaml", "targets.jsonl", "--db", "runs.db", "-o", "res.jsonl"]
    done = _cli([*args, "--run", "B", "-q", *JUDGE_ARGS], work, _judge_env(work))
    assert done.returncode == 2
    assert "targets.jsonl line 3: malformed JSON" in done.stderr
    assert "Traceback" not in done.stderr
    assert _store_run(work / "runs.db", "B").info.status == "interrupted"
    assert read_results_file(work / "res.jsonl").info.status == "interrupted"


def test_resume_into_a_new_results_file_copies_what_the_store_holds(work: Path) -> None:
    _targets(work / "targets.jsonl", 4)
    args = ["eval", "judged.yaml", "targets.jsonl", "--db", "runs.db", "--run", "C", "-q"]
    first = _cli([*args, *JUDGE_ARGS], work, _judge_env(work))
    assert first.returncode == 0, first.stderr
    resumed = _cli([*args, "-o", "new.jsonl", "--resume", *JUDGE_ARGS], work, _judge_env(work))
    assert resumed.returncode == 0, resumed.stderr
    assert len(_calls(work)) == 4  # nothing judged twice
    from_file = read_results_file(work / "new.jsonl")
    stored = _store_run(work / "runs.db", "C")
    assert from_file.info.id == "C"
    assert [e.id for e in from_file.evaluations] == [e.id for e in stored.evaluations]
    assert len(from_file.evaluations) == 4


def test_a_target_without_an_id_is_not_judged_again_on_resume(work: Path) -> None:
    (work / "one.json").write_text('{"content": "GOOD answer"}')
    args = ["eval", "judged.yaml", "one.json", "-o", "res.jsonl", "-q", "--no-cache"]
    first = _cli([*args, *JUDGE_ARGS], work, _judge_env(work))
    assert first.returncode == 0, first.stderr
    resumed = _cli([*args, "--resume", *JUDGE_ARGS], work, _judge_env(work))
    assert resumed.returncode == 0, resumed.stderr
    assert "1 target(s) already finished are not judged again" in resumed.stderr
    assert len(_calls(work)) == 1
    assert len(read_results_file(work / "res.jsonl").evaluations) == 1


def test_resume_after_a_kill_mid_line_keeps_the_file_readable(work: Path) -> None:
    """SIGKILL cut the last evaluation line (inside a multi-byte character): resume judges
    that target again and appends after it without gluing lines together, so the file
    can be resumed, reported and compared again."""
    with (work / "targets.jsonl").open("w") as stream:
        for i in range(4):
            stream.write(json.dumps({"id": f"café-{i}", "content": f"GOOD {i}"}) + "\n")
    args = ["eval", "judged.yaml", "targets.jsonl", "-o", "res.jsonl", "-q", "--no-cache"]
    first = _cli([*args, *JUDGE_ARGS], work, _judge_env(work))
    assert first.returncode == 0, first.stderr
    data = (work / "res.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    last = lines[-2]  # the last evaluation (the closing run line follows it)
    cut = last.index("é".encode()) + 1  # half of the two-byte é
    (work / "res.jsonl").write_bytes(b"".join(lines[:-2]) + last[:cut])
    assert len(read_results_file(work / "res.jsonl").evaluations) == 3
    for _ in range(2):
        resumed = _cli([*args, "--resume", *JUDGE_ARGS], work, _judge_env(work))
        assert resumed.returncode == 0, resumed.stderr
    assert len(_calls(work)) == 5  # the cut target once more, nothing else
    for line in (work / "res.jsonl").read_text(encoding="utf-8").splitlines():
        json.loads(line)  # every line whole
    run = read_results_file(work / "res.jsonl")
    assert sorted(e.target_id or "" for e in run.evaluations) == [f"café-{i}" for i in range(4)]


def test_resume_with_another_rubric_version_is_refused(work: Path) -> None:
    _targets(work / "targets.jsonl", 3)
    args = ["targets.jsonl", "--db", "runs.db", "-o", "res.jsonl", "-q", *JUDGE_ARGS]
    first = _cli(["eval", "judged.yaml", *args], work, _judge_env(work))
    assert first.returncode == 0, first.stderr
    (work / "judged2.yaml").write_text(JUDGED.replace("version: 1.0.0", "version: 2.0.0"))
    for extra in ([], ["--db", "runs.db"]):
        only = [a for a in args if a not in ("--db", "runs.db")] + extra
        resumed = _cli(["eval", "judged2.yaml", *only, "--resume"], work, _judge_env(work))
        assert resumed.returncode == 2, resumed.stderr
        assert "judged@1.0.0, not judged@2.0.0" in resumed.stderr, resumed.stderr
        assert "Traceback" not in resumed.stderr
    assert len(_calls(work)) == 3


def test_a_resumed_run_says_why_it_exits_1(work: Path) -> None:
    (work / "targets.jsonl").write_text(
        '{"id": "ok", "content": "fine"}\n{"id": "leak", "content": "AKIAABCDEFGHIJKLMNOP"}\n'
    )
    args = ["eval", "rubric.yaml", "targets.jsonl", "-o", "res.jsonl", "-q"]
    assert _cli(args, work).returncode == 1
    resumed = _cli([*args, "--resume"], work)
    assert resumed.returncode == 1
    assert "2 finished earlier, 1 of them failed" in resumed.stdout, resumed.stdout


def test_duplicate_target_ids_are_named_in_a_warning(work: Path) -> None:
    (work / "targets.jsonl").write_text(
        '{"id": "a", "content": "GOOD"}\n{"id": "a", "content": "bad"}\n'
        '{"content": "GOOD"}\n{"id": "line-3", "content": "GOOD"}\n'
    )
    args = ["eval", "judged.yaml", "targets.jsonl", "-q", "-o", "res.jsonl", *JUDGE_ARGS]
    done = _cli(args, work, _judge_env(work))
    assert done.returncode == 1, done.stderr
    assert "target id(s) 'a', 'line-3' appear more than once" in done.stderr, done.stderr
    assert "give every target its own id" in done.stderr
    # a plain stream (nothing written) keeps no ids: a million targets stay flat in memory
    streamed = _cli(
        ["eval", "judged.yaml", "targets.jsonl", "-q", *JUDGE_ARGS], work, _judge_env(work)
    )
    assert streamed.returncode == 1 and "more than once" not in streamed.stderr


# -- interruption ------------------------------------------------------------------------


def test_second_ctrl_c_abandons_in_flight_work_and_keeps_what_was_written(work: Path) -> None:
    _targets(work / "targets.jsonl", 30)
    args = ["eval", "judged.yaml", "targets.jsonl", "--db", "runs.db", "-o", "res.jsonl", "-q"]
    args += [*JUDGE_ARGS, "--targets-in-flight", "4", "--no-cache"]
    process = _start_eval(work, args, sleep=2.0)
    _wait_for_lines(work / "res.jsonl", 1 + 4, time.monotonic() + 60)
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert time.monotonic() - started < 1.8  # did not wait for the 2 s judges in flight
    assert "Traceback" not in stderr
    written = read_results_file(work / "res.jsonl")
    stored = _store_run(work / "runs.db")
    assert written.info.status == stored.info.status == "interrupted"
    assert [e.id for e in written.evaluations] == [e.id for e in stored.evaluations]
    assert len(written.evaluations) == len(_calls(work))
    resumed = _cli([*args, "--resume"], work, _judge_env(work))
    assert resumed.returncode == 0, resumed.stderr
    assert len(_calls(work)) == 30
    assert len(_store_run(work / "runs.db").evaluations) == 30


REPLY = parse_rubric(yaml.safe_load(RUBRIC))


@pytest.mark.parametrize("spins", [0, 1, 2, 4, 8, 16])
def test_a_cancel_during_a_store_batch_keeps_the_batch(tmp_path: Path, spins: int) -> None:
    """A second Ctrl-C cancels the run while a batch of evaluations is being written to
    the store: close() still stores that batch, once."""

    async def main() -> tuple[list[str], list[str]]:
        store = await Store.open(_url(tmp_path / "runs.db"))
        info = RunInfo(id="E", rubric_id="reply", rubric_version="1.0.0")
        batch = BatchRun(info, output=tmp_path / "res.jsonl", store=store)
        await batch.prepare()
        targets = ((REPLY, Target(id=f"t{i}", content=f"hi {i}")) for i in range(STORE_BATCH + 50))

        async def consume() -> None:
            async for _ in batch.run(targets, target_concurrency=4):
                pass

        task = asyncio.create_task(consume())
        while batch.tally.done < STORE_BATCH:
            await asyncio.sleep(0)
        for _ in range(spins):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await batch.close(interrupted=True)
        stored = [e.id for e in await store.runs.evaluations("E")]
        await store.close()
        return stored, [e.id for e in read_results_file(tmp_path / "res.jsonl").evaluations]

    stored, written = asyncio.run(main())
    assert len(written) >= STORE_BATCH
    assert sorted(stored) == sorted(written)


# -- suites ------------------------------------------------------------------------------


def test_agentv_case_ids_that_are_numbers(work: Path) -> None:
    (work / "agentv.yaml").write_text(
        textwrap.dedent(
            """\
            description: numbered
            evalcases:
              - id: 0
                input: first
                output: GOOD zero
                rubrics: [Is good]
              - id: 7
                input: second
                output: bad seven
                rubrics: [Is good]
            """
        )
    )
    done = _cli(["eval", "agentv.yaml", "--json", *JUDGE_ARGS], work, _judge_env(work))
    assert "internal error" not in done.stderr and done.returncode == 1, done.stderr
    verdicts = {
        line["target_id"]: line["verdict"] for line in map(json.loads, done.stdout.splitlines())
    }
    assert verdicts == {"0": "pass", "7": "fail"}


def test_an_outputs_file_that_is_not_utf8_names_the_file(work: Path) -> None:
    (work / "agentv.yaml").write_text(AGENTV_V2)
    (work / "outputs.jsonl").write_bytes(b'{"id": "refund", "output": "caf\xe9"}\n')
    done = _cli(["eval", "agentv.yaml", "--outputs", "outputs.jsonl"], work)
    assert done.returncode == 2
    assert "outputs.jsonl" in done.stderr and "UTF-8" in done.stderr, done.stderr
    assert "internal error" not in done.stderr
    # a byte order mark (Windows editors) is not an error
    (work / "outputs.jsonl").write_bytes(
        "\ufeff".encode() + b'{"id": "refund", "output": "x"}\n{"id": "shipping", "output": "y"}\n'
    )
    suite = load_suite(work / "agentv.yaml", outputs=read_outputs(work / "outputs.jsonl"))
    assert [c.target.content for c in suite.cases] == ["x", "y"]


def test_a_suite_alone_that_cannot_be_read_says_why(work: Path) -> None:
    (work / "merge.yaml").write_text(
        textwrap.dedent(
            """\
            rubric: rubric.yaml
            base: &base {query: q, output: hello}
            cases:
              - {<<: *base, id: a}
            """
        )
    )
    done = _cli(["eval", "merge.yaml"], work)
    assert done.returncode == 2
    assert "merge.yaml: malformed YAML at line 4" in done.stderr, done.stderr
    missing = _cli(["eval", "nosuch.yaml"], work)
    assert missing.returncode == 2
    assert "nosuch.yaml: no such file" in missing.stderr, missing.stderr


def test_a_json_suite_too_big_for_the_yaml_reader_is_run_as_a_suite(work: Path) -> None:
    """A JSON suite was sniffed with the YAML reader, which refuses documents of more than
    a million values: the suite was then "not a suite" (after a long wait)."""
    case = {"id": "big", "output": "hi", "metadata": {"tokens": [0] * 1_000_001}}
    (work / "big.json").write_text(json.dumps({"rubric": "rubric.yaml", "cases": [case]}))
    done = _cli(["eval", "big.json", "-q"], work)
    assert done.returncode == 0, done.stderr
    assert "1 target(s): 1 passed" in done.stdout


def test_a_suite_whose_rubric_file_is_missing_names_the_suite_field(work: Path) -> None:
    (work / "suites").mkdir()
    (work / "suites" / "s.yaml").write_text("rubric: rubric.yaml\ncases:\n  - {id: a, output: x}\n")
    done = _cli(["eval", "suites/s.yaml"], work)
    assert done.returncode == 2
    assert "suites/s.yaml: rubric: 'rubric.yaml'" in done.stderr, done.stderr
    assert "relative to the suite file" in done.stderr
    (work / "suites" / "s.yaml").write_text(
        "rubric: ../rubric.yaml\ncases:\n  - {id: a, output: x}\n"
    )
    assert _cli(["eval", "suites/s.yaml", "-q"], work).returncode == 0


SHARED = {
    "id": "r",
    "name": "R",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "ne",
            "description": "not empty",
            "scoring": {"method": "deterministic", "function": "non_empty"},
        }
    ],
}
ids = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.booleans(),
    st.sampled_from(["", "a", "b", "0", "1", "case-1", "test-1", "A b!"]),
)
cases = st.fixed_dictionaries(
    {"id": ids},
    optional={
        "output": st.one_of(st.none(), st.text(max_size=4), st.integers()),
        "input": st.one_of(
            st.text(max_size=3),
            st.integers(),
            st.lists(
                st.fixed_dictionaries({"role": st.just("user"), "content": st.text(max_size=3)}),
                max_size=2,
            ),
        ),
        "expected_output": st.one_of(st.none(), st.text(max_size=3), st.integers()),
        "rubrics": st.lists(st.sampled_from(["Is good", "Is short"]), min_size=1, max_size=2),
    },
)
documents = st.one_of(
    st.builds(lambda cs: {"rubric": SHARED, "cases": cs}, st.lists(cases, max_size=4)),
    st.builds(lambda cs: {"evalcases": cs}, st.lists(cases, max_size=4)),
    st.builds(
        lambda cs: {"tests": [{**c, "assert": c.get("rubrics", ["Is good"])} for c in cs]},
        st.lists(cases, max_size=4),
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents, st.sampled_from([".json", ".yaml"]))
def test_loading_any_suite_gives_cases_or_a_rubricflow_error(document: Any, suffix: str) -> None:
    """Case ids of any type: either every case is loaded under a unique text id (the one
    it was given, as text) with its own output, or a `RubricflowError` explains why."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"suite{suffix}"
        text = json.dumps(document) if suffix == ".json" else yaml.safe_dump(document)
        path.write_text(text, encoding="utf-8")
        try:
            suite = load_suite(path)
        except RubricflowError:
            return
    key = next(k for k in ("cases", "evalcases", "tests") if k in document)
    got = [case.target.id for case in suite.cases]
    assert len(set(got)) == len(got)
    raw = {str(c["id"]): c for c in document[key] if c.get("id") not in (None, "")}
    for case in suite.cases:
        given_case = raw.get(case.target.id or "")
        if given_case is not None and "output" in given_case:
            assert case.target.content == given_case["output"]


# -- results files -----------------------------------------------------------------------


def _results_file(folder: Path, count: int) -> bytes:
    async def write() -> None:
        info = RunInfo(id="K", rubric_id="reply", rubric_version="1.0.0")
        batch = BatchRun(info, output=folder / "full.jsonl")
        await batch.prepare()
        pairs = [(REPLY, Target(id=f"ünï-{i}", content=f"réponse {i}")) for i in range(count)]
        async for _ in batch.run(pairs, target_concurrency=2):
            pass
        await batch.close(interrupted=False)

    asyncio.run(write())
    return (folder / "full.jsonl").read_bytes()


_FULL: dict[str, bytes] = {}


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_results_file_cut_anywhere_is_read_and_resumed(data: st.DataObject) -> None:
    """A kill may cut the file at any byte after its header: it is read up to its last
    whole line, and a resumed run completes it into a file that reads back whole."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        if "full" not in _FULL:
            _FULL["full"] = _results_file(folder, 4)
        full = _FULL["full"]
        header_end = full.index(b"\n") + 1
        cut = data.draw(st.integers(header_end, len(full)), label="cut")
        path = folder / "res.jsonl"
        path.write_bytes(full[:cut])
        try:
            before = read_results_file(path)
        except RunInputError as error:  # pragma: no cover - shown on failure
            raise AssertionError(f"cut at {cut}: {error}") from None
        ends = [i for i, byte in enumerate(full) if byte == ord("\n")]  # each line's end
        whole = sum(end <= cut for end in ends)  # lines written up to their closing brace
        assert len(before.evaluations) == min(whole - 1, 4)

        async def resume() -> None:
            info = RunInfo(id="other", rubric_id="reply", rubric_version="1.0.0")
            batch = BatchRun(info, output=path, resume=True)
            await batch.prepare()
            pairs = [(REPLY, Target(id=f"ünï-{i}", content=f"réponse {i}")) for i in range(4)]
            async for _ in batch.run(pairs, target_concurrency=2):
                pass
            await batch.close(interrupted=False)

        asyncio.run(resume())
        for line in path.read_text(encoding="utf-8").splitlines():
            json.loads(line)
        after = read_results_file(path)
        assert after.info.id == "K" and after.info.status == "finished"
        assert sorted(e.target_id or "" for e in after.evaluations) == [
            f"ünï-{i}" for i in range(4)
        ]
        kept = {e.id for e in before.evaluations}
        assert kept <= {e.id for e in after.evaluations}  # nothing finished was judged again


def test_a_suite_given_as_parsed_keeps_its_folder_for_relative_paths(work: Path) -> None:
    """`eval SUITE` reads the file once: `load_suite` takes the parsed document, and the
    rubric it names is still found next to the file."""
    path = work / "given.yaml"
    path.write_text("cases: []\n")  # what is on disk is not read again
    document = {
        "rubric": "rubric.yaml",
        "cases": [{"id": "a", "output": "hello there"}, {"id": "b", "output": "hi"}],
    }
    suite = load_suite(path, document=document)
    assert [case.target.id for case in suite.cases] == ["a", "b"]
    assert [case.target.content for case in suite.cases] == ["hello there", "hi"]
