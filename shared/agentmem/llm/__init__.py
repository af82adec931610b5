"""Chat models: the protocol agentmem needs and validated JSON completion.

* :mod:`~agentmem.llm.base`: :class:`ChatModel`, :class:`StructuredChatModel`,
  :func:`complete_json` and :func:`acomplete_json` (and :func:`complete_json_program`,
  the same as a program to compose);
* :mod:`~agentmem.llm.openai`: :class:`~agentmem.llm.openai.OpenAIChatModel` (needs the
  ``openai`` extra; imported on first use).

LangChain and LlamaIndex chat models are adapted in their own packages.

Example:
    >>> from agentmem.llm import ChatModel
    >>> class Echo:
    ...     def complete(self, messages):
    ...         return messages[-1]["content"]
    ...     async def acomplete(self, messages):
    ...         return messages[-1]["content"]
    >>> isinstance(Echo(), ChatModel)
    True
"""

from agentmem.llm import base
from agentmem.llm.base import *

__all__ = [*base.__all__]
