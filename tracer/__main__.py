"""``python -m tracer``: the same app as the ``attn-trace`` command."""

from cli import main

main()
