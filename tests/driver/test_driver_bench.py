"""cli/bench.py: sections of docs/performance.md and a tiny measured run."""

from __future__ import annotations

from simtgpu.cli import bench


def test_write_section_replaces_only_its_block(tmp_path):
    doc = tmp_path / "perf.md"
    bench.write_section("iss-throughput", "## ISS\n\nold", doc)
    bench.write_section("rtl-throughput", "## RTL\n\nrtl figures", doc, owner="rtl bench")
    before = doc.read_text()
    assert before.startswith("# Performance")
    bench.write_section("iss-throughput", "## ISS\n\nnew", doc)
    after = doc.read_text()
    assert bench.read_section("iss-throughput", doc) == "## ISS\n\nnew"
    assert bench.read_section("rtl-throughput", doc) == "## RTL\n\nrtl figures"
    assert after.replace("new", "old") == before  # nothing else moved
    bench.write_section("iss-throughput", "## ISS\n\nnew", doc)
    assert doc.read_text() == after  # idempotent
    assert bench.read_section("compiler", doc) is None
    assert "<!-- BEGIN SECTION rtl-throughput: written by rtl bench -->" in after


def test_small_bench_run_writes_a_checked_section(tmp_path, capsys):
    doc = tmp_path / "perf.md"
    rc = bench.main(["--only", "vector_add", "--warp", "8", "--runs", "2", "--scale", "0.01",
                     "--part", "iss", "--output", str(doc)])
    assert rc == 0
    body = bench.read_section("iss-throughput", doc)
    assert body is not None
    row = [x for x in body.splitlines() if x.startswith("| vector_add | 8 |")]
    assert len(row) == 1
    assert "`python -m simtgpu.cli.bench --only vector_add --warp 8 --runs 2 --scale 0.01`" \
        in row[0]
    assert "nproc" in body and "median of 2 runs" in body
    png = tmp_path / "perf-iss-throughput.png"  # the table drawn, beside the page, linked
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert body.endswith("![iss-throughput](perf-iss-throughput.png)")


def test_compiler_part_writes_the_quality_table(tmp_path, capsys):
    doc = tmp_path / "perf.md"
    assert bench.main(["--part", "compiler", "--output", str(doc)]) == 0
    body = bench.read_section("compiler-quality", doc)
    rows = [r for r in body.splitlines() if r.startswith("| ") and r[2:8] != "kernel"
            and not r.startswith("| ---")]
    assert {r.split("|")[1].strip() for r in rows} >= {"vector_add", "saxpy", "matmul"}
    for r in rows:  # hand-written and compiled counts are real, and their ratio is theirs
        hand, compiled, ratio = (r.split("|")[i].strip().replace(",", "") for i in (3, 4, 5))
        assert int(hand) > 0 and abs(int(compiled) / int(hand) - float(ratio)) < 0.01
    assert (tmp_path / "perf-compiler-quality.png").read_bytes()[:4] == b"\x89PNG"


def test_no_write_prints_every_part_and_writes_nothing(tmp_path, capsys):
    doc = tmp_path / "perf.md"
    doc.write_text("# Performance\n")
    assert bench.main(["--part", "compiler", "--no-write", "--output", str(doc)]) == 0
    assert doc.read_text() == "# Performance\n"
    assert not list(tmp_path.glob("*.png"))
    assert "| vector_add |" in capsys.readouterr().out


def test_default_output_is_a_copy_in_build_not_the_tracked_page(tmp_path, monkeypatch):
    tracked = tmp_path / "docs" / "performance.md"
    tracked.parent.mkdir()
    tracked.write_text("# Performance\n\nkept\n")
    monkeypatch.setattr(bench, "PERF_DOC", tracked)
    monkeypatch.setattr(bench, "BENCH_OUT", tmp_path / "build" / "performance.md")
    assert bench.main(["--part", "compiler"]) == 0
    assert tracked.read_text() == "# Performance\n\nkept\n"
    copy = (tmp_path / "build" / "performance.md").read_text()
    assert copy.startswith("# Performance\n\nkept\n") and "compiler-quality" in copy


def test_rtl_bench_cache_builds_are_labelled_by_what_is_on():
    """bench_rtl --caches: each named build turns on exactly the caches its name says (the
    labels of its table come from the configuration, not from the name asked for)."""
    from simtgpu.arch.config import get_config
    from simtgpu.verification.bench_rtl import CACHE_BUILDS, _caches_label

    base = get_config("small")
    for name, (l1, l2) in CACHE_BUILDS.items():
        cfg = base.with_l1(l1).with_l2(l2)
        assert (cfg.l1_cache is not None, cfg.l2_cache is not None) == (l1, l2)
        assert _caches_label(cfg) == name
