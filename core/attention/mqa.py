"""`mqa`: multi-query attention (Shazeer 2019): per-head W_Q, one W_K and W_V shared by all heads."""

from .gqa import GQA


class MQA(GQA):
    takes_kv_heads = False

    @classmethod
    def default_kv_heads(cls, n_heads):
        return 1
