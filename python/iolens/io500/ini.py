"""Read IO500 INI configs the way the IO500 app (io500 at commit 02091cf, src/ini-parse.c) reads them.

The rules, line by line (lines are split on '\\n'; a trailing '\\r' counts as whitespace):

- `[name]` starts a section: letters, digits, '_' and '-', whitespace allowed inside the brackets, a comment
  may follow after whitespace. Section names are compared case-insensitively; an unknown section is an
  error.
- `key = value`: the key is letters, digits, '_', '.', '-'; the value is everything up to a '#' or ';' that
  follows whitespace (a comment), trimmed of spaces, tabs and '\\r'. A value may not contain '#' or ';' at
  all. Keys are compared case-insensitively within their section; an unknown key is an error.
- An empty value means "keep the default". The app skips such a line before it even looks the key up (it
  accepts `unknownkey =`); iolens looks the key up first and refuses an unknown one, with or without a value.
- Blank lines and lines starting with '#' or ';' (after optional whitespace) are comments; anything else is
  an error ("unexpected content").
- Values are checked by type: integers (optional '-' for signed ones), booleans (true/false in any case, or
  1/0, stored as TRUE/FALSE), floats; strings are taken as they are. A later assignment wins.

Where iolens is stricter than the app (documented in docs/io500.md): an unknown key with an empty value is
an error (the app ignores the line), a NUL byte is an error (the app silently stops reading there), integers
out of their C type's range are errors (the app's atoi would wrap them), a float must parse as a number
(the app's character check would let "1e+e" through), a value may hold at most 4095 bytes, and a path
(datadir, resultdir, pause-dir) no name longer than 255 bytes (no such path can be used). Error messages name
the file and the real line number (the app's count skips blank lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from iolens.io500.hashes import config_hash, format_hash
from iolens.io500.spec import PHASES, OptionSpec, OptType, PhaseSpec, find_section

# The app's regexes use [[:space:]] in the C locale: space, \t, \n, \v, \f, \r.
_WS = r"[ \t\n\v\f\r]"
_SECTION_RE = re.compile(rf"{_WS}*\[{_WS}*([0-9a-zA-Z_-]+){_WS}*\]{_WS}*(?:{_WS}[#;].*)?", re.DOTALL)
# The app's pair expression is `WS* KEY WS* = WS* ([^#;]*) WS* (WS [#;] .*)?`. Its three quantifiers in a row
# that all take whitespace make a backtracking engine take cubic time on a value of spaces with a comment
# glued to it (1,000 spaces: 8 s; 5,000: a quarter of an hour), so only the key is matched by an expression
# and the rest is read by _pair_value, in linear time, to the same result.
_KEY_RE = re.compile(rf"{_WS}*([0-9a-zA-Z_.-]+){_WS}*=")
_WS_CHARS = " \t\n\v\f\r"
_COMMENT_RE = re.compile(r"[#;]")
_EMPTY_RE = re.compile(rf"{_WS}*(?:[#;].*)?", re.DOTALL)
_INT_RE = re.compile(r"-?[0-9]+")
_UINT_RE = re.compile(r"[0-9]+")
_FLOAT_RE = re.compile(r"[0-9e.+-]+")

_INT_RANGE = {
    OptType.INT: (-(2**31), 2**31 - 1),
    OptType.UINT: (0, 2**32 - 1),
    OptType.UINT64: (0, 2**64 - 1),
}


class IniError(ValueError):
    """A config the IO500 app would refuse (or iolens refuses): names the file and line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}" if line is not None else f"{path}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclass(frozen=True)
class IniLine:
    """One line as the app's parser classifies it."""

    lineno: int  # 1-based, counting every line
    kind: str  # "section", "pair", "empty-pair" (key with an empty value), "blank" (or comment), "bad"
    raw: str
    name: str = ""  # section name or key
    value: str = ""  # trimmed value of a pair


def scan_lines(text: str) -> Iterator[IniLine]:
    """Classify each line of `text` with the app's regexes; no knowledge of sections or keys.

    Used for configs and, with the app's verifier rules, for result.txt files.
    """
    for index, raw in enumerate(text.split("\n"), start=1):
        if raw == "":
            yield IniLine(index, "blank", raw)
            continue
        m = _SECTION_RE.fullmatch(raw)
        if m:
            yield IniLine(index, "section", raw, name=m.group(1))
            continue
        m = _KEY_RE.match(raw)
        raw_value = _pair_value(raw[m.end() :]) if m else None
        if m and raw_value is not None:
            value = raw_value.rstrip(" \t\r")
            yield IniLine(index, "pair" if value else "empty-pair", raw, name=m.group(1), value=value)
            continue
        yield IniLine(index, "blank" if _EMPTY_RE.fullmatch(raw) else "bad", raw)


def _pair_value(rest: str) -> str | None:
    """The value group of the app's pair expression given what follows the `=`, or None when it does not
    match: a `#` or `;` ends the value only after whitespace (else the line is not a pair); the whitespace
    after the `=` is not part of the value, nor the one before the comment."""
    cut = _COMMENT_RE.search(rest)
    end = len(rest)
    if cut is not None:
        if cut.start() == 0 or rest[cut.start() - 1] not in _WS_CHARS:
            return None
        end = cut.start() - 1
    lead = len(rest) - len(rest.lstrip(_WS_CHARS))
    return rest[min(lead, end) : end]


def decode_config(data: bytes, path: str) -> str:
    """Bytes of an INI file as text; undecodable bytes are kept (surrogateescape) for the hashes."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise IniError(path, data.count(b"\n", 0, nul) + 1, "binary data (NUL byte): not an INI file")
    return data.decode("utf-8", "surrogateescape")


@dataclass
class Io500Config:
    """A parsed IO500 config: every option of every section, with the value the app would use.

    `values[section][option]` is the option's value as text (the app keeps text: that is what it hashes and
    writes back), None when unset. Keys use the app's spelling, whatever case the INI used.
    """

    path: str
    source: bytes  # the file as read: config-orig.ini is this
    values: dict[str, dict[str, str | None]]

    def get(self, section: str, option: str) -> str | None:
        """Raw value of an option (None: unset); section and option names are case-insensitive."""
        phase, opt = _lookup(section, option)
        return self.values[phase.name][opt.name]

    def value(self, section: str, option: str) -> str | int | float | bool | None:
        """Typed value of an option: int, bool, float or str; None when unset."""
        phase, opt = _lookup(section, option)
        raw = self.values[phase.name][opt.name]
        if raw is None:
            return None
        if opt.type in _INT_RANGE:
            return int(raw)
        if opt.type is OptType.BOOL:
            return raw == "TRUE"
        if opt.type is OptType.FLOAT:
            return float(raw)
        return raw

    def options(self) -> Iterator[tuple[str, str, str | None]]:
        """(section, option, value) for every option, in the app's order."""
        for phase in PHASES:
            for opt in phase.options:
                yield phase.name, opt.name, self.values[phase.name][opt.name]

    @property
    def config_hash(self) -> int:
        return config_hash((name, value) for _, name, value in self.options())

    @property
    def config_hash_text(self) -> str:
        return format_hash(self.config_hash)

    @property
    def stonewall(self) -> int:
        return int(self.get("debug", "stonewall-time") or 300)

    @property
    def scc(self) -> bool:
        return self.get("global", "scc") == "TRUE"

    @property
    def minwrite(self) -> int:
        """Minimum write time (and the stonewall time a valid run must use): 300 s, 30 s under SCC rules."""
        return 30 if self.scc else 300

    def render(self) -> str:
        """config.ini as the app writes it into the result directory: every option, defaults filled in."""
        return render_values(self.values)


def _lookup(section: str, option: str) -> tuple[PhaseSpec, OptionSpec]:
    phase = find_section(section)
    if phase is None:
        raise KeyError(f"unknown IO500 section [{section}]")
    opt = phase.option(option)
    if opt is None:
        raise KeyError(f"unknown key {option!r} in section [{phase.name}]")
    return phase, opt


def default_values() -> dict[str, dict[str, str | None]]:
    """Every option with its default, keyed by the app's section and option names."""
    return {p.name: {o.name: o.default for o in p.options} for p in PHASES}


def render_values(values: dict[str, dict[str, str | None]], with_help: bool = False) -> str:
    """Sections and options in the app's order, "name = value" (empty when unset), a blank line after each."""
    out: list[str] = []
    for phase in PHASES:
        out.append(f"[{phase.name}]\n")
        for opt in phase.options:
            if with_help:
                out.append(f"# {opt.help}\n")
            value = values[phase.name][opt.name]
            out.append(f"{opt.name} = {value if value is not None else ''}\n")
        out.append("\n")
    return "".join(out)


def _check_value(opt: OptionSpec, value: str, path: str, line: IniLine, section: str) -> str:
    where = f"key '{line.name}' in section [{section}]"
    size = len(value.encode("utf-8", "surrogateescape"))
    if size > _VALUE_MAX:
        # No option needs more (a path is at most PATH_MAX); a longer value is a damaged file, and reading it
        # as a number would meet int()'s own limit of 4300 digits.
        raise IniError(path, line.lineno, f"{where}: the value is {size} bytes long (at most {_VALUE_MAX})")
    if opt.type is OptType.BOOL:
        if value.lower() == "true" or value == "1":
            return "TRUE"
        if value.lower() == "false" or value == "0":
            return "FALSE"
        raise IniError(
            path, line.lineno, f"{where}: expected a boolean (TRUE or FALSE), got {_excerpt(value)}"
        )
    if opt.type in _INT_RANGE:
        pattern, what = (_INT_RE, "an integer") if opt.type is OptType.INT else (_UINT_RE, "an integer >= 0")
        if not pattern.fullmatch(value):
            raise IniError(path, line.lineno, f"{where}: expected {what}, got {_excerpt(value)}")
        low, high = _INT_RANGE[opt.type]
        # Compared by length first: int() refuses more than 4300 digits with an error of its own.
        if len(value.lstrip("-")) > 20 or not low <= int(value) <= high:
            shown = value if len(value) <= 30 else f"{value[:20]}… ({len(value)} digits)"
            raise IniError(path, line.lineno, f"{where}: {shown} is out of range ({low}..{high})")
        return value
    if (section.lower(), opt.name) in _PATHS:
        _check_path(value, path, line, where)
    if opt.type is OptType.FLOAT:
        ok = _FLOAT_RE.fullmatch(value) is not None
        try:
            float(value)
        except ValueError:
            ok = False
        if not ok:
            raise IniError(path, line.lineno, f"{where}: expected a number, got {_excerpt(value)}")
    return value


# A value may hold at most PATH_MAX - 1 bytes (no option needs more), and an option that names a path no
# name longer than NAME_MAX (Linux): such a path cannot be used at all (ENAMETOOLONG), so it is a config
# error, named by its line, rather than a failure of whatever first touches the path.
_VALUE_MAX, _NAME_MAX = 4095, 255
_PATHS = {("global", "datadir"), ("global", "resultdir"), ("debug", "pause-dir")}


def _check_path(value: str, path: str, line: IniLine, where: str) -> None:
    longest = max(value.encode("utf-8", "surrogateescape").split(b"/"), key=len)
    if len(longest) > _NAME_MAX:
        name = _excerpt(longest.decode("utf-8", "surrogateescape"))
        raise IniError(
            path, line.lineno, f"{where}: the name {name} is {len(longest)} bytes long (at most {_NAME_MAX})"
        )


def _excerpt(raw: str) -> str:
    text = raw if len(raw) <= 60 else raw[:57] + "..."
    return repr(text)


def parse_config(data: bytes | str, path: str = "<config>") -> Io500Config:
    """Parse IO500 INI text (bytes as read from a file, or str) into a config with every default filled in."""
    if isinstance(data, str):
        source = data.encode("utf-8", "surrogateescape")
        decode_config(source, path)  # the NUL check
        text = data
    else:
        source = data
        text = decode_config(data, path)
    values = default_values()
    section: PhaseSpec | None = None
    for line in scan_lines(text):
        if line.kind == "blank":
            continue
        if line.kind == "bad":
            hint = ""
            if "#" in line.raw or ";" in line.raw:
                hint = (
                    " (a value cannot contain '#' or ';'; a comment after a value needs whitespace before it)"
                )
            raise IniError(path, line.lineno, f"unexpected content {_excerpt(line.raw)}{hint}")
        if line.kind == "section":
            section = find_section(line.name)
            if section is None:
                raise IniError(path, line.lineno, f"unknown section [{line.name}]")
            continue
        if section is None:
            raise IniError(path, line.lineno, f"key '{line.name}' is outside of any [section]")
        opt = section.option(line.name)
        # The app skips an empty value before it looks the key up; iolens looks first, so that a misspelt
        # key is refused whether or not it has a value (a known key with an empty value keeps its default).
        if opt is None:
            raise IniError(path, line.lineno, f"unknown key '{line.name}' in section [{section.name}]")
        if line.kind == "pair":
            values[section.name][opt.name] = _check_value(opt, line.value, path, line, section.name)
    return Io500Config(path=path, source=source, values=values)


def load_config(path: str | Path) -> Io500Config:
    """Read and parse an IO500 INI file; errors name the file as given."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise IniError(str(path), None, f"cannot read the config: {exc.strerror or exc}") from exc
    return parse_config(data, str(path))
