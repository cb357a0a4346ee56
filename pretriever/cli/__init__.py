"""The ``pretriever`` command line: one sub-command per pipeline stage.

It is the composition root: importing :mod:`pretriever.refine.retriever` here registers the ``refined`` index
kind with :class:`pretriever.index.IndexFolder` (the index layer cannot import the refine layer above it), so
every command opens a refined index whether or not the package's entry points are installed.
"""

from __future__ import annotations

import inspect
import os

import typer
from typer.core import TyperGroup

from pretriever import __version__
from pretriever.cli.common import help_text
from pretriever.cli.corpus import corpus_app
from pretriever.cli.evaluate import evaluate_command
from pretriever.cli.generate import generate_command
from pretriever.cli.index import index_app, search_command
from pretriever.cli.mine import mine_command, pairs_app
from pretriever.cli.pretrain import pretrain_command
from pretriever.cli.quickstart import quickstart
from pretriever.cli.reader import answer_command, reader_app
from pretriever.cli.refine import refine_app
from pretriever.cli.references import references_app
from pretriever.cli.serve import serve_command
from pretriever.cli.train import finetune_command, train_command
from pretriever.cli.tune import tune_command
from pretriever.refine import retriever as _refined_kind  # noqa: F401 - registers the "refined" index kind

# `pretriever --help` lists the commands in the order a user runs them
PIPELINE_ORDER = ("quickstart", "corpus", "references", "generate", "mine", "pairs", "pretrain", "train", "index",
                  "search", "tune", "finetune", "refine", "evaluate", "reader", "answer", "serve")


class PipelineOrder(TyperGroup):
    """The root command group, listing its commands in :data:`PIPELINE_ORDER` (the order a user runs them)."""

    def list_commands(self, ctx) -> list[str]:
        rank = {name: i for i, name in enumerate(PIPELINE_ORDER)}
        return sorted(super().list_commands(ctx), key=lambda name: rank.get(name, len(rank)))


app = typer.Typer(
    cls=PipelineOrder,
    name="pretriever",
    help=(
        "Turn the structure text collections already have (hyperlinks, citations, document "
        "context, generated queries) into training signal for dense retrievers.\n\n"
        "The commands below are listed in the order you run them: corpus -> mine (references first for "
        "C-MORE's qac triplets, generate first for query-as-context) -> pretrain and/or train -> index -> "
        "search, tune, refine, evaluate -> reader and answer -> serve. Each stage reads and writes plain Parquet/JSON "
        "files (and BEIR, DPR, SQuAD, Tevatron), so each can be run, inspected and resumed alone; "
        "`pretriever COMMAND --help` gives each one's options and examples that run as written.\n\n"
        "Start here:  pretriever quickstart   (the whole pipeline on a small real Wikipedia dump, offline)\n\n"
        "Then, on your own data:  pretriever corpus build DUMP --out corpus/   (DUMP: a Wikipedia pages-articles "
        "dump, multistream or not, a BEIR folder, JSONL or DPR TSV: see `pretriever corpus formats`)"
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
app.command("quickstart")(quickstart)
app.add_typer(corpus_app, name="corpus")
app.add_typer(references_app, name="references")
app.command("mine")(mine_command)
app.add_typer(pairs_app, name="pairs")
app.command("generate")(generate_command)
app.command("pretrain")(pretrain_command)
app.command("train")(train_command)
app.command("finetune")(finetune_command)
app.add_typer(index_app, name="index")
app.command("search")(search_command)
app.command("tune")(tune_command)
app.command("evaluate")(evaluate_command)
app.add_typer(refine_app, name="refine")
app.add_typer(reader_app, name="reader")
app.command("answer")(answer_command)
app.command("serve")(serve_command)


def _rejoin_help(typer_app: typer.Typer) -> None:
    """Every command's help from its docstring through :func:`help_text` (docstrings are wrapped for an
    editor; typer's rich mode would keep those line breaks)."""
    for info in typer_app.registered_commands:
        if info.help is None and info.callback is not None:
            info.help = help_text(inspect.getdoc(info.callback) or "")
    for group in typer_app.registered_groups:
        _rejoin_help(group.typer_instance)


_rejoin_help(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pretriever {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                        help="Print the version and exit.")) -> None:
    """pretriever: pre-training data for dense retrievers from hyperlinks and citations."""
    # The command line decides the process environment (the library never sets it): models come from local
    # paths or packages, never a hub, unless HF_HUB_OFFLINE=0 is set. Before any command imports the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    """The ``pretriever`` console script."""
    app()
