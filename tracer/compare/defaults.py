"""Defaults of ``attn-trace diff`` and :func:`tracer.diff`, in a module the CLI can import without numpy."""

from __future__ import annotations

DEFAULT_RTOL = 1e-5
"""Relative tolerance: about 84 float32 ulps, room for a different summation order or kernel."""

DEFAULT_ATOL = 1e-6
"""Absolute tolerance: about 8 float32 ulps at 1, for values near zero (the checks' residuals are ~1e-7)."""

DEFAULT_LIMIT = 20
"""How many root causes and differing steps are materialized as rows."""
