"""The suite's transformer models built from Hugging Face `transformers` configs with random weights
(nothing is downloaded: each config is written out here). bench/export_models.py exports them under the
project venv's python (PyPI torch and `transformers`; Debian's python has no `transformers`), with torch's
TorchScript exporter (`dynamo=False`), so the graphs are built the way the Debian-torch models are and have
the same dynamic batch dim.

Every input has the batch at dim 0 and every other dim fixed, so `ferry bench --batch B` alone sizes them.
Integer inputs are token ids: ferry's random integers (0..9) are valid ids. No attention-mask input: a
random mask would not be a mask (and 0/1 masks change nothing in the timed work).

This module imports without torch (the harness reads ENTRIES from it); builders import torch lazily.
"""
import os

SEED = 20241202
TRACE_BATCH = 2
EXPORTER = "venv"
OPSET = 17  # LayerNormalization as one op, as current exports have it; SDPA's decomposition needs >= 14
SEQ = 128          # BERT / GPT-2 prompt length
GPT2_PAST = 128    # GPT-2 decode step: tokens already in the KV cache
WHISPER_PAST = 32  # Whisper decode step: tokens already decoded
WHISPER_TINY = dict(d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                    decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80,
                    vocab_size=51865, max_source_positions=1500, max_target_positions=448)


def _kv(prefix, layers, heads, length, dim):
    return [{"name": "%s.%d.%s" % (prefix, i, kv), "shape": ["batch", heads, length, dim], "dtype": "float32"}
            for i in range(layers) for kv in ("key", "value")]


def _ids(length):
    return {"name": "input_ids", "shape": ["batch", length], "dtype": "int64"}


ENTRIES = [
    {"name": "bert_base", "family": "transformers", "exporter": EXPORTER, "inputs": [_ids(SEQ)],
     "what": "BertModel(BertConfig()): BERT-base, 12 layers, hidden 768, seq %d, token ids in" % SEQ},
    {"name": "gpt2", "family": "transformers", "exporter": EXPORTER, "inputs": [_ids(SEQ)],
     "what": "GPT2LMHeadModel(GPT2Config()): GPT-2 small, prompt of %d tokens, no KV cache, logits out" % SEQ},
    {"name": "gpt2_past", "family": "transformers", "exporter": EXPORTER,
     "inputs": [_ids(1)] + _kv("past", 12, 12, GPT2_PAST, 64),
     "what": "GPT-2 small decode step: 1 new token after %d cached, logits + present KV out" % GPT2_PAST},
    {"name": "vit_hf", "family": "transformers", "exporter": EXPORTER,
     "inputs": [{"name": "pixel_values", "shape": ["batch", 3, 224, 224], "dtype": "float32"}],
     "what": "ViTForImageClassification(ViTConfig(num_labels=1000)): ViT-B/16 at 224"},
    {"name": "whisper_tiny_encoder", "family": "transformers", "exporter": EXPORTER,
     "inputs": [{"name": "input_features", "shape": ["batch", 80, 3000], "dtype": "float32"}],
     "what": "WhisperEncoder, tiny-sized config (4 layers, d 384, 6 heads): 30 s of 80-bin log-mel in"},
    {"name": "whisper_tiny_decoder_step", "family": "transformers", "exporter": EXPORTER,
     "inputs": [_ids(1)] + _kv("past", 4, 6, WHISPER_PAST, 64) + _kv("cross", 4, 6, 1500, 64),
     "what": "Whisper-tiny decoder + LM head, one step: 1 token after %d, self- and cross-attention KV "
             "in (as a decoder-with-past export takes them), logits + present self KV out" % WHISPER_PAST},
]
MODELS = {e["name"]: e for e in ENTRIES}

torch = transformers = None


def _import():
    global torch, transformers
    if torch is None:
        import torch as _t
        import transformers as _tr
        torch, transformers = _t, _tr
        _tr.logging.set_verbosity_error()


def _example(entry, gen):
    """Example inputs at TRACE_BATCH, from the entry's input specs."""
    out = []
    for i in entry["inputs"]:
        shape = [TRACE_BATCH if d == "batch" else d for d in i["shape"]]
        if i["dtype"] == "int64":
            out.append(torch.randint(0, 10, shape, generator=gen))
        else:
            out.append(torch.randn(*shape, generator=gen))
    return tuple(out)


def _flat_cache(cache):
    flat = []
    for layer in cache.layers:
        flat += [layer.keys, layer.values]
    return flat


def _wrappers():
    nn = torch.nn
    DynamicCache, EncoderDecoderCache = transformers.DynamicCache, transformers.EncoderDecoderCache

    class Encoder(nn.Module):
        """last_hidden_state of an encoder (BERT, Whisper's) or logits of a classifier (ViT)."""
        def __init__(self, m, key):
            super().__init__()
            self.m, self.key = m, key

        def forward(self, x):
            return getattr(self.m(x), self.key)

    class Prompt(nn.Module):
        """GPT-2 on a whole prompt without a cache. The all-ones mask is made inside: without any mask
        transformers looks for packed sequences with torch.diff, which the TorchScript exporter lacks."""
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits

    class Step(nn.Module):
        """One decode step: the KV cache in as flat tensors (past.N.key/value), logits and the grown
        cache out (present.N.key/value); Whisper's cross-attention KV in as cross.N.key/value."""
        def __init__(self, m, layers, cross):
            super().__init__()
            self.m, self.layers, self.cross = m, layers, cross

        def forward(self, ids, *kv):
            n = 2 * self.layers
            past = DynamicCache(ddp_cache_data=[(kv[2 * i], kv[2 * i + 1]) for i in range(self.layers)])
            if not self.cross:
                out = self.m(input_ids=ids, cache=past, use_cache=True)
                return (out.logits, *_flat_cache(out.cache))
            cross = DynamicCache(ddp_cache_data=[(kv[n + 2 * i], kv[n + 2 * i + 1]) for i in range(self.layers)])
            cache = EncoderDecoderCache(past, cross)
            # The cross-attention reads its KV from the cache; encoder_hidden_states only has to exist.
            enc = torch.zeros(ids.shape[0], 1, self.m.config.d_model)
            out = self.m.model.decoder(input_ids=ids, encoder_hidden_states=enc, cache=cache, use_cache=True)
            logits = self.m.proj_out(out.last_hidden_state)
            return (logits, *_flat_cache(out.cache.self_attention_cache))

    return Encoder, Prompt, Step


def _kv_names(prefix, layers):
    return ["%s.%d.%s" % (prefix, i, kv) for i in range(layers) for kv in ("key", "value")]


def _module(name):
    """The wrapped model and its output names."""
    tr = transformers
    Encoder, Prompt, Step = _wrappers()
    if name == "bert_base":
        return Encoder(tr.BertModel(tr.BertConfig(), add_pooling_layer=False), "last_hidden_state"), ["output"]
    if name == "gpt2":
        return Prompt(tr.GPT2LMHeadModel(tr.GPT2Config())), ["logits"]
    if name == "gpt2_past":
        return Step(tr.GPT2LMHeadModel(tr.GPT2Config()), 12, False), ["logits"] + _kv_names("present", 12)
    if name == "vit_hf":
        return Encoder(tr.ViTForImageClassification(tr.ViTConfig(num_labels=1000)), "logits"), ["logits"]
    cfg = tr.WhisperConfig(**WHISPER_TINY)
    if name == "whisper_tiny_encoder":
        return Encoder(tr.WhisperModel(cfg).encoder, "last_hidden_state"), ["output"]
    if name == "whisper_tiny_decoder_step":
        return Step(tr.WhisperForConditionalGeneration(cfg), 4, True), ["logits"] + _kv_names("present", 4)
    raise KeyError("unknown model %r" % name)


def build(name, gen):
    """The Spec (see suite_models.py) of one model of ENTRIES."""
    _import()
    entry = MODELS[name]
    torch.manual_seed(SEED)  # transformers initializes from the global generator
    model, outputs = _module(name)
    from torch_export_common import randomize_layernorm
    randomize_layernorm(model, gen)
    model.eval()
    impl = getattr(getattr(model, "m", None), "config", None)
    what = "%s; transformers %s, attention %s, random weights (seed %d)" % (
        entry["what"], transformers.__version__, getattr(impl, "_attn_implementation", "?"), SEED)
    return {"model": model, "args": _example(entry, gen), "family": entry["family"], "inputs": [i["name"] for i in entry["inputs"]],
            "outputs": outputs, "opset": OPSET, "grad": False, "preserve": False, "what": what}


def entries():
    return [dict(e) for e in ENTRIES]


def source_files():
    return [os.path.abspath(__file__)]
