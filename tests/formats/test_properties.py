"""Java's .properties format: read as ``Properties.load`` reads it, written as
``Properties.store`` writes it (golden lines from Java 17), and every value written reads back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common.errors import InvalidFormatException
from rackwise.formats.properties import format_properties, parse_properties

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)))


def test_java_properties_syntax() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d=  spaced value  \n"
        "e=one,\\\n"
        "    two\n"
        "f=tab\\there\\u0041\n"
        "g\\=h=x\n"
        "i=ends with backslash\\\\\n"
        "j\n"
        "a=override\n"
    )
    assert parse_properties(text) == {
        "a": "override",
        "b": "2",
        "c": "3",
        "d": "spaced value  ",
        "e": "one,two",
        "f": "tab\thereA",
        "g=h": "x",
        "i": "ends with backslash\\",
        "j": "",
    }


def test_a_malformed_unicode_escape_is_refused() -> None:
    with pytest.raises(InvalidFormatException, match="malformed"):
        parse_properties("a=\\u12g4\n")


@given(
    st.dictionaries(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",))),
        max_size=5,
    )
)
def test_escaped_keys_and_values_read_back(entries: dict[str, str]) -> None:
    def escape(text: str, is_key: bool) -> str:
        out = []
        for i, char in enumerate(text):
            if char in "\\=:#!" or (char == " " and (is_key or i == 0)):
                out.append("\\" + char)
            elif char in "\t\n\r\f":
                out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
            elif not char.isprintable() and ord(char) < 0x10000:
                out.append(f"\\u{ord(char):04x}")  # as Properties.store(OutputStream) writes
            else:
                out.append(char)
        return "".join(out)

    text = "".join(f"{escape(k, True)}={escape(v, False)}\n" for k, v in entries.items())
    assert parse_properties(text) == entries


def test_lines_end_where_javas_line_reader_ends_them() -> None:
    # Java 17 reads k as the 7 characters a, VT, b, LS, c, NEL, d: only CR and LF end lines.
    text = "k=a\x0bb\u2028c\x85d\r\nz=1\rw=2"
    assert parse_properties(text) == {"k": "a\x0bb\u2028c\x85d", "z": "1", "w": "2"}


def test_written_as_java_writes_it() -> None:
    # Properties.store(Writer, null) on Java 17, the date comment left out.
    text = format_properties({"a key": " lead=x:#!\\\t\n\r\f tail "})
    assert text == "a\\ key=\\ lead\\=x\\:\\#\\!\\\\\\t\\n\\r\\f tail \n"
    assert format_properties({"x": "1"}, ["", "by rackwise"]) == "#\n#by rackwise\nx=1\n"


@given(st.dictionaries(TEXT.filter(bool), TEXT, max_size=5))
def test_whatever_is_written_reads_back(entries: dict[str, str]) -> None:
    assert parse_properties(format_properties(entries, ["comment"])) == entries
