"""Students' names as people write them, and the files named after them.

A student is named by their submission's file or folder name, exactly as the file system gives it: any script,
any length a file system allows, any bytes (a name that is not UTF-8, such as the ``Jos\\xe9`` that unzipping
"José" can give, arrives as a string with the bytes it could not decode escaped, :pep:`383`).  From it:

* :func:`printable` is the name (or any text holding it) as a spreadsheet and a markdown file can show it: the
  undecodable bytes written ``\\xe9``, control characters as ``\\n`` and the like;
* :func:`file_key` is the stem of the student's feedback file and the key the gradebook's ``--resume`` matches,
  one per name and never the same for two names: a plain name (lower-case ASCII letters, digits, ``_ - .``, up
  to 64 characters) is its own key; any other is its readable part (letters and digits of any script, up to 60
  bytes of UTF-8) followed by ``~`` and 16 hex digits of the SHA-256 of the name's exact bytes, so that Иван and
  王伟, José and Josè, "bob smith" and "bob_smith", Alice and alice (on a file system that ignores case) all get
  files of their own, and no key is longer than 80 bytes.  ``~`` never appears in a plain name.
"""
from __future__ import annotations

import hashlib
import os
import re
import unicodedata

__all__ = ["printable", "file_key", "name_bytes"]

_PLAIN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_READABLE_BYTES = 60


def name_bytes(name: str) -> bytes:
    """The exact bytes of a name read from the file system (undecodable bytes as they were)."""
    try:
        return os.fsencode(name)
    except UnicodeError:  # a surrogate no file system name decodes to (from a notebook's text)
        return name.encode("utf-8", errors="surrogatepass")


def printable(text: str) -> str:
    """``text`` as valid, visible Unicode (see the module doc)."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte the file system's name could not decode
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF or unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape", errors="backslashreplace").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _readable(name: str) -> str:
    kept = "".join(ch if (ch.isalnum() or ch in "-_.") and not 0xDC80 <= ord(ch) <= 0xDCFF else "_" for ch in name)
    kept = re.sub(r"_+", "_", kept).strip("._") or "student"
    data = kept.encode("utf-8")[:_READABLE_BYTES]
    return data.decode("utf-8", errors="ignore")


def file_key(name: str) -> str:
    """The stem of ``name``'s feedback file and its key in the gradebook (see the module doc)."""
    if _PLAIN.fullmatch(name):
        return name
    return f"{_readable(name)}~{hashlib.sha256(name_bytes(name)).hexdigest()[:16]}"
