"""What may come out of a sandbox, checked strictly before the grading process uses any of it.

A sandbox has one way out: the pipe its runner (:mod:`.sandbox`) writes to.  The grading process reads at most
:data:`MAX_RESULT_BYTES` from it (:mod:`.sandbox_client`) and accepts exactly two JSON lines: ``{"started":
true}`` and the result.  :func:`parse_result` checks the result against the schema below, field by field, and
raises :class:`ResultError` for anything else (an unknown key, a wrong type, a string or a list too long, a value
nested too deep, a tensor whose data do not fill its shape, more elements than the grader decodes):

* ``{"kind": "cases", "cases": [case, ...], "failed_imports": [str], "output": str}`` with one case per case
  asked for, each ``{"value": value}`` or ``{"error": str, "where": str}``;
* ``{"kind": "cell_error", "error": str, "where": str, "failed_imports": [str], "output": str}``;
* ``{"kind": "not_done", "output": str}``;

each may hold ``"second_copies": [str]`` (code files run as a module under another name, :class:`.sandbox.LoadWatch`).

A ``value`` is what :func:`cnet_lib.book.exercises.recipes.encode` writes: JSON scalars, or ``{"$": "tensor" |
"array", "dtype", "shape", "data"}``, ``{"$": "list" | "tuple", "items": [...]}``, ``{"$": "dict", "items":
{str: value}}``, ``{"$": "unsupported", "type": str}``.
"""
from __future__ import annotations

import json
import math

from ..book.exercises.recipes import DTYPES, MAX_ELEMENTS

__all__ = ["ResultError", "parse_channel", "parse_result", "MAX_RESULT_BYTES", "STARTED"]

MAX_RESULT_BYTES = 32 * 2**20
MAX_TEXT = 8000
MAX_DEPTH = 32
STARTED = b'{"started": true}\n'


class ResultError(ValueError):
    """The sandbox's output is not a result of the schema; the message says what is wrong."""


def _text(value, where: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise ResultError(f"{where} is not a string of at most {limit} characters")
    return value


def _keys(data, allowed: set, required: set, where: str) -> dict:
    if not isinstance(data, dict) or not required <= set(data) <= allowed:
        raise ResultError(f"{where} must have the keys {sorted(required)} (and may have {sorted(allowed - required)})")
    return data


def _number(x) -> bool:
    return type(x) in (float, bool) or (type(x) is int and -2**63 <= x < 2**64)


def _check_array(data: dict, where: str, budget: list) -> None:
    _keys(data, {"$", "dtype", "shape", "data"}, {"$", "dtype", "shape", "data"}, where)
    if data["dtype"] not in DTYPES:
        raise ResultError(f"{where}: dtype {str(data['dtype'])[:40]!r} is not one of {', '.join(DTYPES)}")
    shape, flat = data["shape"], data["data"]
    if not isinstance(shape, list) or len(shape) > MAX_DEPTH or not all(type(n) is int and 0 <= n <= MAX_ELEMENTS
                                                                           for n in shape):
        raise ResultError(f"{where}: the shape is not a list of at most {MAX_DEPTH} sizes of at most {MAX_ELEMENTS}")
    if not isinstance(flat, list) or math.prod(shape) != len(flat) or not all(_number(x) for x in flat):
        raise ResultError(f"{where}: the data are not {math.prod(shape)} numbers")
    budget[0] -= len(flat)


def check_value(value, where: str = "value", depth: int = 0, budget: list = None) -> None:
    """Raise ResultError unless ``value`` is an encoded value (see the module doc)."""
    budget = [MAX_ELEMENTS] if budget is None else budget
    if depth > MAX_DEPTH:
        raise ResultError(f"{where} is nested deeper than {MAX_DEPTH}")
    if value is None or _number(value):
        return
    if isinstance(value, str):
        _text(value, where)
        return
    if not isinstance(value, dict) or value.get("$") not in ("tensor", "array", "list", "tuple", "dict", "unsupported"):
        raise ResultError(f"{where} is not an encoded value")
    kind = value["$"]
    if kind in ("tensor", "array"):
        _check_array(value, where, budget)
    elif kind == "unsupported":
        _text(_keys(value, {"$", "type"}, {"$", "type"}, where)["type"], where, 200)
    else:
        items = _keys(value, {"$", "items"}, {"$", "items"}, where)["items"]
        if not isinstance(items, dict if kind == "dict" else list):
            raise ResultError(f"{where}: the items of a {kind} are not a {'dict' if kind == 'dict' else 'list'}")
        budget[0] -= len(items)
        for key, item in (items.items() if kind == "dict" else enumerate(items)):
            if kind == "dict":
                _text(key, f"{where}: a key", 200)
            check_value(item, f"{where}[{key!r}]", depth + 1, budget)
    if budget[0] < 0:
        raise ResultError(f"{where} holds more than {MAX_ELEMENTS} elements")


def _check_case(case, i: int) -> None:
    if isinstance(case, dict) and set(case) == {"value"}:
        check_value(case["value"], f"case {i + 1}")
        return
    _keys(case, {"error", "where"}, {"error", "where"}, f"case {i + 1}")
    _text(case["error"], f"case {i + 1}'s error")
    _text(case["where"], f"case {i + 1}'s line")


def parse_result(line: bytes, n_cases: int) -> dict:
    """The result in ``line`` (one JSON line), checked against the schema for ``n_cases`` cases."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ResultError(f"the result is not JSON ({type(err).__name__})") from None
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "cases":
        _keys(data, {"kind", "cases", "failed_imports", "output", "second_copies"},
              {"kind", "cases", "failed_imports", "output"}, "result")
        if not isinstance(data["cases"], list) or len(data["cases"]) != n_cases:
            raise ResultError(f"the result holds other cases than the {n_cases} asked for")
        for i, case in enumerate(data["cases"]):
            _check_case(case, i)
    elif kind == "cell_error":
        _keys(data, {"kind", "error", "where", "failed_imports", "output", "second_copies"},
              {"kind", "error", "where", "failed_imports", "output"}, "result")
        _text(data["error"], "the cell's error")
        _text(data["where"], "the cell's line")
    elif kind == "not_done":
        _keys(data, {"kind", "output", "second_copies"}, {"kind", "output"}, "result")
    else:
        raise ResultError("the result has no known kind")
    for field, limit in (("failed_imports", 200), ("second_copies", 20)):
        if not isinstance(data.get(field, []), list) or len(data.get(field, [])) > limit:
            raise ResultError(f"{field} is not a short list")
        for item in data.get(field, []):
            _text(item, f"an item of {field}")
    _text(data["output"], "the output")
    return data


def parse_channel(data: bytes, n_cases: int) -> dict:
    """The result from everything the sandbox wrote to its pipe: exactly :data:`STARTED` and one result line."""
    if not data.startswith(STARTED):
        raise ResultError("the sandbox did not start the student's code" if not data else
                          "the pipe carried something before the start line")
    rest = data[len(STARTED):]
    if not rest:
        raise ResultError("no result came back")
    if rest.count(b"\n") != 1 or not rest.endswith(b"\n"):
        raise ResultError("the pipe carried more (or less) than one result line")
    return parse_result(rest[:-1], n_cases)
