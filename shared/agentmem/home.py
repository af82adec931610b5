"""Where agentmem keeps its embedded data by default."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["default_home"]


def default_home() -> Path:
    """``$AGENTMEM_HOME`` if set, else the per-user data directory.

    Linux: ``$XDG_DATA_HOME/agentmem`` (``~/.local/share/agentmem``); macOS:
    ``~/Library/Application Support/agentmem``; Windows: ``%LOCALAPPDATA%\\agentmem``.

    Example:
        >>> import os
        >>> os.environ["AGENTMEM_HOME"] = "/tmp/am"
        >>> str(default_home())
        '/tmp/am'
        >>> del os.environ["AGENTMEM_HOME"]
    """
    if env := os.environ.get("AGENTMEM_HOME"):
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "agentmem"
