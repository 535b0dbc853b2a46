"""The staging and set-aside folders of a report being replaced: their names, their marks, and recovery.

:func:`tracer.core.files.write_folder` writes a report into
``.<name>.attn-trace-new-<pid>-<random>`` beside its destination and, with
``--force``, sets the old report aside as ``...-old-...``.  A process killed
in between leaves them behind; the next run recovers (:func:`recover`): a
set-aside report whose replacement never arrived is put back, the rest is
deleted.

Only folders this user's attn-trace made are touched.  In a shared folder
(``/tmp``, sticky) anyone can create a folder with such a name, so a
leftover counts only if this user owns it *and* it carries a mark
(:data:`MARK`, holding the random part of its name) that attn-trace wrote
into it: a staging folder gets the mark when it is made, a set-aside one
right after it is renamed aside (until then the staging folder of the same
run vouches for it).

Names stay short (:func:`short`): a destination named with 255 bytes, the
most a file system allows, still gets a staging folder whose name fits.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

MARK = ".attn-trace-mark"
"""The file inside a staging or set-aside folder that says which run of attn-trace made it."""

LONGEST = 100
"""Most bytes of a destination's name that go into a staging name (the rest becomes a hash)."""


def short(name: str) -> str:
    """``name``, or for a long one its first characters and a hash: part of a name that fits in 255 bytes."""
    if len(name.encode("utf-8")) <= LONGEST:
        return name
    head = name.encode("utf-8")[: LONGEST - 13].decode("utf-8", "ignore")
    return f"{head}~{hashlib.sha256(name.encode('utf-8')).hexdigest()[:12]}"


def names(folder: Path, token: str) -> tuple[Path, Path]:
    """The staging (new) and set-aside (old) folders of ``folder`` for run ``token`` (``<pid>-<random>``)."""
    base = f".{short(folder.name)}.attn-trace"
    return folder.parent / f"{base}-new-{token}", folder.parent / f"{base}-old-{token}"


def mark(folder: Path, token: str) -> None:
    """Write the mark of run ``token`` into ``folder`` (a new file: an existing one is someone else's)."""
    fd = os.open(folder / MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token)


def _ours(p: Path, token: str) -> bool:
    """Whether ``p`` is a real folder this user owns whose mark names run ``token``."""
    try:
        st = p.lstat()
        if not p.is_dir() or p.is_symlink() or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return False
        m = p / MARK
        return not m.is_symlink() and m.lstat().st_uid == st.st_uid and m.read_text(encoding="ascii") == token
    except (OSError, UnicodeDecodeError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def leftovers(folder: Path) -> list[tuple[str, Path]]:
    """Staging (``new``) and set-aside (``old``) folders of ``folder`` that this user's dead runs left."""
    rx = re.compile(rf"\.{re.escape(short(folder.name))}\.attn-trace-(new|old)-((\d+)-[0-9a-f]+)")
    found = []
    for p in folder.parent.iterdir() if folder.parent.is_dir() else ():
        m = rx.fullmatch(p.name)
        if m and not _alive(int(m.group(3))):
            found.append((m.group(1), m.group(2), p))
    out = []
    for kind, token, p in found:
        stage, _ = names(folder, token)
        if _ours(p, token) or (kind == "old" and _ours(stage, token)):
            out.append((kind, p))
    return out


def recover(folder: Path) -> None:
    """Clean up after an interrupted write of ``folder`` (see the module docstring)."""
    for kind, p in sorted(leftovers(folder), key=lambda kp: kp[0] != "old"):  # put back first, then delete
        if kind == "old" and not folder.exists() and not folder.is_symlink():
            os.rename(p, folder)  # the old report was set aside and its replacement never arrived
            (folder / MARK).unlink(missing_ok=True)
        else:
            shutil.rmtree(p, ignore_errors=True)
