"""The ``structbench`` command line: a small argparse program with one subcommand per task.

Add a subcommand by writing ``_add_<name>(subparsers)`` that registers its parser with
``set_defaults(run=...)`` and listing it in ``COMMANDS``; ``run(args)`` returns the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence

from structbench import arguments, defaults
from structbench.overlap import OverlapError, parse_overlap


def _visible(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError(f"must be visible text such as ' > ', got {value!r}")
    return value


def _whole_number(name: str, minimum: int, unit: str = "tokens") -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``, refused in the words of the Python API
    (:func:`structbench.arguments.whole_number`)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number of {unit}, got {value!r}") from None
        try:
            return arguments.whole_number(name, number, minimum, unit)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _output_file(name: str) -> Callable[[str], str]:
    """An argparse type: a file path this process can write (:func:`structbench.arguments.writable_file`), so a
    folder or an unwritable place is refused as the command starts, not after its work."""

    def parse(value: str) -> str:
        try:
            arguments.writable_file(name, value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return value

    return parse


def _overlap(value: str) -> int | float:
    """An argparse type: an overlap as the workflow reads ``fixed_overlap:<o>`` (:func:`structbench.overlap.
    parse_overlap`), tokens (``50``) or a share of the window below 1 (``0.5``), returned as the number."""
    try:
        declared = parse_overlap(value, "--overlap")
    except OverlapError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if declared is None:
        return 0
    return declared.tokens if declared.tokens is not None else declared.share


def _add_chunk(subparsers) -> None:
    parser = subparsers.add_parser(
        "chunk",
        help="chunk a Markdown file at its headings, with heading-path prefixes",
        description="Chunk FILE.md the way the study recommends (cut at headings, prefix the real heading "
        "path) and print the chunks.",
    )
    parser.add_argument("file", metavar="FILE.md", help="a UTF-8 Markdown file, or - for standard input")
    parser.add_argument(
        "--depth",
        type=_whole_number("--depth", 0, unit="levels"),
        default=defaults.PRACTITIONER_DEPTH,
        help="heading-path depth of the prefix, 0 for none (default %(default)s)",
    )
    parser.add_argument(
        "--t-max",
        type=_whole_number("--t-max", 1),
        default=defaults.T_MAX,
        help="split sections above this many content tokens, as the workflow's chunking.t_max (default %(default)s)",
    )
    parser.add_argument(
        "--t-min",
        type=_whole_number("--t-min", 0),
        default=defaults.T_MIN,
        help="merge chunks below this many content tokens, as the workflow's chunking.t_min (default %(default)s)",
    )
    parser.add_argument(
        "--overlap",
        type=_overlap,
        default=0,
        metavar="O",
        help="overlapping windows, as the workflow's boundaries fixed_overlap:O: size-matched to the heading "
        "chunks, consecutive ones sharing O tokens (50) or a share of the window (0.5); default 0, none",
    )
    parser.add_argument("--title", help="title when the file names none (default: from the file name)")
    parser.add_argument(
        "--tokenizer",
        default=defaults.TOKENIZER,
        help="tokenizer.json path, directory, package or Hub id (default %(default)s)",
    )
    parser.add_argument(
        "--separator", type=_visible, default=defaults.SEPARATOR, help="path separator (default '%(default)s')"
    )
    parser.add_argument(
        "--induce",
        choices=["segmentation", "learned"],
        help="ignore the file's headings and induce its sections without an LLM: segmentation (TextTiling over "
        "the packaged MiniLM's embeddings, keyphrase titles) or learned (the shipped model, trained on research "
        "papers and software documentation, or the --model trained by train-inducer on documents with headings; "
        "its titles, keyphrase or recurring ones); for heading-less text such as PDF or "
        "transcript exports",
    )
    parser.add_argument(
        "--model",
        metavar="FILE",
        help="your own learned inducer's model file (structbench train-inducer) for --induce learned "
        "(default: the shipped model, docs/inducer.md)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per chunk (JSON lines)")
    parser.set_defaults(run=_run_chunk)


def _run_chunk(args: argparse.Namespace) -> int:
    from structbench.api import DemotedHeadingWarning, chunk_markdown, chunk_markdown_file

    options = {
        "depth": args.depth,
        "t_max": args.t_max,
        "t_min": args.t_min,
        "tokenizer": args.tokenizer,
        "separator": args.separator,
        "induce": args.induce,
        "overlap": args.overlap or None,
        "model": args.model,
    }
    if args.title:
        options["title"] = args.title
    with warnings.catch_warnings():  # said once below, as a line of this command's stderr
        warnings.simplefilter("ignore", DemotedHeadingWarning)
        if args.file == "-":  # standard input: untitled unless --title or the text names one
            chunks = chunk_markdown(_read_stdin(), name="<stdin>", **options)
        else:
            chunks = chunk_markdown_file(args.file, **options)
    for warning in chunks.warnings:
        print(f"structbench chunk: warning: {warning}", file=sys.stderr)
    out = sys.stdout
    if args.json:
        for index, chunk in enumerate(chunks):
            out.write(json.dumps({"index": index, **chunk.as_dict()}, ensure_ascii=False) + "\n")
        return 0
    out.write(f"{args.file}: {chunks.title!r}, {len(chunks.flat_text)} characters of body text, {len(chunks)} chunks\n")
    for index, chunk in enumerate(chunks):
        preview = " ".join(chunk.content.split())
        preview = preview if len(preview) <= 160 else preview[:157] + "..."
        out.write(
            f"\n#{index}  [{chunk.start}, {chunk.end})  {chunk.n_tokens} tokens + {chunk.prefix_tokens} prefix"
            f"  {' > '.join(chunk.path)}\n"
        )
        if chunk.prefix:
            out.write(f"    prefix: {chunk.prefix.strip()}\n")
        out.write(f"    {preview}\n")
    return 0


def _read_stdin() -> str:
    """Standard input as UTF-8 text, whatever the locale: its bytes, decoded strictly, so a byte that is not UTF-8
    is named with its offset (the locale's decoder would pass it on as a surrogate that fails far from here)."""
    from structbench.corpus.markdown import decode_utf8

    return decode_utf8(
        sys.stdin.buffer.read(), "standard input", "re-encode it as UTF-8 (iconv -f <its encoding> -t utf-8)"
    )


def _add_train_inducer(subparsers) -> None:
    parser = subparsers.add_parser(
        "train-inducer",
        help="train a learned structure inducer on a folder of Markdown files with headings",
        description="Train the learned inducer (docs/method.md §5) on the *.md files under FOLDER whose headings "
        "give at least --min-sections sections, write the model to --out and print its training summary; chunk "
        "heading-less documents with it: structbench chunk FILE.md --induce learned --model OUT.",
    )
    parser.add_argument("folder", metavar="FOLDER", help="a folder of UTF-8 Markdown files (searched recursively)")
    parser.add_argument(
        "--out",
        required=True,
        type=_output_file("--out"),
        metavar="FILE",
        help="where to write the model file (checked before training: not a folder, in a folder that can be written)",
    )
    parser.add_argument(
        "--min-sections",
        type=_whole_number("--min-sections", 2, unit="sections"),
        default=2,
        help="a document trains the model when its headings give at least this many sections (default %(default)s)",
    )
    parser.add_argument(
        "--max-docs",
        type=_whole_number("--max-docs", 1, unit="documents"),
        default=None,
        help="train on the first this many such documents (default: all)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the learner's seed (default %(default)s)")
    parser.set_defaults(run=_run_train_inducer)


def _run_train_inducer(args: argparse.Namespace) -> int:
    from structbench.api import train_inducer

    model = train_inducer(args.folder, min_sections=args.min_sections, max_docs=args.max_docs, seed=args.seed)
    model.save(args.out)
    summary = {"model": args.out, "fingerprint": model.fingerprint, "training": model.training}
    sys.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return 0


def _add_check_config(subparsers) -> None:
    parser = subparsers.add_parser(
        "check-config",
        help="run the workflow's start-up checks on a config, naming FILE:LINE of each problem",
        description="Layer the workflow's config/config.yaml, each config FILE and the --configfile and --config "
        "of a Snakemake command line given after --snakemake-args, as Snakemake does; run every check the "
        "workflow runs before any job (the schema, the cross-key, per-condition and library checks) and print "
        "FILE:LINE: problem for each (a key filled from the schema's defaults: its key path). Exit 1 if any; "
        "the workflow's warnings are printed and do not fail.",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="a YAML config file, layered like --configfile")
    parser.add_argument(
        "--probe",
        action="store_true",
        help="also send the workflow's one request to every endpoint the run uses (its onstart probe)",
    )
    parser.add_argument(
        "--snakemake-args",
        nargs=argparse.REMAINDER,
        default=[],
        metavar="ARGS",
        help="a Snakemake command line (everything after this option): its --configfile and --config are layered",
    )
    parser.set_defaults(run=_run_check_config)


def _run_check_config(args: argparse.Namespace) -> int:
    from structbench.checkconfig import check_command_line

    check = check_command_line(args.files, args.snakemake_args, probe=args.probe)
    for line in check.probed:
        print(f"endpoint probe: {line}", file=sys.stderr)
    for warning in check.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for problem in check.problems:
        print(problem, file=sys.stderr)
    return 1 if check.problems else 0


def _add_export(subparsers) -> None:
    from structbench.report.trec import RANK_SCORES, SCORE_KINDS

    parser = subparsers.add_parser(
        "export",
        help="write a finished run's rankings and chunk relevance as TREC run and qrels files",
        description="Write each scored condition's run as a TREC run file (qid Q0 docno rank score tag; docno is the "
        "chunk_id, tag condition/embedder/reranker) and its chunk set's relevance as a TREC qrels file (qid 0 docno "
        "rel, the study's binary rule), for trec_eval, ranx, ir_measures and PyTerrier: OUT/<corpus>/<condition>.qrels "
        "and OUT/<corpus>/<embedder>/<reranker>/<condition>.run. Run it where the workflow ran (its snakemake -d "
        "folder), with the run's --configfile files: it first asks Snakemake (a dry run) whether the files it reads "
        "are what that config makes now, and refuses, naming each job Snakemake would rerun and why, if not.",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="the folder the TREC files are written to, as a whole: it must not exist or be empty (see --overwrite)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a folder OUT that has files in it as a whole: the new export is written beside it and swapped "
        "in at once, so OUT holds the old export or the new one, never a mix",
    )
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="export the files as they are, without asking Snakemake whether this config made them (for results "
        "copied without the run's .snakemake folder)",
    )
    _add_run_arguments(parser)
    for option, holds in (("corpus", "corpora"), ("embedder", "embedders"), ("reranker", "rerankers")):
        parser.add_argument(f"--{option}", nargs="+", metavar="NAME", help=f"only these {holds} (default all)")
    parser.add_argument("--condition", nargs="+", metavar="NAME", help="only these conditions (default all)")
    parser.add_argument(
        "--scores",
        choices=SCORE_KINDS,
        default=RANK_SCORES,
        help="rank: depth + 1 - rank (default); retrieval: the retriever's scores, each tie stepped one 32-bit float "
        "below the line above, in a run whose scores never rise down a ranking (else rank scores: a two-stage or "
        "reranked run). Either way the scores strictly descend, so every tool reads structbench's order",
    )
    parser.set_defaults(run=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from structbench.export import export_finished_run

    # a config that cannot run is a ValueError (ConfigError) naming the key, a folder with files in it a
    # FileExistsError, a run this config did not make a ValueError (StaleRun): main() reports each
    written = export_finished_run(
        args.out,
        args.configfile,
        args.workflow,
        args.results,
        check=args.check,
        overwrite=args.overwrite,
        corpora=args.corpus,
        embedders=args.embedder,
        rerankers=args.reranker,
        conditions=args.condition,
        scores=args.scores,
    )
    for note in written.recovered:
        print(f"an earlier export killed part-way: {note}", file=sys.stderr)
    for exported in written.runs:
        print(f"{exported.run}  (qrels {exported.qrels}; {exported.scores} scores)")
        if exported.scores != args.scores:
            print(
                f"{exported.run}: {exported.scores} scores, its {args.scores} scores rise down a ranking",
                file=sys.stderr,
            )
    for condition, reason in written.skipped.items():
        print(f"left out {condition}: {reason}", file=sys.stderr)
    return 0


def _add_show(subparsers) -> None:
    parser = subparsers.add_parser(
        "show",
        help="show one question of a finished run: its ranking under a condition, or two side by side",
        description="Print question QID of a finished run ranked under CONDITION (and --against another condition, "
        "side by side): its text, type and evidence, the rank of the first evidence chunk (relevant under the binary "
        "rule), and each of the top chunks with its prefix (heading path, placebo path or context) apart from its "
        "content and whether and how much of it is evidence. Run it where the workflow ran, with the run's "
        "--configfile files, as export.",
    )
    parser.add_argument("qid", metavar="QID", help="the question's qid (the queries table's)")
    parser.add_argument("condition", metavar="CONDITION", help="a condition of the run")
    parser.add_argument("--against", metavar="CONDITION", help="a second condition, shown beside the first")
    for option, holds in (("corpus", "corpora"), ("embedder", "embedders"), ("reranker", "rerankers")):
        parser.add_argument(f"--{option}", metavar="NAME", help=f"which of the run's {holds} (default: its only one)")
    parser.add_argument(
        "--top-k",
        type=_whole_number("--top-k", 1, unit="chunks"),
        default=defaults.NDCG_K,
        help="chunks shown per ranking (default %(default)s)",
    )
    parser.add_argument(
        "--chars",
        type=_whole_number("--chars", 1, unit="characters"),
        default=defaults.CONTENT_EXCERPT_CHARS,
        help="characters of each chunk's content shown (default %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the view as one JSON object")
    _add_run_arguments(parser)
    parser.set_defaults(run=_run_show)


def _add_run_arguments(parser) -> None:
    """The options that find a finished run, as export takes them."""
    parser.add_argument(
        "--configfile",
        nargs="+",
        default=[],
        metavar="FILE",
        help="the run's config files, laid over config/config.yaml as Snakemake lays them",
    )
    parser.add_argument(
        "--results",
        metavar="DIR",
        help="the run's results folder, for a run made with --config results=DIR (default: the config's results)",
    )
    parser.add_argument(
        "--workflow",
        default=".",
        metavar="DIR",
        help="the structbench checkout the run used (its Snakefile, config/config.yaml and schema; default the "
        "current folder)",
    )


def _run_show(args: argparse.Namespace) -> int:
    from structbench.show import render_view, show_question

    # a name the run does not hold is a NotInRun (a ValueError) listing those it holds: main() reports it
    view = show_question(
        args.qid,
        args.condition,
        against=args.against,
        corpus=args.corpus,
        embedder=args.embedder,
        reranker=args.reranker,
        configfiles=args.configfile,
        workflow=args.workflow,
        results=args.results,
        top_k=args.top_k,
        content_chars=args.chars,
    )
    if args.json:
        sys.stdout.write(json.dumps(view.as_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_view(view))
    return 0


COMMANDS: list[Callable] = [_add_chunk, _add_train_inducer, _add_check_config, _add_export, _add_show]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="structbench", description="Does document structure help dense retrieval?")
    from structbench import __version__

    parser.add_argument("--version", action="version", version=f"structbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:
        # The reader went away (`structbench chunk doc.md | head`): stop quietly, as Unix tools do, and keep
        # Python from reporting the failed flush of stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except (ValueError, OSError) as error:
        print(f"structbench {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
