"""Batch evaluation of a chatbot dataset, with an HTML report.

The dataset (`examples/chatbot/dataset.yaml`) is an evaluation suite: each case holds a
customer's question and the chatbot's reply; one case adds a criterion of its own. The run
is written as a results file, summarised, and rendered as a self-contained HTML report.
The same run from the command line:

    rubricflow eval examples/chatbot/dataset.yaml -o results.jsonl --report report.html
"""

import asyncio
import tempfile
from pathlib import Path

from rubricflow.batch import BatchRun
from rubricflow.report import write_report
from rubricflow.runs import RunInfo, read_results_file, summarize
from rubricflow.suites import load_suite, suite_targets

HERE = Path(__file__).resolve().parent
suite = load_suite(HERE / "chatbot" / "dataset.yaml")


async def main(results: Path) -> None:
    assert suite.rubric is not None
    info = RunInfo(id="nightly-1", rubric_id=suite.rubric.id, rubric_version=suite.rubric.version)
    run = BatchRun(info, output=results)
    await run.prepare()
    async for evaluation in run.run(suite_targets(suite), target_concurrency=4):
        failed = [r.criterion_id for r in evaluation.criteria if r.passed is False]
        print(f"{evaluation.target_id}: {evaluation.verdict} {evaluation.score:.2f} {failed}")
    await run.close(interrupted=False)


# the results file and the report go to a scratch folder, not the current directory
with tempfile.TemporaryDirectory() as folder:
    results = Path(folder) / "chatbot-results.jsonl"
    asyncio.run(main(results))

    run = read_results_file(results)
    summary = summarize(run.evaluations)
    print(f"{summary.passed}/{summary.total} passed, pass rate {summary.pass_rate:.0%}")
    for criterion in summary.criteria:
        print(f"  {criterion.criterion_id}: {criterion.passed}/{criterion.scored} passed")
    report = write_report(run, Path(folder) / "chatbot-report.html")
    print(f"report written: {report.name} ({report.stat().st_size:,} bytes)")
