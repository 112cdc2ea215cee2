"""Traces as targets: OpenTelemetry GenAI spans (OTLP JSON) and chat-completion logs read
into conversations, one target per trace or per logged call.

`read_otel(path)` reads OTLP JSON: a file of `ExportTraceServiceRequest` documents, one a
line (what the OpenTelemetry Collector's file exporter and rubricflow's own
`rubricflow.telemetry.OtlpJsonFileExporter` write) or one document; lines that are one
span each in the SDK's `to_json()` shape are read too. Spans are grouped by trace and
ordered by start time; each trace's GenAI spans give its messages:

- `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages` (the
  current GenAI conventions: parts `text`, `tool_call`, `tool_call_response`, `blob`);
- the older span events `gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice`;
- the indexed `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes (OpenLLMetry);
- `execute_tool` spans (`gen_ai.tool.name`, `gen_ai.tool.call.id`, `.arguments`,
  `.result`) for calls no chat span shows.

Each chat call's input repeats the history before it: the messages a trace already holds
are not added again. Only what a span needs is kept while the file is read, so memory
follows the GenAI content, not the spans' count.

`read_openai_chat(path)` reads chat-completion logs: JSONL (or one JSON document) whose
lines hold a request's `messages` (at the top, under `request` or `body`) and, when
logged, its answer (`choices`, `response.choices` or `response.body.choices`).

Every problem is a `TargetInputError` naming the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rubricflow.conversation import read_conversation
from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.formats.document import open_regular_file, parse_text, read_capped
from rubricflow.jsonl import bounded_lines, json_lines
from rubricflow.results import Target
from rubricflow.targets import TargetInputError

__all__ = [
    "TRACE_FORMATS",
    "chat_log_targets",
    "otel_targets",
    "read_openai_chat",
    "read_otel",
    "read_trace_targets",
]

TRACE_FORMATS = ("otel", "openai-chat")
"""The `--from` readers: OpenTelemetry GenAI spans (OTLP JSON), chat-completion logs."""

_ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _fail(where: str, why: str) -> TargetInputError:
    return TargetInputError(f"{where}: {why}")


# -- OTLP JSON values --------------------------------------------------------------------


def _any_value(value: Any) -> Any:
    """An OTLP `AnyValue` (`{"stringValue": ...}`, ...) as a plain value."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    for key in ("doubleValue", "boolValue", "bytesValue"):
        if key in value:
            return value[key]
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values") or ())
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    """OTLP `[{"key", "value"}]`, or an SDK `to_json()` mapping, as a dict."""
    if isinstance(raw, Mapping):
        return dict(raw)
    found: dict[str, Any] = {}
    for item in raw or ():
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            found[item["key"]] = _any_value(item.get("value"))
    return found


def _hex_id(value: Any) -> str:
    text = str(value or "")
    return text[2:] if text.startswith("0x") else text


def _nanos(value: Any) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        from datetime import datetime

        try:  # the SDK's to_json(): an ISO time
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return 0
        return int(stamp.timestamp() * 1_000_000_000)
    return 0


# -- a span's GenAI content ----------------------------------------------------------------


@dataclass
class _Span:
    """What a trace needs of one span: when it started and the messages it shows."""

    start: int
    order: int
    messages: list[str] = field(default_factory=list)  # each as canonical JSON, interned
    inputs: int = 0  # how many of `messages` are the call's input (history)
    tool: dict[str, Any] | None = None  # an execute_tool span's call and result


@dataclass
class _Trace:
    id: str
    spans: list[_Span] = field(default_factory=list)
    seen: int = 0  # spans of the trace, GenAI or not
    # each distinct message once: a chat call's input repeats the history, so its
    # messages are the same strings the trace already holds
    strings: dict[str, str] = field(default_factory=dict)

    def intern(self, message: Mapping[str, Any]) -> str:
        text = json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return self.strings.setdefault(text, text)


def _json_attribute(value: Any, where: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise _fail(
                where, "is not JSON; the GenAI conventions give it as a JSON array"
            ) from None
    return value


def _genai_part(part: Any, message: dict[str, Any], where: str) -> None:
    """One part of a GenAI-conventions message into our message shape."""
    if not isinstance(part, Mapping):
        raise _fail(where, f"a message part is an object, got {type(part).__name__}")
    kind = part.get("type")
    if kind == "text" or kind == "reasoning":
        message["content"].append({"type": "text", "text": str(part.get("content", ""))})
    elif kind == "tool_call":
        message["tool_calls"].append(
            {
                "id": part.get("id"),
                "name": str(part.get("name", "")),
                "arguments": part.get("arguments") or {},
            }
        )
    elif kind == "tool_call_response":
        message["role"] = "tool"
        if part.get("id") is not None:
            message["tool_call_id"] = str(part["id"])
        response = part.get("response", part.get("result"))
        text = response if isinstance(response, str) else json.dumps(response, sort_keys=True)
        message["content"].append({"type": "text", "text": text})
    elif kind == "blob" and str(part.get("mime_type", "")).startswith("image/"):
        message["content"].append(
            {"type": "image", "media_type": part.get("mime_type"), "data": part.get("content")}
        )
    elif kind in ("uri", "file", "blob"):  # never fetched: named in the text
        shown = part.get("uri") or part.get("file_id") or part.get("mime_type") or kind
        message["content"].append({"type": "text", "text": f"[{kind}: {shown}]"})
    else:
        message["content"].append({"type": "text", "text": json.dumps(part, sort_keys=True)})


def _genai_messages(value: Any, where: str) -> list[dict[str, Any]]:
    raw = _json_attribute(value, where)
    if not isinstance(raw, list):
        raise _fail(where, f"is a list of messages, got {type(raw).__name__}")
    out: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        here = f"{where}[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
            raise _fail(here, "a message needs a `role`")
        message: dict[str, Any] = {"role": item["role"], "content": [], "tool_calls": []}
        parts = item.get("parts")
        if parts is None and "content" in item:  # an older shape: role and content
            parts = [{"type": "text", "content": item["content"]}]
        for number, part in enumerate(parts or ()):
            _genai_part(part, message, f"{here}.parts[{number}]")
        out.append(_tidy(message))
    return out


def _instructions(value: Any, where: str) -> list[dict[str, Any]]:
    raw = _json_attribute(value, where) if isinstance(value, str) and value[:1] == "[" else value
    if isinstance(raw, str):
        return [{"role": "system", "content": raw}]
    message: dict[str, Any] = {"role": "system", "content": [], "tool_calls": []}
    for number, part in enumerate(raw or ()):
        _genai_part(part, message, f"{where}[{number}]")
    return [_tidy(message)]


def _tidy(message: dict[str, Any]) -> dict[str, Any]:
    """Our canonical shape: text alone as a string, no empty lists, a known role."""
    role = message["role"]
    message["role"] = _ROLES.get(role, "assistant" if role == "model" else role)
    parts = message["content"]
    if all(p.get("type") == "text" for p in parts):
        message["content"] = "\n".join(p["text"] for p in parts)
    if not message.get("tool_calls"):
        message.pop("tool_calls", None)
    return message


def _indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`, `...tool_calls.0.name`:
    OpenLLMetry's indexed attributes, as messages."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        head, _, rest = key[len(prefix) :].partition(".")
        if not head.isdigit():
            continue
        rows.setdefault(int(head), {})[rest] = value
    out = []
    for _, row in sorted(rows.items()):
        message: dict[str, Any] = {
            "role": str(row.get("role", "assistant" if "completion" in prefix else "user")),
            "content": [{"type": "text", "text": str(row["content"])}] if "content" in row else [],
            "tool_calls": [],
        }
        calls: dict[int, dict[str, Any]] = {}
        for key, value in row.items():
            if key.startswith("tool_calls."):
                number, _, name = key[len("tool_calls.") :].partition(".")
                if number.isdigit():
                    calls.setdefault(int(number), {})[name] = value
        for _, call in sorted(calls.items()):
            arguments = call.get("arguments", {})
            arguments = _arguments(arguments)
            message["tool_calls"].append(
                {"id": call.get("id"), "name": str(call.get("name", "")), "arguments": arguments}
            )
        if row.get("tool_call_id") is not None:
            message["tool_call_id"] = str(row["tool_call_id"])
        out.append(_tidy(message))
    return out


def _event_messages(events: Iterable[Any], where: str) -> tuple[list[dict[str, Any]], int]:
    """The older conventions' message events: (messages, how many are input)."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for number, event in enumerate(events):
        if not isinstance(event, Mapping):
            continue
        name = event.get("name")
        attributes = _attributes(event.get("attributes"))
        here = f"{where}.events[{number}]"
        if name in _EVENT_ROLES:
            inputs.append(_event_message(_EVENT_ROLES[str(name)], attributes, here))
        elif name == "gen_ai.choice":
            raw = attributes.get("message", attributes)
            body = _json_attribute(raw, f"{here}.message") if isinstance(raw, str) else raw
            outputs.append(_event_message("assistant", dict(body or {}), here))
    return [*inputs, *outputs], len(inputs)


def _event_message(role: str, attributes: Mapping[str, Any], where: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": str(attributes.get("role", role)), "content": []}
    content = attributes.get("content")
    if content is not None:
        text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
        message["content"].append({"type": "text", "text": text})
    calls = attributes.get("tool_calls")
    if calls is not None:
        raw = _json_attribute(calls, f"{where}.tool_calls")
        message["tool_calls"] = raw if isinstance(raw, list) else []
    if role == "tool" and attributes.get("id") is not None:
        message["tool_call_id"] = str(attributes["id"])
    return _tidy(message)


def _arguments(value: Any) -> Any:
    """Arguments given as a JSON string, decoded (kept as text when they are not JSON)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value) if value.strip() else {}
    except ValueError:
        return value


def _tool_span(attributes: Mapping[str, Any]) -> dict[str, Any]:
    arguments = attributes.get("gen_ai.tool.call.arguments", {})
    arguments = _arguments(arguments)
    result = attributes.get("gen_ai.tool.call.result")
    call_id = attributes.get("gen_ai.tool.call.id")
    return {
        "id": str(call_id) if call_id is not None else None,
        "name": str(attributes.get("gen_ai.tool.name", "")),
        "arguments": arguments,
        "result": result if result is None or isinstance(result, str) else json.dumps(result),
    }


def _span(raw: Mapping[str, Any], order: int, where: str, trace: _Trace) -> _Span | None:
    """A span's GenAI content, or None when it has none."""
    attributes = _attributes(raw.get("attributes"))
    start = _nanos(raw.get("startTimeUnixNano", raw.get("start_time")))
    span = _Span(start=start, order=order)
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        span.tool = _tool_span(attributes)
        return span
    here = f"{where}.attributes"
    messages: list[dict[str, Any]] = []
    if "gen_ai.system_instructions" in attributes:
        messages += _instructions(
            attributes["gen_ai.system_instructions"], f"{here} gen_ai.system_instructions"
        )
    if "gen_ai.input.messages" in attributes:
        messages += _genai_messages(
            attributes["gen_ai.input.messages"], f"{here} gen_ai.input.messages"
        )
    messages += _indexed(attributes, "gen_ai.prompt.")
    events, event_inputs = _event_messages(raw.get("events") or (), where)
    messages += events[:event_inputs]
    span.inputs = len(messages)
    if "gen_ai.output.messages" in attributes:
        messages += _genai_messages(
            attributes["gen_ai.output.messages"], f"{here} gen_ai.output.messages"
        )
    messages += _indexed(attributes, "gen_ai.completion.")
    messages += events[event_inputs:]
    if not messages:
        return None
    span.messages = [trace.intern(message) for message in messages]
    return span


# -- spans to traces ------------------------------------------------------------------------


class _Collector:
    """Spans grouped by trace, in the order traces first appear."""

    def __init__(self) -> None:
        self.traces: dict[str, _Trace] = {}
        self.spans = 0

    def add(self, raw: Any, where: str) -> None:
        if not isinstance(raw, Mapping):
            raise _fail(where, f"a span is an object, got {type(raw).__name__}")
        trace_id = _hex_id(raw.get("traceId") or (raw.get("context") or {}).get("trace_id"))
        if not trace_id:
            raise _fail(where, "a span needs its `traceId`")
        self.spans += 1
        trace = self.traces.get(trace_id)
        if trace is None:
            trace = self.traces[trace_id] = _Trace(trace_id)
        trace.seen += 1
        span = _span(raw, self.spans, where, trace)
        if span is not None:
            trace.spans.append(span)

    def document(self, value: Any, where: str) -> None:
        """One OTLP `ExportTraceServiceRequest`, or one span in the SDK's shape."""
        if not isinstance(value, Mapping):
            raise _fail(where, f"an OTLP JSON document is an object, got {type(value).__name__}")
        if "resourceSpans" not in value:
            if "context" in value and "name" in value:  # the SDK's span.to_json()
                self.add(value, where)
                return
            raise _fail(
                where,
                "holds no `resourceSpans`: not OTLP JSON (export spans with an OTLP JSON "
                "file exporter, one ExportTraceServiceRequest a line)",
            )
        for r, resource in enumerate(value.get("resourceSpans") or ()):
            scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")
            for s, scope in enumerate(scopes or ()):
                for n, span in enumerate(scope.get("spans") or ()):
                    self.add(span, f"{where}: resourceSpans[{r}].scopeSpans[{s}].spans[{n}]")

    def targets(self, name: str) -> Iterator[Target]:
        found = 0
        for trace_id in list(self.traces):
            trace = self.traces.pop(trace_id)  # what is yielded is no longer held here
            if not trace.spans:
                continue
            messages = _trace_messages(trace.spans)
            where = f"{name}: trace {trace.id}"
            try:
                read_conversation(messages)
            except (RubricflowError, ValueError) as error:
                raise _fail(where, str(error)) from None
            found += 1
            yield Target(
                id=trace.id,
                content=messages,
                metadata={"source": "otel", "trace_id": trace.id, "spans": trace.seen},
            )
        if not found:
            raise _fail(
                name,
                f"none of its {self.spans} spans holds GenAI messages or tool calls "
                "(gen_ai.input.messages / gen_ai.output.messages, message events, or "
                "execute_tool spans); turn content capture on where the spans are made "
                "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)",
            )


def _trace_messages(spans: list[_Span]) -> list[dict[str, Any]]:
    """One conversation from a trace's spans, in start order: each chat call's input adds
    only what the conversation does not hold yet (its history is already there)."""
    ordered = sorted(spans, key=lambda s: (s.start, s.order))
    distinct = {text for span in ordered for text in span.messages if '"tool_calls"' in text}
    shown = {
        call.get("id")
        for text in distinct
        for call in json.loads(text).get("tool_calls") or ()
        if call.get("id") is not None
    }
    messages: list[str | dict[str, Any]] = []
    for span in ordered:
        if span.tool is not None:
            if span.tool["id"] is not None and span.tool["id"] in shown:
                continue
            messages.extend(_tool_messages(span.tool))
            continue
        inputs, outputs = span.messages[: span.inputs], span.messages[span.inputs :]
        held = 0
        while held < len(inputs) and held < len(messages) and inputs[held] == messages[held]:
            held += 1
        if held < len(inputs) and held < len(messages):  # another history: skip what repeats
            held = _overlap(messages, inputs)
        messages.extend(inputs[held:])
        messages.extend(outputs)
    return [json.loads(m) if isinstance(m, str) else m for m in messages]


def _overlap(messages: list[str | dict[str, Any]], inputs: list[str]) -> int:
    """How many leading `inputs` the end of `messages` already holds."""
    for size in range(min(len(messages), len(inputs)), 0, -1):
        if messages[-size:] == inputs[:size]:
            return size
    return 0


def _tool_messages(tool: Mapping[str, Any]) -> list[dict[str, Any]]:
    call = {"name": tool["name"], "arguments": tool["arguments"]}
    if tool["id"] is not None:
        call["id"] = tool["id"]
    out: list[dict[str, Any]] = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    if tool["result"] is not None:
        result: dict[str, Any] = {"role": "tool", "content": tool["result"]}
        if tool["id"] is not None:
            result["tool_call_id"] = tool["id"]
        out.append(result)
    return out


def otel_targets(documents: Iterable[Any], name: str = "traces") -> Iterator[Target]:
    """One target per trace from OTLP JSON documents (mappings) already read."""
    collector = _Collector()
    for number, document in enumerate(documents, start=1):
        collector.document(document, f"{name} document {number}")
    yield from collector.targets(name)


def _documents(path: Path) -> Iterator[tuple[str, str, Any]]:
    """(where, a default id, value) for each document of a JSONL or JSON file."""
    name = str(path)

    def refuse(reason: str) -> TargetInputError:
        return TargetInputError(f"{name}: {reason}")

    with open_regular_file(path, refuse, what="trace file (.jsonl or .json)") as stream:
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            for number, value in json_lines(
                bounded_lines(stream, name, TargetInputError), name, TargetInputError
            ):
                yield f"{name} line {number}", f"line-{number}", value
            return
        raw = read_capped(stream, refuse, what="the file")
    try:
        value = parse_text(raw.decode("utf-8-sig"), name, suffix=path.suffix)
    except UnicodeDecodeError:
        raise refuse("not UTF-8 text; save it as UTF-8") from None
    except RubricflowError as error:
        raise TargetInputError(str(error)) from None
    if isinstance(value, list):
        for number, item in enumerate(value):
            yield f"{name} [{number}]", f"item-{number}", item
    else:
        yield name, "call-1", value


def read_otel(source: str | Path) -> Iterator[Target]:
    """One target per trace of an OTLP JSON file (JSONL of export requests, or one)."""
    path = Path(source)
    collector = _Collector()
    for where, _, value in _documents(path):
        collector.document(value, where)
    yield from collector.targets(str(path))


# -- chat-completion logs -------------------------------------------------------------------


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _chat_log(value: Any, where: str, default_id: str) -> Target:
    if not isinstance(value, Mapping):
        raise _fail(where, f"a chat-completion log line is an object, got {type(value).__name__}")
    messages = None
    requests: tuple[tuple[str, ...], ...] = (
        ("messages",),
        ("request", "messages"),
        ("body", "messages"),
    )
    field_name = "messages"
    for asked in requests:
        found = _dig(value, *asked)
        if found is not None:
            messages, field_name = found, ".".join(asked)
            break
    if messages is None:
        raise _fail(
            where,
            "no `messages` (the request's, at the top or under `request` or `body`); "
            "a chat-completion log line holds the request and, when logged, its answer",
        )
    if not isinstance(messages, list):
        raise _fail(
            f"{where}: {field_name}", f"is a list of messages, got {type(messages).__name__}"
        )
    messages = list(messages)
    answers: tuple[tuple[str, ...], ...] = (
        ("choices",),
        ("response", "choices"),
        ("response", "body", "choices"),
    )
    for path in answers:
        choices = _dig(value, *path)
        if choices is not None:
            if not isinstance(choices, list) or not choices:
                raise _fail(f"{where}: {'.'.join(path)}", "is a non-empty list of choices")
            answer = _dig(choices[0], "message")
            if not isinstance(answer, Mapping):
                raise _fail(f"{where}: {'.'.join(path)}[0].message", "is the answer's message")
            messages.append({"role": "assistant", **dict(answer)})
            break
    try:
        read_conversation(messages)
    except (RubricflowError, ValueError) as error:
        raise _fail(where, str(error)) from None
    ident = value.get("id") or value.get("custom_id") or _dig(value, "response", "id")
    model = value.get("model") or _dig(value, "request", "model") or _dig(value, "body", "model")
    metadata: dict[str, Any] = {"source": "openai-chat"}
    if isinstance(model, str):
        metadata["model"] = model
    return Target(
        id=str(ident) if isinstance(ident, str | int) else default_id,
        content=messages,
        metadata=metadata,
    )


def chat_log_targets(lines: Iterable[Any], name: str = "log") -> Iterator[Target]:
    """One target per logged chat completion (mappings already read)."""
    for number, value in enumerate(lines, start=1):
        yield _chat_log(value, f"{name} line {number}", f"line-{number}")


def read_openai_chat(source: str | Path) -> Iterator[Target]:
    """One target per line of a chat-completion log (JSONL, or one JSON document)."""
    for where, default_id, value in _documents(Path(source)):
        yield _chat_log(value, where, default_id)


def read_trace_targets(source: str | Path, source_format: str) -> Iterator[Target]:
    """Targets from `source` read as `source_format` (one of `TRACE_FORMATS`)."""
    if source_format == "otel":
        return read_otel(source)
    if source_format == "openai-chat":
        return read_openai_chat(source)
    raise ConfigurationError(
        f"--from {source_format!r} is not a trace format; use one of {', '.join(TRACE_FORMATS)}"
    )
