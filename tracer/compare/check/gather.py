"""The student's half of a check: build, find the weights, run; hand back data (:class:`.evidence.Evidence`).

Everything here runs the student's code, so under ``attn-trace check`` it
runs in the child process (:mod:`tracer.checking`), and nothing here decides
anything: it records what the code computed.  The module is built with the
lesson's sizes (:mod:`.build`), its weights are taken for the lesson's roles
(:mod:`.roles`, :mod:`.wrapper`), and it is called on the lesson's inputs in
eval mode under capture, then (when the lesson compares dropout) in training
mode under the lesson's seed, on a shorter sequence (a causal mask must cut
it), and, built again at other sizes, once more per size (:func:`.resizegather.gather`; lessons
``flash`` and ``kvcache`` too, after their own runs).

A crash of the student's code in the main run, or a result that is not a
floating-point tensor, raises (the check cannot go on); a crash on the
shorter sequence is kept, since it is itself a finding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tracer.compare.check import (
    build,
    convention,
    forwardargs,
    lessons,
    maskforms,
    reference,
    resizegather,
    roles,
    sizing,
    student,
)
from tracer.compare.check.evidence import Evidence, Failure, Run
from tracer.compare.check.model import Seen
from tracer.compare.check.student import name_of
from tracer.message import Message


def gather(obj: Any, spec: lessons.Spec) -> Evidence:
    """Run ``obj`` as lesson ``spec`` asks and keep what it computed (``spec`` as the caller sized it)."""
    if spec.driver == lessons.QKV:
        return _sized(obj, spec)
    if spec.driver == lessons.GRAD:  # a hand-written backward pass: its gradients alone (check --backward)
        from tracer.compare.check import gradcall

        return gradcall.collect(obj, spec)
    if spec.driver == lessons.GENERATION:
        return _generated(obj, spec)
    return _called(obj, spec)


def _sized(obj: Any, spec: lessons.Spec) -> Evidence:
    """A function of q, k, v and a block size, called at three sizes, then once more at others."""
    from tracer.compare.check import flashcheck

    ev = flashcheck.collect(obj, spec)
    ev.other = resizegather.gather_function(obj, spec)
    return ev


def _generated(obj: Any, spec: lessons.Spec) -> Evidence:
    """A module driven through a generation, then another, built at other sizes, through one more."""
    from tracer.compare.check import generation

    ev = generation.collect(obj, spec)
    if ev.structural is None:
        again = sizing.squared(spec, ev.square)
        ev.other = resizegather.gather(_builder(obj, again), again)
    return ev


def _function(obj: Any) -> Any:
    """``obj`` itself, when it is a function (lesson simple's code is one)."""
    from tracer.errors import InputError

    if not callable(obj) or isinstance(obj, type):
        raise InputError(Message("trouble.simple_wants_function", obj=repr(obj)))
    return obj


def _called(obj: Any, spec: lessons.Spec) -> Evidence:
    """A function, or a module built as the lesson's constructor is, called once per run under capture."""
    name = name_of(obj)
    ev = Evidence(name)
    if spec.is_class:
        try:
            module, ev.built, ev.roles, heads, spec, ev.square = build.module_for(obj, spec)
        except roles.Structural as e:  # another attention than the lesson's: no run to compare
            ev.structural = (e.code, dict(e.detail))
            return ev
        ev.bias = spec.bias
        ev.wrap = spec.d_out // spec.heads if heads is not None else 0
        ev.heads = heads[0] if heads is not None else ""
        fn: Any = module
        how = convention.settle(module, spec, ev.roles)  # its further arguments, as its own callers pass them
        given, ev.given, form = how.arguments(), how.given, how.forms
    else:
        module, fn, given, form = None, _function(obj), None, forwardargs.LESSON
    x = reference.inputs(spec)
    main = student.run(fn, x, spec.seed, given)
    if main.error is None and module is not None and form == forwardargs.LESSON:  # its tokens' layout, when wrong
        out = student.output_array(main.output, name)
        again = maskforms.relaid(module, spec, x, ev.roles, form, out)
        if again != form:
            how = convention.Convention(module, spec, again, forwardargs.bind(module, spec, mask=again)[1])
            given, ev.given, form = how.arguments(), how.given, again
            main = student.run(fn, x, spec.seed, given)
    if main.error is not None:
        raise main.error
    ev.runs.append(Run("eval", main.seen, student.output_array(main.output, name), main.trace))
    ev.returned = type(main.output).__name__ if student.returned(main.output) is not main.output else ""
    if module is None:
        return ev
    if any(q.run == "train" for q in spec.quantities):
        module.train()
        ev.runs.append(Run("train", student.run(module, x, spec.seed, given).seen))
        module.eval()
    if spec.short:
        short = student.call(module, x[..., : spec.short, :], spec.seed, given)
        crash = short.error
        failure = Failure(crash.message, crash.details, crash.cause) if crash is not None else None
        ev.runs.append(Run("short", [_output(short.output)] if crash is None else [], error=failure))
    if spec.rebuilds is not None:
        pairs = spec.rotary or any(k in forwardargs.ROTARY or k in forwardargs.STILL for k in ev.given.values())
        ev.other = resizegather.gather(_builder(obj, spec), spec, form, pairs)
    return ev


def _builder(obj: Any, spec: lessons.Spec) -> Any:
    """``obj`` built at the sizes :mod:`.resize` asks for, called as the lesson's constructor is."""
    names = spec.signature
    return lambda got: build.build(obj, {n: got[n] for n in names}, names, spec.seed)[0]


def _output(out: Any) -> Seen:
    out = student.returned(out)
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        return Seen("", "", np.zeros(0))
    return Seen("output", "return", out.detach().to(torch.float64).cpu().numpy().copy(), "")
