"""`corral master`'s --weights, --quotas, --priority-classes and --disruption-budgets, read and
checked: a bad one stops the master at once as a usage error (exit 2, one line naming the
problem)."""

from __future__ import annotations

import argparse
from typing import Any

from corral.cli.errors import CliError
from corral.frameworks.sdk.json_input import parse_json
from corral.priority import PriorityClass, classes_from_json
from corral.roles import Quota, RoleError, parse_weights, quotas_from_json


def roles_from_args(args: argparse.Namespace) -> tuple[dict[str, float], dict[str, Quota]]:
    """The --weights and --quotas flags, checked: a bad one is a usage error (exit 2)."""
    weights: dict[str, float] = {}
    quotas: dict[str, Quota] = {}
    if args.weights is not None:
        try:
            weights = parse_weights(args.weights)
        except RoleError as exc:
            raise CliError(f"--weights: {exc}", exit_code=2) from None
    if args.quotas is not None:
        try:
            text = args.quotas.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"--quotas: cannot read {args.quotas}: {exc}", exit_code=2) from None
        try:
            quotas = quotas_from_json(parse_json(text, "the file"))
        except ValueError as exc:  # not JSON (too deep, too large: BadJson), or a RoleError
            raise CliError(f"--quotas {args.quotas}: {exc}", exit_code=2) from None
    return weights, quotas


def priority_classes_from_args(args: argparse.Namespace) -> tuple[PriorityClass, ...]:
    """The --priority-classes file, checked: a bad one is a usage error (exit 2)."""
    if args.priority_classes is None:
        return ()
    try:
        text = args.priority_classes.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(
            f"--priority-classes: cannot read {args.priority_classes}: {exc}", exit_code=2
        ) from None
    try:
        return classes_from_json(parse_json(text, "the file"))
    except ValueError as exc:  # BadJson, or a PriorityClassError
        raise CliError(f"--priority-classes {args.priority_classes}: {exc}", exit_code=2) from None


def budgets_from_args(args: argparse.Namespace) -> tuple[Any, ...]:
    """The --disruption-budgets file (JSON), checked: a bad one is a usage error (exit 2)."""
    if args.disruption_budgets is None:
        return ()
    from corral.master.core.disruption_budgets import budgets_from_json

    try:
        text = args.disruption_budgets.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(
            f"--disruption-budgets: cannot read {args.disruption_budgets}: {exc}", exit_code=2
        ) from None
    try:
        return budgets_from_json(parse_json(text, "the file"))
    except ValueError as exc:
        raise CliError(f"--disruption-budgets {args.disruption_budgets}: {exc}", 2) from None
