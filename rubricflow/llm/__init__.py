"""LLM judges: providers over httpx, an embedded llama.cpp model, structured answers,
retries, a content-addressed answer cache and the call ledger. See docs/llm.md.

```python
from rubricflow import evaluate
from rubricflow.llm import LLMSession

async with LLMSession("openai:gpt-4o-mini") as judge:
    evaluation = await evaluate(rubric, target, options={"llm": judge})
print(evaluation.usage())
```
"""

from rubricflow.llm.base import (
    LLMError,
    LLMProvider,
    Price,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    Secret,
    TransportError,
    redact,
)
from rubricflow.llm.cache import (
    JudgeCache,
    MemoryJudgeCache,
    SQLiteJudgeCache,
    cache_key,
    default_cache,
    default_cache_dir,
)
from rubricflow.llm.panel import PANEL_POLICIES, Panel
from rubricflow.llm.session import Answer, LLMSession, Question, Reading
from rubricflow.llm.specs import LLM_ENV, ProviderSpec, create_provider, parse_spec

__all__ = [
    "LLM_ENV",
    "PANEL_POLICIES",
    "Answer",
    "JudgeCache",
    "LLMError",
    "LLMProvider",
    "LLMSession",
    "MemoryJudgeCache",
    "Panel",
    "Price",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSettings",
    "ProviderSpec",
    "Question",
    "Reading",
    "SQLiteJudgeCache",
    "Secret",
    "TransportError",
    "cache_key",
    "create_provider",
    "default_cache",
    "default_cache_dir",
    "parse_spec",
    "redact",
]
