"""Whether the runtime directory can be trusted.

The embedded Redis announcements in it (:mod:`aipool.redis.embedded`) tell every command run
without ``REDIS_URL`` which Redis, and which ledger, to use. In a shared temporary directory (the
default is ``<tmp>/aipool-<uid>``) another user could create that directory first, or put an
announcement in it, and a command would adopt their Redis and their ``DATABASE_URL``. So the
directory is used only when it is a real directory (not a symbolic link) that the user running
the command owns, with mode 0700; an announcement only when that user owns it. Otherwise the
command stops with :class:`~aipool.errors.UnsafeRuntimeDir`: one line naming the path, what is
wrong, and how to fix it.

A directory that does not exist yet is created with mode 0700 by the command that announces a
Redis (``aipool redis``, ``aipool demo``); a command that only reads it finds nothing there and
creates nothing.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from aipool.errors import UnsafeRuntimeDir

#: The only mode the runtime directory may have: its owner's alone.
PRIVATE = 0o700
_FIX = "or set AIPOOL_RUNTIME_DIR to a directory of your own with mode 0700"


def _who(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _refuse(path: Path, problem: str, fix: str) -> UnsafeRuntimeDir:
    return UnsafeRuntimeDir(
        f"the runtime directory {path} {problem}, so an embedded Redis announced there could be "
        f"another user's: {fix}"
    )


def trusted(directory: Path) -> bool:
    """Whether ``directory`` exists to be read; raises :class:`UnsafeRuntimeDir` when it exists
    and is not this user's alone (a symbolic link, not a directory, another owner, another mode
    than 0700)."""
    try:
        info = directory.lstat()
    except FileNotFoundError:
        return False
    me = os.getuid()
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(directory)
        raise _refuse(directory, f"is a symbolic link (to {target})", f"remove the link, {_FIX}")
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(directory, "is not a directory", f"remove it, {_FIX}")
    if info.st_uid != me:
        raise _refuse(
            directory,
            f"belongs to {_who(info.st_uid)}, not to {_who(me)} who runs this",
            f"have it removed (its owner or root), {_FIX}",
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode != PRIVATE:
        raise _refuse(
            directory, f"has mode {mode:04o}, not 0700", f"run `chmod 700 {directory}`, {_FIX}"
        )
    return True


def make_private(directory: Path) -> None:
    """Create ``directory`` with mode 0700 unless it exists; raise :class:`UnsafeRuntimeDir`
    when what is there is not this user's alone (see :func:`trusted`)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        directory.mkdir(mode=PRIVATE)
    except FileExistsError:
        pass
    else:
        directory.chmod(PRIVATE)  # whatever the umask took away
    trusted(directory)


def refuse_unless_mine(announcement: Path) -> None:
    """Raise :class:`UnsafeRuntimeDir` unless this user owns ``announcement`` (a regular file,
    not a symbolic link) in the trusted runtime directory."""
    try:
        info = announcement.lstat()
    except FileNotFoundError:
        return  # withdrawn meanwhile: its owner stopped
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symbolic link"
    elif info.st_uid != os.getuid():
        problem = f"belongs to {_who(info.st_uid)}, not to {_who(os.getuid())} who runs this"
    else:
        return
    raise UnsafeRuntimeDir(
        f"the announcement {announcement} {problem}, so the Redis it names could be another "
        f"user's: remove it (its owner or root), {_FIX}"
    )
