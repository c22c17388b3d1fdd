"""The `kompakt` command: replay, demo, inspect, compact, eval, batch.

Exit codes: 0 success; 1 runtime failure (or a batch with failed files); 2 usage or
input error; 130 interrupted. Errors are one line on stderr; ``--debug`` shows the
traceback.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Annotated

import typer

from kompakt import __version__
from kompakt.cli.batch import batch_command
from kompakt.cli.compact import compact_command
from kompakt.cli.demo import demo_command
from kompakt.cli.errors import EXIT_USAGE, handled, set_debug
from kompakt.cli.evaluate import eval_command
from kompakt.cli.inspect import inspect_command
from kompakt.cli.printable import printable
from kompakt.cli.replay import replay_command
from kompakt.cli.serve import serve_command

__all__ = ["app", "main"]

# typer vendors click; its exceptions are what a typer app raises
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

app = typer.Typer(
    name="kompakt",
    help=(
        "What would compaction do to your agent's runs? Replay, inspect, compact and "
        "evaluate recorded transcripts, offline.\n\n"
        "Exit codes: 0 ok, 1 runtime failure, 2 usage or input error, 130 interrupted.\n\n"
        "Example: kompakt demo"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kompakt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    set_debug(debug)


app.command("replay")(replay_command)
app.command("demo")(demo_command)
app.command("inspect")(inspect_command)
app.command("compact")(compact_command)
app.command("eval")(eval_command)
app.command("batch")(batch_command)
app.command("serve")(serve_command)


def _run(args: list[str]) -> int:
    # a renamed option or strategy name is the user's to fix: say so (Python hides it)
    warnings.filterwarnings("default", category=DeprecationWarning, module=r"kompakt(\.|$)")
    try:
        code = app(args=args, prog_name="kompakt", standalone_mode=False)
    except NoArgsIsHelpError:
        return 0
    except UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "kompakt"
        message = printable(" ".join(exc.format_message().split()), newlines=False)
        sys.stderr.write(f"kompakt: error: {message} (see: {where} --help)\n")
        return EXIT_USAGE
    except typer.Abort:
        sys.stderr.write("kompakt: aborted\n")
        return 130
    except ClickException as exc:
        message = printable(" ".join(exc.format_message().split()), newlines=False)
        sys.stderr.write(f"kompakt: error: {message}\n")
        return exc.exit_code
    return code if isinstance(code, int) else 0


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line; usage errors are one line too (exit code 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--debug" in args:
        set_debug(True)
    try:
        with handled():  # anything that escaped a command's own handling
            code = _run(args)
    except typer.Exit as exc:
        code = exc.exit_code
    sys.exit(code)
