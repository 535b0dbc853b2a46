"""Messages as keys and arguments: the type, its renderer, and the tables every key must be in.

Every ``Message("some.key", name=...)`` the package writes is found in its
source (the first argument of each call, which must be a string literal),
with the catalogue's ``diagnosis.<code>`` keys taken from the catalogue
itself; each must be in the English and the Chinese table with the same
named fields as the call passes, and no table key may go unused.  A second
guard reads every string literal of the package: Chinese lives only in the
tables, so no regular expression or phrase dictionary in the code can turn
an English sentence into Chinese, and no pattern of the code reads one of
the tables' English sentences back.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracer.compare.check.catalogue import known
from tracer.errors import InputError
from tracer.message import Message
from tracer.present import messages
from tracer.present.strings import LANGS, MissingString

PACKAGE = Path(__file__).resolve().parent.parent / "tracer"
HAN = re.compile(r"[\u4e00-\u9fff]")
BUILDERS = {PACKAGE / "message.py", PACKAGE / "compare" / "check" / "entry.py"}
"""The two places that build a message from a key held in a variable: the type itself, and the catalogue's entries."""
LANGUAGE_RULES = {("present/captured.py", "和")}
"""Chinese in code that is a rule of the language, not a translation: a list whose words end in 和 joins with 以及."""
FORMULAS = "present/checktext.py"
"""Not yet keyed: the lessons' formula texts (a trace's data, written by the pipelines) read into Chinese there."""


def calls() -> Iterator[tuple[Path, ast.Call]]:
    """Every ``Message(...)`` call in the package's source."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Message":
                yield path, node


def used() -> dict[str, set[frozenset[str] | None]]:
    """Key -> the sets of argument names the code passes with it (None: not known statically)."""
    out: dict[str, set[frozenset[str] | None]] = {}
    for path, node in calls():
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            assert path in BUILDERS, f"{path.name}:{node.lineno}: a message key must be a string literal"
            continue
        names = None if any(k.arg is None for k in node.keywords) else frozenset(str(k.arg) for k in node.keywords)
        out.setdefault(first.value, set()).add(names)
    for entry in known().values():  # the catalogue's sentences: their fields come from each hypothesis' details
        out.setdefault(entry.key, set()).add(None)
    return out


def test_every_key_the_code_uses_is_in_every_table_with_the_fields_it_passes() -> None:
    keys = used()
    assert len(keys) > 100  # the scan found the check's messages
    for key, passed in sorted(keys.items()):
        for lang in LANGS:  # a lesson's own key (lesson.<name>.) is in that lesson's table
            assert isinstance(messages.sentence(key, lang), str)  # raises MissingString when no table has it
        fields = messages.fields(messages.sentence(key, "en"))
        for names in passed - {None}:
            assert names == fields, f"{key} is written with {sorted(fields)} but passed {sorted(names or ())}"


def test_every_table_has_the_same_keys_and_fields_and_no_key_is_unused() -> None:
    en = messages.table("en")
    for lang in LANGS:
        table = messages.table(lang)
        assert set(table) == set(en), (lang, set(table) ^ set(en))
        for key, text in table.items():
            assert messages.fields(text) == messages.fields(en[key]), (lang, key)
    unused = set(en) - set(used())
    assert not unused, f"keys no code uses: {sorted(unused)}"


def test_the_catalogue_sentences_fill_every_field_from_their_details() -> None:
    """Each diagnosis key has a sentence in both languages that names only fields, never a stray brace."""
    for entry in known().values():
        for lang in LANGS:
            text = messages.sentence(entry.key, lang)
            fields = messages.fields(text)
            filled = render_with(entry.said(dict.fromkeys(fields, "7")), lang)
            assert ("{" not in filled.replace("{p}", "") and "7" in filled) or not fields, (entry.code, lang)


def render_with(said: Message, lang: str) -> str:
    return messages.render(said, lang)


def test_no_string_of_the_code_is_chinese() -> None:
    """Chinese is in the tables only: no regex, phrase dictionary or en/zh pair in the code can translate."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and id(node) not in docs else None
            if isinstance(text, str) and HAN.search(text) and (rel, text) not in LANGUAGE_RULES and rel != FORMULAS:
                found.append(f"{rel}:{node.lineno}: {text[:40]!r}")
    assert not found, found


class Sample:
    """What a field is filled with when a sentence is tried against the code's patterns."""

    def __format__(self, spec: str) -> str:
        return "7" if spec else "Name"

    def __repr__(self) -> str:
        return "'Name'"


def test_no_pattern_of_the_code_reads_a_message_back() -> None:
    """No regular expression in the package matches a whole sentence of the tables (as the back-translators did)."""
    sentences = [t.format_map({f: Sample() for f in messages.fields(t)}) for t in messages.table("en").values()]
    sentences = [s for s in sentences if len(s.split()) >= 3]
    flagged = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if getattr(node.func.value, "id", None) != "re" or not node.args:
                continue
            pattern = node.args[0]
            if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str):
                rx = re.compile(pattern.value)
                flagged += [f"{path.name}:{node.lineno}" for s in sentences if rx.fullmatch(s)]
    assert not flagged, flagged


def test_a_message_is_immutable_data_that_crosses_a_pipe_as_json() -> None:
    said = Message("trouble.in_head", n=2, path="heads.1", problem=Message("trouble.no_parameters"))
    back = Message.from_json(json.loads(json.dumps(said.to_json())))
    assert back == said and hash(back) == hash(said) and back is not said
    with pytest.raises(AttributeError):
        said.key = "trouble.check_failed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        said.args["n"] = 3  # type: ignore[index]
    assert str(said) == "head 2 (heads.1): no parameters"
    assert messages.render(said, "zh") == "第 2 个头（heads.1）：没有参数"


@pytest.mark.parametrize(
    "data",
    [
        None,
        "the check failed",
        {"key": "trouble.check_failed"},
        {"key": "Trouble Check", "args": {}},
        {"key": "trouble.no_file", "args": {"file": ["a.py"]}},
        {"key": "trouble.no_file", "args": {"file": True}},
        {"key": "trouble.no_file", "args": [], "extra": 1},
        {"key": "trouble.in_head", "args": {"problem": {"key": "trouble.in_head", "args": {"problem": {}}}}},
    ],
)
def test_a_message_from_json_is_checked_as_untrusted_data(data: object) -> None:
    with pytest.raises(ValueError):
        Message.from_json(data)


def test_nesting_read_from_json_is_bounded() -> None:
    deep: dict[str, object] = {"key": "trouble.check_failed", "args": {}}
    for _ in range(20):
        deep = {"key": "trouble.in_head", "args": {"n": 1, "path": "h", "problem": deep}}
    with pytest.raises(ValueError):
        Message.from_json(deep)


def test_arguments_are_escaped_by_the_format_that_prints_them_and_the_tables_words_are_not() -> None:
    import html

    said = Message("trouble.in_head", n=1, path="<h>", problem=Message("trouble.no_file", file="a&b.py"))
    assert messages.render(said, "en", html.escape) == "head 1 (&lt;h&gt;): no such file: a&amp;b.py"
    assert str(said) == "head 1 (<h>): no such file: a&b.py"  # the message itself holds the raw names


def test_a_key_the_tables_lack_is_an_error_never_a_blank() -> None:
    with pytest.raises(MissingString):
        messages.render(Message("trouble.not_a_sentence_of_ours"), "zh")


def test_an_error_carrying_a_message_reads_as_english_and_keeps_the_message() -> None:
    said = Message("trouble.no_file", file="attn.py")
    e = InputError(said)
    assert str(e) == "no such file: attn.py" and e.said == said and e.problem == "no such file: attn.py"
    assert messages.render(e.said, "zh") == "没有这个文件：attn.py"
    plain = InputError("must be at least 1", arg="dim")
    assert str(plain) == "dim must be at least 1" and plain.said is None


def test_every_installed_lessons_own_tables_have_every_key_in_every_language() -> None:
    """A lesson's own table (a plug-in's too: its tests call the same function) passes what ours pass."""
    from tracer.compare.check.lessons import SPECS
    from tracer.record import registry

    for name in registry.names():
        said = [e.key for e in SPECS[name].mistakes] if name in SPECS else []
        assert messages.gaps(name, said) == [], name


@pytest.fixture
def own_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A lesson ``mine`` whose package (``tmp_path/mine_pkg``) holds the message tables a test writes."""
    import sys

    from tracer.record import registry
    from tracer.record.lesson import PackagedLesson

    (tmp_path / "mine_pkg").mkdir()
    (tmp_path / "mine_pkg" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    mine = PackagedLesson(name="mine", summary="s", pipeline="mine_pkg", package="mine_pkg")
    found, listed = registry.get, registry.names
    monkeypatch.setattr(registry, "get", lambda name: mine if name == "mine" else found(name))
    monkeypatch.setattr(registry, "names", lambda: [*listed(), "mine"])
    messages.lesson_table.cache_clear()
    yield tmp_path / "mine_pkg"
    messages.lesson_table.cache_clear()
    sys.modules.pop("mine_pkg", None)


def test_a_lesson_says_its_own_sentences_under_its_namespace(own_tables: Path) -> None:
    (own_tables / "messages.en.toml").write_text('[diagnosis]\nodd = "odd by {n}"\n', encoding="utf-8")
    (own_tables / "messages.zh.toml").write_text('[diagnosis]\nodd = "差了 {n}"\n', encoding="utf-8")
    said = Message("lesson.mine.diagnosis.odd", n=3)
    assert messages.render(said, "en") == "odd by 3" and messages.render(said, "zh") == "差了 3"
    assert messages.gaps("mine", ["lesson.mine.diagnosis.odd"]) == []
    with pytest.raises(MissingString):  # its keys live under its name only, never among ours
        messages.render(Message("diagnosis.odd", n=3), "en")
    with pytest.raises(MissingString):
        messages.render(Message("lesson.mine.diagnosis.even"), "en")


def test_a_lesson_sentence_without_its_translation_fails_the_test(own_tables: Path) -> None:
    (own_tables / "messages.en.toml").write_text('[diagnosis]\nodd = "odd by {n}"\nlost = "x"\n', encoding="utf-8")
    (own_tables / "messages.zh.toml").write_text('[diagnosis]\nodd = "差了 {m}"\n', encoding="utf-8")
    assert messages.gaps("mine", ["lesson.mine.diagnosis.odd", "lesson.mine.diagnosis.said"]) == [
        "lesson.mine.diagnosis.lost is missing from the 'zh' table",
        "lesson.mine.diagnosis.odd fills ['m'] in 'zh' but ['n'] in 'en'",
        "lesson.mine.diagnosis.said is in no table",
    ]


@pytest.mark.parametrize(("asked", "said"), [("zh", "zh"), ("en", "en"), ("zh,en", "zh"), ("all", "en"), (None, "en")])
def test_a_command_says_an_error_that_is_a_message_in_the_language_of_its_lang(asked: str | None, said: str) -> None:
    """The one rule of every command (``cli.group.Command``): a message error is rendered in ``--lang``'s language."""
    import click

    from tracer.cli.group import Command, UserError

    def fails(lang: str | None) -> None:
        raise InputError(Message("trouble.no_file", file="a.py"))

    cmd = Command("x", params=[click.Option(["--lang"])], callback=fails)
    ctx = cmd.make_context("x", ["--lang", asked] if asked else [])
    with pytest.raises(UserError) as e:
        cmd.invoke(ctx)
    assert e.value.message == messages.render(Message("trouble.no_file", file="a.py"), said)
    assert ("没有" in e.value.message) == (said == "zh")


def test_a_masked_entry_is_said_in_the_readers_language_without_reading_english_back() -> None:
    """``explain`` and the check write a masked entry's words from the page tables (they were a regex's work)."""
    import tracer
    from tracer.present.explain import equation
    from tracer.present.strings import Strings

    t = tracer.trace_lesson("causal")
    masked = next(st for st in t.steps() if st.op == "masked_fill" and st.index == (0, 3))
    kept = next(st for st in t.steps() if st.op == "masked_fill" and st.index == (3, 0))
    assert "(masked: mask 1" in equation(t, masked) and "(kept: mask 0" in equation(t, kept)
    assert "（被遮住：掩码 1" in equation(t, masked, s=Strings("zh"))
    assert "（保留：掩码 0" in equation(t, kept, s=Strings("zh"))
