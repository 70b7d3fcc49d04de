"""The retire trace: every line parses, carries exactly the documented keys, and on a small
program matches values worked out by hand."""

import numpy as np
from sim_harness import BUF_BASE, run

KEYS = ["seq", "core", "block", "warp", "pc", "mask", "exec", "op", "rd", "values", "pd",
        "pvalues", "mem"]

SRC = """
.kernel k
.param out, ptr
    s2r r1, tid
    movi r2, 2
    isetp.lt p1, r1, r2
    ldparam r3, out
    shli r4, r1, 2
    add r3, r3, r4
@p1 stg [r3], r1
    ssy J
@p1 bra T
    movi r6, 7
    sync
T:  movi r6, 9
    sync
J:  movi r0, 5
    isetp.lt pt, r1, r2
    exit
.end
"""
OUT = BUF_BASE


def line(pc, mask, ex, op, rd=None, values=None, pd=None, pvalues=None, mem=None):
    return {"pc": pc, "mask": mask, "exec": ex, "op": op, "rd": rd, "values": values, "pd": pd,
            "pvalues": pvalues, "mem": mem}


def expected_warp0():
    return [
        line(0, 15, 15, "s2r", 1, [0, 1, 2, 3]),
        line(4, 15, 15, "movi", 2, [2, 2, 2, 2]),
        line(8, 15, 15, "isetp.lt", pd=1, pvalues=0b0011),
        line(12, 15, 15, "ldparam", 3, [OUT] * 4),
        line(16, 15, 15, "shli", 4, [0, 4, 8, 12]),
        line(20, 15, 15, "add", 3, [OUT, OUT + 4, OUT + 8, OUT + 12]),
        line(24, 15, 3, "stg", mem=[[OUT, 0], [OUT + 4, 1]]),
        line(28, 15, 15, "ssy"),
        line(32, 15, 3, "bra"),
        line(44, 3, 3, "movi", 6, [9, 9]),
        line(48, 3, 3, "sync"),
        line(36, 12, 12, "movi", 6, [7, 7]),
        line(40, 12, 12, "sync"),
        line(52, 15, 15, "movi"),
        line(56, 15, 15, "isetp.lt"),
        line(60, 15, 15, "exit"),
    ]


def expected_warp1():
    # threads 4 and 5 only: the last warp's other lanes never start
    return [
        line(0, 3, 3, "s2r", 1, [4, 5]),
        line(4, 3, 3, "movi", 2, [2, 2]),
        line(8, 3, 3, "isetp.lt", pd=1, pvalues=0),
        line(12, 3, 3, "ldparam", 3, [OUT] * 2),
        line(16, 3, 3, "shli", 4, [16, 20]),
        line(20, 3, 3, "add", 3, [OUT + 16, OUT + 20]),
        line(24, 3, 0, "stg", mem=[]),
        line(28, 3, 3, "ssy"),
        line(32, 3, 0, "bra"),
        line(36, 3, 3, "movi", 6, [7, 7]),
        line(40, 3, 3, "sync"),
        line(52, 3, 3, "movi"),
        line(56, 3, 3, "isetp.lt"),
        line(60, 3, 3, "exit"),
    ]


def test_trace_by_hand():
    res = run(SRC, warp_size=4, grid=(2, 1, 1), block=(6, 1, 1), num_cores=2, trace=True,
              params=[("out", np.zeros(8, np.uint32))])
    lines = res.trace
    assert [ln["seq"] for ln in lines] == list(range(len(lines)))
    assert all(list(ln) == KEYS for ln in lines)
    assert len(lines) == res.stats.warp_instructions == 2 * (16 + 14)
    for bx in range(2):
        for warp, want in ((0, expected_warp0()), (1, expected_warp1())):
            got = [ln for ln in lines if ln["block"] == [bx, 0, 0] and ln["warp"] == warp]
            assert all(ln["core"] == bx for ln in got)
            assert [{k: ln[k] for k in want[0]} for ln in got] == want


def test_trace_of_atomics_lists_each_lanes_write():
    src = """
.kernel k
.param out, ptr
    s2r r1, laneid
    addi r1, r1, 1
    ldparam r3, out
    movi r4, 4
    isetp.ne p0, r1, r4
@p0 atom.add r5, [r3], r1
    atom.cas r6, [r3], r1, r0
    exit
.end
"""
    res = run(src, warp_size=8, block=(8, 1, 1), trace=True,
              params=[("out", np.array([100], np.uint32))])
    add = next(ln for ln in res.trace if ln["op"] == "atom.add")
    lanes = [1, 2, 3, 5, 6, 7, 8]
    olds = list(np.cumsum([100] + lanes)[:-1])
    assert add["exec"] == 0xF7
    assert add["values"] == olds
    assert add["mem"] == [[OUT, int(o + v)] for o, v in zip(olds, lanes, strict=True)]
    # the cell now holds 100 + 32 = 132: no lane's compare value matches, nothing is written
    cas = next(ln for ln in res.trace if ln["op"] == "atom.cas")
    assert cas["values"] == [132] * 8 and cas["mem"] == []


def test_no_trace_is_the_same_run():
    a = run(SRC, warp_size=4, grid=(2, 1, 1), block=(6, 1, 1), trace=True,
            params=[("out", np.zeros(8, np.uint32))])
    b = run(SRC, warp_size=4, grid=(2, 1, 1), block=(6, 1, 1),
            params=[("out", np.zeros(8, np.uint32))])
    assert np.array_equal(a.out["out"], b.out["out"])
    assert a.stats.per_opcode == b.stats.per_opcode


def test_per_warp_comparison():
    import io

    from simtgpu.sim.trace import first_difference, per_warp, read_trace

    a = run(SRC, warp_size=4, grid=(2, 1, 1), block=(6, 1, 1), trace=True,
            params=[("out", np.zeros(8, np.uint32))]).trace
    # the same lines in another interleaving of warps compare equal
    b = sorted(a, key=lambda ln: (ln["warp"], ln["block"], ln["seq"]))
    assert first_difference(a, b) is None
    assert list(per_warp(a)) == [(0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 0, 0), (1, 0, 0, 1)]
    text = "".join(__import__("json").dumps(ln) + "\n" for ln in a)
    assert read_trace(io.StringIO(text)) == a
    c = [dict(ln) for ln in b]
    c[3]["values"] = [0, 0, 0, 1]
    assert "warp 0 instruction 3 (pc 12): values" in first_difference(a, c)
    assert "retired 16 instructions in the first trace, 15" in first_difference(a, b[:15] + b[16:])
