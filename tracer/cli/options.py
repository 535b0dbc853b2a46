"""The options shared by the commands that compute or read a trace, and the code that turns them into one.

``--lesson``, ``--inputs``, ``--text`` and the rest choose what is traced
(:func:`input_options`, :func:`build_trace`); ``--from`` reads a saved trace
instead (:func:`trace_source`), and never together with them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

import tracer
from tracer.api import DEFAULT_LESSON
from tracer.cli import lessonopts
from tracer.cli.group import UserError, status
from tracer.core.files import quoted
from tracer.errors import InputError, InputNote, message_of, unknown
from tracer.message import Message

F = TypeVar("F", bound=Callable[..., Any])


class LessonChoice(click.Choice[str]):
    """``--lesson`` as a choice of the registry's lessons, refused in the words every command uses.

    Click would say "Invalid value for '--lesson': 'x' is not one of ...";
    ``explain``, ``report`` and the library say :func:`tracer.errors.unknown`'s
    "unknown lesson 'x': choose from ...", so this says that too.
    """

    def __init__(self) -> None:
        from tracer.record import registry

        super().__init__(registry.names())

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """``NAME`` in ``--help``: the list grows with every installed lesson (``attn-trace lessons`` lists them)."""
        return "NAME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value not in self.choices:
            raise UserError(unknown("lesson", value, [str(c) for c in self.choices]))
        return str(value)


def input_options(func: F) -> F:
    """The options that choose what gets traced (shared by every command that computes)."""
    opts = [
        click.option(
            "--lesson", default=DEFAULT_LESSON, show_default=True, help="Which lesson to trace (see `lessons`)."
        ),
        click.option(
            "--inputs",
            "inputs_file",
            type=click.Path(dir_okay=True, path_type=Path),
            help="Embeddings file: .json, .csv, .npy or .pt (default: the tutorial's six tokens).",
        ),
        click.option("--tokens", help="Token labels for the rows, separated by spaces."),
        click.option(
            "--text",
            help="Embed these whitespace-separated tokens with seeded random numbers"
            " (a lesson with its own text option, such as a real model's, takes the sentence as it is).",
        ),
        click.option("--dim", type=int, help="With --text: embedding size (default 3)."),
        click.option("--seed", type=int, help="With --text: random seed (default 0)."),
        click.option("--query", type=int, help="1-based focus query (default 2, or 1 for a single token)."),
        click.option(
            "--dtype",
            type=click.Choice(["float32", "float64"]),
            default="float32",
            show_default=True,
            help="Precision the values are computed in.",
        ),
        click.option("--pipeline", help="Your own pipeline instead of a lesson: module:function or file.py:function."),
        click.option(
            "--torch",
            "torch_fn",
            metavar="FILE.py:FN",
            help="Capture your own torch code: FN() builds and runs it and returns the output tensor.",
        ),
        *lessonopts.click_options(),  # each lesson's own, from its Options dataclass
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def backward_options(func: F) -> F:
    """``--backward`` and ``--grad-output FILE``: trace the lesson's backward pass too."""
    opts = [
        click.option(
            "--backward",
            is_flag=True,
            default=None,
            help="Trace the backward pass too: every gradient from the output's back to the weights and inputs "
            "(upstream gradient: that of L = ½ Σ z², unless --grad-output gives one).",
        ),
        click.option(
            "--grad-output",
            "grad_output",
            type=click.Path(path_type=Path),
            help="The upstream gradient of the lesson's output (.json, .csv, .npy, .pt; the output's shape). "
            "Implies --backward.",
        ),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def build_trace(
    lesson: str,
    inputs_file: Path | None,
    tokens: str | None,
    text: str | None,
    dim: int | None,
    seed: int | None,
    query: int | None,
    dtype: str,
    pipeline: str | None = None,
    torch_fn: str | None = None,
    backward: bool | None = None,
    grad_output: Path | None = None,
    **lesson_options: Any,
) -> tracer.Trace:
    """Validate the input options and run the lesson (``lesson_options``: the lessons' own, ``None`` when not given),
    and its backward pass when asked."""
    from tracer import api
    from tracer.record import inputs

    own = {k: v for k, v in lesson_options.items() if v is not None}
    if torch_fn is not None:
        others = {"--lesson": lesson != DEFAULT_LESSON, "--inputs": inputs_file is not None, "--text": text is not None}
        others.update({"--dim": dim is not None, "--seed": seed is not None, "--dtype": dtype != "float32"})
        for name, flag in lessonopts.flags().items():  # a general flag (--text) may carry a lesson's option too
            others[flag] = others.get(flag, False) or name in own
        others["--pipeline"] = pipeline is not None
        others.update({"--backward": bool(backward), "--grad-output": grad_output is not None})
        clash = [k for k, v in others.items() if v]
        if clash:
            raise UserError(Message("cli.torch_runs_your_code", clash=", ".join(clash)))
        from tracer.record.capture import script

        return script.run(torch_fn, tokens.split() if tokens is not None else None, query)
    own_text = None
    if text is not None and pipeline is None and set(lessonopts.GENERAL) & set(lesson_option_names(lesson)):
        own_text, text = text, None  # the lesson's own sentence, not tokens to embed
    if text is None and (dim is not None or seed is not None):
        raise UserError(Message("cli.dim_seed_go_text"))
    if text is not None and (inputs_file is not None or tokens is not None):
        raise UserError(Message("cli.text_cannot_combined_inputs"))
    labels = tokens.split() if tokens is not None else None
    data: Any = None
    source: dict[str, Any] | None = None
    if inputs_file is not None:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", InputNote)
            data, file_tokens = inputs.read_file(inputs_file)
        for w in said:
            status(f"note: {w.message}")
        labels = labels if labels is not None else file_tokens
        source = {"kind": "file", "name": inputs_file.name}
    elif text is not None:
        d, s = 3 if dim is None else dim, 0 if seed is None else seed
        data, labels = inputs.from_text(text, d, s)
        source = {"kind": "text", "text": text, "dim": d, "seed": s}
    elif labels is not None:
        data, _ = inputs.tutorial()
    try:
        ex = api.example(data, labels, query, dtype, source)
    except InputError as e:  # what is wrong with a file's numbers names the file, whichever check found it
        if inputs_file is None or e.arg is not None or str(e).startswith(f"{quoted(inputs_file.name)}: "):
            raise
        raise InputError(Message("inputs.in_file", file=quoted(inputs_file.name), error=message_of(e))) from None
    if pipeline is not None:
        from tracer.record import custom

        if lesson != DEFAULT_LESSON or own or backward or grad_output is not None:
            raise UserError(Message("cli.pipeline_replaces_lesson_lesson"))
        return custom.run(pipeline, ex)
    if own_text is not None:
        own["text"] = own_text
    if backward:
        own["backward"] = True
    if grad_output is not None:
        own["grad_output"] = _grad_file(grad_output)
    return api.run(lesson, ex, **own)


def _grad_file(path: Path) -> Any:
    """The upstream gradient read from a file of the inputs' formats (numbers, any labels ignored)."""
    from tracer.record import inputs
    from tracer.record.blocks.backward import gradient_array

    try:
        return gradient_array(inputs.read_file(path)[0])
    except InputError as e:
        raise InputError(Message("cli.grad_output", file=quoted(path.name), error=message_of(e))) from None


def lesson_option_names(lesson: str) -> tuple[str, ...]:
    """The names of a registered lesson's own options (none for a name no lesson has: reported later)."""
    from tracer.record import registry
    from tracer.record.lesson import option_names

    try:
        return option_names(registry.get(lesson).options)
    except InputError:
        return ()


def trace_source(from_file: Path | None, options: dict[str, Any], check: bool = False) -> tracer.Trace:
    """A saved trace (``--from``) or a freshly computed one, never both.

    With ``check``, a saved trace is verified, and values that do not follow
    from their inputs are named once on stderr (``explain`` and ``report``).
    """
    if from_file is not None:
        given = [k for k, v in options.items() if v not in (None, False) and k not in ("lesson", "dtype")]
        if given or options.get("dtype") != "float32" or options.get("lesson") != DEFAULT_LESSON:
            raise UserError(Message("cli.reads_saved_trace_input"))
        t = tracer.load(from_file)
        if check and not (result := t.verify()).ok:
            status(f"note: {from_file.name}: {result.summary()}")
        return t
    return build_trace(**options)


def from_option(func: F) -> F:
    """``--from FILE``: read a saved trace instead of computing one."""
    return click.option(
        "--from", "from_file", type=click.Path(path_type=Path), help="Read a saved trace file instead of computing."
    )(func)


def decimals_option(func: F) -> F:
    """``--decimals N`` (default 4, as the tutorial prints)."""
    return click.option(
        "--decimals", type=click.IntRange(0, 12), default=4, show_default=True, help="Decimals to show."
    )(func)


class Limit(click.ParamType):  # type: ignore[type-arg]
    """A limit given on the command line: a finite number from 0 (no limit) to ``most``, in ``unit``.

    ``nan``, ``inf`` and ``1e300`` are refused here, in one line with exit
    status 2, before any submission runs (a NaN once reached ``setitimer``
    inside the student's child and was blamed on the student's file).
    """

    name = "number"

    def __init__(self, most: float, unit: str) -> None:
        self.most, self.unit = most, unit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            got = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not 0 <= got <= self.most:  # false for nan too
            self.fail(f"{value!r} is not a number from 0 to {self.most:,.0f} {self.unit}", param, ctx)
        return got
