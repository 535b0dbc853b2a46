"""The report's string tables, one per language (``templates/locale/<lang>.toml``).

A key names a sentence (``"scores.why"``); the tables of every language have
the same keys, and asking for a key that is missing raises
:class:`MissingString` rather than printing a blank.  Placeholders are written
``%(name)s``, the form ``jinja2.ext.i18n``'s new-style gettext fills in.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

LANGS = ("en", "zh")
HTML_LANG = {"zh": "zh-Hans"}
"""A language's HTML ``lang`` attribute where it is not its code: our Chinese is in simplified script."""


def html_lang(lang: str) -> str:
    """The HTML ``lang`` attribute of a page in ``lang`` (``zh`` -> ``zh-Hans``)."""
    return HTML_LANG.get(lang, lang)


class MissingString(KeyError):
    """A string key that the language's table does not have."""

    def __str__(self) -> str:
        """The message, without KeyError's quotes."""
        return str(self.args[0]) if self.args else "missing string"


def templates_dir() -> Path:
    """Where the templates live: inside the package (wheel) or beside it (source tree)."""
    here = Path(__file__).parent.parent  # the tracer package folder (this module is tracer/present/strings.py)
    packaged = here / "templates"
    return packaged if packaged.is_dir() else here.parent / "templates"


def flatten(table: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": "x"}}`` -> ``{"a.b": "x"}``."""
    out: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = str(value)
    return out


@cache
def table(lang: str) -> dict[str, str]:
    """The flattened string table of ``lang``."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}: choose from {', '.join(LANGS)}")
    path = templates_dir() / "locale" / f"{lang}.toml"
    with path.open("rb") as f:
        return flatten(tomllib.load(f))


class Strings:
    """The callable a view or a template uses to fetch a sentence: ``s("scores.why", q=2)``."""

    def __init__(self, lang: str, entries: dict[str, str] | None = None) -> None:
        """Strings of ``lang`` (its table, unless ``entries`` is given)."""
        self.lang = lang
        self.entries = table(lang) if entries is None else entries

    def __call__(self, key: str, **values: Any) -> str:
        """The sentence for ``key`` with its ``%(name)s`` placeholders filled."""
        try:
            text = self.entries[key]
        except KeyError:
            raise MissingString(f"string {key!r} is missing from the {self.lang!r} table") from None
        return text % values if values else text

    def gettext(self, key: str) -> str:
        """``jinja2.ext.i18n`` gettext: the raw sentence (Jinja fills placeholders itself)."""
        return self(key)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        """``jinja2.ext.i18n`` ngettext: keys, not phrases, so the plural key is used when n != 1."""
        return self(singular if n == 1 else plural)


@cache
def glossary(lang: str) -> dict[str, dict[str, Any]]:
    """The glossary of ``lang`` (``locale/glossary.<lang>.toml``): concept -> its term and the variants to avoid.

    One term per concept, used everywhere the language's pages speak of it;
    a test rejects every ``avoid`` variant (and ``avoid_re`` pattern) in the
    narratives, the string table and the generated pages.
    """
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}: choose from {', '.join(LANGS)}")
    with (templates_dir() / "locale" / f"glossary.{lang}.toml").open("rb") as f:
        terms: dict[str, dict[str, Any]] = tomllib.load(f)["terms"]
    return terms
