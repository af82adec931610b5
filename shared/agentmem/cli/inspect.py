"""``agentmem inspect``: the web inspector of a home, until interrupted (private).

The command opens the home's stores as a :class:`~agentmem.MemoryService` does (so a home
another process holds is refused with :class:`~agentmem.errors.StoreLockedError`), with
the embedding model deferred until a search needs it, and serves
:meth:`~agentmem.MemoryService.serve_inspector`. Its first line on stdout is the URL with
the token; it opens that URL in a browser unless ``--no-browser``.
"""

from __future__ import annotations

import argparse
import webbrowser
from typing import TextIO

from agentmem.cli import common
from agentmem.errors import InvalidValueError

__all__ = ["inspect_command"]


def inspect_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem inspect [--home H] [--port P] [--no-browser] [--allow-edits]``."""
    from agentmem.service import MemoryService

    config = common.resolve_config(args)
    common.check_home(config)
    if not 0 <= args.port <= 65535:
        msg = f"--port must be from 0 to 65535 (0: any free port), got {args.port}"
        raise InvalidValueError(msg)
    user = common.check_session(args.user, "--user")
    if config.memory_path is not None and not config.memory_path.is_dir():
        msg = (
            f"no memories in {config.describe_memories()} yet: store some with `agentmem ingest "
            "FILE --user U` (or run `agentmem demo`), or pass the --home that holds them"
        )
        raise InvalidValueError(msg)
    service = MemoryService.open(
        config.home, embedder=common.deferred_embedder(), **config.as_options()
    )
    try:
        server = service.serve_inspector(args.host, args.port, allow_edits=args.allow_edits)
        url = server.url if user is None else f"{server.origin}/u/{user}?token={server.token}"
        out.write(url + "\n")
        out.flush()
        mode = "edits allowed" if args.allow_edits else "read-only"
        err.write(f"Serving {config.home} ({mode}); press Ctrl-C to stop.\n")
        err.flush()
        if not args.no_browser:
            webbrowser.open(url)
        server.wait()
    finally:
        service.close()
    return 0
