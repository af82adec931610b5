"""Turn pydantic validation errors into one readable line (private helper)."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["describe"]


def describe(exc: ValidationError, what: str) -> str:
    """``"invalid <what>: field: problem; ..."`` from a pydantic ``ValidationError``."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or what
        parts.append(f"{where}: {str(err['msg']).removeprefix('Value error, ')}")
    return f"invalid {what}: " + "; ".join(parts)
