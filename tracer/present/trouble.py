"""``check``'s trouble messages (exit 2) in Chinese, the student's own words left as they are.

A trouble message is one English line assembled where the trouble happened
(``tracer/compare/check/``, ``tracer/sandbox/``): who ran, what went wrong,
and often the text of an exception the student's code raised, or the
names of its parameters.  :func:`chinese` reads the line back with the
patterns below, one per sentence the check can say, and writes each in
Chinese; the parts it captures are either code (names, shapes, a file and
line), the student's exception text (kept exactly), or a smaller message
of the check (read again, so ``head 2 (heads.1): …`` translates what
follows the colon too).  A line no pattern reads stays English: a new
message without its translation shows as English, and
``tests/test_check_zh_trouble.py`` holds one of each sentence the check
writes today (add a new one there with its rule).
"""

from __future__ import annotations

import re
from collections.abc import Callable

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]

ROLES = {"query": "查询", "key": "键", "value": "值", "output": "输出"}
"""The weights' roles as the check names them in a sentence."""


def _role(word: str) -> str:
    return ROLES.get(word, word)


def _who(text: str) -> str:
    """Who ran, in a ``… raised …`` or ``… did not finish …`` sentence: code stays, the check's words do not."""
    m = re.fullmatch(r"the call on (\d+) new tokens?", text)
    if m:
        return f"送入 {m[1]} 个新词元的调用"
    if text == "the reset":
        return "清空缓存的调用"
    m = re.fullmatch(r"the check of (.+)", text)
    if m:
        return f"{m[1]} 的检查"
    m = re.fullmatch(r"importing (.+)", text)
    if m:
        return f"导入 {m[1]} 时"
    return text


def _crash(text: str) -> str:
    """An exception the student's code raised: its text kept, only the check's ``at FILE:LINE`` translated."""
    return re.sub(r" at ([\w./\\-]+\.py:\d+)(?= \(T = |$)", r"（位于 \1）", text)


def _why(text: str) -> str:
    """Why a child sent no verdict (:mod:`tracer.sandbox`), after ``the check of NAME``."""
    m = re.fullmatch(r"did not finish within (\S+) s and was killed \(an endless loop\?\)", text)
    if m:
        return f"没有在 {m[1]} 秒内完成，已被终止（死循环？）"
    m = re.fullmatch(r"was killed by (\S+?)(?: \(out of memory\? the limit is (\S+) MB\))?", text)
    if m:
        return f"被 {m[1]} 终止" + (f"（内存不足？上限是 {m[2]} MB）" if m[2] else "")
    m = re.fullmatch(r"exited with status (-?\d+) before sending its verdict \(os\._exit or sys\.exit\?\)", text)
    if m:
        return f"在发回结论之前以状态 {m[1]} 退出（os._exit 或 sys.exit？）"
    m = re.fullmatch(r"sent malformed data: (.*)", text)
    if m:
        said = "它自己发回了一个结论" if m[1] == "it sent a verdict of its own" else m[1]
        return f"发回了格式不对的数据：{said}"
    return text


def _rule(pattern: str, write: Callable[[re.Match[str]], str]) -> Rule:
    return re.compile(pattern, re.DOTALL), write


RULES: tuple[Rule, ...] = (
    _rule(r"no verdict: the child sent a malformed message", lambda m: "没有结论：子进程发回的消息格式不对"),
    _rule(
        r"no verdict: the check of (.+?) ((?:did not|was killed|exited|sent malformed).*)",
        lambda m: f"没有结论：{m[1]} 的检查{_why(m[2])}",
    ),
    _rule(
        r"ran out of memory \(the limit is (\S+) MB\): (.*)", lambda m: f"内存不足（上限是 {m[1]} MB）：{_crash(m[2])}"
    ),
    _rule(r"([^:]+?) raised (.*)", lambda m: f"{_who(m[1])} 抛出了 {_crash(m[2])}"),  # who ran holds no colon
    _rule(r"the check failed", lambda m: "检查失败"),
    _rule(r"the captured code computed nothing in torch", lambda m: "被捕获的代码没有用 torch 计算任何东西"),
    _rule(r"the check failed: (.*)", lambda m: f"检查失败：{m[1]}"),
    _rule(r"check wants FILE\.py:NAME, not (.*)", lambda m: f"check 需要 FILE.py:NAME，而不是 {m[1]}"),
    _rule(r"no such file: (.*)", lambda m: f"没有这个文件：{m[1]}"),
    _rule(r"cannot load (.*) as Python", lambda m: f"无法把 {m[1]} 当作 Python 载入"),
    _rule(r"([^:]+?) failed to import: (.*)", lambda m: f"导入 {m[1]} 失败：{m[2]}"),
    _rule(r"([^:]+?) defines no (.*)", lambda m: f"{m[1]} 中没有定义 {m[2]}"),
    _rule(r"(.+?) must be a torch\.nn\.Module class: (.*)", lambda m: f"{m[1]} 必须是 torch.nn.Module 的子类：{m[2]}"),
    _rule(
        r"(.+?) does not take the lesson's arguments (\(.*?\)): (.*)",
        lambda m: f"{m[1]} 不接受课程的参数 {m[2]}：{m[3]}",
    ),
    _rule(
        r"(\S+)\.forward requires (\S+), which the check cannot pass: lesson (\S+) calls forward\(x\) and passes only "
        r"the parameters named (.*)",
        lambda m: (
            f"{m[1]}.forward 需要参数 {m[2]}，检查无法传入：课程 {m[3]} 调用 forward(x)，只会传入以下名字的参数：{m[4]}"
        ),
    ),
    _rule(
        r"(.+?) is not a module class or a function that returns a module",
        lambda m: f"{m[1]} 既不是模块类，也不是返回模块的函数",
    ),
    _rule(
        r"lesson (\w+) checks a function (.+?) -> context vectors, not (.*)",
        lambda m: f"课程 {m[1]} 检查的是函数 {m[2]} -> 上下文向量，而不是 {m[3]}",
    ),
    _rule(
        r"lesson (\w+) checks a function (.+?), not (.*)", lambda m: f"课程 {m[1]} 检查的是函数 {m[2]}，而不是 {m[3]}"
    ),
    _rule(
        r"forward\(x, (\w+)\) returned (\w+), not \(context, cache\)",
        lambda m: f"forward(x, {m[1]}) 返回了 {m[2]}，而不是 (context, cache)",
    ),
    _rule(
        r"the call on tokens (\d+)-(\d+) returned (\w+), not a float tensor",
        lambda m: f"送入第 {m[1]} 到 {m[2]} 个词元的调用返回了 {m[3]}，而不是浮点张量",
    ),
    _rule(
        r"([^:]+?) returned (\S+), not a torch\.nn\.Module", lambda m: f"{m[1]} 返回了 {m[2]}，而不是 torch.nn.Module"
    ),
    _rule(
        r"([^:]+?) returned (\S+), not a tensor of floating-point values",
        lambda m: f"{_who(m[1])} 返回了 {m[2]}，而不是浮点数张量",
    ),
    _rule(r"([^:]+?) returned (\S+), not a tensor", lambda m: f"{_who(m[1])} 返回了 {m[2]}，而不是张量"),
    _rule(
        r"([^:]+?) returned a (\S+) tensor, not floating-point values",
        lambda m: f"{_who(m[1])} 返回了 {m[2]} 张量，而不是浮点数值",
    ),
    _rule(
        r"([^:]+?) did not finish within (\S+) s \(an endless loop\?\)",
        lambda m: f"{_who(m[1])}没有在 {m[2]} 秒内完成（死循环？）",
    ),
    _rule(
        r"(\S+) has shape (\(.*?\)), but the (\w+) weight maps d_in=(\d+) to d_out=(\d+)",
        lambda m: f"{m[1]} 的形状是 {m[2]}，但{_role(m[3])}权重应把 d_in={m[4]} 映射到 d_out={m[5]}",
    ),
    _rule(
        r"(\S+) has shape (\(.*?\)); the (\w+) weight maps d_in=(\d+) to d_out=(\d+)",
        lambda m: f"{m[1]} 的形状是 {m[2]}；{_role(m[3])}权重应把 d_in={m[4]} 映射到 d_out={m[5]}",
    ),
    _rule(
        r"(\S+) has shape (\(.*?\)): an output projection over the (\S+) heads maps their (\d+) joined outputs to \d+",
        lambda m: f"{m[1]} 的形状是 {m[2]}：{m[3]} 各头之上的输出投影应把拼接后的 {m[4]} 维输出映射到 {m[4]} 维",
    ),
    _rule(
        r"cannot tell which weights are query, key and value: (\d+) matrices map d_in=(\d+) to d_out=(\d+) \((.*)\); "
        r"name them W_query, W_key, W_value \(extra: (.*)\)",
        lambda m: (
            f"分不清哪些权重是查询、键和值：有 {m[1]} 个矩阵把 d_in={m[2]} 映射到 d_out={m[3]}（{m[4]}）；"
            f"请把它们命名为 W_query、W_key、W_value（多出的：{m[5]}）"
        ),
    ),
    _rule(
        r"cannot find query, key and value weights \((\d+) -> (\d+) each, or one fused \d+ -> (\d+)\) among the "
        r"module's parameters: (.*)",
        lambda m: (
            f"在模块的参数中找不到查询、键和值的权重（各为 {m[1]} -> {m[2]}，或一个合并的 {m[1]} -> {m[3]}）："
            + ("没有参数" if m[4] == "no parameters" else m[4])
        ),
    ),
    _rule(
        r"cannot tell which matrix is the output projection: (.*); name it out_proj",
        lambda m: f"分不清哪个矩阵是输出投影：{m[1]}；请把它命名为 out_proj",
    ),
    _rule(r"head (\d+) \((\S+)\): (.*)", lambda m: f"第 {m[1]} 个头（{m[2]}）：{chinese(m[3])}"),
    _rule(
        r"the heads in (\S+) do not all have a (\S+) of one shape; the lesson's heads are alike",
        lambda m: f"{m[1]} 中各头的 {m[2]} 形状不一致；课程中的各头都是一样的",
    ),
)
"""Every sentence of a trouble message, in the order tried (the first that reads the whole line wins)."""


def chinese(message: str) -> str:
    """``message`` in Chinese; a line no rule reads is returned as it is."""
    for pattern, write in RULES:
        m = pattern.fullmatch(message)
        if m:
            return write(m)
    return message
