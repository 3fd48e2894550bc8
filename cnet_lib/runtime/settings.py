"""The session's settings, chosen once and passed down: :class:`Settings`.

A chapter's setup cell (:func:`cnet_lib.book.setup`, ``ctx.settings``) or a command line's ``main``
builds one, and hands it (or the values it holds) to the functions that need them.  Nothing else in
the library reads the environment: :meth:`Settings.from_environment` is the one place that does
(``tests/test_settings.py`` checks the package's source for any other).

==========================  ===========================================================  ====================
setting                     environment variable                                         without it
==========================  ===========================================================  ====================
``preset``                  ``CNET_PRESET`` (smoke, cpu, gpu, paper)                      ``gpu`` with CUDA, else ``cpu``
``device``                  ``CNET_DEVICE`` (``cpu``, ``cuda``, ``cuda:1``)                CUDA when available, else the CPU
``data_dir``                ``CNET_DATA_DIR`` (the folder that *contains* the data sets)  ``~/.cache/cnet_lib/data``
``runs_dir``                ``CNET_RUNS_DIR`` (trained image models, shared by chapters)   ``~/.cache/cnet_lib/runs``
``threads``                 ``CNET_THREADS`` (CPU threads per training step or sweep)      chosen from the work
``cuda_graphs``             ``CNET_CUDA_GRAPHS=0`` turns CUDA graphs off                    on (CUDA only)
``cifar10_url`` / ``_md5``  ``CNET_CIFAR10_URL`` / ``CNET_CIFAR10_MD5`` (a mirror)          the published archive
``cifar100_url`` / ``_md5`` ``CNET_CIFAR100_URL`` / ``CNET_CIFAR100_MD5``                   the published archive
``launch``                  ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``  one process
                            (set by ``torchrun``; :mod:`cnet_lib.runtime.distributed`)
==========================  ===========================================================  ====================

``Settings()`` has these defaults and reads nothing; every value is checked when a Settings is built,
and a bad environment variable is named in the message.

Also here: the run-size presets' names, one check of a name and a study's table looked up by it (:data:`PRESETS`,
:func:`preset_name`, :func:`select_preset`).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, TypeVar, Union

import torch

from .device import default_device, resolve_device

__all__ = ["Settings", "ENVIRONMENT", "LAUNCH_VARIABLES", "DATASET_MIRRORS", "default_preset", "default_data_dir",
           "default_runs_dir", "check_mirror", "EXTRAS", "require_extra", "PRESETS", "preset_name", "select_preset"]


# Run-size presets: the four names, one check of a name, and a study's table looked up by it.
#
# ``smoke`` (CI: seconds), ``cpu`` (the default without a GPU: a chapter in minutes on 2 cores),
# ``gpu`` (the default with CUDA: a chapter in <= 30 min on a T4-class GPU), ``paper`` (the paper's
# scale on the schedule of the authors' published command lines).  Which one a session runs is a setting (:class:`cnet_lib.runtime.settings.Settings`,
# ``ctx.preset`` in a chapter); each study keeps its own table of what a preset means for it.

PRESETS = ("smoke", "cpu", "gpu", "paper")
T = TypeVar("T")


def preset_name(name: str) -> str:
    """``name`` stripped and lower-cased, after checking that it is one of :data:`PRESETS` (a
    ValueError names the valid ones otherwise)."""
    if not isinstance(name, str):
        raise TypeError(f"preset must be a name, one of {', '.join(PRESETS)}; got {name!r} (e.g. preset='smoke')")
    key = name.strip().lower()
    if key not in PRESETS:
        raise ValueError(f"unknown preset {key!r}; choose one of {', '.join(PRESETS)} (e.g. CNET_PRESET=smoke)")
    return key


def select_preset(table: Mapping[str, T], preset: str) -> T:
    """The entry of a study's preset ``table`` for ``preset`` (``ctx.preset`` in a chapter); the
    table must define all four presets."""
    key = preset_name(preset)
    missing = [p for p in PRESETS if p not in table]
    if missing:
        raise KeyError(f"preset table lacks {missing}; every study defines all of {PRESETS}")
    return table[key]


# ---------------------------------------------------------------------- the module's own part (its docstring above)

EXTRAS = {
    "book": ("plotly", "ipywidgets", "nbformat", "scipy", "torchdiffeq"),
}
"""The packages each extra of ``pip install "cnet-lib[extra]"`` brings that a part of the library imports
(``pyproject.toml`` lists them with their versions; ``tests/test_install.py`` checks that both agree).  The core
install (torch, numpy, tqdm, filelock) is enough for ``import cnet_lib`` and every name it exports."""


def require_extra(part: str, extra: str = "book") -> None:
    """Raise an ImportError that says ``pip install "cnet-lib[<extra>]"`` when a package of :data:`EXTRAS`
    ``[extra]`` is not installed; called where ``part`` (a package of the library, e.g. ``cnet_lib.book``) starts,
    before it imports them."""
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"{part} needs the packages of the {extra}'s install, and {', '.join(missing)} "
                          f"{'is' if len(missing) == 1 else 'are'} not installed: pip install \"cnet-lib[{extra}]\" "
                          "(the core install, pip install cnet-lib, has the library's numerics, models, data, "
                          "checkpoints and settings)")

ENVIRONMENT = {
    "preset": "CNET_PRESET", "device": "CNET_DEVICE", "data_dir": "CNET_DATA_DIR", "runs_dir": "CNET_RUNS_DIR",
    "threads": "CNET_THREADS", "cuda_graphs": "CNET_CUDA_GRAPHS", "cifar10_url": "CNET_CIFAR10_URL",
    "cifar10_md5": "CNET_CIFAR10_MD5", "cifar100_url": "CNET_CIFAR100_URL", "cifar100_md5": "CNET_CIFAR100_MD5",
}
"""Each setting and the environment variable :meth:`Settings.from_environment` reads it from."""

LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
"""What ``torchrun`` tells each process it starts (:attr:`Settings.launch`; :mod:`cnet_lib.runtime.distributed`)."""

DATASET_MIRRORS = ("cifar10", "cifar100")
"""The data sets whose download source is a setting (``<name>_url``, ``<name>_md5``)."""

_OFF = ("0", "false", "off", "no")


def default_preset() -> str:
    """``gpu`` where CUDA is available, else ``cpu``."""
    return "gpu" if torch.cuda.is_available() else "cpu"


def default_data_dir() -> Path:
    """``~/.cache/cnet_lib/data``: where data sets are downloaded when no folder is chosen."""
    return Path.home() / ".cache" / "cnet_lib" / "data"


def default_runs_dir() -> Path:
    """``~/.cache/cnet_lib/runs``: where trained image models are kept when no folder is chosen."""
    return Path.home() / ".cache" / "cnet_lib" / "runs"


def check_mirror(dataset: str, url: Optional[str], md5: Optional[str], published: str = "") -> tuple:
    """``(url, md5)`` of a download mirror of ``dataset`` after checking them: an MD5 needs a URL (the
    published archive is always checked against its published MD5) and is 32 hexadecimal digits
    (returned in lower case); either may be ``None``."""
    url_env, md5_env = ENVIRONMENT[f"{dataset}_url"], ENVIRONMENT[f"{dataset}_md5"]
    url, md5 = url or None, md5 or None
    if md5 is not None and url is None:
        archive = f" {published}" if published else ""
        raise ValueError(
            f"{md5_env} (or md5=) only applies together with {url_env} (or url=): the published archive{archive} "
            f"is always checked against its published MD5. Unset {md5_env}, or set {url_env} to the URL of the "
            "archive whose MD5 it is.")
    if md5 is not None and not (len(md5) == 32 and all(ch in "0123456789abcdef" for ch in md5.lower())):
        raise ValueError(f"{md5_env} must be 32 hexadecimal digits (the output of md5sum), got {md5!r}")
    return url, (md5.lower() if md5 else None)


@dataclass(frozen=True)
class Settings:
    """What a session runs with (see the module docstring for each field, its environment variable
    and its default).  Frozen: derive another with :meth:`replace`."""

    preset: str = field(default_factory=default_preset)
    device: torch.device = field(default_factory=default_device)
    data_dir: Path = field(default_factory=default_data_dir)
    runs_dir: Path = field(default_factory=default_runs_dir)
    threads: Optional[int] = None
    cuda_graphs: bool = True
    cifar10_url: Optional[str] = None
    cifar10_md5: Optional[str] = None
    cifar100_url: Optional[str] = None
    cifar100_md5: Optional[str] = None
    launch: tuple = ()  # torchrun's (variable, value) pairs of LAUNCH_VARIABLES; () for a process started alone

    def __post_init__(self) -> None:
        """Normalise and check every field (paths expanded, the device as a tensor reports it)."""
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        put("preset", preset_name(self.preset))
        put("device", resolve_device(self.device))
        put("data_dir", Path(self.data_dir).expanduser())
        put("runs_dir", Path(self.runs_dir).expanduser())
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int)
                                         or self.threads < 1):
            raise ValueError(f"threads must be an integer >= 1 or None, got {self.threads!r} (e.g. threads=1)")
        if not isinstance(self.cuda_graphs, bool):
            raise TypeError(f"cuda_graphs must be True or False, got {self.cuda_graphs!r}")
        launch = dict(self.launch)
        if set(launch) - set(LAUNCH_VARIABLES):
            raise ValueError(f"launch holds torchrun's variables {LAUNCH_VARIABLES} only, got {sorted(launch)}")
        put("launch", tuple((var, str(launch[var])) for var in LAUNCH_VARIABLES if var in launch))
        for dataset in DATASET_MIRRORS:
            url, md5 = check_mirror(dataset, getattr(self, f"{dataset}_url"), getattr(self, f"{dataset}_md5"))
            put(f"{dataset}_url", url)
            put(f"{dataset}_md5", md5)

    @classmethod
    def from_environment(cls, environ: Optional[Mapping[str, str]] = None, **flags) -> "Settings":
        """The settings the environment (``os.environ``, or ``environ``) chooses, each unset or empty
        variable left at its default; ``flags`` (a command line's options) then override them, those
        given as ``None`` excepted.  A variable that cannot be read is named in the error."""
        env = os.environ if environ is None else environ
        values: dict = {}
        for name, var in ENVIRONMENT.items():
            raw = (env.get(var) or "").strip()
            if raw:
                values[name] = _parse(name, var, raw)
        values["launch"] = tuple((var, env[var].strip()) for var in LAUNCH_VARIABLES if (env.get(var) or "").strip())
        settings = cls(**values)
        return settings.replace(**flags)

    def replace(self, **changes) -> "Settings":
        """A copy with ``changes`` applied (a change given as ``None`` keeps the current value)."""
        given = {k: v for k, v in changes.items() if v is not None}
        return dataclasses.replace(self, **given) if given else self

    def download_source(self, dataset: str) -> dict:
        """``{"url": ..., "md5": ...}`` of the mirror chosen for ``dataset`` (``None``: the published
        archive), as keyword arguments for :func:`cnet_lib.images.data.download.ensure_dataset`."""
        if dataset not in DATASET_MIRRORS:
            return {"url": None, "md5": None}
        return {"url": getattr(self, f"{dataset}_url"), "md5": getattr(self, f"{dataset}_md5")}

    def __str__(self) -> str:
        return (f"preset={self.preset} device={self.device} data_dir={self.data_dir} runs_dir={self.runs_dir} "
                f"threads={self.threads or 'auto'} cuda_graphs={self.cuda_graphs}")


def _parse(name: str, var: str, raw: str) -> Union[str, int, bool, Path, torch.device]:
    """The value of environment variable ``var`` for setting ``name``."""
    if name == "threads":
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"{var}={raw!r} must be a positive integer (e.g. {var}=1)")
        return value
    if name == "cuda_graphs":
        return raw.lower() not in _OFF
    if name == "device":
        try:
            return resolve_device(raw)
        except (RuntimeError, ValueError) as err:
            raise RuntimeError(f"{var}={raw!r}: {err}; unset it to use the default device") from None
    if name in ("data_dir", "runs_dir"):
        return Path(raw)
    return raw
