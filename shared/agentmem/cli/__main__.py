"""``python -m agentmem.cli``: the ``agentmem`` command without the console script."""

from agentmem.cli import main

raise SystemExit(main())
