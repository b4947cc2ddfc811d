"""The ``plybot`` command: a dispatcher over subcommands.

Each package registers its own subcommands as entry points in the group
``plybot.commands`` (see ``pyproject.toml``), each naming a module with a
``main(argv: list[str]) -> int``; the first line of the module's docstring is
its one-line help. So ``engine`` imports nothing of the packages above it, and
``plybot solve`` never pays for importing the web stack.

Exit codes: 0 success, 1 failure, 2 bad input (one line on standard error).
"""

from __future__ import annotations

import importlib
import sys

GROUP = "plybot.commands"

#: The engine's own subcommands (as pyproject.toml declares them): found without reading
#: the installed packages' metadata, which costs more than a whole ``plybot solve`` of a
#: position the book knows (tests/test_solve_cli.py checks the two lists agree).
ENGINE_COMMANDS = {
    "solve": "engine.cli.solve",
    "bench": "engine.bench.cli",
    "analyze": "engine.cli.analyze",
    "play": "engine.cli.play",
}


def _commands() -> dict[str, str]:
    """Subcommand name -> module path, from the installed entry points."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value.split(":")[0] for ep in entry_points(group=GROUP)}


def _summary(module: str) -> str:
    try:
        doc = importlib.import_module(module).__doc__ or ""
    except ImportError as exc:  # an optional part not installed: say so, list the rest
        return f"(unavailable: {exc})"
    return doc.strip().splitlines()[0] if doc.strip() else ""


def usage() -> str:
    commands = _commands()
    lines = ["usage: plybot COMMAND [ARGS ...]", "", "commands:"]
    for name in sorted(commands):
        lines.append(f"  {name:<10} {_summary(commands[name])}")
    lines.append("")
    lines.append("`plybot COMMAND --help` for a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    module = ENGINE_COMMANDS.get(args[0]) or _commands().get(args[0])
    if module is None:
        commands = _commands()
        print(
            f"plybot: '{args[0]}' is not a command (try: {', '.join(sorted(commands))})",
            file=sys.stderr,
        )
        return 2
    run = importlib.import_module(module).main
    try:
        return int(run(args[1:]) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
