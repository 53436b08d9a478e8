"""The learned ranking's weights (written by ``bench/fit_flat_ltr.py``; do not edit by hand).

Each model scores a candidate by log(fused / best fused) plus its weights over the
features of :mod:`treeseek.search.flat.learned`; ``LEARNED_MODEL`` ranks in lexical
mode, ``HYBRID_MODEL`` when the vector signal took part (the trace's ``ranked_by``).
How each was chosen: its ``*_NOTE``.
"""

from treeseek.search.flat.learned import FEATURES, LinearModel

LEARNED_NOTE = (
    "Score: log(fused / best fused) + {'files.norm': 0.3, 'chunks.norm': 0.2, "
    "'paths.norm': 0.1, 'best.rr': 0.0, 'title.norm': 0.1, 'graph.ppr': 0.3} (the "
    "features of :mod:`treeseek.search.flat.learned`): the grid point chosen on dev.npz, "
    "mdev.npz, then graph.ppr=0,0.1,0.2,0.3,0.4, symbols.norm=0,0.1,0.2 (dumps of the "
    "SWE-bench dev split /work/runs/dev-173.jsonl, 173 instances, and of "
    "bench/data/multilingual-dev.jsonl, 105, with --set symbols=true --set graph=true)."
)
LEARNED_MODEL = LinearModel(
    features=FEATURES,
    mean=tuple(0.0 for _ in FEATURES),
    scale=tuple(1.0 for _ in FEATURES),
    weights=(
        0.0,  # files.rr
        0.0,  # files.rrf
        0.3,  # files.norm
        0.0,  # title.rr
        0.0,  # title.rrf
        0.1,  # title.norm
        0.0,  # chunks.rr
        0.0,  # chunks.rrf
        0.2,  # chunks.norm
        0.0,  # paths.rr
        0.0,  # paths.rrf
        0.1,  # paths.norm
        0.0,  # symbols.rr
        0.0,  # symbols.rrf
        0.0,  # symbols.norm
        0.0,  # mentions.log
        0.0,  # mention.path
        0.0,  # mention.frame
        0.0,  # mention.module
        0.0,  # mention.symbol
        0.0,  # mention.qname
        0.0,  # fused.norm
        0.0,  # fused.rr
        0.0,  # fused.log_rr
        0.0,  # test
        0.0,  # non_code
        0.0,  # vendored
        0.0,  # aux_dir
        0.0,  # primary
        0.0,  # length.log
        0.0,  # dir.top
        0.0,  # dir.mention
        0.0,  # stem.named
        0.0,  # parent.named
        0.0,  # agree.top3
        0.0,  # agree.top10
        0.0,  # best.rr
        1.0,  # fused.log
        0.0,  # graph.link
        0.3,  # graph.ppr
        0.0,  # files.cover
        0.0,  # terms.cover
        0.0,  # chunk.cover
        0.0,  # symbols.defined
        0.0,  # test.pair
        0.0,  # vectors.rr
        0.0,  # vectors.rrf
        0.0,  # vectors.norm
        0.0,  # vectors.gap
    ),
    name="lexical",
)

#: no hybrid model earned its place: hybrid mode ranks with the lexical model
HYBRID_NOTE = LEARNED_NOTE
HYBRID_MODEL = LEARNED_MODEL
