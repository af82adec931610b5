"""Private helpers shared across agentmem's layers (nothing here is public API).

=====================  ==============================================================
``checks``             integer arguments: one check (``check_int``) and its shapes
``closing``            ``with`` support for objects that have a ``close()`` method
``delegate``           attributes read from (or written to) an object the owner holds
``encodings``          tiktoken encodings loaded offline (bundled files first)
``escape``             escaping every field rendered into a prompt
``executor``           blocking code run from async code (``run_in_executor``)
``file_copy``          copying store files without filling their holes
``identifiers``        the identifiers a memory carries (the subtype rule)
``lazy``               lazy package exports (PEP 562)
``locks``              process-wide locks by key, for threads and asyncio
``openai_common``      OpenAI SDK plumbing of the chat and embedding adapters
``pydantic_errors``    pydantic validation errors as one readable line
``session_ids``        the one rule for session ids
``text``               text cut to fit a line at a word boundary
=====================  ==============================================================

This package imports nothing: each module is imported by the code that uses it.
"""
