"""Import an AgentV eval file, inspect the rubrics it holds, and convert them to native YAML.

Run from anywhere: python examples/import_agentv.py
"""

import tempfile
from pathlib import Path

from rubricflow import dump_rubric, load_file

AGENTV = """
evalcases:
  - id: refund-policy
    expected_outcome: Explain the refund policy accurately
    rubrics:
      - Mentions the 30-day window
      - id: tone
        expected_outcome: Polite and concise
        weight: 0.5
        required: false
      - id: accuracy
        weight: 2
        score_ranges: {0: Wrong policy, 5: Partly right, 8: Right, 10: Right and complete}
"""

with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "refunds.yaml"
    path.write_text(AGENTV, encoding="utf-8")
    loaded = load_file(path)

rubric = loaded.rubrics[0]
print(f"format={loaded.format} rubric={rubric.id} threshold={rubric.pass_threshold}")
for criterion in rubric.criteria:
    print(
        f"  {criterion.id}: weight={criterion.weight:g} required={criterion.required} "
        f"kind={criterion.kind} method={criterion.scoring.method}"
    )
print(dump_rubric(rubric).splitlines()[0])
