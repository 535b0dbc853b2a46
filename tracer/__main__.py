"""``python -m tracer``: the same app as the ``attn-trace`` command."""

from tracer.cli import main

main()
