"""Every DSL kernel compiles to PTX that NVIDIA's ptxas accepts (sm_90 and sm_80), using the
.ftz forms that make add/mul/fma agree bit for bit with this GPU."""

import re
import shutil
import subprocess

import pytest
from compiler_helpers import example
from simtgpu.compiler_backend import ir
from simtgpu.compiler_backend.compiler import Target, compile_function

PTXAS = shutil.which("ptxas") or ("/usr/local/bin/ptxas"
                                  if shutil.os.path.exists("/usr/local/bin/ptxas") else None)
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not found (NVIDIA CUDA toolkit)")


def ptxas_errors(tmp_path, text: str, arch: str = "sm_90") -> str:
    """Assemble ``text`` with ptxas; its error output ("" when it accepts the PTX)."""
    src = tmp_path / "k.ptx"
    src.write_text(text)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True, timeout=120)
    return "" if r.returncode == 0 else r.stderr or f"ptxas exit status {r.returncode}"

F = ir.ptr("f32")
IP = ir.ptr("i32")
I = ir.I32  # noqa: E741
F32 = ir.F32

KERNELS = [
    ("vector_add", "add_kernel", dict(x_ptr=F, y_ptr=F, output_ptr=F, n_elements=I),
     dict(BLOCK_SIZE=1024), None),
    ("saxpy", "saxpy_kernel", dict(x_ptr=F, y_ptr=F, a=F32, n=I), dict(BLOCK=256), None),
    ("softmax", "softmax_kernel", dict(output_ptr=F, input_ptr=F, input_row_stride=I,
                                       output_row_stride=I, n_rows=I, n_cols=I),
     dict(BLOCK_SIZE=256, num_stages=2), None),
    ("rmsnorm", "rmsnorm_kernel", dict(x_ptr=F, w_ptr=F, y_ptr=F, stride=I, N=I, eps=F32),
     dict(BLOCK=256), None),
    ("layernorm", "_layer_norm_fwd_fused", dict(X=F, Y=F, W=F, B=F, Mean=F, Rstd=F, stride=I,
                                                 N=I, eps=F32), dict(BLOCK_SIZE=256), None),
    ("sum_reduction", "sum_kernel", dict(x_ptr=F, partial_ptr=F, total_ptr=F, n=I),
     dict(BLOCK=512), None),
    ("histogram", "histogram_kernel", dict(x_ptr=IP, hist_ptr=IP, n=I),
     dict(BINS=16, BLOCK=256), None),
    ("transpose", "transpose_kernel", dict(src=F, dst=F, rows=I, cols=I),
     dict(TILE=32, BLOCK_ROWS=8), (32, 8, 1)),
    ("matmul", "matmul_kernel", dict(a_ptr=F, b_ptr=F, c_ptr=F, M=I, N=I, K=I, stride_am=I,
                                     stride_ak=I, stride_bk=I, stride_bn=I, stride_cm=I,
                                     stride_cn=I),
     dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, GROUP_SIZE_M=4), None),
    ("compaction", "compact_kernel", dict(x_ptr=F, out_ptr=F, count_ptr=IP, last_ptr=F,
                                          n_cols=I, threshold=F32, cap=I),
     dict(BLOCK=32), None),
]


def ptx_of(module, kernel, types, cexpr, block, arch="sm_90"):
    k = getattr(example(module), kernel)
    return compile_function(k.fn, types, cexpr, Target.ptx(arch), 4, block).code


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("module, kernel, types, cexpr, block", KERNELS,
                         ids=[k[0] for k in KERNELS])
def test_ptxas_accepts(tmp_path, module, kernel, types, cexpr, block, arch):
    text = ptx_of(module, kernel, types, cexpr, block, arch)
    assert text.splitlines()[3:6] == [".version 8.0", f".target {arch}", ".address_size 64"]
    src = tmp_path / f"{kernel}.ptx"
    src.write_text(text)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("module, kernel, types, cexpr, block", KERNELS,
                         ids=[k[0] for k in KERNELS])
def test_fp32_arithmetic_uses_ftz_forms(module, kernel, types, cexpr, block):
    text = ptx_of(module, kernel, types, cexpr, block)
    for line in text.splitlines():
        m = re.search(r"\b(add|sub|mul|fma|min|max|setp\.\w+)\.(?:rn\.)?(\w+\.)?f32\b", line)
        if m and "atom." not in line:
            assert ".ftz." in line, line
    plain = [ln for ln in text.splitlines() if "atom." not in ln]
    assert not any("fma.rn.f32" in ln or "add.f32 " in ln for ln in plain)


def test_same_ir_order_for_both_targets():
    """Elementwise kernels lower to the same op sequence for ISA and PTX at equal layouts."""
    k = example("saxpy").saxpy_kernel
    types = dict(x_ptr=F, y_ptr=F, a=F32, n=I)
    a = compile_function(k.fn, types, {"BLOCK": 128}, Target("isa", 32), 4)
    b = compile_function(k.fn, types, {"BLOCK": 128}, Target.ptx(), 4)
    assert a.ir_text == b.ir_text


def _feature_kernels():
    import test_compiler_features as f

    P, IP = ir.ptr("f32"), ir.ptr("i32")
    return [
        (f.k_divergent, dict(x_ptr=P, y_ptr=P, n=I), {}, (128, 1, 1)),
        (f.k_warp, dict(x_ptr=P, out_ptr=P, cnt_ptr=IP), {}, (64, 1, 1)),
        (f.k_rows, dict(x_ptr=P, s_ptr=P, m_ptr=P, a_ptr=IP, c_ptr=IP), dict(M=8, N=16),
         None),
        (f.k_intmath, dict(x_ptr=IP, y_ptr=IP, d=I, n=I), dict(BLOCK=256), None),
        (f.k_dot_loop, dict(a_ptr=P, b_ptr=P, c_ptr=P, K=I), dict(BM=16, BK=16, BN=16),
         None),
        (f.k_outer, dict(a_ptr=P, b_ptr=P, o_ptr=P), dict(M=16, N=32), None),
        (f.k_nested, dict(x_ptr=P, out_ptr=P, n=I, m=I), dict(BLOCK=128), None),
    ]


@needs_ptxas
def test_ptxas_accepts_feature_kernels(tmp_path):
    for k, types, cexpr, block in _feature_kernels():
        text = compile_function(k.fn, types, cexpr, Target.ptx(), 4, block).code
        src = tmp_path / f"{k.__name__}.ptx"
        src.write_text(text)
        r = subprocess.run([PTXAS, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (k.__name__, r.stderr)
