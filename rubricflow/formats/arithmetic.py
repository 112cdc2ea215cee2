"""Safe arithmetic for OpenAI `multi` graders' `calculate_output`: numbers, grader names,
`+ - * /`, `^` (power, as OpenAI writes it; `**` too), parentheses and the functions
`min max abs floor ceil exp sqrt log`. Nothing else.

The formula is parsed with Python's `ast` and every node checked against that list; it is
never passed to `eval`, and evaluating it walks the checked tree with floats only (so no
huge integers), with a bounded length and power.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["FUNCTIONS", "FormulaError", "check_formula", "evaluate_formula"]

MAX_FORMULA_LENGTH = 1_000
MAX_EXPONENT = 64.0


class FormulaError(ValueError):
    """A formula that is not plain arithmetic over the known names, or cannot be computed."""


FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)),
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
_ARITY = {"abs": 1, "floor": 1, "ceil": 1, "exp": 1, "sqrt": 1, "log": 1}
_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Pow: "^",
}


def _parse(formula: str) -> ast.expr:
    if not isinstance(formula, str) or not formula.strip():
        raise FormulaError("calculate_output must be a formula, such as 0.5 * a + 0.5 * b")
    if len(formula) > MAX_FORMULA_LENGTH:
        raise FormulaError(f"calculate_output is over {MAX_FORMULA_LENGTH} characters")
    try:
        # OpenAI's `^` is a power, binding tighter than * and /: Python's `**`
        return ast.parse(formula.strip().replace("^", "**"), mode="eval").body
    except (SyntaxError, RecursionError, ValueError) as error:
        raise FormulaError(f"calculate_output {formula!r} does not parse: {error}") from None


def check_formula(formula: str, names: Iterable[str]) -> ast.expr:
    """The formula's checked tree; `FormulaError` names the first thing not allowed."""
    tree = _parse(formula)
    known = set(names)
    try:
        callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        for node in ast.walk(tree):
            _allowed(node, known, callees)
    except RecursionError:
        raise FormulaError("calculate_output is nested too deeply") from None
    return tree


def _allowed(node: ast.AST, known: set[str], callees: set[int]) -> None:
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise FormulaError(f"operator {type(node.op).__name__} is not arithmetic allowed here")
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.UAdd | ast.USub):
            raise FormulaError(f"operator {type(node.op).__name__} is not allowed")
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise FormulaError(f"{node.value!r} is not a number")
    elif isinstance(node, ast.Name):
        if id(node) not in callees:  # a called name is _allowed_call's to check
            _allowed_name(node.id, known)
    elif isinstance(node, ast.Call):
        _allowed_call(node)
    elif not isinstance(node, ast.operator | ast.unaryop | ast.expr_context):
        raise FormulaError(
            f"{type(node).__name__} is not arithmetic; only + - * / ^ and "
            f"{', '.join(FUNCTIONS)} are allowed"
        )


def _allowed_name(name: str, known: set[str]) -> None:
    if name in known:
        return
    if name in FUNCTIONS:
        raise FormulaError(f"{name} is a function: call it, as in {name}(a)")
    graders = ", ".join(sorted(known))
    raise FormulaError(f"{name!r} is not a grader of this multi grader ({graders})")


def _allowed_call(node: ast.Call) -> None:
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        raise FormulaError(f"only the functions {', '.join(FUNCTIONS)} may be called")
    if node.keywords or not node.args:
        raise FormulaError(f"{node.func.id}() takes numbers, without keywords")
    arity = _ARITY.get(node.func.id)
    if arity is not None and len(node.args) != arity:
        raise FormulaError(f"{node.func.id}() takes {arity} argument")


def evaluate_formula(tree: ast.expr, values: Mapping[str, float]) -> float:
    """The value of a tree `check_formula` returned, with `values` for the names."""
    try:
        result = _value(tree, values)
    except (ZeroDivisionError, OverflowError, ValueError) as error:
        raise FormulaError(f"calculate_output cannot be computed: {error}") from None
    if not math.isfinite(result):
        raise FormulaError("calculate_output is not a finite number")
    return result


def _value(node: ast.expr, values: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int | float):
            raise FormulaError(f"{node.value!r} is not a number")
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise FormulaError(f"{node.id!r} has no value")
        return float(values[node.id])
    if isinstance(node, ast.UnaryOp):
        inner = _value(node.operand, values)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        return _binary(
            _BINARY[type(node.op)], _value(node.left, values), _value(node.right, values)
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args: list[Any] = [_value(arg, values) for arg in node.args]
        return float(FUNCTIONS[node.func.id](*args))
    raise FormulaError(f"{type(node).__name__} was not checked")  # check_formula refuses it


def _binary(op: str, left: float, right: float) -> float:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        return left / right
    if abs(right) > MAX_EXPONENT:
        raise ValueError(f"an exponent of {right:g} is over {MAX_EXPONENT:g}")
    return math.pow(left, right)
