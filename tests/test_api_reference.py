"""The API reference (issue 52, item 2): the book's page ``book/api.md`` documents every name of ``cnet_lib.__all__``
with its signature and docstring (Sphinx autodoc, enabled in ``_config.yml``), grouped as a reader looks for them; no
public method or property of a public class is left without a docstring of the library's own (before: 17 were, and
``get_extra_state`` showed torch's generic text).  The book's build with ``-W`` (``tests/test_book_build.py``) renders
the page; a docstring that is not valid reStructuredText fails it."""
from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path

import yaml

import cnet_lib

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "api.md"
GROUPS = ["Schemes and integration", "Adaptive steps", "Bases", "OdeBlock", "ContinuousNet", "Data", "Checkpoints",
          "Settings"]


def test_the_page_documents_every_public_name_once_in_its_group():
    text = PAGE.read_text(encoding="utf-8")
    documented = re.findall(r"(?m)^\.\. auto(?:class|function|exception|data):: cnet_lib\.(\w+)$", text)
    assert sorted(documented) == sorted(cnet_lib.__all__), set(documented) ^ set(cnet_lib.__all__)
    assert re.findall(r"(?m)^## (.+)$", text) == GROUPS
    for section in re.split(r"(?m)^## ", text)[1:]:
        table = re.search(r"\.\. autosummary::\n   :nosignatures:\n\n((?:   \w+\n)+)", section).group(1).split()
        assert table == re.findall(r"(?m)^\.\. auto\w+:: cnet_lib\.(\w+)$", section), "each table lists its group"
    classes = re.findall(r"(?m)^\.\. autoclass:: cnet_lib\.(\w+)\n   :members:", text)
    assert sorted(classes) == sorted(n for n in cnet_lib.__all__ if inspect.isclass(getattr(cnet_lib, n))
                                     and not issubclass(getattr(cnet_lib, n), BaseException))


def test_the_page_is_in_the_reference_part_and_autodoc_is_on():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    reference = next(p for p in toc["parts"] if p["caption"] == "Reference")
    assert {"file": "book/api"} in reference["chapters"]
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["sphinx"]
    assert {"sphinx.ext.autodoc", "sphinx.ext.autosummary"} <= set(config["extra_extensions"])


def _own_doc(cls: type, name: str):
    """The docstring of ``cls.name`` from the library's own classes (never torch's generic text)."""
    for base in cls.__mro__:
        if base.__module__.startswith("cnet_lib") and name in base.__dict__:
            obj = base.__dict__[name]
            obj = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
            if (getattr(obj, "__doc__", None) or "").strip():
                return obj.__doc__
    return None


def undocumented() -> list[str]:
    """Every public name of ``cnet_lib.__all__``, and every public method and property of its classes defined in
    the library, without a docstring of its own (or of the library's class it overrides)."""
    missing = []
    for name in cnet_lib.__all__:
        obj = getattr(cnet_lib, name)
        if not inspect.isclass(obj):
            if callable(obj) and not (obj.__doc__ or "").strip():
                missing.append(name)
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        for cls in obj.__mro__:
            if not cls.__module__.startswith("cnet_lib"):
                continue
            for attr, value in cls.__dict__.items():
                value = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                if attr.startswith("_") or not (inspect.isfunction(value) or
                                                isinstance(value, (property, functools.cached_property))):
                    continue
                if not _own_doc(obj, attr):
                    missing.append(f"{name}.{attr}")
    return sorted(set(missing))


def test_every_public_method_and_property_has_a_docstring():
    assert undocumented() == []


def test_the_check_sees_a_missing_docstring():
    import torch

    class Probe(torch.nn.Module):
        """A public class with undocumented members."""

        def speed(self):
            return 1

        @property
        def depth(self):
            return 2

        def get_extra_state(self):  # torch's generic docstring does not count
            return {}

    Probe.__module__ = cnet_lib.core.__name__  # as if the library defined it
    cnet_lib.__all__.append("Probe")
    setattr(cnet_lib, "Probe", Probe)
    try:
        assert undocumented() == ["Probe.depth", "Probe.get_extra_state", "Probe.speed"]
    finally:
        cnet_lib.__all__.remove("Probe")
        delattr(cnet_lib, "Probe")
