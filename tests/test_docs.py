"""The documentation's commands use options the tool has: every `nwalign CMD ... --option` in README.md
and docs/*.md names an option that `nwalign CMD --help` lists."""

import re
from pathlib import Path

import pytest

from nwalign.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
COMMANDS = ("pair", "search", "allpairs", "bench", "makedb", "mutate", "devices")


def _doc_commands():
    """(file, command, option) for every option of every `nwalign CMD` command line in the docs."""
    found = []
    for path in DOCS:
        for line in path.read_text().splitlines():
            for match in re.finditer(r"nwalign (" + "|".join(COMMANDS) + r")\b([^`#|]*)", line):
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", match.group(2)):
                    found.append((path.name, match.group(1), option))
    return sorted(set(found))


def _help(command, capsys):
    assert main([command, "--help"]) == 0
    return capsys.readouterr().out


def test_docs_name_commands():
    assert len(_doc_commands()) > 50  # the docs do show command lines


@pytest.mark.parametrize("doc, command, option", _doc_commands())
def test_doc_options_exist(doc, command, option, capsys):
    text = _help(command, capsys)
    assert re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text), \
        f"{doc}: 'nwalign {command} {option}' is not an option of nwalign {command} (see --help)"
