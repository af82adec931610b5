"""The settings of an open ``MemoryService`` are fixed: assigning one raises
``ReadOnlySettingError`` (no handle is left with an old value, no token counter counts for
another model); ``with_settings`` gives a copy over the same stores whose handles use the
new values everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import MemoryService
from agentmem.controller.builder import ManagerBuilder
from agentmem.controller.config import ManagerConfig
from agentmem.errors import ConfigurationError, ReadOnlySettingError, StoreClosedError
from agentmem.long_term.ranking import RankingConfig
from agentmem.stores.memory import InMemorySessionStore
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

DIM = 64

SETTINGS = {
    "model": "gpt-4",
    "max_short_term_tokens": 10,
    "consolidate_every_tokens": 5,
    "background": True,
    "clock": None,
    "system_prompt": "Be brief.",
    "ranking": RankingConfig(),
}
PARTS = ["config", "sessions", "memory_store", "embedder", "llm", "consolidation"]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with MemoryService.open(
        tmp_path, embedder=HashingEmbedder(DIM), model="gpt-4o-mini", background=False
    ) as svc:
        yield svc


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_setting_cannot_change_after_open(service: MemoryService, name: str) -> None:
    before = getattr(service, name)
    with pytest.raises(ReadOnlySettingError, match=rf"with_settings\({name}=") as info:
        setattr(service, name, SETTINGS[name])
    assert isinstance(info.value, AttributeError)
    assert isinstance(info.value, ConfigurationError)
    assert getattr(service, name) == before
    assert getattr(service.config, name) == before


@pytest.mark.parametrize("name", PARTS)
def test_a_shared_part_cannot_change_after_open(service: MemoryService, name: str) -> None:
    before = getattr(service, name)
    with pytest.raises(ReadOnlySettingError, match=rf"a MemoryService opened with {name}="):
        setattr(service, name, None)
    assert getattr(service, name) is before


def test_new_handles_count_for_the_model_the_service_opened_with(service: MemoryService) -> None:
    with pytest.raises(ReadOnlySettingError):
        service.model = "gpt-4"  # type: ignore[assignment]
    handle = service.manager("alice", "s1")
    assert handle.token_counter.model == "gpt-4o-mini"
    assert handle.token_counter.encoding_name == "o200k_base"


def test_with_settings_builds_every_new_handle_with_the_new_values(
    service: MemoryService,
) -> None:
    gpt4 = service.with_settings(model="gpt-4", system_prompt="Be brief.")
    assert (gpt4.model, gpt4.system_prompt, gpt4.background) == ("gpt-4", "Be brief.", False)
    assert gpt4.token_counter.encoding_name == "cl100k_base"
    handle = gpt4.manager("alice", "s1")
    assert handle.token_counter is gpt4.token_counter
    assert handle.system_prompt == "Be brief."
    # The service itself is unchanged, and its handles are its own.
    assert (service.model, service.system_prompt) == ("gpt-4o-mini", None)
    assert service.manager("alice", "s1") is not handle
    assert service.manager("alice", "s1").token_counter.encoding_name == "o200k_base"
    # Same stores, embedder and workers: what one remembers, the other recalls.
    assert gpt4.embedder is service.embedder
    assert gpt4.consolidation is service.consolidation
    handle.remember("Alice sails on weekends")
    hits = service.manager("alice", "s2").recall("sailing on weekends")
    assert [hit.record.content for hit in hits] == ["Alice sails on weekends"]
    # Same model: the copy shares the service's token counter.
    assert service.with_settings(system_prompt="x").token_counter is service.token_counter


def test_with_settings_refuses_the_service_s_own_settings(service: MemoryService) -> None:
    with pytest.raises(ConfigurationError, match="not max_handles, workers"):
        service.with_settings(workers=2, max_handles=3)  # type: ignore[call-arg]


def test_a_copy_lives_within_its_service(service: MemoryService) -> None:
    first = service.with_settings(consolidate_every_tokens=None)
    second = service.with_settings(consolidate_every_tokens=None)
    first.close()
    assert first.closed
    assert not service.closed
    with pytest.raises(StoreClosedError):
        first.manager("alice", "s1")
    assert second.manager("alice", "s1").consolidate_every_tokens is None
    service.close()
    assert second.closed
    with pytest.raises(StoreClosedError):
        second.manager("alice", "s2")
    with pytest.raises(StoreClosedError):
        service.with_settings(model="gpt-4")


def test_a_builder_s_config_and_token_counter_are_fixed() -> None:
    builder = ManagerBuilder(ManagerConfig(model="gpt-4o-mini"), sessions=InMemorySessionStore())
    for name, value in (("config", ManagerConfig(model="gpt-4")), ("token_counter", None)):
        with pytest.raises(ReadOnlySettingError, match=f"ManagerBuilder.{name} is fixed"):
            setattr(builder, name, value)
    assert builder.config.model == builder.token_counter.model == "gpt-4o-mini"
