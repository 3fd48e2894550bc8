"""Checkpoints: plain state_dicts plus a small config, written atomically, read with ``weights_only``.

A checkpoint file holds ``{"format", "config", "model", "extra"}``: ``model`` is a state_dict,
``config`` a small dict of plain values that a reader compares against what it expects, and
``extra`` anything else made of tensors and plain containers (optimizer state, RNG states,
history).  Writing goes to a temporary file in the same directory and is moved into place with
:func:`os.replace`, so an interruption never leaves a half-written checkpoint.
"""
from __future__ import annotations

import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import torch

__all__ = ["CheckpointMismatchError", "save_checkpoint", "load_checkpoint", "config_diff", "atomic_write_text"]

FORMAT = 1
PathLike = Union[str, os.PathLike]


class CheckpointMismatchError(ValueError):
    """The checkpoint was written for another configuration."""


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file ordinary permissions
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _why(err: Exception) -> str:
    lines = [ln.strip() for ln in str(err).splitlines() if "WeightsUnpickler error" in ln]
    return (lines[0] if lines else str(err).splitlines()[0])[:300]


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same directory + os.replace)."""
    _atomic_write(Path(path), lambda f: f.write(text.encode("utf-8")))


def _plain(value: Any) -> Any:
    """Config values as JSON would see them (tuples -> lists), so saved and expected compare equal."""
    return json.loads(json.dumps(value))


def save_checkpoint(path: PathLike, model_state: Mapping[str, Any], config: Mapping[str, Any],
                    extra: Optional[Mapping[str, Any]] = None) -> Path:
    """Write ``{"format", "config", "model", "extra"}`` to ``path`` atomically; returns the path.

    ``config`` must be JSON-serialisable (it is what :func:`load_checkpoint` compares).
    """
    path = Path(path)
    try:
        config = _plain(dict(config))
    except TypeError as err:
        raise TypeError(f"checkpoint config must hold plain values (numbers, strings, lists, dicts): {err}") from None
    payload = {"format": FORMAT, "config": config, "model": dict(model_state), "extra": dict(extra or {})}
    _atomic_write(path, lambda f: torch.save(payload, f))
    return path


def config_diff(saved: Mapping[str, Any], expected: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{field: (saved, expected)}`` for every field that differs (missing fields are ``None``)."""
    saved, expected = _plain(dict(saved)), _plain(dict(expected))
    keys = sorted(set(saved) | set(expected))
    return {k: (saved.get(k), expected.get(k)) for k in keys if saved.get(k) != expected.get(k)}


def load_checkpoint(path: PathLike, expected_config: Optional[Mapping[str, Any]] = None,
                    map_location: Union[str, torch.device] = "cpu") -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (``torch.load(weights_only=True)``).

    With ``expected_config``, every field is compared and a :class:`CheckpointMismatchError`
    names the fields that differ and how to fix it.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; train first (python -m cnet_lib.train ...) or fix the path")
    try:
        ck = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        raise ValueError(
            f"{path} cannot be read with weights_only=True (it holds objects other than tensors and plain "
            f"containers: {_why(err)}); it was not written by cnet_lib.save_checkpoint, "
            "or by an older version: retrain, or re-save its state_dicts with save_checkpoint"
        ) from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT or "model" not in ck:
        raise ValueError(f"{path} is not a cnet_lib checkpoint (format {FORMAT}); it was not written by save_checkpoint")
    if expected_config is not None:
        diff = config_diff(ck["config"], expected_config)
        if diff:
            lines = "; ".join(f"{k}: checkpoint has {a!r}, this run has {b!r}" for k, (a, b) in diff.items())
            raise CheckpointMismatchError(
                f"checkpoint {path} was written for another configuration ({lines}). Run with the "
                "checkpoint's settings to continue it, or use another output directory (or drop "
                "--resume / delete the checkpoint) to start a new run."
            )
    return ck
