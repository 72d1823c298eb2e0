"""Stored text made safe for a terminal: control characters shown as escapes, never sent raw.

System names, tags, host names, commands and paths come from users and from imported files. Printed raw,
an ESC or OSC sequence in one of them would drive the terminal (move the cursor, retitle the window, hide
text, write a hyperlink), a newline or carriage return would forge a table row, and a bidirectional
override would show text in another order than it is. Every such character is shown as Python writes it
in a string: \\x1b, \\n, \\x9b, \\u202e.
"""

from __future__ import annotations

import re

# C0 controls (newline and tab included: a table cell is one line), DEL, C1 controls, and the Unicode
# bidirectional embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    code = ord(c)
    if c in "\n\r\t":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[c]
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """text with every control character written as an escape (\\x1b, \\n, \\u202e)."""
    return _UNSAFE.sub(_escape, text)
