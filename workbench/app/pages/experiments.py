"""Experiments: every evaluation kept, to come back to, compare and share. The list; a configuration's trend over
time; one experiment opened (by the list, or by a link `?experiment=ID` anyone with the app can open) with its
report, "run again", its notes, export and delete; two experiments side by side; and the named query sets."""

from __future__ import annotations

from datetime import UTC

import pandas as pd
import streamlit as st

from workbench.app import diff_view, report_view
from workbench.app.markdown import message_md
from workbench.app.state import STATE, controls, engine_resource, error_text, shown_errors
from workbench.app.widgets import counted, text_md
from workbench.engine import Engine
from workbench.errors import WorkbenchError
from workbench.experiments import (
    Experiment,
    ExperimentStore,
    export_experiment,
    open_experiment_store,
    reproduced,
    run_again,
)
from workbench.experiments.figures import trend_figure
from workbench.inputs import validate_experiment_id
from workbench.vocab import MAX_EXPERIMENT_NOTES, MAX_NAME_CHARS, NDCG_10

SHOWN = 200  # experiments listed


def run() -> None:
    """The Experiments page: an outline of its sections."""
    engine = engine_resource()
    c = controls()
    st.title("Experiments")
    st.caption(
        "Every evaluation is kept here (Evaluate, `workbench eval`, `workbench gate`, the API): its configuration, "
        "the queries and judgments it used as they were, its figures and runs. Come back to one, follow a "
        "configuration over time, put two side by side, or share one by its link."
    )
    store = _store_or_stop(engine)
    experiments = store.list(limit=SHOWN)
    if experiments.unreadable:
        st.warning(message_md(experiments.unreadable_words()), icon=":material/warning:")
    opened = _opened(store)
    if opened is not None:
        _open(engine, store, opened)
        st.divider()
    if not experiments:
        st.info("No experiments yet: run one on Evaluate (the demo's judgments are ready), or `workbench eval demo`.")
    else:
        _listing(experiments)
        _trend(experiments)
        st.divider()
        diff_view.draw(engine, experiments, c.rater)
    st.divider()
    diff_view.query_sets(engine, store)


def _store_or_stop(engine: Engine) -> ExperimentStore:
    try:
        return open_experiment_store(engine.settings)
    except WorkbenchError as exc:
        st.error(f"The experiments store cannot be opened: {error_text(exc)}")
        st.stop()
        raise


def _opened(store: ExperimentStore) -> Experiment | None:
    """The experiment the link names (`?experiment=ID`), or None; an unknown id says so."""
    wanted = st.query_params.get("experiment")
    if not wanted:
        return None
    try:
        return store.get(validate_experiment_id(str(wanted)))
    except WorkbenchError as exc:
        st.error(error_text(exc))
        return None


def _listing(experiments: list[Experiment]) -> None:
    """The kept experiments, newest first; picking one opens it (and puts its link in the address bar)."""
    st.subheader(f"Kept ({counted(len(experiments), 'experiment', 'experiments')})")
    rows = [e.summary().model_dump() for e in experiments]
    frame = pd.DataFrame(rows)
    frame["created_at"] = [e.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M") for e in experiments]
    frame["tags"] = frame["tags"].map(", ".join)
    st.dataframe(frame.drop(columns=["metric"]), hide_index=True, width="stretch", key="experiments-table")
    by_id = {e.id: e for e in experiments}
    picked = st.selectbox(
        "Open an experiment",
        ["", *by_id],
        format_func=lambda i: "—" if not i else f"{i} · {by_id[i].title} · {by_id[i].created_at:%Y-%m-%d %H:%M}",
        key="experiment-pick",
    )
    if picked and st.query_params.get("experiment") != picked:
        st.query_params["experiment"] = picked
        st.rerun()


def _trend(experiments: list[Experiment]) -> None:
    """A metric of one configuration over time, each run's name and notes on hover."""
    counts: dict[str, int] = {}
    for e in experiments:
        counts[e.configuration] = counts.get(e.configuration, 0) + 1
    configurations = sorted(counts, key=lambda name: -counts[name])
    left, right = st.columns([3, 1])
    chosen = left.selectbox(
        "Trend of a configuration", configurations, format_func=lambda k: f"{k} ({counts[k]} runs)", key="trend-config"
    )
    metrics = list(experiments[0].report.get("after", {NDCG_10: 0}))
    metric = right.selectbox("Metric", metrics, index=metrics.index(NDCG_10) if NDCG_10 in metrics else 0)
    runs = [e for e in experiments if e.configuration == chosen]
    st.plotly_chart(trend_figure(runs, metric, f"{metric} of {chosen}"), width="stretch", key="trend-chart")


def _open(engine: Engine, store: ExperimentStore, experiment: Experiment) -> None:
    """One experiment: what it ran, its report as Evaluate shows it, and what can be done with it."""
    st.subheader(f"Experiment {text_md(experiment.id)}: {text_md(experiment.title)}")
    queries, judgments = experiment.query_set, experiment.judgments
    st.caption(
        f"run {experiment.created_at:%Y-%m-%d %H:%M} UTC · {text_md(experiment.configuration)} · query set "
        f"{text_md(queries.name)} ({counted(queries.queries, 'query', 'queries')}, `{queries.checksum}`) · judgments "
        f"{text_md(judgments.source)} ({judgments.judgments} grades, `{judgments.checksum}`) · tags "
        f"{text_md(', '.join(experiment.tags) or 'none')}"
    )
    st.caption(f"Share it: `?experiment={experiment.id}` on this page's address opens the same view for anyone.")
    if experiment.notes:
        st.info(text_md(experiment.notes), icon=":material/sticky_note_2:")
    report = experiment.evaluation()
    report_view.headline(report)
    report_view.query_by_query(report, experiment.plan, "experiment")
    report_view.served(report)
    report_view.groups(report)
    report_view.charts(report)
    report_view.most_hurt_and_helped(report)
    report_view.downloads(report)
    _actions(engine, store, experiment)


def _actions(engine: Engine, store: ExperimentStore, experiment: Experiment) -> None:
    """Run again (and whether it reproduced), notes, export, delete."""
    again, notes, out = st.columns(3)
    if again.button("Run again", key="experiment-rerun", help="Its exact plan, queries and judgments, kept anew."):
        with shown_errors(), st.spinner("Running the same plan on the same queries…", show_time=True):
            repeat = run_again(engine, experiment)
            same, changed = reproduced(experiment, repeat)
            STATE.rerun_outcome = {"of": experiment.id, "id": repeat.id, "same": same, "changed": changed}
    outcome = STATE.rerun_outcome
    if outcome and outcome["of"] == experiment.id:
        if outcome["same"]:
            st.success(f"Run again as `{outcome['id']}`: the same figures to the last digit.")
        else:
            why = ", ".join(outcome["changed"]) or "no input (the manifests say which machine or library differs)"
            st.warning(f"Run again as `{outcome['id']}`: the figures differ. What changed: {why}.")
    with notes.popover("Name, tags, notes"), st.form("experiment-notes"):
        name = st.text_input("Name", experiment.name, max_chars=MAX_NAME_CHARS)
        tags = st.text_input("Tags (comma-separated)", ", ".join(experiment.tags))
        text = st.text_area("Notes", experiment.notes, max_chars=MAX_EXPERIMENT_NOTES)
        if st.form_submit_button("Keep"):
            with shown_errors():
                changed = {"name": name, "tags": [t.strip() for t in tags.split(",")], "notes": text}
                store.save(Experiment(**{**experiment.model_dump(), **changed}))
                st.rerun()
    out.download_button(
        "Export (one JSON file)", lambda: export_experiment(experiment), f"experiment-{experiment.id}.json",
        "application/json", on_click="ignore", key="experiment-export",
    )  # fmt: skip
    with st.expander("Delete this experiment"):
        typed = st.text_input(f"Type {text_md(experiment.id)} to delete it", key="experiment-delete-typed")
        if st.button("Delete", disabled=typed.strip() != experiment.id, key="experiment-delete"):
            with shown_errors():
                store.delete(experiment.id)
                del st.query_params["experiment"]
                st.rerun()


if __name__ == "__main__":  # Streamlit runs a page file as __main__; importing the module draws nothing
    run()
