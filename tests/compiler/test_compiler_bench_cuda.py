"""The GPU timing bench (compiler_backend/bench_cuda.py) without a GPU: the PTX entry
parameters of both compilers, the positional arguments (Triton's appended scratch), the
workloads' NumPy references on small hand-checked inputs, the table from saved figures,
and the messages where Triton or the GPU is missing. The run itself needs an NVIDIA GPU
(its figures are in docs/performance.md)."""

import sys

import numpy as np
import pytest
from simtgpu.cli.bench import main as bench_main
from simtgpu.compiler_backend import bench_cuda as b
from simtgpu.compiler_backend import bench_ptx

TRITON_ENTRY = """.visible .entry add_kernel(
	.param .u64 .ptr .global .align 16 add_kernel_param_0,
	.param .u64 .ptr .global .align 16 add_kernel_param_1,
	.param .u64 .ptr .global .align 16 add_kernel_param_2,
	.param .u32 add_kernel_param_3,
	.param .u64 .ptr .global .align 1 add_kernel_param_4,
	.param .u64 .ptr .global .align 1 add_kernel_param_5
)
.reqntid 128
{"""


def test_entry_parameters_of_both_compilers():
    case = bench_ptx.CASES[0]  # vector_add: three pointers and n
    name, types = b.entry_params(bench_ptx.ours(case))
    assert (name, types) == ("add_kernel", ["u64", "u64", "u64", "u32"])
    name, types = b.entry_params(TRITON_ENTRY)
    assert types == ["u64", "u64", "u64", "u32", "u64", "u64"]
    # the signature's arguments in order, then Triton's global scratch and a null profile
    vals = b._values(case, types, {"n_elements": 7}, {"x_ptr": 10, "y_ptr": 20,
                                                        "output_ptr": 30}, scratch=99)
    assert vals == [10, 20, 30, 7, 99, 0]
    assert b._values(case, ["u64"] * 3 + ["u32"], {"n_elements": 7},
                     {"x_ptr": 1, "y_ptr": 2, "output_ptr": 3}, scratch=0) == [1, 2, 3, 7]


def test_workload_references_on_small_inputs():
    w = b.WORKLOADS["histogram"]
    args = {"x_ptr": np.array([-3, 0, 5, 15, 16, 99, 5], np.int32)}
    assert w.reference(args)["hist_ptr"].tolist() == [2, 0, 0, 0, 0, 2] + [0] * 9 + [3]
    w = b.WORKLOADS["layernorm"]
    x = np.array([[1.0, 3.0], [2.0, 4.0]], np.float32)
    out = w.reference({"X": x, "W": np.float32([1, 1]), "B": np.float32([0, 10]),
                       "eps": 0.0})
    assert out["Mean"].tolist() == [2.0, 3.0]
    assert out["Y"][0].tolist() == [-1.0, 11.0] and out["Rstd"][0] == 1.0
    assert all(c.label in b.WORKLOADS for c in bench_ptx.CASES if c.block is None)


def test_outputs_are_checked_against_the_tolerance():
    w = b.WORKLOADS["vector_add"]
    want = {"output_ptr": np.array([1.0, 2.0])}
    assert b._check_outputs(w, want, {"output_ptr": np.float32([1.0, 2.0])})[0]
    ok, detail = b._check_outputs(w, want, {"output_ptr": np.float32([1.0, 2.1])})
    assert not ok and "1 outside tolerance" in detail


def test_table_from_saved_figures():
    case = bench_ptx.CASES[0]
    fast, slow = b.Timing(50.0, True, ""), b.Timing(100.0, True, "")
    wrong = b.Timing(80.0, False, "max abs error 3, 9 outside tolerance")
    rows = [b.Row(case, b.WORKLOADS[case.label], (fast, slow), (wrong, fast))]
    info = {"gpu": "GPU X", "driver": "CUDA 13.0", "sms": "2", "commit": "abc",
            "date": "today"}
    text = b.render(rows, info, "3.6.0")
    # 12 bytes per element of 2**24 in 80 us: 2,517 GB/s
    assert ("| vector_add | 50.0 | 100.0 | 0.50 | 80.0 (wrong: max abs error 3, 9 outside "
            "tolerance) | 50.0 | 1.60 | 2,517 GB/s |") in text
    assert "(plain): **0.50**" in text and "(aligned): **1.60**" in text
    assert "GPU X (driver CUDA 13.0, 2 SMs)" in text and "Triton 3.6.0" in text


def test_without_triton_or_a_gpu_the_part_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton raises ImportError
    with pytest.raises(bench_ptx.BenchUnavailable, match="needs Triton"):
        b.rows()
    assert bench_main(["--part", "cuda", "--no-write"]) == 1
    monkeypatch.setitem(sys.modules, "triton", type(sys)("triton"))
    monkeypatch.setitem(sys.modules, "cuda", None)  # no cuda-python: no GPU to time on
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    with pytest.raises(bench_ptx.BenchUnavailable, match="needs an NVIDIA GPU"):
        b.rows()
