"""The synthetic conversation of ``bench/short_term.py``, its conversions to LangChain and
LlamaIndex message types, and the independent ChatML reference count.

Example:
    >>> [m.role for m in build_conversation(3)]
    ['system', 'user', 'assistant']
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import tiktoken

from agentmem import Message, ToolCall

__all__ = [
    "build_conversation",
    "from_langchain",
    "from_llamaindex",
    "langchain_counter",
    "to_langchain",
    "to_llamaindex",
]

# --------------------------------------------------------------------------------------
# The synthetic conversation
# --------------------------------------------------------------------------------------

_WORDS = (  # noqa: SIM905 (a word list reads better as text)
    "the a to of and in is it you that for on with as this be are not can we if your was "
    "but or have from by will one all would there their what so up out about which when "
    "make like time just know take people into year good some could them see other than "
    "then now look only come its over think also back after use two how our work first "
    "well way even new want because any these give day most us python function list dict "
    "database query index token memory agent cache server latency deploy docker config "
    "error test retry timeout request response budget window summary context vector "
    "embedding search ranking user session message history prompt model schema field "
    "value default option release version upgrade migration backup Tuesday Friday March "
    "Berlin Tokyo Oslo customer invoice order payment refund shipping weather flight "
    "hotel"
).split()
_CJK = (
    "我们明天早上九点在会议室讨论这个问题。",
    "请帮我把这段代码改成异步版本。",
    "这个接口的响应时间太长了，需要优化。",
    "好的，我已经记下来了。",
    "用户更喜欢简短的回答，不要太多解释。",
    "东京下周的天气怎么样？",
    "数据库迁移已经完成，没有发现错误。",
    "你能解释一下向量检索的原理吗？",
    "谢谢！这很有帮助。",
    "了解しました。次の手順を確認します。",
    "会议改到星期五下午三点。",
    "订单号是 48213，请帮我查一下物流状态。",
)
_CODE = (
    "```python\ndef fetch(url: str) -> dict:\n    resp = client.get(url, timeout=5)\n"
    "    resp.raise_for_status()\n    return resp.json()\n```",
    "```sql\nSELECT user_id, count(*) AS n\nFROM orders\nWHERE created_at > now() - "
    "interval '7 days'\nGROUP BY user_id\nORDER BY n DESC\nLIMIT 10;\n```",
    "```bash\ndocker compose up -d\ndocker compose logs -f api | grep -i error\n```",
)
_TOOLS = ("get_weather", "search_docs", "lookup_order", "run_sql")
_CITIES = ("Oslo", "Berlin", "Tokyo", "東京", "北京", "São Paulo")
_NAMES = ("alice", "bob_42")
_SYSTEM = (
    "You are a helpful assistant for an engineering team. Answer concisely, cite the "
    "documents you used, and ask before running anything that changes data."
)


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    if rng.random() < 0.15:
        text += f" {rng.randint(2, 99_999)}"
    return text[:1].upper() + text[1:] + rng.choice(".?!.")


def _text(rng: random.Random, words: int) -> str:
    if rng.random() < 0.04:  # a message entirely in Chinese / Japanese
        return "".join(rng.choice(_CJK) for _ in range(rng.randint(1, 4)))
    parts: list[str] = []
    while words > 0:
        n = min(words, rng.randint(5, 18))
        parts.append(_sentence(rng, n))
        words -= n
        if rng.random() < 0.06:
            parts.append(rng.choice(_CJK))
    sep = "\n- " if rng.random() < 0.1 else " "
    return sep.join(parts)


def _user(rng: random.Random, i: int) -> Message:
    name = rng.choice(_NAMES) if rng.random() < 0.1 else None
    return Message(role="user", content=_text(rng, rng.randint(4, 60)), name=name, id=f"m{i}")


def _assistant(rng: random.Random, i: int) -> Message:
    words = min(300, max(8, int(rng.lognormvariate(4.0, 0.7))))
    content = _text(rng, words)
    if rng.random() < 0.1:
        content += "\n\n" + rng.choice(_CODE)
    return Message(role="assistant", content=content, id=f"m{i}")


def _tool_round(rng: random.Random, i: int) -> list[Message]:
    calls = []
    for k in range(rng.randint(1, 2)):
        tool = rng.choice(_TOOLS)
        args: dict[str, object] = {"query": _sentence(rng, rng.randint(2, 8))}
        if tool == "get_weather":
            args = {"city": rng.choice(_CITIES), "days": rng.randint(1, 7)}
        # Plain json.dumps text round-trips through LangChain's parsed ``args`` unchanged.
        calls.append(
            ToolCall(id=f"call_{i}_{k}", name=tool, arguments=json.dumps(args, ensure_ascii=False))
        )
    out = [
        _user(rng, i),
        Message(
            role="assistant",
            content="" if rng.random() < 0.6 else "Let me check.",
            tool_calls=tuple(calls),
            id=f"m{i + 1}",
        ),
    ]
    for k, call in enumerate(calls):
        result = {"ok": True, "items": [_sentence(rng, rng.randint(3, 12)) for _ in range(3)]}
        out.append(
            Message(
                role="tool",
                content=json.dumps(result, ensure_ascii=False),
                tool_call_id=call.id,
                id=f"m{i + 2 + k}",
            )
        )
    out.append(_assistant(rng, i + 2 + len(calls)))
    return out


def build_conversation(n: int, *, seed: int = 0) -> list[Message]:
    """A deterministic ``n``-message chat: a system prompt, then user/assistant rounds.

    About 7% of the rounds call tools (an assistant message with 1-2 calls, their results
    and a final answer); no message contains special-token text such as ``<|``.

    Example:
        >>> [m.role for m in build_conversation(3)]
        ['system', 'user', 'assistant']
    """
    if n < 1:
        msg = f"a conversation needs at least one message, got n={n}"
        raise ValueError(msg)
    rng = random.Random(seed)
    out = [Message(role="system", content=_SYSTEM, id="m0")]
    while len(out) < n:
        left = n - len(out)
        i = len(out)
        if left >= 6 and rng.random() < 0.07:
            out.extend(_tool_round(rng, i))
        elif left >= 2:
            out.extend([_user(rng, i), _assistant(rng, i + 1)])
        else:
            out.append(_user(rng, i))
    return out


# --------------------------------------------------------------------------------------
# Conversions to each framework's message types, and back (to cost their views)
# --------------------------------------------------------------------------------------


def to_langchain(messages: Sequence[Message]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for m in messages:
        if m.role == "system":
            out.append(SystemMessage(content=m.content))
        elif m.role == "user":
            out.append(HumanMessage(content=m.content, name=m.name))
        elif m.role == "assistant":
            calls = [
                {"name": c.name, "args": json.loads(c.arguments), "id": c.id, "type": "tool_call"}
                for c in m.tool_calls
            ]
            out.append(AIMessage(content=m.content, tool_calls=calls))
        else:
            out.append(ToolMessage(content=m.content, tool_call_id=m.tool_call_id or ""))
    return out


_LC_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def from_langchain(messages: Sequence[Any]) -> list[Message]:
    out = []
    for m in messages:
        calls = tuple(
            ToolCall(
                id=c["id"], name=c["name"], arguments=json.dumps(c["args"], ensure_ascii=False)
            )
            for c in getattr(m, "tool_calls", None) or ()
        )
        out.append(
            Message(
                role=_LC_ROLES[m.type],  # type: ignore[arg-type]
                content=m.content,
                name=m.name,
                tool_calls=calls,
                tool_call_id=getattr(m, "tool_call_id", None),
            )
        )
    return out


def langchain_counter(encoding: tiktoken.Encoding) -> Callable[[list[Any]], int]:
    """A LangChain ``token_counter``: the OpenAI chat-format count of a message list.

    Same rule as :class:`agentmem.TokenCounter` (3 per message + role + content; a name
    costs its tokens + 1; a tool call its name and argument tokens + 3; 3 for reply
    priming), with no cache: ``trim_messages`` re-counts on every call.
    """
    enc = encoding.encode_ordinary

    def count(messages: list[Any]) -> int:
        total = 3
        for m in messages:
            total += 3 + len(enc(_LC_ROLES[m.type])) + len(enc(m.content))
            if m.name:
                total += len(enc(m.name)) + 1
            for c in getattr(m, "tool_calls", None) or ():
                args = json.dumps(c["args"], ensure_ascii=False)
                total += len(enc(c["name"])) + len(enc(args)) + 3
        return total

    return count


def to_llamaindex(messages: Sequence[Message]) -> list[Any]:
    from llama_index.core.llms import ChatMessage

    out = []
    for m in messages:
        # name, tool_calls and tool_call_id, in the OpenAI wire format, when set.
        extra = {k: v for k, v in m.to_dict().items() if k not in ("role", "content")}
        out.append(ChatMessage(role=m.role, content=m.content, additional_kwargs=extra))
    return out


def from_llamaindex(messages: Sequence[Any]) -> list[Message]:
    out = []
    for m in messages:
        extra = m.additional_kwargs or {}
        out.append(
            Message.from_dict(
                {
                    "role": str(getattr(m.role, "value", m.role)),
                    "content": m.content or "",
                    **{k: extra[k] for k in ("name", "tool_calls", "tool_call_id") if k in extra},
                }
            )
        )
    return out
