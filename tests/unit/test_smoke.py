import asyncio

from agentmem import TokenCounter


async def test_event_loop_works_with_sockets_disabled() -> None:
    await asyncio.sleep(0)
    assert TokenCounter().count_text("hello world") == 2
