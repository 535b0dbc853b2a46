"""One module per lesson, each built only from traced primitives.

``LESSONS`` maps a lesson name to ``(module, one-line summary)``; modules are
imported on demand so that listing lessons costs no torch import.
"""

from __future__ import annotations

LESSONS: dict[str, tuple[str, str]] = {
    "simple": (
        "tracer.pipelines.simple",
        "Self-attention without trainable weights: dot-product scores, four normalizations, context vectors.",
    ),
}
