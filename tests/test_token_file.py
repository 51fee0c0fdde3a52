"""`memstore web --token-file FILE`: the token is the file's first line. A file given whose first line
holds no token is one line naming the option, never a page behind a random token (issue 40,
finding 9: a blank first line was ignored for a random token; an empty file was "unexpected
IndexError")."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from memstore import MemstoreError
from memstore.cli import cli
from memstore.listeners import token_from_file
from memstore.web.serve import read_token


@pytest.mark.parametrize(
    "content, error",
    [
        (b"", "the file is empty; write the token on its first line"),
        (b"\n", "its first line is blank; write the token on its first line"),
        (b"   \ns3cret-token\n", "its first line is blank; write the token on its first line"),
        (b"\xff\xfe token\n", "not UTF-8 text; write the token on its first line"),
        (b"two words\n", "the token must be one word of printable ASCII characters, without spaces"),
    ],
)
def test_a_token_file_without_a_token_on_its_first_line_is_one_line_naming_the_option(tmp_path, content, error):
    path = tmp_path / "token"
    path.write_bytes(content)
    with pytest.raises(MemstoreError) as raised:
        read_token(path)  # what `memstore web` reads before it serves anything
    assert str(raised.value) == f"--token-file {path}: {error}"


def test_the_token_is_the_first_line_without_its_newline(tmp_path):
    path = tmp_path / "token"
    path.write_text("s3cret-token\r\nsecond line\n")
    assert read_token(path) == token_from_file(path) == "s3cret-token"
    with pytest.raises(MemstoreError, match=r"^--token-file .*: cannot read it \(Is a directory\)$"):
        token_from_file(tmp_path)


def test_the_web_command_refuses_an_empty_token_file_in_one_line(tmp_path):
    path = tmp_path / "token"
    path.write_bytes(b"")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "store.db"), "web", "--token-file", str(path), "--listen", "127.0.0.1:1"])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"Error: --token-file {path}: the file is empty; write the token on its first line\n"
