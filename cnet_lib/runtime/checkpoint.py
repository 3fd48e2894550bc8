"""Checkpoints: plain state_dicts plus a small config, written atomically, read with ``weights_only``.

A checkpoint file holds ``{"format", "config", "model", "extra"}``: ``model`` is a state_dict,
``config`` a small dict of plain values that a reader compares against what it expects, and
``extra`` anything else made of tensors and plain containers (optimizer state, RNG states,
history).  A checkpoint may store its model's floating-point tensors in half precision
(``weights="float16"`` or ``"bfloat16"``, then also a ``"weights"`` entry naming it: half the bytes, as the
book ships its larger models); :func:`load_checkpoint` gives them back as float32, so a reader never sees
the difference but in the rounding.  Writing goes to a temporary file in the same directory and is moved into place with
:func:`os.replace`, so an interruption never leaves a half-written checkpoint.  A temporary file is
named ``.<name>.<pid>-<host>.<random>.tmp`` after the process that writes it, and
:func:`remove_stale_temporaries` removes only those of this process or of a process that has ended
on this host: never another process's unfinished file.

A model is saved and loaded with one pair of functions, :func:`save_model` and :func:`load_model`: the file
holds the state dict and :meth:`ContinuousNet.config() <cnet_lib.core.models.ContinuousNet.config>`, which
rebuilds the same computation (scheme, N_t, basis, M, adaptive options), so the loaded model computes what the
saved one did.  :func:`load_model` reads the book's own checkpoints too (a training run's ``checkpoint.pt`` and
the models that ship with the book).

Also here: JSON caches that survive damage (:func:`read_cache`, :func:`write_cache`).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import re
import shutil
import stat
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Union

import torch

from ..core.models import ContinuousNet
from .device import resolve_device
from .files import NO_SPACE, REFUSED, process_tag, set_aside, write_problem, written_by_a_gone_process
from .records import DamagedRecord, kind_of, load_json

__all__ = ["CheckpointError", "CheckpointMismatchError", "CheckpointSaveError", "WEIGHTS", "save_checkpoint",
           "load_checkpoint", "rounded_weights", "describe_checkpoint_file", "config_diff", "atomic_write_text",
           "atomic_copy", "file_digest", "remove_stale_temporaries", "save_model", "load_model",
           "model_from_checkpoint", "plain", "read_cache", "keyed", "write_cache"]


FORMAT = 1
WEIGHTS = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
"""How a checkpoint may store its model's floating-point tensors (``save_checkpoint(..., weights=...)``); they are
always loaded as float32."""
PathLike = Union[str, os.PathLike]
TMP_SUFFIX = ".tmp"


class CheckpointError(ValueError):
    """A file that cannot be used as a checkpoint: truncated, damaged, or not one at all."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint was written for another configuration."""


class CheckpointSaveError(OSError):
    """Writing a checkpoint (or results file) failed; the previous file at that path is intact.

    ``what`` is the sentence's first part (what could not be written, why, what is left) and ``where`` the
    folder; the message adds what to do, which :meth:`advised` words for another caller (a chapter)."""

    what: str = ""
    where: str = ""

    def __str__(self) -> str:  # the sentence alone, without "[Errno 28]"
        return self.strerror or super().__str__()

    def advised(self, room: str, then: str) -> "CheckpointSaveError":
        """The same failure with other advice: ``room`` (where else to write) and ``then`` (how to go on)."""
        return _save_error(self.errno, self.what, self.where, room, then)


def _save_error(number: Optional[int], what: str, where: str, room: str = "choose another output folder",
                then: str = "run again (with resume=True, --resume, to continue a training)") -> CheckpointSaveError:
    if number in NO_SPACE:
        advice = f"Free some disk space on the disk holding {where} (or {room} on a disk with room)"
    elif number in REFUSED:
        advice = f"Fix the folder's permissions (or {room} that you can write to)"
    else:
        advice = f"Check the folder {where} (free space, permissions), or {room}"
    err = CheckpointSaveError(number, f"{what}. {advice}, then {then}")
    err.what, err.where = what, where
    return err


def _atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, moved into place by ``os.replace``: a
    failure or an interruption at any point leaves the previous file at ``path`` as it was, and
    no temporary file behind.  A failed write raises :class:`CheckpointSaveError`, whose message
    says what could not be written, why (a full disk, no permission, ...) and what to do."""
    try:
        try:
            _write_then_replace(path, write)
        except RuntimeError as err:
            failed = _failed_write(err, path.parent)
            if failed is None:
                raise
            raise failed from err
    except OSError as err:
        before = "the previous file there is intact" if path.exists() else "nothing was written there"
        what = f"could not write {path} ({write_problem(err)}); {before}"
        raise _save_error(err.errno, what, str(path.parent)) from err


_WRITER_FAULT = ("inline_container", "PytorchStreamWriter", "unexpected pos")
"""Words of torch's own error when its zip writer could not write (torch.save raises a RuntimeError then)."""
FULL_BELOW = 1 << 20
"""Free bytes under which a write that torch's writer saw cut short is put down to a full disk."""


def _failed_write(err: RuntimeError, folder: Path) -> Optional[OSError]:
    """The write failure behind ``err``, torch's error when its zip writer could not write (``[enforce fail at
    inline_container.cc:...] unexpected pos ...``): the :class:`OSError` it was raised while handling (a full
    disk raises ENOSPC first), else ENOSPC when the folder's disk has (almost) no room left, else EIO; ``None``
    when ``err`` is no write failure."""
    seen, steps = err, 0
    while seen is not None and steps < 20:
        if isinstance(seen, OSError):
            return OSError(seen.errno, seen.strerror)
        seen, steps = seen.__cause__ or seen.__context__, steps + 1
    if not any(word in str(err) for word in _WRITER_FAULT):
        return None
    try:
        st = os.statvfs(folder)
        full = st.f_bavail * st.f_frsize < FULL_BELOW
    except (OSError, AttributeError):
        full = False
    if full:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return OSError(errno.EIO, f"the write was cut short ({str(err).splitlines()[0][:100]})")


def _write_then_replace(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{process_tag()}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            umask = os.umask(0)
            os.umask(umask)
            # mkstemp creates 0600; give the file ordinary permissions, through its descriptor (the name could be
            # swapped for a link meanwhile in a folder others can write)
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), 0o666 & ~umask)
            else:
                os.chmod(tmp, 0o666 & ~umask)
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


def remove_stale_temporaries(folder: PathLike, names: Iterable[str]) -> list[Path]:
    """Remove the temporary files that writes of ``names`` in ``folder`` left behind when their
    process was killed (SIGKILL, power loss): only those of this process or of a process that has
    ended on this host.  Another live process's file, one from another host, or one of another
    naming is left alone.  Returns the files removed."""
    removed = []
    for name in names:
        prefix = f".{name}."
        for tmp in Path(folder).glob(f".{name}.*{TMP_SUFFIX}"):
            tag = tmp.name[len(prefix):-len(TMP_SUFFIX)].rsplit(".", 1)[0]
            if written_by_a_gone_process(tag):
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
    return removed


def _why(err: Exception) -> str:
    """What torch's weights-only unpickler refused, in a sentence of our own (never its advice to load the
    file with ``weights_only=False``, which would run whatever code the file names)."""
    text = str(err)
    named = re.search(r"GLOBAL ([\w.]+)", text)
    if named:
        return (f"it asks for {named.group(1)} while being read, which no checkpoint of cnet_lib does (it could run "
                "code)")
    after = text.split("WeightsUnpickler error:", 1)[-1]
    detail = next((ln.strip() for ln in after.splitlines() if ln.strip()), "unknown")
    detail = re.split(r"(?<=\.)\s|\s*Please\b|\s*Check\b", detail, maxsplit=1)[0].rstrip(".")
    return f"it holds something other than tensors and plain containers ({detail[:120]})"


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same directory + os.replace)."""
    _atomic_write(Path(path), lambda f: f.write(text.encode("utf-8")))


def atomic_copy(src: PathLike, dst: PathLike) -> None:
    """Copy the file ``src`` to ``dst`` atomically (temporary file beside ``dst`` + os.replace): a
    reader of ``dst`` sees the old file or the whole new one, never a part."""
    with open(src, "rb") as f_src:
        _atomic_write(Path(dst), lambda f: shutil.copyfileobj(f_src, f, 1 << 20))


def _plain(value: Any) -> Any:
    """Config values as JSON would see them (tuples -> lists), so saved and expected compare equal."""
    return json.loads(json.dumps(value))


def _weights_dtype(weights: str) -> torch.dtype:
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r} is not a way to store a checkpoint's weights; choose one of "
                         f"{', '.join(WEIGHTS)} (e.g. weights='float16', half the bytes)")
    return WEIGHTS[weights]


def rounded_weights(model_state: Mapping[str, Any], weights: str) -> dict:
    """``model_state`` with every floating-point tensor rounded to ``weights`` (a name of :data:`WEIGHTS`) and
    moved to the CPU, the others (counters) as they are: what :func:`save_checkpoint` stores.  A value beyond
    float16's range (65504) raises a ValueError that names the tensor and says to store bfloat16 instead."""
    dtype = _weights_dtype(weights)
    out = {}
    for name, t in model_state.items():
        if torch.is_tensor(t) and t.is_floating_point():
            t = t.detach()
            if dtype == torch.float16 and bool((torch.isfinite(t) & (t.abs() > 65504)).any()):
                raise ValueError(f"the tensor {name} holds values beyond float16's range (|x| > 65504): store the "
                                 "weights as bfloat16 (weights='bfloat16') or float32")
            t = t.to("cpu", dtype)
        out[name] = t
    return out


def save_checkpoint(path: PathLike, model_state: Mapping[str, Any], config: Mapping[str, Any],
                    extra: Optional[Mapping[str, Any]] = None, weights: str = "float32") -> Path:
    """Write ``{"format", "config", "model", "extra"}`` to ``path`` atomically; returns the path.

    ``config`` must be JSON-serialisable (it is what :func:`load_checkpoint` compares).  ``weights`` says how
    the model's floating-point tensors are stored: ``"float32"`` (as they are), or ``"float16"`` / ``"bfloat16"``
    (rounded, :func:`rounded_weights`: half the bytes; the file then says so, and :func:`load_checkpoint` gives
    them back as float32).
    """
    path = Path(path)
    dtype = _weights_dtype(weights)
    try:
        config = _plain(dict(config))
    except TypeError as err:
        raise TypeError(f"checkpoint config must hold plain values (numbers, strings, lists, dicts): {err}") from None
    model = dict(model_state) if dtype == torch.float32 else rounded_weights(model_state, weights)
    payload = {"format": FORMAT, "config": config, "model": model, "extra": dict(extra or {})}
    if dtype != torch.float32:
        payload["weights"] = weights
    _atomic_write(path, lambda f: torch.save(payload, f))
    return path


def _as_float32(path: Path, ck: dict, todo: str) -> None:
    """The model of a checkpoint stored in half precision, given back as float32 in place; a file whose tensors
    are not what its ``weights`` entry says raises :class:`CheckpointError`."""
    stored = ck.get("weights", "float32")
    if not isinstance(stored, str) or stored not in WEIGHTS:
        raise CheckpointError(f"{path} stores its weights as {str(stored)[:40]!r}, which this version of cnet_lib "
                              f"cannot read (it reads {', '.join(WEIGHTS)}): update cnet_lib, or use a checkpoint "
                              "that python -m cnet_lib train or ship wrote")
    if stored == "float32" or not isinstance(ck["model"], dict):
        return
    dtype = WEIGHTS[stored]
    for name, t in ck["model"].items():
        if torch.is_tensor(t) and t.is_floating_point():
            if t.dtype != dtype:
                raise CheckpointError(f"{path} says its weights are stored as {stored}, but its tensor {str(name)[:60]} "
                                      f"is {str(t.dtype).replace('torch.', '')}: it was not written by cnet_lib's "
                                      f"save_checkpoint. {todo}.")
            ck["model"][name] = t.float()


def config_diff(saved: Mapping[str, Any], expected: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{field: (saved, expected)}`` for every field that differs (missing fields are ``None``)."""
    saved, expected = _plain(dict(saved)), _plain(dict(expected))
    keys = sorted(set(saved) | set(expected))
    return {k: (saved.get(k), expected.get(k)) for k in keys if saved.get(k) != expected.get(k)}


def describe_checkpoint_file(path: PathLike) -> Optional[str]:
    """Why ``path`` cannot be a checkpoint, judged from its bytes (``None`` when it looks like a
    complete PyTorch zip file): empty, truncated or damaged, or another kind of file."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe or a device never blocks
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"{path} is {kind_of(st.st_mode)}, not a checkpoint file"
        size = st.st_size
        head = f.read(16)
    if size == 0:
        return f"{path} is empty (0 bytes): it was never written completely"
    if head.startswith(b"PK\x03\x04"):
        if not zipfile.is_zipfile(path):
            return f"{path} is truncated or damaged ({size} bytes of a zip archive without its end): it was cut off"
        try:
            with zipfile.ZipFile(path) as z:
                bad = z.testzip()  # reads every member and checks its CRC
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            return f"{path} is damaged ({err})"
        if bad is not None:
            return f"{path} is damaged (its member {bad} fails its checksum)"
        return None
    if head[:1] == b"\x80":
        return f"{path} is a plain Python pickle, not a checkpoint written by cnet_lib (a PyTorch zip archive)"
    return f"{path} is not a checkpoint (not a PyTorch zip archive; it begins with {head!r})"


def load_checkpoint(path: PathLike, expected_config: Optional[Mapping[str, Any]] = None,
                    map_location: Union[str, torch.device] = "cpu") -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (``torch.load(weights_only=True)``); a model stored in
    half precision comes back as float32 (``ck["weights"]`` still says how it was stored).

    With ``expected_config``, every field is compared and a :class:`CheckpointMismatchError`
    names the fields that differ and how to fix it.  An empty, truncated, damaged or foreign file
    raises a :class:`CheckpointError` whose message says what the file is and what to do.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}; train first (python -m cnet_lib train ...) or fix the path")
    todo = "Delete it or move it aside, then train again (or point to another copy of the checkpoint)"
    problem = describe_checkpoint_file(path)
    if problem:
        raise CheckpointError(f"{problem}. {todo}.")
    if isinstance(map_location, (str, torch.device)):
        map_location = resolve_device(map_location)  # torch.load cannot restore to an indexed "cpu:0"
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            ck = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        raise CheckpointError(
            f"{path} was not loaded: {_why(err)}, so it was not written by cnet_lib's save_checkpoint. {todo}."
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, KeyError) as err:
        raise CheckpointError(f"{path} is damaged ({type(err).__name__}: {str(err).splitlines()[0][:120]}). {todo}.") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT or "model" not in ck:
        raise CheckpointError(f"{path} is a PyTorch file but not a cnet_lib checkpoint (format {FORMAT}: it was not "
                              "written by save_checkpoint); use a checkpoint.pt that python -m cnet_lib train wrote")
    _as_float32(path, ck, todo)
    if expected_config is not None:
        diff = config_diff(ck["config"], expected_config)
        if diff:
            lines = "; ".join(f"{k}: checkpoint has {a!r}, this run has {b!r}" for k, (a, b) in diff.items())
            raise CheckpointMismatchError(
                f"checkpoint {path} was written for another configuration ({lines}): load it with the configuration "
                "it was written for, or use a checkpoint of this one"
            )
    return ck


def file_digest(path: PathLike, algorithm: str = "sha256") -> str:
    """The hex digest of a file's bytes (``algorithm``: any name :func:`hashlib.new` knows), read in
    1 MiB chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- models
def save_model(model: ContinuousNet, path: PathLike, extra: Optional[Mapping[str, Any]] = None,
               weights: str = "float32") -> Path:
    """Save ``model`` to ``path`` so that :func:`load_model` rebuilds the same computation: its state dict and
    its :meth:`~cnet_lib.core.models.ContinuousNet.config` (scheme, N_t, basis, M, adaptive options, per
    block), written atomically (an interruption leaves the previous file whole).  ``extra``: anything else to
    keep with it, made of tensors and plain containers (an optimizer's ``state_dict()``, a history); it comes
    back as ``load_model(path, with_checkpoint=True)[1]["extra"]``.  ``weights="float16"`` or ``"bfloat16"``
    stores the floating-point tensors in half precision (half the bytes, loaded back as float32).  Returns the
    path.

    Example::

        save_model(model, "model.pt", extra={"optimizer": optimizer.state_dict()})
        model = load_model("model.pt")
    """
    if not isinstance(model, ContinuousNet):
        raise TypeError(f"save_model saves a ContinuousNet (it rebuilds it from its config()), got "
                        f"{type(model).__name__}: for another module, save_checkpoint(path, module.state_dict(), "
                        "config) with the config you need to rebuild it")
    config = model.config()
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    kept = {"model_config": config, "manifestation": [list(m) for m in model.manifestation],
            "dtype": str(dtype).replace("torch.", ""), **dict(extra or {})}
    return save_checkpoint(path, model.state_dict(), config, extra=kept, weights=weights)


def model_from_checkpoint(ck: Mapping[str, Any], path: PathLike = "the checkpoint") -> ContinuousNet:
    """The ContinuousNet of a checkpoint that :func:`load_checkpoint` read: built from its configuration
    (``extra["model_config"]``, as :func:`save_model` and the book's training write it, or the file's
    ``config`` when that describes a ContinuousNet), put in its saved manifestation, its weights loaded, on the
    device the checkpoint was read to, in eval mode."""
    extra = ck.get("extra") or {}
    config = extra.get("model_config")
    if config is None and isinstance(ck.get("config"), dict) and "channels" in ck["config"]:
        config = ck["config"]
    if config is None:
        raise CheckpointError(f"{path} holds no model configuration (a ContinuousNet's config()), so the model it "
                              "holds cannot be rebuilt: save models with cnet_lib.save_model(model, path)")
    try:
        model = ContinuousNet(**config)
    except TypeError as err:
        raise CheckpointError(f"{path} was written for another version of cnet_lib: its model configuration has "
                              f"fields this one does not know ({err}); update cnet_lib") from None
    manifestation = extra.get("manifestation")
    if manifestation is not None:
        for block, (scheme, n_steps) in zip(model.blocks, manifestation):
            if block.tolerances is None:
                block.manifest(scheme, n_steps)
    elif "scheme" not in config:
        warnings.warn(f"{path} does not say which scheme and N_t its model ran with (its config() was saved by an "
                      "older cnet_lib): it is loaded with the defaults, Euler and N_t = M; call "
                      "model.manifest(scheme, n_steps) with those it was trained with", stacklevel=3)
    tensors = [t for t in ck["model"].values() if torch.is_tensor(t) and t.is_floating_point()]
    saved = extra.get("dtype")
    dtype = getattr(torch, saved) if saved in ("float32", "float64", "float16", "bfloat16") else (
        torch.float64 if tensors and tensors[0].dtype == torch.float64 else torch.float32)
    model.to(device=tensors[0].device if tensors else "cpu", dtype=dtype)
    model.load_state_dict(ck["model"])
    return model.eval()


def load_model(path: PathLike, map_location: Union[str, torch.device, None] = "cpu",
               with_checkpoint: bool = False):
    """The model that :func:`save_model` saved at ``path`` (or a checkpoint of the book's: a training run's
    ``checkpoint.pt`` or its folder, a model shipped with the book), rebuilt from its configuration in the
    manifestation it was saved in, on ``map_location`` (``None``: the session's default device), in eval
    mode; with ``with_checkpoint=True`` the pair ``(model, checkpoint)``, whose ``"extra"`` holds what was
    saved with it.  Read with ``torch.load(weights_only=True)``: a file that asks to run code is refused.  A
    missing, damaged or foreign file raises an error that says what it is and what to do."""
    path = Path(path)
    if path.is_dir():
        path = path / "checkpoint.pt"
    ck = load_checkpoint(path, map_location=resolve_device(map_location))
    model = model_from_checkpoint(ck, path)
    return (model, ck) if with_checkpoint else model


# JSON caches that survive damage: read when whole and current, rebuilt otherwise, kept when unwritable.
#
# A cache (a sweep, a robustness study, the θ snapshots of a run) is a JSON file computed from
# something else.  :func:`read_cache` returns it only when it parses and passes its check (for a
# keyed cache: it records the very key it was computed from); a file that is cut off, not JSON, nested
# too deeply, too large, of an older format, or not a file at all (a link, a pipe, a folder: read
# without following or blocking, :func:`cnet_lib.runtime.records.load_json`) is renamed
# ``<name>.damaged-<time>`` (kept, never deleted), one sentence says so, and the caller computes it
# again.  :func:`write_cache` writes atomically; when the folder refuses (read-only, full disk) one
# sentence says that the results are used for this session only, and nothing computed is lost.

def _print(text: str) -> None:
    print(text, flush=True)


def plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples become lists): what a cached key is compared with."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def keyed(key: Mapping, *fields: str) -> Callable[[Any], Optional[str]]:
    """A check for :func:`read_cache`: the cache is a dict whose ``"key"`` is ``key`` and which has
    every one of ``fields``."""
    want = plain(dict(key))

    def check(obj: Any) -> Optional[str]:
        if not isinstance(obj, dict):
            return f"it holds a {type(obj).__name__}, not a cache"
        if plain(obj.get("key")) != want:
            return "it was computed from something else, or by an older version (its key differs)"
        missing = [f for f in fields if f not in obj]
        return f"it lacks {', '.join(missing)} (an older format)" if missing else None

    return check


def read_cache(path: PathLike, what: str, check: Callable[[Any], Optional[str]],
               say: Callable[[str], None] = _print) -> Optional[Any]:
    """The parsed JSON at ``path`` when it is whole and ``check(obj)`` finds nothing wrong (returns
    ``None``); ``None`` when there is no file.  A damaged or older-format file is set aside
    (``<name>.damaged-<time>``) with one sentence through ``say`` naming ``what`` and the file, and
    ``None`` is returned, so that the caller computes it again."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        obj = load_json(path)
        problem = check(obj)
    except DamagedRecord as err:
        problem = str(err)
    except OSError as err:
        problem = f"it cannot be read ({err.strerror or err})"
    except RecursionError:
        problem = "it is nested too deeply to be read (no file of this library is)"
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as err:
        problem = f"it is not in the expected format ({type(err).__name__}: {str(err)[:80]})"
    if problem is None:
        return obj
    try:
        aside = set_aside(path)
        where = f"it was moved to {aside.name} (kept) and is computed again"
    except OSError as err:
        where = f"it cannot be moved aside ({write_problem(err)}), so it is computed again for this session only"
    say(f"{what}: {path} cannot be used: {problem}; {where}.")
    return None


def write_cache(path: PathLike, text: str, what: str, say: Callable[[str], None] = _print) -> bool:
    """Write ``text`` to ``path`` atomically; True when written.  When the folder refuses (read-only,
    no permission, a full disk) one sentence through ``say`` says so and what to do, and False is
    returned: the caller keeps its results for this session."""
    try:
        atomic_write_text(path, text)
        return True
    except CheckpointSaveError as err:
        say(f"{what}: could not be saved in {path} ({write_problem(err)}), so it is used for this session only and "
            "computed again next time; to keep it, set CNET_RUNS_DIR to a folder you can write to (or free some "
            "space).")
        return False
