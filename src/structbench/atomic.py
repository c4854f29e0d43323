"""Atomic file writes: a reader (or a resumed run) sees the old file or the whole new one, never a part.

Each write goes to a temporary file with a unique name in the target's own folder (so the rename stays
on one file system and two writers never share a temp file), is flushed to disk, and is renamed over
the target with ``os.replace``. A crash leaves at most a stray ``.<name>.*.tmp`` file, never a torn
target. A folder written whole (:func:`atomic_folder`) is written beside its target and swapped in at once.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str = ""):
    """Yield a unique temporary path next to ``path``; on success it replaces ``path``, on error it is removed.

    ``suffix`` keeps a writer that insists on an extension happy (``np.save`` appends ``.npy``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{suffix}", dir=path.parent)
    os.close(handle)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, value) -> None:
    """JSON with sorted keys and a fixed indent, so equal values give equal bytes."""
    write_text(path, json.dumps(value, indent=1, sort_keys=True))


# ---- whole folders ----------------------------------------------------------------------------------------------

# The siblings a folder writer makes beside its target ``<parent>/<name>``: ``.<name>.<random>.new``, the folder
# being written, and (where the platform cannot swap two folders in one step) ``.<name>.<random>.old``, the old
# folder moved aside for the instant between two renames.
STAGED, SET_ASIDE = ".new", ".old"
RENAME_EXCHANGE, AT_FDCWD = 2, -100  # <linux/fs.h>, <fcntl.h>


class FolderNotEmpty(FileExistsError):
    """The folder to be written whole already holds files, and replacing it was not asked for."""


@dataclass(frozen=True)
class StagedFolder:
    """The fresh folder to write into (``path``) and what was found beside the target of a writer killed before it
    finished (``recovered``: one line each, saying what was done with it)."""

    path: Path
    recovered: list[str]


@contextlib.contextmanager
def atomic_folder(path: str | Path, *, replace: bool = False):
    """Yield a :class:`StagedFolder`, a fresh folder beside ``path``; when the block ends without error it becomes
    ``path`` as a whole, and on error it is removed. A reader of ``path`` sees the old folder or the whole new one,
    never a mix of the two, never a part.

    ``path`` must not exist or be an empty folder: a folder with anything in it is a :class:`FolderNotEmpty` naming
    a few of its files, unless ``replace``, which replaces it as a whole (its old files are never merged with the
    new). A file, a symbolic link, or a folder holding the current directory is refused in any case.

    The steps, and what a SIGKILL at each leaves at ``path`` (the writer's own siblings aside, which the next
    writer to the same ``path`` finds, restores or removes, and lists in ``recovered``):

    1. Lock ``path``'s parent folder (``flock``, held to the end): writers to one folder take turns, and the
       kernel drops a killed writer's lock, so a sibling found while holding it is a dead writer's. Where the
       file system cannot lock a folder, siblings are only listed, never touched (they may be a live writer's).
    2. Recover a killed writer's siblings: with ``path`` absent, a ``.old`` sibling holds the only copy of the old
       folder (step 5b) and is renamed back first; then every other sibling is removed. Killed here: the rename
       is atomic, and a sibling is removed only while ``path`` is there, so it is never the only copy; a sibling
       left partly removed is removed by the next writer. ``path``: the old folder.
    3. Write into ``.<name>.<random>.new``. Killed: ``path`` is the old folder (or absent, as it was).
    4. ``path`` absent or an empty folder: one ``rename`` of the new folder onto it. Killed before or after, it is
       old or new: a rename is atomic.
    5. ``path`` a folder with files (``replace``):

       a. Linux's ``renameat2(RENAME_EXCHANGE)`` swaps the two folders in one step: ``path`` is old before it and
          new after it; then the new folder's former name, which now holds the old folder, is removed. Killed
          during that removal: ``path`` is new, and the remains of the old one lie in the ``.new`` sibling.
       b. Where the platform or the file system has no such swap: the old folder is renamed to a ``.old``
          sibling, the new one onto ``path``, then the ``.old`` one removed. Killed between the two renames,
          ``path`` is absent for that instant and both folders lie whole beside it: the next writer renames the
          ``.old`` one back before anything else, so the old folder returns whole. Killed after: new.
    """
    target = Path(os.path.abspath(path))
    if not target.name:
        raise ValueError(f"{path} names no folder that could be replaced (a file system's root)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with _parent_locked(target) as locked:
        recovered = _recover(target, locked)
        check_replaceable(path, replace)
        staged = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=STAGED, dir=target.parent))
        try:
            yield StagedFolder(staged, recovered)
            _swap_in(staged, target)
        finally:
            shutil.rmtree(staged, ignore_errors=True)


def folder_entries(folder: Path, limit: int = 3) -> tuple[list[str], bool]:
    """Up to ``limit`` of the files and empty subfolders under ``folder``, relative to it, in sorted walk order, and
    whether there are more; the walk stops at ``limit + 1``, so a huge tree costs little."""
    found: list[str] = []
    for root, folders, files in os.walk(folder):
        folders.sort()
        inside = os.path.relpath(root, folder)
        names = [os.path.join(inside, name) for name in sorted(files)]
        found += [os.path.normpath(name) for name in names] or (
            [] if folders or root == str(folder) else [inside + "/"]
        )
        if len(found) > limit:
            return found[:limit], True
    return found, False


def check_replaceable(path: str | Path, replace: bool = False) -> None:
    """Error unless ``path`` is absent, an empty folder, or (``replace``) a folder to replace whole: what
    :func:`atomic_folder` refuses, for a caller that would rather refuse before its work than after it."""
    target = Path(os.path.abspath(path))
    if target.is_symlink():
        raise FileExistsError(f"{path} is a symbolic link: name the folder it points to, {os.path.realpath(target)}")
    if not target.exists():
        return
    if not target.is_dir():
        raise FileExistsError(f"{path} is a file, not a folder")
    here = Path.cwd().resolve()
    if target.resolve() == here or target.resolve() in here.parents:
        raise ValueError(f"{path} holds the current folder, {here}: name a folder of its own")
    entries, more = folder_entries(target)
    if entries and not replace:
        shown = ", ".join(entries) + (", ..." if more else "")
        raise FolderNotEmpty(f"{path} is not empty (it holds {shown})")


@contextlib.contextmanager
def _parent_locked(target: Path):
    """Hold an exclusive ``flock`` on ``target``'s parent folder; yield whether one is held (False where the file
    system or the platform cannot lock a folder). Closing the descriptor, or the process's death, releases it."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield False
        return
    handle = os.open(target.parent, os.O_RDONLY)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            locked = True
        except OSError:
            locked = False
        yield locked
    finally:
        os.close(handle)


def _siblings(target: Path) -> list[Path]:
    """The folders a writer to ``target`` makes beside it, ``.<name>.<random>.new`` and ``.old``, left by one killed
    (the random part, :func:`tempfile.mkdtemp`'s, holds no dot: ``trec.x``'s siblings are not ``trec``'s)."""
    prefix = f".{target.name}."
    return sorted(
        entry
        for entry in target.parent.iterdir()
        if entry.name.startswith(prefix)
        and entry.name.endswith((STAGED, SET_ASIDE))
        and "." not in entry.name[len(prefix) : -len(STAGED)]
        and entry.is_dir()
        and not entry.is_symlink()
    )


def _recover(target: Path, locked: bool) -> list[str]:
    """Put right what a writer to ``target`` killed part-way left (:func:`atomic_folder`, step 2): with ``target``
    absent, a ``.old`` sibling is the old folder set aside, renamed back; every other sibling is removed. Without
    the lock, siblings are listed and left as they are. One line each, saying what was done."""
    found = _siblings(target)
    if not locked:
        return [f"{entry}: an earlier writer's, left as it is ({target.parent} cannot be locked)" for entry in found]
    notes = []
    set_aside = [entry for entry in found if entry.name.endswith(SET_ASIDE)]
    if set_aside and not os.path.lexists(target):
        os.rename(set_aside[0], target)
        found.remove(set_aside[0])
        notes.append(f"{target}: restored whole from {set_aside[0].name}, where a writer killed part-way set it aside")
    for entry in found:
        shutil.rmtree(entry)
        notes.append(f"{entry}: removed, left by a writer killed part-way")
    return notes


def _swap_in(staged: Path, target: Path) -> None:
    """Make ``staged`` ``target`` in one atomic step where one exists (:func:`atomic_folder`, steps 4 and 5)."""
    if not os.path.lexists(target) or not any(target.iterdir()):
        os.rename(staged, target)  # onto nothing, or over an empty folder: one step
        return
    if _exchange(staged, target):
        shutil.rmtree(staged)  # the old folder, now under the staged name
        return
    set_aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=SET_ASIDE, dir=target.parent))
    os.rename(target, set_aside)  # over the empty folder mkdtemp made: a unique name
    try:
        os.rename(staged, target)
    except BaseException:
        os.rename(set_aside, target)
        raise
    shutil.rmtree(set_aside)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False where the platform, its C
    library or the file system has no such step, an error for any other failure."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:  # a C library older than glibc 2.28
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))
