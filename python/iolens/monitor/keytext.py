r"""The text a name or value (a Lustre job id, a process name, a mount point …) carries into the two
line-based outputs, InfluxDB line protocol and the Prometheus exposition, so that one value is the same key
in both.

Neither format can carry every character, and they cannot carry the same ones:

- a line-protocol tag, field key or measurement cannot hold a control character at all (a newline ends the
  point: the rest becomes a junk line), and the InfluxDB parsers disagree about backslashes: InfluxDB 1.x and
  the Go line-protocol library (InfluxDB 2.x, Telegraf) keep `\\` as two backslashes and read `\,` `\=`
  `\ ` as escapes, while the protocol's reference says `\\` is one backslash. A backslash before one of
  those, or at the end of a value, has no spelling that every reader takes the same way;
- a Prometheus label value escapes a backslash, a double quote and a newline, but a consumer that reads the
  text line by line (grep, a CSV export) still sees a control character raw.

So before either format escapes anything, both replace the same characters by the four characters `\xHH`
(the byte in lower-case hex), the escape Lustre 2.16 prints in quoted job ids and the one iolens already uses
for a byte that is not UTF-8:

- a control character, U+0000–U+001F and U+007F (newline, carriage return, tab, ESC …);
- a backslash that ends the text or comes before a backslash, a comma, an equals sign or a space (and one
  before a character replaced here), which becomes `\x5c`;
- a lone surrogate (a value decoded with surrogateescape): its bytes.

Every other character, and a backslash before any other character (`\xe9`, `DOMAIN\user`), is kept. The
text is then escaped as each format requires (influx.py, prometheus.py), and a consumer that unescapes either
gets this same text back. Like Lustre's own escape, it does not tell a newline from the four characters
`\x0a`.
"""

from __future__ import annotations

import re
from functools import lru_cache

# One pass: a character to replace, or a backslash that no line-protocol reader takes the same way.
_REPLACE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]|\\(?=[\\,= \x00-\x1f\x7f\ud800-\udfff]|\Z)")


def _hex(m: re.Match[str]) -> str:
    ch = m.group()
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte it stands for
        return f"\\x{code - 0xDC00:02x}"
    return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))


@lru_cache(maxsize=65536)
def key_text(text: str) -> str:
    """The text of a value as both line-based outputs carry it (see the module's docstring)."""
    if _REPLACE.search(text) is None:
        return text
    return _REPLACE.sub(_hex, text)
