"""Every file attn-trace reads from someone, or writes for someone, goes through here.

Reading (:func:`read_limited`): only a regular file (not ``/dev/zero``, a
pipe or a folder), measured before it is read and refused past a documented
size.

Writing is whole or not at all:

- :func:`write_atomic` writes one file through a temporary file in the same
  folder, flushed to disk (``fsync`` of the file, then of the folder), then
  renamed over the destination.  The temporary file is created with mode
  ``0o666`` and the process's umask applied by the kernel, as ``open()``
  would; the umask itself is never changed (changing it is process-wide and
  races with other threads).
  An existing character device or FIFO is written into, never replaced
  (:func:`stream_kind`); a block device or a socket is refused.
- :func:`write_folder` writes a report (several files) into a staging folder
  beside the destination and moves it into place with one rename; with
  ``replace`` (``--force``) the old folder is moved aside first and deleted
  after, so a reader sees the old report or the new one, never a mixture.
  Report files that are kept (``--format html`` over a folder that also holds
  ``index.md``) are hard-linked into the staging folder first.

Rules for destinations: a path that is a symbolic link (dangling or not) is
refused, never followed or replaced; a folder that holds files other than a
report's is refused rather than replaced, and so is the current folder (or
one that holds it), which a rename would pull from under the shell.  Staging and set-aside folders are
named ``.<name>.attn-trace-new-<pid>-<random>`` and ``...-old-...``; one
left by a process that no longer runs (``kill -9``, power loss) is
recognised by the next run, if this user made it (:mod:`tracer.core.staging`):
a set-aside report whose replacement never arrived is put back, the rest is
deleted.  A mount point is written into, file by file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from tracer.core import staging


class NotRegular(OSError):
    """A path that is not a regular file, or a file over the size limit: refused before reading."""


class Refused(OSError):
    """A destination attn-trace will not write to (a symbolic link, a folder of other files)."""


def quoted(path: object) -> str:
    """A file's name as messages show it: quoted, with anything unprintable escaped (``'my data.json'``).

    Quoting keeps a name apart from the sentence around it (a name can hold
    spaces, colons or words like "is not"), and ``repr``'s escapes keep a
    newline in a name from starting a line of its own: every error stays one line.
    """
    return repr(str(path))


def a_or_an(noun: str) -> str:
    """The noun with its indefinite article: ``a trace file``, ``an inputs file``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def read_limited(path: Path, limit: int, what: str = "file") -> bytes:
    """The bytes of regular file ``path``, if it holds at most ``limit`` of them; ``what`` names it in errors."""
    what = a_or_an(what)
    with path.open("rb") as f:  # opened first, then checked: no window between check and read
        st = os.fstat(f.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"{quoted(path)} is not a regular file (a device, pipe or socket): refused as {what}")
        if st.st_size > limit:
            raise NotRegular(f"{quoted(path)} is {st.st_size:,} bytes, past the {limit:,}-byte limit for {what}")
        data = f.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise NotRegular(f"{quoted(path)} is past the {limit:,}-byte limit for {what}")
    return data


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename, a new file) to disk, where the platform allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # some platforms cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (which must not exist) with ``data``, flushed to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def refuse_link(path: Path) -> None:
    """Raise :class:`Refused` when ``path`` is a symbolic link (written through, it could land anywhere)."""
    if path.is_symlink():
        raise Refused(
            f"{quoted(path)} is a symbolic link: attn-trace does not write through links; name the target itself"
        )


def stream_kind(path: Path) -> str | None:
    """``"device"`` or ``"pipe"`` when ``path`` is a character device or a FIFO (written *into*, never replaced).

    None for a path that does not exist or is a regular file; :class:`Refused`
    for any other kind of file (a block device, a socket), which attn-trace
    neither writes into nor replaces.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing, or not reachable: writing will say why
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISCHR(mode):
        return "device"
    if stat.S_ISFIFO(mode):
        return "pipe"
    raise Refused(f"{quoted(path)} is a block device or a socket: attn-trace neither writes into it nor replaces it")


def _write_into(path: Path, data: bytes) -> bool:
    """Write ``data`` into the device or pipe ``path``, as a shell's ``>`` would; False if it is a regular file now."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "wb") as f:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a file since it was looked at: replace it instead
            return False
        f.write(data)
        f.flush()
    return True


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a flushed temporary file renamed into place (see the module docstring).

    An existing character device or FIFO (``/dev/null``, ``/dev/stdout``, a
    named pipe) is written into instead, never replaced by a regular file:
    as root, replacing ``/dev/null`` would break the whole system.
    """
    refuse_link(path)
    if stream_kind(path) and _write_into(path, data):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    _clean_temps(path)
    tmp = path.parent / f".{staging.short(path.name)}.{os.getpid()}-{secrets.token_hex(6)}.tmp"
    try:
        _write_new(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def _clean_temps(path: Path) -> None:
    """Delete the temporary files of earlier writes of ``path`` whose process no longer runs (``kill -9``).

    A temporary file is named ``.<name>.<pid>-<random>.tmp``: one of this
    user's whose process is gone is a leftover; one whose process still runs
    is a write in progress and is left alone.
    """
    pattern = re.compile(re.escape(f".{staging.short(path.name)}.") + r"([0-9]+)-[0-9a-f]+\.tmp")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # its process runs: a write in progress
        except PermissionError:  # another user's process runs under that number: not ours to judge
            continue
        except (ProcessLookupError, OverflowError):  # no such process
            pass
        with contextlib.suppress(OSError):
            if os.lstat(path.parent / name).st_uid == os.getuid():
                os.unlink(path.parent / name)


def recover(folder: Path) -> None:
    """Clean up after an interrupted :func:`write_folder` of ``folder`` (:func:`tracer.core.staging.recover`)."""
    staging.recover(folder)


def write_folder(folder: Path, files: Mapping[str, bytes], replace: bool, is_ours: Callable[[str], bool]) -> str | None:
    """Write ``files`` (name -> bytes) as the folder ``folder``, whole or not at all.

    ``is_ours(name)`` tells a report's own files from others.  Without
    ``replace``, a file of ``files`` that already exists raises
    ``FileExistsError`` before anything is written.  A folder that is a
    mount point (a Docker volume) cannot be renamed: its files are written
    into it one by one, each atomically.  Returns a note when the old report,
    set aside, could not be deleted (it is left where the note says), else None.
    """
    folder = Path(os.path.abspath(folder))
    refuse_link(folder)
    here = Path(os.path.abspath(os.curdir))
    if folder == here or folder in here.parents:  # replacing it would leave the shell in a deleted folder
        raise Refused(
            f"{quoted(folder)} is the current folder or holds it: run attn-trace from outside the report folder"
        )
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a folder should be
        raise NotADirectoryError(20, "Not a directory", str(folder.parent)) from None
    recover(folder)
    keep: list[Path] = []
    existed = folder.exists()
    if existed:
        if not folder.is_dir():
            raise Refused(f"{quoted(folder)} exists and is not a folder")
        present = [p for p in folder.iterdir() if p.name != staging.MARK and not _stray_temp(p.name, is_ours)]
        others = [p.name for p in present if not (is_ours(p.name) and p.is_file() and not p.is_symlink())]
        if others:
            raise Refused(
                f"{quoted(folder)} holds files that are not part of a report ({others[0]}): choose another folder"
            )
        clash = [p for p in present if p.name in files]
        if clash and not replace:
            raise FileExistsError(17, "File exists", str(clash[0]))
        keep = [p for p in present if p.name not in files]
        if os.path.ismount(folder):  # renaming a mount point fails ("Device or resource busy"): write into it
            for name, data in files.items():
                write_atomic(folder / name, data)
            return None
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    stage, aside = staging.names(folder, token)
    stage.mkdir()
    try:
        staging.mark(stage, token)
        for p in keep:
            os.link(p, stage / p.name)
        for name, data in files.items():
            _write_new(stage / name, data)
        fsync_folder(stage)
        if not existed and _claim(folder, stage, replace):
            pass
        elif folder.exists():
            os.rename(folder, aside)
            try:
                staging.mark(aside, token)
                os.rename(stage, folder)
            except BaseException:
                (aside / staging.MARK).unlink(missing_ok=True)
                _put_back(aside, folder)
                raise
        else:
            os.rename(stage, folder)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    (folder / staging.MARK).unlink(missing_ok=True)
    fsync_folder(folder.parent)
    return _delete(aside)


def _put_back(aside: Path, folder: Path) -> None:
    """Rename the set-aside old folder back, or delete it when another run's new folder took its place.

    Two runs with ``--force`` at once: the other may rename its new folder in
    between this run's set-aside and its own rename; the old folder is then
    superseded, and is deleted rather than left beside the new one.
    """
    try:
        os.rename(aside, folder)
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        shutil.rmtree(aside, ignore_errors=True)
        raise OSError(e.errno, "another run replaced it at the same time", str(folder)) from None


def _claim(folder: Path, stage: Path, replace: bool) -> bool:
    """Rename ``stage`` to ``folder``, which was missing when this run looked; False when it exists now and ``replace``.

    Two runs writing the same new folder at once both saw it missing; the
    first ``mkdir`` wins (atomic: it fails when the name exists) and the
    staged folder replaces that empty folder in one rename; without
    ``replace`` the other run raises ``FileExistsError``, so one report is
    never silently replaced by another.  With ``replace`` the caller sets the
    folder made since aside and replaces it as usual.
    """
    try:
        folder.mkdir()
    except FileExistsError:
        if replace:
            return False
        raise FileExistsError(17, "File exists", str(folder)) from None
    try:
        os.rename(stage, folder)  # over the empty folder just made: one step
    except BaseException:
        with contextlib.suppress(OSError):
            folder.rmdir()
        raise
    return True


def _delete(aside: Path) -> str | None:
    """Delete the set-aside old report; a note saying where it is left if that fails."""
    if not aside.exists():
        return None
    try:
        shutil.rmtree(aside)
    except OSError as e:
        return f"the old report could not be deleted ({e.strerror or e}): it is left at {aside}"
    return None


def _stray_temp(name: str, is_ours: Callable[[str], bool]) -> bool:
    """A temporary file an older attn-trace left beside a report file (``.index.html.<random>.tmp``)."""
    m = re.fullmatch(r"\.(.+)\.[0-9a-z_-]+\.tmp", name)
    return bool(m and is_ours(m.group(1)))
