"""The suite's own scheduling (tests/conftest.py): the modules named to run first exist, so a renamed module does not
silently fall back to running last under `pytest -n 2`."""

from pathlib import Path

from conftest import LONGEST_FIRST


def test_every_module_named_longest_first_exists():
    here = Path(__file__).resolve().parent
    missing = [name for name in LONGEST_FIRST if not (here / name).is_file()]
    assert not missing, f"tests/conftest.py LONGEST_FIRST names modules that do not exist: {missing}"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
