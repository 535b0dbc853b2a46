"""How to call this student's module: one object for every call the check makes of it.

Published attention layers are called by their own projects in their own
ways, and a check that calls them otherwise either refuses them or reads
them wrong.  The rules, each in its own module, meet here:

- building (:mod:`.build`, :mod:`.config`): the lesson's sizes by the
  constructor's parameter names, a configuration object filled by its
  fields' names, a layer index of 0; lazy layers (``nn.LazyLinear``) are
  given their shapes by one call before their weights are read
  (:func:`materialise`);
- the further arguments of ``forward`` (:mod:`.forwardargs`,
  :mod:`.argvalues`): positions, rotary tables (at angle 0 for a lesson that
  turns nothing), the mask, lengths, the keys' and values' tokens, flags;
- where callers differ (:mod:`.maskforms`): the mask's form and shape and
  the rotary tables' form, chosen as the ones under which the module
  computes the lesson (:func:`settle`);
- the inputs: contiguous, in the dtype and on the device of the module's
  parameters (:func:`.student.fitted`);
- the result: the first element of a tuple (:func:`.student.returned`); a
  ``ModuleList`` of heads is the book's wrapper (:mod:`.wrapper`).

:class:`Convention` is the outcome for one module: the choice made, and
the arguments of a call at the lesson's sizes or at a second build's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from tracer.compare.check import forwardargs, maskforms, reference, student
from tracer.compare.check.forwardargs import LESSON, Mask
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Role
from tracer.errors import InputError


@dataclass
class Convention:
    """How one module is called: ``forms`` (the mask's and tables' forms chosen), ``given`` (parameter -> kind)."""

    module: Any
    spec: Spec
    forms: Mask = LESSON
    given: dict[str, str] = field(default_factory=dict)

    def arguments(self, sizes: dict[str, Any] | None = None) -> student.Arguments:
        """The arguments of a call on the tokens, at the lesson's sizes or at a second build's ``sizes``."""
        got = sizes or {}
        heads, window = got.get("num_heads"), got.get("window_size")
        return forwardargs.bind(self.module, self.spec, got.get("d_out"), self.forms, heads, window)[0]


def settle(module: Any, spec: Spec, found: dict[str, Role]) -> Convention:
    """The convention for ``module``: its further arguments, in the forms under which it computes the lesson."""
    given = forwardargs.bind(module, spec)[1]
    forms = maskforms.choose(module, spec, reference.inputs(spec), found, given)
    if forms != LESSON:  # a keep or hide mask, another shape, a mask left to its caller, another table form
        given = forwardargs.bind(module, spec, mask=forms)[1]
    return Convention(module, spec, forms, given)


def materialise(module: torch.nn.Module, spec: Spec, seed: int, sizes: dict[str, Any] | None = None) -> None:
    """Give a module's lazy layers their shapes with one call on the tokens (nothing to do without any).

    ``nn.LazyLinear`` (d2l's layers) has no weight until its first call; its
    own projects call it once on real inputs, and so does the check, before
    its weights are read: on the lesson's inputs, or on a second build's
    (``sizes``, with its ``d_in`` and ``tokens``).  A call that raises leaves
    them lazy: finding the weights then says what is missing.
    """
    lazy = torch.nn.parameter.UninitializedParameter
    if not any(isinstance(p, lazy) for p in module.parameters()):
        return
    try:
        arguments = Convention(module, spec).arguments(sizes)
    except InputError:  # a forward the check cannot call: the weights' search says what it found
        return
    x = reference.inputs(spec) if sizes is None else torch.zeros(2, sizes["tokens"], sizes["d_in"])
    student.call(module, x, seed, arguments)
