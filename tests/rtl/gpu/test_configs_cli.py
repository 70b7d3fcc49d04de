"""RtlConfig on top of the driver's configurations, parameter validation, and `simtgpu rtl`."""

from __future__ import annotations

import re

import pytest
from simtgpu.arch.config import CONFIGS
from simtgpu.cli.main import main
from simtgpu.rtl.configs import RtlConfigError, get_rtl_config


def test_named_configs_follow_the_driver() -> None:
    sizes = {name: (get_rtl_config(name).cores, get_rtl_config(name).warps,
                    get_rtl_config(name).lanes) for name in ("tiny", "small", "full")}
    assert sizes == {name: (CONFIGS[name].cores, CONFIGS[name].warps_per_core,
                            CONFIGS[name].lanes) for name in ("tiny", "small", "full")}
    for name, gpu in CONFIGS.items():
        cfg = get_rtl_config(name)
        assert cfg.gpu is gpu
        assert cfg.line_words == gpu.lanes  # a coalesced warp access is one line
        assert cfg.imem_words == gpu.imem_bytes // 4
        assert cfg.sim_memory_bytes == gpu.memory_bytes
        assert cfg.ext_tag_bits == cfg.tag_bits + (cfg.cores).bit_length()


def test_variants_and_validation() -> None:
    cfg = get_rtl_config("tiny").with_(lanes=16, mem_latency=3)
    assert (cfg.lanes, cfg.line_words, cfg.mem_latency) == (16, 16, 3)
    assert get_rtl_config("small", line_words=4).line_words == 4
    with pytest.raises(RtlConfigError, match="line_words must be a power of two from 1 to 32, "
                       "not 3"):
        get_rtl_config("tiny", line_words=3)
    with pytest.raises(RtlConfigError, match="sim_memory_bytes"):
        get_rtl_config("tiny", sim_memory_bytes=3000)
    with pytest.raises(RtlConfigError, match="unknown configuration 'huge'"):
        get_rtl_config("huge")


def test_rtl_command_writes_verilog(tmp_path, capsys) -> None:
    out = tmp_path / "sub" / "gpu-tiny.v"
    assert main(["rtl", "--config", "tiny", "-o", str(out)]) == 0
    text = out.read_text()
    # the core is written once (rtlsim/module_reuse.py) and instantiated as core0
    assert "module gpu(" in text and "module Core_u0(" in text
    assert re.search(r"^\s*Core_u0 core0 \(", text, re.M)
    assert "wrote" in capsys.readouterr().out


def test_rtl_command_reports_unwritable_path(tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["rtl", "--config", "tiny", "-o", str(blocker / "gpu.v")]) == 1
    err = capsys.readouterr().err
    # refused before the Verilog is generated (minutes for a large configuration)
    assert f"cannot write: {blocker} is a file, not a folder" in err and "Traceback" not in err


def test_lsu_depth_follows_the_l1() -> None:
    """The LSU holds as many transactions as the L1 below it (8 with none), keeps an
    explicit depth across variants, and refuses depths it cannot build."""
    from simtgpu.arch.config import ConfigError, L1Config, L2Config

    small = CONFIGS["small"]
    assert get_rtl_config(small.with_l1(True)).lsu_depth == small.with_l1(True).l1.rob_depth
    assert get_rtl_config(small.with_l1(False)).lsu_depth == 8
    assert get_rtl_config(small.with_l1(L1Config(4096, 4, 8, 16))).lsu_depth == 16
    deep = get_rtl_config(small.with_l1(False), lsu_depth=32)
    assert deep.with_(mem_latency=9).lsu_depth == 32
    assert deep.for_build().lsu_depth == 32
    with pytest.raises(RtlConfigError, match="lsu_depth must be a power of two from 2 to 64, "
                                             "not 48"):
        get_rtl_config("small", lsu_depth=48)
    L1Config(4096, mshrs=64)
    L2Config(32768, mshrs=64)
    with pytest.raises(ConfigError, match="mshrs must be from 1 to 64, not 65"):
        L1Config(4096, mshrs=65)
    with pytest.raises(ConfigError, match="mshrs must be from 1 to 64, not 0"):
        L2Config(32768, mshrs=0)


def test_a_cache_way_must_be_smaller_than_the_memory() -> None:
    """The caches take addresses modulo memory_bytes (their tags hold the bits below it), so
    a way as large as the memory is refused with the configuration's name, not deep in the
    RTL; one half as large is a cache of one tag bit and builds."""
    from dataclasses import replace

    from simtgpu.arch.config import ConfigError, L1Config, L2Config
    from simtgpu.rtl.l1_cache import L1Cache

    tiny = CONFIGS["tiny"]  # 16-byte lines
    with pytest.raises(ConfigError, match=r"configuration 'tiny'.*each way of the L2 \(65536 "
                                          r"bytes\) must be smaller than memory_bytes \(0x10000\)"):
        replace(tiny, memory_bytes=64 * 1024, l2=L2Config(128 * 1024, 2, 2, 4, 16))
    with pytest.raises(ConfigError, match=r"each way of the L1 \(32768 bytes\) must be "
                                          r"smaller than memory_bytes \(0x8000\)$"):
        replace(tiny, memory_bytes=32 * 1024, l1=L1Config(32 * 1024, 1, 4, 16))
    ok = replace(tiny, memory_bytes=64 * 1024, l2=L2Config(64 * 1024, 2, 2, 4, 16))
    assert L1Cache(line_words=4, size_bytes=ok.l2.size_bytes // 2, ways=2,
                   addr_bits=16 - 1).line_tag_bits == 1  # a bank: one bank bit fewer
