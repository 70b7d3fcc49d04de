"""The microgpt example: its hand-written backward pass against finite differences, and its
inference step on the ISS and the RTL against the float32 NumPy reference."""

import shutil
import subprocess
import sys

import numpy as np
import pytest
from simtgpu.assembler.examples import EXAMPLES
from simtgpu.driver_model import Device, DriverError

sys.path.insert(0, str(EXAMPLES / "microgpt"))

import microgpt_model as model  # noqa: E402
import microgpt_runner as runner  # noqa: E402

PROMPT = "maximiliano"


@pytest.fixture(autouse=True)
def _no_current_device():
    yield
    import simtgpu.compiler_backend as triton
    triton.set_device(None)


def _batch(s: model.Shape, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, s.vocab, (3, s.block_size))
    Y = rng.integers(0, s.vocab, (3, s.block_size))
    M = (rng.random((3, s.block_size)) < 0.8).astype(np.float64)
    M[0, 0] = 1.0
    return X, Y, M


@pytest.mark.parametrize("seed", [0, 1])
def test_backward_matches_finite_differences(seed):
    s = model.Shape(n_embd=8, n_head=2, block_size=6)
    # float64 and larger weights than at initialisation, so every path carries gradient
    p = {k: v.astype(np.float64) * 4 for k, v in model.init_params(s, seed).items()}
    X, Y, M = _batch(s, seed)
    _, grads = model.loss_and_grads(p, s, X, Y, M)
    rng = np.random.default_rng(seed + 10)
    h = 1e-6
    for name, w in p.items():
        for _ in range(4):
            i = (X[0, 0], rng.integers(w.shape[1])) if name == "wte" else \
                tuple(int(rng.integers(n)) for n in w.shape)
            old = w[i]
            w[i] = old + h
            up, _ = model.loss_and_grads(p, s, X, Y, M)
            w[i] = old - h
            down, _ = model.loss_and_grads(p, s, X, Y, M)
            w[i] = old
            numeric = (up - down) / (2 * h)
            assert grads[name][i] == pytest.approx(numeric, rel=1e-5, abs=1e-9), (name, i)


def test_rmsnorm_backward_matches_finite_differences():
    rng = np.random.default_rng(3)
    x, dy = rng.standard_normal((2, 5, 7))
    y, r = model._rmsnorm(x)
    dx = model._rmsnorm_back(x, r, dy)
    h = 1e-6
    for j in range(7):
        e = np.zeros_like(x)
        e[:, j] = h
        numeric = ((model._rmsnorm(x + e)[0] - model._rmsnorm(x - e)[0]) * dy).sum(-1) / (2 * h)
        np.testing.assert_allclose(dx[:, j], numeric, rtol=1e-6)


def test_training_lowers_the_loss():
    pytest.importorskip("names")
    _, loss = model.train(steps=60, batch=16, log_every=0)
    assert loss < np.log(model.Shape().vocab)  # below the uniform guess (3.30)


def test_missing_names_package_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "names", None)
    with pytest.raises(model.NamesMissing, match="pip install names"):
        model.load_names()


def _steps(dev: Device, fused: bool, params, s) -> list[np.ndarray]:
    """Feed BOS and the letters of PROMPT (positions 0 to 11, so the attention's second half
    of the context, positions 8 and up, is exercised too); every step's logits and chosen
    token are checked against the reference."""
    gm = runner.GpuModel(dev, params, s, fused)
    ref = model.Reference(params, s)
    feed = [model.BOS] + [model.ALPHABET.index(c) for c in PROMPT]
    gm.set_token(feed[0])
    out = []
    for pos, tok in enumerate(feed):
        logits, chosen = gm.step(pos)
        want = ref.step(tok, pos)
        err = np.abs(logits - want).max() / np.abs(want).max()
        assert err <= 1e-5, f"pos {pos}: relative error {err:.2e}"
        assert chosen == int(np.argmax(want)), f"pos {pos}"
        out.append(logits)
        if pos + 1 < len(feed):
            gm.set_token(feed[pos + 1])
    assert gm.costs.total().launches == len(feed) * (7 if fused else 26)
    return out


@pytest.fixture()
def trained():
    return model.load()


@pytest.mark.parametrize("fused", [False, True], ids=["unfused", "fused"])
def test_tokens_on_iss_match_reference(trained, fused):
    params, s = trained
    dev = Device(backend="iss", config="small")
    try:
        _steps(dev, fused, params, s)
    finally:
        dev.close()


def test_greedy_name_on_iss_matches_reference(trained):
    params, s = trained
    ref = model.Reference(params, s)
    tokens = [model.BOS]
    for pos in range(s.block_size):
        logits = ref.step(tokens[-1], pos)
        tokens.append(model.ALPHABET.index("m") if pos == 0 else int(np.argmax(logits)))
        if tokens[-1] == model.BOS:
            break
    dev = Device(backend="iss", config="small")
    try:
        gen = runner.generate(runner.GpuModel(dev, params, s, True), params, ["m"])
    finally:
        dev.close()
    assert gen.names == [model.decode(tokens)]
    assert gen.disagreements == 0 and gen.max_rel_err <= 1e-5


def test_sampled_names_on_iss_agree(trained):
    """Temperature sampling (Gumbel noise from a seeded generator): unfused and fused pick
    the tokens the reference picks from the same noise, so they give the same names."""
    params, s = trained
    names = []
    for fused in (False, True):
        dev = Device(backend="iss", config="small")
        try:
            gen = runner.generate(runner.GpuModel(dev, params, s, fused), params, [""],
                                  temperature=0.5, seed=1)
        finally:
            dev.close()
        assert gen.disagreements == 0 and gen.max_rel_err <= 1e-5
        names.append(gen.names)
    assert names[0] == names[1] and len(names[0][0]) > 1


@pytest.mark.slow
def test_tokens_on_rtl_match_reference_and_iss_bits(trained):
    """One launch sequence (fused) on the RTL `small`: the logits of every step match the
    reference and are bit for bit the ISS's."""
    params, s = trained
    try:
        rtl = Device(backend="rtl", config="small")
    except DriverError as e:
        pytest.skip(f"rtl backend unavailable ({e})")
    try:
        got = _steps(rtl, True, params, s)
    finally:
        rtl.close()
    iss = Device(backend="iss", config="small")
    try:
        want = _steps(iss, True, params, s)
    finally:
        iss.close()
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g.view(np.uint32), w.view(np.uint32))


def test_tokens_on_cuda_match_reference(trained):
    params, s = trained
    try:
        dev = Device(backend="cuda")
    except DriverError as e:
        pytest.skip(f"cuda backend unavailable ({e})")
    try:
        _steps(dev, True, params, s)
    finally:
        dev.close()


PTXAS = shutil.which("ptxas")


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found (NVIDIA CUDA toolkit)")
def test_every_kernel_compiles_to_ptx_that_ptxas_accepts(trained, monkeypatch, tmp_path):
    """What the cuda backend would run, checked where there is no GPU: every kernel of both
    versions (greedy and sampling), with the types and constants of a real step, compiled
    to PTX for sm_90 and accepted by ptxas."""
    from simtgpu.compiler_backend.compiler import Target, compile_function
    from simtgpu.compiler_backend.jit import JITFunction

    seen = {}
    original = JITFunction.compile

    def record(self, target, arg_types, constexprs, num_warps=4, block=None, *options):
        seen[(self.fn.__name__, repr(constexprs), block)] = (self.fn, arg_types, constexprs,
                                                             num_warps, block)
        return original(self, target, arg_types, constexprs, num_warps, block, *options)

    monkeypatch.setattr(JITFunction, "compile", record)
    params, s = trained
    dev = Device(backend="iss", config="small")
    try:
        for fused in (False, True):
            gm = runner.GpuModel(dev, params, s, fused)
            gm.set_token(model.BOS)
            gm.step(0)
            gm.step(1, 0.5, np.zeros(s.vocab, np.float32))
    finally:
        dev.close()
    assert len({k[0] for k in seen}) == 21  # 15 unfused kernels, 6 fused ones
    for i, (fn, types, cexpr, warps, block) in enumerate(seen.values()):
        text = compile_function(fn, types, cexpr, Target.ptx("sm_90"), warps, block).code
        src = tmp_path / f"k{i}.ptx"
        src.write_text(text)
        r = subprocess.run([PTXAS, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{fn.__name__}: {r.stderr}"
