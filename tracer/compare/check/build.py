"""Build the student's module with the lesson's sizes: by the names of its parameters, by position as a last resort.

``NAME`` may be a module class or any callable that returns a module (a
factory ``make(d_in, d_out, context_length, dropout, num_heads)`` that
fills a config object).  When every parameter it requires has a name that
says which of the lesson's arguments it is (the book's, or a common alias:
``n_embd``, ``embed_dim``, ``d_model``, ``n_head``, ``num_heads``, ``h``,
``block_size``, ``context_len`` …) and the sizes (``d_in``, ``d_out`` and,
for multihead, ``num_heads``) are among them, it is called with keywords
(a module may build its mask from the sequence and take no
``context_length``); otherwise by position in the book's order.
:func:`build` says how it was called (``CausalAttention(d_in=3, d_out=2, …)``).

One width for both sizes (``embed_dim``, ``d_model``, ``n_embd``) means the
module maps ``d`` to ``d``: :class:`Square` tells the check to build it
with ``d_in = d_out`` (and to make up embeddings that wide).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from tracer.compare.check import config, convention, deadline, roles, wrapper
from tracer.compare.check.lessons import Spec
from tracer.compare.check.model import Role
from tracer.compare.check.sizing import sized, wrapped
from tracer.compare.check.student import StudentError, _failure, _shape, name_of
from tracer.errors import InputError
from tracer.message import Message

ALIASES: dict[str, tuple[str, ...]] = {
    "d_in": ("d_in", "in_dim", "input_dim", "dim_in", "in_features", "d_input"),
    "d_out": ("d_out", "out_dim", "output_dim", "dim_out", "out_features", "d_output", "num_hiddens"),
    **{k: v for k, v in config.SIZES.items() if k != "width"},
    "qkv_bias": ("qkv_bias", "bias", "use_bias"),
}
"""The names each of the lesson's arguments goes by (``qkv_bias`` is recognised, and left at its default).

The sizes a configuration holds too are :data:`.config.SIZES`'s names: one
list for a constructor's parameters and a configuration's fields."""

WIDTH = config.SIZES["width"]
"""Names of one width used for both ``d_in`` and ``d_out``."""


class Square(InputError):
    """The module takes one width for its inputs and outputs: it must be checked with ``d_in = d_out``."""


def _params(obj: Any) -> list[inspect.Parameter] | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_ONLY)
    return [p for p in sig.parameters.values() if p.kind in kinds]


INDEX = ("layer_idx", "layer_id", "layer_index", "block_idx", "idx")
"""Names of a constructor parameter that says which layer of a model this is: the check builds layer 0."""


def plan(obj: Any, values: dict[str, Any], order: Sequence[str]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword arguments ``obj`` is called with (``values`` by the book's names)."""
    args, kwargs, _ = _plan(obj, values, order)
    return args, kwargs


def _plan(
    obj: Any, values: dict[str, Any], order: Sequence[str], batch: int = 2
) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, str]]:
    """:func:`plan`, and how each keyword argument that is an object of the check's making is shown.

    A constructor that takes a configuration object (:func:`.config.parameter`)
    gets one filled from ``values`` (:func:`.config.make`; ``batch``: the
    samples a preallocated cache must hold), and a layer index the first
    layer's; every other parameter is matched by name as below.
    """
    params = _params(obj)
    if params is None:
        return tuple(values[n] for n in order), {}, {}
    role = {alias: name for name, aliases in ALIASES.items() for alias in aliases}
    conf = config.parameter(obj, params)
    width = [p.name for p in params if p.name.lower() in WIDTH]
    if (width or conf) and values.get("d_in") != values.get("d_out"):
        one = width[0] if width else conf[0].name if conf else ""
        raise Square(Message("check.takes_one_width_inputs", name=name_of(obj), one=one))
    kwargs: dict[str, Any] = {}
    shown: dict[str, str] = {}
    for p in params:
        if conf is not None and p is conf[0]:
            kwargs[p.name], shown[p.name] = config.make(conf[1], values, batch, name_of(obj))
            continue
        if p.name.lower() in INDEX and p.default is inspect.Parameter.empty:
            kwargs[p.name] = 0
            continue
        name = role.get(p.name) or role.get(p.name.lower())
        if p.name.lower() in WIDTH:
            name = "d_out"
        if name is None or name not in values:
            if p.default is inspect.Parameter.empty:
                return tuple(values[n] for n in order), {}, {}  # a required parameter of its own: by position
            continue
        if name == "qkv_bias":
            continue
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            return tuple(values[n] for n in order), {}, {}
        kwargs[p.name] = values[name]
    if conf is not None:
        return (), kwargs, shown
    named = {role.get(k) or role.get(k.lower()) or "d_out" for k in kwargs} | ({"d_in"} if width else set())
    needed = {"d_in", "d_out", "num_heads", "num_kv_groups", "window_size"} & set(order)  # not context_length, dropout
    if "d_out" in named:  # no input width: the module infers it (lazy layers) or maps d to d (its weights say)
        needed.discard("d_in")
    if not kwargs or not needed <= named:  # some size has no name here: by position
        return tuple(values[n] for n in order), {}, {}
    return (), kwargs, shown


def own_bias(obj: Any) -> bool:
    """True when ``obj``'s biases are its own design: it takes no ``qkv_bias`` (nor ``bias``, ``use_bias``).

    The lesson's projections are bias-free, and its constructor says so with
    ``qkv_bias=False``: a module that takes that argument and still adds a
    bias (``nn.Linear``'s default ``bias=True``) ignores it, the mistake
    ``bias_used``.  A published class that takes no such argument (the
    Annotated Transformer's ``MultiHeadedAttention(h, d_model)``, minGPT's
    ``CausalSelfAttention(config)``, a factory around them) cannot be asked
    for bias-free projections: its biases are learned weights like its
    matrices, so the lesson is computed with them.  So is a class whose
    flag turns its biases on by default (labml's ``bias=True``): the check
    leaves the flag at its default, which asks for them.  A signature that
    cannot be read is taken as one that asks (the lesson's own convention).
    """
    params = _params(obj)
    if params is None:
        return False
    return not any(p.name.lower() in ALIASES["qkv_bias"] and p.default is not True for p in params)


NAMED = {"num_heads": "number of heads", "num_kv_groups": "number of key/value groups", "window_size": "window size"}
"""How a refusal names the lesson's arguments that a module may not take."""


def misplaced(obj: Any, order: Sequence[str]) -> str | None:
    """Why ``obj`` cannot be called by position with the lesson's arguments ``order``, or None.

    A value given by position lands on whatever parameter sits there: the
    book's causal class checked against ``multihead`` would get the number
    of heads as its ``qkv_bias``.  A parameter whose name says it is one of
    the lesson's arguments must get that argument; when it would get
    another, the module does not take the lesson's arguments, and the
    argument it has no parameter for is named.
    """
    params = [p for p in _params(obj) or [] if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    role = {alias: name for name, aliases in ALIASES.items() for alias in aliases}
    roles = [role.get(p.name) or role.get(p.name.lower()) for p in params]
    for given, p, has in zip(order, params, roles, strict=False):
        widths = ("d_in", "d_out") if p.name.lower() in WIDTH else ()
        if (has is None and not widths) or has == given or given in widths:
            continue
        missing = [n for n in order if n not in roles and n not in ("context_length", "dropout")]
        if missing:
            what = NAMED.get(missing[0], missing[0])
            return f"{name_of(obj)} takes no {what} ({missing[0]}): the lesson would pass it as {p.name}"
        return f"{name_of(obj)} takes the lesson's arguments in another order: {given} would go to {p.name}"
    return None


def called(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], shown: dict[str, str] | None = None) -> str:
    """How ``obj`` was called, as Python: ``CausalAttention(d_in=3, d_out=2, context_length=6, dropout=0.5)``.

    ``shown`` writes an argument of the check's making (a configuration) as it was made.
    """
    shown = shown or {}
    parts = [repr(a) for a in args] + [f"{k}={shown.get(k, repr(v))}" for k, v in kwargs.items()]
    return f"{name_of(obj)}({', '.join(parts)})"


def build(
    obj: Any, values: dict[str, Any], order: Sequence[str], seed: int, batch: int = 2
) -> tuple[torch.nn.Module, str]:
    """``obj`` called with the lesson's sizes under ``torch.manual_seed(seed)``, and how it was called."""
    if not callable(obj):
        raise InputError(Message("trouble.not_factory", name=name_of(obj)))
    args, kwargs, shown = _plan(obj, values, order, batch)
    if args and (why := misplaced(obj, order)):
        raise InputError(why)
    if args:
        try:
            inspect.signature(obj).bind(*args)
        except TypeError as e:
            said = Message("trouble.bad_arguments", name=name_of(obj), params=_shape(order), error=str(e))
            raise InputError(said) from None
        except ValueError:
            pass
    how = called(obj, args, kwargs, shown)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            module = obj(*args, **kwargs)
        except (KeyboardInterrupt, deadline.Overtime):
            raise
        except BaseException as e:  # SystemExit too: the student's code, not ours
            import traceback

            lacking = [config.unfilled(obj, v, name_of(obj)) for v in kwargs.values()]
            if isinstance(e, AttributeError) and any(lacking):  # a field the lesson's sizes do not fix
                raise next(x for x in lacking if x is not None) from None
            crash = _failure(e)
            raise StudentError(Message("trouble.raised", who=how, error=crash), traceback.format_exc(), crash) from None
    if not isinstance(module, torch.nn.Module):
        raise InputError(Message("trouble.built_not_module", call=how, type=type(module).__name__))
    return module, how


def _built(obj: Any, spec: Spec) -> tuple[torch.nn.Module, str, dict[str, Any], Any, Spec]:
    """The module built with ``spec``'s sizes, how it was called, its roles, its wrapper heads, and the spec used."""
    module, built = build(obj, dict(zip(spec.signature, spec.args, strict=True)), spec.signature, spec.seed)
    module.eval()
    convention.materialise(module, spec, spec.seed)  # lazy layers get their shapes from one call
    heads = wrapper.heads_of(module, spec.heads) if spec.multi else None
    if heads is not None:  # the book's wrapper: a ModuleList of causal heads (and maybe a projection over them)
        found = wrapper.assign(heads[0], heads[1], spec.d_in, spec.d_out)
        width = found["W_query"].value.shape[-1]
        found.update(wrapper.out_proj(module, heads[0], width * spec.heads))
        spec = wrapped(spec, width, "W_out" in found)
    else:
        found = roles.assign(module, spec.d_in, spec.d_out, out_proj=spec.multi, grouped=spec.grouped)
        if not spec.multi:
            found.update(identity_projection(module, found, spec))
    if any(b in found for b in roles.BIAS.values()) and own_bias(obj):
        spec = replace(spec, bias=True)
    return module, built, found, heads, spec


def identity_projection(module: torch.nn.Module, found: dict[str, Any], spec: Spec) -> dict[str, Role]:
    """Make the output projection of a module checked against a lesson of one head the identity, or refuse it.

    A published layer (Llama's ``o_proj``, GPT-2's ``c_proj``) ends with a
    projection over its heads; a lesson of one head has none.  Built with
    one head, such a layer computes the lesson's attention and then mixes
    its columns once more, so a teacher asking "is this causal attention?"
    means the part before the projection.  Where the projection is square,
    as wide as the values (one head's output), the check sets its weight to
    the identity and its bias to 0: the layer's result is then its attention
    itself, which every stage is compared with as always, and the role says
    so.  The projection is judged where it belongs, by a lesson with heads
    (``multihead``, ``gqa``).  A projection of another shape cannot be made
    the identity: the refusal names it and those lessons.
    """
    used = {r.param.split("[", 1)[0] for r in found.values()}
    by_name = dict(module.named_parameters())
    from tracer.compare.check.lessons import SPECS

    headed = ", ".join(n for n, s in SPECS.items() if s.multi)
    for p in roles.params(module):
        if p.value.ndim != 2 or p.name in used or roles.base(p) not in roles.OUT:
            continue
        width = found["W_value"].value.shape[-1] if "W_value" in found else -1
        if p.value.shape != (width, width):
            said = Message(
                "trouble.projection_extra", name=type(module).__name__, param=p.name, lesson=spec.name, headed=headed
            )
            raise InputError(said)
        eye = torch.eye(width)
        bias = by_name.get(f"{p.owner}.bias") if p.linear and p.owner else None
        with torch.no_grad():
            weight = by_name[p.name]
            weight.copy_(eye.to(dtype=weight.dtype, device=weight.device))
            if bias is not None:
                bias.zero_()
        how = Message("how.identity", lesson=spec.name, headed=headed)
        return {"W_out": Role("W_out", p.name, how, eye.to(torch.float64).numpy())}
    return {}


def module_for(obj: Any, spec: Spec) -> tuple[torch.nn.Module, str, dict[str, Any], Any, Spec, bool]:
    """:func:`_built`, or, when the module only fits ``d_in = d_out`` (one width, or d x d weights), built so."""
    try:
        return (*_built(obj, spec), False)
    except (Square, InputError) as e:
        if spec.d_in == spec.d_out or isinstance(e, (roles.Structural, StudentError)):
            raise
        square = sized(spec, spec.d_out, spec.d_out)
        try:
            return (*_built(obj, square), True)
        except InputError as again:
            if isinstance(e, Square):  # it could only be built square: what went wrong so is the news
                raise again from None
            raise e from None
