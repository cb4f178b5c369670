import pickle
import re
from pathlib import Path

import pytest

from mtcjudge.ingest.formats import (
    InputError,
    Judgments,
    Runs,
    check_judgments_cover_runs,
    lines,
    read_judgments,
    read_metadata,
    read_runs,
)


def write(directory: Path, name: str, *lines: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def trec(qid: str, doc: str, rank: int | str, tag: str, score: str = "0.5") -> str:
    return f"{qid} Q0 {doc} {rank} {score} {tag}"


# InputError


def test_input_error_str_with_and_without_line():
    err = InputError("runs/sysA.txt", 17, "bad rank", field="rank")
    assert str(err) == "runs/sysA.txt:17: bad rank"
    assert (err.path, err.line, err.field, err.message) == ("runs/sysA.txt", 17, "rank", "bad rank")
    assert isinstance(err, ValueError)
    assert str(InputError(Path("j.tsv"), None, "empty")) == "j.tsv: empty"


def test_input_error_survives_pickling():
    err = pickle.loads(pickle.dumps(InputError("a.tsv", 3, "oops", field="doc")))
    assert (str(err), err.path, err.line, err.field) == ("a.tsv:3: oops", "a.tsv", 3, "doc")


# Runs: TSV


def test_tsv_runs_keep_file_order_as_rank_order(tmp_path):
    path = write(
        tmp_path,
        "runs.tsv",
        "sysB\tq2\td3",
        "sysB\tq2\td1",
        "sysA\tq1\td2",
        "sysA\tq1\td9",
        "sysA\tq3\td1",
    )
    runs = read_runs(path)
    assert runs.format == "tsv"
    assert runs.lists == {"sysB": {"q2": ["d3", "d1"]}, "sysA": {"q1": ["d2", "d9"], "q3": ["d1"]}}
    assert runs.systems == ["sysA", "sysB"]
    assert runs.queries == ["q1", "q2", "q3"]
    assert runs.documents == ["d1", "d2", "d3", "d9"]


def test_tsv_runs_skip_header_comments_blank_lines_and_accept_str_path(tmp_path):
    path = write(
        tmp_path,
        "runs.txt",
        "# exported from MIREX",
        "",
        "System\tQuery\tDoc",
        "sysA\tq1\td1",
        "   ",
        "# a comment between lines",
        "sysA\tq1\td2",
    )
    assert read_runs(str(path)).lists == {"sysA": {"q1": ["d1", "d2"]}}


def test_tsv_runs_tolerate_crlf_bom_and_padding(tmp_path):
    path = tmp_path / "runs.tsv"
    path.write_bytes(b"\xef\xbb\xbfsysA\tq1\td1\r\nsysA \tq1\t d2\r\n")
    assert read_runs(path).lists == {"sysA": {"q1": ["d1", "d2"]}}


def test_header_is_only_recognised_on_the_first_data_line(tmp_path):
    path = write(tmp_path, "runs.tsv", "sysA\tq1\td1", "system\tquery\tdoc")
    assert read_runs(path).lists == {"sysA": {"q1": ["d1"]}, "system": {"query": ["doc"]}}


# Runs: TREC


def test_trec_run_is_ordered_by_rank_and_keyed_by_tag(tmp_path):
    path = write(
        tmp_path,
        "run.tsv",  # the extension does not matter, the content does
        trec("q1", "d7", 12, "sysA"),
        trec("q1", "d3", 10, "sysA"),
        "q1\tQ0\td5\t11\t0.2\tsysA",
        trec("q2", "d1", 0, "sysA", score="-3.5e-2"),
        trec("q1", "d3", 1, "sysB"),
    )
    runs = read_runs(path)
    assert runs.format == "trec"
    assert runs.lists == {"sysA": {"q1": ["d3", "d5", "d7"], "q2": ["d1"]}, "sysB": {"q1": ["d3"]}}


def test_trec_directory_reads_regular_visible_files_in_order(tmp_path):
    write(tmp_path, "runs/b.txt", trec("q1", "d2", 2, "sysA"), trec("q1", "d9", 1, "sysB"))
    write(tmp_path, "runs/a.txt", "# system A", trec("q1", "d1", 1, "sysA"))
    write(tmp_path, "runs/.hidden", "not a run file")
    write(tmp_path, "runs/notes/readme.md", "not a run file either")
    runs = read_runs(tmp_path / "runs")
    assert runs.format == "trec"
    assert runs.lists == {"sysA": {"q1": ["d1", "d2"]}, "sysB": {"q1": ["d9"]}}


def test_tsv_directory(tmp_path):
    write(tmp_path, "runs/1.tsv", "sysA\tq1\td1")
    write(tmp_path, "runs/2.tsv", "system\tquery\tdoc", "sysB\tq1\td2")
    runs = read_runs(tmp_path / "runs")
    assert (runs.format, runs.lists) == ("tsv", {"sysA": {"q1": ["d1"]}, "sysB": {"q1": ["d2"]}})


# Runs: validation


def test_missing_run_path(tmp_path):
    with pytest.raises(InputError, match="no such file or directory") as info:
        read_runs(tmp_path / "nope")
    assert (info.value.path, info.value.line) == (str(tmp_path / "nope"), None)


def test_run_directory_without_files(tmp_path):
    write(tmp_path, "runs/.hidden", trec("q1", "d1", 1, "sysA"))
    (tmp_path / "runs" / "sub").mkdir()
    with pytest.raises(InputError, match="directory contains no run files") as info:
        read_runs(tmp_path / "runs")
    assert (info.value.path, info.value.line) == (str(tmp_path / "runs"), None)


@pytest.mark.parametrize(
    "lines",
    [pytest.param((), id="empty"), ("# only", "", "# comments"), ("system\tquery\tdoc",)],
)
def test_run_file_without_data_lines(tmp_path, lines):
    path = write(tmp_path, "runs.tsv", *lines)
    with pytest.raises(InputError, match=r"empty file \(no data lines\)") as info:
        read_runs(path)
    assert (info.value.path, info.value.line) == (str(path), None)


def test_trec_ragged_line(tmp_path):
    path = write(tmp_path, "sysA.txt", trec("q1", "d1", 1, "sysA"), "q1 Q0 d2 2")
    expected = (
        f"{path}:2: expected 6 whitespace-separated fields (qid Q0 doc rank score tag), found 4"
    )
    with pytest.raises(InputError, match=re.escape(expected)) as info:
        read_runs(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, None)


def test_tsv_ragged_line_counts_physical_lines(tmp_path):
    path = write(tmp_path, "runs.tsv", "# c", "sysA\tq1\td1", "", "sysA\tq1")
    with pytest.raises(InputError, match=r"expected 3 tab-separated fields .*found 2$") as info:
        read_runs(path)
    assert info.value.line == 4


def test_mixed_formats_in_one_run_file(tmp_path):
    path = write(tmp_path, "runs.tsv", "sysA\tq1\td1", trec("q1", "d2", 2, "sysA"))
    with pytest.raises(InputError, match=r"looks like a TREC run line.*do not mix formats") as info:
        read_runs(path)
    assert info.value.line == 2


def test_unrecognised_run_format(tmp_path):
    path = write(tmp_path, "runs.csv", "# header", "sysA,q1,d1")
    with pytest.raises(
        InputError, match=r"cannot recognise the format.*found 1 whitespace"
    ) as info:
        read_runs(path)
    assert (info.value.path, info.value.line) == (str(path), 2)


def test_unrecognised_run_format_reports_tab_fields(tmp_path):
    path = write(tmp_path, "runs.tsv", "sysA\tq1\td1\t1")
    with pytest.raises(InputError, match="found 4 tab-separated, 4 whitespace-separated fields"):
        read_runs(path)


def test_run_directory_mixing_formats(tmp_path):
    first = write(tmp_path, "runs/a.txt", trec("q1", "d1", 1, "sysA"))
    second = write(tmp_path, "runs/b.tsv", "# tsv", "sysB\tq1\td1")
    with pytest.raises(InputError, match=r"TSV run file but .*a.txt is a TREC run file") as info:
        read_runs(first.parent)
    assert (info.value.path, info.value.line) == (str(second), 2)


@pytest.mark.parametrize("rank", ["1.5", "one", "1_0", "٣"])
def test_non_integer_rank(tmp_path, rank):
    path = write(tmp_path, "run.txt", trec("q1", "d1", 1, "sysA"), trec("q1", "d2", rank, "sysA"))
    with pytest.raises(InputError, match="rank must be an integer") as info:
        read_runs(path)
    assert (info.value.line, info.value.field) == (2, "rank")


def test_non_numeric_run_score(tmp_path):
    path = write(tmp_path, "run.txt", trec("q1", "d1", 1, "sysA", score="high"))
    with pytest.raises(InputError, match="score must be a number, found 'high'") as info:
        read_runs(path)
    assert (info.value.line, info.value.field) == (1, "score")


def test_duplicate_rank(tmp_path):
    path = write(
        tmp_path,
        "run.txt",
        trec("q1", "d1", 1, "sysA"),
        trec("q1", "d1", 1, "sysB"),  # same rank in another system is fine
        trec("q1", "d2", 1, "sysA"),
    )
    with pytest.raises(
        InputError, match=r"duplicate rank 1 for system sysA query q1 \(first at line 1\)"
    ) as info:
        read_runs(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 3, "rank")


def test_duplicate_rank_across_files_names_the_first_file(tmp_path):
    first = write(tmp_path, "runs/a.txt", trec("q1", "d1", 1, "sysA"))
    second = write(tmp_path, "runs/b.txt", trec("q1", "d2", 1, "sysA"))
    with pytest.raises(InputError, match=re.escape(f"(first at {first}:1)")) as info:
        read_runs(first.parent)
    assert (info.value.path, info.value.line) == (str(second), 1)


def test_same_doc_twice_in_trec_list(tmp_path):
    path = write(tmp_path, "run.txt", trec("q1", "d1", 1, "sysA"), trec("q1", "d1", 2, "sysA"))
    with pytest.raises(
        InputError, match=r"doc d1 appears twice in the list of system sysA query q1"
    ) as info:
        read_runs(path)
    assert (info.value.line, info.value.field) == (2, "doc")


def test_same_doc_twice_in_tsv_list(tmp_path):
    path = write(tmp_path, "runs.tsv", "sysA\tq1\td1", "sysA\tq1\td2", "sysA\tq1\td1")
    with pytest.raises(InputError, match=r"appears twice .* \(first at line 1\)") as info:
        read_runs(path)
    assert (info.value.line, info.value.field) == (3, "doc")


def test_tsv_block_not_contiguous(tmp_path):
    path = write(tmp_path, "runs.tsv", "sysA\tq1\td1", "sysA\tq2\td1", "sysA\tq1\td2")
    with pytest.raises(
        InputError, match="lines of system sysA query q1 are not contiguous"
    ) as info:
        read_runs(path)
    assert (info.value.path, info.value.line) == (str(path), 3)


def test_tsv_block_split_across_files_is_not_contiguous(tmp_path):
    write(tmp_path, "runs/1.tsv", "sysA\tq1\td1")
    second = write(tmp_path, "runs/2.tsv", "sysA\tq1\td2")
    with pytest.raises(InputError, match="not contiguous") as info:
        read_runs(tmp_path / "runs")
    assert (info.value.path, info.value.line) == (str(second), 1)


@pytest.mark.parametrize(
    ("line", "field"), [("\tq1\td1", "system"), ("sysA\t \td1", "query"), ("sysA\tq1\t", "doc")]
)
def test_empty_id_in_tsv_run(tmp_path, line, field):
    path = write(tmp_path, "runs.tsv", "sysA\tq1\td0", line)
    with pytest.raises(InputError, match=f"empty {field} id") as info:
        read_runs(path)
    assert (info.value.line, info.value.field) == (2, field)


def test_run_file_not_utf8(tmp_path):
    path = tmp_path / "runs.tsv"
    path.write_bytes(b"sysA\tq1\td1\nsysA\tq1\tcaf\xe9\n")
    with pytest.raises(InputError, match=r"not a UTF-8 text file \(byte 0xe9\)") as info:
        read_runs(path)
    assert (info.value.path, info.value.line) == (str(path), 2)


@pytest.mark.parametrize(
    ("reader", "content", "line"),
    [
        (read_runs, b"sysA\tq1\td1\nsysA\tq1\td\x002\n", 2),
        (lambda path: read_judgments(path, "fine"), b"# c\n\nq1\td1\t5\x000\n", 3),
        (read_metadata, b"\x00d1\tA\tG\n", 1),
        # UTF-16 text decodes as UTF-8 full of NULs
        (read_runs, "sysA\tq1\td1\n".encode("utf-16-le"), 1),
    ],
)
def test_a_nul_character_is_refused_naming_the_line(tmp_path, reader, content, line):
    path = tmp_path / "file.tsv"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"contains a NUL character \(byte 0x00\)") as info:
        reader(path)
    assert (info.value.path, info.value.line) == (str(path), line)


def test_unreadable_file(tmp_path, monkeypatch):
    path = write(tmp_path, "runs.tsv", "sysA\tq1\td1")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(lines, "open", refuse, raising=False)
    with pytest.raises(InputError, match="cannot read file: Permission denied") as info:
        read_runs(path)
    assert (info.value.path, info.value.line) == (str(path), None)


# Judgments


def test_tsv_fine_judgments_with_duplicates_and_mean(tmp_path):
    path = write(
        tmp_path,
        "judgments.txt",
        "Query\tDoc\tFine",
        "# two assessors judged q1/d1",
        "q1\td1\t70",
        "q1\td2\t72.5",
        "",
        "q1\td1\t85",
        "q2\td1\t0",
        "q2\td2\t100.0",
    )
    judgments = read_judgments(path, "fine")
    assert judgments.format == "tsv"
    assert judgments.scores == {
        ("q1", "d1"): [70.0, 85.0],
        ("q1", "d2"): [72.5],
        ("q2", "d1"): [0.0],
        ("q2", "d2"): [100.0],
    }
    assert judgments.mean() == {
        ("q1", "d1"): 77.5,
        ("q1", "d2"): 72.5,
        ("q2", "d1"): 0.0,
        ("q2", "d2"): 100.0,
    }


def test_qrels_broad_judgments(tmp_path):
    path = write(tmp_path, "qrels.tsv", "q1 0 d1 2", "q1\t0\td2\t1.0", "q2 1 d1 0", "q2 2 d1 1")
    judgments = read_judgments(path, "broad")
    assert judgments.format == "qrels"
    assert judgments.scores == {("q1", "d1"): [2.0], ("q1", "d2"): [1.0], ("q2", "d1"): [0.0, 1.0]}
    assert judgments.mean()[("q2", "d1")] == 0.5


def test_legacy_fine_scale_is_not_rescaled(tmp_path):
    path = write(tmp_path, "judgments.tsv", "q1\td1\t7.5", "q1\td2\t10")
    assert read_judgments(path, "fine").mean() == {("q1", "d1"): 7.5, ("q1", "d2"): 10.0}


def test_judgments_mean_of_constructed_object():
    judgments = Judgments(scores={("q", "d"): [1.0, 2.0, 2.0]}, format="qrels")
    assert judgments.mean() == {("q", "d"): pytest.approx(5 / 3)}


@pytest.mark.parametrize(
    ("scale", "score", "pattern"),
    [
        ("fine", "high", r"score 'high' is not a number \(FINE scores must be between 0 and 100\)"),
        ("fine", "NaN", r"score 'NaN' is not a number"),
        ("fine", "inf", r"score 'inf' is not a number"),
        ("fine", "", r"score '' is not a number"),
        ("fine", "100.5", r"FINE scores must be between 0 and 100, found 100.5$"),
        ("fine", "-1", r"FINE scores must be between 0 and 100, found -1$"),
        ("fine", "1e999", r"FINE scores must be between 0 and 100, found 1e999$"),
        ("broad", "3", r"BROAD scores must be 0, 1 or 2, found 3$"),
        ("broad", "1.5", r"BROAD scores must be 0, 1 or 2, found 1.5$"),
        ("broad", "-1", r"BROAD scores must be 0, 1 or 2, found -1$"),
        ("broad", "nan", r"score 'nan' is not a number \(BROAD scores must be 0, 1 or 2\)"),
    ],
)
def test_bad_tsv_score(tmp_path, scale, score, pattern):
    path = write(tmp_path, "judgments.tsv", "q1\td0\t1", f"q1\td1\t{score}")
    with pytest.raises(InputError, match=pattern) as info:
        read_judgments(path, scale)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, "score")


def test_bad_qrels_score_names_the_rel_field(tmp_path):
    path = write(tmp_path, "qrels", "q1 0 d1 5")
    with pytest.raises(InputError, match="BROAD scores must be 0, 1 or 2, found 5") as info:
        read_judgments(path, "broad")
    assert (info.value.line, info.value.field) == (1, "rel")


def test_ragged_qrels_line(tmp_path):
    path = write(tmp_path, "qrels", "q1 0 d1 1", "q1 0 d2 1 extra")
    with pytest.raises(
        InputError, match=re.escape("expected 4 whitespace-separated fields (qid iter doc rel)")
    ) as info:
        read_judgments(path, "broad")
    assert info.value.line == 2


def test_mixed_formats_in_one_judgments_file(tmp_path):
    path = write(tmp_path, "judgments.tsv", "q1\td1\t50", "q1 0 d2 50")
    with pytest.raises(InputError, match="found 1; this line looks like a TREC qrels line") as info:
        read_judgments(path, "fine")
    assert info.value.line == 2


def test_unrecognised_judgments_format(tmp_path):
    path = write(tmp_path, "judgments.csv", "q1,d1,50")
    with pytest.raises(InputError, match="cannot recognise the format: expected 3 tab") as info:
        read_judgments(path, "fine")
    assert info.value.line == 1


def test_empty_judgments_file(tmp_path):
    path = write(tmp_path, "judgments.tsv", "query\tdoc\tscore")
    with pytest.raises(InputError, match="empty file") as info:
        read_judgments(path, "fine")
    assert (info.value.path, info.value.line) == (str(path), None)


def test_missing_judgments_file(tmp_path):
    with pytest.raises(InputError, match="no such file or directory") as info:
        read_judgments(tmp_path / "nope.tsv", "fine")
    assert info.value.line is None


def test_judgments_path_is_a_directory(tmp_path):
    with pytest.raises(InputError, match="is a directory, expected a file") as info:
        read_judgments(tmp_path, "fine")
    assert (info.value.path, info.value.line) == (str(tmp_path), None)


def test_judgments_not_utf8(tmp_path):
    path = tmp_path / "judgments.tsv"
    path.write_bytes(b"q1\td1\t50\nq1\td2\t\xff\n")
    with pytest.raises(InputError, match="not a UTF-8 text file") as info:
        read_judgments(path, "fine")
    assert info.value.line == 2


def test_unknown_scale_is_a_programming_error(tmp_path):
    path = write(tmp_path, "judgments.tsv", "q1\td1\t50")
    with pytest.raises(ValueError, match="scale must be 'broad' or 'fine'") as info:
        read_judgments(path, "FINE10")
    assert not isinstance(info.value, InputError)


# Metadata


def test_metadata_with_header_and_unknown_values(tmp_path):
    path = write(
        tmp_path,
        "metadata.tsv",
        "doc\tartist\tgenre",
        "# doc d3 has no known artist",
        "d1\ta1\tg1",
        "d2\ta1\t",
        "d3\t\tg2",
    )
    metadata = read_metadata(path)
    assert metadata.artist == {"d1": "a1", "d2": "a1", "d3": None}
    assert metadata.genre == {"d1": "g1", "d2": None, "d3": "g2"}


def test_metadata_duplicate_doc(tmp_path):
    path = write(tmp_path, "metadata.tsv", "d1\ta1\tg1", "d2\ta1\tg1", "d1\ta2\tg1")
    with pytest.raises(InputError, match=r"doc d1 is listed twice \(first at line 1\)") as info:
        read_metadata(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 3, "doc")


def test_metadata_ragged_line(tmp_path):
    path = write(tmp_path, "metadata.tsv", "d1\ta1\tg1", "d2\ta1")
    expected = "expected 3 tab-separated fields (doc artist genre), found 2"
    with pytest.raises(InputError, match=re.escape(expected)) as info:
        read_metadata(path)
    assert info.value.line == 2


def test_metadata_unrecognised_first_line(tmp_path):
    path = write(tmp_path, "metadata.csv", "d1,a1,g1")
    with pytest.raises(InputError, match=r"expected 3 tab-separated fields .*found 1$") as info:
        read_metadata(path)
    assert info.value.line == 1


def test_metadata_empty_doc(tmp_path):
    path = write(tmp_path, "metadata.tsv", "\ta1\tg1")
    with pytest.raises(InputError, match="empty doc id") as info:
        read_metadata(path)
    assert (info.value.line, info.value.field) == (1, "doc")


def test_metadata_empty_file(tmp_path):
    path = write(tmp_path, "metadata.tsv")
    with pytest.raises(InputError, match="empty file"):
        read_metadata(path)


# Coverage of the runs by the judgments


def _judged(*pairs: tuple[str, str]) -> Judgments:
    return Judgments(scores={pair: [1.0] for pair in pairs}, format="tsv")


RUNS = Runs(
    lists={"sysA": {"q1": ["d1", "d2", "d7"]}, "sysB": {"q1": ["d2", "d1"], "q2": ["d1", "d5"]}},
    format="tsv",
)


def test_cover_passes_when_every_top_k_pair_is_judged():
    top_two = _judged(("q1", "d1"), ("q1", "d2"), ("q2", "d1"), ("q2", "d5"))
    check_judgments_cover_runs(RUNS, top_two, k=2, judgments_path="j.tsv")
    top_one = _judged(("q1", "d1"), ("q1", "d2"), ("q2", "d1"))
    check_judgments_cover_runs(RUNS, top_one, k=1, judgments_path="j.tsv")


def test_cover_reports_missing_pairs_in_order():
    judgments = _judged(("q1", "d1"), ("q1", "d2"))
    with pytest.raises(InputError) as info:
        check_judgments_cover_runs(RUNS, judgments, k=5, judgments_path="j.tsv")
    assert str(info.value) == (
        "j.tsv: 3 run pairs have no judgment in the top 5"
        " (first: query q1 doc d7, query q2 doc d1, query q2 doc d5)"
    )
    assert (info.value.path, info.value.line) == ("j.tsv", None)


def test_cover_elides_beyond_the_first_three_and_uses_singular():
    with pytest.raises(InputError, match=r"^j.tsv: 5 run pairs .*query q1 doc d7, \.\.\.\)$"):
        check_judgments_cover_runs(RUNS, _judged(), k=3, judgments_path="j.tsv")
    judgments = _judged(("q1", "d1"), ("q1", "d2"), ("q2", "d1"))
    with pytest.raises(
        InputError, match=r"1 run pair has no judgment .*\(first: query q2 doc d5\)$"
    ):
        check_judgments_cover_runs(RUNS, judgments, k=2, judgments_path="j.tsv")


def test_cover_rejects_non_positive_k():
    with pytest.raises(ValueError, match="k must be at least 1, got 0"):
        check_judgments_cover_runs(RUNS, _judged(), k=0, judgments_path="j.tsv")
