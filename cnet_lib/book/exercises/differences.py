"""Whether a function's value matches the expected one (:func:`values_close`: numbers, tensors, arrays, sequences,
mappings), a short text for a value (:func:`describe`), and where it differs (:func:`first_difference`), in words
a student can act on: the first element that differs, its index and both values (each written in full, so two different numbers never
print alike), a shape, dtype, length or type that differs, or the key of a mapping whose value differs.

The comparison is the checks' own (:func:`cnet_lib.book.exercises.framework.values_close`, and for exercises that
compare tensors exactly, their shape and dtype too); :class:`Difference` says it with or without the expected
value (the teacher's feedback on a hidden case shows where and what the function returned, never what was
expected).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

__all__ = ["Difference", "first_difference", "value_text", "values_close", "describe"]


def value_text(v: Any, limit: int = 120) -> str:
    """A value in full enough to tell it from any other: floats as Python writes them back exactly."""
    if isinstance(v, float):
        return repr(v)
    if hasattr(v, "detach") or (hasattr(v, "shape") and hasattr(v, "dtype") and hasattr(v, "tolist")):
        arr = v.detach().cpu() if hasattr(v, "detach") else v
        kind = "tensor" if hasattr(v, "detach") else "array"
        return f"a {kind} of shape {tuple(arr.shape)} and dtype {str(arr.dtype).replace('torch.', '')}"
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Difference:
    """The first place where got and expected differ: ``path`` (``""`` for the value itself, ``"[1]"``, a key of
    the value's mapping in words, ``"returned[0]"``, an index ``"at index (1, 0)"``), ``what`` differs (``"value"``, ``"shape"``, ``"dtype"``,
    ``"length"``, ``"type"``, ``"keys"``) and both sides in words."""

    path: str
    what: str
    got: str
    expected: str

    def words(self, show_expected: bool = True) -> str:
        where = f"{self.path}: " if self.path else ""
        if self.what == "value":
            return f"{where}expected {self.expected}, got {self.got}" if show_expected else f"{where}your value {self.got}"
        if show_expected:
            return f"{where}{self.what}: expected {self.expected}, got {self.got}"
        return f"{where}the {self.what} differs (yours: {self.got})"


def _is_array(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype") and hasattr(v, "tolist")


def describe(v: Any, limit: int = 80) -> str:
    """A short text for a value (tensors and arrays by shape and a few entries)."""
    if hasattr(v, "detach"):
        v = v.detach().cpu()
        text = f"tensor{tuple(v.shape)} {v.flatten()[:4].tolist()}"
    elif hasattr(v, "shape") and hasattr(v, "tolist"):
        text = f"array{tuple(v.shape)} {v.reshape(-1)[:4].tolist()}"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _to_numpy(v):
    if hasattr(v, "detach"):
        return v.detach().cpu().double().numpy()
    return v


def values_close(got: Any, expected: Any, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Whether ``got`` matches ``expected``: numbers, tensors, arrays, sequences, mappings."""
    if _is_array(expected) or _is_array(got):
        import numpy as np

        try:
            g = np.asarray(_to_numpy(got), dtype=float)
            e = np.asarray(_to_numpy(expected), dtype=float)
        except (TypeError, ValueError, RuntimeError):
            return False
        return g.shape == e.shape and bool(np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return got == expected
    if isinstance(expected, (int, float)):
        if isinstance(got, bool) or not isinstance(got, (int, float)) and not hasattr(got, "__float__"):
            return False
        g = float(got)
        return math.isclose(g, float(expected), rel_tol=rtol, abs_tol=atol) or (math.isnan(g) and math.isnan(expected))
    if isinstance(expected, Mapping):
        return (
            isinstance(got, Mapping)
            and set(got) == set(expected)
            and all(values_close(got[k], expected[k], rtol, atol) for k in expected)
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(values_close(g, e, rtol, atol) for g, e in zip(got, expected))
        )
    return got == expected


def _numbers_close(g: float, e: float, rtol: float, atol: float) -> bool:
    return math.isclose(g, e, rel_tol=rtol, abs_tol=atol) or (math.isnan(g) and math.isnan(e))


def _array_difference(got, expected, path: str, rtol: float, atol: float, exact: bool) -> Optional[Difference]:
    import numpy as np

    def plain(v):
        return v.detach().cpu().double().numpy() if hasattr(v, "detach") else np.asarray(v, dtype=float)

    if exact and hasattr(expected, "detach"):
        if not hasattr(got, "detach"):
            return Difference(path, "type", f"a {type(got).__name__}", "a tensor")
        if tuple(got.shape) != tuple(expected.shape):
            return Difference(path, "shape", str(tuple(got.shape)), str(tuple(expected.shape)))
        if got.dtype != expected.dtype:
            return Difference(path, "dtype", str(got.dtype).replace("torch.", ""), str(expected.dtype).replace("torch.", ""))
    try:
        g, e = plain(got), plain(expected)
    except (TypeError, ValueError, RuntimeError):
        return Difference(path, "type", f"a {type(got).__name__}", value_text(expected))
    if g.shape != e.shape:
        return Difference(path, "shape", str(tuple(g.shape)), str(tuple(e.shape)))
    bad = ~np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    at = f"{path} at index {index}" if path else f"at index {index}"
    return Difference(at, "value", repr(float(g[index])), repr(float(e[index])))


def _key_path(path: str, key) -> str:
    """The path to a mapping's ``key``: its name in words at the top (``rate evaluations``), ``[key]`` below."""
    return f"{path}[{key!r}]" if path else str(key).replace("_", " ")


def _mapping_difference(got, expected, path, rtol, atol, exact) -> Optional[Difference]:
    if not isinstance(got, Mapping):
        return Difference(path, "type", f"a {type(got).__name__}", "a mapping")
    if set(got) != set(expected):
        return Difference(path, "keys", str(sorted(map(str, got))), str(sorted(map(str, expected))))
    for k in expected:
        found = first_difference(got[k], expected[k], rtol, atol, exact, _key_path(path, k))
        if found is not None:
            return found
    return None


def _sequence_difference(got, expected, path, rtol, atol, exact) -> Optional[Difference]:
    if not isinstance(got, (list, tuple)):
        return Difference(path, "type", value_text(got), f"a {type(expected).__name__} of {len(expected)}")
    if len(got) != len(expected):
        return Difference(path, "length", str(len(got)), str(len(expected)))
    for i, (g, e) in enumerate(zip(got, expected)):
        found = first_difference(g, e, rtol, atol, exact, f"{path}[{i}]")
        if found is not None:
            return found
    return None


def first_difference(got: Any, expected: Any, rtol: float = 1e-6, atol: float = 1e-9, exact_tensors: bool = False,
                     path: str = "") -> Optional[Difference]:
    """The first place where ``got`` differs from ``expected`` under the checks' comparison (tolerances ``rtol``,
    ``atol``; ``exact_tensors``: a tensor must have the expected shape and dtype too), or None where they match."""
    if _is_array(expected) or _is_array(got):
        return _array_difference(got, expected, path, rtol, atol, exact_tensors)
    if isinstance(expected, Mapping):
        return _mapping_difference(got, expected, path, rtol, atol, exact_tensors)
    if isinstance(expected, (list, tuple)):
        return _sequence_difference(got, expected, path, rtol, atol, exact_tensors)
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(got, bool) or not isinstance(got, (int, float)) and not hasattr(got, "__float__"):
            return Difference(path, "type", value_text(got), f"a number ({type(expected).__name__})")
        g = float(got)
        return None if _numbers_close(g, float(expected), rtol, atol) else Difference(path, "value", value_text(got), value_text(expected))
    return None if got == expected else Difference(path, "value", value_text(got), value_text(expected))
