"""Exercise checks for the book's chapters (one module per chapter, the framework in :mod:`.core`).

Each chapter's check is ``check_<function name>(student_fn) -> bool``; it prints ``✅ pass`` or
``❌ fail`` with a hint.  Importing this package has no side effects.
"""
from .core import Case, check, describe, values_close
from .how_to_use import check_observed_order, reference_observed_order

__all__ = ["Case", "check", "describe", "values_close", "check_observed_order", "reference_observed_order"]
