"""Review at real size (issue 42), the command line's side: flags a person pages and dismisses in
bulk, one memory back with `restore ID`, the archive searched, texts beside ids, every list capped,
a mistyped namespace named with the nearest ones, one-line errors for a busy port and a missing
token file, meta as JSON, plurals, --help ranges in words. Real SQLite files, the real CLI.
"""

from __future__ import annotations

import json
import socket

import click
import pytest
from click.testing import CliRunner

from memstore import MemoryStore
from memstore.cli import cli
from memstore.cli.app import COMMANDS, MemstoreGroup

from .test_review import limits
from .test_cli import run  # noqa: F401 (a fixture: the CLI in-process on db_path)


@pytest.fixture
def flagged(db_path):
    with MemoryStore(db_path) as store:
        limits(store)
    return db_path


def lines(result) -> list[str]:
    return result.output.splitlines()


# -- flags ------------------------------------------------------------------------------------------


def test_flags_shows_a_page_with_both_texts_what_differs_and_how_to_settle_each(run, flagged):
    page = lines(run("flags", "-n", "work", "--sort", "oldest", "--limit", "1"))
    assert page[0].startswith("flag 9: a number differs (cosine 0.880, raised ") and page[0].endswith(" UTC by run 1)")
    assert page[1].startswith("  older: w1 (") and page[1].endswith("): The build takes 1 minutes.")
    assert page[2].startswith("  newer, probably current: w2 (") and page[2].endswith("): The build takes 2 minutes.")
    assert page[3] == "  differs: 1 -> 2"
    assert page[4] == f"  keep the newer: memstore --db {flagged} supersede w1 --by w2  |  both hold: memstore --db {flagged} flags dismiss 9"
    assert page[5] == "open flags 1-1 of 2 in 'work', oldest first; --offset 1 shows the next"
    assert lines(run("flags", "-n", "work", "--sort", "oldest", "--limit", "1", "--offset", "1"))[-1] == "open flags 2-2 of 2 in 'work', oldest first"
    every = json.loads(run("flags", "--all-namespaces", "--json", "--limit", "3").output)
    assert (every["total"], len(every["flags"]), every["next_offset"]) == (10, 3, 3)


def test_flags_in_an_empty_namespace_name_the_namespaces_that_hold_some(run, flagged):
    default = run("flags")
    assert default.exit_code == 0 and lines(default) == [
        "no open flags in 'default'", "other namespaces hold such flags: assistant (8), work (2); -n NAME or --all-namespaces shows them",
    ]  # fmt: skip
    mistyped = run("flags", "-n", "asistant")
    assert (mistyped.exit_code, mistyped.output) == (1, "Error: no namespace 'asistant' in this store; nearest: assistant (--all-namespaces: every one)\n")


def test_flags_dismiss_takes_a_filter_with_the_count_seen_as_one_run(run, flagged):
    assert lines(run("flags", "-n", "assistant", "--reason", "negation"))[-1] == "open flags 1-4 of 4 in 'assistant', newest first"
    wrong = run("flags", "dismiss", "-n", "assistant", "--reason", "negation", "--expect", "3")
    assert (wrong.exit_code, wrong.output) == (1, "Error: 4 open flags match now, not 3; list them again (nothing was dismissed)\n")
    unbounded = run("flags", "dismiss", "-n", "assistant", "--reason", "negation")
    assert unbounded.exit_code == 2 and "--expect N" in unbounded.output
    done = lines(run("flags", "dismiss", "-n", "assistant", "--reason", "negation", "--expect", "4"))
    assert done[0] == "run 2: 4 flags dismissed" and done[-1] == f"undo with: memstore --db {flagged} restore --run 2"
    assert done[1] == "  flag 2: a2 'The API limit is 200 rpm.' vs a3 'The API limit is 300 rpm.'"
    undone = lines(run("restore", "--run", "2"))
    assert undone[0] == "run 2 restored: 4 flags open again"
    assert undone[1].startswith("  flag 2 open again: a2 'The API limit is 200 rpm.' vs a3 ")
    one = lines(run("flags", "dismiss", "9"))
    assert one[0] == "run 3: flag 9 dismissed"


# -- one memory back, the archive searched, texts beside ids ------------------------------------------


def test_restore_id_brings_one_memory_back_and_a_bare_run_number_is_pointed_at_run(run, flagged):
    run("consolidate", "-n", "assistant", "-c", "2")
    found = lines(run("recall", "--archived", "limit 300", "-n", "assistant", "-k", "1"))
    assert found[2].split()[:3] == ["a3", "assistant", "evicted"] and found[2].endswith("The API limit is 300 rpm.")
    assert found[-1] == "bring one back with: memstore restore ID"
    back = lines(run("restore", "a3"))
    assert back[0] == "run 3: 1 memory back in the live set, 2 flags settled"
    assert back[1] == "  back: a3  The API limit is 300 rpm."
    assert back[-1] == f"undo with: memstore --db {flagged} restore --run 3"
    assert lines(run("restore", "--run", "3"))[:2] == ["run 3 undone: 1 memory back in the archive", "  archived again: a3  The API limit is 300 rpm."]
    bare = run("restore", "1")
    assert (bare.exit_code, bare.output) == (1, "Error: no archived memory '1'; did you mean `memstore restore --run 1`?\n")
    assert run("restore").exit_code == 2 and run("restore", "a3", "--run", "1").exit_code == 2
    assert run("recall", "limit", "--all-namespaces").exit_code == 2


def test_runs_n_and_maintain_name_texts_and_stop_after_the_first_ten(run, db_path):
    run("import", "-", input="".join(json.dumps({"id": f"m{n:02}", "text": f"fact {n}", "namespace": "g"}) + "\n" for n in range(15)))
    report = lines(run("maintain", "-n", "g", "--phases", "dedup,evict", "--capacity", "2"))
    assert report[0].startswith("dedup ") and report[1].startswith("evict       ok       run 2 ")
    assert report[2] == "    archived m02 as evicted: fact 2"
    assert report[12] == "    ... and 3 more (--all lists every one, --json too)"
    assert report[13] == f"undo this whole maintain with: memstore --db {db_path} restore --run 1 (each phase's run alone: restore --run N)"
    assert len(lines(run("maintain", "-n", "g", "--phases", "evict", "--capacity", "0", "--all"))) == 1 + 2 + 1
    whole = lines(run("runs", "2"))
    assert whole[0].startswith("run 2: evict (maintain 1) in g") and "archived (13):" in whole
    assert whole[whole.index("archived (13):") + 3].endswith("fact 2") and "... and 3 more (--all lists every one, --json too)" in whole
    assert len(json.loads(run("runs", "2", "--json").output)["archived"]) == 13
    listed = lines(run("runs"))
    assert [line.split()[:2] for line in listed[2:]] == [["4", "evict"], ["3", "maintain"], ["2", "evict"], ["1", "maintain"]]
    undone = lines(run("restore", "--run", "1"))
    assert undone[0] == "run 1 restored (1 phase run undone, newest first): 13 memories back in the live set"


def test_report_names_texts_beside_its_ids(run):
    run("add", "User prefers dark mode.", "--id", "d1")
    run("add", "User prefers dark mode.", "--id", "d2")
    report = lines(run("report"))
    assert "  d1, d2: User prefers dark mode." in report


# -- the command line for people ------------------------------------------------------------------------


def test_a_mistyped_namespace_is_named_with_the_nearest_ones(run, flagged):
    mistyped = run("list", "-n", "asistant")
    assert (mistyped.exit_code, mistyped.output) == (1, "Error: no namespace 'asistant' in this store; nearest: assistant (--all-namespaces: every one)\n")
    default = run("list")
    assert default.exit_code == 0
    assert "namespace 'default' holds nothing; the store's namespaces: assistant, work (-n NAME, or --all-namespaces)" in default.stderr
    assert run("list", "-n", "work").exit_code == 0
    assert run("report", "-n", "wrk").output == "Error: no namespace 'wrk' in this store; nearest: work (--all-namespaces: every one)\n"
    recalled = run("recall", "limit", "-n", "asistant")  # an agent's first recall in a new namespace is no error
    assert recalled.exit_code == 0 and recalled.stderr == "namespace 'asistant' holds nothing; nearest: assistant\n"


def test_show_prints_meta_as_json_and_counts_read_in_words(run, tmp_path):
    run("add", "Met Dana.", "--id", "m1", "--meta", '{"where": "café", "n": 1}')
    shown = [line for line in lines(run("show", "m1")) if line.startswith("meta")]
    assert shown == ['meta              {"n": 1, "where": "café"}']
    assert run("backup", str(tmp_path / "copy.db")).output.endswith(": 1 memory, 0 archived, 0 runs\n")


def test_help_gives_ranges_in_words_not_64_bit_bounds():
    group = MemstoreGroup()
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = group.get_command(ctx, name)
        commands = [command, *getattr(command, "commands", {}).values()]
        for each in commands:
            text = each.get_help(click.Context(each, info_name=each.name))
            assert "9223372036854775807" not in text and "<=x" not in text and "x<=" not in text, each.name
    restore_help = CliRunner().invoke(cli, ["restore", "--help"]).output
    assert "[1 or more]" in restore_help
    assert "[default: 0.8; 0 to 1]" in CliRunner().invoke(cli, ["prune", "--help"]).output


def busy_port() -> socket.socket:
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    return held


def test_web_on_a_busy_port_and_a_missing_token_file_fail_in_one_line_before_any_address(run, tmp_path):
    pytest.importorskip("starlette")
    with busy_port() as held:
        port = held.getsockname()[1]
        busy = run("web", "--listen", f"127.0.0.1:{port}")
        assert (busy.exit_code, busy.output) == (1, f"Error: --listen 127.0.0.1:{port}: port {port} is in use (another memstore web or mcp?); give another port\n")
    missing = run("web", "--token-file", str(tmp_path / "nope"))
    assert missing.exit_code == 1 and missing.output.startswith(f"Error: --token-file {tmp_path / 'nope'}: no such file")
    assert len(missing.output.splitlines()) == 1


def test_mcp_over_http_on_a_busy_port_fails_in_one_line(run):
    pytest.importorskip("mcp")
    with busy_port() as held:
        port = held.getsockname()[1]
        busy = run("mcp", "--http", f"127.0.0.1:{port}")
        assert (busy.exit_code, busy.output) == (1, f"Error: --http 127.0.0.1:{port}: port {port} is in use (another memstore web or mcp?); give another port\n")


def test_a_reviewers_session_on_either_backend(store_url):
    """Bulk dismissal, one memory back and its undo, and one maintain undone, through the CLI on
    SQLite and PostgreSQL (the store_url fixture)."""
    with MemoryStore(store_url) as store:
        limits(store)

    def run(*args):
        result = CliRunner().invoke(cli, ["--db", store_url, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output.splitlines()

    assert run("flags", "dismiss", "-n", "assistant", "--reason", "negation", "--expect", "4")[0] == "run 2: 4 flags dismissed"
    assert run("maintain", "-n", "assistant", "--phases", "evict", "--capacity", "2")[-1].startswith("undo this whole maintain with: ")
    assert run("recall", "limit 300", "--archived", "-n", "assistant", "-k", "1")[2].split()[:3] == ["a3", "assistant", "evicted"]
    assert run("restore", "a3")[:2] == ["run 5: 1 memory back in the live set, 1 flag settled", "  back: a3  The API limit is 300 rpm."]
    assert run("restore", "--run", "5")[0] == "run 5 undone: 1 memory back in the archive"
    assert run("restore", "--run", "3")[0] == "run 3 restored (1 phase run undone, newest first): 7 memories back in the live set, 4 flags open again"
    assert run("restore", "--run", "2")[0] == "run 2 restored: 4 flags open again"
    assert json.loads(run("flags", "--all-namespaces", "--json")[0])["total"] == 10
