"""microgpt's inference step on a simtgpu ``Device``: the weights and the KV cache in device
memory, one step as a sequence of kernel launches (unfused or fused), and a record of what
every launch cost.

The host's part per token is to write the position (a launch parameter), optionally a
prompt letter or the sampling noise into device memory, and to read back the chosen token
(to stop at the end of a name) and the logits (to compare them with the NumPy reference).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import microgpt_kernels as K
import numpy as np
import simtgpu.compiler_backend as triton
from microgpt_model import ALPHABET, BOS, EPS, Reference, Shape, decode
from simtgpu.driver_model import Device

STAGES = ("embed+norm", "norm+qkv", "attention", "wo+residual", "norm+mlp", "head+sample")
"""The steps of one token, in order; every launch (fused or not) belongs to one, which is how
the report and the chart compare the two versions."""


@dataclass
class OpCost:
    """What the launches of one op (or one stage, or a whole run) cost, summed."""

    stage: str
    launches: int = 0
    instructions: int = 0
    thread_instructions: int = 0
    cycles: int = 0
    wall_s: float = 0.0
    kernel_s: float = 0.0  # cuda: the kernels alone (wall_s adds the launches' copies)

    def absorb(self, other: OpCost) -> None:
        self.launches += other.launches
        self.instructions += other.instructions
        self.thread_instructions += other.thread_instructions
        self.cycles += other.cycles
        self.wall_s += other.wall_s
        self.kernel_s += other.kernel_s


@dataclass
class Costs:
    """Costs of a run per (stage, op), and the number of tokens it computed."""

    ops: dict[tuple[str, str], OpCost] = field(default_factory=dict)
    tokens: int = 0

    def add(self, stage: str, op: str, res) -> None:
        """Count one launch's ``LaunchResult``."""
        self.ops.setdefault((stage, op), OpCost(stage)).absorb(
            OpCost(stage, 1, res.instructions, res.thread_instructions, res.cycles, res.wall_s,
                   getattr(res, "kernel_s", 0.0)))  # only a PTX launch times its kernel

    def by_op(self) -> dict[str, OpCost]:
        """Per op name, in first-launch order (an op such as RMSNorm serves several stages)."""
        out: dict[str, OpCost] = {}
        for (stage, op), c in self.ops.items():
            out.setdefault(op, OpCost(stage)).absorb(c)
        return out

    def by_stage(self) -> dict[str, OpCost]:
        out = {s: OpCost(s) for s in STAGES}
        for c in self.ops.values():
            out[c.stage].absorb(c)
        return out

    def total(self) -> OpCost:
        t = OpCost("total")
        for c in self.ops.values():
            t.absorb(c)
        return t


def _block(n: int, k: int, threads: int) -> int:
    """Rows per program of a matrix-vector product with n rows and k columns on blocks of
    ``threads`` threads: one per thread, fewer when there are fewer rows (the threads left
    over then share the columns: microgpt_kernels._matvec); a product that would be one
    program is cut in two, for a second core, where the columns allow (8 or more a thread)."""
    bn = min(triton.next_power_of_2(n), threads)
    if n <= bn and bn > 8 and k // (threads // (bn // 2)) >= 8:
        bn //= 2
    return bn


class GpuModel:
    """The model's buffers on ``dev`` and one inference step as launches.

    ``fused`` picks the kernel set (see microgpt_kernels.py). ``costs`` accumulates every
    launch."""

    def __init__(self, dev: Device, params: dict[str, np.ndarray], s: Shape, fused: bool):
        self.dev, self.s, self.fused = dev, s, fused
        # the DSL's default block: 4 warps, or what the configuration holds (`small`: 32)
        self.threads = min(4 * dev.config.lanes, dev.config.max_threads_per_block)
        if fused and dev.config.lanes < s.block_size // 2:
            raise ValueError(f"the fused attention needs warps of at least "
                             f"{s.block_size // 2} lanes (configuration {dev.config.name} has "
                             f"{dev.config.lanes}); run it unfused")
        e, t, vp = s.n_embd, s.block_size, triton.next_power_of_2(s.vocab)
        put = lambda a: dev.to_device(np.ascontiguousarray(a, np.float32))  # noqa: E731
        self.w = {k: put(v if k in ("wte", "wpe") else self._transposed(v))
                  for k, v in params.items()}
        self.wqkv = put(np.concatenate([params[m].T for m in ("wq", "wk", "wv")]))
        self.state = dev.zeros(e + 2 * e * t, np.float32)   # q | K cache | V cache
        # No kernel updates a buffer in place: a tile smaller than the block is held by
        # several threads, and one of them could read a word another has already rewritten.
        vec = lambda n: dev.zeros(n, np.float32)  # noqa: E731
        self.x = [vec(e), vec(e)]          # the residual stream, ping-pong
        self.xn, self.tmp, self.attn = vec(e), vec(e), vec(e)
        self.hidden, self.hidden_relu = vec(s.n_hidden), vec(s.n_hidden)
        self.scores = [vec(s.n_head * t), vec(s.n_head * t)]
        self.rows = vec(s.n_head)  # per-row max, sum, or the mean square
        # vocabulary-long vectors padded to a power of two, the length the kernels use
        self.z = [vec(vp), vec(vp)]  # scaled logits, plus noise (unfused sampling)
        self.logits, self.noise = vec(vp), vec(vp)
        self.token = dev.zeros(1, np.int32)
        self.costs = Costs()

    def _block(self, n: int, k: int) -> int:
        return _block(n, k, self.threads)

    def _splits(self, bn: int, k: int) -> int:
        """How many groups of bn threads share the k columns of a product (KS of
        microgpt_kernels._matvec): the threads left over, at most one group per 8 columns."""
        ks = max(1, min(self.threads // bn, k // 8))
        return 1 << (ks.bit_length() - 1)

    def _transposed(self, w: np.ndarray) -> np.ndarray:
        """W (out x in) as the kernels read it: transposed, (in x out), with zero columns up
        to a multiple of the rows per program (see microgpt_kernels._matvec)."""
        n = w.shape[0]
        return np.pad(w.T, ((0, 0), (0, -n % self._block(n, w.shape[1]))))

    def set_token(self, token: int) -> None:
        self.token.copy_from_host(np.array([token], np.int32))

    def step(self, pos: int, temperature: float = 0.0, noise: np.ndarray | None = None
             ) -> tuple[np.ndarray, int]:
        """Run one token (the one in device memory) at ``pos``; returns (logits, next token).
        With ``temperature`` > 0 the next token is argmax(logits / temperature + noise)."""
        if temperature > 0:
            padded = np.zeros(self.noise.size, np.float32)
            padded[:self.s.vocab] = noise
            self.noise.copy_from_host(padded)
        triton.set_device(self.dev)  # the launches go to this model's device
        (self._fused if self.fused else self._unfused)(pos, temperature)
        self.costs.tokens += 1
        return self.logits.to_host()[:self.s.vocab], int(self.token.to_host()[0])

    def _launch(self, stage: str, op: str, kernel, grid, *args) -> None:
        self.costs.add(stage, op, kernel[grid](*args))

    # -- one op per launch ---------------------------------------------------------------
    def _rmsnorm(self, stage: str, x, y) -> None:
        e = self.s.n_embd
        self._launch(stage, "rmsnorm.mean_square", K.mean_square_kernel, (1,), x, self.rows,
                     e)
        self._launch(stage, "rmsnorm.scale", K.rsqrt_scale_kernel, (1,), x, self.rows, y, EPS,
                     e)

    def _linear(self, stage: str, op: str, x, w, y, n: int, k: int, y_off: int = 0,
                y_stride: int = 1) -> None:
        bn = self._block(n, k)
        self._launch(stage, op, K.linear_kernel, (triton.cdiv(n, bn),), x, w, y, y_off,
                     y_stride, n, n + -n % bn, k, bn, self._splits(bn, k))

    def _unfused(self, pos: int, temperature: float) -> None:
        s, w, L = self.s, self.w, self._launch
        e, t, h, d = s.n_embd, s.block_size, s.n_head, s.head_dim
        ht, vp = h * t, triton.next_power_of_2(s.vocab)
        x0, x1 = self.x
        sa, sb = self.scores
        L("embed+norm", "embed", K.embed_kernel, (1,), self.token, w["wte"], w["wpe"],
          self.tmp, pos, e)
        self._rmsnorm("embed+norm", self.tmp, x0)
        self._rmsnorm("norm+qkv", x0, self.xn)
        self._linear("norm+qkv", "linear.wq", self.xn, w["wq"], self.state, e, e)
        for i, name in enumerate(("wk", "wv")):   # column pos of the K and V caches
            self._linear("norm+qkv", f"linear.{name}", self.xn, w[name], self.state, e, e,
                         e + i * e * t + pos, t)
        a = "attention"
        L(a, "attn.scores", K.scores_kernel, (h,), self.state, sa, e, d, t)
        L(a, "attn.scale", K.scale_kernel, (1,), sa, sb, float(np.float32(1 / np.sqrt(d))),
          ht)
        L(a, "attn.mask", K.causal_mask_kernel, (1,), sb, sa, pos, ht, t)
        L(a, "softmax.max", K.row_max_kernel, (h,), sa, self.rows, t)
        L(a, "softmax.exp", K.sub_exp_kernel, (h,), sa, self.rows, sb, t)
        L(a, "softmax.sum", K.row_sum_kernel, (h,), sb, self.rows, t)
        L(a, "softmax.div", K.row_div_kernel, (h,), sb, self.rows, sa, t)
        L(a, "attn.weighted_sum", K.weighted_sum_kernel, (h,), sa, self.state, self.attn,
          e, d, t)
        self._linear("wo+residual", "linear.wo", self.attn, w["wo"], self.tmp, e, e)
        L("wo+residual", "add", K.add_kernel, (1,), x0, self.tmp, x1, e)
        self._rmsnorm("norm+mlp", x1, self.xn)
        self._linear("norm+mlp", "linear.fc1", self.xn, w["fc1"], self.hidden, s.n_hidden, e)
        L("norm+mlp", "relu", K.relu_kernel, (1,), self.hidden, self.hidden_relu,
          s.n_hidden)
        self._linear("norm+mlp", "linear.fc2", self.hidden_relu, w["fc2"], self.tmp, e,
                     s.n_hidden)
        L("norm+mlp", "add", K.add_kernel, (1,), x1, self.tmp, x0, e)
        self._linear("head+sample", "linear.lm_head", x0, w["lm_head"], self.logits, s.vocab, e)
        scores = self.logits
        if temperature > 0:
            za, zb = self.z
            L("head+sample", "sample.scale", K.scale_kernel, (1,), self.logits, za,
              1.0 / temperature, vp)
            L("head+sample", "sample.add_noise", K.add_kernel, (1,), za, self.noise, zb, vp)
            scores = zb
        L("head+sample", "argmax", K.argmax_kernel, (1,), scores, self.token, s.vocab, vp)

    # -- fused ---------------------------------------------------------------------------
    def _fused(self, pos: int, temperature: float) -> None:
        s, w, L = self.s, self.w, self._launch
        e, t, h, d = s.n_embd, s.block_size, s.n_head, s.head_dim
        vp = triton.next_power_of_2(s.vocab)
        x0, x1 = self.x
        L("embed+norm", "embed_norm", K.embed_norm_kernel, (1,), self.token, w["wte"],
          w["wpe"], x0, pos, EPS, e)
        bn = self._block(3 * e, e)
        L("norm+qkv", "norm_qkv", K.norm_qkv_kernel, (triton.cdiv(3 * e, bn),), x0,
          self.wqkv, self.state, pos, EPS, e, t, bn, self._splits(bn, e))
        g = t // 2
        # heads per block: two blocks (one per core) where a block holds that many threads
        hb = max(1, min(h // 2, self.dev.config.max_threads_per_block // g))
        self.costs.add("attention", "attention", K.attention_kernel[(triton.cdiv(h, hb),)](
            self.state, self.attn, pos, float(np.float32(1 / np.sqrt(d))), e, d, t, g,
            block=(hb * g,)))
        bn = self._block(e, e)
        L("wo+residual", "linear_residual.wo", K.linear_residual_kernel,
          (triton.cdiv(e, bn),), self.attn, w["wo"], x0, x1, e, e, bn, self._splits(bn, e))
        bn = self._block(s.n_hidden, e)
        L("norm+mlp", "norm_linear_relu.fc1", K.norm_linear_relu_kernel,
          (triton.cdiv(s.n_hidden, bn),), x1, w["fc1"], self.hidden, EPS, s.n_hidden, e, bn,
          self._splits(bn, e))
        bn = self._block(e, s.n_hidden)
        L("norm+mlp", "linear_residual.fc2", K.linear_residual_kernel,
          (triton.cdiv(e, bn),), self.hidden, w["fc2"], x1, x0, e, s.n_hidden, bn,
          self._splits(bn, s.n_hidden))
        L("head+sample", "head_sample", K.head_sample_kernel, (1,), x0, w["lm_head"],
          self.logits, self.noise, self.token, 1.0 / temperature if temperature > 0 else 1.0,
          s.vocab, e, vp, self._splits(vp, e), temperature <= 0)

@dataclass
class Generation:
    """Names generated on the device, checked step by step against the NumPy reference."""

    names: list[str]
    logits: list[np.ndarray]
    max_rel_err: float
    """max over tokens of max|device - reference| / max|reference| of the logits."""
    disagreements: int
    """steps where the reference would have chosen another token than the device."""


def generate(gm: GpuModel, params: dict[str, np.ndarray], prompts: list[str],
             temperature: float = 0.0, seed: int = 0, max_tokens: int | None = None
             ) -> Generation:
    """One name per prompt (a prompt is forced, then the model continues; '' starts from
    BOS alone), greedy or sampled at ``temperature`` with Gumbel noise from a NumPy generator
    seeded with ``seed``; a name stops at BOS, at the context's end or after ``max_tokens``.
    The reference runs on the device's own tokens, so every step's logits compare like with
    like."""
    s = gm.s
    rng = np.random.default_rng(seed)
    names, all_logits, worst, disagree = [], [], 0.0, 0
    for prompt in prompts:
        ref = Reference(params, s)
        forced = [ALPHABET.index(c) for c in prompt]
        tokens = [BOS]
        gm.set_token(BOS)
        for pos in range(min(s.block_size, max_tokens or s.block_size)):
            noise = (rng.gumbel(size=s.vocab).astype(np.float32) if temperature > 0 else None)
            logits, tok = gm.step(pos, temperature, noise)
            want = ref.step(tokens[-1], pos)
            all_logits.append(logits)
            worst = max(worst, float(np.abs(logits - want).max() / np.abs(want).max()))
            z = want if noise is None else want * np.float32(1 / temperature) + noise
            disagree += int(np.argmax(z)) != tok and pos >= len(forced)
            if pos < len(forced):
                tok = forced[pos]
                gm.set_token(tok)
            tokens.append(tok)
            if tok == BOS:
                break
        names.append(decode(tokens))
    return Generation(names, all_logits, worst, disagree)
