"""rubricflow's settings: every `RUBRICFLOW_*` environment variable, typed, in one frozen
object, read from the environment once at an edge (the CLI's callback, the server's app,
a worker, `Application.open`, `evaluate`) and passed down. No other module reads one.

`Settings.from_environment()` builds it (a value that is not usable is a
`ConfigurationError` naming the variable and what it accepts); an entry point binds the
settings it was given with `use(settings)` for the code below it, which asks `current()`
(the bound settings, else the environment's). Two applications in one process can hold
different settings: each binds its own for its operations.

Booleans have one syntax: `1`, `true`, `yes`, `on` or `0`, `false`, `no`, `off` (any
case); an empty variable is unset. Sizes take `10485760`, `64k`, `10MB` or `1g`.
`render_table()` gives the table of variables in docs/settings.md (`write_docs()` puts
it there).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal

from rubricflow.errors import ConfigurationError

__all__ = [
    "BOOLEAN_WORDS",
    "ServerVariables",
    "Settings",
    "current",
    "documented_table",
    "env_name",
    "parse_bool",
    "render_table",
    "use",
    "write_docs",
]

PREFIX = "RUBRICFLOW_"
SERVER_PREFIX = "RUBRICFLOW_SERVER_"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
BOOLEAN_WORDS = f"{', '.join(_TRUE)} or {', '.join(_FALSE)}"
"""The accepted spellings of a boolean variable, as error messages and the docs say them."""
_UNITS = {"": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}
MIB = 1024 * 1024

Kind = Literal["text", "secret", "bool", "int", "float", "size", "list", "choice"]
CheckMode = Literal["auto", "process", "off"]


def parse_bool(name: str, raw: str) -> bool:
    """`raw` (the value of variable `name`) as a boolean in the one syntax."""
    word = raw.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean; use one of {BOOLEAN_WORDS}")


def _within(value: float, meta: Mapping[str, Any]) -> bool:
    """Whether `value` is a finite number inside the field's bounds (`low` is exclusive
    when it is 0 and `zero` is not set: "above 0")."""
    low, high = meta.get("low"), meta.get("high")
    if math.isnan(value) or math.isinf(value):
        return False
    if low is not None and (value < low or (low == 0 and value == 0 and not meta.get("zero"))):
        return False
    return high is None or value <= high


def _parse_number(name: str, raw: str, meta: Mapping[str, Any]) -> float:
    whole = meta["kind"] == "int"
    try:
        value: float = int(raw) if whole else float(raw)
    except ValueError:
        value = math.nan
    if not _within(value, meta):
        kind = "a whole number" if whole else "a number"
        raise ConfigurationError(
            f"{name}={raw!r} is not {kind}{_bounds_text(meta)}; set it to {meta['example']}"
        )
    return value


def _bounds_text(meta: Mapping[str, Any]) -> str:
    low, high = meta.get("low"), meta.get("high")
    if low is None:
        return f" up to {high}" if high is not None else ""
    above = "above" if low == 0 and not meta.get("zero") else "at least"
    text = f" {above} {low}"
    return f"{text} and at most {high}" if high is not None else text


def _parse_size(name: str, raw: str) -> int:
    number = raw.rstrip("bBkKmMgG ")
    unit = raw[len(number) :].strip().lower()
    if number.isdigit() and unit in _UNITS and int(number) > 0:
        return int(number) * _UNITS[unit]
    raise ConfigurationError(
        f"{name}={raw!r} is not a size; give a positive number of bytes, e.g. 10485760, "
        "64k, 10MB or 1g"
    )


def _parse(name: str, raw: str, meta: Mapping[str, Any]) -> Any:
    """The typed value of variable `name` (`raw` stripped and not empty)."""
    kind = meta["kind"]
    if kind == "bool":
        return parse_bool(name, raw)
    if kind in ("int", "float"):
        value = _parse_number(name, raw, meta)
        return int(value) if kind == "int" else float(value)
    if kind == "size":
        return _parse_size(name, raw)
    if kind == "list":
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if kind == "choice":
        choices: tuple[str, ...] = meta["choices"]
        if raw.lower() not in choices:
            raise ConfigurationError(
                f"{name}={raw!r} is not one of {', '.join(choices)}; {meta['example']}"
            )
        return raw.lower()
    return raw


def _var(
    env: str,
    kind: Kind,
    default: Any,
    doc: str,
    *,
    example: str = "",
    shown: str | None = None,
    **bounds: Any,
) -> Any:
    """A field read from variable `env`: its kind, default, one-line description, what a
    bad value should be replaced with (`example`) and the default as the docs show it."""
    meta = {"env": env, "kind": kind, "doc": doc, "example": example, "shown": shown, **bounds}
    return field(default=default, metadata=meta, repr=kind != "secret")


@dataclass(frozen=True)
class ServerVariables:
    """The `RUBRICFLOW_SERVER_*` variables that are set (None: not set, so the server's
    default holds). `rubricflow.server.ServerSettings` builds on them; `rubricflow serve`
    writes them for its uvicorn worker processes."""

    db: str | None = _var(
        "RUBRICFLOW_SERVER_DB", "text", None, "the server's store", shown="$RUBRICFLOW_DB"
    )
    host: str | None = _var(
        "RUBRICFLOW_SERVER_HOST", "text", None, "the address served", shown="127.0.0.1"
    )
    auth: bool | None = _var(
        "RUBRICFLOW_SERVER_AUTH", "bool", None, "ask for tokens (off only on loopback)", shown="1"
    )
    max_body_bytes: int | None = _var(
        "RUBRICFLOW_SERVER_MAX_BODY_BYTES",
        "int",
        None,
        "the biggest request body accepted, in bytes",
        example="a number of bytes (e.g. 10485760)",
        shown=str(10 * MIB),
        low=1024,
    )
    review_workers: int | None = _var(
        "RUBRICFLOW_SERVER_REVIEW_WORKERS",
        "int",
        None,
        "review workers each server process runs (0: none)",
        example="a count (e.g. 1)",
        shown="1",
        low=0,
        zero=True,
    )
    grace_seconds: float | None = _var(
        "RUBRICFLOW_SERVER_GRACE_SECONDS",
        "float",
        None,
        "seconds a stopping server gives reviews in progress",
        example="seconds (e.g. 10)",
        shown="10",
        low=0,
        zero=True,
    )
    judge: str | None = _var(
        "RUBRICFLOW_SERVER_JUDGE", "text", None, "the server's judge spec", shown="$RUBRICFLOW_LLM"
    )
    webhooks: bool | None = _var(
        "RUBRICFLOW_SERVER_WEBHOOKS", "bool", None, "deliver webhooks from this process", shown="1"
    )
    idempotency_ttl_seconds: float | None = _var(
        "RUBRICFLOW_SERVER_IDEMPOTENCY_TTL_SECONDS",
        "float",
        None,
        "seconds an Idempotency-Key and its stored response are kept",
        example="seconds (e.g. 86400)",
        shown="86400",
        low=60,
    )
    idempotency_wait_seconds: float | None = _var(
        "RUBRICFLOW_SERVER_IDEMPOTENCY_WAIT_SECONDS",
        "float",
        None,
        "seconds a retry waits for the request holding its key (then 409)",
        example="seconds (e.g. 10)",
        shown="10",
        low=0,
        zero=True,
    )
    max_evaluate_targets: int | None = _var(
        "RUBRICFLOW_SERVER_MAX_EVALUATE_TARGETS",
        "int",
        None,
        "the most targets one scoring request may carry",
        example="a count (e.g. 1000)",
        shown="1000",
        low=1,
    )
    evaluate_concurrency: int | None = _var(
        "RUBRICFLOW_SERVER_EVALUATE_CONCURRENCY",
        "int",
        None,
        "targets one scoring request evaluates at once",
        example="a count (e.g. 8)",
        shown="8",
        low=1,
    )
    reward_rubric: str | None = _var(
        "RUBRICFLOW_SERVER_REWARD_RUBRIC",
        "text",
        None,
        "the rubric (`id[@version]`) `POST /get_reward` uses when a request names none",
    )
    lease_seconds: float | None = _var(
        "RUBRICFLOW_SERVER_LEASE_SECONDS",
        "float",
        None,
        "seconds a review the embedded worker claims stays its own",
        example="seconds (e.g. 300)",
        shown="300",
        low=1,
    )
    public_metrics: bool | None = _var(
        "RUBRICFLOW_SERVER_PUBLIC_METRICS",
        "bool",
        None,
        "serve /metrics without a token",
        shown="0",
    )
    access_log: bool | None = _var(
        "RUBRICFLOW_SERVER_ACCESS_LOG",
        "bool",
        None,
        "one JSON access-log line per request",
        shown="1",
    )
    mcp: bool | None = _var(
        "RUBRICFLOW_SERVER_MCP",
        "bool",
        None,
        "serve MCP at `/mcp` (with the `mcp` extra)",
        shown="1",
    )

    def given(self) -> dict[str, Any]:
        """The variables that are set, by field name."""
        values = {spec.name: getattr(self, spec.name) for spec in fields(self)}
        return {name: value for name, value in values.items() if value is not None}

    @classmethod
    def environment_of(cls, values: Mapping[str, Any]) -> dict[str, str]:
        """`values` (server settings by field name) as the variables that carry them, for
        worker processes to read; None values are left out."""
        names = {spec.name: spec.metadata["env"] for spec in fields(cls)}
        env: dict[str, str] = {}
        for name, value in values.items():
            if value is None or name not in names:
                continue
            env[names[name]] = ("1" if value else "0") if isinstance(value, bool) else str(value)
        return env


@dataclass(frozen=True)
class Settings:
    """Every `RUBRICFLOW_*` setting (None: not set; the default the docs show applies)."""

    # -- the store and the CLI
    db: str | None = _var(
        "RUBRICFLOW_DB", "text", None, "the store: a database URL or SQLite file",
        shown="./rubricflow.db",
    )  # fmt: skip
    debug: bool = _var(
        "RUBRICFLOW_DEBUG", "bool", False, "print a traceback for an internal error", shown="0"
    )
    sqlite_fastpath: bool = _var(
        "RUBRICFLOW_SQLITE_FASTPATH",
        "bool",
        True,
        "SQLite's fast path (0: SQLAlchemy's stock async engine)",
        shown="1",
    )
    change_poll_seconds: float = _var(
        "RUBRICFLOW_CHANGE_POLL_SECONDS",
        "float",
        0.2,
        "how often waiters poll a SQLite store for changes made by other processes",
        example="a number of seconds, e.g. 0.2",
        low=0,
        high=60,
    )
    max_review_failures: int = _var(
        "RUBRICFLOW_MAX_REVIEW_FAILURES",
        "int",
        3,
        "failed reviews in a row that dead-letter an artifact",
        example="how many failed reviews in a row dead-letter an artifact (e.g. 3)",
        low=1,
    )
    disable_plugins: tuple[str, ...] = _var(
        "RUBRICFLOW_DISABLE_PLUGINS",
        "list",
        (),
        "plugins not to load, comma-separated",
        shown="none",
    )
    # -- inputs
    max_input_bytes: int | None = _var(
        "RUBRICFLOW_MAX_INPUT_BYTES",
        "size",
        None,
        "the largest document (rubric, target, suite) read whole",
        shown="10MB",
    )
    max_line_bytes: int | None = _var(
        "RUBRICFLOW_MAX_LINE_BYTES", "size", None, "the longest JSONL line read", shown="10MB"
    )
    # -- rubric caps and template budgets (`rubricflow.model.Limits`; unset: its default)
    max_criteria: int | None = _var(
        "RUBRICFLOW_MAX_CRITERIA", "int", None, "criteria in one rubric", shown="500", low=1
    )
    max_levels: int | None = _var(
        "RUBRICFLOW_MAX_LEVELS", "int", None, "levels of one criterion", shown="20", low=1
    )
    max_rubric_bytes: int | None = _var(
        "RUBRICFLOW_MAX_RUBRIC_BYTES",
        "size",
        None,
        "bytes of one rubric document, checked before it is parsed",
        shown="2MB",
    )
    template_iterations: int | None = _var(
        "RUBRICFLOW_TEMPLATE_ITERATIONS",
        "int",
        None,
        "loop iterations of one render of a criterion's template",
        shown="1000000",
        low=1,
    )
    template_output: int | None = _var(
        "RUBRICFLOW_TEMPLATE_OUTPUT",
        "int",
        None,
        "characters one render of a template may print",
        shown="1000000",
        low=1,
    )
    template_built: int | None = _var(
        "RUBRICFLOW_TEMPLATE_BUILT",
        "int",
        None,
        "characters one render of a template may build in all",
        shown="16000000",
        low=1,
    )
    template_seconds: float | None = _var(
        "RUBRICFLOW_TEMPLATE_SECONDS",
        "float",
        None,
        "seconds one render of a template may take",
        example="a number of seconds, e.g. 5",
        shown="5",
        low=0,
    )
    regex_timeout: float = _var(
        "RUBRICFLOW_REGEX_TIMEOUT",
        "float",
        1.0,
        "seconds one fallback regex search may run",
        example="a number of seconds, e.g. 1",
        low=0,
    )
    # -- checks
    check_isolation: CheckMode = _var(  # noqa: RUF009 (a field(), as every other one)
        "RUBRICFLOW_CHECK_ISOLATION",
        "choice",
        "auto",
        "which checks run in the check process pool: auto, process or off",
        choices=("auto", "process", "off"),
        example="auto runs plugin and imported checks and schemas in the check process pool",
    )
    check_timeout: float = _var(
        "RUBRICFLOW_CHECK_TIMEOUT",
        "float",
        10.0,
        "wall-clock seconds a criterion's check may run",
        example="the wall-clock seconds a check may run (e.g. 10)",
        low=0,
    )
    check_cpu_seconds: float | None = _var(
        "RUBRICFLOW_CHECK_CPU_SECONDS",
        "float",
        None,
        "CPU seconds a criterion's check may use",
        example="the CPU seconds a check may use (e.g. 10)",
        shown="the check timeout",
        low=0,
    )
    check_memory_mb: int = _var(
        "RUBRICFLOW_CHECK_MEMORY_MB",
        "int",
        2048,
        "a check process's address space, in MB",
        example="a check process's memory in MB (e.g. 2048)",
        low=0,
    )
    check_workers: int | None = _var(
        "RUBRICFLOW_CHECK_WORKERS",
        "int",
        None,
        "check processes in the pool",
        example="how many check processes to run (e.g. 2)",
        shown="min(2, CPUs)",
        low=0,
    )
    # -- the LLM judge
    llm: str | None = _var(
        "RUBRICFLOW_LLM", "text", None, "the default judge spec, e.g. openai:gpt-4o-mini"
    )
    llm_api_key: str | None = _var(
        "RUBRICFLOW_LLM_API_KEY",
        "secret",
        None,
        "the key for a judge host that is not a provider's own",
    )
    llm_timeout: float | None = _var(
        "RUBRICFLOW_LLM_TIMEOUT",
        "float",
        None,
        "seconds one judge request may take",
        example="a number of seconds (e.g. 60)",
        shown="60",
        low=0,
    )
    llm_deadline: float | None = _var(
        "RUBRICFLOW_LLM_DEADLINE",
        "float",
        None,
        "seconds a judge call may take, retries included",
        example="a number of seconds (e.g. 180)",
        shown="180",
        low=0,
    )
    llm_max_attempts: int | None = _var(
        "RUBRICFLOW_LLM_MAX_ATTEMPTS",
        "int",
        None,
        "tries per judge request",
        example="a count (e.g. 4)",
        shown="4",
        low=1,
    )
    llm_concurrency: int | None = _var(
        "RUBRICFLOW_LLM_CONCURRENCY",
        "int",
        None,
        "judge requests in flight",
        example="a count (e.g. 8)",
        shown="8",
        low=1,
    )
    llm_rpm: float | None = _var(
        "RUBRICFLOW_LLM_RPM",
        "float",
        None,
        "judge requests started per minute, at most",
        example="requests per minute (e.g. 60)",
        shown="no limit",
        low=0,
    )
    llm_max_tokens: int | None = _var(
        "RUBRICFLOW_LLM_MAX_TOKENS",
        "int",
        None,
        "tokens a judge answer may use",
        example="a count (e.g. 1024)",
        shown="1024",
        low=1,
    )
    llm_price: str | None = _var(
        "RUBRICFLOW_LLM_PRICE",
        "text",
        None,
        "the judge's price, for the cost in reports",
        shown="none",
    )
    llm_logprobs: bool | None = _var(
        "RUBRICFLOW_LLM_LOGPROBS",
        "bool",
        None,
        "ask OpenAI-compatible judges for token log-probabilities (a single answer's confidence)",
        shown="0",
    )
    batch_poll: float | None = _var(
        "RUBRICFLOW_BATCH_POLL",
        "float",
        None,
        "seconds between polls of a provider batch (`eval --batch`)",
        example="a number of seconds (e.g. 30)",
        shown="30",
        low=0,
    )
    local_model: str | None = _var(
        "RUBRICFLOW_LOCAL_MODEL",
        "text",
        None,
        "the GGUF file the `local` judge loads",
        shown="Gemma 3 270M",
    )
    local_threads: int | None = _var(
        "RUBRICFLOW_LOCAL_THREADS",
        "int",
        None,
        "the CPU threads the `local` judge computes with; on a busy machine 1 is safest",
        example="a whole number of threads (e.g. 1)",
        shown="half the CPUs",
        low=1,
    )
    cache_dir: str | None = _var(
        "RUBRICFLOW_CACHE_DIR",
        "text",
        None,
        "the judge cache and model folder",
        shown="$XDG_CACHE_HOME/rubricflow",
    )
    # -- telemetry
    otel: bool | None = _var(
        "RUBRICFLOW_OTEL",
        "bool",
        None,
        "OpenTelemetry spans (unset: on when opentelemetry is imported)",
        shown="auto",
    )
    otel_capture_content: bool | None = _var(
        "RUBRICFLOW_OTEL_CAPTURE_CONTENT",
        "bool",
        None,
        "put content (explanations, errors) on spans",
        shown="0",
    )
    # -- the server and its clients
    sse_heartbeat_seconds: float = _var(
        "RUBRICFLOW_SSE_HEARTBEAT_SECONDS",
        "float",
        15.0,
        "seconds between keep-alive comments on a quiet event stream",
        example="a number of seconds, e.g. 15",
        low=0,
        high=3600,
    )
    ui_secret: str | None = _var(
        "RUBRICFLOW_UI_SECRET",
        "secret",
        None,
        "the dashboard's session secret (the same on every server process)",
    )
    server_url: str | None = _var(
        "RUBRICFLOW_SERVER_URL", "text", None, "the server the CLI and `Client` talk to"
    )
    token: str | None = _var(
        "RUBRICFLOW_TOKEN", "secret", None, "the API token for the server", shown="none"
    )
    server: ServerVariables = field(
        default_factory=ServerVariables, metadata={"group": ServerVariables}
    )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings in `environ` (default: this process's environment). An empty
        variable is unset; a value that is not usable is a `ConfigurationError`."""
        if environ is None:
            key = tuple(os.environ.get(name, "") for name in _NAMES)
            cached = _cache.get(key)
            if cached is None:
                cached = _cache[key] = cls._read(dict(zip(_NAMES, key, strict=True)))
                if len(_cache) > 16:
                    _cache.pop(next(iter(_cache)))
            return cached
        return cls._read(environ)

    @classmethod
    def _read(cls, environ: Mapping[str, str]) -> Settings:
        return cls(
            **_values(cls, environ), server=ServerVariables(**_values(ServerVariables, environ))
        )

    @classmethod
    def variables(cls) -> list[tuple[str, Any]]:
        """Every variable's name and field, server variables last."""
        return [(spec.metadata["env"], spec) for spec in _env_fields(cls)] + [
            (spec.metadata["env"], spec) for spec in _env_fields(ServerVariables)
        ]


def _env_fields(cls: type) -> list[Any]:
    return [spec for spec in fields(cls) if "env" in spec.metadata]


def _values(cls: type, environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for spec in _env_fields(cls):
        raw = environ.get(spec.metadata["env"], "")
        if spec.metadata["kind"] != "secret":
            raw = raw.strip()
        if raw:
            values[spec.name] = _parse(spec.metadata["env"], raw, spec.metadata)
    return values


_NAMES: tuple[str, ...] = tuple(name for name, _ in Settings.variables())
_cache: dict[tuple[str, ...], Settings] = {}
_bound: ContextVar[Settings | None] = ContextVar("rubricflow_settings", default=None)


def env_name(name: str) -> str:
    """The variable behind field `name` of `Settings` (`server.NAME` for a server one)."""
    group, _, rest = name.rpartition(".")
    cls: type = ServerVariables if group == "server" else Settings
    for spec in _env_fields(cls):
        if spec.name == rest:
            return str(spec.metadata["env"])
    raise KeyError(name)


def current() -> Settings:
    """The settings bound by the entry point running this code (`use`), else the
    environment's: what code below an entry point reads its settings from."""
    bound = _bound.get()
    return bound if bound is not None else Settings.from_environment()


@contextmanager
def use(settings: Settings) -> Iterator[Settings]:
    """Bind `settings` for the code run inside (tasks started inside inherit them)."""
    token = _bound.set(settings)
    try:
        yield settings
    finally:
        _bound.reset(token)


def _type_text(meta: Mapping[str, Any]) -> str:
    kind = meta["kind"]
    if kind == "bool":
        return "boolean"
    if kind == "choice":
        return " \\| ".join(meta["choices"])
    if kind in ("int", "float"):
        word = "integer" if kind == "int" else "number"
        return word + _bounds_text(meta)
    return {"size": "size", "list": "names", "secret": "secret", "text": "text"}[kind]


def _default_text(spec: Any) -> str:
    shown = spec.metadata.get("shown")
    if shown is not None:
        return str(shown)
    default = spec.default if spec.default is not MISSING else None
    return "none" if default is None else str(default)


def render_table() -> str:
    """The Markdown table of every variable: name, type, default and what it sets."""
    lines = ["| variable | type | default | what it sets |", "|---|---|---|---|"]
    for env, spec in Settings.variables():
        meta = spec.metadata
        lines.append(f"| `{env}` | {_type_text(meta)} | {_default_text(spec)} | {meta['doc']} |")
    return "\n".join(lines) + "\n"


DOCS_PAGE = "docs/settings.md"
_BEGIN = "<!-- begin: generated by rubricflow.settings.write_docs() -->\n"
_END = "<!-- end: generated -->\n"


def documented_table(page: str) -> str:
    """The generated part of the docs page's text (empty when it has none)."""
    start, end = page.find(_BEGIN), page.find(_END)
    return page[start + len(_BEGIN) : end] if 0 <= start < end else ""


def write_docs(path: str = DOCS_PAGE) -> None:
    """Put `render_table()` into the docs page between its markers (run from the
    checkout: `python -c "import rubricflow.settings as s; s.write_docs()"`)."""
    with open(path, encoding="utf-8") as file:
        page = file.read()
    start, end = page.find(_BEGIN), page.find(_END)
    if not 0 <= start < end:
        raise ConfigurationError(f"{path} has no {_BEGIN.strip()} ... {_END.strip()} markers")
    page = page[: start + len(_BEGIN)] + render_table() + page[end:]
    with open(path, "w", encoding="utf-8") as file:
        file.write(page)
