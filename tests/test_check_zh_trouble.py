"""``check --lang zh`` says its trouble (exit 2) in Chinese; the student's own exception text stays as it was.

Two ways in: the command on submissions that crash or have weights of the
wrong shape (and a flash function returning the wrong shape, which is a
verdict, not trouble), and every sentence the check's sources write read
back by :func:`tracer.present.trouble.chinese`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import app
from tracer.compare.check.lessons import SPECS
from tracer.present.trouble import chinese

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


SENTENCES = (
    "no verdict: the check of attn.py did not finish within 60 s and was killed (an endless loop?)",
    "no verdict: the check of attn.py was killed by SIGKILL (out of memory? the limit is 2048 MB)",
    "no verdict: the check of attn.py was killed by SIGSEGV",
    "no verdict: the check of attn.py exited with status 3 before sending its verdict (os._exit or sys.exit?)",
    "no verdict: the check of attn.py sent malformed data: it sent a verdict of its own",
    "no verdict: the child sent a malformed message",
    "ran out of memory (the limit is 2048 MB): MemoryError",
    "the check failed",
    "the captured code computed nothing in torch",
    "no such file: attn.py",
    "cannot load attn.py as Python",
    "attn.py failed to import: «SyntaxError: invalid syntax (attn.py, line 3)»",
    "attn.py defines no 'Attention'",
    "Attention must be a torch.nn.Module class: (d_in, d_out)",
    "Attention does not take the lesson's arguments (d_in, d_out): «too many positional arguments»",
    "make_model is not a module class or a function that returns a module",
    "make_model(d_in=3, d_out=2) returned int, not a torch.nn.Module",
    "make_model(d_in=3, d_out=2) raised KeyError: 'x' at attn.py:4",
    "the call on 1 new tokens raised «RuntimeError: shape mismatch» at attn.py:20",
    "the reset raised «AttributeError: 'NoneType' object has no attribute 'zero_'» at attn.py:9",
    "flash_attention raised «IndexError: index 6 is out of bounds» at attn.py:12 (T = 6, block_size = 4)",
    "flash_attention returned list, not a tensor of floating-point values",
    "self_attention returned list, not a tensor",
    "self_attention returned a torch.int64 tensor, not floating-point values",
    "the call on tokens 3-3 returned NoneType, not a float tensor",
    "forward(x, kv_cache) returned Tensor, not (context, cache)",
    "the check of Attention did not finish within 60 s (an endless loop?)",
    "importing attn.py did not finish within 60 s (an endless loop?)",
    "lesson flash checks a function flash_attention(q, k, v, block_size), not <class 'attn.Flash'>",
    "lesson simple checks a function f(inputs) -> context vectors, not <class 'attn.A'>",
    "W_key.weight has shape (3, 3), but the key weight maps d_in=3 to d_out=2",
    "proj.weight has shape (4, 2); the value weight maps d_in=3 to d_out=2",
    "heads.out.weight has shape (3, 3): an output projection over the «heads» heads maps their 4 joined outputs to 4",
    "cannot tell which weights are query, key and value: 4 matrices map d_in=3 to d_out=2 (a, b, c, d); "
    "name them W_query, W_key, W_value (extra: d)",
    "cannot find query, key and value weights (3 -> 2 each, or one fused 3 -> 6) among the module's parameters: "
    "no parameters",
    "cannot tell which matrix is the output projection: proj_a, proj_b; name it out_proj",
    "head 2 (heads.1): W_key.weight has shape (3, 3), but the key weight maps d_in=3 to d_out=2",
    "the heads in «heads» do not all have a W_key of one shape; the lesson's heads are alike",
    "Attention.forward requires «freqs», which the check cannot pass: lesson rope calls forward(x) and passes only "
    "the parameters named «position_ids, positions, mask»…",
)
"""One of each sentence the check's sources write into a trouble line (the student's parts made up, in «»)."""


@pytest.mark.parametrize("marked", SENTENCES)
def test_every_trouble_sentence_has_chinese(marked: str) -> None:
    own = tuple(re.findall(r"«(.*?)»", marked))
    sentence = marked.replace("«", "").replace("»", "")
    said = chinese(sentence)
    assert said != sentence and HAN.search(said), said
    assert all(part in said for part in own), (said, own)  # the student's words, exactly
    assert not english_words(said, own), (said, english_words(said, own))


def test_the_students_exception_text_is_kept_exactly() -> None:
    text = "ValueError: expected a tensor at position 2, got list"
    assert chinese(f"Attention raised {text} at attn.py:7") == f"Attention 抛出了 {text}（位于 attn.py:7）"
    assert chinese("a line no rule reads") == "a line no rule reads"  # left English, never mangled


RESIZED = (
    "building it raised «ValueError: no»",
    "it cannot be built («Attention takes no window»)",
    "its weights do not follow the sizes («W_key.weight has shape (3, 3)»)",
    "in eval mode it raised «RuntimeError: shape '[2, 7, 4, -1]' is invalid»",
    "in train mode it returned «tuple»",
    "its result has shape (2, 7, 2) instead of (2, 7, 3)",
    "with dropout=0.0 in training mode its result still differs (by up to 0.5), as if its dropout rate were fixed",
    "its result differs from the lesson's by up to 0.131",
    "it returned no tensor of floating-point values",
    "it raised «IndexError: index 6 is out of bounds for dimension 0 with size 6»",
    "the call on tokens 7-8 raised «RuntimeError: The expanded size of the tensor (2) must match»",
    "the reset raised «AttributeError: 'NoneType' object has no attribute 'zero_'»",
    "its calls returned results that do not join along the tokens",
)
"""One of each sentence a second build at other sizes says (:func:`tracer.compare.check.resize.judge`)."""


@pytest.mark.parametrize("marked", RESIZED)
def test_every_sentence_of_the_second_build_has_chinese(marked: str) -> None:
    from tracer.compare.check import resize

    own = tuple(re.findall(r"«(.*?)»", marked))
    sentence = marked.replace("«", "").replace("»", "")
    assert any(re.match(pattern, sentence) for pattern, _ in resize.ZH), sentence  # a sentence judge can say
    sizes, said = resize.chinese("d_in=4, d_out=3, context_length=9, 8 tokens in 5 calls", sentence)
    assert sizes == "d_in=4, d_out=3, context_length=9，8 个词元，分 5 次调用"
    assert said != sentence and HAN.search(said), said
    assert all(part.replace("raised", "抛出了") in said for part in own), (said, own)  # the student's words
    assert not english_words(said, (*own, "dropout")), said  # the parameter's name stays, as the catalogue's does
