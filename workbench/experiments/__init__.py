"""Experiments: evaluations kept with everything needed to trust, repeat and compare them; query sets; run against
run; the ship gate."""

from workbench.experiments.diff import Agreements, QueryDifference, RunDiff, compare_run_pair
from workbench.experiments.query_sets import (
    QueryItem,
    QuerySet,
    history_query_set,
    judged_query_set,
    parse_query_set,
    read_query_set,
)
from workbench.experiments.record import Experiment, Manifest, changed_inputs
from workbench.experiments.service import (
    compare_configurations,
    diff_experiments,
    export_experiment,
    import_experiment,
    keep_report,
    keep_tuning,
    reproduced,
    run_again,
    run_experiment,
)
from workbench.experiments.store import ExperimentStore, open_experiment_store

__all__ = [
    "Agreements",
    "Experiment",
    "ExperimentStore",
    "Manifest",
    "QueryDifference",
    "QueryItem",
    "QuerySet",
    "RunDiff",
    "changed_inputs",
    "compare_configurations",
    "compare_run_pair",
    "diff_experiments",
    "export_experiment",
    "history_query_set",
    "import_experiment",
    "judged_query_set",
    "keep_report",
    "keep_tuning",
    "open_experiment_store",
    "parse_query_set",
    "read_query_set",
    "reproduced",
    "run_again",
    "run_experiment",
]
