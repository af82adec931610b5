"""Integration: memory tools on a real manager (Edge store, SQLite), sync and async."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import BaseTool

from langchain_agentmem import create_memory_tools
from tests.langchain.conftest import Home

pytestmark = pytest.mark.integration


def by_name(tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {t.name: t for t in tools}


def test_save_search_update_delete_and_working_memory(home: Home) -> None:
    manager = home.manager("s1")
    tools = by_name(create_memory_tools(manager))
    saved = json.loads(tools["save_memory"].invoke({"content": "Alice indents with tabs"}))
    assert saved["action"] == "add"
    again = json.loads(tools["save_memory"].invoke({"content": "alice indents with TABS"}))
    assert again["action"] == "reinforce"
    found = json.loads(tools["search_memory"].invoke({"query": "indent tabs"}))
    assert found[0]["id"] == saved["id"]
    assert found[0]["content"] == "Alice indents with tabs"

    updated = json.loads(
        tools["update_memory"].invoke(
            {"memory_id": saved["id"], "content": "Alice indents with spaces"}
        )
    )
    assert updated["superseded"] == saved["id"]
    current = json.loads(tools["search_memory"].invoke({"query": "Alice indents"}))
    assert [h["content"] for h in current] == ["Alice indents with spaces"]
    assert manager.long_term.get_memory(saved["id"]).superseded_by == updated["id"]

    bumped = json.loads(
        tools["update_memory"].invoke({"memory_id": updated["id"], "importance": 0.2})
    )
    assert bumped["importance"] == 0.2
    assert tools["delete_memory"].invoke({"memory_id": updated["id"]}) == f"deleted {updated['id']}"
    assert json.loads(tools["search_memory"].invoke({"query": "Alice indents"})) == []

    tools["set_working_memory"].invoke({"key": "task", "value": {"step": 2}})
    assert manager.working.get_variable("task") == {"step": 2}


def test_agent_fixable_errors_come_back_as_tool_results(home: Home) -> None:
    tools = by_name(create_memory_tools(home.manager("s1")))
    assert "UUID" in tools["delete_memory"].invoke({"memory_id": "not-an-id"})
    assert "no memory" in tools["update_memory"].invoke(
        {"memory_id": "6f1c2b4e-0000-4000-8000-000000000000", "importance": 0.5}
    )
    assert "importance" in tools["save_memory"].invoke({"content": "x", "importance": 7})


def test_tools_are_scoped_to_their_user(home: Home) -> None:
    alice = by_name(create_memory_tools(home.manager("s1", user_id="alice")))
    bob = by_name(create_memory_tools(home.manager("s2", user_id="bob")))
    saved = json.loads(alice["save_memory"].invoke({"content": "Alice's secret is 42"}))
    assert json.loads(bob["search_memory"].invoke({"query": "secret 42"})) == []
    assert "no memory" in bob["delete_memory"].invoke({"memory_id": saved["id"]})


async def test_async_tools(home: Home) -> None:
    tools = by_name(create_memory_tools(home.manager("s1")))
    saved = json.loads(await tools["save_memory"].ainvoke({"content": "Async fact about Alice"}))
    found = json.loads(await tools["search_memory"].ainvoke({"query": "async fact"}))
    assert found[0]["id"] == saved["id"]
    assert (
        await tools["delete_memory"].ainvoke({"memory_id": saved["id"]}) == f"deleted {saved['id']}"
    )
