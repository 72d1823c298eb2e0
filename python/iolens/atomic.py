"""Files written whole or not at all: what a script or a dashboard reads at the path is always complete."""

from __future__ import annotations

import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`. Whatever fails (a full
    disk, a directory where the file should be, a stop signal) removes the temporary file and goes up.

    A path that is not a regular file (/dev/null, a FIFO, /dev/stdout and other symbolic links) is written
    in place: renaming over it would replace the device node or the link with a plain file."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
