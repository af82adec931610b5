"""The wheel ships a ``py.typed`` marker in each of its three packages (PEP 561), so type
checkers read the annotations of ``agentmem``, ``langchain_agentmem`` and
``llamaindex_agentmem`` in a project that installs them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agentmem", "langchain_agentmem", "llamaindex_agentmem")


def wheel_sources() -> list[str]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    sources: list[str] = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return sources


def test_every_package_of_the_wheel_has_a_py_typed_marker() -> None:
    sources = wheel_sources()
    assert sorted(Path(s).name for s in sources) == sorted(PACKAGES)
    for source in sources:
        marker = ROOT / source / "py.typed"
        assert marker.is_file(), f"{source} has no py.typed"
        assert marker.read_bytes() == b""  # a plain marker: no partial stubs


def test_the_built_wheel_holds_the_markers(tmp_path: Path) -> None:
    wheel_builder = pytest.importorskip(
        "hatchling.builders.wheel", reason="hatchling is in the dev extra"
    )
    builder = wheel_builder.WheelBuilder(str(ROOT))
    [wheel] = list(builder.build(directory=str(tmp_path), versions=["standard"]))
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in PACKAGES:
        assert f"{package}/py.typed" in names, f"the wheel has no {package}/py.typed"
