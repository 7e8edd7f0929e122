"""The .properties reader follows `java.util.Properties.load`: one behaviour per test."""

from __future__ import annotations

import pytest

from mirror_engine.mm2 import PropertiesError, load_properties, parse_properties_text


def test_separators_equals_colon_and_whitespace():
    text = "a=1\nb:2\nc 3\nd\t4\ne\f5\nf = 6\ng : 7\nh   =   8\n"
    assert parse_properties_text(text) == {
        "a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8"}


def test_the_first_unescaped_separator_ends_the_key():
    assert parse_properties_text("url=http://h:1/x=y\n") == {"url": "http://h:1/x=y"}
    assert parse_properties_text("a:b=c\n") == {"a": "b=c"}
    assert parse_properties_text("key value = more\n") == {"key": "value = more"}
    # After a whitespace separator one '=' or ':' still belongs to the separator; a second one is value.
    assert parse_properties_text("a  :  =x\n") == {"a": "=x"}
    assert parse_properties_text("a = = b\n") == {"a": "= b"}
    assert parse_properties_text("a==b\n") == {"a": "=b"}


def test_escaped_separators_stay_in_the_key():
    assert parse_properties_text("a\\=b\\:c\\ d = v\n") == {"a=b:c d": "v"}


def test_key_without_value_and_value_without_key():
    assert parse_properties_text("lonely\nempty =\n=novalue\n") == {"lonely": "", "empty": "", "": "novalue"}


def test_leading_whitespace_of_the_value_is_dropped_trailing_kept():
    assert parse_properties_text("a =   x y  \n") == {"a": "x y  "}


def test_comments_only_at_the_start_of_a_line():
    text = "# comment\n   ! bang comment\n\t# indented\na = 1 # not a comment\nb = x!y\n"
    assert parse_properties_text(text) == {"a": "1 # not a comment", "b": "x!y"}


def test_comment_line_ending_in_backslash_does_not_continue():
    assert parse_properties_text("# comment \\\nnext = 1\n") == {"next": "1"}


def test_continuation_drops_leading_whitespace_of_the_next_line():
    assert parse_properties_text("list = a, \\\n      b, \\\n\t c\n") == {"list": "a, b, c"}


def test_continued_line_starting_with_hash_is_value_not_comment():
    assert parse_properties_text("a = x\\\n  # y\n") == {"a": "x# y"}


def test_even_number_of_backslashes_is_not_a_continuation():
    assert parse_properties_text("a = x\\\\\nb = 2\n") == {"a": "x\\", "b": "2"}
    assert parse_properties_text("a = x\\\\\\\nmore\n") == {"a": "x\\more"}


def test_continuation_into_an_empty_line_ends_the_entry():
    assert parse_properties_text("a = x\\\n\nb = 2\n") == {"a": "x", "b": "2"}


def test_continuation_at_end_of_input_is_dropped():
    assert parse_properties_text("a = 1\r\nb = 2 \\") == {"a": "1", "b": "2 "}


def test_line_endings_crlf_cr_lf():
    assert parse_properties_text("a=1\r\nb=2\rc=3\nd=4") == {"a": "1", "b": "2", "c": "3", "d": "4"}
    assert parse_properties_text("a = x\\\r\n  y\r\n") == {"a": "xy"}


def test_escapes():
    text = "k = tab\\there\\nnl\\rcr\\fff \\u00e9\\u20AC \\\\ \\q\\#\\!\n"
    assert parse_properties_text(text) == {"k": "tab\there\nnl\rcr\fff \u00e9\u20ac \\ q#!"}


def test_unicode_escape_in_key():
    assert parse_properties_text("caf\\u00e9 = 1\n") == {"caf\u00e9": "1"}


def test_malformed_unicode_escape_names_the_line():
    with pytest.raises(PropertiesError) as caught:
        parse_properties_text("a = 1\nb = \\u12G4\n")
    assert "line 2" in str(caught.value) and "\\uXXXX" in str(caught.value)
    with pytest.raises(PropertiesError):
        parse_properties_text("b = \\u12")


def test_later_duplicates_win():
    assert parse_properties_text("a = 1\na = 2\n") == {"a": "2"}


def test_bytes_are_iso_8859_1_not_utf8():
    # 0xE9 alone is not valid UTF-8; Java reads it as U+00E9.
    assert load_properties(b"name = caf\xe9\n") == {"name": "caf\u00e9"}
    # UTF-8 bytes of U+00E9 are read as two Latin-1 characters, as Java does.
    assert load_properties("name = caf\u00e9\n".encode()) == {"name": "caf\u00c3\u00a9"}


def test_bytes_with_unicode_escape_beyond_latin1():
    assert load_properties(b"euro = \\u20ac\n") == {"euro": "\u20ac"}


def test_blank_and_whitespace_only_lines_are_skipped():
    assert parse_properties_text("\n   \n\t\f\na=1\n") == {"a": "1"}


def test_a_surrogate_pair_escape_is_one_character_beyond_the_bmp():
    # Java writes characters outside the BMP as two \uXXXX escapes (a UTF-16 surrogate pair).
    value = load_properties(b"emoji = smile \\uD83D\\uDE00\n")["emoji"]
    assert value == "smile \U0001F600"
    assert value.encode("utf-8") == "smile \U0001F600".encode()


def test_a_lone_surrogate_escape_is_refused_naming_the_line():
    with pytest.raises(PropertiesError) as caught:
        parse_properties_text("a = 1\nb = half \\uD83D only\n")
    assert "line 2" in str(caught.value) and "surrogate" in str(caught.value)
