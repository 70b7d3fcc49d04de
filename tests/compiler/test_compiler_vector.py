"""The blocked layout (``size_per_thread``), argument specialisation and the PTX vector
accesses they allow: results bit-identical with NumPy on the ISS, the vector instructions
present where the arguments allow them and absent where they do not, ptxas accepts."""

import shutil
import subprocess

import numpy as np
import pytest
from compiler_helpers import example
from simtgpu.compiler_backend.compiler import Target, compile_function, parse_type

VEC_ADD_TYPES = {k: parse_type("*fp32") for k in ("x_ptr", "y_ptr", "output_ptr")}
VEC_ADD_TYPES["n_elements"] = parse_type("i32")
ALIGNED = {"x_ptr": "a16", "y_ptr": "a16", "output_ptr": "a16", "n_elements": "d16"}


def _ptx(specialize, block=1024):
    kern = example("vector_add").add_kernel
    return compile_function(kern.fn, VEC_ADD_TYPES, {"BLOCK_SIZE": block}, Target.ptx(), 4,
                            specialize=specialize).code


def _ptxas(tmp_path, code: str) -> None:
    ptxas = shutil.which("ptxas") or ("/usr/local/bin/ptxas"
                                      if shutil.os.path.exists("/usr/local/bin/ptxas") else None)
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    src = tmp_path / "k.ptx"
    src.write_text(code)
    r = subprocess.run([ptxas, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_aligned_vector_add_uses_v4(tmp_path):
    code = _ptx(ALIGNED)
    # 1024 elements on 128 threads: 2 groups of 4 per thread, two inputs and one output
    assert code.count("ld.global.v4.f32") == 4
    assert code.count("st.global.v4.f32") == 2
    assert "ld.global.f32" not in code and "st.global.f32" not in code
    _ptxas(tmp_path, code)


@pytest.mark.parametrize("spec", [
    {},  # nothing known: scalar accesses
    {**ALIGNED, "n_elements": None},  # aligned pointers, but a size that may split a vector
    {**ALIGNED, "x_ptr": None},  # one pointer not known aligned: only its loads stay scalar
])
def test_vectors_only_where_provable(tmp_path, spec):
    spec = {k: v for k, v in spec.items() if v is not None}
    code = _ptx(spec)
    if "n_elements" not in spec:
        assert ".v4" not in code and ".v2" not in code
    else:
        assert code.count("ld.global.v4.f32") == 2 and code.count("st.global.v4.f32") == 2
        assert code.count("ld.global.f32") == 8
    _ptxas(tmp_path, code)


def test_specialisation_is_part_of_the_cache_key(iss_device):
    kern = example("vector_add").add_kernel
    kern.cache.clear()  # (other tests of this process compile it too)
    x = np.arange(64, dtype=np.float32)
    for n in (64, 63, 1):
        out = np.zeros(64, np.float32)
        kern[(1,)](x, x, out, n, BLOCK_SIZE=64)
        assert out.tobytes() == np.where(np.arange(64) < n, x + x, 0).astype(
            np.float32).tobytes()
    specs = sorted(dict(key[6]).get("n_elements", "-") for key in kern.cache)
    assert specs == ["-", "d16", "one"]
    one = next(ck for key, ck in kern.cache.items() if dict(key[6]).get("n_elements") == "one")
    assert "n_elements" not in one.ir_text.split("{", 1)[1]  # the constant 1 instead


@pytest.mark.parametrize("n", [1024, 1000, 13])
def test_blocked_vector_add_on_the_iss(iss_device, n):
    """The PTX target's layout on this ISA, with a ragged tail: the same bits as NumPy."""
    kern = example("vector_add").add_kernel
    rng = np.random.default_rng(n)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.zeros(n, np.float32)
    kern[(-(-n // 256),)](x, y, out, n, BLOCK_SIZE=256, size_per_thread=4)
    assert out.tobytes() == (x + y).tobytes()


def _blocked_sum_model(x: np.ndarray, threads: int, warp: int, vec: int) -> np.float32:
    """tl.sum of a whole 1-D tile in the blocked layout: each thread's slots in slot order,
    an xor butterfly over the lanes (highest distance first), the warps in order."""
    n = x.size
    per = n // threads
    acc = []
    for t in range(threads):
        idx = [(s // vec) * threads * vec + t * vec + s % vec for s in range(per)]
        a = x[idx[0]]
        for i in idx[1:]:
            a = np.float32(a + x[i])
        acc.append(a)
    acc = np.array(acc, np.float32).reshape(threads // warp, warp)
    off = warp // 2
    while off:
        acc = (acc + acc[:, np.arange(warp) ^ off]).astype(np.float32)
        off //= 2
    total = acc[0, 0]
    for w in range(1, threads // warp):
        total = np.float32(total + acc[w, 0])
    return total


def test_blocked_sum_order(iss_device, tmp_path):
    from compiler_helpers import generated_kernel

    kern, _ = generated_kernel(tmp_path, "bsum", (
        "def kern(x_ptr, o_ptr, N: tl.constexpr):\n"
        "    x = tl.load(x_ptr + tl.arange(0, N))\n"
        "    tl.store(o_ptr, tl.sum(x, axis=0))\n"))
    x = np.random.default_rng(3).standard_normal(512).astype(np.float32) * 1e3
    out = np.zeros(1, np.float32)
    lanes = iss_device.config.lanes
    kern[(1,)](x, out, N=512, num_warps=4, size_per_thread=4)
    assert out[0].tobytes() == _blocked_sum_model(x, 4 * lanes, lanes, 4).tobytes()


def test_matmul_dot_is_an_outer_product_with_shared_vectors(tmp_path):
    """64x64x32 fp32 on 128 threads: an 8x4 block per thread; per k step of 4, each of the
    8 A rows is one ld.shared.v4 and each of the 4 k's B columns one (8 * 8 + 32 = 96)."""
    from simtgpu.compiler_backend import bench_ptx

    case = next(c for c in bench_ptx.CASES if c.label.startswith("matmul"))
    code = bench_ptx.ours(case)
    assert code.count("ld.shared.v4.f32") == 96
    assert "ld.shared.f32" not in code
    assert code.count("fma.rn.ftz.f32") == 64 * 64 * 32 // 128
    _ptxas(tmp_path, code)


def test_blocked_dot_2d_block_on_the_iss(iss_device, tmp_path):
    """A 16x16 output on 32 threads in the blocked layout: a 2x4 block per thread (rows 8
    apart); every element the fma chain of its k order, bit for bit."""
    from compiler_helpers import generated_kernel
    from simtgpu.sim.numerics import ffma

    kern, _ = generated_kernel(tmp_path, "bdot", (
        "def kern(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):\n"
        "    rm = tl.arange(0, M)\n"
        "    rn = tl.arange(0, N)\n"
        "    rk = tl.arange(0, K)\n"
        "    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])\n"
        "    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])\n"
        "    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])\n"
        "    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, c))\n"))
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    c0 = rng.standard_normal((16, 16)).astype(np.float32)
    c = c0.copy()
    kern[(1,)](a, b, c, M=16, N=16, K=8, num_warps=4, size_per_thread=4)
    bits = c0.view(np.uint32)
    for k in range(8):  # every element: acc = fma(a[m, k], b[k, n], acc) in k order
        bits = ffma(np.broadcast_to(a[:, k:k + 1], (16, 16)).view(np.uint32),
                    np.broadcast_to(b[k:k + 1, :], (16, 16)).view(np.uint32), bits)
    assert c.tobytes() == bits.astype(np.uint32).tobytes()


def test_do_not_specialize(iss_device, tmp_path):
    import simtgpu.compiler_backend as triton
    from compiler_helpers import generated_kernel

    kern, _ = generated_kernel(tmp_path, "nospec", (
        "def kern(x_ptr, n):\n"
        "    tl.store(x_ptr + tl.arange(0, 8), tl.arange(0, 8) * n)\n"))
    plain = triton.jit(kern.fn, do_not_specialize=["n"])
    by_index = triton.jit(kern.fn, do_not_specialize=[1])
    for k in (plain, by_index):
        for n in (1, 16, 3):
            out = np.zeros(8, np.int32)
            k[(1,)](out, n)
            assert out.tolist() == [i * n for i in range(8)]
        assert {dict(key[6]).get("n") for key in k.cache} == {None}


def test_size_per_thread_is_checked(iss_device):
    from simtgpu.compiler_backend.jit import LaunchError

    kern = example("vector_add").add_kernel
    x = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match="size_per_thread must be 1, 2 or 4, not 3"):
        kern[(1,)](x, x, x, 64, BLOCK_SIZE=64, size_per_thread=3)
