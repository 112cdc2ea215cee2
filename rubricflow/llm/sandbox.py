"""The sandbox a rubric's own template (rubric data, maybe a stranger's) renders in, with
a budget per render: time, loop iterations, characters built and characters of output.

Jinja2's `SandboxedEnvironment` stops a template from reaching Python's internals, but
not from asking for a gigabyte: `'x' * 10**9`, `'%0999999999d' | format(1)`,
`'{:>999999999}'.format(1)`, a string doubled in a loop, or a list of a thousand
references to the content printed.
This sandbox checks each such operation *before* it runs (its result's size is estimated
from its operands), counts what every operator, call, filter, literal and printed value
builds against the budget, and checks the clock at each of them and at every loop
iteration. Past the budget, `TemplateBudgetError` names the limit.

Sizes are in characters, measured as the text the value would print as (an estimate:
repr's escapes are not counted). A value the template was given (the target's content)
costs nothing until the template builds something from it.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, update_wrapper
from string import Formatter
from typing import Any

from jinja2 import nodes
from jinja2.filters import FILTERS, make_attrgetter
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import SandboxedEnvironment, SandboxedFormatter
from jinja2.utils import Namespace, generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

__all__ = ["BudgetedSandbox", "PromptError", "TemplateBudget", "TemplateBudgetError", "weight"]


#: the largest power `**` may compute, in bits (about 300,000 digits): computing one holds
#: the thread, so the time budget could not stop it
MAX_POWER_BITS = 1_000_000


class PromptError(ValueError):
    """A rubric's template cannot be rendered for this target."""


class TemplateBudgetError(PromptError):
    """A rubric template ran past its budget (time, loop iterations, characters built or
    output)."""


@dataclass(frozen=True)
class TemplateBudget:
    """What one render of a rubric template may cost."""

    iterations: int = 1_000_000
    """loop iterations in all (the sandbox caps one `range` at 100,000; nested loops
    multiply)"""
    output: int = 1_000_000
    """characters of rendered output"""
    built: int = 16_000_000
    """characters the template may build in all: every string, list or number an
    operator, call, filter, literal or printed value makes counts its size"""
    seconds: float = 5.0
    """wall-clock time of one render"""


def _leaf(item: Any) -> int | None:
    """The printed size of a value that holds no others; None for a container."""
    if isinstance(item, str | bytes | bytearray):
        return len(item) + 2
    if isinstance(item, bool) or item is None:
        return 5
    if isinstance(item, int):
        return item.bit_length() // 3 + 2
    if isinstance(item, float):
        return 24
    if isinstance(item, Mapping | list | tuple | set | frozenset | Namespace):
        return None
    return 64


def _children(item: Any) -> list[Any]:
    if isinstance(item, Namespace):
        item = object.__getattribute__(item, "_Namespace__attrs")
    if isinstance(item, Mapping):
        return [*item.keys(), *item.values()]
    return list(item)


def weight(value: Any, limit: int) -> int:
    """The size of `value` printed, in characters (an estimate), counted up to just past
    `limit`: containers count every item as often as it appears (a list of one string
    repeated 1,000 times weighs 1,000 strings), and a container inside itself weighs more
    than any limit. Each distinct container is walked once."""
    leaf = _leaf(value)
    if leaf is not None:
        return leaf
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, done = stack.pop()
        key = id(item)
        if key in sizes:
            continue
        children = _children(item)
        if not done:
            open_.add(key)
            stack.append((item, True))
            for child in children:
                if _leaf(child) is None:
                    if id(child) in open_:
                        return limit + 1  # it contains itself
                    stack.append((child, False))
            continue
        open_.discard(key)
        total = 2 + 2 * len(children)
        for child in children:
            size = _leaf(child)
            total += sizes[id(child)] if size is None else size
            if total > limit:
                return total
        sizes[key] = total
    return sizes[id(value)]


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsab%])")
_DIGITS = re.compile(r"\d+")


def _number(digits: str) -> int:
    return int(digits) if len(digits) <= 12 else 10**12


def printf_size(template: str, values: Any, limit: int) -> int:
    """An upper bound of the size of `template % values` (checked before it is built):
    each conversion prints at most its width, its precision or its largest argument."""
    conversions = _PRINTF.findall(template)
    args = values if isinstance(values, tuple) else (values,)
    if isinstance(values, Mapping):
        args = tuple(values.values())
    widest = max((weight(arg, limit) for arg in args), default=0)
    for width, precision, _kind in conversions:
        for part in (width, precision):
            if part == "*":
                stars = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
                widest = max([widest, *(abs(a) for a in stars)])
            elif part:
                widest = max(widest, _number(part))
    return len(template) + len(conversions) * (widest + 24)


def spec_size(format_spec: str) -> int:
    """The widest field a `str.format` spec asks for (width or precision)."""
    return max((_number(d) for d in _DIGITS.findall(format_spec)), default=0)


class _Guards(NodeTransformer):
    """Rewrites a parsed template so the budget sees what the compiled code would do
    unchecked: loops count their iterations, `~` and list, tuple and dict literals are
    measured, and literal text is counted as it is printed (inside `{% set %}` blocks and
    macros too, where the output is kept rather than printed)."""

    @staticmethod
    def _call(name: str, args: list[nodes.Expr], lineno: int) -> nodes.Call:
        return nodes.Call(nodes.EnvironmentAttribute(name), args, [], None, None, lineno=lineno)

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        size = nodes.Const(_literal_size(node.body))
        assert isinstance(node.iter, nodes.Expr)
        node.iter = self._call("counted_loop", [node.iter, size], node.lineno)
        return node

    def visit_Macro(self, node: nodes.Macro) -> nodes.Node:
        self.generic_visit(node)
        charge = self._call("counted_text", [nodes.Const(_literal_size(node.body))], node.lineno)
        node.body.insert(0, nodes.Output([charge], lineno=node.lineno))
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return self._call("guarded_concat", list(node.nodes), node.lineno)

    def _literal(self, node: nodes.List | nodes.Tuple | nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        if isinstance(node, nodes.Tuple) and node.ctx != "load":
            return node
        return self._call("guarded_value", [node], node.lineno)

    visit_List = _literal
    visit_Tuple = _literal
    visit_Dict = _literal


def _literal_size(body: list[nodes.Node]) -> int:
    """The characters of literal text a loop's or macro's body prints each time it runs
    (not counting loops and macros inside it, which count their own)."""
    size = 0
    stack: list[nodes.Node] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.TemplateData):
            size += len(node.data)
        elif not isinstance(node, nodes.For | nodes.Macro):
            stack.extend(node.iter_child_nodes())
    return size


class BudgetedSandbox(SandboxedEnvironment):
    """A sandbox for one render with `budget`: make a new one for each render."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    intercepted_unops = frozenset({"+", "-"})

    def __init__(
        self, budget: TemplateBudget, finalize: Callable[[Any], Any], **options: Any
    ) -> None:
        super().__init__(optimized=False, finalize=self._finalize, **options)
        self.budget = budget
        self._user_finalize = finalize
        self.iterations = 0
        self.built = 0
        self.deadline = time.monotonic() + budget.seconds
        self.given: set[int] = set()
        self._grown: dict[int, tuple[Any, int]] = {}
        self.globals["lipsum"] = self._lipsum
        self.filters = {name: self._guarded_filter(name, f) for name, f in FILTERS.items()}

    # --- the budget -------------------------------------------------------------------
    def start(self, given: Iterable[Any]) -> None:
        """Start the clock; the values in `given` (the context) cost nothing as they are."""
        self.deadline = time.monotonic() + self.budget.seconds
        self.given = {id(value) for value in given}

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateBudgetError(
                f"the criterion's template exceeded its budget of {self.budget.seconds:g} "
                "seconds per render; do less work in it"
            )

    def spend(self, size: int, what: str = "a value") -> None:
        """Count `size` characters about to be built (or just built) against the budget."""
        if self.built + size > self.budget.built:
            raise TemplateBudgetError(
                f"the criterion's template exceeded its budget of {self.budget.built:,} "
                f"characters built per render ({what} of about {size:,} characters); "
                "build smaller strings and lists"
            )
        self.built += size

    def listed(self, items: Any, what: str) -> list[Any]:
        """The items of an iterable (a generator, a range) as a list, counted and timed
        one by one, so a check can size them before anything joins or sums them."""
        found: list[Any] = []
        for item in items:
            self.tick()
            found.append(item)
        return found

    def account(self, value: Any, what: str = "a value") -> Any:
        """Count a value just built; the template's given values are free."""
        if id(value) not in self.given and not isinstance(value, bool | float):
            self.spend(weight(value, self.budget.built), what)
        return value

    def counted_loop(self, iterable: Any, literal: int = 0) -> Iterator[Any]:
        """Each item of a loop, counted; `literal` is the text its body prints each time."""
        for item in iterable:
            self.iterations += 1
            if self.iterations > self.budget.iterations:
                raise TemplateBudgetError(
                    f"the criterion's template exceeded its budget of "
                    f"{self.budget.iterations:,} loop iterations per render (nested loops "
                    "multiply); loop over less"
                )
            self.tick()
            if literal:
                self.spend(literal, "literal text printed in a loop")
            yield item

    # --- what the rewritten template calls ----------------------------------------------
    def guarded_concat(self, *parts: Any) -> str:
        self.tick()
        self.spend(sum(weight(p, self.budget.built) for p in parts), "a `~` concatenation")
        return "".join(str(p) for p in parts)

    def guarded_value(self, value: Any) -> Any:
        return self.account(value, "a literal")

    def counted_text(self, size: int) -> str:
        """Count the literal text a macro's body prints (called as the macro starts)."""
        self.tick()
        self.spend(size, "literal text printed by a macro")
        return ""

    def _finalize(self, value: Any) -> Any:
        self.tick()
        if isinstance(value, str):
            self.spend(len(value), "printed text")
        elif id(value) not in self.given:
            self.account(value, "a printed value")
        return self._user_finalize(value)

    def _lipsum(self, n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
        self.spend(_as_int(n) * _as_int(max) * 16, "lipsum()")
        return generate_lorem_ipsum(n, html, min, max)

    # --- operators --------------------------------------------------------------------
    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self.tick()
        limit = self.budget.built
        if operator == "*":
            self._check_product(left, right, limit)
        elif operator == "+" and not _numbers(left, right):
            self.spend(weight(left, limit) + weight(right, limit), "a `+` concatenation")
        elif operator == "**" and _ints(left, right):
            bits = abs(left).bit_length() * max(int(right), 0)
            # computing a huge power holds the thread past any clock check: refuse it
            self.spend(bits // 3 if bits <= MAX_POWER_BITS else limit + 1, "a power")
        elif operator == "%" and isinstance(left, str):
            self.spend(printf_size(left, right, limit), "a `%` format")
        result = self.binop_table[operator](left, right)
        if operator in ("*", "+") and _ints(left, right):
            self.account(result, "a number")
        return result

    def _check_product(self, left: Any, right: Any, limit: int) -> None:
        if _ints(left, right):
            self.spend((abs(left).bit_length() + abs(right).bit_length()) // 3, "a number")
            return
        for sequence, times in ((left, right), (right, left)):
            if isinstance(times, int) and not isinstance(sequence, int | float):
                size = weight(sequence, limit) * max(times, 0)
                self.spend(size, "a repeated string or list")

    # --- calls --------------------------------------------------------------------------
    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        __self.tick()
        if isinstance(__obj, LoopContext) and args:  # a recursive loop: count it too
            args = (__self.counted_loop(args[0]), *args[1:])
        receiver = getattr(__obj, "__self__", None)
        if isinstance(receiver, str):
            name = getattr(__obj, "__name__", "")
            if name == "join" and args and not isinstance(args[0], list | tuple):
                args = (__self.listed(args[0], "str.join()"), *args[1:])
            __self._check_str_method(receiver, name, args)
        grown = __self._growth(receiver, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        if grown is not None:
            __self._grown[id(receiver)] = (receiver, grown)
        return __self.account(result, "a call's result")

    def _growth(
        self, receiver: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> int | None:
        """The size a list, dict or set the template calls a method of may grow to
        (checked before the call): its size so far plus all it is given."""
        if not isinstance(receiver, list | dict | set) or id(receiver) in self.given:
            return None
        limit = self.budget.built
        size = sum(self._size(a, limit) for a in (receiver, *args, *kwargs.values()))
        if size > limit:
            self.spend(size, "a list or dict grown in place")
        return size

    def _size(self, value: Any, limit: int) -> int:
        known = self._grown.get(id(value))
        return known[1] if known is not None else weight(value, limit)

    def _check_str_method(self, text: str, name: str, args: tuple[Any, ...]) -> None:
        limit = self.budget.built
        if name in ("center", "ljust", "rjust", "zfill") and args:
            self.spend(max(_as_int(args[0]), len(text)), f"str.{name}()")
        elif name == "expandtabs":
            tab = _as_int(args[0]) if args else 8
            self.spend(len(text) + text.count("\t") * tab, "str.expandtabs()")
        elif name == "replace" and len(args) >= 2:
            self.spend(_replaced_size(text, args[0], args[1], args[2:]), "str.replace()")
        elif name == "join" and args:
            items = args[0] if isinstance(args[0], list | tuple) else ()
            size = sum(weight(i, limit) for i in items) + len(text) * len(items)
            self.spend(size, "str.join()")
        elif name == "translate":
            self.spend(len(text) * max(weight(args[0], limit) if args else 0, 1), "translate")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """`str.format` and `str.format_map` through a formatter that checks each
        field's width and precision before it formats it, and counts what it builds."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text: str = value.__self__
        formatter = _BudgetedFormatter(self)
        is_map = value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one mapping argument")
                kwargs, args = args[0], ()
            self.spend(len(text), "str.format()")
            return str(formatter.vformat(text, args, kwargs))

        return update_wrapper(checked, value)

    # --- filters ------------------------------------------------------------------------
    def _guarded_filter(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        check = _FILTER_CHECKS.get(name)
        signature = _signature(name, function) if check is not None else None

        def guarded(*args: Any, **kwargs: Any) -> Any:
            self.tick()
            if check is not None and signature is not None:
                try:
                    bound = signature.bind(*args, **kwargs)
                except TypeError:
                    pass  # the filter itself says what is wrong with its arguments
                else:
                    bound.apply_defaults()
                    if check(self, bound.arguments):  # it listed an iterable: use the list
                        args, kwargs = bound.args, bound.kwargs
            return self.account(function(*args, **kwargs), f"the {name} filter's result")

        return update_wrapper(guarded, function)

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        guarded = _Guards().visit(super()._parse(source, name, filename))
        assert isinstance(guarded, nodes.Template)
        return guarded


@cache
def _signature(name: str, function: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(function)


class _BudgetedFormatter(SandboxedFormatter):
    def __init__(self, env: BudgetedSandbox) -> None:
        super().__init__(env)
        self.budgeted = env

    def format_field(self, value: Any, format_spec: str) -> Any:
        env = self.budgeted
        env.tick()
        env.spend(max(spec_size(format_spec), weight(value, env.budget.built)), "a format field")
        return Formatter.format_field(self, value, format_spec)


def _as_int(value: Any) -> int:
    try:
        return abs(int(value))
    except (TypeError, ValueError, OverflowError):
        return len(value) if isinstance(value, str) else 0


def _ints(left: Any, right: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))


def _numbers(left: Any, right: Any) -> bool:
    return all(isinstance(v, int | float) for v in (left, right))


def _replaced_size(text: Any, old: Any, new: Any, rest: tuple[Any, ...]) -> int:
    text, old, new = str(text), str(old), str(new)
    found = text.count(old) if old else len(text) + 1
    if rest and rest[0] is not None and _as_int(rest[0]) >= 0:
        found = min(found, _as_int(rest[0]))
    return len(text) + found * max(len(new) - len(old), 0)


def _check_center(env: BudgetedSandbox, a: Mapping[str, Any]) -> None:
    env.spend(_as_int(a["width"]), "the center filter")


def _check_indent(env: BudgetedSandbox, a: Mapping[str, Any]) -> None:
    text = a["s"] if isinstance(a["s"], str) else ""
    env.spend(len(text) + (text.count("\n") + 1) * _as_int(a["width"]), "the indent filter")


def _check_format(env: BudgetedSandbox, a: Mapping[str, Any]) -> None:
    if isinstance(a["value"], str):
        values = a["kwargs"] or a["args"]
        env.spend(printf_size(a["value"], values, env.budget.built), "the format filter")


def _check_replace(env: BudgetedSandbox, a: Mapping[str, Any]) -> None:
    size = _replaced_size(a["s"], a["old"], a["new"], (a["count"],))
    env.spend(size, "the replace filter")


def _check_join(env: BudgetedSandbox, a: dict[str, Any]) -> bool:
    """Size a join before it is made: each item, and the separator once per item. A
    generator or range is listed first (True: call the filter with the list)."""
    value, attribute = a["value"], a["attribute"]
    listed = not isinstance(value, list | tuple)
    if listed:
        value = a["value"] = env.listed(value, "the join filter")
    limit = env.budget.built
    items = list(map(make_attrgetter(env, attribute), value)) if attribute is not None else value
    size = sum(weight(i, limit) for i in items) + len(str(a["d"])) * len(items)
    env.spend(size, "the join filter")
    return listed


def _check_batch(env: BudgetedSandbox, a: Mapping[str, Any]) -> None:
    count = a["linecount"] if "linecount" in a else a["slices"]
    fill = a["fill_with"]
    size = _as_int(count) * (weight(fill, env.budget.built) if fill is not None else 1)
    env.spend(size, "a batch or slice")


def _check_sum(env: BudgetedSandbox, a: dict[str, Any]) -> bool:
    """A sum of lists or strings copies the running total at every step: charge that
    (items x total size) before it runs. A sum of numbers is free."""
    value, start = a["iterable"], a["start"]
    if isinstance(start, int | float) and not isinstance(start, bool):
        return False
    listed = not isinstance(value, list | tuple)
    if listed:
        value = a["iterable"] = env.listed(value, "the sum filter")
    limit = env.budget.built
    total = weight(start, limit) + sum(weight(i, limit) for i in value)
    env.spend(total * max(len(value), 1), "the sum filter (it copies the total each step)")
    return listed


def _check_wordwrap(env: BudgetedSandbox, a: Mapping[str, Any]) -> None:
    text = a["s"] if isinstance(a["s"], str) else ""
    wrapstring = str(a["wrapstring"]) if a["wrapstring"] is not None else "\n"
    lines = len(text) // max(_as_int(a["width"]), 1) + 1
    env.spend(len(text) + lines * len(wrapstring), "the wordwrap filter")


def _check_tojson(env: BudgetedSandbox, a: Mapping[str, Any]) -> None:
    spaces = _as_int(a["indent"]) if a["indent"] is not None else 0
    env.spend(weight(a["value"], env.budget.built) * (1 + spaces), "the tojson filter")


_FILTER_CHECKS: dict[str, Callable[..., bool | None]] = {
    "center": _check_center,
    "indent": _check_indent,
    "format": _check_format,
    "replace": _check_replace,
    "join": _check_join,
    "batch": _check_batch,
    "slice": _check_batch,
    "sum": _check_sum,
    "wordwrap": _check_wordwrap,
    "tojson": _check_tojson,
}
