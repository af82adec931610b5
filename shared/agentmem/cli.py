"""The ``agentmem`` command line.

``agentmem demo`` runs a scripted conversation offline on the embedded defaults (a SQLite
session store under ``AGENTMEM_HOME``) and shows how each short-term tier budgets it.

Example:
    $ AGENTMEM_HOME=/tmp/agentmem agentmem demo --max-tokens 120
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from agentmem.home import default_home
from agentmem.short_term import (
    ConversationBufferMemory,
    ShortTermMemory,
    SlidingWindowMemory,
    SummaryBufferMemory,
)
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.tokens import TokenCounter
from agentmem.types import Message, ToolCall

__all__ = ["main"]

_CONVERSATION: list[tuple[str, str]] = [
    ("user", "Hi! I only write Python, and I indent with tabs, not spaces."),
    ("assistant", "Noted: Python, tabs for indentation."),
    ("user", "I'm planning a trip to Oslo next week. What's the weather like?"),
    ("user", "Also remind me: my daughter's birthday is on 14 March."),
    ("assistant", "I'll keep 14 March in mind. Anything else for the trip?"),
    ("user", "我也会说一点中文。请用简短的句子回答。"),
    ("assistant", "好的，我会用简短的句子回答。"),
    ("user", "Write a snippet that reads a CSV file and prints the first row."),
    ("assistant", "import csv\nwith open('data.csv') as f:\n\tprint(next(csv.reader(f)))"),
    ("user", "Thanks. Which language and indentation did I ask for earlier?"),
]


def _script() -> list[Message]:
    messages = [Message(role="system", content="You are a concise coding assistant.")]
    for role, text in _CONVERSATION[:3]:
        messages.append(Message(role=role, content=text))  # type: ignore[arg-type]
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Oslo"}')
    messages.append(Message(role="assistant", content="", tool_calls=(call,)))
    messages.append(
        Message(role="tool", content='{"forecast": "4°C, rain"}', tool_call_id="call_1")
    )
    messages.append(Message(role="assistant", content="Expect about 4°C and rain in Oslo."))
    for role, text in _CONVERSATION[3:]:
        messages.append(Message(role=role, content=text))  # type: ignore[arg-type]
    return messages


def _summarizer() -> object | None:
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        return None
    from agentmem.llm_openai import OpenAIChatModel

    return OpenAIChatModel(model=os.environ.get("AGENTMEM_MODEL", "gpt-4o-mini"))


def _demo(args: argparse.Namespace) -> int:
    home = Path(args.home) if args.home else default_home()
    home.mkdir(parents=True, exist_ok=True)
    store = SQLiteSessionStore(home / "sessions.db")
    counter = TokenCounter(model=args.model)
    session = f"demo-{uuid.uuid4().hex[:8]}"
    llm = _summarizer()
    out = sys.stdout
    out.write(f"agentmem demo — home: {home}, model: {args.model} ({counter.encoding_name})\n")
    if llm is None:
        out.write(
            "No LLM configured (set OPENAI_API_KEY or OPENAI_BASE_URL to use one): the summary "
            "tier falls back to a window, and nothing is lost.\n"
        )
    tiers: list[tuple[str, ShortTermMemory]] = [
        (
            "buffer",
            ConversationBufferMemory(
                max_tokens=args.max_tokens, **_common(store, counter, session, "buffer")
            ),
        ),
        (
            "window",
            SlidingWindowMemory(window_size=4, **_common(store, counter, session, "window")),
        ),
        (
            "summary",
            SummaryBufferMemory(
                llm, max_tokens=args.max_tokens, **_common(store, counter, session, "summary")
            ),
        ),  # type: ignore[arg-type]
    ]
    script = _script()
    for _, memory in tiers:
        memory.add_messages(script)
    full = counter.count_messages(script)
    out.write(
        f"\nConversation: {len(script)} messages, {full} tokens in full; "
        f"budget {args.max_tokens}.\n"
    )
    for name, memory in tiers:
        view = memory.get_view()
        out.write(
            f"\n== {name}: {len(view.messages)} messages, {view.token_count} tokens, "
            f"{view.omitted} left out of the view, {len(memory.get_all_messages())} in the log\n"
        )
        for message in view.messages:
            text = message.content.replace("\n", " ")
            calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            out.write(f"  {message.role:>9}: {text[:70]}{' → ' + calls if calls else ''}\n")
    store.close()
    return 0


def _common(
    store: SQLiteSessionStore, counter: TokenCounter, session: str, tier: str
) -> dict[str, object]:
    return {"store": store, "token_counter": counter, "session_id": f"{session}-{tier}"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentmem`` command."""
    parser = argparse.ArgumentParser(prog="agentmem", description="Tiered memory for LLM agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a scripted conversation offline and show each tier")
    demo.add_argument("--home", help="data directory (default: $AGENTMEM_HOME or per-user dir)")
    demo.add_argument("--model", default="gpt-4o", help="model whose tokenizer to count with")
    demo.add_argument("--max-tokens", type=int, default=160, help="token budget of the views")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
