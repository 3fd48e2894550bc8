"""Test helpers: the offline data copy beside the project, and the smoke preset's environment and settings.

CI and this project's machines keep a small CIFAR-10 copy in ``../shared/data`` beside the repository;
the library knows nothing of it (``scripts/setup.sh`` exports ``CNET_DATA_DIR`` for it).  Tests that run
chapters or command lines in a subprocess give them :func:`smoke_env`; tests that call the library get
:func:`smoke_settings`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional

from cnet_lib.runtime.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
"""The offline CIFAR-10 copy beside the project (5,000 training images), when there is one."""


def smoke_env(base: Optional[Mapping[str, str]] = None) -> dict:
    """An environment for running the book in CI: ``base`` (default ``os.environ``) with
    ``CNET_PRESET=smoke`` and, unless one is set, ``CNET_DATA_DIR`` naming :data:`SHARED_DATA` when it exists."""
    env = dict(os.environ if base is None else base)
    env["CNET_PRESET"] = "smoke"
    if not env.get("CNET_DATA_DIR") and SHARED_DATA.is_dir():
        env["CNET_DATA_DIR"] = str(SHARED_DATA)
    return env


def smoke_settings(**changes) -> Settings:
    """The smoke preset's settings on the CPU, from :func:`smoke_env` (the environment's data folder or the
    shared copy), with ``changes`` (``runs_dir=...``, ``data_dir=...``) applied."""
    base = Settings.from_environment(smoke_env(), device="cpu")
    return base.replace(**changes)
