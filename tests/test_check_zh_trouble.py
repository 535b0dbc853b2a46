"""``check --lang zh`` says its trouble (exit 2) in Chinese; the student's own exception text stays as it was.

Two ways in: the command on submissions that crash or have weights of the
wrong shape (and a flash function returning the wrong shape, which is a
verdict, not trouble), and one message of each kind the check's sources
raise, rendered in both languages: English exactly as the check has always
said it, Chinese with no English word left but code and the student's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.compare.check.lessons import SPECS
from tracer.message import Message as M
from tracer.present.messages import render

HAN = re.compile(r"[\u4e00-\u9fff]")
CODE = re.compile(
    r"'[^']*'|<[^>]*>|\w*\([^()]*\)|[\w./-]+\.py(:\d+)?|\w+(\.\w+)+|\b\w+_\w+\b|[A-Z]\w+|\b(torch|int|list)\b|"
    + "|".join(rf"\b{name}\b" for name in SPECS)
)
"""What may stay Latin in a translated line: quoted text, reprs, brackets, files, dotted names, names with _,
names with a capital (ClassNames, Python, MemoryError), torch's and Python's type names, and the lessons'."""

CRASH = """import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out{extra}, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        raise ValueError("the mask is not ready yet")
"""


def _check(tmp_path: Path, source: str, name: str, lesson: str, lang: str = "zh") -> tuple[int, str]:
    path = tmp_path / "attn.py"
    path.write_text(source, encoding="utf-8")
    res = CliRunner().invoke(app, ["check", f"{path}:{name}", "--lesson", lesson, "--lang", lang])
    return res.exit_code, res.output


def english_words(line: str, own: tuple[str, ...] = ()) -> list[str]:
    """The Latin words of ``line`` left once the student's parts ``own``, code and quoted text are taken out."""
    for part in own:
        line = line.replace(part, " ")
    return re.findall(r"[A-Za-z]{2,}", CODE.sub(" ", line))


def test_a_crash_is_said_in_chinese_with_the_exception_text_as_python_wrote_it(tmp_path: Path) -> None:
    code, out = _check(tmp_path, CRASH.format(extra=""), "CausalAttention", "causal")
    assert code == 2 and "Traceback" not in out
    line = out.strip().splitlines()[-1]
    assert "抛出了 ValueError: the mask is not ready yet（位于 attn.py:12）" in line, line
    code, out = _check(tmp_path, CRASH.format(extra=""), "CausalAttention", "causal", "en")
    assert code == 2 and "raised ValueError: the mask is not ready yet at attn.py:12" in out


def test_weights_of_the_wrong_shape_are_said_in_chinese(tmp_path: Path) -> None:
    code, out = _check(tmp_path, CRASH.format(extra=" + 1"), "CausalAttention", "causal")
    assert code == 2
    line = out.strip().splitlines()[-1]
    assert "W_key.weight 的形状是 (3, 3)，但键权重应把 d_in=3 映射到 d_out=2" in line, line
    assert not english_words(line.removeprefix("Error: ")), line


def test_a_cache_call_returning_the_wrong_thing_is_said_in_chinese(tmp_path: Path) -> None:
    source = CRASH.format(extra="").replace("def forward(self, x):", "def forward(self, x, cache=None):")
    source = source.replace('raise ValueError("the mask is not ready yet")', "return self.W_query(x)")
    source = source.replace(", dropout, qkv_bias=False", ", qkv_bias=False")
    code, out = _check(tmp_path, source, "CausalAttention", "kvcache")
    assert code == 2 and "forward(x, cache) 返回了 Tensor，而不是 (context, cache)" in out, out


def test_a_flash_result_of_the_wrong_shape_is_a_verdict_in_either_language(tmp_path: Path) -> None:
    source = "def flash_attention(q, k, v, block_size):\n    return q[:, :1]\n"
    for lang, said in (("en", "another shape"), ("zh", "形状与课程的")):
        code, out = _check(tmp_path, source, "flash_attention", "flash", lang)
        assert code == 1 and said in out and "MissingString" not in out, out


S = "«"  # the student's own words are marked «…» in the English below and must appear unchanged in the Chinese
CRASHED = M("trouble.crash_at", error="«RuntimeError: shape mismatch»", where="attn.py:20")
SHAPE = M("trouble.weight_shape", param="W_key.weight", shape="(3, 3)", role=M("word.key"), d_in=3, d_out=2)
KNOWN = "«position_ids, positions, mask»"
SENTENCES = (
    (
        "no verdict: the check of attn.py did not finish within 60 s and was killed (an endless loop?)",
        M("no_verdict.failed", name="attn.py", why=M("no_verdict.overtime", seconds=60.0)),
    ),
    (
        "no verdict: the check of attn.py was killed by SIGKILL (out of memory? the limit is 2048 MB)",
        M("no_verdict.failed", name="attn.py", why=M("no_verdict.killed_memory", signal="SIGKILL", limit=2048.0)),
    ),
    (
        "no verdict: the check of attn.py was killed by SIGSEGV",
        M("no_verdict.failed", name="attn.py", why=M("no_verdict.killed", signal="SIGSEGV")),
    ),
    (
        "no verdict: the check of attn.py exited with status 3 before sending its verdict (os._exit or sys.exit?)",
        M("no_verdict.failed", name="attn.py", why=M("no_verdict.exited", status=3)),
    ),
    (
        "no verdict: the check of attn.py sent malformed data: it sent a verdict of its own",
        M("no_verdict.malformed_data", name="attn.py", why=M("no_verdict.own_verdict")),
    ),
    ("no verdict: the child sent a malformed message", M("no_verdict.malformed_message")),
    (
        "ran out of memory (the limit is 2048 MB): «MemoryError»",
        M("trouble.out_of_memory", limit=2048.0, problem="«MemoryError»"),
    ),
    ("the check failed", M("trouble.check_failed")),
    ("the check failed: «KeyError: 'x'»", M("trouble.check_failed_with", error="«KeyError: 'x'»")),
    (
        "internal error in the checker's child: «OSError: pipe»",
        M("trouble.child_failed", error="«OSError: pipe»"),
    ),
    ("the captured code computed nothing in torch", M("trouble.nothing_captured")),
    ("check wants FILE.py:NAME, not 'attn.py'", M("trouble.spec_form", spec="attn.py")),
    ("no such file: attn.py", M("trouble.no_file", file="attn.py")),
    ("cannot load attn.py as Python", M("trouble.not_python", file="attn.py")),
    (
        "attn.py failed to import: «SyntaxError: invalid syntax (attn.py, line 3)»",
        M("trouble.import_failed", file="attn.py", error="«SyntaxError: invalid syntax (attn.py, line 3)»"),
    ),
    ("attn.py defines no 'Attention'", M("trouble.defines_no", file="attn.py", name="Attention")),
    (
        "Attention must be a torch.nn.Module class: (d_in, d_out)",
        M("trouble.not_module_class", name="Attention", params="(d_in, d_out)"),
    ),
    (
        "Attention does not take the lesson's arguments (d_in, d_out): «too many positional arguments»",
        M("trouble.bad_arguments", name="Attention", params="(d_in, d_out)", error="«too many positional arguments»"),
    ),
    (
        "make_model is not a module class or a function that returns a module",
        M("trouble.not_factory", name="make_model"),
    ),
    (
        "make_model(d_in=3, d_out=2) returned int, not a torch.nn.Module",
        M("trouble.built_not_module", call="make_model(d_in=3, d_out=2)", type="int"),
    ),
    (
        "make_model(d_in=3, d_out=2) raised «KeyError: 'x'» at attn.py:4",
        M(
            "trouble.raised",
            who="make_model(d_in=3, d_out=2)",
            error=M("trouble.crash_at", error="«KeyError: 'x'»", where="attn.py:4"),
        ),
    ),
    (
        "the call on 1 new tokens raised «RuntimeError: shape mismatch» at attn.py:20",
        M("trouble.raised", who=M("trouble.call_new_tokens", n=1), error=CRASHED),
    ),
    (
        "the reset raised «AttributeError: 'NoneType' object has no attribute 'zero_'» at attn.py:9",
        M(
            "trouble.raised",
            who=M("trouble.the_reset"),
            error=M(
                "trouble.crash_at",
                error="«AttributeError: 'NoneType' object has no attribute 'zero_'»",
                where="attn.py:9",
            ),
        ),
    ),
    (
        "flash_attention raised «IndexError: index 6 is out of bounds» at attn.py:12 (T = 6, block_size = 4)",
        M(
            "trouble.raised_sizes",
            who="flash_attention",
            error=M("trouble.crash_at", error="«IndexError: index 6 is out of bounds»", where="attn.py:12"),
            tokens=6,
            block=4,
        ),
    ),
    (
        "flash_attention returned list, not a tensor of floating-point values",
        M("trouble.not_float_tensor", who="flash_attention", type="list"),
    ),
    ("self_attention returned list, not a tensor", M("trouble.not_tensor", who="self_attention", type="list")),
    (
        "self_attention returned a torch.int64 tensor, not floating-point values",
        M("trouble.not_float_dtype", who="self_attention", dtype="torch.int64"),
    ),
    (
        "the call on tokens 3-3 returned NoneType, not a float tensor",
        M("trouble.call_not_float", a=3, b=3, type="NoneType"),
    ),
    (
        "forward(x, kv_cache) returned Tensor, not (context, cache)",
        M("trouble.cache_not_pair", param="kv_cache", type="Tensor"),
    ),
    (
        "the check of Attention did not finish within 60 s (an endless loop?)",
        M("trouble.overtime", what=M("trouble.check_of", name="Attention"), seconds=60.0),
    ),
    (
        "importing attn.py did not finish within 60 s (an endless loop?)",
        M("trouble.overtime", what=M("trouble.importing", file="attn.py"), seconds=60.0),
    ),
    (
        "lesson flash checks a function flash_attention(q, k, v, block_size), not <class 'attn.Flash'>",
        M("trouble.flash_wants_function", obj="<class 'attn.Flash'>"),
    ),
    (
        "lesson simple checks a function f(inputs) -> context vectors, not <class 'attn.A'>",
        M("trouble.simple_wants_function", obj="<class 'attn.A'>"),
    ),
    ("W_key.weight has shape (3, 3), but the key weight maps d_in=3 to d_out=2", SHAPE),
    (
        "proj.weight has shape (4, 2); the W_value weight maps d_in=3 to d_out=2",
        M("trouble.weight_shape_as", param="proj.weight", shape="(4, 2)", role="W_value", d_in=3, d_out=2),
    ),
    (
        "heads.out.weight has shape (3, 3): an output projection over the «heads» heads maps their 4 joined outputs "
        "to 4",
        M("trouble.out_proj_shape", param="heads.out.weight", shape="(3, 3)", path="«heads»", width=4),
    ),
    (
        "cannot tell which weights are query, key and value: 4 matrices map d_in=3 to d_out=2 (a, b, c, d); "
        "name them W_query, W_key, W_value (extra: d)",
        M("trouble.qkv_ambiguous", count=4, d_in=3, d_out=2, names="a, b, c, d", extra="d"),
    ),
    (
        "cannot find query, key and value weights (3 -> 2 each, or one fused 3 -> 6) among the module's parameters: "
        "no parameters",
        M("trouble.qkv_missing", d_in=3, d_out=2, fused=6, found=M("trouble.no_parameters")),
    ),
    (
        "cannot tell which matrix is the output projection: proj_a, proj_b; name it out_proj",
        M("trouble.out_proj_ambiguous", names="proj_a, proj_b"),
    ),
    (
        "head 2 (heads.1): W_key.weight has shape (3, 3), but the key weight maps d_in=3 to d_out=2",
        M("trouble.in_head", n=2, path="heads.1", problem=SHAPE),
    ),
    (
        "the heads in «heads» do not all have a W_key of one shape; the lesson's heads are alike",
        M("trouble.heads_unlike", path="«heads»", role="W_key"),
    ),
    (
        f"Attention.forward requires «freqs», which the check cannot pass: lesson rope calls forward(x) and passes "
        f"only the parameters named {KNOWN}…",
        M("trouble.forward_requires", module="Attention", param="«freqs»", lesson="rope", known=KNOWN),
    ),
    ("«a message of a library, said as it is»", M("trouble.plain", text="«a message of a library, said as it is»")),
)
"""One message of each kind a trouble line says, and the English it has always been (student's parts in «»)."""


def _own(marked: str) -> tuple[str, ...]:
    return tuple(re.findall(r"«(.*?)»", marked))


@pytest.mark.parametrize(("english", "said"), SENTENCES, ids=[m.key for _, m in SENTENCES])
def test_every_trouble_message_says_its_english_and_has_chinese(english: str, said: M) -> None:
    assert render(said, "en") == english  # the English, byte for byte, as the check always wrote it
    own = _own(english)
    zh = render(said, "zh")
    if said.key != "trouble.plain":  # a message of ours that has no key is said as it is, in every language
        assert zh != english and HAN.search(zh), zh
    assert all(part in zh for part in own), (zh, own)  # the student's words, exactly
    assert not english_words(zh.replace(S, "").replace("»", ""), own), (zh, english_words(zh, own))


def test_the_students_exception_text_is_kept_exactly() -> None:
    text = "ValueError: expected a tensor at position 2, got list"
    said = M("trouble.raised", who="Attention", error=M("trouble.crash_at", error=text, where="attn.py:7"))
    assert render(said, "zh") == f"Attention 抛出了 {text}（位于 attn.py:7）"
    assert render(said, "en") == f"Attention raised {text} at attn.py:7"


RESIZED = (
    ("building it raised «ValueError: no»", M("resize.building_raised", error="«ValueError: no»")),
    (
        "it cannot be built («Attention takes no window»)",
        M("resize.cannot_build", problem="«Attention takes no window»"),
    ),
    (
        "its weights do not follow the sizes (W_key.weight has shape (3, 3), but the key weight maps d_in=3 "
        "to d_out=2)",
        M("resize.weights_unfit", problem=SHAPE),
    ),
    (
        "in eval mode it raised «RuntimeError: shape '[2, 7, 4, -1]' is invalid»",
        M(
            "resize.in_mode",
            mode=M("resize.eval"),
            what=M("resize.raised", error="«RuntimeError: shape '[2, 7, 4, -1]' is invalid»"),
        ),
    ),
    (
        "in train mode it returned «tuple»",
        M("resize.in_mode", mode=M("resize.train"), what=M("resize.returned", type="«tuple»")),
    ),
    (
        "in eval mode it returned nothing",
        M("resize.in_mode", mode=M("resize.eval"), what=M("resize.returned_nothing")),
    ),
    ("its result has shape (2, 7, 2) instead of (2, 7, 3)", M("resize.shape", shape="(2, 7, 2)", want="(2, 7, 3)")),
    (
        "with dropout=0.0 in training mode its result still differs (by up to 0.5), as if its dropout rate were fixed",
        M("resize.fixed_dropout", err=0.5),
    ),
    ("its result differs from the lesson's by up to 0.131", M("resize.differs", err=0.13112)),
    ("it returned no tensor of floating-point values", M("resize.no_tensor")),
    (
        "it raised «IndexError: index 6 is out of bounds for dimension 0 with size 6»",
        M("resize.it_raised", error="«IndexError: index 6 is out of bounds for dimension 0 with size 6»"),
    ),
    (
        "the call on tokens 7-8 raised «RuntimeError: The expanded size of the tensor (2) must match»",
        M("resize.call_raised", a=7, b=8, error="«RuntimeError: The expanded size of the tensor (2) must match»"),
    ),
    (
        "the reset raised «AttributeError: 'NoneType' object has no attribute 'zero_'»",
        M("resize.reset_raised", error="«AttributeError: 'NoneType' object has no attribute 'zero_'»"),
    ),
    ("its calls returned results that do not join along the tokens", M("resize.not_joined")),
)
"""One of each thing a second build at other sizes says (:func:`tracer.compare.check.resize.judge`)."""


@pytest.mark.parametrize(("english", "said"), RESIZED, ids=[m.key for _, m in RESIZED])
def test_every_sentence_of_the_second_build_has_chinese(english: str, said: M) -> None:
    assert render(said, "en") == english
    own = _own(english)
    zh = render(said, "zh")
    assert zh != english and HAN.search(zh), zh
    assert all(part in zh for part in own), (zh, own)  # the student's words
    assert not english_words(zh.replace(S, "").replace("»", ""), (*own, "dropout")), zh  # dropout=0.0 is code


def test_the_sizes_of_a_second_build_are_said_in_either_language() -> None:
    sizes = M("resize.sizes_calls", names="d_in=4, d_out=3, context_length=9", tokens=8, calls=5)
    assert render(sizes, "en") == "d_in=4, d_out=3, context_length=9, 8 tokens in 5 calls"
    assert render(sizes, "zh") == "d_in=4, d_out=3, context_length=9，8 个词元，分 5 次调用"


def test_a_missing_file_is_said_in_the_language_asked_for(tmp_path: Path) -> None:
    """Found before any child runs, still a message rendered at the edge in the reader's language."""
    for lang, said in (("zh", "没有这个文件："), ("en", "no such file: ")):
        res = CliRunner().invoke(app, ["check", f"{tmp_path / 'none.py'}:A", "--lesson", "causal", "--lang", lang])
        assert res.exit_code == 2 and said in res.output and "Traceback" not in res.output, res.output
