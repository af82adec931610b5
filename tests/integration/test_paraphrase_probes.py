"""Paraphrase and precision probes, tried as a user would: the real local model, no LLM.

One user's memory holds ten plain facts (``remember``) and ten conversation turns (recorded
with ``process_interaction`` and consolidated without an LLM: each round is stored as an
episode, ``user: ...`` / ``assistant: ...``). Each paraphrase probe asks about one of them in
other words: it shares no content word with the memory (only the meaning), so BM25 cannot
find it and the dense side must. Each precision probe asks something nothing stored
answers, and must return nothing.

The probes were written from what a user would say, before the results were seen, and are
not tuned to pass; those that fail today are strict xfails with the reason
(:data:`KNOWN_MISSES`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import MemoryManager, MemoryService

pytestmark = pytest.mark.integration

#: A plain stored fact -> a question about it in other words.
FACTS = {
    "I am vegetarian.": "What do I eat?",
    "My daughter Emma started kindergarten in September.": "When did my child begin school?",
    "I work as a nurse at the city hospital.": "What's my job?",
    "I'm allergic to penicillin.": "Which medicines should I avoid?",
    "I drive a blue Toyota Corolla.": "What car do I have?",
    "My favourite band is Radiohead.": "What music do I like?",
    "I run five kilometres every morning.": "How do I exercise?",
    "We adopted a golden retriever named Biscuit.": "What pet do we own?",
    "I'm learning Japanese for a trip to Tokyo next year.": "Which language am I studying?",
    "I can't stand horror films.": "Which movies do I dislike?",
}

#: A conversation turn (what the user said, what the assistant answered) -> a question.
TURNS = {
    (
        "Ugh, my flight to Berlin got cancelled again.",
        "Sorry to hear that! Do you want help rebooking?",
    ): "Where was I travelling to?",
    (
        "I just finished reading Dune, loved it.",
        "Great choice! The sequels are worth it too.",
    ): "What book did I enjoy recently?",
    (
        "My landlord is raising the rent by 200 euros.",
        "That's a big jump. Check whether your contract allows it.",
    ): "How much more will my apartment cost?",
    (
        "I'm thinking of switching from Windows to a Mac for my design work.",
        "Macs are popular with designers; mind the software licences.",
    ): "Which computer am I considering?",
    (
        "My mom is recovering from knee surgery.",
        "Wishing her a quick recovery. Physiotherapy helps a lot.",
    ): "Who in my family had an operation?",
    (
        "I'm lactose intolerant, so no cheese on the pizza please.",
        "Got it, I'll suggest toppings without it.",
    ): "Can I have dairy?",
    (
        "We're planning our wedding for June in Portugal.",
        "How exciting! Lisbon or the Algarve?",
    ): "When am I getting married?",
    (
        "I've been sleeping badly since the baby arrived.",
        "That's very common in the first months. Try to nap when they nap.",
    ): "Why am I tired?",
    (
        "I play the cello in a community orchestra on Thursdays.",
        "Lovely! What are you rehearsing at the moment?",
    ): "What instrument do I play?",
    (
        "My brother lives in Toronto now.",
        "Nice, it's a great city. Do you visit often?",
    ): "Which city is my sibling in?",
}

#: Questions nothing stored answers: recall must return nothing.
UNRELATED = (
    "What is the capital of Australia?",
    "How do I reverse a linked list?",
    "What's the boiling point of water at high altitude?",
    "Who wrote the Odyssey?",
    "Explain how photosynthesis works.",
    "What is the speed of light?",
    "How many moons does Jupiter have?",
    "Convert 30 degrees Celsius to Fahrenheit.",
    "What's the difference between TCP and UDP?",
    "Who won the 1998 World Cup?",
    "How do vaccines train the immune system?",
    "What is the tallest mountain in Africa?",
    "How do I center a div in CSS?",
    "What causes the northern lights?",
    "Summarize the plot of Hamlet.",
    "What is the GDP of Brazil?",
    "How do I sort a dictionary by value in Python?",
    "When did the Roman Empire fall?",
    "What is the chemical symbol for gold?",
    "How does a blockchain reach consensus?",
)

#: Probes that fail with all-MiniLM-L6-v2 and today's ranking, and why: strict xfails, so
#: a change that fixes one must say so here. 17 of 20 paraphrase and 18 of 20 precision
#: probes pass, the same before and after the floor's clear-winner rule (see
#: ``agentmem.long_term.ranking.dense_clear_winner``: these misses are not clear winners).
KNOWN_MISSES = {
    "Where was I travelling to?": "the dense side ranks another memory first (0.32 vs the "
    "Berlin turn)",
    "Who in my family had an operation?": "cosine 0.287 < min_similarity 0.3, and it leads "
    "the second by 1.6 SD of the others, under the clear margin (2 SD)",
    "When am I getting married?": "cosine 0.298 < min_similarity 0.3, nearly tied with the "
    "second (0.9 SD)",
    "Who wrote the Odyssey?": "the Dune turn scores cosine 0.385 >= min_similarity: the "
    "model hears 'books'",
    "Explain how photosynthesis works.": "BM25 stems 'works' to 'work' ('I work as a nurse'): "
    "a lexical match passes the floor whatever its cosine",
}


def _probe(*values: str) -> object:
    reason = KNOWN_MISSES.get(values[-1])
    if reason is None:
        return pytest.param(*values, id=values[-1])
    return pytest.param(*values, id=values[-1], marks=pytest.mark.xfail(strict=True, reason=reason))


PROBES = [_probe(fact, question) for fact, question in FACTS.items()] + [
    _probe(said, question) for (said, _), question in TURNS.items()
]


@pytest.fixture(scope="module")
def pat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryManager]:
    home: Path = tmp_path_factory.mktemp("probes")
    service = MemoryService.open(home)  # the default local model; no LLM
    try:
        manager = service.manager("pat", "chat-1")
        for fact in FACTS:
            manager.remember(fact)
        for said, answered in TURNS:
            manager.process_interaction(said, answered)
        manager.consolidate()
        stored = [r.content for r in manager.long_term.all_records()]
        assert len(stored) == len(FACTS) + len(TURNS), stored
        yield manager
    finally:
        service.close()


def test_the_turns_are_stored_as_conversation_episodes(pat: MemoryManager) -> None:
    episodes = [r.content for r in pat.long_term.all_records() if r.memory_type == "episodic"]
    assert len(episodes) == len(TURNS)
    assert all("assistant" in text for text in episodes)


@pytest.mark.parametrize(("said", "question"), PROBES)
def test_a_paraphrased_question_recalls_its_memory(
    pat: MemoryManager, said: str, question: str
) -> None:
    hits = pat.recall(question, top_k=5, touch=False)
    found = [h.record.content for h in hits[:3]]
    assert any(said in text for text in found), (question, found)


@pytest.mark.parametrize("question", [_probe(q) for q in UNRELATED])
def test_an_unrelated_question_recalls_nothing(pat: MemoryManager, question: str) -> None:
    hits = pat.recall(question, top_k=5, touch=False)
    assert hits == [], [h.record.content for h in hits]
