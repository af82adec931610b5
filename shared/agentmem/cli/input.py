"""Reading and checking the command line's input files, before anything is opened (private).

Every problem raises :class:`~agentmem.errors.InvalidValueError` with one line that names the
file (and the line, or the field) and says how to fix it. Nothing here opens a store or
loads a model, so a bad file is reported at once and nothing is written.

Formats:

* ``ingest``, JSONL: one chat message per line, ``{"role", "content"}`` plus optional
  ``session_id``, ``name``, ``timestamp``, ``tool_calls``, ``tool_call_id``, ``metadata``.
* ``ingest``, LoCoMo-style JSON: a list of samples, each with a ``conversation`` object whose
  ``session_<n>`` lists hold turns with ``dia_id``, ``speaker`` and ``text``.
* ``import``: the JSONL ``agentmem export`` writes, one memory record per line; a line may
  also carry its dense vector as ``"vector"`` with the model that made it as
  ``"vector_model"`` (``agentmem export --vectors``).

Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "chat.jsonl")
    >>> _ = path.write_text('{"role": "user", "content": "hi"}\\n{"role": "user"\\n')
    >>> parse_chat_jsonl(path, read_text(path, "chat file"), default_session="s1")
    Traceback (most recent call last):
    ...
    agentmem.errors.InvalidValueError: ...chat.jsonl:2: not JSON (Expecting ',' delimiter at \
column 16); write one JSON object per line, like {"role": "user", "content": "Hi"}
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmem.errors import AgentMemError, InvalidValueError

if TYPE_CHECKING:
    from agentmem.ingest import Turn
    from agentmem.long_term.records import MemoryRecord
    from agentmem.types import Message

__all__ = [
    "ImportedRecord",
    "LocomoSample",
    "check_output_file",
    "is_locomo",
    "parse_chat_jsonl",
    "parse_locomo",
    "parse_memory_jsonl",
    "read_text",
    "vectors_by_content",
]

_CHAT_EXAMPLE = '{"role": "user", "content": "Hi"}'
_TURN_FIELDS = ("dia_id", "speaker", "text")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def read_text(path: Path, what: str) -> str:
    """The whole file as UTF-8 text, or a one-line error naming the problem and the fix.

    Raises:
        InvalidValueError: The file is missing, a directory, unreadable, not UTF-8 or empty.
    """
    if not path.exists():
        where = "" if path.is_absolute() else f" (relative to {Path.cwd()})"
        msg = f"{path}: no such file{where}; check the path of the {what}"
        raise InvalidValueError(msg)
    if path.is_dir():
        msg = f"{path} is a directory; pass the {what} itself"
        raise InvalidValueError(msg)
    try:
        data = path.read_bytes()
    except OSError as exc:
        msg = f"{path}: cannot read the {what} ({exc.strerror or exc}); check its permissions"
        raise InvalidValueError(msg) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        msg = (
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); "
            f"save the {what} as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)"
        )
        raise InvalidValueError(msg) from None
    if text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 byte order mark, as some editors write
    if not text.strip():
        msg = f"{path} is empty; the {what} needs at least one line"
        raise InvalidValueError(msg)
    return text


def is_locomo(text: str) -> bool:
    """Whether the text is a JSON list (a LoCoMo-style file) rather than JSONL."""
    return text.lstrip()[:1] == "["


def _json_line(path: Path, number: int, line: str, example: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        msg = (
            f"{path}:{number}: not JSON ({exc.msg} at column {exc.colno}); "
            f"write one JSON object per line, like {example}"
        )
        raise InvalidValueError(msg) from None
    except RecursionError:
        msg = f"{path}:{number}: JSON nested too deeply; flatten the line"
        raise InvalidValueError(msg) from None


def _objects(
    path: Path, text: str, *, example: str, not_object: str, own: str, other: str, hint: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each non-blank line of a JSONL file as ``("path:line", its object)``.

    Raises:
        InvalidValueError: A line is not JSON (``example`` shows one that is), not an
            object (``not_object`` says what it should be), or an object of the other
            format: it has the ``other`` format's field and not this one's (``own``);
            ``hint`` names that format and the command that reads it.
    """
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        data = _json_line(path, number, line, example)
        if not isinstance(data, dict):
            raise InvalidValueError(f"{where}: a JSON {type(data).__name__}, {not_object}")
        if other in data and own not in data:
            raise InvalidValueError(f"{where}: {hint}")
        yield where, data


def parse_chat_jsonl(path: Path, text: str, *, default_session: str) -> dict[str, list[Message]]:
    """Chat messages of a JSONL file grouped by ``session_id`` (file order kept); messages
    without one go to ``default_session``.

    Raises:
        InvalidValueError: A line is not a JSON object, not a valid message, or names an
            invalid ``session_id`` (the line is named).
    """
    from agentmem.stores.base import validate_session_id
    from agentmem.types import Message

    sessions: dict[str, list[Message]] = {}
    lines = _objects(
        path,
        text,
        example=_CHAT_EXAMPLE,
        not_object=f"not an object; each line must be one message, like {_CHAT_EXAMPLE}",
        own="role",
        other="memory_type",
        hint="a memory record, not a chat message; "
        "load files written by `agentmem export` with `agentmem import`",
    )
    for where, data in lines:
        session = data.pop("session_id", None)
        try:
            if session is not None:
                session = validate_session_id(session, what="session_id")
            message = Message.from_dict(data)
        except AgentMemError as exc:
            msg = (
                f"{where}: not a chat message: {_one_line(str(exc))}; "
                f"each line needs at least role and content, like {_CHAT_EXAMPLE}"
            )
            raise InvalidValueError(msg) from None
        sessions.setdefault(session or default_session, []).append(message)
    return sessions


@dataclass(frozen=True)
class LocomoSample:
    """One conversation of a LoCoMo-style file: its id and its turns in session order."""

    sample_id: str
    turns: list[Turn]


def _locomo_json(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = (
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno}); "
            "a LoCoMo-style file is one JSON list of samples"
        )
        raise InvalidValueError(msg) from None
    except RecursionError:
        msg = f"{path}: JSON nested too deeply to be a LoCoMo-style file"
        raise InvalidValueError(msg) from None


def parse_locomo(path: Path, text: str) -> list[LocomoSample]:
    """The conversations of a LoCoMo-style file, every turn checked.

    Raises:
        InvalidValueError: Not a list of samples with a ``conversation`` object, or a turn
            without ``dia_id``/``speaker``/``text`` strings (sample and turn are named).
    """
    from agentmem.ingest import locomo_turns

    samples = _locomo_json(path, text)
    if not isinstance(samples, list) or not samples:
        msg = f"{path}: expected a non-empty JSON list of LoCoMo samples"
        raise InvalidValueError(msg)
    out = []
    for index, sample in enumerate(samples):
        where = f"{path}: sample {index}"
        conversation = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conversation, dict):
            msg = (
                f"{where} has no 'conversation' object; each sample needs one with "
                "session_<n> lists of turns (see the LoCoMo data format)"
            )
            raise InvalidValueError(msg)
        sample_id = str(sample.get("sample_id", index))
        where = f"{path}: sample {index} ({sample_id})"
        sessions = 0
        for key, turns in conversation.items():
            if not (key.startswith("session_") and key[8:].isdigit()):
                continue
            if not isinstance(turns, list):
                msg = f"{where}: conversation.{key} is not a list of turns"
                raise InvalidValueError(msg)
            sessions += 1
            for i, turn in enumerate(turns):
                _check_turn(turn, f"{where}: conversation.{key}[{i}]")
        if not sessions:
            msg = f"{where}: the conversation has no session_<n> lists of turns"
            raise InvalidValueError(msg)
        turns_found, _ = locomo_turns(conversation)
        out.append(LocomoSample(sample_id, turns_found))
    return out


def _check_turn(turn: object, where: str) -> None:
    if not isinstance(turn, dict):
        msg = f"{where} is not an object; a turn is {{'dia_id', 'speaker', 'text'}}"
        raise InvalidValueError(msg)
    for name in _TURN_FIELDS:
        if not isinstance(turn.get(name), str):
            problem = "has no" if name not in turn else "has a non-string"
            msg = f"{where} {problem} {name!r}; every turn needs dia_id, speaker and text strings"
            raise InvalidValueError(msg)
    caption = turn.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        msg = f"{where} has a non-string 'blip_caption'; give a string or leave it out"
        raise InvalidValueError(msg)
    from agentmem.ingest import Turn, turn_text
    from agentmem.long_term.memory import MAX_CONTENT_CHARS
    from agentmem.storable import check_storable_text

    text = turn_text(Turn(turn["dia_id"], turn["speaker"], turn["text"], 0, None, caption))
    try:
        check_storable_text(text, what="the turn's text")
    except AgentMemError as exc:
        raise InvalidValueError(f"{where}: {_one_line(str(exc))}") from None
    if len(text) > MAX_CONTENT_CHARS:
        msg = (
            f"{where} makes a memory of {len(text):,} characters, over the "
            f"{MAX_CONTENT_CHARS:,} one holds; split the turn into several"
        )
        raise InvalidValueError(msg)


@dataclass(frozen=True)
class ImportedRecord:
    """A memory record read from an import file, in the importing user's scope, with its
    dense vector when the file carries one."""

    record: MemoryRecord
    vector: tuple[float, ...] | None


def parse_memory_jsonl(
    path: Path, text: str, *, user_id: str, model_name: str, dimension: int
) -> list[ImportedRecord]:
    """Memory records of an export file, moved into ``user_id``'s scope and checked like
    new memories (content size, metadata, space); vectors checked against the model.
    Records exported by another user get new ids (see :func:`_for_user`).

    Raises:
        InvalidValueError: A line is not a memory record (the missing or bad field is
            named), or carries a vector of another model or size.
    """
    from pydantic import ValidationError

    from agentmem.long_term._validate import check_record
    from agentmem.long_term.records import MemoryRecord

    if is_locomo(text):
        msg = (
            f"{path} is a JSON list (a LoCoMo-style conversation file?), not an export; "
            "read conversations with `agentmem ingest`"
        )
        raise InvalidValueError(msg)
    records = []
    lines = _objects(
        path,
        text,
        example="the lines `agentmem export` writes",
        not_object="not a memory record object",
        own="memory_type",
        other="role",
        hint="a chat message, not a memory record; read conversations with "
        "`agentmem ingest` (import reads what `agentmem export` writes)",
    )
    for where, data in lines:
        vector = _vector(data, where, model_name, dimension)
        try:
            record = MemoryRecord.model_validate_json(json.dumps(data))
            check_record(record)
        except ValidationError as exc:
            raise InvalidValueError(f"{where}: not a memory record: {_field_error(exc)}") from None
        except AgentMemError as exc:
            raise InvalidValueError(f"{where}: {_one_line(str(exc))}") from None
        if record.scope.space != "memories":
            msg = (
                f"{where}: a record of the {record.scope.space!r} space (LangGraph store "
                "items or internal records); export and import only memories"
            )
            raise InvalidValueError(msg)
        records.append(ImportedRecord(_for_user(record, user_id), vector))
    return records


# Namespace of the ids a memory gets when it is imported for another user (uuid5).
_IMPORT_NAMESPACE = uuid.UUID("7d5e3b8a-4f1c-5a52-9a43-1c6f0c2b9e11")


def _for_user(record: MemoryRecord, user_id: str) -> MemoryRecord:
    """The record in ``user_id``'s scope. A memory id belongs to one scope forever, so a
    record exported by another user gets a new id derived from the user and its old id
    (its ``superseded_by`` link too): the copy never collides with the original, and
    importing the same file again replaces the same copies."""
    scope = record.scope.model_copy(update={"user_id": user_id})
    if record.scope.user_id == user_id:
        return record.model_copy(update={"scope": scope})

    def moved(memory_id: str) -> str:
        return str(uuid.uuid5(_IMPORT_NAMESPACE, f"{user_id}/{memory_id}"))

    update: dict[str, Any] = {"scope": scope, "id": moved(record.id)}
    if record.superseded_by is not None:
        update["superseded_by"] = moved(record.superseded_by)
    return record.model_copy(update=update)


def _field_error(exc: Any) -> str:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"])
    if first["type"] == "missing":
        return f"field {field!r} is missing; import reads the lines `agentmem export` writes"
    problem = _one_line(str(first["msg"]).removeprefix("Value error, "))
    return f"field {field!r}: {problem}" if field else problem


def _vector(
    data: dict[str, Any], where: str, model_name: str, dimension: int
) -> tuple[float, ...] | None:
    vector = data.pop("vector", None)
    model = data.pop("vector_model", None)
    if vector is None:
        if model is not None:
            msg = f"{where}: 'vector_model' without a 'vector'; remove it or add the vector"
            raise InvalidValueError(msg)
        return None
    if model != model_name:
        msg = (
            f"{where}: the vector was made by {model!r}, but this home embeds with "
            f"{model_name!r}; remove 'vector' and 'vector_model' to embed the content again"
        )
        raise InvalidValueError(msg)
    if (
        not isinstance(vector, list)
        or len(vector) != dimension
        or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            for x in vector
        )
    ):
        msg = (
            f"{where}: 'vector' must be a list of {dimension} finite numbers; remove it (with "
            "'vector_model') to embed the content again"
        )
        raise InvalidValueError(msg)
    return tuple(float(x) for x in vector)


def check_output_file(path: Path, what: str, *, force: bool = False) -> None:
    """Refuse an output path that is a directory, whose directory does not exist, or (unless
    ``force``) that exists already."""
    if path.is_dir():
        msg = f"{path} is a directory; pass the path of the {what} to write"
        raise InvalidValueError(msg)
    if not force and (path.exists() or path.is_symlink()):
        msg = f"{path} exists already; pass --force to replace it, or choose another path"
        raise InvalidValueError(msg)
    parent = path.parent if str(path.parent) else Path()
    if not parent.is_dir():
        msg = f"{path}: directory {parent} does not exist; create it or choose another path"
        raise InvalidValueError(msg)


def vectors_by_content(records: Sequence[ImportedRecord]) -> Mapping[str, Sequence[float]]:
    """The given vectors by content, for :class:`~agentmem.cli.embedder.DeferredEmbedder`."""
    return {r.record.content: r.vector for r in records if r.vector is not None}
