"""attn-trace: the command-line app (a thin click layer over ``tracer``).

One module per group of commands, all registered on :data:`app`
(:mod:`tracer.cli.group`): ``trace`` (lessons, trace, verify), ``steps``
(steps, explain), ``diff``, ``report``, ``figures``, ``notebook`` and ``check``; the
options they share live in :mod:`tracer.cli.options`.

Exit codes: 0 ok, 1 differences found (``diff``, ``verify``, ``check``), 2
bad usage or bad input, 3 an internal error (:class:`~tracer.cli.group.Crash`),
130 interrupted, reported in one line with no traceback.  Results go to stdout or ``-o``;
status lines go to stderr.  Heavy imports (torch, matplotlib) happen inside
the commands that need them, so ``--help`` stays fast.
"""

from __future__ import annotations

from tracer.cli import check, diff, figures, notebook, report, steps, trace  # noqa: F401  (each registers its commands)
from tracer.cli.group import App, UserError, app, status, write_output
from tracer.cli.options import build_trace, input_options, trace_source

__all__ = ["App", "UserError", "app", "build_trace", "input_options", "main", "status", "trace_source", "write_output"]


def main() -> None:
    """Console-script entry point."""
    import signal

    if hasattr(signal, "SIGPIPE"):  # `attn-trace steps | head` ends quietly, as `cat` would
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    app(prog_name="attn-trace")
