"""The ``lpmech`` parser as the CLI reference pages read it (``.. argparse:: :module: cli_parser``).

It is :func:`lpmech.cli.build_parser` itself, with one change for reStructuredText: help texts
write plain-text maths such as ``|S|``, which reST would read as a substitution, so ``|`` is
escaped. Nothing else is touched, so the pages list exactly what ``--help`` prints.
"""

from __future__ import annotations

import argparse

from lpmech.cli import build_parser as _build_parser


def _escape(text):
    return text.replace("|", r"\|") if isinstance(text, str) else text


def _walk(parser: argparse.ArgumentParser) -> None:
    parser.description = _escape(parser.description)
    parser.epilog = _escape(parser.epilog)
    for action in parser._actions:
        action.help = _escape(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _walk(sub)
            for choice in action._choices_actions:
                choice.help = _escape(choice.help)


def build_parser() -> argparse.ArgumentParser:
    parser = _build_parser()
    _walk(parser)
    return parser
