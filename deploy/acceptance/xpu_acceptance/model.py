"""A small decoder-only transformer (pre-norm, causal attention, KV cache) and its token stream.

Used by convergence (tiny, fixed), performance (sized to load the device) and stability.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x, cache=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        causal = t > 1
        a = F.scaled_dot_product_attention(q, k, v, is_causal=causal and k.shape[2] == t)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Decoder(nn.Module):
    def __init__(self, vocab=64, dim=32, layers=2, heads=2, max_len=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, caches=None, offset=0):
        pos = torch.arange(offset, offset + tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos(pos)
        for i, blk in enumerate(self.blocks):
            x = blk(x, None if caches is None else caches[i])
        return self.head(self.norm(x))


def build(seed, **dims):
    """A model initialised on the CPU from SEED (the same weights on every device)."""
    g = torch.manual_seed(seed)
    del g
    return Decoder(**dims)


def token_stream(seed, vocab, batch, seq, steps):
    """STEPS batches of a seeded, learnable synthetic stream: a noisy affine recurrence.

    Each sequence starts at a random token; the next is (5 * prev + 3) mod vocab with
    probability 0.9, else random: next-token loss can fall from ln(vocab) towards ~0.5.
    """
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        x = torch.empty(batch, seq + 1, dtype=torch.long)
        x[:, 0] = torch.randint(0, vocab, (batch,), generator=g)
        noise = torch.rand(batch, seq, generator=g) < 0.1
        rand = torch.randint(0, vocab, (batch, seq), generator=g)
        for t in range(seq):
            nxt = (5 * x[:, t] + 3) % vocab
            x[:, t + 1] = torch.where(noise[:, t], rand[:, t], nxt)
        out.append(x)
    return out


def loss_of(model, batch):
    logits = model(batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1))


def ln_vocab(vocab):
    return math.log(vocab)
