"""Rates whose evaluations an exercise counts (an embedded pair takes s of them, not 2s), evaluated and counted in
the grading process, where the student's code cannot reach the counter.

:class:`CountedRates` takes a job's case recipes, keeps every counted rate (``{"$": "rate", ..., "counted":
true}``) here, built from its recipe, and sends the sandbox a stand-in instead (``{"$": "counted_rate", "ident",
"label"}``: :class:`cnet_lib.teacher.sandbox.CountedRate`), which has no copy of the function: each evaluation is
a request on the sandbox's rate socket, ``{"id", "t", "x"}``, that :meth:`CountedRates.answer` checks, counts and
answers with the value (or an error); every request is checked (its keys, its rate, a finite ``t``, a tensor
of at most 4 dimensions and at most a million elements, none of them empty) before anything of it is used, and a
request that fails any check is refused, never an error of the grading process.  The stand-in's label names no parameter of the rate (a drawn frequency or
gravity), so the student's code cannot rebuild it either.  :meth:`CountedRates.evaluations` is what the grade
compares with the reference's count.
"""
from __future__ import annotations

import json
import math
from typing import Optional

import torch

from ..book.exercises.recipes import Rate, build, decode, encode
from .result_schema import ResultError, check_value

__all__ = ["CountedRates", "MAX_REQUEST_BYTES", "MAX_EVALUATIONS"]

MAX_REQUEST_BYTES = 1 << 20
MAX_EVALUATIONS = 20_000
LABEL = "f (a rate the grader evaluates and counts)"


class CountedRates:
    """The counted rates of one job's cases (see the module doc); ``sent`` are the recipes the sandbox gets."""

    def __init__(self, recipes: list):
        self.rates: dict[int, Rate] = {}
        self.by_case: dict[int, int] = {}
        self.sent = [self._swap(i, r) for i, r in enumerate(recipes)]
        self.refused = 0

    def __bool__(self) -> bool:
        return bool(self.rates)

    def _swap(self, case: int, recipe: dict) -> dict:
        def swap(value):
            if isinstance(value, dict) and value.get("$") == "rate" and value.get("counted"):
                ident = len(self.rates)
                self.rates[ident] = build(value)
                self.by_case[case] = ident  # as recipes.observed: the counted rate of a case
                return {"$": "counted_rate", "ident": ident, "label": LABEL}
            return value

        return {**recipe, "args": [swap(a) for a in recipe.get("args", [])],
                "kwargs": {k: swap(v) for k, v in recipe.get("kwargs", {}).items()}}

    def evaluations(self, case: int) -> Optional[int]:
        """How often the sandbox evaluated case ``case``'s counted rate (None: the case has none)."""
        ident = self.by_case.get(case)
        return None if ident is None else self.rates[ident].calls

    def answer(self, line: bytes) -> bytes:
        """The reply (one JSON line) to one request line of the sandbox; never raises (a request the grader does
        not accept, however it fails, is answered with an error and counted as refused, not as an evaluation)."""
        try:
            ident, t, x = self._request(line)
        except Exception as err:  # noqa: BLE001 - any malformed request: refused, whatever it is
            self.refused += 1
            return (json.dumps({"error": f"a request the grader does not accept ({err})"[:300]}) + "\n").encode()
        rate = self.rates[ident]
        try:
            with torch.no_grad():
                value = rate(x) if t is None else rate(t, x)
            reply = {"value": encode(value)}
        except Exception as err:  # noqa: BLE001 - the student's state of a wrong shape: said, and counted
            reply = {"error": f"{type(err).__name__}: {err}"[:300]}
        return (json.dumps(reply) + "\n").encode()

    def _request(self, line: bytes) -> tuple:
        data = json.loads(line.decode("utf-8"))
        if not isinstance(data, dict) or set(data) != {"id", "t", "x"}:
            raise ResultError("a request is {id, t, x}")
        ident, t = data["id"], data["t"]
        if type(ident) is not int or ident not in self.rates:
            raise ResultError(f"no counted rate {str(ident)[:20]}")
        if t is not None and (type(t) not in (int, float) or not math.isfinite(float(t))):
            raise ResultError("t is not a finite number")
        if sum(r.calls for r in self.rates.values()) >= MAX_EVALUATIONS:
            raise ResultError(f"more than {MAX_EVALUATIONS} evaluations")
        check_value(data["x"], "x")
        if not isinstance(data["x"], dict) or data["x"].get("$") != "tensor":
            raise ResultError("x is not a tensor")
        if math.prod(data["x"]["shape"]) == 0 or len(data["x"]["shape"]) > 4:
            raise ResultError("x is an empty tensor or has more than 4 dimensions")
        x = decode(data["x"])
        if not x.is_floating_point():
            raise ResultError("x is not a floating-point tensor")
        return ident, t, x.to(torch.float64)
