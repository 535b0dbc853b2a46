"""Run the attn-trace command line from a checkout: ``python cli.py --help``.

The app itself is :mod:`tracer.cli`; installed, it is the ``attn-trace``
command and ``python -m tracer``. Nothing outside ``tracer`` is installed.
"""

from tracer.cli import main

if __name__ == "__main__":
    main()
