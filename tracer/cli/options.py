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
from tracer.cli.group import UserError, status
from tracer.core.files import quoted
from tracer.errors import InputError, InputNote, unknown

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

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value not in self.choices:
            raise UserError(unknown("lesson", value, [str(c) for c in self.choices]))
        return str(value)


def input_options(func: F) -> F:
    """The options that choose what gets traced (shared by every command that computes)."""
    opts = [
        click.option("--lesson", default="simple", show_default=True, help="Which lesson to trace (see `lessons`)."),
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
        click.option("--weights", help="Lesson trainable: rand (default, seed 123), linear (seed 789) or a file."),
        click.option("--d-out", "d_out", type=int, help="Lessons with projections: output size (default 2)."),
        click.option("--window", type=int, help="Lesson window: how many keys each query sees (default 3)."),
        click.option("--heads", type=int, help="Lesson gqa: query heads (default 4)."),
        click.option("--groups", type=int, help="Lesson gqa: key/value groups (default 2; 1: multi-query)."),
        click.option("--prompt", type=int, help="Lesson kvcache: tokens fed at once before generating (default 3)."),
        click.option("--pipeline", help="Your own pipeline instead of a lesson: module:function or file.py:function."),
        click.option(
            "--torch",
            "torch_fn",
            metavar="FILE.py:FN",
            help="Capture your own torch code: FN() builds and runs it and returns the output tensor.",
        ),
        click.option("--block", type=int, help="Lesson flash: keys per block of the online softmax (default 2)."),
        click.option("--base", type=float, help="Lesson rope: the base of the frequencies θ_p (default 10000)."),
        click.option("--offset", type=int, help="Lesson rope: how far both positions are shifted (default 100)."),
        click.option(
            "--rope-style",
            "rope_style",
            type=click.Choice(["half", "interleaved"]),
            help="Lesson rope: pairs (x_p, x_p+d/2) as rotate_half (default), or neighbours (x_2p-1, x_2p).",
        ),
        click.option("--layer", type=int, help="Lesson model: the traced layer, from 0 (default 3)."),
        click.option("--head", type=int, help="Lesson model: the traced query head, from 0 (default 5)."),
        click.option(
            "--model",
            type=click.Path(path_type=Path),
            help="Lesson model: a Llama-architecture .gguf file or Hugging Face folder (default: SmolLM2-135M).",
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
    weights: str | None = None,
    d_out: int | None = None,
    window: int | None = None,
    heads: int | None = None,
    groups: int | None = None,
    prompt: int | None = None,
    pipeline: str | None = None,
    torch_fn: str | None = None,
    block: int | None = None,
    base: float | None = None,
    offset: int | None = None,
    rope_style: str | None = None,
    layer: int | None = None,
    head: int | None = None,
    model: Path | None = None,
) -> tracer.Trace:
    """Validate the input options and run the lesson."""
    from tracer import api
    from tracer.record import inputs

    if torch_fn is not None:
        others = {"--lesson": lesson != "simple", "--inputs": inputs_file is not None, "--text": text is not None}
        others.update({"--dim": dim is not None, "--seed": seed is not None, "--dtype": dtype != "float32"})
        others.update(
            {"--weights": weights is not None, "--d-out": d_out is not None, "--pipeline": pipeline is not None}
        )
        others.update({"--window": window is not None, "--heads": heads is not None, "--groups": groups is not None})
        others.update({"--block": block is not None})
        others.update({"--base": base is not None, "--offset": offset is not None, "--rope-style": bool(rope_style)})
        others.update({"--prompt": prompt is not None, "--layer": layer is not None, "--head": head is not None})
        others.update({"--model": model is not None})
        clash = [k for k, v in others.items() if v]
        if clash:
            raise UserError(
                f"--torch runs your code as it is: {', '.join(clash)} do not apply (only --tokens, --query)"
            )
        from tracer.record.capture import script

        return script.run(torch_fn, tokens.split() if tokens is not None else None, query)
    own_text = None
    if text is not None and pipeline is None and "text" in lesson_option_names(lesson):
        own_text, text = text, None  # the lesson's own sentence, not tokens to embed
    if text is None and (dim is not None or seed is not None):
        raise UserError("--dim and --seed go with --text")
    if text is not None and (inputs_file is not None or tokens is not None):
        raise UserError("--text cannot be combined with --inputs or --tokens")
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
        if inputs_file is None or e.arg is not None or str(e).startswith(named := f"{quoted(inputs_file.name)}: "):
            raise
        raise InputError(f"{named}{e}") from None
    if pipeline is not None:
        from tracer.record import custom

        own: tuple[object, ...] = (weights, d_out, window, heads, groups, block, prompt)
        own += (base, offset, rope_style, layer, head, model)
        if lesson != "simple" or any(v is not None for v in own):
            raise UserError("--pipeline replaces the lesson: --lesson and the lessons' options do not apply")
        return custom.run(pipeline, ex)
    extra: dict[str, Any] = {}
    if weights is not None:
        extra["weights"] = weights
    if d_out is not None:
        extra["d_out"] = d_out
    lessons_own: dict[str, object] = {
        "window": window,
        "heads": heads,
        "groups": groups,
        "block": block,
        "prompt": prompt,
    }
    lessons_own |= {"base": base, "offset": offset, "style": rope_style}
    lessons_own |= {"text": own_text, "layer": layer, "head": head, "model": None if model is None else str(model)}
    extra |= {name: value for name, value in lessons_own.items() if value is not None}
    return api.run(lesson, ex, **extra)


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
        given = [k for k, v in options.items() if v is not None and k not in ("lesson", "dtype")]
        if given or options.get("dtype") != "float32" or options.get("lesson") != "simple":
            raise UserError("--from reads a saved trace: input options cannot be combined with it")
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
