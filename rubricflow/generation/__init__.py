"""Rubric generation, migration of old rubric files, and group-aware ranking.

- `generate_rubric(task=..., reference=..., examples=..., judge=...)`: a draft rubric
  from the judge's structured output, linted by the meta-rubric, revised once with the
  findings; `generate_batch` does one per dataset row, resumably.
- `migrate_file(path)`: an old rubric file (OpenRubricRL, other formats, older native
  documents) as the current native format, with what changed.
- `rank_group(prompt, completions, judge=...)`: one judge call ranks a GRPO group; ranks
  map to rewards in 0..1 (`rank_rewards`), with each completion's reasoning;
  `rank_batch` groups a trainer batch's consecutive rows by prompt and ranks each group.

See docs/generation.md.
"""

from rubricflow.generation.batch import BatchSummary, generate_batch, read_rows
from rubricflow.generation.generate import (
    GeneratedRubric,
    GenerationError,
    generate_rubric,
    generate_rubric_sync,
    lint_findings,
)
from rubricflow.generation.migrate import NATIVE_VERSION, Migration, migrate_file, parse_target
from rubricflow.generation.ranking import (
    BatchRanking,
    GroupRanking,
    RankedCompletion,
    rank_batch,
    rank_group,
    rank_group_sync,
    rank_rewards,
)

__all__ = [
    "NATIVE_VERSION",
    "BatchRanking",
    "BatchSummary",
    "GeneratedRubric",
    "GenerationError",
    "GroupRanking",
    "Migration",
    "RankedCompletion",
    "generate_batch",
    "generate_rubric",
    "generate_rubric_sync",
    "lint_findings",
    "migrate_file",
    "parse_target",
    "rank_batch",
    "rank_group",
    "rank_group_sync",
    "rank_rewards",
    "read_rows",
]
