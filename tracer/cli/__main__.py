"""``python -m tracer.cli``: the same app as ``python -m tracer`` and the ``attn-trace`` command."""

from tracer.cli import main

main()
